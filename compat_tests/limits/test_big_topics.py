"""A topic of 20,000 partitions on a broker limited to 1024 descriptors (issue 11, defect 2).

Segment files open lazily and idle ones close (`storage.open_files`), the partitions' logs are
created in a worker thread while the event loop keeps answering other clients, and a count
above ``max.broker.partitions`` is refused before anything is persisted.
"""
from __future__ import annotations

import os
import resource
import threading
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.helpers import (DeliveryLog, flush_all, producer, read_partition,
                                  wait_for_topic_gone)
from compat_tests.rawkafka import RawConnection, api_versions

pytestmark = pytest.mark.timeout(600)

PARTITIONS = 20_000
NOFILE = 1024
PROBED = (0, 7_777, PARTITIONS - 1)


def _low_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def _admin(bootstrap) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300_000})


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class _Pinger(threading.Thread):
    """ApiVersions round trips on their own connection, recording the slowest."""

    def __init__(self, bootstrap):
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.slowest = 0.0
        self.count = 0

    def run(self):
        with RawConnection(self.bootstrap, timeout=30) as conn:
            while not self.stop.is_set():
                t = time.monotonic()
                api_versions(conn)
                self.slowest = max(self.slowest, time.monotonic() - t)
                self.count += 1
                time.sleep(0.02)


def _produce_and_read(bootstrap, name, tag: bytes):
    p = producer(bootstrap, acks="all")
    log = DeliveryLog()
    for part in PROBED:
        p.produce(name, value=tag + b"-%d" % part, partition=part, on_delivery=log)
    flush_all(p)
    assert not log.errors
    for part in PROBED:
        values = [m.value() for m in read_partition(bootstrap, name, part, 2 if tag == b"b" else 1)]
        assert values[-1] == tag + b"-%d" % part


def test_twenty_thousand_partitions_with_1024_descriptors(broker_factory):
    b = broker_factory({"log.segment.bytes": "1048576"}, preexec_fn=_low_nofile,
                       start_timeout=240)
    admin = _admin(b.bootstrap)
    pinger = _Pinger(b.bootstrap)
    pinger.start()
    time.sleep(0.3)
    started = time.monotonic()
    fut = admin.create_topics([NewTopic("big", PARTITIONS, 1)], operation_timeout=300,
                              request_timeout=300)["big"]
    fut.result(300)
    took = time.monotonic() - started
    pinger.stop.set()
    pinger.join(30)
    print(f"created {PARTITIONS} partitions in {took:.1f}s; {pinger.count} ApiVersions "
          f"meanwhile, slowest {pinger.slowest * 1000:.0f} ms")
    # the loop kept serving while thousands of directories were made (what stays on it: the
    # topic's 20,000 partition objects and its stored metadata, and Metadata responses the
    # admin client asks for, a few hundred ms each on a quiet machine)
    assert pinger.count > 10 and pinger.slowest < 2.0, (pinger.count, pinger.slowest, took)
    assert len(admin.list_topics("big", timeout=60).topics["big"].partitions) == PARTITIONS
    assert _open_fds(b.proc.pid) < NOFILE - 100
    _produce_and_read(b.bootstrap, "big", b"a")

    started = time.monotonic()
    b.stop(timeout=240)
    stopped = time.monotonic()
    b.start()  # a restart loads every partition within the limit
    print(f"clean stop {stopped - started:.1f}s, start {time.monotonic() - stopped:.1f}s, "
          f"{_open_fds(b.proc.pid)} descriptors open")
    assert _open_fds(b.proc.pid) < NOFILE - 100
    _produce_and_read(b.bootstrap, "big", b"b")

    admin = _admin(b.bootstrap)
    admin.delete_topics(["big"], operation_timeout=120, request_timeout=120)["big"].result(120)
    wait_for_topic_gone(admin, "big", timeout=120)
    data = b.data_dir
    deadline = time.monotonic() + 120
    while any(n.startswith("big-") for n in os.listdir(data)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any(n.startswith("big-") for n in os.listdir(data))
    assert "Traceback" not in b.log_tail(200_000)
