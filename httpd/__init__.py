"""The HTTP layer shared by the Schema Registry (``registry/``) and the REST Proxy (``rest/``):
configuration with Confluent's property names, listeners with TLS, HTTP basic authentication,
Confluent's JSON error bodies, and the Kafka client settings both services derive from their
properties. Both are Kafka clients of any Kafka-compatible cluster: this package imports only
``josefk.broker.config`` and ``josefk.broker.security`` (properties, TLS, SASL) of the broker,
and never the services built on it."""
