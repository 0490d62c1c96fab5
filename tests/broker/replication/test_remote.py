"""A tiered partition's reads: below the local log start from the remote log (resolved off the
event loop), the log start over remote and local data, a new leader's reads waiting for its
remote metadata, followers kept to the local log."""
import asyncio
import uuid
from types import SimpleNamespace

from josefk.broker.replication import remote
from josefk.broker.replication.replica import TELL_LOG_START_MS, Partition, PartitionState
from josefk.storage.config import LogConfig
from josefk.storage.log import Log
from josefk.tiered.manager import RemoteLogManager
from josefk.tiered.store import LocalStore
from josefk.wire import errors
from josefk.wire.batch import iter_headers
from josefk.wire.records import build_batch, iter_records

TOPIC_ID = uuid.UUID(int=42)


class Events:
    """A test double of the MetadataLog seam."""

    def __init__(self):
        self.values = []

    def append(self, topic_id, partition, value):
        self.values.append(value)

    def read(self, topic_id, partition):
        return list(self.values)

    def metadata_partition(self, topic_id, partition):
        return 0


def tiered_leader(tmp_path, rlm, replicas=(1,)):
    manager = SimpleNamespace(node_id=1, isr_changes=None, remote=rlm, remote_enabled=True)
    cfg = LogConfig.from_props({"remote.storage.enable": "true", "segment.bytes": "300",
                                "local.retention.bytes": "300", "retention.ms": "-1"}, {})
    p = Partition(manager, "t", 0, Log(tmp_path / "t-0", cfg), cfg)
    p.make_leader(PartitionState("t", 0, 1, 0, [1], list(replicas), topic_id=TOPIC_ID))
    for i in range(12):
        p.append(build_batch([(None, b"value-%03d" % i + b"x" * 90, None, None)]), acks=1)
    return p


def offsets(data):
    return [r.offset for h in iter_headers(data) for r in iter_records(data, h)]


def test_reads_below_the_local_log_come_from_the_remote_log(tmp_path):
    rlm = RemoteLogManager(LocalStore(tmp_path / "remote"), Events(), node_id=1)
    p = tiered_leader(tmp_path, rlm)
    rlm.lead(remote.leader_of(p))
    rlm.run_once()
    p.log.apply_retention()
    local_start = p.log.log_start_offset
    assert local_start > 0 and p.log_start_offset == 0

    res = p.read(0, 1 << 20, min_one=True)
    assert res.error == errors.NONE and isinstance(res.records, remote.RemoteRead)
    assert res.log_start_offset == 0 and remote.has_remote([[(None, res)]])
    asyncio.run(remote.resolve(rlm, [[(None, res)]]))
    assert offsets(res.records)[0] == 0

    # a follower below the local log rebuilds from the remote copy (KIP-405), told the log
    # start over remote data; at the local log it reads the local log start
    follower = p.read(0, 1 << 20, min_one=True, replica_id=2)
    assert follower.error == errors.OFFSET_MOVED_TO_TIERED_STORAGE and follower.records is None
    assert follower.log_start_offset == 0
    follower = p.read(local_start, 1 << 20, min_one=True, replica_id=2)
    assert follower.error == errors.NONE and follower.log_start_offset == local_start
    past_end = p.read(p.log.log_end_offset + 5, 100, min_one=True)
    assert past_end.error == errors.OFFSET_OUT_OF_RANGE and past_end.log_start_offset == 0
    local = p.read(local_start, 1 << 20, min_one=True)
    assert local.log_start_offset == 0 and offsets(bytes(local.records))[0] == local_start

    res = p.read(0, 1 << 20, min_one=True)
    rlm.resign("t", 0)  # leadership lost before the remote read ran
    asyncio.run(remote.resolve(rlm, [[(None, res)]]))
    assert res.error == errors.NOT_LEADER_OR_FOLLOWER and res.records is None
    rlm.lead(remote.leader_of(p))
    rlm.run_once()

    p.remote_log_start = 3  # DeleteRecords below the local log
    assert p.log_start_offset == 3
    assert p.read(1, 100, min_one=True).error == errors.OFFSET_OUT_OF_RANGE
    below = p.read(1, 100, min_one=True, replica_id=2)  # below the whole log: Kafka's answer
    assert below.error == errors.OFFSET_OUT_OF_RANGE and below.log_start_offset == 3
    p.log.close()


