"""``python -m bench.mirror``: MirrorMaker 2 between two josefk brokers (issue 30's
benchmark). Both brokers and ``josefk mirror mm2.properties`` (one flow, ``source->target``)
are processes.

- **throughput**: ``--records`` records of ``--size`` bytes already on the source's topic
  (``--partitions`` partitions) when the mirror starts; MB/s and records/s from the first
  mirrored record on the target to the last. Beside it, in the same round, the ceiling the
  issue names: a bare confluent-kafka producer writing the same records into the target
  broker.
- **lag**: the mirror running, a producer writes ``--rate`` records/s for ``--seconds`` to the
  source; a consumer of the target's ``source.<topic>`` takes each record's lag from its
  timestamp (the source's CreateTime, which MirrorMaker keeps) to its arrival: p50 / p99.

Rounds alternate mirror and ceiling; medians are reported.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.brokers import REPO_ROOT, Josefk, cleanup_dir
from bench.connect import create_topic
from bench.loads import fill, send

FAST_PRODUCER = {"linger.ms": 5, "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20}


class Mirror:
    """``josefk mirror`` for the flow source->target, mirroring ``topic``."""

    def __init__(self, root: Path, name: str, source: str, target: str, topic: str):
        conf = root / f"{name}.properties"
        conf.write_text(
            "clusters = source, target\n"
            f"source.bootstrap.servers = {source}\ntarget.bootstrap.servers = {target}\n"
            f"source->target.enabled = true\nsource->target.topics = {topic}\n"
            "replication.factor = 1\n"
            + "".join(f"{t}.replication.factor = 1\n" for t in (
                "offset-syncs.topic", "checkpoints.topic", "heartbeats.topic",
                "config.storage", "offset.storage", "status.storage")))
        self.log = open(root / f"{name}.log", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "josefk", "mirror", str(conf)], stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=subprocess.STDOUT, cwd=REPO_ROOT, start_new_session=True)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


def end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-mirror-ends"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=5,
                                           cached=False)[1] for p in range(partitions))
    except Exception:  # noqa: BLE001 - the mirrored topic is not made yet
        return 0
    finally:
        c.close()


def throughput(root: Path, source: str, target: str, n: int, size: int, partitions: int,
               r: int) -> dict:
    topic = f"bulk{r}"
    create_topic(source, topic, partitions)
    fill(Producer({"bootstrap.servers": source, **FAST_PRODUCER}), topic, n, b"x" * size,
         partitions)
    mirror = Mirror(root, f"bulk{r}", source, target, topic)
    try:
        deadline = time.monotonic() + 600
        first = None
        while (done := end_offsets(target, f"source.{topic}", partitions)) < n:
            if first is None and done:
                first = (time.monotonic(), done)
            if time.monotonic() > deadline or mirror.proc.poll() is not None:
                raise RuntimeError(f"{done} of {n} mirrored: see {root}/bulk{r}.log")
            time.sleep(0.05)
        seconds = time.monotonic() - first[0]
        moved = n - first[1]
    finally:
        mirror.stop()
    return {"records/s": moved / seconds, "MB/s": moved * size / seconds / 1e6}


def ceiling(target: str, n: int, size: int, partitions: int, r: int) -> dict:
    topic = f"ceiling{r}"
    create_topic(target, topic, partitions)
    start = time.monotonic()
    fill(Producer({"bootstrap.servers": target, **FAST_PRODUCER}), topic, n, b"x" * size,
         partitions)
    seconds = time.monotonic() - start
    return {"records/s": n / seconds, "MB/s": n * size / seconds / 1e6}


def lag(root: Path, source: str, target: str, rate: int, seconds: float, size: int,
        partitions: int, r: int) -> dict:
    topic = f"lag{r}"
    create_topic(source, topic, partitions)
    mirror = Mirror(root, f"lag{r}", source, target, topic)
    c = Consumer({"bootstrap.servers": target, "group.id": f"bench-lag{r}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 10, "topic.metadata.refresh.interval.ms": 500})
    try:
        c.subscribe([f"source.{topic}"])
        p = Producer({"bootstrap.servers": source, "linger.ms": 1})
        warm = time.monotonic() + 120  # the flow running: a record reaches the target
        while not c.consume(10, 0.2):
            send(p, topic, b"warm")
            p.poll(0)
            if time.monotonic() > warm or mirror.proc.poll() is not None:
                raise RuntimeError(f"the mirror never delivered: see {root}/lag{r}.log")
        n = int(rate * seconds)
        value = b"x" * size
        lags: list[float] = []
        start = time.monotonic()
        for i in range(n):
            due = start + i / rate
            while (now := time.monotonic()) < due:
                lags += _lags(c.consume(1000, min(due - now, 0.005)))
            send(p, topic, value, i % partitions)
            p.poll(0)
        p.flush(30)
        deadline = time.monotonic() + 60
        while len(lags) < n and time.monotonic() < deadline:
            lags += _lags(c.consume(1000, 0.1))
    finally:
        c.close()
        mirror.stop()
    lags.sort()
    return {"p50 ms": lags[len(lags) // 2], "p99 ms": lags[int(len(lags) * 0.99)],
            "received": len(lags) / n}


def _lags(msgs) -> list[float]:
    now = time.time() * 1000
    return [now - m.timestamp()[1] for m in msgs if not m.error() and m.value() != b"warm"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.mirror")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--rate", type=int, default=5000, help="records/s of the lag run")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="throughput,lag")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    root = Path(tempfile.mkdtemp(prefix="bench-mirror-"))
    source = Josefk(root / "a", {"offsets.topic.replication.factor": 1}, name="source")
    target = Josefk(root / "b", {"offsets.topic.replication.factor": 1}, name="target")
    runs: dict[str, list[dict]] = {"mirror": [], "ceiling": [], "lag": []}
    try:
        for b in (source, target):
            b.workdir.mkdir(parents=True, exist_ok=True)
            b.start()
        for r in range(args.rounds):
            if "throughput" in only:
                for kind in ("mirror", "ceiling"):
                    result = (throughput(root, source.bootstrap, target.bootstrap,
                                         args.records, args.size, args.partitions, r)
                              if kind == "mirror" else
                              ceiling(target.bootstrap, args.records, args.size,
                                      args.partitions, r))
                    runs[kind].append(result)
                    print(f"round {r + 1} {kind:7s}: " + "  ".join(
                        f"{k} {v:,.1f}" for k, v in result.items()), flush=True)
            if "lag" in only:
                result = lag(root, source.bootstrap, target.bootstrap, args.rate, args.seconds,
                             args.size, args.partitions, r)
                runs["lag"].append(result)
                print(f"round {r + 1} lag at {args.rate}/s: " + "  ".join(
                    f"{k} {v:,.2f}" for k, v in result.items()), flush=True)
        for kind, rs in runs.items():
            if rs:
                print(f"median {kind:7s}: " + "  ".join(
                    f"{k} {statistics.median(x[k] for x in rs):,.2f}" for k in rs[0]))
        if runs["mirror"]:
            ratio = (statistics.median(x["records/s"] for x in runs["mirror"])
                     / statistics.median(x["records/s"] for x in runs["ceiling"]))
            print(f"mirror / the target's produce ceiling: {ratio:.2f}")
    finally:
        source.stop()
        target.stop()
        cleanup_dir(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
