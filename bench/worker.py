"""One measurement, run in its own process: ``python -m bench.worker '<json spec>'``.

The orchestrator (bench/run.py) starts one worker per (round, workload, broker) and kills its
process group if it overruns a hard timeout, so a misbehaving broker can never hang the run.  On
top of that every loop here is bounded both in count and in time.

A worker prints exactly one line ``BENCH_RESULT {json}`` on stdout, *before* any cleanup (closing
clients, deleting the topic), so a result survives a cleanup that hangs.  The JSON is
``{"ok": true, "figures": {...}, "info": {...}}`` or ``{"ok": false, "error": "..."}``.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
import uuid

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

from bench import group1000, raw_fetch

RESULT_PREFIX = "BENCH_RESULT "
now = time.monotonic


class Failed(Exception):
    pass


def emit(result: dict) -> None:
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()


def log(msg: str) -> None:
    sys.stderr.write(f"[worker {os.getpid()}] {msg}\n")
    sys.stderr.flush()


# -- topics -----------------------------------------------------------------------------------

def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 20.0,
                 replication_factor: int = 1) -> None:
    """CreateTopics, then wait (bounded) until metadata shows every partition with a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                            replication_factor=replication_factor)],
                                  operation_timeout=timeout, request_timeout=timeout)
    try:
        futures[topic].result(timeout=timeout)
    except KafkaException as e:
        raise Failed(f"CreateTopics({topic}, {partitions}): {e.args[0].str()}") from None
    except Exception as e:  # a future timeout
        raise Failed(f"CreateTopics({topic}, {partitions}): {e!r}") from None
    deadline = now() + timeout
    last = "no metadata"
    while now() < deadline:
        try:
            md = admin.list_topics(topic, timeout=5)
            t = md.topics.get(topic)
            if t is not None and t.error is None and len(t.partitions) == partitions and all(
                    p.leader >= 0 for p in t.partitions.values()):
                return
            last = f"topic={t and t.error} partitions={t and len(t.partitions)}"
        except KafkaException as e:
            last = str(e)
        time.sleep(0.1)
    raise Failed(f"topic {topic} not ready after CreateTopics: {last}")


def delete_topic(bootstrap: str, topic: str, timeout: float = 10.0) -> str | None:
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.delete_topics([topic], operation_timeout=timeout, request_timeout=timeout)
        futures[topic].result(timeout=timeout)
        return None
    except Exception as e:
        return str(e)


def watermarks(bootstrap: str, topic: str, partitions: int, timeout: float = 10.0):
    """[(low, high)] per partition via ListOffsets."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-wm-" + uuid.uuid4().hex,
                  "enable.auto.commit": False})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout, cached=False)
                for p in range(partitions)]
    finally:
        c.close()


def stored_count(bootstrap: str, topic: str, partitions: int) -> int:
    return sum(hi - lo for lo, hi in watermarks(bootstrap, topic, partitions))


def broker_cpu(spec: dict) -> float | None:
    """The broker's CPU seconds so far (``spec["broker_pid"]``, when the run gives it)."""
    pid = spec.get("broker_pid")
    return group1000.cpu_seconds(int(pid)) if pid else None


def cpu_between(start: float | None, end: float | None) -> float | None:
    """Broker CPU over a measurement's own window: without the topic's creation and deletion."""
    return round(end - start, 2) if start is not None and end is not None else None


# -- produce ----------------------------------------------------------------------------------

def producer_config(spec: dict) -> dict:
    conf = {
        "bootstrap.servers": spec["bootstrap"],
        "acks": spec["acks"],
        "linger.ms": spec["linger_ms"],
        "batch.size": spec["batch_size"],
        "compression.type": "none",
        "enable.idempotence": False,
        # the client holds at most this many unsent messages; the loop polls and retries on
        # BufferError (back-pressure) - never unbounded
        "queue.buffering.max.messages": 500000,
        "queue.buffering.max.kbytes": 1048576,
        # librdkafka reports only failed messages: no Python callback per delivered message,
        # which would make the client, not the broker, the bottleneck
        "delivery.report.only.error": True,
        "message.timeout.ms": int(spec.get("message_timeout_ms", 60000)),
    }
    conf.update(spec.get("producer_config") or {})
    return conf


