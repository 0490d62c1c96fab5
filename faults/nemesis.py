"""The nemeses: each fault kind injects one fault into a ``LocalCluster``, holds it, and heals it
(restarts what was killed, resumes what was paused, reconnects what was cut, frees what was
filled). Victims are found by asking the cluster: Metadata for a partition's leader,
FindCoordinator for the group's coordinator, the ``/controller`` znode for the controller."""
from __future__ import annotations

import random
import time

from josefk.faults.history import Fault
from josefk.faults.processes import LocalCluster, describe_exit

now = time.time

KINDS = ("kill-leader", "kill-controller", "kill-coordinator", "kill-zookeeper", "sigterm",
         "pause", "partition", "disk")
DESCRIPTIONS = {
    "kill-leader": "kill -9 of a partition's leader, restarted 8-11 s later",
    "kill-controller": "kill -9 of the controller, restarted 8-11 s later",
    "kill-coordinator": "kill -9 of the consumer group's coordinator, restarted 8-11 s later",
    "kill-zookeeper": "kill -9 of ZooKeeper, restarted 3-10 s later",
    "sigterm": "SIGTERM of a partition's leader (controlled shutdown), restarted 2-4 s after it "
               "exited",
    "pause": "SIGSTOP of a broker for 8-10 s (past the 6 s session timeout), then SIGCONT",
    "partition": "one broker cut off from the other brokers and from ZooKeeper for 10-13 s",
    "disk": "a partition leader's log dir filled for 10-12 s, then freed and the broker "
            "restarted",
}


