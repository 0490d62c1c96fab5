"""broker/dynamic.py: dynamic broker config values are validated, naming the key, as Kafka does."""
import pytest

from josefk.broker.dynamic import validate_broker_configs
from josefk.broker.control.metadata import MetadataError
from josefk.wire import errors


def test_broker_config_validation_names_the_key():
    from josefk.broker.config import BrokerConfig

    defaults = BrokerConfig({}).topic_defaults()
    validate_broker_configs({"log.retention.ms": "1000", "log.cleanup.policy": "compact",
                             "log.cleaner.threads": "2", "message.max.bytes": "100"}, defaults,
                            cleaner_threads=1)
    for bad in ({"log.dirs": "/x"}, {"log.retention.ms": "soon"},
                {"log.cleanup.policy": "shred"}, {"log.cleaner.threads": "many"},
                {"log.retention.hours": None}, {"log.cleaner.threads": "0"},
                {"log.cleaner.threads": "3"}):
        with pytest.raises(MetadataError) as e:
            validate_broker_configs(bad, defaults, cleaner_threads=1)
        assert e.value.code == errors.INVALID_CONFIG and next(iter(bad)) in e.value.message


def test_cleaner_threads_move_within_half_and_double():
    from josefk.broker.config import BrokerConfig

    defaults = BrokerConfig({}).topic_defaults()
    for ok in ("2", "4", "8"):
        validate_broker_configs({"log.cleaner.threads": ok}, defaults, cleaner_threads=4)
    for bad, why in (("1", "less than half the current value 4"),
                     ("9", "more than double the current value 4")):
        with pytest.raises(MetadataError) as e:
            validate_broker_configs({"log.cleaner.threads": bad}, defaults, cleaner_threads=4)
        assert why in e.value.message
