"""``python -m bench.metrics_cost``: what the Prometheus metrics cost a broker, metrics off
against on in the same run, three ways.

1. End to end, real clients. Two josefk brokers run side by side, one without and one with
   ``josefk.metrics.port`` (its endpoint scraped every ``--scrape-interval`` s, as Prometheus
   would). Every round runs each workload once per broker, the order flipping every round
   (off on, on off, ...) so drift in the machine's load falls on both alike; a warm-up round is
   not counted. A workload produces ``--messages`` records with confluent-kafka to a fresh
   topic, or consumes such a topic from the beginning, timed from the first produce()/assign()
   to the last acknowledgement/message; the broker's CPU time over exactly that window is read
   from /proc (``schedstat`` of every thread, in ns). Printed: medians of msg/s and of broker
   CPU us/msg per broker, and the median (min-max) of the per-round on/off ratios. Workloads:
   produce (100 B, acks=1, linger.ms=5, batch.size=1 MB, as the main bench), the same with
   16 KiB batches (the Java client's default: many more requests per message) and consume
   (fetch.queue.backoff.ms=10). The endpoint's request counters give requests per message.
2. In process, per request: the metrics wrapper's added time on a Produce and a Fetch (a stub
   handler returning a real response, wrapped and not, alternating blocks) - the one figure
   the machine's noise does not swamp.
3. The broker CPU of one scrape of the endpoint.

The metrics' share of the broker's work per workload is then (2) x requests per message / the
metrics-off broker's CPU per message. Bounded: ``--rounds`` rounds, each measurement capped at
``--cap-seconds``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench.brokers import Josefk, Scraper, cleanup_dir, free_port
from bench.worker import create_topic, delete_topic, produce_messages

PARTITIONS = 4
PRODUCE = {  # workload -> producer settings; "consume" then reads what "produce" wrote
    "produce": {"linger_ms": 5, "batch_size": 1_000_000},
    "produce-small-requests": {"linger_ms": 5, "batch_size": 16384},
}
API_OF = {"produce": "Produce", "produce-small-requests": "Produce", "consume": "Fetch"}


def broker_cpu_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` so far, in ns (finer than /proc/<pid>/stat's ticks)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def requests_handled(port: int | None, api: str) -> float:
    """The endpoint's request counter of ``api`` (0 without an endpoint)."""
    if port is None:
        return 0.0
    prefix = f'kafka_network_requestmetrics_requests_total{{request="{api}"}} '
    return next((float(line[len(prefix):]) for line in scrape(port).splitlines()
                 if line.startswith(prefix)), 0.0)


class Measured:
    """One broker under measurement: its process and, when on, its endpoint's port."""

    def __init__(self, name, broker, port=None):
        self.name, self.broker, self.port = name, broker, port

    def window(self, api, fn):
        """Run ``fn`` (returning (messages, seconds)); add the broker CPU ns and requests."""
        reqs = requests_handled(self.port, api)
        if self.port is not None:
            time.sleep(0.3)  # the broker finishes that scrape (closing, freeing) outside the window
        cpu0 = broker_cpu_ns(self.broker.proc.pid)
        n, elapsed = fn()
        cpu = broker_cpu_ns(self.broker.proc.pid) - cpu0
        return n, elapsed, cpu, requests_handled(self.port, api) - reqs


def _produce(bootstrap, topic, args, settings) -> tuple[int, float]:
    spec = {"bootstrap": bootstrap, "topic": topic, "partitions": PARTITIONS,
            "size": args.size, "acks": "1", **settings}
    r = produce_messages(spec, args.messages, time.monotonic() + args.cap_seconds, 30)
    return r["delivered"], r["t_end"] - r["t_start"]


def _consume(c, topic, expected, args) -> tuple[int, float]:
    t0 = time.monotonic()
    deadline = t0 + args.cap_seconds
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    n = 0
    while n < expected and time.monotonic() < deadline:
        n += sum(1 for m in c.consume(min(10000, expected - n), 0.5) if m.error() is None)
    return n, time.monotonic() - t0