def produce_messages(spec: dict, count: int, deadline: float, flush_timeout: float) -> dict:
    """Produce `count` messages of spec['size'] bytes round-robin over the partitions.

    Timed from the first produce() to the return of the final flush().  Stops producing at
    `deadline` (whatever has been sent is still flushed and counted)."""
    errors = {"n": 0, "first": None}
    client_errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors["n"] += 1
            if errors["first"] is None:
                errors["first"] = str(err)

    conf = producer_config(spec)
    conf["on_delivery"] = on_delivery
    conf["error_cb"] = lambda e: client_errors.append(str(e)) if len(client_errors) < 20 else None
    p = Producer(conf)
    topic = spec["topic"]
    parts = int(spec["partitions"])
    first = int(spec.get("first_partition", 0))
    value = b"x" * int(spec["size"])
    # metadata and connection before the clock starts
    p.list_topics(topic, timeout=10)
    produce, poll = p.produce, p.poll
    sent = 0
    capped = False
    t_start = now()
    while sent < count:
        try:
            produce(topic, value, None, first + sent % parts)
        except BufferError:
            poll(0.0005)
            if now() > deadline:
                capped = True
                break
            continue
        sent += 1
        if not sent & 4095 and now() > deadline:
            capped = sent < count
            break
    t_sent = now()
    pending = p.flush(max(1.0, flush_timeout))
    t_end = now()
    p.poll(0)
    delivered = sent - errors["n"] - pending
    return {"t_start": t_start, "t_sent": t_sent, "t_end": t_end, "sent": sent,
            "delivered": delivered, "errors": errors["n"], "first_error": errors["first"],
            "pending_after_flush": pending, "capped": capped,
            "client_errors": client_errors[:5]}


def produce_transactions(spec: dict, count: int, deadline: float) -> dict:
    """Transactions of spec['txn_records'] messages round-robin over the partitions, each
    committed before the next begins; timed from the first begin to the last commit. Stops
    beginning transactions at `deadline`."""
    conf = producer_config(spec)
    conf.update({"enable.idempotence": True, "acks": "all",
                 "transactional.id": "bench-txn-" + uuid.uuid4().hex})
    p = Producer(conf)
    p.init_transactions(30)
    topic = spec["topic"]
    parts = int(spec["partitions"])
    per_txn = int(spec["txn_records"])
    value = b"x" * int(spec["size"])
    p.list_topics(topic, timeout=10)
    produce, poll = p.produce, p.poll
    sent = txns = 0
    t_start = now()
    while sent < count and now() < deadline:
        p.begin_transaction()
        for i in range(per_txn):
            while True:
                try:
                    produce(topic, value, None, (sent + i) % parts)
                    break
                except BufferError:
                    poll(0.0005)
        p.commit_transaction(30)
        txns += 1
        sent += per_txn
    t_end = now()
    return {"t_start": t_start, "t_end": t_end, "txns": txns, "delivered": sent,
            "capped": sent < count}


def run_txn_produce(spec: dict) -> dict:
    bootstrap, topic = spec["bootstrap"], spec["topic"]
    create_topic(bootstrap, topic, int(spec["partitions"]))
    r = produce_transactions(spec, int(spec["count"]), now() + float(spec["cap_s"]))
    elapsed = r["t_end"] - r["t_start"]
    if r["txns"] <= 0:
        raise Failed("no transaction committed")
    info = {"txns": r["txns"], "delivered": r["delivered"], "elapsed_s": elapsed,
            "capped": r["capped"], "notes": []}
    if r["capped"]:
        info["notes"].append(f"capped at {spec['cap_s']:.0f}s: {r['txns']} transactions")
    figures = produce_figures(spec, r["delivered"], elapsed)
    figures["txn/s"] = r["txns"] / elapsed
    emit({"ok": True, "figures": figures, "info": info})
    if spec.get("delete_after"):
        delete_topic(bootstrap, topic)
    return None


def produce_figures(spec: dict, delivered: int, elapsed: float) -> dict:
    return {"msg/s": delivered / elapsed, "MB/s": delivered * int(spec["size"]) / elapsed / 1e6}


