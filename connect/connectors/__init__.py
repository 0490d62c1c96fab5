"""The connectors that ship with the worker: Kafka's FileStreamSource and FileStreamSink, and a generator source and discarding sink for demos and benchmarks."""
