"""What ``josefk.testing`` costs a test suite: ``python -m bench.testing`` (a benchmark, not a
test).

- ``broker()``: from the call to its return (the broker serves: *ready*), and from the call to
  the first record a consumer reads (*first record*: ``create_topic``, a confluent-kafka
  producer writes one record and flushes, a consumer reads it, as a group member with
  ``subscribe`` or alone with ``assign``); ``--rounds`` brokers one after the other in this
  process, so the imports are paid by the first alone (reported apart), and ``--fresh`` fresh
  processes for the whole of a first test: interpreter, imports, broker, first record;
- ``cluster(brokers=3)``: ZooKeeper and three broker processes, the same figures
  (``--cluster-rounds``);
- a fresh topic per test, what the ``josefk_topic`` fixture does on the shared broker:
  ``create_topic`` then ``delete_topic`` (``--topics`` of them).

Medians, with min and max. Every loop is bounded in count and each wait in time.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import uuid

now = time.perf_counter
POLL_TIMEOUT = 30.0


def _first_record(bootstrap: str, topic: str, subscribe: bool) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    producer.produce(topic, b"first")
    if producer.flush(POLL_TIMEOUT):
        raise RuntimeError("the record was not delivered")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    if subscribe:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        msg = consumer.poll(POLL_TIMEOUT)
        if msg is None or msg.error() is not None or msg.value() != b"first":
            raise RuntimeError(f"no first record: {msg and msg.error()}")
    finally:
        consumer.close()


def _rounds(start, rounds: int) -> dict:
    """``start()`` returns a started broker or cluster; per round: ready, and first record
    with subscribe, then with assign (a broker or cluster each)."""
    out = {"ready": [], "subscribe": [], "assign": []}
    for i in range(rounds):
        for mode in ("subscribe", "assign"):
            t0 = now()
            with start() as b:
                ready = now()
                topic = b.create_topic(f"bench-{uuid.uuid4().hex[:8]}")
                _first_record(b.bootstrap_servers, topic, mode == "subscribe")
                done = now()
            if mode == "subscribe":
                out["ready"].append((ready - t0) * 1000)
            out[mode].append((done - t0) * 1000)
    return out


def _topic_costs(count: int) -> list[float]:
    from josefk.testing import broker

    with broker() as b:
        b.create_topic("warm-up")
        costs = []
        for i in range(count):
            t0 = now()
            name = b.create_topic(f"test-{i}-{uuid.uuid4().hex[:8]}")
            b.delete_topic(name)
            costs.append((now() - t0) * 1000)
    return costs


FRESH = """
import time
t0 = time.perf_counter()
import josefk.testing
with josefk.testing.broker() as b:
    ready, ready_wall = time.perf_counter(), time.time()
    from bench.testing import _first_record
    _first_record(b.bootstrap_servers, b.create_topic("fresh"), True)
    print((ready - t0) * 1000, ready_wall, time.time())
"""


def _fresh(count: int) -> dict:
    """Fresh processes: from exec to ready and to the first record (subscribe), and from
    ``import josefk.testing`` to ready."""
    out = {"ready": [], "first": [], "imports": []}
    for _ in range(count):
        start = time.time()
        proc = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                              timeout=120)
        if proc.returncode:
            raise RuntimeError(proc.stderr[-2000:])
        imports, ready, first = map(float, proc.stdout.split()[-3:])
        out["imports"].append(imports)
        out["ready"].append((ready - start) * 1000)
        out["first"].append((first - start) * 1000)
    return out


def _row(name: str, values) -> str:
    if not values:
        return f"| {name} | – | – | – |"
    return (f"| {name} | {statistics.median(values):.0f} | {min(values):.0f} | "
            f"{max(values):.0f} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.testing", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=20, help="in-process brokers per figure")
    p.add_argument("--cluster-rounds", type=int, default=20, help="clusters per figure (0: none)")
    p.add_argument("--fresh", type=int, default=5, help="fresh processes")
    p.add_argument("--topics", type=int, default=100, help="topics made and deleted")
    args = p.parse_args(argv)

    t0 = now()
    from josefk.testing import broker, cluster  # timed: what the first use pays

    first = broker()
    first_ready = (now() - t0) * 1000
    first.close()

    rows = ["| figure (ms) | median | min | max |", "|---|---:|---:|---:|"]
    b = _rounds(broker, args.rounds)
    rows += [_row(f"broker(): ready ({args.rounds})", b["ready"]),
             _row(f"broker(): first record, subscribe ({args.rounds})", b["subscribe"]),
             _row(f"broker(): first record, assign ({args.rounds})", b["assign"]),
             _row("broker(): the first in this process, imports included", [first_ready])]
    fresh = _fresh(args.fresh)
    rows += [_row(f"fresh process: exec to ready ({args.fresh})", fresh["ready"]),
             _row(f"fresh process: exec to first record, subscribe ({args.fresh})",
                  fresh["first"]),
             _row(f"fresh process: import josefk.testing to ready ({args.fresh})",
                  fresh["imports"])]
    if args.cluster_rounds:
        c = _rounds(lambda: cluster(brokers=3), args.cluster_rounds)
        rows += [_row(f"cluster(brokers=3): ready ({args.cluster_rounds})", c["ready"]),
                 _row(f"cluster(brokers=3): first record, subscribe ({args.cluster_rounds})",
                      c["subscribe"]),
                 _row(f"cluster(brokers=3): first record, assign ({args.cluster_rounds})",
                      c["assign"])]
    rows.append(_row(f"a fresh topic per test: create + delete ({args.topics})",
                     _topic_costs(args.topics)))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
