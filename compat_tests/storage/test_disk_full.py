"""A full disk is answered, not timed out (issue 11, defect 5).

The broker runs with a file-size limit (RLIMIT_FSIZE, which makes writes past it fail with
EFBIG exactly as a full disk fails them with ENOSPC; Python ignores SIGXFSZ). Under acks=all
load the partition's log hits the limit: Produce is answered KAFKA_STORAGE_ERROR, reads and
other requests keep being served, nothing acknowledged is lost, and once the limit is lifted
(space returns) the same producer's retries go through, without a restart.
"""
from __future__ import annotations

import resource
import time

import pytest
from confluent_kafka import TopicPartition

from compat_tests import rawkafka as rk
from compat_tests.helpers import (DeliveryLog, consumer, create_topic, flush_all, producer,
                                  read_partition, unique_topic)

pytestmark = pytest.mark.timeout(120)

KAFKA_STORAGE_ERROR = 56
FILE_LIMIT = 600_000  # bytes per file: the segment fills up after ~500 1 KiB records
VALUES = 1500
# A raw Produce that needs more room than a nearly full file has (filtered out of the reads).
PROBE = rk.record_batch([(None, b"probe" + b"p" * 200_000)], 0)


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, resource.RLIM_INFINITY))


def test_full_disk_is_kafka_storage_error_and_writing_resumes(broker_factory):
    b = broker_factory(preexec_fn=_limit_file_size)
    topic = create_topic(b.bootstrap, unique_topic("full"), 1)
    # idempotent, so that retries after the error keep the order (batches of up to 64 KiB)
    p = producer(b.bootstrap, acks="all", enable_idempotence=True, message_timeout_ms=90_000,
                 retry_backoff_ms=200, linger_ms=5, batch_size=65536)
    log = DeliveryLog()
    for i in range(VALUES):
        p.produce(topic, value=b"%06d" % i + b"x" * 1018, partition=0, on_delivery=log)
    deadline = time.monotonic() + 20
    while not log.ok and time.monotonic() < deadline:  # the producer's records come first
        p.poll(0.1)
    while time.monotonic() < deadline and len(log.ok) < VALUES:
        p.poll(0.2)
        with rk.RawConnection(b.bootstrap) as conn:
            r = rk.produce_v9(conn, topic, 0, PROBE)[(topic, 0)]
        if r["error_code"] == KAFKA_STORAGE_ERROR:
            break
    assert r["error_code"] == KAFKA_STORAGE_ERROR, r
    assert "Disk error" in r["error_message"]
    # The probe needs more room than the producer's batches: wait until they stop fitting too
    # (no acknowledgement through several of the producer's retries).
    settled = time.monotonic() + 30
    while time.monotonic() < settled:
        before = len(log.ok)
        p.poll(1.0)
        if len(log.ok) == before:
            break
    assert len(log.ok) < VALUES and not log.errors
    acked = len(log.ok)
    # reads keep being served while writes fail
    c = consumer(b.bootstrap)
    try:
        end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()
    got = _values(b, topic, end)  # every acknowledged record, maybe a few not yet reported
    assert 0 < len(got) < VALUES and len(got) >= acked
    assert got == [b"%06d" % i for i in range(len(got))]
    # space returns: the producer's retries go through without a restart
    resource.prlimit(b.proc.pid, resource.RLIMIT_FSIZE,
                     (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    flush_all(p, 60)
    assert not log.errors and len(log.ok) == VALUES
    c = consumer(b.bootstrap)
    try:
        end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()
    # each once, in order, none lost
    assert _values(b, topic, end) == [b"%06d" % i for i in range(VALUES)]
    assert b.is_running()


def _values(b, topic, end):
    return [m.value()[:6] for m in read_partition(b.bootstrap, topic, 0, end)
            if not m.value().startswith(b"probe")]