def run_produce(spec: dict) -> dict:
    bootstrap, topic = spec["bootstrap"], spec["topic"]
    create_topic(bootstrap, topic, int(spec["partitions"]))
    procs = int(spec.get("procs", 1))
    cap = float(spec["cap_s"])
    cpu0 = broker_cpu(spec)
    if procs == 1:
        r = produce_messages(spec, int(spec["count"]), now() + cap, float(spec["flush_s"]))
        elapsed = r["t_end"] - r["t_start"]
        info = {k: r[k] for k in ("sent", "delivered", "errors", "first_error",
                                  "pending_after_flush", "capped", "client_errors")}
        info["elapsed_s"] = elapsed
        info["flush_s"] = r["t_end"] - r["t_sent"]
    else:
        r_all = run_children(spec, procs)
        t_start = min(r["t_start"] for r in r_all)
        t_end = max(r["t_end"] for r in r_all)
        elapsed = t_end - t_start
        info = {"procs": procs, "elapsed_s": elapsed,
                "per_process_msg_s": [r["delivered"] / (r["t_end"] - r["t_start"])
                                      for r in r_all]}
        for k in ("sent", "delivered", "errors", "pending_after_flush"):
            info[k] = sum(r[k] for r in r_all)
        info["capped"] = any(r["capped"] for r in r_all)
        info["first_error"] = next((r["first_error"] for r in r_all if r["first_error"]), None)
        info["client_errors"] = sum((r["client_errors"] for r in r_all), [])[:5]
        r = {"delivered": info["delivered"]}
    info["broker_cpu_s"] = cpu_between(cpu0, broker_cpu(spec))
    delivered = info["delivered"]
    if delivered <= 0:
        raise Failed(f"nothing delivered: {info.get('first_error') or info.get('client_errors')}")
    # what the broker says it stored (not timed)
    try:
        info["stored"] = stored_count(bootstrap, topic, int(spec["partitions"]))
    except Exception as e:
        info["stored"] = f"ListOffsets failed: {e}"
    notes = []
    if info["capped"]:
        notes.append(f"capped at {cap:.0f}s: {info['sent']} of {spec['count']} sent")
    if info["errors"]:
        notes.append(f"{info['errors']} delivery errors ({info['first_error']})")
    if info["pending_after_flush"]:
        notes.append(f"{info['pending_after_flush']} still pending after flush timeout")
    if isinstance(info["stored"], int) and info["stored"] != delivered:
        notes.append(f"ListOffsets(latest) sums to {info['stored']} right after flush; "
                     f"{delivered} were acknowledged")
    info["notes"] = notes
    emit({"ok": True, "figures": produce_figures(spec, delivered, elapsed), "info": info})
    if spec.get("delete_after"):
        delete_topic(bootstrap, topic)
    return None