def test_a_new_leader_answers_replica_not_available_until_it_loaded(tmp_path):
    events = Events()
    first = RemoteLogManager(LocalStore(tmp_path / "remote"), events, node_id=1)
    p = tiered_leader(tmp_path, first)
    first.lead(remote.leader_of(p))
    first.run_once()
    p.log.apply_retention()

    second = RemoteLogManager(LocalStore(tmp_path / "remote"), events, node_id=2)
    p.manager.remote = second
    second.lead(remote.leader_of(p))
    assert p.remote_pending
    assert p.read(0, 1 << 20, min_one=True).error == errors.REPLICA_NOT_AVAILABLE
    assert p.read(0, 1 << 20, min_one=True, replica_id=3).error == \
        errors.REPLICA_NOT_AVAILABLE  # a follower too: it cannot be told the log start yet
    second.run_once()
    assert not p.remote_pending and p.log_start_offset == 0
    p.log.close()


def test_a_restarted_broker_waits_for_its_remote_log_manager_too(tmp_path):
    """Restarted, a broker leads its partitions before its remote log manager exists (that
    waits on the object store): the remote log is unknown then as much as before its load,
    never taken for empty (the local log start is not the log start)."""
    first = RemoteLogManager(LocalStore(tmp_path / "remote"), Events(), node_id=1)
    p = tiered_leader(tmp_path, first)
    first.lead(remote.leader_of(p))
    first.run_once()
    p.log.apply_retention()
    assert p.log.log_start_offset > 0

    p.manager.remote = None  # tiering on, its manager not started yet
    assert p.remote_pending
    assert p.read(0, 1 << 20, min_one=True).error == errors.REPLICA_NOT_AVAILABLE
    p.manager.remote_enabled = False  # tiering off on this broker: the local log is all
    assert not p.remote_pending and p.log_start_offset == p.log.log_start_offset
    assert p.read(0, 1 << 20, min_one=True).error == errors.OFFSET_OUT_OF_RANGE
    p.log.close()


def test_a_follower_restarts_with_the_state_of_the_remote_copy(tmp_path):
    """KIP-405's follower: below the leader's local log start, the leader epochs and the
    producer state come from the remote segment that ends there."""
    events = Events()
    rlm = RemoteLogManager(LocalStore(tmp_path / "remote"), events, node_id=1)
    manager = SimpleNamespace(node_id=1, isr_changes=None, remote=rlm, remote_enabled=True)
    cfg = LogConfig.from_props({"remote.storage.enable": "true", "segment.bytes": "300",
                                "local.retention.bytes": "300", "retention.ms": "-1"}, {})
    leader = Partition(manager, "t", 0, Log(tmp_path / "leader" / "t-0", cfg), cfg)
    leader.make_leader(PartitionState("t", 0, 1, 4, [1], [1], topic_id=TOPIC_ID))
    for i in range(12):  # an idempotent producer's batches, one a segment or so
        res = leader.append(build_batch([(None, b"v" * 100, None, None)], producer_id=77,
                                        producer_epoch=0, base_sequence=i), acks=1)
        assert not res.error
    rlm.lead(remote.leader_of(leader))
    rlm.run_once()
    leader.log.apply_retention()
    start = leader.log.log_start_offset
    assert start > 0

    state = rlm.follower_state("t", 0, TOPIC_ID, start)
    assert state is not None and state[0] == [(4, 0)]
    assert rlm.follower_state("t", 0, TOPIC_ID, start + 100) is None  # no segment ends there

    follower_manager = SimpleNamespace(node_id=2, isr_changes=None, remote=RemoteLogManager(
        LocalStore(tmp_path / "remote"), events, node_id=2), remote_enabled=True)
    follower = Partition(follower_manager, "t", 0, Log(tmp_path / "follower" / "t-0", cfg),
                         cfg)
    follower.make_follower(PartitionState("t", 0, 1, 4, [1, 2], [1, 2], topic_id=TOPIC_ID))
    follower.restart_at(start, state)
    assert follower.log_start_offset == start
    follower.remote_log_start = 0  # the leader's log start, as the fetcher sets it
    assert follower.log.log_start_offset == start and follower.log.log_end_offset == start
    assert follower.log_start_offset == 0
    assert follower.log.epochs.entries == [(4, 0)]
    assert follower.log.end_offset_for_epoch(4) == (4, start)
    # the producer's sequence carries on from the remote copy's snapshot
    assert 77 in follower.producers.producers
    assert follower.producers.producers[77].last_seq == start - 1
    leader.log.close()
    follower.log.close()


