"""The harness's workload: real clients (confluent-kafka, librdkafka) on threads of their own,
each recording what it did and saw in the run's ``History``.

- ``Writer``: an idempotent acks=all producer writing unique, sequenced values
  (``w<n>.<generation>-<seq>``) round-robin to its partitions at a steady pace;
- ``TxnWriter``: a transactional producer committing most transactions and aborting others;
- ``ReadCommitted``: a read_committed consumer of the transactional topic;
- ``Member``: a consumer-group member that commits synchronously after processing each batch
  and restarts itself from time to time (so every resume is checked);
- ``OffsetObserver``: OffsetFetch of the group's offsets, once a second.

Clients use 5 s request and socket timeouts, so that they notice a silent broker in seconds.
Every worker runs until told to stop, its deadline or its step bound, whichever comes first;
client errors are recorded, never raised.
"""
from __future__ import annotations

import logging
import random
import threading
import time
import traceback
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from josefk.faults.harness import (GROUP, TIERED_TOPIC, TIERED_TOPIC_CONFIG, TOPICS,
                                   WRITE_INTERVAL, partitions)
from josefk.faults.history import Commit, History, OffsetRead, Read, Resume, Txn, Write

now = time.time
CLIENT_TIMEOUTS = {"socket.timeout.ms": 5000, "request.timeout.ms": 5000}
# The idempotent acks=all writers' producer settings (besides CLIENT_TIMEOUTS)
WRITER_CONFIG = {"acks": "all", "enable.idempotence": True, "linger.ms": 5,
                 "message.timeout.ms": 60000, "retry.backoff.ms": 100}
MAX_STEPS = 10_000_000


class Worker(threading.Thread):
    """A workload thread: ``setup()``, then ``step()`` until stopped, then ``finish()``."""

    def __init__(self, name: str, bootstrap: str, history: History, stop: threading.Event,
                 deadline: float, logger: logging.Logger):
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.history, self.stop, self.deadline = bootstrap, history, stop, deadline
        self.logger = logger  # librdkafka's own log lines go there
        self.failure: str | None = None  # a traceback, if the worker itself broke

    def run(self):
        try:
            self.setup()
            steps = 0
            while not self.stop.is_set() and now() < self.deadline and steps < MAX_STEPS:
                self.step()
                steps += 1
        except Exception:  # noqa: BLE001 - reported by the harness
            self.failure = traceback.format_exc()
        finally:
            try:
                self.finish()
            except Exception:  # noqa: BLE001
                self.failure = self.failure or traceback.format_exc()

    def config(self, **extra) -> dict:
        return {"bootstrap.servers": self.bootstrap, "logger": self.logger, **CLIENT_TIMEOUTS,
                **extra}

    def setup(self):
        pass

    def step(self):
        raise NotImplementedError

    def finish(self):
        pass


class Writer(Worker):
    """An idempotent acks=all producer: one record to each of its partitions every
    ``interval`` seconds. A fatal producer error starts a new producer (a new generation)."""

    def __init__(self, n: int, partitions: list[tuple[str, int]], interval: float, **kw):
        super().__init__(f"writer-{n}", **kw)
        self.n, self.partitions, self.interval = n, partitions, interval
        self.generation = 0
        self.pending: dict[str, Write] = {}
        self.fatal = None

    def setup(self):
        self.generation += 1
        self.producer = f"w{self.n}.{self.generation}"
        self.seq = 0
        self.fatal = None
        self.p = Producer(self.config(**WRITER_CONFIG, **{
            "queue.buffering.max.messages": 200000, "error_cb": self._error}))

    def _error(self, err):
        if err.fatal():
            self.fatal = err

    def _delivered(self, err, msg):
        w = self.pending.pop(msg.value().decode(), None)
        if w is None:
            return
        if err is None:
            offset = msg.offset()
            w.acked, w.offset = now(), offset if offset is not None and offset >= 0 else None
        else:
            w.error = err.str()

    def step(self):
        tick = now()
        for topic, partition in self.partitions:
            w = Write(self.producer, self.seq, topic, partition, now())
            try:
                self.p.produce(topic, w.value.encode(), partition=partition,
                               on_delivery=self._delivered)
            except BufferError:
                break
            self.seq += 1
            self.pending[w.value] = w
            self.history.writes.append(w)
        self.p.poll(0)
        while not self.stop.is_set() and now() < tick + self.interval:
            self.p.poll(min(0.01, max(0.0, tick + self.interval - now())))
        if self.fatal is not None:
            self.logger.warning("%s: fatal error %s: a new producer takes over",
                                self.producer, self.fatal)
            self.p.flush(10)
            self.setup()

    def finish(self):
        self.p.flush(60)