def _round(brokers, args, results) -> None:
    for m in brokers:
        bootstrap = m.broker.bootstrap
        for w, settings in PRODUCE.items():
            topic = f"cost-{w}-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, PARTITIONS)
            n, *rest = m.window("Produce", lambda: _produce(bootstrap, topic, args, settings))
            _record(results, w, m.name, n, *rest)
            if w == "produce":
                c = Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False,
                              "group.id": f"cost-{uuid.uuid4().hex}",
                              "fetch.queue.backoff.ms": 10, "enable.partition.eof": False})
                c.list_topics(topic, timeout=10)  # metadata and connection before the clock
                _record(results, "consume", m.name,
                        *m.window("Fetch", lambda: _consume(c, topic, n, args)))
                c.close()
            delete_topic(bootstrap, topic)


def _record(results, workload, broker, n, elapsed, cpu_ns, reqs) -> None:
    rate, cpu_us = n / elapsed, cpu_ns / 1000 / max(n, 1)
    results.setdefault(workload, {}).setdefault(broker, []).append((rate, cpu_us, reqs / n))
    print(f"  {workload:<23} {broker:<4} {n:>8} msgs {rate:>10,.0f} msg/s "
          f"{cpu_us:>7.3f} broker CPU us/msg", flush=True)


def wrapper_cost_us(blocks: int = 15, per_block: int = 5000) -> dict:
    """In process: the added us per Produce and Fetch of the metrics wrapper (median over
    alternating blocks of a stub handler returning a real response, wrapped and not)."""
    from josefk.broker.app import Broker
    from josefk.broker.config import BrokerConfig
    from josefk.broker.dispatch import HANDLERS
    from josefk.broker.metrics import BrokerMetrics
    from josefk.broker.connection import RequestContext
    from josefk.wire import headers
    from josefk.wire.apis import FETCH, PRODUCE as PRODUCE_API
    from josefk.wire.records import build_batch

    class Conn:
        received_at = 0.0

    async def run(d):
        broker = Broker(BrokerConfig({"log.dirs": d}))
        broker.replicas.lead_locally(broker.metadata)
        t = broker.metadata.request_topic("cost", 1, 1, {})
        P, F = PRODUCE_API.Request, FETCH.Request
        produce = P(acks=1, timeout_ms=30000, transactional_id=None, topic_data=[
            P.TopicProduceData(name="cost", partition_data=[P.PartitionProduceData(
                index=0, records=build_batch([(None, b"v" * 100, None, None)] * 100))])])
        fetch = F(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                  session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                  replica_id=-1, topics=[F.FetchTopic(topic="cost", topic_id=t.topic_id,
                                                      partitions=[F.FetchPartition(
                                                          partition=0, fetch_offset=0,
                                                          partition_max_bytes=1 << 20)])])
        out = {}
        for api, req in ((PRODUCE_API, produce), (FETCH, fetch)):
            ctx = RequestContext(headers.RequestHeader(api.key, api.max_version, 1, "bench"),
                                 api, "127.0.0.1", Conn())
            resp = HANDLERS[api.key](broker, ctx, req)

            def stub(_b, _c, _r, resp=resp):
                return resp
            wrapped = BrokerMetrics(broker.config, broker.metadata, broker.replicas, broker.logs,
                                   broker.groups, broker.quotas,
                                   broker.client_metrics)._wrap(api.name, api.key, stub)
            added = []
            for _ in range(blocks):
                times = []
                for fn in (stub, wrapped):
                    t0 = time.perf_counter()
                    for _ in range(per_block):
                        fn(broker, ctx, req)
                    times.append(time.perf_counter() - t0)
                added.append((times[1] - times[0]) / per_block * 1e6)
            out[api.name] = statistics.median(added)
        broker.logs.close()
        return out

    with tempfile.TemporaryDirectory(prefix="josefk-metrics-wrap-") as d:
        return asyncio.run(run(d))


