"""Fetch session cache (KIP-227): epochs, updates, forgotten partitions, eviction."""
from types import SimpleNamespace

from josefk.broker.fetch_sessions import FetchSessionCache, next_epoch
from josefk.wire import errors


def fp(partition, offset=0):
    return SimpleNamespace(partition=partition, fetch_offset=offset)


def pd(index, hwm, records=b"", error=0):
    return SimpleNamespace(partition_index=index, records=records, error_code=error,
                           high_watermark=hwm, last_stable_offset=hwm, log_start_offset=0,
                           diverging_epoch=None)


def response(*parts):
    return SimpleNamespace(session_id=0, responses=[SimpleNamespace(topic="t",
                                                                    partitions=list(parts))])


def key(t):
    return t.topic


def open_session(cache, n=2, privileged=False):
    ctx = cache.context(0, 0, [("t", [fp(i) for i in range(n)])], [], privileged)
    resp = ctx.finish(response(*(pd(i, 0) for i in range(n))), key)
    return resp.session_id


def test_full_fetch_at_epoch_zero_opens_a_session_and_minus_one_closes_it():
    cache = FetchSessionCache(10, 120000)
    sid = open_session(cache)
    assert sid > 0 and sid in cache.sessions
    ctx = cache.context(sid, -1, [("t", [fp(0)])], [], False)
    assert ctx.finish(response(pd(0, 0)), key).session_id == 0
    assert sid not in cache.sessions


def test_incremental_fetch_reads_the_session_and_answers_only_changes():
    cache = FetchSessionCache(10, 120000)
    sid = open_session(cache, 3)
    ctx = cache.context(sid, 1, [("t", [fp(1, 5)])], [("t", [2])], False)
    assert [(k, [p.partition for p in ps]) for k, ps in ctx.topics] == [("t", [0, 1])]
    assert ctx.topics[0][1][1].fetch_offset == 5
    resp = ctx.finish(response(pd(0, 0), pd(1, 7, records=b"x")), key)
    assert [p.partition_index for p in resp.responses[0].partitions] == [1]
    ctx = cache.context(sid, 2, [], [], False)
    resp = ctx.finish(response(pd(0, 0), pd(1, 7)), key)
    assert resp.responses == [] and resp.session_id == sid


def test_session_errors():
    cache = FetchSessionCache(10, 120000)
    sid = open_session(cache)
    assert cache.context(sid + 1, 1, [], [], False).error == errors.FETCH_SESSION_ID_NOT_FOUND
    assert cache.context(sid, 2, [], [], False).error == errors.INVALID_FETCH_SESSION_EPOCH
    assert cache.context(sid, 1, [], [], False).error == errors.NONE


def test_epochs_wrap_to_one():
    assert next_epoch(0x7FFFFFFF) == 1 and next_epoch(1) == 2


def test_full_cache_evicts_by_kafka_rules():
    cache = FetchSessionCache(1, 120000)
    small = open_session(cache, 1)
    assert open_session(cache, 5) == 0  # the small one is not old enough to be displaced
    cache.sessions[small].created_ms -= 200000
    big = open_session(cache, 5)
    assert big and small not in cache.sessions
    follower = open_session(cache, 1, privileged=True)  # a follower displaces a consumer
    assert follower and big not in cache.sessions
    assert open_session(cache, 50) == 0  # nobody displaces a follower that is in use
    cache.sessions[follower].last_used_ms -= 200000
    assert open_session(cache, 1) != 0  # ... unless it went idle


def test_no_slots_means_sessionless_full_fetches():
    """max.incremental.fetch.session.cache.slots=0 turns sessions off, as in Kafka: a fetch at
    epoch 0 is answered in full with session id 0."""
    cache = FetchSessionCache(0, 120000)
    ctx = cache.context(0, 0, [("t", [fp(0), fp(1)])], [], False)
    resp = ctx.finish(response(pd(0, 0), pd(1, 0)), key)
    assert resp.session_id == 0 and not cache.sessions
    assert [p.partition_index for p in resp.responses[0].partitions] == [0, 1]


def test_session_regroups_its_partitions_only_when_they_change():
    """The session keeps its partitions grouped by topic between requests; adding and
    forgetting partitions (also both at once, the count unchanged) regroups them."""
    cache = FetchSessionCache(10, 120000)
    sid = open_session(cache, 2)

    def grouping(epoch, topics=(), forgotten=()):
        ctx = cache.context(sid, epoch, list(topics), list(forgotten), False)
        assert ctx.cached is cache.sessions[sid].by_topic(False)
        return [(k, [(p.partition, p.fetch_offset) for p in ps]) for k, ps in ctx.topics]

    assert grouping(1) == [("t", [(0, 0), (1, 0)])]
    assert grouping(2, [("u", [fp(0, 3)]), ("t", [fp(1, 4)])]) == [
        ("t", [(0, 0), (1, 4)]), ("u", [(0, 3)])]
    assert grouping(3, [("t", [fp(2)])], [("u", [0])]) == [("t", [(0, 0), (1, 4), (2, 0)])]
    assert grouping(4, [], [("t", [0])]) == [("t", [(1, 4), (2, 0)])]
    assert grouping(5, [("t", [fp(1, 9)])]) == [("t", [(1, 9), (2, 0)])]
