"""A partition's leader-side replication state: high watermark, ISR changes, acks=all; the
replica manager's appends and fetches, delayed or not."""
import asyncio
from types import SimpleNamespace

import pytest

from josefk.broker.replication.purgatory import wait_replicated
from josefk.broker.replication.replica import FetchParams, Partition, PartitionState
from josefk.storage.config import LogConfig
from josefk.storage.log import Log
from josefk.wire import errors, legacy
from josefk.wire.batch import TIMESTAMP_TYPE_FLAG, validate_batches
from josefk.wire.records import build_batch


class FakeManager:
    node_id = 1

    def __init__(self):
        self.proposals = []
        self.isr_changes = self

    def propose(self, part, isr):
        self.proposals.append(list(isr))


def leader(tmp_path, isr=(1, 2, 3), min_insync=1):
    m = FakeManager()
    cfg = LogConfig.from_props({"min.insync.replicas": str(min_insync)}, {})
    p = Partition(m, "t", 0, Log(tmp_path / "t-0", cfg), cfg)
    p.make_leader(PartitionState("t", 0, 1, 5, list(isr), [1, 2, 3], partition_epoch=7))
    return p, m


def records(n=1):
    return build_batch([(None, b"v", None, None)] * n)


def test_high_watermark_is_the_smallest_isr_log_end(tmp_path):
    p, _ = leader(tmp_path)
    assert p.append(records(3), acks=-1).next_offset == 3
    assert p.log.high_watermark == 0
    p.update_follower(2, 3, 1000)
    assert p.log.high_watermark == 0
    p.update_follower(3, 2, 1000)
    assert p.log.high_watermark == 2
    p.update_follower(3, 3, 1000)
    assert p.log.high_watermark == 3
    p.update_follower(3, 1, 1000)  # a stale fetch never moves it back
    assert p.log.high_watermark == 3


def test_acks_all_waits_for_the_isr(tmp_path):
    async def run():
        p, _ = leader(tmp_path)
        res = p.append(records(), acks=-1)
        waiting = asyncio.ensure_future(wait_replicated(p, res.next_offset, 5000))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        p.update_follower(2, 1, 1000)
        p.update_follower(3, 1, 1000)
        return await waiting
    assert asyncio.run(run()) == errors.NONE


def test_acks_all_times_out_and_fails_when_leadership_moves(tmp_path):
    async def run():
        p, _ = leader(tmp_path)
        res = p.append(records(), acks=-1)
        assert await wait_replicated(p, res.next_offset, 50) == errors.REQUEST_TIMED_OUT
        waiting = asyncio.ensure_future(wait_replicated(p, res.next_offset, 5000))
        await asyncio.sleep(0.01)
        p.make_follower(PartitionState("t", 0, 2, 6, [2, 3], [1, 2, 3]))
        return await waiting
    assert asyncio.run(run()) == errors.NOT_LEADER_OR_FOLLOWER


def test_min_insync_replicas(tmp_path):
    p, _ = leader(tmp_path, isr=(1,), min_insync=2)
    assert p.append(records(), acks=-1).error == errors.NOT_ENOUGH_REPLICAS
    assert p.append(records(), acks=1).error == errors.NONE


def test_own_batches_are_appended_like_clients_with_the_same_limits(tmp_path):
    # the coordinators' batches skip the CRC and record checks, not the broker's rules
    client, _ = leader(tmp_path / "a")
    own, _ = leader(tmp_path / "b")
    two, one = records(2), records(1)
    for append in (client.append, own.append_own):
        assert append(bytearray(two), acks=1).next_offset == 2
        res = append(bytearray(one), acks=1)
        assert (res.error, res.base_offset, res.next_offset) == (errors.NONE, 2, 3)
    assert ([bytes(b) for _, b in client.log.iter_batches()]
            == [bytes(b) for _, b in own.log.iter_batches()])
    big = build_batch([(None, b"v" * (client.config.max_message_bytes + 1), None, None)])
    assert (client.append(big, acks=1).error == own.append_own(big, acks=1).error
            == errors.MESSAGE_TOO_LARGE)
    small_isr, _ = leader(tmp_path / "c", isr=(1,), min_insync=2)
    assert small_isr.append_own(records(), acks=-1).error == errors.NOT_ENOUGH_REPLICAS
    own.stop()
    assert own.append_own(records(), acks=1).error == errors.NOT_LEADER_OR_FOLLOWER


