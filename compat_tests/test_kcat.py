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


def test_list_metadata(broker, new_topic):
    topic = new_topic(partitions=3)
    out = kcat("-b", broker.bootstrap, "-L")
    assert re.search(rf'^\s*broker 1 at 127\.0\.0\.1:{broker.port}\b', out, re.M), out
    assert re.search(rf'^\s*topic "{re.escape(topic)}" with 3 partitions:', out, re.M), out
    for p in range(3):
        assert re.search(rf'^\s*partition {p}, leader 1, replicas: 1, isrs: 1\s*$', out, re.M), out

    md = json.loads(kcat("-b", broker.bootstrap, "-L", "-J", "-t", topic))
    assert [b["id"] for b in md["brokers"]] == [1]
    assert md["brokers"][0]["name"] == f"127.0.0.1:{broker.port}"
    (t,) = [t for t in md["topics"] if t["topic"] == topic]
    assert sorted(p["partition"] for p in t["partitions"]) == [0, 1, 2]
    for p in t["partitions"]:
        assert p["leader"] == 1
        assert [r["id"] for r in p["replicas"]] == [1]
        assert [r["id"] for r in p["isrs"]] == [1]


def test_produce_lines_and_consume(broker, new_topic):
    topic = new_topic(partitions=1)
    lines = [f"line {i} {'x' * i}" for i in range(40)]
    kcat("-P", "-b", broker.bootstrap, "-t", topic, stdin="\n".join(lines) + "\n")
    out = kcat("-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-f", "%k:%s\n")
    assert out == "".join(f":{line}\n" for line in lines)

    out = kcat("-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-f", "%p|%o|%s\n")
    assert out == "".join(f"0|{i}|{line}\n" for i, line in enumerate(lines))

    # From a given offset.
    out = kcat("-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-o", "35", "-e",
               "-f", "%o:%s\n")
    assert out == "".join(f"{i}:{lines[i]}\n" for i in range(35, 40))


def test_produce_keyed_with_headers_and_consume(broker, new_topic):
    topic = new_topic(partitions=1)
    pairs = [(f"k{i % 3}", f"value-{i}") for i in range(30)]
    kcat("-P", "-b", broker.bootstrap, "-t", topic, "-K:", "-H", "origin=kcat", "-H", "n=1",
         stdin="".join(f"{k}:{v}\n" for k, v in pairs))
    out = kcat("-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-f", "%k:%s\n")
    assert out == "".join(f"{k}:{v}\n" for k, v in pairs)
    out = kcat("-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-f", "%o %h\n")
    assert out == "".join(f"{i} origin=kcat,n=1\n" for i in range(30))


def test_produce_compressed_to_partitions(broker, new_topic):
    topic = new_topic(partitions=3)
    for p in range(3):
        kcat("-P", "-b", broker.bootstrap, "-t", topic, "-p", str(p), "-z", "lz4",
             stdin="".join(f"p{p}-{i}\n" for i in range(20)))
    for p in range(3):
        out = kcat("-C", "-b", broker.bootstrap, "-t", topic, "-p", str(p), "-o", "beginning",
                   "-e", "-f", "%p %o %s\n")
        assert out == "".join(f"{p} {i} p{p}-{i}\n" for i in range(20))
