"""kcat (the librdkafka command-line client) against josefk."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed"),
]

KCAT_TIMEOUT = 30


def kcat(*args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        ["kcat", *args], input=stdin, capture_output=True, text=True, timeout=KCAT_TIMEOUT,
    )
    assert proc.returncode == 0, (
        f"kcat {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return proc.stdout


def test_list_metadata(target, new_topic):
    topic = new_topic(partitions=3)
    rf = target.created[topic]
    want = target.partitions(topic)  # what the brokers answer other clients
    for p, pm in want.items():
        assert len(pm.replicas) == rf and pm.leader in pm.replicas, (p, pm)
        assert sorted(pm.isrs) == sorted(pm.replicas), (p, pm)

    def ids(nodes):
        return ",".join(map(str, nodes))

    out = kcat("-b", target.bootstrap, "-L")
    for node, b in target.brokers.items():
        assert re.search(rf'^\s*broker {node} at 127\.0\.0\.1:{b.port}\b', out, re.M), out
    assert re.search(rf'^\s*topic "{re.escape(topic)}" with 3 partitions:', out, re.M), out
    for p, pm in want.items():
        assert re.search(rf'^\s*partition {p}, leader {pm.leader}, replicas: {ids(pm.replicas)}, '
                         rf'isrs: {ids(pm.isrs)}\s*$', out, re.M), out

    md = json.loads(kcat("-b", target.bootstrap, "-L", "-J", "-t", topic))
    assert sorted((b["id"], b["name"]) for b in md["brokers"]) == \
        sorted((node, b.bootstrap) for node, b in target.brokers.items())
    (t,) = [t for t in md["topics"] if t["topic"] == topic]
    assert {p["partition"]: (p["leader"], [r["id"] for r in p["replicas"]],
                             [r["id"] for r in p["isrs"]]) for p in t["partitions"]} == \
        {p: (pm.leader, list(pm.replicas), list(pm.isrs)) for p, pm in want.items()}


def test_produce_lines_and_consume(target, new_topic):
    topic = new_topic(partitions=1)
    lines = [f"line {i} {'x' * i}" for i in range(40)]
    kcat("-P", "-b", target.bootstrap, "-t", topic, stdin="\n".join(lines) + "\n")
    out = kcat("-C", "-b", target.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-f", "%k:%s\n")
    assert out == "".join(f":{line}\n" for line in lines)

    out = kcat("-C", "-b", target.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-f", "%p|%o|%s\n")
    assert out == "".join(f"0|{i}|{line}\n" for i, line in enumerate(lines))

    # From a given offset.
    out = kcat("-C", "-b", target.bootstrap, "-t", topic, "-p", "0", "-o", "35", "-e",
               "-f", "%o:%s\n")
    assert out == "".join(f"{i}:{lines[i]}\n" for i in range(35, 40))


def test_produce_keyed_with_headers_and_consume(target, new_topic):
    topic = new_topic(partitions=1)
    pairs = [(f"k{i % 3}", f"value-{i}") for i in range(30)]
    kcat("-P", "-b", target.bootstrap, "-t", topic, "-K:", "-H", "origin=kcat", "-H", "n=1",
         stdin="".join(f"{k}:{v}\n" for k, v in pairs))
    out = kcat("-C", "-b", target.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-f", "%k:%s\n")
    assert out == "".join(f"{k}:{v}\n" for k, v in pairs)
    out = kcat("-C", "-b", target.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-f", "%o %h\n")
    assert out == "".join(f"{i} origin=kcat,n=1\n" for i in range(30))


def test_produce_compressed_to_partitions(target, new_topic):
    topic = new_topic(partitions=3)
    for p in range(3):
        kcat("-P", "-b", target.bootstrap, "-t", topic, "-p", str(p), "-z", "lz4",
             stdin="".join(f"p{p}-{i}\n" for i in range(20)))
    for p in range(3):
        out = kcat("-C", "-b", target.bootstrap, "-t", topic, "-p", str(p), "-o", "beginning",
                   "-e", "-f", "%p %o %s\n")
        assert out == "".join(f"{p} {i} p{p}-{i}\n" for i in range(20))
