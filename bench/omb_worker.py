"""One producer or consumer of bench.omb, in its own process:
``python -m bench.omb_worker '<json spec>'``.

The protocol with bench.omb, one line at a time: the worker connects, prints ``OMB_READY``,
reads ``GO <start_ns> <measure_ns> <end_ns>`` (CLOCK_MONOTONIC, shared by the processes of one
host) on stdin, prints ``OMB_INTERVAL {json}`` at the end of every ``interval_s`` of the
measured window, and ``OMB_RESULT {json}`` at the end, before closing its client.

A producer sends at a fixed rate: message ``i`` is due at ``start + i / rate`` (RateSchedule);
every message that is due is sent at once, then the producer waits (serving delivery reports)
until the next one is due, so a producer that falls behind sends late messages as soon as it
can rather than stretching the schedule. The first 8 bytes of a value are the message's
scheduled send time; publish latency (to the delivery report) and end-to-end latency (to the
consumer's poll) are measured from it, so a stall of the producer counts against every message
it delays (no coordinated omission). Publish delay is the scheduled time to the ``produce()``
call. Messages scheduled before ``measure_ns`` (the warm-up) are sent and read but not
recorded.
"""
from __future__ import annotations

import json
import os
import struct
import sys
import time
import traceback
import uuid
from fractions import Fraction

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from bench.histogram import Histogram

STAMP = struct.Struct(">q")
mono_ns = time.monotonic_ns


class RateSchedule:
    """Send times of a fixed rate: message ``i`` at ``start_ns + i / rate`` seconds, in exact
    integer arithmetic (no drift over any number of messages)."""

    def __init__(self, start_ns: int, rate: float):
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.start_ns = start_ns
        r = Fraction(rate).limit_denominator(1_000_000)
        self._num, self._den = r.numerator, r.denominator  # messages per (den) seconds

    def at(self, i: int) -> int:
        """The scheduled send time of message ``i`` (ns)."""
        return self.start_ns + i * self._den * 1_000_000_000 // self._num

    def due(self, now_ns: int) -> int:
        """How many messages are due by ``now_ns``: those with ``at(i) <= now_ns``."""
        if now_ns < self.start_ns:
            return 0
        # i * den * 1e9 // num <= elapsed  <=>  i < (elapsed + 1) * num / (den * 1e9)
        elapsed = now_ns - self.start_ns
        return ((elapsed + 1) * self._num - 1) // (self._den * 1_000_000_000) + 1


def emit(kind: str, payload) -> None:
    sys.stdout.write(f"{kind} {json.dumps(payload)}\n" if payload is not None else kind + "\n")
    sys.stdout.flush()


def wait_go() -> tuple[int, int, int]:
    line = sys.stdin.readline().split()
    if not line or line[0] != "GO":
        raise SystemExit("no GO from bench.omb")
    return int(line[1]), int(line[2]), int(line[3])


class Intervals:
    """Histograms per ``interval_ns`` of the measured window, by the time a sample is taken
    (as OMB's periodic stats), printed as each closes; and the whole window's."""

    def __init__(self, names: tuple[str, ...], measure_ns: int, end_ns: int, interval_ns: int):
        self.names = names
        self.measure_ns, self.end_ns, self.interval_ns = measure_ns, end_ns, interval_ns
        self.total = {n: Histogram() for n in names}
        self.counts = {"sent": 0, "acked": 0, "received": 0}
        self.index = 0
        self._open()

    def _open(self) -> None:
        self.current = {n: Histogram() for n in self.names}
        self.current_counts = {"sent": 0, "acked": 0, "received": 0}

    def tick(self, now_ns: int) -> None:
        """Print every interval that ended by ``now_ns`` (and lies inside the window)."""
        while True:
            closes = self.measure_ns + (self.index + 1) * self.interval_ns
            if now_ns < closes or closes > self.end_ns:
                return
            emit("OMB_INTERVAL", {"index": self.index, "counts": self.current_counts,
                                  "hist": {n: h.to_json() for n, h in self.current.items()}})
            self.index += 1
            self._open()

    def record(self, name: str, value_us: int) -> None:
        self.current[name].record(value_us)
        self.total[name].record(value_us)

    def count(self, what: str, scheduled_ns: int) -> None:
        """Count a message scheduled inside the window."""
        if self.measure_ns <= scheduled_ns < self.end_ns:
            self.counts[what] += 1
            self.current_counts[what] += 1


