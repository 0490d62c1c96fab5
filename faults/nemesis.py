"""The nemeses: each fault kind injects one fault into a ``LocalCluster``, holds it, and heals it
(restarts what was killed, resumes what was paused, reconnects what was cut, frees what was
filled). Victims are found by asking the cluster: Metadata for a partition's leader,
FindCoordinator for the group's coordinator, the ``/controller`` znode for the controller."""
from __future__ import annotations

import random
import re
import time
import urllib.request

from josefk.faults.history import Fault
from josefk.faults.mirror import REPORT_TIMEOUT
from josefk.faults.processes import LocalCluster, describe_exit

now = time.time

KINDS = ("kill-leader", "kill-controller", "kill-coordinator", "kill-zookeeper", "sigterm",
         "pause", "partition", "disk", "store-down", "store-slow", "store-errors",
         "kill-mid-upload", "half-written", "link-cut", "source-truncate", "kill-dest-leader")
# the kinds of the tiered topic's object store: the store, and for all but store-down the
# proxy in front of it (faults/storeproxy.py)
STORE_KINDS = ("store-down", "store-slow", "store-errors", "kill-mid-upload", "half-written")
# the kinds of the mirror mode (--mirror, faults/mirror.py): on cluster links
MIRROR_KINDS = ("link-cut", "source-truncate", "kill-dest-leader")
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
    "store-down": "the tiered topic's object store (SeaweedFS) stopped for 10-12 s, its port "
                  "refusing, then started again; uploads must resume",
    "store-slow": "every object-store request delayed 1-2 s for 10-12 s; uploads must catch up",
    "store-errors": "60-90% of the object-store requests answered HTTP 500/503 for 10-12 s; "
                    "uploads must catch up",
    "kill-mid-upload": "kill -9 of a tiered partition's leader while it uploads a segment's "
                       ".log, restarted 8-11 s later; the new leader copies on",
    "half-written": "kill -9 of a tiered partition's leader once a segment's .log is in the "
                    "bucket and before its indexes, restarted 8-11 s later; the new leader "
                    "removes the half-written segment and copies on",
    "link-cut": "(--mirror) the destination cluster cut off from the source's brokers for "
                "10-13 s; the mirrors catch up after",
    "source-truncate": "(--mirror) the link cut, a mirrored partition's records deleted at "
                       "the source past the mirror's position (DeleteRecords), the link "
                       "healed: the partition must be reported stopped, then resume-partition "
                       "continues it",
    "kill-dest-leader": "(--mirror) kill -9 of a mirror partition's destination leader, "
                        "restarted 8-11 s later; the new leader mirrors on",
}
RESUME_TIMEOUT = 60.0  # uploads resumed (the remote log grew) this long after the store is back
_SAMPLE = re.compile(r'^kafka_server_brokertopicmetrics_(remotecopylagbytes|remotelogsizebytes)'
                     r'\{topic="([^"]+)"\} (\S+)$', re.M)