class TxnWriter(Worker):
    """A transactional producer: transactions of 1-8 records over its partitions; 3 in 4
    committed, the others aborted. An error that leaves the outcome unknown starts a new
    producer with the same transactional.id (which fences the old one)."""

    def __init__(self, n: int, partitions: list[tuple[str, int]], rng: random.Random, **kw):
        super().__init__(f"txn-writer-{n}", **kw)
        self.n, self.partitions, self.rng = n, partitions, rng
        self.transactional_id = f"faults-txn-{n}"
        self.generation = 0
        self.number = 0
        self.p = None

    def _new_producer(self) -> bool:
        self.generation += 1
        self.producer = f"x{self.n}.{self.generation}"
        self.p = Producer(self.config(**{
            "transactional.id": self.transactional_id, "acks": "all", "linger.ms": 5,
            "transaction.timeout.ms": 20000, "message.timeout.ms": 20000}))
        deadline = now() + 60
        while now() < deadline:
            try:
                self.p.init_transactions(max(1.0, deadline - now()))
                return True
            except KafkaException as e:
                if not e.args[0].retriable():
                    break
        self.p = None
        return False

    def setup(self):
        self._new_producer()

    def step(self):
        if self.p is None:
            if not self._new_producer():
                self.stop.wait(1.0)
            return
        txn = Txn(self.producer, self.number, [], now())
        self.number += 1
        try:
            self.p.begin_transaction()
            for i in range(self.rng.randint(1, 8)):
                topic, partition = self.rng.choice(self.partitions)
                value = f"{txn.producer}-{txn.number}-{i}"
                self.p.produce(topic, value.encode(), partition=partition)
                txn.values.append((topic, partition, value))
            self.p.poll(0)
        except (KafkaException, BufferError):
            pass  # the commit below fails and says what to do
        self.history.txns.append(txn)
        txn.outcome = self._finish(commit=self.rng.random() < 0.75)
        txn.end = now()
        if txn.outcome == "unknown":
            self.p = None
        self.stop.wait(self.rng.uniform(0.05, 0.3))

    def _finish(self, commit: bool) -> str:
        deadline = now() + 60
        while now() < deadline:
            try:
                if commit:
                    self.p.commit_transaction(max(1.0, deadline - now()))
                    return "committed"
                self.p.abort_transaction(max(1.0, deadline - now()))
                return "aborted"
            except KafkaException as e:
                err = e.args[0]
                if err.txn_requires_abort():
                    commit = False
                elif not err.retriable():
                    return "unknown"
        return "unknown"

    def finish(self):
        # A fresh producer with the same transactional.id completes or aborts whatever the
        # last one left open, so that the final read_committed read is not held back.
        self._new_producer()
        if self.p is not None:
            self.p.flush(10)