def test_appends_are_stored_as_the_validator_left_them(tmp_path):
    """What the validator made final (LogAppendTime, a v1 message set converted) is what the
    log stores, with the offsets and leader epoch the log wrote; the answer carries the time."""
    cfg = LogConfig.from_props({"message.timestamp.type": "LogAppendTime"}, {})
    p = Partition(FakeManager(), "t", 0, Log(tmp_path / "t-0", cfg), cfg)
    p.make_leader(PartitionState("t", 0, 1, 5, [1], [1], partition_epoch=7))
    res = p.append(records(2), acks=1)
    message_set = bytearray()
    for i in range(3):
        legacy.write_message(message_set, i, 1, 0, 1_000 + i, b"k", b"v")
    old = p.append(message_set, acks=1, old_formats=True)
    assert (res.base_offset, old.base_offset, old.next_offset) == (0, 2, 5)
    stored = validate_batches(bytearray(p.log.read(0, 1 << 20).records))  # CRCs hold
    assert [(h.base_offset, h.count, h.leader_epoch) for h in stored] == [(0, 2, 5), (2, 3, 5)]
    assert [h.max_timestamp for h in stored] == [res.log_append_time, old.log_append_time]
    assert all(h.attributes & TIMESTAMP_TYPE_FLAG for h in stored) and res.log_append_time > 0


def test_lagging_follower_is_proposed_out_and_caught_up_one_back_in(tmp_path):
    p, m = leader(tmp_path)
    p.append(records(2), acks=1)
    now = p.followers[2].caught_up_ms
    p.update_follower(2, 2, now + 2000)
    p.maybe_shrink_isr(now + 31000, 30000)
    assert m.proposals == [[1, 2]]
    p.isr_committed([1, 2], 5, 8)
    assert p.isr == [1, 2] and p.partition_epoch == 8
    p.update_follower(3, 2, now + 32000)
    assert m.proposals[-1] == [1, 2, 3]


def test_isr_answer_for_an_old_epoch_is_ignored(tmp_path):
    p, _ = leader(tmp_path)
    p.isr_committed([1], 4, 9)
    assert p.isr == [1, 2, 3]


def test_fetch_with_a_diverging_epoch_gets_where_to_truncate(tmp_path):
    p, _ = leader(tmp_path)
    p.append(records(3), acks=1)  # epoch 5 from offset 0
    res = p.read(3, 1000, True, replica_id=2, last_fetched_epoch=5)
    assert res.diverging_epoch is None
    res = p.read(3, 1000, True, replica_id=2, last_fetched_epoch=4)
    assert res.diverging_epoch == (-1, -1)
    # A follower ahead of the leader in the same epoch truncates to the leader's end of it.
    res = p.read(5, 1000, True, replica_id=2, last_fetched_epoch=5)
    assert res.diverging_epoch == (5, 3)


@pytest.mark.parametrize("fetch_offset", [0, 2])
def test_followers_read_up_to_the_log_end_consumers_up_to_the_high_watermark(tmp_path,
                                                                          fetch_offset):
    p, _ = leader(tmp_path)
    p.append(records(3), acks=1)
    assert p.read(fetch_offset, 10000, True).records == b""
    assert len(p.read(fetch_offset, 10000, True, replica_id=2).records) > 0


