"""The Metadata handler's per-topic cache of encoded entries (``TopicMetadataCache``) on a real
in-process broker: the cached answer is byte for byte the freshly built one, and a change the
metadata store reports (created, grown, deleted, leader or ISR change) is seen at once."""
from __future__ import annotations

import asyncio

import pytest

from josefk.broker.app import Broker
from josefk.broker.config import BrokerConfig
from josefk.broker.handlers.metadata import handle_metadata
from josefk.broker.control.metadata import PartitionMeta
from josefk.wire.apis import METADATA
from testkit.handlers import context


def metadata(broker, version=12, topics=None):
    R = METADATA.Request
    req = R(topics=None if topics is None else [R.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False)
    return handle_metadata(broker, context(METADATA, version), req).to_bytes(version)


def decoded(data, version=12):
    resp, _ = METADATA.Response.decode(data, version)
    return {t.name: t for t in resp.topics}


@pytest.fixture
def broker(tmp_path):
    b = Broker(BrokerConfig({"log.dirs": str(tmp_path)}))
    b.replicas.lead_locally(b.metadata)
    yield b
    b.logs.close()


def uncached(broker, version=12):
    """The same answer built without the cache (a partition reported offline bypasses it)."""
    broker.replicas.offline.add(("no-such-topic", 0))
    try:
        return metadata(broker, version)
    finally:
        broker.replicas.offline.clear()


@pytest.mark.parametrize("version", [0, 1, 9, 12])
def test_cached_answer_is_the_built_one(broker, version):
    broker.metadata.request_topic("a", 3, 1, {})
    broker.metadata.request_topic("b", 2, 1, {})
    first = metadata(broker, version)
    assert metadata(broker, version) == first == uncached(broker, version)
    assert broker.topic_metadata.entries.keys() == {"a", "b"}


def test_changes_reported_by_the_store_are_seen(broker):
    md = broker.metadata
    md.request_topic("a", 2, 1, {})
    assert len(decoded(metadata(broker))["a"].partitions) == 2

    asyncio.run(md.create_partitions("a", 5))
    assert len(decoded(metadata(broker))["a"].partitions) == 5

    # A cluster's UpdateMetadata replaces the partition states and reports "changed".
    t = md.topics["a"]
    t.partitions = [PartitionMeta(p.index, 7, p.leader_epoch + 1, [7, 1], [7]) for p in
                    t.partitions]
    md._notify("changed", t)
    part = decoded(metadata(broker))["a"].partitions[0]
    assert (part.leader_id, part.leader_epoch, part.isr_nodes) == (7, 1, [7])
    assert metadata(broker) == uncached(broker)

    asyncio.run(md.delete_topic("a"))
    assert "a" not in decoded(metadata(broker))
    md.request_topic("a", 1, 1, {})  # recreated under the same name: a new topic id
    again = decoded(metadata(broker))["a"]
    assert len(again.partitions) == 1 and again.topic_id == md.topics["a"].topic_id