def run_children(spec: dict, procs: int) -> list[dict]:
    """Multi-process produce: `procs` children each produce count/procs messages, to disjoint
    partition ranges when partitions divide evenly (else all of them), started together."""
    import subprocess

    parts = int(spec["partitions"])
    children = []
    deadline = now() + float(spec["cap_s"]) + float(spec["flush_s"]) + 60
    try:
        for i in range(procs):
            child = dict(spec, kind="produce-child", count=int(spec["count"]) // procs)
            if parts % procs == 0:
                child["partitions"] = parts // procs
                child["first_partition"] = i * (parts // procs)
            children.append(subprocess.Popen(
                [sys.executable, "-m", "bench.worker", json.dumps(child)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        for c in children:  # each creates its producer and fetches metadata, then says READY
            line = read_line(c, deadline)
            if line.strip() != "READY":
                raise Failed(f"producer process not ready: {line!r}")
        go_at = now() + 0.2
        for c in children:
            c.stdin.write(f"GO {go_at}\n")
            c.stdin.flush()
        results = []
        for c in children:
            line = read_line(c, deadline)
            if not line.startswith(RESULT_PREFIX):
                raise Failed(f"producer process gave no result: {line!r}")
            r = json.loads(line[len(RESULT_PREFIX):])
            if not r.get("ok"):
                raise Failed(f"producer process failed: {r.get('error')}")
            results.append(r["raw"])
        return results
    finally:
        for c in children:
            if c.poll() is None:
                try:
                    c.wait(5)
                except subprocess.TimeoutExpired:
                    c.kill()


def read_line(proc, deadline: float) -> str:
    """A line from a child's stdout, bounded by `deadline` (the child is killed past it)."""
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        while True:
            left = deadline - now()
            if left <= 0:
                proc.kill()
                raise Failed("producer process timed out")
            if sel.select(timeout=min(left, 1.0)):
                line = proc.stdout.readline()
                if not line:
                    raise Failed(f"producer process exited ({proc.wait(5)})")
                return line
    finally:
        sel.close()


def run_produce_child(spec: dict) -> None:
    # the parent already created the topic; warm up, report READY, wait for GO
    p = Producer(producer_config(spec))
    p.list_topics(spec["topic"], timeout=10)
    del p
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    line = sys.stdin.readline().split()
    go_at = min(float(line[1]) if len(line) > 1 else now(), now() + 5)
    while now() < go_at:
        time.sleep(0.001)
    r = produce_messages(spec, int(spec["count"]), now() + float(spec["cap_s"]),
                         float(spec["flush_s"]))
    emit({"ok": True, "raw": r})


# -- consume ----------------------------------------------------------------------------------

def run_consume(spec: dict) -> dict:
    bootstrap, topic, parts = spec["bootstrap"], spec["topic"], int(spec["partitions"])
    size = int(spec["size"])
    info = {"prefilled": False}
    if spec.get("prefill"):
        # no topic left by the produce workload of this round: fill one (not timed)
        create_topic(bootstrap, topic, parts)
        fill = dict(spec, acks=1, linger_ms=5, batch_size=1000000)
        r = (produce_transactions(fill, int(spec["count"]), now() + 60) if spec.get("txn_records")
             else produce_messages(fill, int(spec["count"]), now() + 60, 60))
        if r["delivered"] <= 0:
            raise Failed(f"prefill delivered nothing: {r.get('first_error')}")
        info["prefilled"] = True
        spec["expected"] = r["delivered"]
    # N = what the producer had acknowledged.  (Not ListOffsets: Tansu's latest offset was seen
    # to lag the data it serves by a few percent right after a produce.)
    expected = int(spec.get("expected") or 0)
    if expected <= 0:
        wm = watermarks(bootstrap, topic, parts)
        expected = sum(hi for _lo, hi in wm)
        info["expected_from"] = "ListOffsets"
    if expected <= 0:
        raise Failed(f"topic {topic} is empty")
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": "bench-consume-" + uuid.uuid4().hex,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        # BENCHMARKING.md: the default (1000 ms) pause whenever the local queue is full caps
        # 100-byte consumption at ~225k msg/s for any broker
        "fetch.queue.backoff.ms": 10,
    }
    conf.update(spec.get("consumer_config") or {})
    c = Consumer(conf)
    cap = float(spec["cap_s"])
    n = 0
    errors = []
    bad_size = 0
    cpu0 = broker_cpu(spec)
    t0 = now()
    deadline = t0 + cap
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(parts)])
    consume = c.consume
    while n < expected:
        left = deadline - now()
        if left <= 0:
            break
        # never ask for more than remain: the last call returns as soon as the last message is in
        msgs = consume(min(10000, expected - n), min(0.5, left))
        if not msgs:
            continue
        bad = 0
        for m in msgs:
            if m.error() is not None:
                bad += 1
                errors.append(str(m.error()))
        n += len(msgs) - bad
        last = msgs[-1]
        if last.error() is None and len(last.value()) != size:
            bad_size += 1
        if len(errors) > 1000:
            break
    elapsed = now() - t0
    info["broker_cpu_s"] = cpu_between(cpu0, broker_cpu(spec))
    result = {"ok": n > 0, "figures": {"msg/s": n / elapsed, "MB/s": n * size / elapsed / 1e6},
              "info": dict(info, expected=expected, read=n, elapsed_s=elapsed,
                           errors=errors[:5], n_errors=len(errors), notes=[])}
    if n < expected:
        result["info"]["notes"].append(f"read {n} of {expected} in {cap:.0f}s cap")
    if errors:
        result["info"]["notes"].append(f"{len(errors)} consumer errors, first: {errors[0]}")
    if bad_size:
        result["info"]["notes"].append(f"{bad_size} batches ended in a message of wrong size")
    if n <= 0:
        result = {"ok": False, "error": f"read nothing in {cap:.0f}s "
                  f"(errors: {errors[:3]})", "info": result["info"]}
    emit(result)
    c.close()
    if spec.get("delete_after"):
        delete_topic(bootstrap, topic)
    return None


# -- fetch versions ---------------------------------------------------------------------------

def run_fetch_versions(spec: dict) -> dict:
    """Fill a topic (not timed), then read it all with a bare Fetch v4 reader (stored batches,
    the current clients' path) and a bare Fetch v3 reader (down-converted to format v1)."""
    bootstrap, topic, parts = spec["bootstrap"], spec["topic"], int(spec["partitions"])
    create_topic(bootstrap, topic, parts)
    r = produce_messages(dict(spec, acks=1, linger_ms=5, batch_size=1000000),
                         int(spec["count"]), now() + 60, 60)
    expected = r["delivered"]
    if expected <= 0:
        raise Failed(f"prefill delivered nothing: {r['first_error']}")
    host, port = bootstrap.rsplit(":", 1)
    figures, info = {}, {"expected": expected, "notes": []}
    for version in (4, 3):
        n, elapsed = raw_fetch.read_all(host, int(port), topic, parts, expected, version,
                                        float(spec["cap_s"]))
        figures[f"v{version} msg/s"] = n / elapsed
        figures[f"v{version} MB/s"] = n * int(spec["size"]) / elapsed / 1e6
        if n < expected:
            info["notes"].append(f"v{version}: read {n} of {expected} in the cap")
    emit({"ok": True, "figures": figures, "info": info})
    delete_topic(bootstrap, topic)
    return None


# -- end-to-end latency -----------------------------------------------------------------------

def run_latency(spec: dict) -> dict:
    bootstrap, topic = spec["bootstrap"], spec["topic"]
    create_topic(bootstrap, topic, 1)
    count, cap = int(spec["count"]), float(spec["cap_s"])
    per_msg = float(spec.get("per_msg_timeout_s", 5.0))
    size = int(spec.get("size", 100))
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1,
                  "delivery.report.only.error": True, "enable.idempotence": False})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-lat-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": False, **(spec.get("consumer_config") or {})})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    # warm-up: until one message makes the trip (connections, fetch loop established)
    warm_deadline = now() + 20
    warmed = False
    while now() < warm_deadline and not warmed:
        p.produce(topic, b"warm")
        p.poll(0)
        t_w = now() + 1.0
        while now() < t_w:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                warmed = True
                break
    if not warmed:
        raise Failed("warm-up: no message came back within 20 s")
    # drain anything else from the warm-up (bounded: 10,000 messages or 5 s)
    drain_until = now() + 5
    for _ in range(10000):
        if c.poll(0.3) is None or now() > drain_until:
            break
    pad = b"." * max(0, size - 10)
    lat = []
    slow_at = []  # (index, ms) of messages over 100 ms, to see when the stalls happen
    lost = 0
    deadline = now() + cap
    for i in range(count):
        if now() > deadline:
            break
        key = b"%010d" % i
        t0 = time.perf_counter()
        p.produce(topic, key + pad)
        p.poll(0)
        limit = now() + per_msg
        while True:
            left = limit - now()
            if left <= 0:
                lost += 1
                break
            m = c.poll(left)
            if m is None or m.error() is not None:
                continue
            if m.value()[:10] == key:
                dt = time.perf_counter() - t0
                lat.append(dt)
                if dt > 0.1 and len(slow_at) < 100:
                    slow_at.append((i, round(dt * 1000, 1)))
                break
    if not lat:
        raise Failed(f"no message received ({lost} lost)")
    lat.sort()
    ms = [x * 1000 for x in lat]
    result = {"ok": True,
              "figures": {"p50 ms": pct(ms, 50), "p99 ms": pct(ms, 99)},
              "info": {"measured": len(ms), "lost": lost, "max_ms": ms[-1],
                       "mean_ms": sum(ms) / len(ms),
                       "over_100ms": sum(1 for x in ms if x > 100), "slow_at": slow_at,
                       "notes": []}}
    if lost:
        result["info"]["notes"].append(f"{lost} messages not received within {per_msg:.0f}s")
    slow = result["info"]["over_100ms"]
    if slow:
        result["info"]["notes"].append(f"{slow} of {len(ms)} took over 100 ms "
                                       f"(max {ms[-1]:.0f} ms, mean {sum(ms) / len(ms):.2f} ms)")
    if len(ms) + lost < count:
        result["info"]["notes"].append(f"capped at {cap:.0f}s after {len(ms) + lost} messages")
    emit(result)
    p.flush(5)
    c.close()
    delete_topic(bootstrap, topic)
    return None


