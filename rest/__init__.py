"""A Confluent-compatible REST Proxy (``josefk rest``): Confluent's v2 API (produce in the
binary, JSON, Avro, JSON Schema and Protobuf embedded formats; consumer instances) and v3 API
(clusters, brokers, topics, partitions, configs, consumer groups and lag, ACLs, record
produce) in front of any Kafka-compatible cluster, through confluent-kafka. Built on ``httpd``
(and the registry's schema formats); it must not import the broker's server, handlers or rooms."""