class ReadCommitted(Worker):
    """A read_committed consumer of ``partitions`` from their beginning."""

    def __init__(self, partitions: list[tuple[str, int]], **kw):
        super().__init__("read-committed", **kw)
        self.partitions = partitions

    def setup(self):
        self.c = Consumer(self.config(**{
            "group.id": f"faults-reader-{id(self)}", "isolation.level": "read_committed",
            "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
        self.c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in self.partitions])

    def step(self):
        for m in self.c.consume(500, 0.5):
            if m.error() is None:
                self.history.reads.append(Read(m.topic(), m.partition(), m.offset(),
                                               m.value().decode(), now()))

    def finish(self):
        self.c.close()


class Member(Worker):
    """A member of consumer group ``group`` subscribed to ``topics``: processes each batch, then
    commits it synchronously; after a random lifetime it leaves and joins again as a new
    consumer. Records each assignment's resume point, every commit and the committed offsets it
    reads (OffsetFetch) after each assignment."""

    def __init__(self, n: int, group: str, topics: list[str], rng: random.Random,
                 lifetime=(15.0, 40.0), **kw):
        super().__init__(f"member-{n}", **kw)
        self.n, self.group, self.topics, self.rng, self.lifetime = n, group, topics, rng, lifetime
        self.generation = 0
        self.epoch = 0  # counts assignment changes
        self.current: dict[tuple[str, int], Resume] = {}
        self.to_fetch: list[TopicPartition] = []

    def setup(self):
        self.generation += 1
        self.member = f"m{self.n}.{self.generation}"
        self.current, self.to_fetch = {}, []
        self.c = Consumer(self.config(**{
            "group.id": self.group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 60000}))
        self.c.subscribe(self.topics, on_assign=self._assigned, on_revoke=self._revoked)
        self.until = now() + self.rng.uniform(*self.lifetime)

    def _assigned(self, consumer, partitions):
        self.epoch += 1
        t = now()
        for tp in partitions:
            r = Resume(self.member, tp.topic, tp.partition, t)
            self.current[(tp.topic, tp.partition)] = r
            self.history.resumes.append(r)
        self.to_fetch = [TopicPartition(tp.topic, tp.partition) for tp in partitions]

    def _revoked(self, consumer, partitions):
        self.epoch += 1
        for tp in partitions:
            self.current.pop((tp.topic, tp.partition), None)

    def step(self):
        if now() > self.until:
            self.c.close()
            self.setup()
            return
        if self.to_fetch:
            tps, self.to_fetch = self.to_fetch, []
            record_offset_fetch(self.history, self.member,
                                lambda: self.c.committed(tps, timeout=10))
        # One message at a time: a rebalance runs its callbacks inside poll(), so each message
        # belongs to the assignment in force when it is returned. What was consumed before a
        # rebalance is not committed by this member (its next owner resumes from the commit).
        last, epoch = {}, self.epoch
        deadline = now() + 0.5
        for _ in range(200):
            m = self.c.poll(max(0.0, deadline - now()))
            if self.epoch != epoch:
                last, epoch = {}, self.epoch
            if m is None:
                break
            if m.error() is not None:
                continue
            key = (m.topic(), m.partition())
            r = self.current.get(key)
            if r is None:
                continue
            offset = m.offset()
            if r.first_offset is None:
                r.first_offset, r.first_at = offset, now()
            elif offset != r.last_offset + 1:
                r.jumps.append((r.last_offset + 1, offset, now()))
            r.last_offset = last[key] = offset
        if last:
            self._commit([TopicPartition(t, p, o + 1) for (t, p), o in last.items()])

    def _commit(self, tps):
        start = now()
        try:
            answered = {(tp.topic, tp.partition): tp.error and tp.error.str()
                        for tp in self.c.commit(offsets=tps, asynchronous=False)}
            failure = "no answer for the partition"
        except KafkaException as e:
            answered, failure = {}, e.args[0].str()
        end = now()
        for tp in tps:
            error = answered.get((tp.topic, tp.partition), failure)
            self.history.commits.append(Commit(self.member, tp.topic, tp.partition, tp.offset,
                                               start, end, error is None, error))

    def finish(self):
        self.c.close()


def record_offset_fetch(history: History, who: str, fetch) -> None:
    """Call ``fetch()`` (an OffsetFetch returning TopicPartitions) and record its answers;
    failures are not answers."""
    start = now()
    try:
        answer = fetch()
    except KafkaException:
        return
    end = now()
    for tp in answer:
        if tp.error is None:
            history.offset_reads.append(OffsetRead(who, tp.topic, tp.partition,
                                                   tp.offset if tp.offset >= 0 else None,
                                                   start, end))


class OffsetObserver(Worker):
    """Asks the group's committed offsets of ``partitions`` once a second, as a consumer of the
    group that does not join it (FindCoordinator, then OffsetFetch)."""

    def __init__(self, group: str, partitions: list[tuple[str, int]], **kw):
        super().__init__("offset-observer", **kw)
        self.group, self.partitions = group, partitions

    def setup(self):
        self.c = Consumer(self.config(**{"group.id": self.group, "enable.auto.commit": False}))

    def step(self):
        tps = [TopicPartition(t, p) for t, p in self.partitions]
        record_offset_fetch(self.history, "observer", lambda: self.c.committed(tps, timeout=5))
        self.stop.wait(1.0)

    def finish(self):
        self.c.close()


# -- the whole workload, in a process of its own -------------------------------------------------
class Workload:
    """Every worker of a run against ``bootstrap``; librdkafka logs to ``root/clients.log``."""

    def __init__(self, bootstrap: str, root: Path, seed: int, seconds: float):
        self.bootstrap = bootstrap
        self.rng = random.Random(seed)
        self.history = History()
        self.stop = threading.Event()
        self.problems: list[str] = []
        self.logger = logging.getLogger("faults.clients")
        self.logger.propagate = False
        handler = logging.FileHandler(Path(root) / "clients.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        self.logger.addHandler(handler)
        self.logger.setLevel(logging.INFO)
        kw = dict(bootstrap=bootstrap, history=self.history, stop=self.stop,
                  deadline=now() + seconds, logger=self.logger)
        written, txn = partitions("rf3", "rf2", "rf1"), partitions("txn")
        group_topics = ["faults-rf3", "faults-rf1"]
        fork = lambda: random.Random(self.rng.random())  # noqa: E731
        self.workers = [
            Writer(1, written, WRITE_INTERVAL, **kw), Writer(2, written, WRITE_INTERVAL, **kw),
            TxnWriter(1, txn, fork(), **kw), TxnWriter(2, txn, fork(), **kw),
            ReadCommitted(txn, **kw),
            Member(1, GROUP, group_topics, fork(), **kw),
            Member(2, GROUP, group_topics, fork(), **kw),
            OffsetObserver(GROUP, partitions("rf3", "rf1"), **kw),
        ]

    def create_topics(self, tiered: bool):
        """The topics; with ``tiered``, TIERED_TOPIC's older data in the object store."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "logger": self.logger})
        new = [NewTopic(f"faults-{name}", n, rf, config={
            "min.insync.replicas": str(isr),
            **(TIERED_TOPIC_CONFIG if tiered and f"faults-{name}" == TIERED_TOPIC else {})})
            for name, n, rf, isr in TOPICS]
        for future in admin.create_topics(new, operation_timeout=30).values():
            future.result(60)

    def start(self):
        for w in self.workers:
            w.start()

    def finish(self):
        """Stop every worker, then read everything back."""
        self.history.end = now()
        self.stop.set()
        for w in self.workers:
            w.join(180)  # a transaction's end and a fresh producer's init take up to 60 s each
            if w.is_alive():
                self.problems.append(f"workload thread {w.name} did not stop within 180 s")
            elif w.failure:
                self.problems.append(f"workload thread {w.name} failed:\n{w.failure}")
        self.history.final = self.read_all(partitions("rf3", "rf2", "rf1"), "read_uncommitted")
        self.history.final_committed = self.read_all(partitions("txn"), "read_committed")
        self.history.final_txn_log = self.read_all(partitions("txn"), "read_uncommitted")

    def read_all(self, tps, isolation: str, timeout: float = 120) -> dict:
        """Every record of ``tps`` from offset 0 to their end (the high watermark, asked once
        the workload stopped); partitions not read to the end in ``timeout`` go to
        ``history.unread``."""
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "faults-final",
                      "logger": self.logger, "isolation.level": isolation,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            ends = {tp: c.get_watermark_offsets(TopicPartition(*tp), timeout=10)[1] for tp in tps}
            c.assign([TopicPartition(t, p, 0) for t, p in tps])
            out = {tp: [] for tp in tps}
            behind = list(tps)
            deadline = now() + timeout
            while behind and now() < deadline:
                for m in c.consume(1000, 0.5):
                    if m.error() is None:
                        out[(m.topic(), m.partition())].append((m.offset(), m.value().decode()))
                at = {(tp.topic, tp.partition): tp.offset
                      for tp in c.position([TopicPartition(*tp) for tp in tps])}
                behind = [tp for tp in tps if at[tp] < ends[tp]]
            if behind:
                self.history.unread += behind
                self.problems.append(f"the final {isolation} read did not reach the end of "
                                     f"{behind} within {timeout:.0f} s")
            return out
        finally:
            c.close()


def main(argv=None) -> int:
    """``python -m faults.workload BOOTSTRAP ROOT SEED SECONDS [tiered]``: create the topics
    (TIERED_TOPIC tiered with "tiered"), start the workload, print "ready"; on "stop" (a line
    on stdin, or its end) stop, read everything back, write (history, problems) pickled to
    ROOT/workload.pickle and print "done"."""
    import pickle
    import sys

    args = (argv or sys.argv[1:])
    bootstrap, root, seed, seconds = args[:4]
    w = Workload(bootstrap, Path(root), int(seed), float(seconds))
    w.create_topics(tiered=args[4:5] == ["tiered"])
    w.start()
    print("ready", flush=True)
    sys.stdin.readline()
    w.finish()
    with open(Path(root) / "workload.pickle", "wb") as f:
        pickle.dump((w.history, w.problems), f)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
