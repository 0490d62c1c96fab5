"""Cluster links' settings as AlterConfigs checks them, and which topics are active mirrors."""
import pytest

from josefk.broker.control.metadata import MetadataError
from josefk.broker.links import mirror_link, validate_link
from josefk.wire import errors


@pytest.mark.parametrize("configs, code, message", [
    ({"metadata.max.age.ms": "1000"}, errors.INVALID_CONFIG,
     "Cluster link east needs bootstrap.servers (the source cluster)"),
    ({"bootstrap.servers": "a:1", "no.such": "x"}, errors.INVALID_CONFIG,
     "Unknown cluster link config: no.such"),
    ({"bootstrap.servers": "a:1", "topic.config.sync.ms": "soon"}, errors.INVALID_CONFIG,
     "Invalid value soon for configuration topic.config.sync.ms"),
    ({"bootstrap.servers": "nowhere"}, errors.INVALID_CONFIG,
     "Invalid url in bootstrap.servers: nowhere"),
    ({"bootstrap.servers": "a:1", "security.protocol": "SSL"}, errors.INVALID_CONFIG,
     "Cluster links support security.protocol PLAINTEXT only"),
])
def test_a_link_it_cannot_run_is_refused_in_one_line(configs, code, message):
    with pytest.raises(MetadataError) as e:
        validate_link("east", configs)
    assert (e.value.code, e.value.message) == (code, message)


def test_a_link_needs_a_name_and_no_configs_deletes_it():
    validate_link("east", {"bootstrap.servers": "a:1,b:2", "metadata.max.age.ms": "500"})
    validate_link("east", {})
    with pytest.raises(MetadataError, match="Cluster link name must not be empty"):
        validate_link("", {"bootstrap.servers": "a:1"})


def test_only_an_active_mirror_names_its_link():
    assert mirror_link({"josefk.mirror.link": "east"}) == "east"
    assert mirror_link({"josefk.mirror.link": "east", "josefk.mirror.state": "ACTIVE"}) == "east"
    assert mirror_link({"josefk.mirror.link": "east", "josefk.mirror.state": "STOPPED"}) is None
    assert mirror_link({"retention.ms": "1"}) is None
