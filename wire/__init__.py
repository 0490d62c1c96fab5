"""The Kafka protocol as data: primitive types, every API's request and response layout declared
once (``wire.apis``) and compiled into per-version codecs, request/response headers, framing,
record batches (v2 headers, CRC32C, offset patching), records, compression and the legacy
message formats.

Owns every byte layout a client sends or reads. Knows nothing of sockets, files, ZooKeeper or
what a request means: it must not import anything else of josefk."""
