"""Cluster links' settings as AlterConfigs checks them, which groups a link copies the offsets
of, and which topics are active mirrors."""
import json

import pytest

from josefk.broker.control.metadata import MetadataError
from josefk.broker.links import LINK_DEFAULTS, GroupFilter, mirror_link, validate_link
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
    ({"bootstrap.servers": "a:1", "security.protocol": "SSH"}, errors.INVALID_CONFIG,
     "Cluster link east: Invalid value SSH for configuration security.protocol"),
    ({"bootstrap.servers": "a:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"},
     errors.INVALID_CONFIG, "Cluster link east: sasl.mechanism GSSAPI is not supported (only "
                            "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"),
    ({"bootstrap.servers": "a:1", "security.protocol": "SASL_PLAINTEXT",
      "sasl.mechanism": "PLAIN"}, errors.INVALID_CONFIG,
     "Cluster link east: SASL needs sasl.jaas.config with username and password"),
    ({"bootstrap.servers": "a:1", "security.protocol": "SSL",
      "ssl.truststore.location": "/no/such/ca.pem"}, errors.INVALID_CONFIG,
     "Cluster link east: cannot load the TLS settings: ssl.truststore.location "
     "/no/such/ca.pem: No such file or directory"),
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


def test_cluster_linkings_group_filters_include_and_exclude():
    f = GroupFilter({"consumer.offset.group.filters": json.dumps({"groupFilters": [
        {"name": "*", "patternType": "LITERAL", "filterType": "INCLUDE"},
        {"name": "tmp-", "patternType": "PREFIXED", "filterType": "EXCLUDE"},
        {"name": "audit", "filterType": "EXCLUDE"}]})})
    assert [g for g in ("orders", "tmp-1", "audit", "auditors") if f(g)] == ["orders",
                                                                              "auditors"]
    assert not GroupFilter({})("orders")  # no filter: no group


def test_mirrormakers_group_patterns_are_whole_matches():
    f = GroupFilter({**LINK_DEFAULTS, "groups": "app-.*,billing"})
    assert [g for g in ("app-1", "billing", "billing-2", "connect-app-1", "__app")
            if f(g)] == ["app-1", "billing"]
    f = GroupFilter({**LINK_DEFAULTS, "groups": ".*"})
    assert [g for g in ("app", "connect-x", "console-consumer-1", "__c") if f(g)] == ["app"]


@pytest.mark.parametrize("configs, message", [
    ({"consumer.offset.group.filters": "{not json"}, "Invalid consumer.offset.group.filters"),
    ({"consumer.offset.group.filters": '{"groupFilters": [{"name": "a", "patternType": '
                                       '"REGEX"}]}'}, "patternType REGEX"),
    ({"groups": "app-("}, "Invalid groups pattern app-("),
    ({"consumer.offset.sync.enable": "yes"},
     "Invalid value yes for configuration consumer.offset.sync.enable"),
])
def test_a_malformed_group_filter_is_refused(configs, message):
    with pytest.raises(MetadataError) as e:
        validate_link("east", {"bootstrap.servers": "a:1", **configs})
    assert e.value.code == errors.INVALID_CONFIG and message in e.value.message


def test_a_partitions_lag_in_records_bytes_and_ms_and_its_resume():
    """`Link.status` from what its fetchers last learned (a test double of a partition: its
    log end; metadata and replicas: empty); a resume command applies once, to a partition
    stopped before it."""
    import asyncio
    import time
    from types import SimpleNamespace

    from josefk.broker.config import BrokerConfig
    from josefk.broker.links import Link, LinkSecurity

    async def scenario():
        part = SimpleNamespace(topic="t", index=0, log=SimpleNamespace(log_end_offset=100))
        meta = SimpleNamespace(configs={})
        manager = SimpleNamespace(config=BrokerConfig({}), metadata=SimpleNamespace(
            topics={"t": meta}))
        configs = {**LINK_DEFAULTS, "bootstrap.servers": "127.0.0.1:1"}
        link = Link("east", configs, manager, LinkSecurity(configs))
        try:
            link.wanted[("t", 0)] = part
            st = link.status(("t", 0))
            assert (st.lag_records, st.lag_bytes, st.lag_ms) == (None, None, None)
            f = link.fetchers
            f.source_end[("t", 0)] = 150
            f.bytes_per_offset[("t", 0)] = 80.0
            f.caught_up_at[("t", 0)] = time.monotonic() - 2.5
            st = link.status(("t", 0))
            assert (st.lag_records, st.lag_bytes) == (50, 4000)
            assert 2500 <= st.lag_ms < 10000
            part.log.log_end_offset = 150
            f.answered_at[("t", 0)] = time.monotonic()
            st = link.status(("t", 0))
            assert (st.lag_records, st.lag_bytes, st.lag_ms) == (0, 0, 0)
            # no answer for longer than the fetches wait (a cut link): the time since caught up
            f.answered_at[("t", 0)] = time.monotonic() - f.stale_s - 1
            assert link.status(("t", 0)).lag_ms >= 2500
            f.answered_at[("t", 0)] = time.monotonic()

            meta.configs["josefk.mirror.resume"] = "1:0"  # before it stopped: not for it
            link.stop_partition(("t", 0), "offset 150 is below the source's log start")
            assert link.status(("t", 0)).failure.startswith("offset 150")
            link.maybe_resume(part, "1:0")
            link.maybe_resume(part, "2:1")  # another partition
            assert ("t", 0) in link.failed and not f.resuming
            link.maybe_resume(part, "3:*")
            assert ("t", 0) not in link.failed and f.resuming == {("t", 0)}
            link.resumed(("t", 0), (20, 150), 170)
            st = link.status(("t", 0))
            assert (st.skipped, st.resumes, st.failure) == (20, 1, None)
        finally:
            await link.close()

    asyncio.run(scenario())
