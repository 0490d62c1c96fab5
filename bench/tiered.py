"""``python -m bench.tiered``: tiered storage on 2 cores (issue 31's benchmark), against the
same broker without it, in one run. Two josefk brokers as subprocesses, one with
``remote.log.storage.system.enable`` on a local SeaweedFS (testkit/seaweedfs.py), one without;
per round, each gets a fresh topic (the tiered one with ``remote.storage.enable``, a small
``local.retention.bytes``) and:

- **produce**: ``--mb`` MB of 1 KiB records with confluent-kafka (acks=1), MB/s;
- **upload**: on the tiered broker, the bytes copied to the bucket over the time from the first
  copy to the last (its ``remotecopybytespersec`` meter, scraped), MB/s;
- **cold read**: a fresh consumer from offset 0 to the end: MB/s and time to the first record;
  from the bucket on the tiered broker (nothing cached: the topic is new), from the local disk
  on the other; and the object-store GETs per MB read.

Printed per round, then the medians and the ratios (tiered / local). Goals (issue 31): produce
with tiering at 0.95 or more of without, cold reads at 50 MB/s or more, at most one object-store
request per MB read.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import Josefk, cleanup_dir
from bench.loads import fill
from josefk.zk.local_server import free_port
from testkit.seaweedfs import seaweedfs

VALUE = b"x" * 1024
SEGMENT = 8 << 20


def produce(bootstrap: str, topic: str, mb: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})
    n = mb * 1024
    start = time.monotonic()
    fill(p, topic, n, VALUE, partitions=1)
    return mb / (time.monotonic() - start)


def cold_read(bootstrap: str, topic: str, mb: int) -> tuple[float, float]:
    """(MB/s, seconds to the first record) of reading the partition from offset 0."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-tiered",
                  "enable.auto.commit": False, "fetch.max.bytes": 50 << 20,
                  "max.partition.fetch.bytes": 10 << 20})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    want, got, first = mb * 1024, 0, None
    start = time.monotonic()
    deadline = start + 300
    while got < want and time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error():
                continue
            if first is None:
                first = time.monotonic() - start
            got += 1
    elapsed = time.monotonic() - start
    c.close()
    assert got >= want, f"read {got} of {want} records"
    return mb / elapsed, first


def scrape(port: int) -> dict:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def wait_tiered(port: int, topic: str, mb: int) -> tuple[float, float]:
    """Until what was produced is in the bucket but the active segment and the local copy
    lag is nothing: (upload MB/s, MB copied)."""
    labels = (("topic", topic),)
    name = "kafka_server_brokertopicmetrics_remotecopybytespersec_total"
    lag = "kafka_server_brokertopicmetrics_remotecopylagbytes"
    first = last = None
    copied = 0.0
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        m = scrape(port)
        now = m.get((name, labels), 0.0)
        if now > copied:
            last = time.monotonic()
            first = first or last
            copied = now
        if copied >= (mb << 20) - 2 * SEGMENT and m.get((lag, labels), 1) == 0:
            break
        time.sleep(0.1)
    span = (last - first) if first and last and last > first else float("nan")
    return copied / (1 << 20) / span, copied / (1 << 20)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=128, help="MB produced per round and broker")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-tiered-"))
    rows = []
    try:
        with seaweedfs(root / "s3") as s3:
            metrics_port = free_port()
            tiered = Josefk(root / "tiered", {
                "remote.log.storage.system.enable": "true",
                "remote.log.manager.task.interval.ms": 500,
                "log.retention.check.interval.ms": 500,
                "remote.log.metadata.topic.replication.factor": 1,
                "offsets.topic.replication.factor": 1,
                "remote.log.storage.josefk.store": "s3",
                "remote.log.storage.josefk.s3.endpoint": s3.endpoint,
                "remote.log.storage.josefk.s3.bucket": "bench",
                "remote.log.storage.josefk.s3.access.key": s3.access_key,
                "remote.log.storage.josefk.s3.secret.key": s3.secret_key,
                "josefk.metrics.port": metrics_port}, name="josefk-tiered")
            local = Josefk(root / "local", {"offsets.topic.replication.factor": 1},
                           name="josefk-local")
            (root / "tiered").mkdir()
            (root / "local").mkdir()
            for b in (tiered, local):
                b.start()
            try:
                for r in range(args.rounds):
                    row = {}
                    for b, config in ((tiered, {"remote.storage.enable": "true",
                                                "local.retention.bytes": str(2 * SEGMENT)}),
                                      (local, {})):
                        topic = f"bench-{b.name}-{r}"
                        admin = AdminClient({"bootstrap.servers": b.bootstrap})
                        admin.create_topics([NewTopic(topic, 1, 1, config={
                            "segment.bytes": str(SEGMENT), "retention.ms": "-1",
                            **config})])[topic].result(30)
                        row[b.name, "produce"] = produce(b.bootstrap, topic, args.mb)
                        if b is tiered:
                            row["upload"], row["copied"] = wait_tiered(metrics_port, topic,
                                                                       args.mb)
                            gets = scrape(metrics_port).get(
                                ("josefk_remote_storage_get_requests_total", ()), 0)
                        row[b.name, "read"], row[b.name, "ttfb"] = cold_read(
                            b.bootstrap, topic, args.mb)
                        if b is tiered:
                            gets = scrape(metrics_port).get(
                                ("josefk_remote_storage_get_requests_total", ()), 0) - gets
                            row["gets/MB"] = gets / row["copied"]
                    rows.append(row)
                    print(f"round {r + 1}: produce {row['josefk-tiered', 'produce']:.1f} / "
                          f"{row['josefk-local', 'produce']:.1f} MB/s (tiered / local), upload "
                          f"{row['upload']:.1f} MB/s of {row['copied']:.0f} MB, cold read "
                          f"{row['josefk-tiered', 'read']:.1f} / {row['josefk-local', 'read']:.1f}"
                          f" MB/s, first record after {row['josefk-tiered', 'ttfb'] * 1000:.0f} /"
                          f" {row['josefk-local', 'ttfb'] * 1000:.0f} ms, "
                          f"{row['gets/MB']:.2f} GETs per MB", flush=True)
            finally:
                for b in (tiered, local):
                    b.stop()
    finally:
        cleanup_dir(root)

    def med(key):
        return statistics.median(row[key] for row in rows)

    print()
    print("| figure (median) | tiered | local | tiered / local |")
    print("|---|---|---|---|")
    for label, key in (("produce MB/s", "produce"), ("cold read MB/s", "read"),
                       ("time to first record, ms", "ttfb")):
        t, loc = med(("josefk-tiered", key)), med(("josefk-local", key))
        scale = 1000 if key == "ttfb" else 1
        print(f"| {label} | {t * scale:.1f} | {loc * scale:.1f} | {t / loc:.2f} |")
    print(f"| upload MB/s | {med('upload'):.1f} | | |")
    print(f"| object-store GETs per MB read | {med('gets/MB'):.2f} | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