def pct(sorted_values: list, q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(round(q / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


# -- consumer groups --------------------------------------------------------------------------

class GroupState:
    """Current assignment of every member, updated from the rebalance callbacks."""

    def __init__(self, members: int, partitions: int):
        self.lock = threading.Lock()
        self.assigned = [set() for _ in range(members)]
        self.gone = [False] * members
        self.all_parts = set(range(partitions))
        self.assign_calls = [0] * members
        self.revoke_calls = [0] * members
        self.settled_at = None
        self.settled = threading.Event()
        self.rebalanced_at = None
        self.rebalanced = threading.Event()
        self.leave_started_at = None
        self.history = []

    def covered(self) -> bool:
        active = [a for a, g in zip(self.assigned, self.gone) if not g]
        if not active or any(not a for a in active):
            return False
        union = set().union(*active)
        return union == self.all_parts and sum(len(a) for a in active) == len(self.all_parts)

    def update(self, idx: int, parts: set | None, kind: str) -> None:
        t = now()
        with self.lock:
            if parts is None:
                self.assigned[idx] = set()
                self.revoke_calls[idx] += 1
            else:
                self.assigned[idx] = set(parts)
                self.assign_calls[idx] += 1
            if len(self.history) < 200:
                self.history.append((round(t, 4), idx, kind, sorted(self.assigned[idx])))
            self._check(t)

    def _check(self, t: float) -> None:
        if not self.covered():
            return
        if self.leave_started_at is None:
            if self.settled_at is None:
                self.settled_at = t
                self.settled.set()
        elif self.rebalanced_at is None:
            self.rebalanced_at = t
            self.rebalanced.set()

    def snapshot(self) -> list:
        with self.lock:
            return [sorted(a) for a in self.assigned]


def run_group(spec: dict) -> dict:
    bootstrap, topic = spec["bootstrap"], spec["topic"]
    parts, members = int(spec["partitions"]), int(spec["members"])
    create_topic(bootstrap, topic, parts)
    group = "bench-group-" + uuid.uuid4().hex
    state = GroupState(members, parts)
    stop = threading.Event()
    start = threading.Event()
    leave = threading.Event()
    leaver = members - 1
    created = threading.Barrier(members + 1, timeout=30)
    hard_deadline = now() + float(spec["settle_cap_s"]) + float(spec["rebalance_cap_s"]) + 30
    close_info = {}
    thread_errors = []

    conf = {"bootstrap.servers": bootstrap, "group.id": group,
            "session.timeout.ms": int(spec["session_timeout_ms"]),
            "heartbeat.interval.ms": int(spec["heartbeat_ms"]),
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "enable.partition.eof": False}
    conf.update(spec.get("consumer_config") or {})

    def member(idx: int) -> None:
        try:
            c = Consumer(dict(conf, **{"client.id": f"bench-member-{idx}"}))
            created.wait()
            start.wait(30)

            def on_assign(_c, tps):
                state.update(idx, {tp.partition for tp in tps if tp.topic == topic}, "assign")

            def on_revoke(_c, tps):
                state.update(idx, None, "revoke")

            c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
            while not stop.is_set() and now() < hard_deadline:
                if idx == leaver and leave.is_set():
                    with state.lock:
                        state.gone[idx] = True
                        state.leave_started_at = now()
                    t = now()
                    c.close()  # LeaveGroup
                    close_info["close_s"] = now() - t
                    return
                c.poll(0.05)
            c.close()
        except Exception as e:
            thread_errors.append(f"member {idx}: {e!r}")

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(members)]
    for t in threads:
        t.start()
    created.wait()
    t0 = now()
    start.set()
    settle_cap = float(spec["settle_cap_s"])
    if not state.settled.wait(settle_cap):
        stop.set()
        raise Failed(f"group did not settle within {settle_cap:.0f}s; assignments "
                     f"{state.snapshot()} {thread_errors[:2]}")
    settle_s = state.settled_at - t0
    # let the group stay stable for a moment (a rebalance queued behind the first good
    # assignment would otherwise be charged to the leave)
    stable_until = now() + float(spec.get("stable_s", 1.0))
    while now() < stable_until:
        time.sleep(0.05)
    if not state.covered():
        # still moving: wait (bounded) for it to settle again
        t_w = now() + settle_cap
        while now() < t_w and not state.covered():
            time.sleep(0.05)
        if not state.covered():
            stop.set()
            raise Failed(f"group lost its assignment after settling: {state.snapshot()}")
    leave.set()
    reb_cap = float(spec["rebalance_cap_s"])
    figures = {"settle s": settle_s}
    notes = []
    if state.rebalanced.wait(reb_cap) and state.leave_started_at is not None:
        figures["rebalance s"] = state.rebalanced_at - state.leave_started_at
    else:
        notes.append(f"no rebalance within {reb_cap:.0f}s after a member left; assignments "
                     f"{state.snapshot()}")
    info = {"assign_calls": state.assign_calls, "revoke_calls": state.revoke_calls,
            "close_s": close_info.get("close_s"), "final": state.snapshot(),
            "history": state.history[:40], "thread_errors": thread_errors[:3], "notes": notes}
    emit({"ok": True, "figures": figures, "info": info})
    stop.set()
    for t in threads:
        t.join(10)
    delete_topic(bootstrap, topic)
    return None


# -- commit throughput ------------------------------------------------------------------------

def run_commit(spec: dict) -> dict:
    bootstrap, topic = spec["bootstrap"], spec["topic"]
    create_topic(bootstrap, topic, 1)
    assigned = threading.Event()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-commit-" + uuid.uuid4().hex,
                  "session.timeout.ms": int(spec["session_timeout_ms"]),
                  "heartbeat.interval.ms": int(spec["heartbeat_ms"]),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    if spec.get("mode", "subscribe") == "assign":
        # no group membership: commits carry generation -1 (the "simple consumer" path)
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        assigned.set()
    else:
        c.subscribe([topic], on_assign=lambda _c, tps: assigned.set() if tps else None)
    t_join = now()
    deadline = t_join + float(spec["assign_cap_s"])
    while not assigned.is_set() and now() < deadline:
        c.poll(0.05)
    if not assigned.is_set():
        raise Failed(f"no assignment within {spec['assign_cap_s']}s")
    join_s = now() - t_join
    seconds, max_commits = float(spec["seconds"]), int(spec["max_commits"])
    ok = 0
    errors = []
    offset = 0
    t0 = now()
    end = t0 + seconds
    while now() < end and ok + len(errors) < max_commits:
        offset += 1
        try:
            res = c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            err = res[0].error if res else None
            if err is not None:
                errors.append(str(err))
            else:
                ok += 1
        except KafkaException as e:
            errors.append(str(e.args[0]))
        if len(errors) > 100:
            break
    elapsed = now() - t0
    notes = []
    if errors:
        notes.append(f"{len(errors)} failed commits, first: {errors[0]}")
    committed = None
    try:
        committed = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        last_ok = offset if not errors else None
        if last_ok is not None and committed != last_ok:
            notes.append(f"OffsetFetch returns {committed}, last commit was {last_ok}")
    except KafkaException as e:
        notes.append(f"OffsetFetch failed: {e}")
    if ok == 0:
        raise Failed(f"no commit succeeded: {errors[:3]}")
    emit({"ok": True, "figures": {"commits/s": ok / elapsed},
          "info": {"commits": ok, "elapsed_s": elapsed, "join_s": join_s,
                   "committed": committed, "notes": notes}})
    c.close()
    delete_topic(bootstrap, topic)
    return None


KINDS = {"produce": run_produce, "consume": run_consume, "latency": run_latency,
         "group": run_group, "commit": run_commit, "txn-produce": run_txn_produce,
         "fetch-versions": run_fetch_versions, "group-1000": group1000.run}


def main() -> None:
    spec = json.loads(sys.argv[1])
    kind = spec["kind"]
    if kind == "produce-child":
        try:
            run_produce_child(spec)
        except Exception as e:
            emit({"ok": False, "error": f"{type(e).__name__}: {e}"})
        sys.stdout.flush()
        os._exit(0)
    try:
        result = KINDS[kind](spec)
        if result is not None:
            emit(result)
    except Failed as e:
        emit({"ok": False, "error": str(e)})
    except Exception as e:
        log(traceback.format_exc())
        emit({"ok": False, "error": f"{type(e).__name__}: {e}"})
    sys.stdout.flush()
    sys.stderr.flush()
    # librdkafka handles left in daemon threads must not hold the process at exit
    os._exit(0)


if __name__ == "__main__":
    main()
