"""The fault harness's mirror mode (``--mirror``, issue 30): a destination cluster of three
brokers (on the run's ZooKeeper, chroot ``/josefk-mirror``) mirroring the workload's topics
from the run's cluster over two cluster links at once, the link nemeses (`nemesis.MIRROR_KINDS`)
and the final check: every partition caught up with its source, holding the source's batches
at the source's offsets from the source's log start on (compared batch by batch, so nothing
is missing or duplicated), and every record acknowledged at the source and retained there
present at the destination at its offset.

The destination's brokers run in cgroups of the run's partitioner (``dest-<id>``), so a link
cut drops what they send to the source's brokers (`cut`); the source's brokers still reach
them.
"""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from josefk.faults.processes import BROKER_PYTHON, QUICK_FAILOVER, REPO_ROOT, LocalCluster

now = time.time
SIZE = 3
CHROOT = "/josefk-mirror"
# link -> the source topics it mirrors (the faults-* topics of harness.TOPICS)
LINKS = {"faults-a": ("faults-rf2",), "faults-b": ("faults-txn", "faults-rf1")}
LINK_CONFIG = {"metadata.max.age.ms": "3000", "topic.config.sync.ms": "5000"}
OVERRIDES = {**QUICK_FAILOVER, "min.insync.replicas": 2, "log.segment.bytes": 8 << 20}
CATCH_UP_TIMEOUT = 120.0
REPORT_TIMEOUT = 30.0
_SKIPPED = re.compile(r"SkippedOffsets: (\d+)")
_LAG_MS = re.compile(r"\tLagMs: (\d+)\t")
_PARTITION = re.compile(r"^\tTopic: (\S+)\tPartition: (\d+)\tState: (ACTIVE|STOPPED \((.*)\))\t",
                        re.M)


class MirrorError(RuntimeError):
    pass