def run_producer(spec: dict) -> dict:
    topics, size = spec["topics"], int(spec["size"])
    conf = {"bootstrap.servers": spec["bootstrap"], **spec["producer_config"]}
    p = Producer(conf)
    for t in topics:
        p.list_topics(t, timeout=20)  # connected, metadata known: the clock may start
    emit("OMB_READY", None)
    start_ns, measure_ns, end_ns = wait_go()
    stats = Intervals(("publish", "publish_delay"), measure_ns, end_ns,
                      int(spec["interval_s"] * 1e9))
    errors = {"n": 0, "first": None}

    def on_delivery(err, msg):
        now = mono_ns()
        if err is not None:
            errors["n"] += 1
            errors["first"] = errors["first"] or str(err)
            return
        t = STAMP.unpack_from(msg.value())[0]
        if t >= measure_ns:
            stats.record("publish", (now - t) // 1000)
            stats.count("acked", t)

    sched = RateSchedule(start_ns, spec["rate"])
    last = sched.due(end_ns - 1)  # messages scheduled inside [start, end)
    stop_ns = end_ns + int(spec["behind_grace_s"] * 1e9)
    pad = b"\0" * max(0, size - STAMP.size)
    n_topics = len(topics)
    i = 0
    full = 0
    while i < last:
        now = mono_ns()
        if now >= stop_ns:
            break
        due = min(sched.due(now), last, i + 1000)  # behind: serve reports between bursts
        while i < due:
            t = sched.at(i)
            try:
                p.produce(topics[i % n_topics], STAMP.pack(t) + pad, on_delivery=on_delivery)
            except BufferError:
                full += 1
                p.poll(0.001)
                break
            if t >= measure_ns:
                stats.record("publish_delay", (mono_ns() - t) // 1000)
                stats.count("sent", t)
            i += 1
        p.poll(0)
        stats.tick(mono_ns())
        if i < last:
            wait = (sched.at(i) - mono_ns()) / 1e9
            if wait >= 0.001:  # wait in poll: a delivery report is taken when it comes
                p.poll(wait)
            elif wait > 0:  # poll's timeout is in whole milliseconds
                time.sleep(wait)
    sent_end = mono_ns()
    unsent = last - i
    flush_deadline = sent_end + int(spec["flush_s"] * 1e9)
    while (len(p) or mono_ns() < end_ns) and mono_ns() < flush_deadline:  # to the window's end
        p.poll(0.05)
        stats.tick(mono_ns())
    stats.tick(mono_ns())
    window_s = (end_ns - measure_ns) / 1e9
    return {"role": "producer", "scheduled": last, "sent": i, "unsent": unsent,
            "undelivered": len(p), "errors": errors["n"], "first_error": errors["first"],
            "queue_full": full, "window_s": window_s, "counts": stats.counts,
            "target_rate": spec["rate"], "late_s": max(0.0, (sent_end - end_ns) / 1e9),
            "hist": {n: h.to_json() for n, h in stats.total.items()}}


def run_consumer(spec: dict) -> dict:
    conf = {"bootstrap.servers": spec["bootstrap"], "group.id": "omb-" + uuid.uuid4().hex,
            "enable.auto.commit": False, "enable.partition.eof": False,
            **spec["consumer_config"]}
    c = Consumer(conf)
    c.list_topics(timeout=20)
    c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in spec["assignment"]])
    c.consume(1, timeout=0.2)
    emit("OMB_READY", None)
    _start_ns, measure_ns, end_ns = wait_go()
    stats = Intervals(("e2e",), measure_ns, end_ns, int(spec["interval_s"] * 1e9))
    idle_ns = int(spec["idle_stop_s"] * 1e9)
    stop_ns = end_ns + int(spec["drain_s"] * 1e9)
    last_msg = mono_ns()
    errors = 0
    received = 0
    while True:
        now = mono_ns()
        if now >= stop_ns or (now >= end_ns and now - last_msg >= idle_ns):
            break
        # the first record as soon as it comes, then whatever else is already there
        first = c.poll(0.05)
        msgs = [first, *c.consume(1000, timeout=0)] if first is not None else ()
        now = mono_ns()
        for m in msgs:
            if m.error() is not None:
                errors += 1
                continue
            received += 1
            t = STAMP.unpack_from(m.value())[0]
            if t >= measure_ns:
                stats.record("e2e", (now - t) // 1000)
                stats.count("received", t)
        if msgs:
            last_msg = now
        stats.tick(now)
    result = {"role": "consumer", "received": received, "errors": errors,
              "counts": stats.counts, "hist": {"e2e": stats.total["e2e"].to_json()}}
    emit("OMB_RESULT", result)
    c.close()
    return None


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        result = (run_producer if spec["role"] == "producer" else run_consumer)(spec)
        if result is not None:
            emit("OMB_RESULT", result)
    except Exception as e:  # the orchestrator reports the failure; the run goes on
        sys.stderr.write(traceback.format_exc())
        emit("OMB_RESULT", {"role": spec.get("role"), "error": f"{type(e).__name__}: {e}"})
    sys.stdout.flush()
    # librdkafka's threads must not hold the process at exit
    os._exit(0)


if __name__ == "__main__":
    main()