def _scrape_cost(broker, port, scrapes=20) -> float:
    """Broker CPU ms per scrape of the endpoint (back to back, after the rounds)."""
    cpu0 = broker_cpu_ns(broker.proc.pid)
    for _ in range(scrapes):
        scrape(port)
    return (broker_cpu_ns(broker.proc.pid) - cpu0) / 1e6 / scrapes


def _summary(results, wrap_us) -> None:
    print("\n== medians over the rounds; 'on/off' pairs the two brokers' runs of one round "
          "(median, min-max)")
    print(f"{'workload':<23} {'off msg/s':>10} {'on msg/s':>10} {'on/off':>17}   "
          f"{'off CPU us':>10} {'on CPU us':>9} {'on/off':>17}   {'msgs/req':>8} "
          f"{'metrics share':>13}")
    for w, per in results.items():
        off, on = per["off"], per["on"]
        cols = []
        for i in (0, 1):
            pairs = sorted(b[i] / a[i] for a, b in zip(off, on))
            cols.append((statistics.median(a[i] for a in off),
                         statistics.median(b[i] for b in on),
                         f"{statistics.median(pairs):.3f} ({pairs[0]:.2f}-{pairs[-1]:.2f})"))
        (ro, rn, rr), (co, cn, cr) = cols
        reqs_per_msg = statistics.median(b[2] for b in on)
        share = wrap_us[API_OF[w]] * reqs_per_msg / co * 100
        print(f"{w:<23} {ro:>10,.0f} {rn:>10,.0f} {rr:>17}   {co:>10.3f} {cn:>9.3f} {cr:>17}   "
              f"{1 / max(reqs_per_msg, 1e-9):>8,.0f} {share:>12.2f}%")
    print("metrics share = the wrapper's us per request (in process) x requests per message / "
          "the metrics-off broker's CPU us per message")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.metrics_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--warmup", type=int, default=1, help="rounds run first and not counted")
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--size", type=int, default=100, help="value bytes")
    p.add_argument("--cap-seconds", type=float, default=30)
    p.add_argument("--scrape-interval", type=float, default=15.0,
                   help="s between scrapes during the rounds (Prometheus' default is 60)")
    args = p.parse_args(argv)
    wrap_us = wrapper_cost_us()
    print("metrics wrapper, in process: " + ", ".join(
        f"{api} +{us:.2f} us per request" for api, us in wrap_us.items()))
    workdir = Path(tempfile.mkdtemp(prefix="josefk-metrics-cost-"))
    metrics_port = free_port()
    off = Josefk(workdir, {}, name="josefk-off")
    on = Josefk(workdir, {"josefk.metrics.port": str(metrics_port)}, name="josefk-on")
    scraper = Scraper(metrics_port, args.scrape_interval)
    results: dict = {}
    scrape_ms = None
    print(f"{args.rounds} rounds, {args.messages} x {args.size} B per workload, "
          f"{PARTITIONS} partitions; metrics endpoint scraped every {args.scrape_interval} s")
    try:
        off.start()
        on.start()
        scraper.start()
        order = [Measured("off", off), Measured("on", on, metrics_port)]
        for _ in range(args.warmup):
            print("== warm-up round (not counted)", flush=True)
            _round(order, args, {})
        for rnd in range(args.rounds):
            print(f"== round {rnd + 1}", flush=True)
            _round(order if rnd % 2 == 0 else order[::-1], args, results)
        scraper.stop()
        scrape_ms = statistics.median(_scrape_cost(on, metrics_port) for _ in range(3))
    except KeyboardInterrupt:
        print("== interrupted; summary of what ran")
    finally:
        scraper.stop()
        off.stop()
        on.stop()
        cleanup_dir(workdir)
    print(f"endpoint scrapes during the rounds: {scraper.scrapes}, failed: {scraper.failures}")
    if results and all(len(per) == 2 for per in results.values()):
        _summary(results, wrap_us)
    if scrape_ms is not None:
        print(f"One scrape of the endpoint costs the broker {scrape_ms:.1f} ms CPU (median of "
              f"3 x 20 back-to-back scrapes): {scrape_ms / args.scrape_interval / 10:.3f}% of "
              f"one core at a {args.scrape_interval:g} s scrape interval.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