def test_max_timestamp_looks_in_the_remote_log_too(tmp_path):
    """ListOffsets MAX_TIMESTAMP finds the largest timestamp wherever it is: in a segment
    only the bucket still holds, or locally when a local record carries more."""
    from josefk.broker.handlers.list_offsets import (MAX_TIMESTAMP, R, _remote_lookups,
                                                     _remote_timestamp)

    rlm = RemoteLogManager(LocalStore(tmp_path / "remote"), Events(), node_id=1)
    manager = SimpleNamespace(node_id=1, isr_changes=None, remote=rlm, remote_enabled=True)
    cfg = LogConfig.from_props({"remote.storage.enable": "true", "segment.bytes": "300",
                                "local.retention.bytes": "300", "retention.ms": "-1"}, {})
    p = Partition(manager, "t", 0, Log(tmp_path / "t-0", cfg), cfg)
    p.make_leader(PartitionState("t", 0, 1, 0, [1], [1], topic_id=TOPIC_ID))
    for i in range(12):  # offset 1 carries the largest timestamp
        ts = 9_000_000 if i == 1 else 1_000 + i
        p.append(build_batch([(None, b"v" * 100, None, ts)]), acks=1)
    rlm.lead(remote.leader_of(p))
    rlm.run_once()
    p.log.apply_retention()
    assert p.log.log_start_offset > 1 and p.log.max_timestamp()[0] < 9_000_000

    def answer():
        wanted = _remote_timestamp(p, MAX_TIMESTAMP, False)
        if wanted is None:
            return None
        out = R.ListOffsetsPartitionResponse(partition_index=0, error_code=0, timestamp=-1,
                                             offset=-1, leader_epoch=0)
        asyncio.run(_remote_lookups(R(topics=[]), [(out, p, wanted, MAX_TIMESTAMP)], False))
        return out.error_code, out.timestamp, out.offset

    assert answer() == (errors.NONE, 9_000_000, 1)
    p.append(build_batch([(None, b"v" * 100, None, 9_500_000)]), acks=1)
    assert answer() is None  # the local log answers: its record carries more
    p.log.close()


def test_followers_are_told_a_log_start_below_the_local_log(tmp_path):
    """A DeleteRecords into the remote range: a follower reporting another log start is
    answered the whole log's (for a while at most, then the local one again: it may not tell
    them apart), and the delayed DeleteRecords counts it only once it reports that start."""
    rlm = RemoteLogManager(LocalStore(tmp_path / "remote"), Events(), node_id=1)
    p = tiered_leader(tmp_path, rlm, replicas=(1, 2))
    p.manager.isr_changes = SimpleNamespace(propose=lambda part, isr: None)  # not at issue
    rlm.lead(remote.leader_of(p))
    rlm.run_once()
    p.log.apply_retention()
    local_start, end = p.log.log_start_offset, p.log.log_end_offset
    assert local_start > 3
    p.update_follower(2, end, 0, log_start_offset=0)  # it learned the remote log's start
    assert p.read(end, 100, min_one=True, replica_id=2).log_start_offset == local_start

    p.remote_log_start = 3
    answers = []
    for now_ms in (1000, 1000, 3000, 1000 + TELL_LOG_START_MS):  # re-reads of one fetch too
        p.update_follower(2, end, now_ms, log_start_offset=local_start)  # it never learns
        answers.append(p.read(end, 100, min_one=True, replica_id=2).log_start_offset)
        assert p.low_watermark({1, 2}) == -1  # reporting more than 3: not told yet
    assert answers == [3, 3, 3, local_start]
    p.update_follower(2, end, 9000, log_start_offset=0)  # it reports another: told again
    assert p.read(end, 100, min_one=True, replica_id=2).log_start_offset == 3
    p.update_follower(2, end, 9500, log_start_offset=3)
    assert p.low_watermark({1, 2}) == 3
    assert p.read(end, 100, min_one=True, replica_id=2).log_start_offset == local_start
    assert p.low_watermark({1}) == 3  # a follower not alive does not count
    p.log.close()
