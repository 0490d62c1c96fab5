"""CreateTopics of a topic whose remote log is in the bucket (josefk.remote.recovery,
josefk.remote.readreplica): the bucket's topic id and partition count, and each refusal with
its error code and message."""
import asyncio
import uuid
from types import SimpleNamespace

import pytest

from josefk.broker.control.metadata import MetadataError
from josefk.broker.replication.remote import bucket_topic, check_creation_only
from josefk.tiered.manager import RemoteLogManager, object_prefix
from josefk.tiered.store import LocalStore
from josefk.wire import errors

OLD = uuid.UUID(int=7)
RECOVER = {"josefk.remote.recovery": "true", "remote.storage.enable": "true"}


def bucket(tmp_path, *incarnations):
    """A local store holding an object of each (topic id, partition)."""
    store = LocalStore(tmp_path / "bucket")
    for topic_id, partition in incarnations:
        store.put(object_prefix("t", partition, topic_id) + "00000000000000000000-x.log", b"")
    store.put(object_prefix("t-0", 0, uuid.UUID(int=9)) + "00000000000000000000-x.log", b"")
    return store


def create(store, configs, partitions=-1, topics_by_id=None, tiered=True, open_bucket=None):
    replicas = SimpleNamespace(remote=None if store is None else RemoteLogManager(
        store, None, 1, open_bucket=open_bucket))
    return asyncio.run(bucket_topic(replicas, tiered, topics_by_id or {}, "t", configs,
                                    partitions, 100))


def refused(*args, **kwargs):
    with pytest.raises(MetadataError) as e:
        create(*args, **kwargs)
    return e.value.code, e.value.message


def test_the_bucket_names_the_topic_id_and_the_partition_count(tmp_path):
    store = bucket(tmp_path, (OLD, 0), (OLD, 2))
    assert create(store, RECOVER) == (OLD, 3, RECOVER)
    assert create(store, RECOVER, partitions=5)[1] == 5
    assert create(store, {"josefk.remote.readreplica": store.bucket}) == (
        OLD, 3, {"josefk.remote.readreplica": store.bucket, "remote.storage.enable": "true"})
    assert create(store, {"retention.ms": "1"}, partitions=4) == (None, 4, {"retention.ms": "1"})


def test_refusals(tmp_path):
    store = bucket(tmp_path, (OLD, 0), (OLD, 1))
    assert refused(store, RECOVER, partitions=1) == (
        errors.INVALID_PARTITIONS, "Topic t has 2 partitions in the bucket, not 1.")
    assert refused(store, {"josefk.remote.recovery": "true"}) == (
        errors.INVALID_CONFIG, "josefk.remote.recovery=true needs remote.storage.enable=true.")
    assert refused(store, {**RECOVER, "josefk.remote.readreplica": store.bucket})[1] == (
        "josefk.remote.recovery and josefk.remote.readreplica cannot both be set.")
    assert refused(store, {"josefk.remote.readreplica": "elsewhere"}) == (
        errors.INVALID_CONFIG, "Invalid value elsewhere for configuration "
        "josefk.remote.readreplica: this broker's remote storage has no bucket elsewhere")
    assert refused(None, RECOVER, tiered=False)[0] == errors.INVALID_CONFIG
    assert refused(store, RECOVER, topics_by_id={OLD: SimpleNamespace(name="u")}) == (
        errors.TOPIC_ALREADY_EXISTS, "Topic u has the bucket's topic id AAAAAAAAAAAAAAAAAAAABw "
        "already.")
    empty = LocalStore(tmp_path / "empty")
    assert refused(empty, RECOVER) == (errors.INVALID_CONFIG,
                                        "The bucket holds no remote log of topic t.")
    two = bucket(tmp_path / "two", (OLD, 0), (uuid.UUID(int=8), 0))
    code, message = refused(two, RECOVER)
    assert code == errors.INVALID_CONFIG and message.startswith("The bucket holds 2 topics named t")


def test_a_read_replica_of_another_bucket_of_the_endpoint(tmp_path):
    own = bucket(tmp_path / "own")
    other = bucket(tmp_path / "other", (OLD, 0), (OLD, 1))
    opened = []

    def open_bucket(name):
        opened.append(name)
        return other

    assert refused(own, RECOVER, open_bucket=open_bucket)[1] == \
        "The bucket holds no remote log of topic t."
    assert create(own, {"josefk.remote.readreplica": "other"}, open_bucket=open_bucket) == (
        OLD, 2, {"josefk.remote.readreplica": "other", "remote.storage.enable": "true"})
    assert opened == ["other"]


def test_bucket_configs_are_set_at_creation_only():
    check_creation_only({"josefk.remote.recovery": "true", "retention.ms": "1"},
                        {"josefk.remote.recovery": "true"})
    for current, new in (({}, {"josefk.remote.readreplica": "b"}),
                         ({"josefk.remote.recovery": "true"}, {})):
        with pytest.raises(MetadataError) as e:
            check_creation_only(current, new)
        assert e.value.code == errors.INVALID_CONFIG
        assert "can only be set when the topic is created" in e.value.message
