"""ListOffsets: v0's "offsets before a timestamp" over several segments, as Kafka 3.9 answers it
(segment base offsets by last-modified time, plus the log end offset, newest first), and the
handler on the harness: earliest, latest, by timestamp, max timestamp, the high watermark and
the last stable offset, Kafka's errors."""
import os

from josefk.broker.handlers.list_offsets import (EARLIEST, LATEST, MAX_TIMESTAMP, READ_COMMITTED,
                                                _offsets_before)
from josefk.storage import Log
from josefk.wire import errors
from josefk.wire.apis import LIST_OFFSETS
from testkit.handlers import call
from tests.storage.logs import append, cfg, mk


def _three_segments(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=300))
    for _ in range(3):
        append(log, mk(4))          # each batch fills a segment: bases 0, 4, 8
    assert [b for b, _m, _s in log.segment_times()][:3] == [0, 4, 8]
    for i, seg in enumerate(sorted((tmp_path / "t-0").glob("*.log"))):
        os.utime(seg, (1000 * (i + 1), 1000 * (i + 1)))  # modified at 1000 s, 2000 s, ...
    return log


def test_offsets_before_timestamps(tmp_path):
    log = _three_segments(tmp_path)
    segments = log.segment_times()
    leo = log.log_end_offset
    bases = [b for b, _m, _s in segments]
    # the active segment holds data: the log end offset counts as modified "now"
    assert _offsets_before(log, LATEST, 100, -1) == sorted([leo] + bases, reverse=True)
    assert _offsets_before(log, LATEST, 2, -1) == [leo, bases[-1]]
    assert _offsets_before(log, EARLIEST, 100, -1) == [0]
    assert _offsets_before(log, 2_500_000, 100, -1) == [4, 0]   # segments modified by 2500 s
    assert _offsets_before(log, 2_500_000, 1, -1) == [4]
    assert _offsets_before(log, 999_999, 100, -1) == []         # nothing that old
    log.close()


def test_consumers_never_see_offsets_past_the_high_watermark(tmp_path):
    log = _three_segments(tmp_path)
    log.high_watermark = 6
    assert _offsets_before(log, LATEST, 100, -1)[:2] == [6, 4]
    assert _offsets_before(log, LATEST, 100, 1)[0] == log.log_end_offset  # a replica may
    log.close()


# ---------------------------------------------------------------------------------------------
# the handler, on the harness (testkit/handlers.py): a real log led here, no socket

R = LIST_OFFSETS.Request


def list_offsets(services, topic, *timestamps, version=None, isolation_level=0, epoch=-1):
    req = R(replica_id=-1, isolation_level=isolation_level, topics=[R.ListOffsetsTopic(
        name=topic, partitions=[R.ListOffsetsPartition(partition_index=0, timestamp=ts,
                                                       current_leader_epoch=epoch)
                                for ts in timestamps])])
    resp = call(services, LIST_OFFSETS, req, version=version)
    return [(p.error_code, p.timestamp, p.offset) for p in resp.topics[0].partitions]


def test_earliest_latest_by_timestamp_and_max_timestamp(services):
    services.create_topic("t")
    log = services.replicas.leader_partition("t", 0).log
    append(log, mk(3, ts=1_000), mk(2, ts=5_000))          # offsets 0-2 at 1000-1002, 3-4 at 5000+
    assert list_offsets(services, "t", EARLIEST, LATEST, 1_001, 4_000, 9_999, MAX_TIMESTAMP) == [
        (0, -1, 0), (0, -1, 5), (0, 1_001, 1), (0, 5_000, 3), (0, -1, -1), (0, 5_001, 4)]


def test_consumers_see_the_high_watermark_and_read_committed_the_last_stable_offset(services):
    services.create_topic("t")
    log = services.replicas.leader_partition("t", 0).log
    append(log, mk(4), hwm=False)
    log.high_watermark = 2
    assert list_offsets(services, "t", LATEST) == [(0, -1, 2)]
    assert list_offsets(services, "t", LATEST, isolation_level=READ_COMMITTED) == [(0, -1, 2)]


def test_a_new_leader_answers_no_latest_offset_until_its_high_watermark_reaches_its_epoch(
        services):
    """KIP-207: the high watermark a new leader took over may lag what its predecessor
    acknowledged (until the followers fetch): a consumer asking the end then is told to retry,
    never given that stale end (what reads ``__remote_log_metadata`` to its end relies on it)."""
    services.create_topic("t")
    part = services.replicas.leader_partition("t", 0)
    append(part.log, mk(4), hwm=False)
    part.log.high_watermark = 2
    part.epoch_start_offset = 4  # elected with 4 records, 2 of them known committed
    assert list_offsets(services, "t", LATEST, EARLIEST) == [
        (errors.OFFSET_NOT_AVAILABLE, -1, -1), (0, -1, 0)]
    part.log.high_watermark = 4
    assert list_offsets(services, "t", LATEST) == [(0, -1, 4)]


def test_an_unknown_partition_and_a_fenced_epoch_are_kafkas_errors(services):
    assert list_offsets(services, "no-such-topic", LATEST) == [
        (errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]
    services.create_topic("t")
    epoch = services.replicas.leader_partition("t", 0).leader_epoch
    assert list_offsets(services, "t", LATEST, epoch=epoch + 1) == [
        (errors.UNKNOWN_LEADER_EPOCH, -1, -1)]
    assert list_offsets(services, "t", LATEST, epoch=epoch) == [(0, -1, 0)]


def test_version_0_answers_old_style_offsets(services):
    services.create_topic("t")
    append(services.replicas.leader_partition("t", 0).log, mk(3))
    resp = call(services, LIST_OFFSETS, R(replica_id=-1, topics=[R.ListOffsetsTopic(
        name="t", partitions=[R.ListOffsetsPartition(partition_index=0, timestamp=LATEST,
                                                     max_num_offsets=5)])]), version=0)
    assert resp.topics[0].partitions[0].old_style_offsets == [3, 0]


def test_tiered_partition_earliest_is_the_remote_start_and_earliest_local_the_local_one():
    from types import SimpleNamespace

    from josefk.broker.handlers.list_offsets import EARLIEST_LOCAL, LATEST_TIERED, _lookup

    log = SimpleNamespace(log_start_offset=40, high_watermark=90, remote_copied_end=69)
    part = SimpleNamespace(log=log, log_start_offset=0, last_stable_offset=90,
                           config=SimpleNamespace(remote_storage_enable=True))
    assert _lookup(part, EARLIEST, False) == (-1, 0)
    assert _lookup(part, EARLIEST_LOCAL, False) == (-1, 40)
    assert _lookup(part, LATEST_TIERED, False) == (-1, 69)
    assert _lookup(part, LATEST, False) == (-1, 90)
    part.config.remote_storage_enable = False
    assert _lookup(part, LATEST_TIERED, False) == (-1, -1)  # nothing is tiered