class Nemesis:
    def __init__(self, cluster: LocalCluster, rng: random.Random,
                 partitions: list[tuple[str, int]], group: str, *, store=None,
                 tiered_topic: str = "", metrics_ports: dict[int, int] | None = None,
                 crashes: list | None = None, proxy=None, bucket=None, mirror=None,
                 truncated: dict | None = None):
        self.cluster, self.rng, self.partitions, self.group = cluster, rng, partitions, group
        # tiered storage: the object store (faults.objectstore.SeaweedFS), the proxy the
        # brokers reach it through (faults.storeproxy.StoreProxy), the brokers' bucket
        # (tiered.store.S3Store), the tiered topic, each broker's metrics port; uploads that
        # never resume go to ``crashes``
        self.store, self.proxy, self.bucket = store, proxy, bucket
        self.tiered_topic = tiered_topic
        self.metrics_ports = metrics_ports or {}
        self.crashes = crashes if crashes is not None else []
        self.mirror = mirror  # faults.mirror.Mirror: the destination of the links
        self.truncated = truncated if truncated is not None else {}  # source-truncate's

    def unavailable(self, kind: str) -> str | None:
        """Why ``kind`` cannot be injected on this machine (None: it can)."""
        if kind == "partition":
            return self.cluster.isolation_unavailable
        if kind == "disk":
            return self.cluster.disk_unavailable
        if kind in STORE_KINDS and self.store is None:
            return "no object store: SeaweedFS (weed) and obstore need scripts/setup.sh faults,tiered"
        if kind in STORE_KINDS and kind != "store-down" and self.proxy is None:
            return "no proxy in front of the object store"
        if kind in MIRROR_KINDS and self.mirror is None:
            return "the mirror kinds need --mirror"
        if kind in ("link-cut", "source-truncate"):
            return self.mirror.cut_unavailable
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
            leader = self._leader_of(topic, partition)
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

    # -- the object store ------------------------------------------------------------------------
    def _remote(self) -> tuple[float, float]:
        """The tiered topic's RemoteCopyLagBytes and RemoteLogSizeBytes, summed over the
        brokers that answer (each reports the partitions it leads)."""
        lag = size = 0.0
        for port in self.metrics_ports.values():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                continue
            for name, topic, value in _SAMPLE.findall(text):
                if topic == self.tiered_topic:
                    if name == "remotecopylagbytes":
                        lag += float(value)
                    else:
                        size += float(value)
        return lag, size

    def _store_fault(self, kind: str, target: str, inject, heal) -> Fault:
        """``inject()``, hold 10-12 s watching the copy backlog, ``heal()``, then check that
        uploads resume."""
        lag_before, _size = self._remote()
        inject()
        f = Fault(kind, target, now())
        until = now() + self.rng.uniform(10, 12)
        peak = lag_before
        while now() < until:
            time.sleep(min(1.0, max(0.0, until - now())))
            peak = max(peak, self._remote()[0])
        _lag, size_held = self._remote()
        heal()
        f.healed = now()
        self._check_resumed(f, lag_before, peak, size_held)
        return f

    def _check_resumed(self, f: Fault, lag_before: float, peak: float,
                       size_held: float) -> None:
        """Wait until the remote log grows past ``size_held`` (uploads resumed) and the copy
        backlog falls below its ``peak`` during the fault (or to nothing); note the backlog
        before, at its peak and after; a failure to resume goes to the crashes."""
        deadline = f.healed + RESUME_TIMEOUT
        resumed = drained = None
        lag = peak
        while now() < deadline:
            lag, size = self._remote()
            peak = max(peak, lag)
            if resumed is None and size > size_held:
                resumed = now() - f.healed
            if resumed is not None and (lag < peak or lag == 0):
                drained = now() - f.healed
                break
            time.sleep(0.5)
        backlog = f"RemoteCopyLagBytes {lag_before:.0f} before, {peak:.0f} at its peak, " \
                  f"{lag:.0f} after"
        if drained is not None:
            f.notes.append(f"uploads resumed {resumed:.1f} s and the backlog fell "
                           f"{drained:.1f} s after the heal; {backlog}")
        else:
            what = (f"uploads did not resume within {RESUME_TIMEOUT:.0f} s after the "
                    f"{f.kind} heal" if resumed is None else
                    f"the copy backlog did not fall within {RESUME_TIMEOUT:.0f} s after the "
                    f"{f.kind} heal") + f" ({backlog})"
            f.notes.append(what)
            self.crashes.append((now(), what))

    def _store_down(self) -> Fault:
        """Stop the object store, hold, start it again (its port refuses meanwhile)."""
        return self._store_fault("store-down", f"object store {self.store.endpoint}",
                                 self.store.stop, self.store.start)

    def _store_slow(self) -> Fault:
        delay = self.rng.uniform(1.0, 2.0)

        def inject():
            self.proxy.delay = delay

        return self._store_fault("store-slow", f"object store ({delay:.1f} s a request)",
                                 inject, self.proxy.heal)

    def _store_errors(self) -> Fault:
        share = self.rng.uniform(0.6, 0.9)
        answered = self.proxy.errors_answered

        def inject():
            self.proxy.error_share = share

        f = self._store_fault("store-errors", f"object store ({share:.0%} of the requests "
                              "answered 500/503)", inject, self.proxy.heal)
        f.notes.insert(0, f"{self.proxy.errors_answered - answered} requests answered an error")
        return f

    def _kill_mid_upload(self) -> Fault:
        return self._upload_cut("kill-mid-upload", ".log")

    def _half_written(self) -> Fault:
        return self._upload_cut("half-written", ".index")

    def _upload_cut(self, kind: str, suffix: str) -> Fault:
        """Hold the tiered topic's next upload of a segment's ``suffix`` object at the proxy,
        kill -9 the partition's leader while it waits (a copy in flight: its
        COPY_SEGMENT_STARTED written, its FINISHED never), restart it 8-11 s later, then
        check that uploads resume. Held at its ``.index``, the segment's ``.log`` is in the
        bucket already: the new leader must remove it (Kafka's cleanup of a copy that never
        finished)."""
        proxy = self.proxy
        upload = re.compile(rf"^/[^/]+/({re.escape(self.tiered_topic)}-(\d+)-[^/]+/"
                            rf"\d{{20}}-[^/.]+){re.escape(suffix)}$")
        proxy.held.clear()
        proxy.hold = lambda method, path: method == "PUT" and bool(
            upload.match(path.split("?", 1)[0]))
        deadline = now() + RESUME_TIMEOUT
        while not proxy.held and now() < deadline:
            time.sleep(0.05)
        if not proxy.held:
            proxy.heal()
            f = Fault(kind, f"no upload of {self.tiered_topic} seen", now())
            f.healed = now()
            what = f"{kind}: no upload of {self.tiered_topic} within {RESUME_TIMEOUT:.0f} s"
            f.notes.append(what)
            self.crashes.append((now(), what))
            return f
        stem, partition = upload.match(proxy.held[0][1].split("?", 1)[0]).groups()
        victim = self._leader_of(self.tiered_topic, int(partition))
        lag_before, size_before = self._remote()
        f = self._hold(kind, f"broker {victim} (leader of {self.tiered_topic}-{partition}, "
                       f"uploading {stem}{suffix})",
                       lambda: (self.cluster.kill(victim), proxy.heal()),
                       lambda: self.cluster.restart(victim), (8, 11), victim=victim)
        self._check_resumed(f, lag_before, max(lag_before, self._remote()[0]), size_before)
        if suffix != ".log":
            self._check_removed(f, stem + ".log")
        return f

    def _leader_of(self, topic: str, partition: int, cluster=None) -> int:
        """The partition's leader as ``cluster`` (the one under test by default) says."""
        md = (cluster or self.cluster).metadata_from(topics=[topic])
        return next(p.leader_id for p in md.topics[0].partitions
                    if p.partition_index == partition)

    def _check_removed(self, f: Fault, key: str) -> None:
        """Until the half-written segment's ``key`` is gone from the bucket (within
        RESUME_TIMEOUT of the heal); else a crash."""
        prefix = key.rsplit("/", 1)[0] + "/"
        deadline = f.healed + RESUME_TIMEOUT
        while key in self.bucket.list(prefix):
            if now() > deadline:
                what = f"the half-written segment's {key} was still in the bucket " \
                       f"{RESUME_TIMEOUT:.0f} s after the heal"
                f.notes.append(what)
                self.crashes.append((now(), what))
                return
            time.sleep(0.5)
        f.notes.append(f"the half-written segment's {key.rsplit('/', 1)[1]} was removed "
                       f"{now() - f.healed:.1f} s after the heal")

    # -- cluster links (--mirror) -----------------------------------------------------------------
    def _link_cut(self) -> Fault:
        """The cut held 10-13 s; the mirrors' largest lag in ms just before the heal noted
        (it grows while the source does not answer)."""
        m, lag = self.mirror, []

        def heal():
            lag.append(m.max_lag_ms())
            m.heal()
        f = self._hold("link-cut", "the destination cluster from the source's brokers", m.cut,
                       heal, (10, 13))
        f.notes.append(f"LagMs at most {lag[0]} before the heal")
        return f

    def _source_truncate(self) -> Fault:
        """Cut the link, delete a mirrored partition's records at the source up to its end
        once it is past the mirror's, heal: the partition must be reported stopped within
        `mirror.REPORT_TIMEOUT`, then is resumed (its skipped offsets noted)."""
        m = self.mirror
        # faults-rf2: neither the group's nor transactional (their checks read from offset 0)
        key = self.rng.choice([k for k in m.partitions() if k[0] == "faults-rf2"])
        f = Fault("source-truncate", f"{key[0]}-{key[1]}", now())
        m.cut()
        try:
            mirrored = m.ends(m.dest.bootstrap).get(key, 0)
            deadline = now() + 20
            end = m.ends(m.source.bootstrap)[key]
            while end <= mirrored and now() < deadline:  # the workload writes on meanwhile
                time.sleep(0.5)
                end = m.ends(m.source.bootstrap)[key]
            m.truncate(*key, end)
            self.truncated[key] = max(end, self.truncated.get(key, 0))
            f.notes.append(f"the source's records below {end} deleted, the mirror at "
                           f"{mirrored}")
            time.sleep(self.rng.uniform(2, 4))
        finally:
            m.heal()
        f.healed = now()
        stopped = m.await_stopped(key)
        if stopped is None:
            what = f"source-truncate: {key[0]}-{key[1]} was not reported stopped within " \
                   f"{REPORT_TIMEOUT:.0f} s of the heal (its source's log start passed it)"
            f.notes.append(what)
            self.crashes.append((now(), what))
            return f
        f.notes.append(f"reported stopped {now() - f.healed:.1f} s after the heal "
                       f"({stopped})")
        try:
            f.notes.append(f"resumed, {m.resume(key)} offsets skipped")
        except Exception as e:  # noqa: BLE001 - the command's error, recorded
            what = f"source-truncate: resume-partition {key[0]}-{key[1]} failed: {e}"
            f.notes.append(what)
            self.crashes.append((now(), what))
        return f

    def _kill_dest_leader(self) -> Fault:
        m = self.mirror
        topic, partition = self.rng.choice(m.partitions())
        try:
            victim = self._leader_of(topic, partition, m.dest)
        except (OSError, ConnectionError, StopIteration, IndexError):
            victim = -1
        if victim < 0:
            victim = self.rng.choice(sorted(m.dest.brokers))
        f = self._hold("kill-dest-leader", f"destination broker {victim} (leader of the mirror "
                       f"{topic}-{partition})", lambda: m.dest.kill(victim),
                       lambda: m.dest.restart(victim), (8, 11))
        try:
            m.dest.wait_for_brokers(len(m.dest.brokers), 60)
        except Exception as e:  # noqa: BLE001 - recorded: the destination is not whole
            what = f"kill-dest-leader: the destination was not whole 60 s after the heal: {e}"
            f.notes.append(what)
            self.crashes.append((now(), what))
        return f
