"""A Confluent-compatible Schema Registry (``josefk registry``): Confluent's REST API over
schemas kept in a compacted ``_schemas`` topic of any Kafka-compatible cluster, in Confluent's
record format, with one primary elected through the Kafka group protocol. A Kafka client built
on ``httpd`` and the tools' client: it must not import the broker's server, handlers or rooms."""