def test_follower_keeps_whole_batches_of_a_cut_fetch(tmp_path):
    p, _ = leader(tmp_path)
    p.make_follower(PartitionState("t", 0, 2, 6, [1, 2, 3], [1, 2, 3]))
    one, two = records(2), records(3)
    for buf, base in ((one, 0), (two, 2)):
        buf[0:8] = base.to_bytes(8, "big")
    p.append_as_follower(bytes(one) + bytes(two[:20]), leader_hwm=2)
    assert p.log.log_end_offset == 2 and p.log.high_watermark == 2
    p.append_as_follower(bytes(two), leader_hwm=5)
    assert p.log.log_end_offset == 5 and p.log.high_watermark == 5



def _source_batches():
    """A source partition's log from offset 10: plain records, then an open transaction."""
    plain = build_batch([(b"k", b"v", None, 1000)] * 3, base_offset=10,
                        partition_leader_epoch=42, producer_id=7, producer_epoch=0,
                        base_sequence=0)
    txn = build_batch([(b"k", b"t", None, 1001)] * 2, base_offset=13,
                      partition_leader_epoch=42, producer_id=8, producer_epoch=0,
                      base_sequence=0, transactional=True)
    return bytes(plain), bytes(txn)


def test_a_mirror_leader_appends_the_sources_batches_at_their_offsets(tmp_path):
    p, _ = leader(tmp_path, isr=(1,))
    p.restart_at(10)
    plain, txn = _source_batches()
    assert p.append_mirrored(plain + txn + txn[:30]) == 1001  # the last whole batch's
    # (the fetch cut the last batch short: it comes whole next time)
    lg = p.log
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark) == (10, 15, 15)
    stored = bytes(lg.read(10, 1 << 20, min_one=True).records)
    assert len(stored) == len(plain) + len(txn)
    for mine, theirs in ((stored[:len(plain)], plain), (stored[len(plain):], txn)):
        assert mine[12:16] == (5).to_bytes(4, "big")  # this leader's epoch, outside the CRC
        assert mine[:12] + mine[16:] == theirs[:12] + theirs[16:]
    assert p.last_stable_offset == 13  # the source's open transaction holds consumers back
    assert p.producers.producers[7].epoch == 0


def test_a_mirror_partition_refuses_producers_until_it_stops(tmp_path):
    p, _ = leader(tmp_path, isr=(1,))
    p.mirror = "east"
    res = p.append(records(), acks=1)
    assert res.error == errors.INVALID_REQUEST
    assert res.message == ("Topic t is a mirror topic of cluster link east: it is read-only "
                           "until it is promoted or failed over")
    p.append_mirrored(_source_batches()[0])
    assert p.write_marker(9, 0, False, 0).error == errors.NONE  # a local transaction's abort
    assert p.log.log_end_offset == 13  # wrote nothing: the log is the source's
    p.mirror = None
    assert p.append(records(), acks=1).base_offset == 13


def test_a_stopped_mirror_aborts_the_sources_open_transactions(tmp_path):
    p, _ = leader(tmp_path, isr=(1,))
    p.restart_at(10)
    p.mirror = "east"
    p.append_mirrored(b"".join(_source_batches()))
    assert p.last_stable_offset == 13
    p.mirror = None
    assert p.abort_open_transactions() == [8]
    assert (p.log.log_end_offset, p.last_stable_offset) == (16, 16)
    assert p.producers.aborted_between(10, 16) == [(8, 13)]
    assert p.abort_open_transactions() == []


def test_an_empty_mirror_starts_inside_the_sources_first_batch(tmp_path):
    """The source's log start (DeleteRecords) fell inside a batch: the empty log starts at
    the batch; the fetcher moves its log start to the source's after."""
    p, _ = leader(tmp_path, isr=(1,))
    p.restart_at(11)
    plain, _txn = _source_batches()
    p.append_mirrored(plain)
    assert (p.log.log_start_offset, p.log.log_end_offset) == (10, 13)


