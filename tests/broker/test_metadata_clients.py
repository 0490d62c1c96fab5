"""broker/app.py's metadata_clients: __remote_log_metadata's client settings, the inter-broker
listener's security overlaid with Kafka's remote.log.metadata.* client prefixes."""
from types import SimpleNamespace

from josefk.broker.app import metadata_clients
from josefk.broker.config import BrokerConfig


def test_the_prefixes_overlay_the_inter_broker_security(tmp_path):
    ca = tmp_path / "ca.pem"
    cfg = BrokerConfig({
        "remote.log.metadata.common.client.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="meta" password="meta-secret";',
        "remote.log.metadata.common.client.ssl.truststore.location": str(ca),
        "remote.log.metadata.producer.linger.ms": "5",
        "remote.log.metadata.consumer.fetch.wait.max.ms": "50"})
    inter = SimpleNamespace(client_config=lambda: {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.username": "broker", "sasl.password": "broker-secret"})
    common, produce, consume = metadata_clients(cfg, inter)
    assert common == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                      "sasl.username": "meta", "sasl.password": "meta-secret",
                      "ssl.ca.location": str(ca),
                      "ssl.endpoint.identification.algorithm": "https"}
    assert produce == {**common, "linger.ms": "5"}
    assert consume == {**common, "fetch.wait.max.ms": "50"}


def test_without_prefixes_the_clients_take_the_listeners_security():
    inter = SimpleNamespace(client_config=lambda: {"security.protocol": "PLAINTEXT"})
    assert metadata_clients(BrokerConfig({}), inter) == ({"security.protocol": "PLAINTEXT"},) * 3


def test_describe_configs_hides_the_metadata_clients_passwords():
    from josefk.broker.handlers.configs import _shown

    for name in ("remote.log.metadata.common.client.sasl.password",
                 "remote.log.metadata.consumer.sasl.jaas.config",
                 "remote.log.metadata.producer.ssl.key.password"):
        assert _shown(name, "secret") is None
    assert _shown("remote.log.metadata.producer.linger.ms", "5") == "5"
