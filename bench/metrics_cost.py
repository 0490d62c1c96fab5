"""``python -m bench.metrics_cost``: the CPU the Prometheus metrics add to each Produce and Fetch
request, measured in process on a real josefk broker's handlers (no sockets, no clients, so
nothing else is timed).

A broker is built on a temp dir (single broker, metrics on); the same decoded requests go through
the plain handler table and through the instrumented one, alternating in blocks, and the median
time per request of each is printed with their difference. Produce appends one batch of
``--records`` records to one partition (acks=1); Fetch reads up to 1 MiB from the start of a
partition holding such batches. Bounded: a fixed number of requests.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from broker.app import Broker
from broker.config import BrokerConfig
from broker.dispatch import HANDLERS
from broker.server import RequestContext
from wire import headers
from wire.apis import FETCH, PRODUCE
from wire.records import build_batch


class _Conn:
    received_at = 0.0


def _requests(broker, topic, records, size):
    batch = build_batch([(None, b"v" * size, None, None)] * records)  # patched in place
    P = PRODUCE.Request
    produce = P(acks=1, timeout_ms=30000, transactional_id=None, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])])
    F = FETCH.Request
    fetch = F(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
              session_epoch=-1, forgotten_topics_data=[], rack_id="", replica_id=-1,
              topics=[F.FetchTopic(topic=topic, topic_id=broker.metadata.topics[topic].topic_id,
                                   partitions=[F.FetchPartition(partition=0, fetch_offset=0,
                                                                partition_max_bytes=1 << 20)])])
    return produce, fetch


def _time(handler, broker, ctx, req, n) -> float:
    """Median microseconds per call over blocks of ``n`` calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        ctx.connection.received_at = time.monotonic()
        handler(broker, ctx, req)
    return (time.perf_counter() - t0) / n * 1e6


async def run(args) -> None:
    with tempfile.TemporaryDirectory(prefix="josefk-metrics-cost-") as d:
        broker = Broker(BrokerConfig({"log.dirs": d, "josefk.metrics.port": "1",
                                      "log.segment.bytes": str(1 << 30)}))
        broker.groups.startup([])
        broker.replicas.lead_locally(broker.metadata)
        topic = "cost"
        broker.metadata.request_topic(topic, 1, 1, {})
        produce, fetch = _requests(broker, topic, args.records, args.record_size)
        plain, timed = HANDLERS, broker.handlers
        print(f"{args.blocks} alternating blocks of {args.per_block} requests; one batch of "
              f"{args.records} x {args.record_size} B per Produce; Fetch of up to 1 MiB")
        print(f"{'request':<9} {'plain us':>9} {'metrics us':>11} {'added us':>9} {'added %':>8}")
        for api, req in ((PRODUCE, produce), (FETCH, fetch)):
            version = api.max_version
            ctx = RequestContext(headers.RequestHeader(api.key, version, 1, "bench"), api,
                                 "127.0.0.1", _Conn())
            a, b = [], []
            for _ in range(args.blocks):
                a.append(_time(plain[api.key], broker, ctx, req, args.per_block))
                b.append(_time(timed[api.key], broker, ctx, req, args.per_block))
            pa, pb = statistics.median(a), statistics.median(b)
            print(f"{api.name:<9} {pa:>9.1f} {pb:>11.1f} {pb - pa:>9.2f} "
                  f"{(pb - pa) / pa * 100:>7.1f}%")
        broker.logs.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.metrics_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=100)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--blocks", type=int, default=15)
    p.add_argument("--per-block", type=int, default=300)
    asyncio.run(run(p.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