# -- the replica manager: what the Produce and Fetch handlers call ------------------------------
def _manager(tmp_path):
    from josefk.broker.app import Broker
    from josefk.broker.config import BrokerConfig
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path)}))
    broker.replicas.lead_locally(broker.metadata)
    broker.metadata.request_topic("t", 1, 1, {})
    return broker.replicas


def _produce(index=0, n=1):
    return SimpleNamespace(index=index, records=records(n))


def _fetch(offset, partition=0):
    return SimpleNamespace(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20,
                           current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1)


def test_a_fetch_short_of_min_bytes_waits_for_an_append_and_reads_again(tmp_path):
    async def run():
        replicas = _manager(tmp_path)
        params = FetchParams(-1, max_wait_ms=5000, min_bytes=1, max_bytes=1 << 20)
        waiting = replicas.fetch_messages(params, [("t", [_fetch(0)], None)], lambda r: r)
        assert asyncio.iscoroutine(waiting)  # nothing to read yet: a delayed fetch
        task = asyncio.ensure_future(waiting)
        await asyncio.sleep(0.01)
        assert not task.done()
        assert replicas.append_records([("t", [_produce(n=3)])], 1, 1000, lambda r: r)[0][0] \
            .next_offset == 3
        [[(_fp, res)]] = await asyncio.wait_for(task, 1)
        assert res.error == errors.NONE and res.high_watermark == 3 and len(res.records) > 0
        replicas.logs.close()
    asyncio.run(run())


def test_a_fetch_with_an_error_to_tell_or_no_wait_is_answered_at_once(tmp_path):
    async def run():
        replicas = _manager(tmp_path)
        params = FetchParams(-1, max_wait_ms=5000, min_bytes=1, max_bytes=1 << 20)
        [[(_fp, res)]] = replicas.fetch_messages(params, [("t", [_fetch(0, partition=7)], None)],
                                                 lambda r: r)
        assert res.error == errors.UNKNOWN_TOPIC_OR_PARTITION
        params.max_wait_ms = 0
        [[(_fp, res)]] = replicas.fetch_messages(params, [("t", [_fetch(0)], None)], lambda r: r)
        assert (res.error, res.records, res.high_watermark) == (errors.NONE, b"", 0)
        replicas.logs.close()
    asyncio.run(run())


