"""``python -m bench.mirror``: mirroring between two josefk brokers (issue 30's benchmark),
both modes: MirrorMaker 2 (``josefk mirror mm2.properties``, one flow ``source->target``, a
process) and a mirror topic (``josefk mirror create-link`` / ``create-topic``: the target
broker's partition leaders fetch from the source).

- **throughput**: ``--records`` records of ``--size`` bytes already on the source's topic
  (``--partitions`` partitions) when mirroring starts; MB/s and records/s from the first
  mirrored record on the target to the last. Beside them, in the same round, the ceiling the
  issue names: a bare confluent-kafka producer writing the same records into the target
  broker.
- **lag**: mirroring running, a producer writes ``--rate`` records/s for ``--seconds`` to the
  source; a consumer of the target's copy takes each record's lag from its timestamp (the
  source's CreateTime, which both modes keep) to its arrival: p50 / p99.
- **promote** (mirror topics): after the lag run, the seconds from ``josefk mirror promote``
  to the first write the target accepts on the topic.

Rounds alternate the ways; medians are reported.
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


def josefk(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "josefk", *args], check=True, cwd=REPO_ROOT,
                   stdout=subprocess.DEVNULL, timeout=120)


class TopicMirror:
    """A mirror topic of ``topic`` on the target, over the link ``bench``."""
    LINK = "bench"

    def __init__(self, root: Path, name: str, source: str, target: str, topic: str):
        self.target, self.topic, self.copy = target, topic, topic
        josefk("mirror", "create-topic", "--bootstrap-server", target, "--link", self.LINK,
               "--topic", topic)
        self.proc = None

    @classmethod
    def link(cls, source: str, target: str) -> None:
        josefk("mirror", "create-link", "--bootstrap-server", target, "--link", cls.LINK,
               "--config", f"bootstrap.servers={source}")

    def promote(self) -> float:
        """Seconds from ``josefk mirror promote`` to the first write the target accepts."""
        start = time.monotonic()
        josefk("mirror", "promote", "--bootstrap-server", self.target, "--topic", self.topic)
        p = Producer({"bootstrap.servers": self.target, "acks": "all", "retries": 0})
        while True:
            failed = []
            p.produce(self.topic, b"after promote", partition=0,
                      on_delivery=lambda err, _m: failed.append(err) if err else None)
            if p.flush(10) == 0 and not failed:
                return time.monotonic() - start
            if time.monotonic() - start > 60:
                raise RuntimeError(f"no write accepted after promote: {failed}")

    def stop(self) -> None:
        pass


class Mirror:
    """``josefk mirror`` for the flow source->target, mirroring ``topic``."""

    def __init__(self, root: Path, name: str, source: str, target: str, topic: str):
        self.copy = f"source.{topic}"
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


MODES = {"mm2": Mirror, "topic": TopicMirror}


def throughput(root: Path, mode: str, source: str, target: str, n: int, size: int,
               partitions: int, r: int) -> dict:
    topic = f"bulk{mode}{r}"
    create_topic(source, topic, partitions)
    fill(Producer({"bootstrap.servers": source, **FAST_PRODUCER}), topic, n, b"x" * size,
         partitions)
    mirror = MODES[mode](root, topic, source, target, topic)
    try:
        deadline = time.monotonic() + 600
        first = None
        while (done := end_offsets(target, mirror.copy, partitions)) < n:
            if first is None and done:
                first = (time.monotonic(), done)
            if time.monotonic() > deadline or (mirror.proc and mirror.proc.poll() is not None):
                raise RuntimeError(f"{done} of {n} mirrored: see {root}")
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


def lag(root: Path, mode: str, source: str, target: str, rate: int, seconds: float, size: int,
        partitions: int, r: int) -> dict:
    topic = f"lag{mode}{r}"
    create_topic(source, topic, partitions)
    mirror = MODES[mode](root, topic, source, target, topic)
    c = Consumer({"bootstrap.servers": target, "group.id": f"bench-{topic}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 10, "topic.metadata.refresh.interval.ms": 500})
    promote = None
    try:
        c.subscribe([mirror.copy])
        p = Producer({"bootstrap.servers": source, "linger.ms": 1})
        # warmed up: a record written to each partition now reaches the target within 1 s
        warm, fresh = time.monotonic() + 180, set()
        while len(fresh) < partitions:
            for partition in range(partitions):
                send(p, topic, b"warm", partition)
            p.flush(10)
            sent_ms = time.time() * 1000
            deadline = time.monotonic() + 1.0
            fresh = set()
            while len(fresh) < partitions and time.monotonic() < deadline:
                fresh |= {m.partition() for m in c.consume(100, 0.1)
                          if not m.error() and m.timestamp()[1] >= sent_ms - 5}
            if time.monotonic() > warm or (mirror.proc and mirror.proc.poll() is not None):
                raise RuntimeError(f"the mirror never warmed up: see {root}")
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
        if mode == "topic":
            promote = mirror.promote()
    finally:
        c.close()
        mirror.stop()
    lags.sort()
    result = {"p50 ms": lags[len(lags) // 2], "p99 ms": lags[int(len(lags) * 0.99)],
              "received": len(lags) / n}
    return result if promote is None else {**result, "promote s": promote}


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
    runs: dict[str, list[dict]] = {}
    try:
        for b in (source, target):
            b.workdir.mkdir(parents=True, exist_ok=True)
            b.start()
        TopicMirror.link(source.bootstrap, target.bootstrap)
        for r in range(args.rounds):
            ways = []
            if "throughput" in only:
                ways += [(f"{mode} throughput", lambda mode=mode: throughput(
                    root, mode, source.bootstrap, target.bootstrap, args.records, args.size,
                    args.partitions, r)) for mode in MODES]
                ways.append(("ceiling", lambda: ceiling(target.bootstrap, args.records,
                                                        args.size, args.partitions, r)))
            if "lag" in only:
                ways += [(f"{mode} lag at {args.rate}/s", lambda mode=mode: lag(
                    root, mode, source.bootstrap, target.bootstrap, args.rate, args.seconds,
                    args.size, args.partitions, r)) for mode in MODES]
            for kind, run in ways:
                result = run()
                runs.setdefault(kind, []).append(result)
                print(f"round {r + 1} {kind}: " + "  ".join(
                    f"{k} {v:,.2f}" for k, v in result.items()), flush=True)
        for kind, rs in runs.items():
            print(f"median {kind}: " + "  ".join(
                f"{k} {statistics.median(x[k] for x in rs):,.2f}" for k in rs[0]))
        if "ceiling" in runs:
            ceiling_rate = statistics.median(x["records/s"] for x in runs["ceiling"])
            for mode in MODES:
                rate = statistics.median(x["records/s"] for x in runs[f"{mode} throughput"])
                print(f"{mode} / the target's produce ceiling: {rate / ceiling_rate:.2f}")
    finally:
        source.stop()
        target.stop()
        cleanup_dir(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
