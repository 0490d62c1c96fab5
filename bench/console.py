"""``python -m bench.console``: how fast the web console's topic page answers for a topic with
many partitions (the issue asks under 200 ms at 1,000 partitions).

Starts a josefk broker and `josefk console` as subprocesses on free 127.0.0.1 ports, creates a
topic with ``--partitions`` partitions and one record in each, then times ``--requests`` GETs of
each page (after two warm-up requests) from first byte sent to last byte read. Prints the median,
p90 and max per page. Bounded: fixed request counts, 30 s timeouts.

With ``--with-registry`` a `josefk registry` runs too (the console shows it), and the Schema
Registry's pages and the message browser on 50 Avro records (each decoded with its schema) are
timed as well.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.brokers import REPO_ROOT, Josefk, cleanup_dir, free_port, port_accepts


def timed_get(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        size = len(r.read())
    return (time.perf_counter() - t0) * 1000, size


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.console", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partitions", type=int, default=1000)
    p.add_argument("--requests", type=int, default=20)
    p.add_argument("--with-registry", action="store_true",
                   help="also run josefk registry and time the schema pages and decoding")
    args = p.parse_args(argv)
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    workdir = Path(tempfile.mkdtemp(prefix="josefk-bench-console-"))
    broker = Josefk(workdir, {"log.segment.bytes": "1048576"})
    console = registry = None
    try:
        broker.start()
        pages = []
        console_args = []
        if args.with_registry:
            registry = _start_registry(broker.bootstrap, workdir)
            console_args = ["--schema-registry", registry.url]
            pages = _schema_pages(broker.bootstrap, registry.url)
        topic = "console-bench"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(60)
        prod = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
        for i in range(args.partitions):
            prod.produce(topic, key=str(i).encode(), value=b'{"n": %d}' % i, partition=i)
        assert prod.flush(60) == 0
        port = free_port()
        console = subprocess.Popen([sys.executable, "-m", "josefk", "console",
                                    "--bootstrap-server", broker.bootstrap, "--port", str(port),
                                    *console_args],
                                   cwd=str(REPO_ROOT), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not port_accepts(port):
            if time.monotonic() > deadline or console.poll() is not None:
                raise SystemExit("the console did not start")
            time.sleep(0.1)
        base = f"http://127.0.0.1:{port}"
        print(f"topic {topic}: {args.partitions} partitions, 1 record each; "
              f"{args.requests} timed requests per page after 2 warm-ups")
        print(f"{'page':<50} {'median ms':>10} {'p90 ms':>8} {'max ms':>8} {'bytes':>9}")
        for path in (f"/topics/{topic}", "/topics", "/",
                     f"/topics/{topic}/messages?partition=0", *pages):
            for _ in range(2):
                timed_get(base + path)
            runs = [timed_get(base + path) for _ in range(args.requests)]
            ms = sorted(r[0] for r in runs)
            print(f"{path:<50} {statistics.median(ms):>10.1f} "
                  f"{ms[int(0.9 * (len(ms) - 1))]:>8.1f} {ms[-1]:>8.1f} {runs[-1][1]:>9}")
    finally:
        if console is not None:
            console.terminate()
            console.wait(10)
        if registry is not None:
            registry.stop()
        broker.stop()
        cleanup_dir(workdir)
    return 0


def _start_registry(bootstrap: str, workdir: Path):
    from compat_tests.http_services import ServiceProcess, wait_primary

    registry = ServiceProcess("registry", {"kafkastore.bootstrap.servers": bootstrap,
                                           "kafkastore.topic.replication.factor": 1},
                              workdir / "registry.log").start()
    wait_primary(registry.url)
    return registry


def _schema_pages(bootstrap: str, registry_url: str) -> list[str]:
    """50 Avro records on a topic of their own (confluent-kafka's serializer); the pages that
    show them and their schema."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = "console-bench-avro"
    schema = {"type": "record", "name": "Reading", "fields": [
        {"name": "sensor", "type": "string"}, {"name": "value", "type": "double"},
        {"name": "tags", "type": {"type": "array", "items": "string"}}]}
    serialize = AvroSerializer(SchemaRegistryClient({"url": registry_url}), json.dumps(schema))
    ctx = SerializationContext(topic, MessageField.VALUE)
    prod = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(50):
        prod.produce(topic, value=serialize({"sensor": f"s-{i}", "value": i / 3,
                                             "tags": ["a", "b"]}, ctx), partition=0)
    assert prod.flush(60) == 0
    return ["/schemas", f"/schemas/{topic}-value/versions/1",
            f"/topics/{topic}/messages?partition=0"]


if __name__ == "__main__":
    sys.exit(main())
