"""``python -m bench.session_cost``: in process, the broker time of an incremental fetch
(KIP-227) over a session of N partitions none of which has anything new: the Fetch handler and
the encoding of its answer, on a real broker's logs, with no socket in the way. Each partition
holds one record and the session fetches from its end, so every incremental fetch answers
nothing. Printed per N: the median and min-max of ``--blocks`` blocks of ``--fetches`` fetches,
in us per fetch and ns per partition.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from josefk.broker.app import Broker
from josefk.broker.config import BrokerConfig
from josefk.broker.dispatch import HANDLERS
from josefk.broker.handlers.fetch import handle_fetch
from josefk.broker.connection import RequestContext
from josefk.wire import headers
from josefk.wire.apis import FETCH, PRODUCE
from josefk.wire.records import build_batch

F = FETCH.Request


class _Conn:
    received_at = 0.0


def _fill(broker, topic, n):
    P = PRODUCE.Request
    batch = build_batch([(None, b"v" * 100, None, None)])
    req = P(acks=1, timeout_ms=30000, transactional_id=None, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=i, records=batch)
                                    for i in range(n)])])
    ctx = RequestContext(headers.RequestHeader(PRODUCE.key, 9, 1, "bench"), PRODUCE,
                         "127.0.0.1", _Conn())
    return HANDLERS[PRODUCE.key](broker, ctx, req)


def _fetch(topic_id, session_id, epoch, partitions):
    return F(max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
             session_id=session_id, session_epoch=epoch, forgotten_topics_data=[], rack_id="",
             replica_id=-1, topics=[F.FetchTopic(topic_id=topic_id, partitions=[
                 F.FetchPartition(partition=i, fetch_offset=1, partition_max_bytes=1 << 20,
                                  current_leader_epoch=-1, last_fetched_epoch=-1,
                                  log_start_offset=-1) for i in partitions])] if partitions
             else [])


async def _measure(d, n, blocks, fetches):
    broker = Broker(BrokerConfig({"log.dirs": d}))
    broker.replicas.lead_locally(broker.metadata)
    topic = f"cost{n}"
    t = broker.metadata.request_topic(topic, n, 1, {})
    result = _fill(broker, topic, n)
    if asyncio.iscoroutine(result):
        await result
    v = FETCH.max_version
    ctx = RequestContext(headers.RequestHeader(FETCH.key, v, 1, "bench"), FETCH, "127.0.0.1",
                         _Conn())
    resp = handle_fetch(broker, ctx, _fetch(t.topic_id, 0, 0, range(n)))
    assert len(resp.responses[0].partitions) == n and resp.session_id
    sid, epoch = resp.session_id, 1
    per_fetch = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(fetches):
            resp = handle_fetch(broker, ctx, _fetch(t.topic_id, sid, epoch, ()))
            resp.to_bytes(v)
            epoch += 1
        per_fetch.append((time.perf_counter() - start) / fetches * 1e6)
        assert resp.responses == [] and resp.error_code == 0
    broker.logs.close()
    return per_fetch


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", default="250,1000")
    ap.add_argument("--blocks", type=int, default=9)
    ap.add_argument("--fetches", type=int, default=200)
    args = ap.parse_args(argv)
    for n in (int(x) for x in args.partitions.split(",")):
        with tempfile.TemporaryDirectory(prefix="josefk-session-cost-") as d:
            us = asyncio.run(_measure(d, n, args.blocks, args.fetches))
        med = statistics.median(us)
        print(f"{n:>6} partitions: incremental fetch, nothing new: {med:8.1f} us "
              f"(min {min(us):.1f}, max {max(us):.1f}), {med * 1000 / n:6.0f} ns/partition",
              flush=True)


if __name__ == "__main__":
    main()
