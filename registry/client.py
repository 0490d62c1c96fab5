"""How a client of a Schema Registry is configured, Confluent's way: the ``schema.registry.*``
properties of a client (the REST proxy, the web console) turned into the settings
confluent-kafka's SchemaRegistryClient takes. A client-side module: it imports nothing of the
registry server."""
from __future__ import annotations


def registry_client_settings(props) -> dict | None:
    """confluent-kafka's SchemaRegistryClient settings from ``props`` (a mapping of client
    properties: ``schema.registry.url``, ``schema.registry.basic.auth.user.info``,
    ``schema.registry.ssl.truststore.location``, ``schema.registry.ssl.keystore.location``);
    None without a URL."""
    url = props.get("schema.registry.url")
    if not url:
        return None
    conf = {"url": url}
    if props.get("schema.registry.basic.auth.user.info"):
        conf["basic.auth.user.info"] = props["schema.registry.basic.auth.user.info"]
    if props.get("schema.registry.ssl.truststore.location"):
        conf["ssl.ca.location"] = props["schema.registry.ssl.truststore.location"]
    keystore = props.get("schema.registry.ssl.keystore.location")
    if keystore:
        conf["ssl.certificate.location"] = conf["ssl.key.location"] = keystore
    return conf