def test_acks_all_waits_for_a_follower_fetch_and_a_timeout_keeps_the_offsets(tmp_path):
    async def run():
        replicas = _manager(tmp_path)
        me = replicas.node_id
        replicas.apply(PartitionState("t", 0, me, 1, [me, 99], [me, 99]), {})
        [[res]] = await replicas.append_records([("t", [_produce()])], -1, 50, lambda r: r)
        assert (res.error, res.base_offset, res.appended) == (errors.REQUEST_TIMED_OUT, -1, True)
        waiting = asyncio.ensure_future(
            replicas.append_records([("t", [_produce()])], -1, 5000, lambda r: r))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        follower = FetchParams(99, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
        replicas.fetch_messages(follower, [("t", [_fetch(2)], None)], lambda r: r)
        [[res]] = await asyncio.wait_for(waiting, 1)
        assert (res.error, res.base_offset) == (errors.NONE, 1)
        replicas.logs.close()
    asyncio.run(run())


def test_one_produce_to_many_partitions_waits_once_and_times_out_only_what_is_behind(tmp_path):
    """A request's acks=all appends wait together (one delayed produce): each partition is
    answered by its own high watermark, the ones still behind at the timeout time out."""
    async def run():
        replicas = _manager(tmp_path)
        me = replicas.node_id
        replicas.metadata.request_topic("u", 2, 1, {})
        for i in (0, 1):
            replicas.apply(PartitionState("u", i, me, 1, [me, 99], [me, 99]), {})
        waiting = asyncio.ensure_future(replicas.append_records(
            [("u", [_produce(0), _produce(1, n=2)])], -1, 300, lambda r: r))
        await asyncio.sleep(0.01)
        follower = FetchParams(99, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
        replicas.fetch_messages(follower, [("u", [_fetch(1)], None)], lambda r: r)
        assert not waiting.done()  # partition 1 is not replicated yet
        [[first, second]] = await asyncio.wait_for(waiting, 5)
        assert (first.error, first.base_offset) == (errors.NONE, 0)
        assert (second.error, second.appended) == (errors.REQUEST_TIMED_OUT, True)
        assert [len(replicas.get("u", i).acks_waiting.waiting) for i in (0, 1)] == [0, 0]
        replicas.logs.close()
    asyncio.run(run())


def test_a_cancelled_produce_stops_waiting(tmp_path):
    async def run():
        p, _ = leader(tmp_path)
        res = p.append(records(), acks=-1)
        waiting = asyncio.ensure_future(wait_replicated(p, res.next_offset, 5000))
        await asyncio.sleep(0.01)
        assert len(p.acks_waiting.waiting) == 1
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert p.acks_waiting.waiting == []
    asyncio.run(run())


def test_an_append_wakes_followers_fetches_and_consumers_only_once_replicated(tmp_path):
    """A follower's delayed fetch returns with the append; a consumer's waits until the high
    watermark moves (woken for nothing to read before)."""
    async def run():
        replicas = _manager(tmp_path)
        me = replicas.node_id
        replicas.apply(PartitionState("t", 0, me, 1, [me, 99], [me, 99]), {})
        part = replicas.get("t", 0)
        consumer = FetchParams(-1, max_wait_ms=5000, min_bytes=1, max_bytes=1 << 20)
        follower = FetchParams(99, max_wait_ms=5000, min_bytes=1, max_bytes=1 << 20)
        reading = asyncio.ensure_future(
            replicas.fetch_messages(consumer, [("t", [_fetch(0)], None)], lambda r: r))
        copying = asyncio.ensure_future(
            replicas.fetch_messages(follower, [("t", [_fetch(0)], None)], lambda r: r))
        await asyncio.sleep(0.01)
        consumer_waits = list(part.fetches_waiting.futures)
        replicas.append_records([("t", [_produce(n=2)])], 1, 1000, lambda r: r)
        [[(_fp, res)]] = await asyncio.wait_for(copying, 1)
        assert len(res.records) > 0
        await asyncio.sleep(0.01)
        assert not reading.done() and not any(f.done() for f in consumer_waits)
        replicas.fetch_messages(FetchParams(99, 0, 1, 1 << 20), [("t", [_fetch(2)], None)],
                                lambda r: r)
        [[(_fp, res)]] = await asyncio.wait_for(reading, 1)
        assert res.high_watermark == 2 and len(res.records) > 0
        replicas.logs.close()
    asyncio.run(run())


def test_a_wait_registered_late_is_released_by_its_own_offset(tmp_path):
    """A coordinator may start waiting for an append after a later append's wait is parked:
    each is released as soon as the high watermark passes its own offset."""
    async def run():
        p, _ = leader(tmp_path)
        first = p.append(records(), acks=-1)
        second = p.append(records(), acks=-1)
        later = asyncio.ensure_future(wait_replicated(p, second.next_offset, 5000))
        await asyncio.sleep(0.01)
        earlier = asyncio.ensure_future(wait_replicated(p, first.next_offset, 5000))
        await asyncio.sleep(0.01)
        p.update_follower(2, first.next_offset, 1000)
        p.update_follower(3, first.next_offset, 1000)
        assert await asyncio.wait_for(earlier, 1) == errors.NONE
        assert not later.done()
        p.update_follower(2, second.next_offset, 1000)
        p.update_follower(3, second.next_offset, 1000)
        assert await asyncio.wait_for(later, 1) == errors.NONE
    asyncio.run(run())
