"""``python -m bench.security``: the cost of TLS and SASL on one josefk broker.

One broker with four listeners (PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL, SCRAM-SHA-256),
certificates made with trustme. For every round, every protocol in turn (A B C A B C ...):

* produce: N 1 KiB values round-robin over 4 partitions of a fresh topic, acks=1, linger.ms=5,
  batch.size=1 MB, from the first produce() to the final flush(); MB/s of values;
* consume: one consumer assign()s the 4 partitions from the beginning
  (fetch.queue.backoff.ms=10) and reads the N values; MB/s;
* connect: new connections per second, each TLS (where the protocol has it) + ApiVersions +
  SaslHandshake + SCRAM-SHA-256 exchange (where it has SASL), with josefk's own blocking client
  (broker/client.py); the client's PBKDF2 (4096 iterations) is part of the figure.

It prints medians per protocol, the ratio to PLAINTEXT, and the broker's CPU seconds per
measurement (user+system, /proc). Every loop is bounded in count and time."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import Josefk, cleanup_dir, free_port
from bench.loads import send
from josefk.tools.client import Client

PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
USER, PASSWORD = "bench", "bench-secret"
PARTITIONS = 4
VALUE = b"x" * 1024


class SecureJosefk(Josefk):
    """josefk with one listener per security protocol (PLAINTEXT first, the one probed)."""

    def __init__(self, workdir: Path, pki: dict):
        super().__init__(workdir, {
            "ssl.keystore.location": pki["server"], "ssl.truststore.location": pki["ca"],
            "sasl.enabled.mechanisms": "SCRAM-SHA-256", "num.partitions": PARTITIONS})
        self.ports = {}

    def command(self) -> list[str]:
        self.ports = {"PLAINTEXT": self.port, **{p: free_port() for p in PROTOCOLS[1:]}}
        listeners = ",".join(f"{p}://127.0.0.1:{port}" for p, port in self.ports.items())
        cmd = super().command()
        cmd[cmd.index("--listeners") + 1] = listeners
        return cmd


def make_pki(workdir: Path) -> dict:
    import trustme

    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    paths = {"ca": workdir / "ca.pem", "server": workdir / "server.pem"}
    paths["ca"].write_bytes(ca.cert_pem.bytes())
    paths["server"].write_bytes(server.private_key_and_cert_chain_pem.bytes())
    return {k: str(v) for k, v in paths.items()}


def client_config(broker: SecureJosefk, protocol: str, pki: dict) -> dict:
    conf = {"bootstrap.servers": f"127.0.0.1:{broker.ports[protocol]}",
            "security.protocol": protocol}
    if "SSL" in protocol:
        conf["ssl.ca.location"] = pki["ca"]
    if protocol.startswith("SASL"):
        conf.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": USER,
                     "sasl.password": PASSWORD})
    return conf


def client_props(conf: dict) -> dict:
    """The same settings as Kafka client properties, for josefk's own client."""
    props = {"security.protocol": conf["security.protocol"]}
    if "ssl.ca.location" in conf:
        props["ssl.truststore.location"] = conf["ssl.ca.location"]
    if "sasl.mechanism" in conf:
        props.update({k: conf[k] for k in ("sasl.mechanism", "sasl.username", "sasl.password")})
    return props


def add_user(broker: SecureJosefk) -> None:
    import subprocess

    subprocess.run([sys.executable, "-m", "josefk", "users", "alter", "--bootstrap-server",
                    broker.bootstrap, "--user", USER, "--add-config",
                    f"SCRAM-SHA-256=[password={PASSWORD}]"], check=True, timeout=60,
                   capture_output=True)


def produce(conf: dict, topic: str, n: int, cap_s: float) -> tuple[int, float]:
    acked = [0]

    def delivered(err, _msg):
        if err is None:
            acked[0] += 1

    p = Producer({**conf, "acks": 1, "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 500_000})
    start = time.monotonic()
    sent = 0
    while sent < n and time.monotonic() - start < cap_s:
        send(p, topic, VALUE, sent % PARTITIONS, on_delivery=delivered)
        sent += 1
    p.flush(60)
    return acked[0], time.monotonic() - start


def consume(conf: dict, topic: str, n: int, cap_s: float) -> tuple[int, float]:
    c = Consumer({**conf, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got = 0
    start = time.monotonic()
    while got < n and time.monotonic() - start < cap_s:
        for m in c.consume(10_000, 0.5):
            if m.error() is None:
                got += 1
    elapsed = time.monotonic() - start
    c.close()
    return got, elapsed


def connect_rate(broker: SecureJosefk, conf: dict, count: int, cap_s: float) -> float:
    props = client_props(conf)
    done = 0
    start = time.monotonic()
    while done < count and time.monotonic() - start < cap_s:
        Client(conf["bootstrap.servers"], props=props).close()
        done += 1
    return done / (time.monotonic() - start)


def measure(broker, fn):
    cpu0 = broker.cpu_seconds()
    figure = fn()
    return figure, (broker.cpu_seconds() or 0) - (cpu0 or 0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--cap-seconds", type=float, default=20)
    ap.add_argument("--connections", type=int, default=200)
    args = ap.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="josefk-bench-security-"))
    pki = make_pki(workdir)
    broker = SecureJosefk(workdir, pki)
    broker.start()
    results: dict[tuple[str, str], list] = {}
    try:
        add_user(broker)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for r in range(args.rounds):
            for proto in PROTOCOLS:
                conf = client_config(broker, proto, pki)
                topic = f"bench-sec-{uuid.uuid4().hex[:8]}"
                admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(20)
                (n, t), cpu = measure(broker, lambda: produce(
                    conf, topic, args.messages, args.cap_seconds))
                results.setdefault(("produce MB/s", proto), []).append(
                    (n * len(VALUE) / t / 1e6, cpu))
                (got, t), cpu = measure(broker, lambda: consume(
                    conf, topic, n, args.cap_seconds))
                results.setdefault(("consume MB/s", proto), []).append(
                    (got * len(VALUE) / t / 1e6, cpu))
                rate, cpu = measure(broker, lambda: connect_rate(
                    broker, conf, args.connections, args.cap_seconds))
                results.setdefault(("connections/s", proto), []).append((rate, cpu))
                admin.delete_topics([topic])[topic].result(20)
                print(f"round {r + 1} {proto}: " + ", ".join(
                    f"{k[0]} {v[-1][0]:.1f}" for k, v in results.items() if k[1] == proto),
                    flush=True)
    finally:
        broker.stop()
        cleanup_dir(workdir)
    print(f"\nmedians of {args.rounds} rounds; {args.messages} x 1 KiB; ratio = "
          "protocol / PLAINTEXT; broker CPU s per measurement in brackets")
    print(f"| figure | {' | '.join(PROTOCOLS)} |")
    print("|---|" + "---|" * len(PROTOCOLS))
    for figure in ("produce MB/s", "consume MB/s", "connections/s"):
        base = statistics.median(v for v, _ in results[(figure, "PLAINTEXT")])
        cells = []
        for proto in PROTOCOLS:
            vals = results[(figure, proto)]
            med = statistics.median(v for v, _ in vals)
            cpu = statistics.median(c for _, c in vals)
            cells.append(f"{med:.1f} ({med / base:.2f}x) [{cpu:.1f}]")
        print(f"| {figure} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