def cli(*args: str, timeout: float = 120) -> str:
    """``josefk mirror ARGS``, as an operator runs it; its output, or MirrorError with its
    error."""
    try:
        done = subprocess.run([BROKER_PYTHON, "-m", "josefk", "mirror", *args],
                              cwd=str(REPO_ROOT), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MirrorError(f"josefk mirror {args[0]}: no answer in {timeout:.0f} s") from None
    if done.returncode:
        raise MirrorError(f"josefk mirror {args[0]}: {done.stderr.strip()[-500:]}")
    return done.stdout


def read_batches(bootstrap: str, topic: str, partition: int, start: int, end: int) -> list:
    """``[(base offset, bytes)]`` of the partition's batches holding offsets start..end-1,
    read_uncommitted, each with its partitionLeaderEpoch (bytes 12-15, every leader's own,
    outside the CRC) zeroed."""
    from josefk.tools.tool_client import ClusterClient
    from josefk.wire.batch import iter_headers

    out, offset = [], start
    with ClusterClient(bootstrap, "josefk-faults") as c:
        c.refresh([topic])
        stalls = 0
        while offset < end and stalls < 5:
            (_t, _p, records, _hwm, _a), = c.fetch({(topic, partition): offset},
                                                   max_wait_ms=0, read_committed=False,
                                                   max_bytes=4 << 20)
            moved = False
            for h in iter_headers(records or b""):
                if h.last_offset < offset:
                    continue
                batch = bytearray(records[h.pos:h.pos + h.size])
                batch[12:16] = bytes(4)
                out.append((h.base_offset, bytes(batch)))
                offset, moved = h.last_offset + 1, True
            stalls = 0 if moved else stalls + 1
    return out


class Mirror:
    """The destination cluster, its links and mirror topics, of a run whose cluster
    ``source`` is started."""

    def __init__(self, root: Path, source: LocalCluster):
        self.source = source
        self.dest = LocalCluster(root, SIZE, overrides=OVERRIDES,
                                 zk_connect=source.zookeeper.connect_string + CHROOT)
        if source.partitioner is not None:
            for i, b in self.dest.brokers.items():
                b.launcher = source.partitioner.launcher(f"dest-{i}")
        self.topics = [(link, t) for link, topics in LINKS.items() for t in topics]

    @property
    def cut_unavailable(self) -> str | None:
        return self.source.isolation_unavailable

    def start(self) -> None:
        """The destination, its links and a mirror topic (replication factor 3) of each
        topic; the source's topics exist."""
        self.dest.start()
        dest = self.dest.bootstrap
        for link in LINKS:
            cli("create-link", "--bootstrap-server", dest, "--link", link, "--config",
                f"bootstrap.servers={self.source.bootstrap}",
                *[a for k, v in LINK_CONFIG.items() for a in ("--config", f"{k}={v}")])
        for link, topic in self.topics:
            cli("create-topic", "--bootstrap-server", dest, "--link", link, "--topic", topic,
                "--replication-factor", str(SIZE))

    def stop(self) -> None:
        self.dest.stop()

    def partitions(self) -> list[tuple[str, int]]:
        from josefk.faults.harness import TOPICS

        counts = {f"faults-{name}": n for name, n, *_ in TOPICS}
        return [(t, p) for _link, t in self.topics for p in range(counts[t])]

    # -- faults --------------------------------------------------------------------------------
    def cut(self) -> None:
        """Drop everything the destination's brokers send to the source's brokers."""
        ports = [p for b in self.source.brokers.values() for p in b.ports]
        for i in self.dest.brokers:
            self.source.partitioner.cut(f"dest-{i}", [], {}, servers=ports)

    def heal(self) -> None:
        self.source.partitioner.heal()

    def status(self) -> dict[tuple[str, int], str | None]:
        """Why each mirror partition stopped (None: it mirrors), from ``josefk mirror
        list-links``."""
        return {(t, int(p)): why or None for t, p, _state, why in
                _PARTITION.findall(cli("list-links", "--bootstrap-server", self.dest.bootstrap,
                                       timeout=30))}

    def ends(self, bootstrap: str, earliest: bool = False) -> dict[tuple[str, int], int]:
        from josefk.tools.tool_client import ClusterClient

        out = {}
        with ClusterClient(bootstrap, "josefk-faults") as c:
            for _link, t in self.topics:
                c.refresh([t])
                for p, o in c.list_offsets(t, c.partitions(t), -2 if earliest else -1).items():
                    out[t, p] = o
        return out

    def truncate(self, topic: str, partition: int, offset: int) -> None:
        """DeleteRecords at the source: ``topic``-``partition`` starts at ``offset``."""
        from josefk.tools.tool_client import ClusterClient
        from josefk.wire.apis import DELETE_RECORDS

        R = DELETE_RECORDS.Request
        with ClusterClient(self.source.bootstrap, "josefk-faults") as c:
            c.refresh([topic])
            p = c.leader(topic, partition).request(DELETE_RECORDS, timeout_ms=30000, topics=[
                R.DeleteRecordsTopic(name=topic, partitions=[R.DeleteRecordsPartition(
                    partition_index=partition, offset=offset)])]).topics[0].partitions[0]
        if p.error_code:
            raise MirrorError(f"DeleteRecords {topic}-{partition} at {offset}: error "
                              f"{p.error_code}")

    def max_lag_ms(self) -> int | None:
        """The largest LagMs ``josefk mirror list-links`` shows (None: no answer)."""
        try:
            lags = _LAG_MS.findall(cli("list-links", "--bootstrap-server", self.dest.bootstrap,
                                       timeout=30))
        except MirrorError:
            return None
        return max((int(x) for x in lags), default=None)

    def await_stopped(self, key: tuple[str, int], timeout: float = REPORT_TIMEOUT):
        """Why the partition stopped, once it is reported (None: not within ``timeout``)."""
        deadline = now() + timeout
        while now() < deadline:
            try:
                why = self.status().get(key)
            except MirrorError:
                why = None
            if why is not None:
                return why
            time.sleep(0.5)
        return None

    def resume(self, key: tuple[str, int]) -> int:
        """``josefk mirror resume-partition`` of ``key``; the offsets it skipped."""
        link = next(link for link, t in self.topics if t == key[0])
        out = cli("resume-partition", "--bootstrap-server", self.dest.bootstrap, "--link", link,
                  "--topic", key[0], "--partition", str(key[1]), "--timeout", "60")
        found = _SKIPPED.search(out)
        return int(found.group(1)) if found else 0

    # -- the final check -----------------------------------------------------------------------
    def final_check(self, writes) -> tuple[list[tuple[float, str, str]], list[str]]:
        """``(anomalies, notes)``: anomalies ``(at, kind, detail)``, kinds ``mirror-lost`` (a
        record acknowledged at the source and retained there, missing at the destination, or
        the destination not caught up) and ``mirror-diverged`` (batches that differ from the
        source's, at the same offsets)."""
        src, dest = self.source.bootstrap, self.dest.bootstrap
        deadline = now() + CATCH_UP_TIMEOUT
        ends = self.ends(src)
        while now() < deadline:
            try:
                if self.ends(dest) == ends:
                    break
            except (OSError, ConnectionError):
                pass  # a leader moving: asked again
            time.sleep(1.0)
        dest_ends, starts = self.ends(dest), self.ends(src, earliest=True)
        anomalies, notes = [], []
        records = {}
        for key in self.partitions():
            t, p = key
            if dest_ends.get(key, 0) < ends[key]:
                anomalies.append((now(), "mirror-lost", f"{t}-{p}: the destination ends at "
                                  f"{dest_ends.get(key)}, the source at {ends[key]}, "
                                  f"{CATCH_UP_TIMEOUT:.0f} s after the workload"))
            theirs = read_batches(src, t, p, starts[key], ends[key])
            ours = read_batches(dest, t, p, starts[key], ends[key])
            if ours != theirs:
                at = next((a[0] for a, b in zip(ours, theirs) if a != b),
                          min(len(ours), len(theirs)))
                anomalies.append((now(), "mirror-diverged", f"{t}-{p}: the destination's "
                                  f"batches differ from the source's from batch {at} on "
                                  f"({len(ours)} batches against {len(theirs)})"))
            records[key] = _values(ours)
            notes.append(f"{t}-{p}: {len(theirs)} batches from offset {starts[key]} to "
                         f"{ends[key]} compared")
        for w in writes:
            key = (w.topic, w.partition)
            if (key in records and w.acked is not None and w.offset is not None
                    and w.offset >= starts[key] and records[key].get(w.offset) != w.value):
                anomalies.append((now(), "mirror-lost", f"{w.value} acknowledged at "
                                  f"{w.topic}-{w.partition} offset {w.offset}, at the "
                                  f"destination: {records[key].get(w.offset)}"))
        return anomalies, notes


def _values(batches) -> dict[int, str]:
    from josefk.wire.batch import iter_headers
    from josefk.wire.records import iter_records

    out = {}
    for _base, data in batches:
        for h in iter_headers(data):
            if not h.is_control:
                for r in iter_records(data, h):
                    out[r.offset] = None if r.value is None else bytes(r.value).decode(
                        errors="replace")
    return out