class Nemesis:
    def __init__(self, cluster: LocalCluster, rng: random.Random,
                 partitions: list[tuple[str, int]], group: str):
        self.cluster, self.rng, self.partitions, self.group = cluster, rng, partitions, group

    def unavailable(self, kind: str) -> str | None:
        """Why ``kind`` cannot be injected on this machine (None: it can)."""
        if kind == "partition":
            return self.cluster.isolation_unavailable
        if kind == "disk":
            return self.cluster.disk_unavailable
        return None

    def inject(self, kind: str) -> Fault:
        """Inject one fault of ``kind``, hold it, heal it; returns what was done."""
        return getattr(self, "_" + kind.replace("-", "_"))()

    # -- victims -----------------------------------------------------------------------------
    def _any_broker(self) -> int:
        return self.rng.choice(sorted(self.cluster.brokers))

    def _leader(self) -> tuple[int, str]:
        topic, partition = self.rng.choice(self.partitions)
        try:
            md = self.cluster.metadata_from(topics=[topic])
            leader = next(p.leader_id for p in md.topics[0].partitions
                          if p.partition_index == partition)
        except (OSError, ConnectionError, StopIteration, IndexError):
            leader = -1
        if leader < 0:
            b = self._any_broker()
            return b, f"broker {b} ({topic}-{partition} had no leader)"
        return leader, f"broker {leader} (leader of {topic}-{partition})"

    # -- failover: how soon the cluster named new leaders ----------------------------------------
    def _leaders(self, ask: int) -> dict[tuple[str, int], int] | None:
        """Broker ``ask``'s view of the watched partitions' leaders (None: no answer)."""
        topics = sorted({t for t, _ in self.partitions})
        try:
            md = self.cluster.metadata_from(ask, topics=topics, timeout=1.0)
        except (OSError, ConnectionError):
            return None
        return {(t.name, p.partition_index): p.leader_id for t in md.topics for p in t.partitions}

    def _led_by(self, victim: int) -> set[tuple[str, int]]:
        view = self._leaders(victim) or {}
        return {tp for tp in self.partitions if view.get(tp) == victim}

    def _await_failover(self, f: Fault, victim: int, led: set, until: float):
        """Until ``until``: ask a surviving broker for the leaders of ``led`` until none is
        ``victim`` or missing, and note the time in ``f.failover``."""
        ask = min(b for b in self.cluster.brokers if b != victim)
        while led and now() < until:
            view = self._leaders(ask)
            if view is not None and all(view.get(tp, -1) not in (victim, -1) for tp in led):
                f.failover = now() - f.injected
                return
            time.sleep(0.1)

    # -- the kinds -----------------------------------------------------------------------------
    def _hold(self, kind: str, target: str, inject, heal, seconds: tuple[float, float],
              victim: int | None = None) -> Fault:
        """``inject()``, wait a random time in ``seconds`` (watching ``victim``'s leaderships
        move), ``heal()``."""
        led = self._led_by(victim) if victim is not None else set()
        f = Fault(kind, target, now())
        inject()
        until = now() + self.rng.uniform(*seconds)
        self._await_failover(f, victim, led, until)
        time.sleep(max(0.0, until - now()))
        heal()
        f.healed = now()
        return f

    def _kill(self, kind: str, b: int, target: str) -> Fault:
        return self._hold(kind, target, lambda: self.cluster.kill(b),
                          lambda: self.cluster.restart(b), (8, 11), victim=b)

    def _kill_leader(self) -> Fault:
        return self._kill("kill-leader", *self._leader())

    def _kill_controller(self) -> Fault:
        try:
            b = self.cluster.controller()
        except Exception as e:  # noqa: BLE001 - kazoo's errors: ZooKeeper did not answer
            b = -1
            why = f"no answer from ZooKeeper: {e!r}"
        else:
            why = "there was no controller"
        if b < 0:
            b = self._any_broker()
            return self._kill("kill-controller", b, f"broker {b} ({why})")
        return self._kill("kill-controller", b, f"broker {b} (controller)")

    def _kill_coordinator(self) -> Fault:
        try:
            b = self.cluster.coordinator(self.group)
        except (OSError, ConnectionError) as e:
            b = self._any_broker()
            return self._kill("kill-coordinator", b, f"broker {b} (FindCoordinator: {e})")
        return self._kill("kill-coordinator", b, f"broker {b} (coordinator of {self.group})")

    def _kill_zookeeper(self) -> Fault:
        return self._hold("kill-zookeeper", "zookeeper", self.cluster.kill_zookeeper,
                          self.cluster.restart_zookeeper, (3, 10))

    def _pause(self) -> Fault:
        b = self._any_broker()
        return self._hold("pause", f"broker {b}", lambda: self.cluster.pause(b),
                          lambda: self.cluster.resume(b), (8, 10), victim=b)

    def _partition(self) -> Fault:
        b = self._any_broker()
        return self._hold("partition", f"broker {b}", lambda: self.cluster.isolate(b),
                          self.cluster.heal, (10, 13), victim=b)

    def _sigterm(self) -> Fault:
        b, target = self._leader()
        f = Fault("sigterm", target, now())
        code = self.cluster.shutdown(b, timeout=60)
        f.notes.append(f"shut down in {now() - f.injected:.1f} s, {describe_exit(code)}" +
                       (" (needed SIGKILL after 60 s)" if self.cluster.brokers[b].needed_sigkill
                        else ""))
        time.sleep(self.rng.uniform(2, 4))
        self.cluster.restart(b)
        f.healed = now()
        return f

    def _disk(self) -> Fault:
        """Fill a leader's log dir, free it, then restart the broker, as an operator does
        after a disk failure (Kafka keeps a failed log dir offline until the broker restarts)."""
        b, target = self._leader()
        led = self._led_by(b)
        self.cluster.fill_disk(b)
        f = Fault("disk", target, now())  # from the moment it is full
        until = now() + self.rng.uniform(10, 12)
        self._await_failover(f, b, led, until)
        time.sleep(max(0.0, until - now()))
        self.cluster.free_disk(b)
        broker = self.cluster.brokers[b]
        if not broker.is_running():
            f.notes.append(f"broker {b} {describe_exit(broker.proc.returncode)} while its disk "
                           f"was full")
        self.cluster.restart(b)
        f.healed = now()
        return f
