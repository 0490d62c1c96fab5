"""The checker: pure functions over a ``History``, in the spirit of Jepsen's Kafka workload.

Anomaly classes (``CLASSES``):

- ``lost``: acknowledged, absent from the final read;
- ``moved``: present at another offset than the acknowledgement gave (an acknowledgement
  without an offset, as librdkafka reports a DUPLICATE_SEQUENCE_NUMBER answer, gives none);
- ``duplicated``: a value present more than once;
- ``reordered``: a producer's acknowledged records of one partition at offsets out of the
  order it sent them;
- ``aborted-read``: a read_committed consumer returned a record of an aborted transaction;
- ``txn-lost``: a record of a committed transaction absent from the final read_committed read;
- ``offsets-back``: the group's committed offset of a partition went backwards (an
  acknowledged commit below one acknowledged before it, or an OffsetFetch answering less than
  an earlier one);
- ``stale-offset``: OffsetFetch answered less than a commit acknowledged before it was asked;
- ``skip`` / ``replay``: a group member started a partition after / before its committed offset
  (or jumped forward / back inside an assignment);
- ``crashed``: a broker exited without being told to.
- ``mirror-lost`` / ``mirror-diverged`` (``--mirror``): a record acknowledged at the source and
  retained there missing at the destination (or the destination not caught up) / mirror
  batches that differ from the source's at the same offsets (``faults.mirror``).

Besides anomalies: the longest gap without a successful acks=all write after each fault.
"""
from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from dataclasses import dataclass

from josefk.faults.history import Commit, Fault, History, OffsetRead, Resume, Txn, Write

CLASSES = ("lost", "moved", "duplicated", "reordered", "aborted-read", "txn-lost",
           "offsets-back", "stale-offset", "skip", "replay", "crashed", "mirror-lost",
           "mirror-diverged")
NO_FAULT = "none"


@dataclass(frozen=True)
class Anomaly:
    kind: str  # one of CLASSES
    at: float  # when it happened or was seen (time.time())
    detail: str


# -- the records ------------------------------------------------------------------------------
def positions(final) -> dict[str, list[tuple[str, int, int]]]:
    """{value: [(topic, partition, offset), ...]} of a final read."""
    out: dict[str, list] = defaultdict(list)
    for (topic, partition), records in final.items():
        for offset, value in records:
            out[value].append((topic, partition, offset))
    return out


def lost_moved_duplicated(writes: list[Write], final, unread=()) -> list[Anomaly]:
    where = positions(final)
    written = {w.value: w for w in writes}
    skip = set(unread)
    out = []
    for value, places in where.items():
        if len(places) > 1:
            w = written.get(value)
            acked = f"acknowledged at @{w.offset}" if w and w.acked else "not acknowledged"
            out.append(Anomaly("duplicated", (w.acked or w.sent) if w else 0.0,
                               f"{value} at {_places(places)} ({acked})"))
    for w in writes:
        if w.acked is None or (w.topic, w.partition) in skip:
            continue
        places = where.get(w.value)
        acked_at = f"{w.value} acknowledged at {w.topic}-{w.partition}@{w.offset}"
        if not places:
            out.append(Anomaly("lost", w.acked, f"{acked_at}, absent"))
        elif w.offset is not None and (w.topic, w.partition, w.offset) not in places:
            out.append(Anomaly("moved", w.acked, f"{acked_at}, found at {_places(places)}"))
    return out


def _places(places) -> str:
    return ", ".join(f"{t}-{p}@{o}" for t, p, o in places)


def reordered(writes: list[Write], final) -> list[Anomaly]:
    """Per producer and partition, the offsets found must grow with the order of sending."""
    where = positions(final)
    by_stream: dict[tuple, list[Write]] = defaultdict(list)
    for w in writes:
        if w.acked is not None:
            by_stream[(w.producer, w.topic, w.partition)].append(w)
    out = []
    for (producer, topic, partition), ws in by_stream.items():
        ws.sort(key=lambda w: w.seq)
        prev = None
        for w in ws:
            found = [o for t, p, o in where.get(w.value, ()) if (t, p) == (topic, partition)]
            if not found:
                continue
            offset = min(found)
            if prev is not None and offset < prev[1]:
                out.append(Anomaly("reordered", w.acked,
                                   f"{prev[0].value} (sent first) at {topic}-{partition}@"
                                   f"{prev[1]}, {w.value} (sent after it) at @{offset}"))
            if prev is None or offset > prev[1]:
                prev = (w, offset)
    return out


# -- transactions -----------------------------------------------------------------------------
def txn_anomalies(txns: list[Txn], reads, final_committed, unread=(), log=None
                  ) -> list[Anomaly]:
    """Aborted records seen by read_committed readers (during the run, ``reads``, and in the
    final read), and committed records missing from the final read_committed read (``log``,
    the read_uncommitted read, tells whether such a record is in the log at all)."""
    in_log = positions(log or {})
    outcome = {}
    for t in txns:
        for _, _, value in t.values:
            outcome[value] = t
    out = []
    seen_final = set()
    for (topic, partition), records in final_committed.items():
        for offset, value in records:
            seen_final.add(value)
            t = outcome.get(value)
            if t is not None and t.outcome == "aborted":
                out.append(Anomaly("aborted-read", t.end, f"final read_committed read: {value} "
                                   f"at {topic}-{partition}@{offset}, its transaction aborted"))
    for r in reads:
        t = outcome.get(r.value)
        if t is not None and t.outcome == "aborted":
            out.append(Anomaly("aborted-read", r.at, f"read_committed reader: {r.value} at "
                               f"{r.topic}-{r.partition}@{r.offset}, its transaction aborted"))
    skip = set(unread)
    for t in txns:
        if t.outcome != "committed":
            continue
        for topic, partition, value in t.values:
            if value not in seen_final and (topic, partition) not in skip:
                where = (f"in the log at {_places(in_log[value])} but not read_committed"
                         if in_log.get(value) else "not in the log at all")
                out.append(Anomaly("txn-lost", t.end, f"{value} of a committed transaction "
                                   f"absent from {topic}-{partition} ({where})"))
    return out


# -- the consumer group -----------------------------------------------------------------------
class _Committed:
    """Per partition, the highest offset committed by the commits that ended (or began) by
    a given time."""

    def __init__(self, commits: list[Commit], ok_only: bool, by: str):
        self.times: dict[tuple, list[float]] = defaultdict(list)
        self.highest: dict[tuple, list[int]] = defaultdict(list)
        for c in sorted((c for c in commits if c.ok or not ok_only), key=lambda c: getattr(c, by)):
            key = (c.topic, c.partition)
            top = max(self.highest[key][-1], c.offset) if self.highest[key] else c.offset
            self.times[key].append(getattr(c, by))
            self.highest[key].append(top)

    def before(self, topic: str, partition: int, t: float) -> int | None:
        key = (topic, partition)
        i = bisect.bisect_left(self.times[key], t)
        return self.highest[key][i - 1] if i else None


def offset_anomalies(commits: list[Commit], offset_reads: list[OffsetRead]) -> list[Anomaly]:
    """Acknowledged commits that go backwards, OffsetFetch answers below an acknowledged commit
    (stale) or below an earlier answer (backwards)."""
    acked = _Committed(commits, ok_only=True, by="end")
    out = []
    for c in sorted((c for c in commits if c.ok), key=lambda c: c.start):
        before = acked.before(c.topic, c.partition, c.start)
        if before is not None and c.offset < before:
            out.append(Anomaly("offsets-back", c.end, f"{c.member} committed {c.topic}-"
                               f"{c.partition} at {c.offset} (acknowledged) after a commit of "
                               f"{before} was acknowledged"))
    answered = defaultdict(list)  # (topic, partition) -> [(end, offset)] of earlier answers
    for r in sorted(offset_reads, key=lambda r: r.start):
        key = (r.topic, r.partition)
        committed = acked.before(r.topic, r.partition, r.start)
        got = -1 if r.offset is None else r.offset
        if committed is not None and got < committed:
            out.append(Anomaly("stale-offset", r.end, f"OffsetFetch ({r.who}) answered "
                               f"{r.topic}-{r.partition} = {_offset(r.offset)} after a commit "
                               f"of {committed} was acknowledged"))
        else:
            earlier = [o for end, o in answered[key] if end < r.start]
            if earlier and got < max(earlier):
                out.append(Anomaly("offsets-back", r.end, f"OffsetFetch ({r.who}) answered "
                                   f"{r.topic}-{r.partition} = {_offset(r.offset)} after an "
                                   f"answer of {max(earlier)}"))
        answered[key].append((r.end, got))
    return out


def _offset(offset: int | None) -> str:
    return "none" if offset is None else str(offset)


def resume_anomalies(commits: list[Commit], resumes: list[Resume]) -> list[Anomaly]:
    """A member must start a partition at its committed offset: not before the last
    acknowledged commit (replay), not after the highest commit attempted before (skip; an
    unacknowledged commit may have been applied); from the log start (0) if there is none.
    Inside an assignment, offsets follow each other."""
    acked = _Committed(commits, ok_only=True, by="end")
    attempted = _Committed(commits, ok_only=False, by="start")
    out = []
    for r in resumes:
        where = f"{r.member} {r.topic}-{r.partition}"
        if r.first_offset is not None:
            low = acked.before(r.topic, r.partition, r.assigned)
            low = 0 if low is None else low
            high = max(low, attempted.before(r.topic, r.partition, r.first_at) or 0)
            if r.first_offset < low:
                out.append(Anomaly("replay", r.first_at, f"{where} started at {r.first_offset}, "
                                   f"before its acknowledged committed offset {low}"))
            elif r.first_offset > high:
                out.append(Anomaly("skip", r.first_at, f"{where} started at {r.first_offset}, "
                                   f"after its committed offset {high}"))
        for expected, got, at in r.jumps:
            kind = "skip" if got > expected else "replay"
            out.append(Anomaly(kind, at, f"{where} got offset {got} after {expected - 1} "
                                         f"inside one assignment"))
    return out


def _deleted(w: Write, truncated: dict) -> bool:
    """Whether ``w`` was in a partition's records a source-truncate fault deleted (at an
    offset below it, or at one not known)."""
    below = truncated.get((w.topic, w.partition))
    return below is not None and (w.offset is None or w.offset < below)


def check(h: History) -> list[Anomaly]:
    """Every anomaly of the history, in time order."""
    writes = [w for w in h.writes if not _deleted(w, h.truncated)]
    out = (lost_moved_duplicated(writes, h.final, h.unread) + reordered(writes, h.final)
           + txn_anomalies(h.txns, h.reads, h.final_committed, h.unread, h.final_txn_log)
           + offset_anomalies(h.commits, h.offset_reads) + resume_anomalies(h.commits, h.resumes)
           + [Anomaly("crashed", at, what) for at, what in h.crashes]
           + [Anomaly(kind, at, what) for at, kind, what in h.mirror])
    return sorted(out, key=lambda a: a.at)


# -- availability ----------------------------------------------------------------------------
def longest_silence(times, since: float, until: float) -> float:
    """The longest stretch from ``since`` to ``until`` with none of ``times`` (acknowledgements,
    say) in it."""
    points = [since] + sorted(t for t in times if since < t < until) + [until]
    return max(b - a for a, b in zip(points, points[1:]))


def write_gaps(writes: list[Write], faults: list[Fault], partitions, end: float
               ) -> list[tuple[float, tuple[str, int]] | None]:
    """For each fault, the longest time without a successful acks=all write on any of
    ``partitions`` while it lasted (from its injection until the cluster was whole again, else
    until the next fault or ``end``), and that partition; None if there are no partitions.

    "Without a successful write" from time t: until the first acknowledgement of a record sent
    at or after t, or the next fault's injection, or ``end``, whichever comes first; from the
    injection on, so a stall that began before the fault does not count, and a stall that began
    during it does."""
    streams: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for w in writes:
        if w.acked is not None:
            streams[(w.topic, w.partition)].append((w.sent, w.acked))
    first_ack = {}  # partition -> (sent times, earliest ack of the records sent from then on)
    for key, pairs in streams.items():
        pairs.sort()
        suffix = [0.0] * len(pairs)
        low = float("inf")
        for i in range(len(pairs) - 1, -1, -1):
            low = min(low, pairs[i][1])
            suffix[i] = low
        first_ack[key] = ([s for s, _ in pairs], suffix)
    order = sorted(faults, key=lambda f: f.injected)
    out = []
    for f in faults:
        later = [g.injected for g in order if g.injected > f.injected]
        limit = later[0] if later else end
        until = min(f.recovered or limit, limit)
        worst = None
        for key in partitions:
            sent, suffix = first_ack.get(key, ([], []))
            i = bisect.bisect_left(sent, f.injected)
            # from the injection, then from just after each record sent before ``until``
            starts = [(f.injected, i)] + [(sent[j], j + 1) for j in
                                          range(i, bisect.bisect_left(sent, until))]
            for t, k in starts:
                gap = min(suffix[k] if k < len(sent) else limit, limit) - t
                if worst is None or gap > worst[0]:
                    worst = (gap, key)
        out.append(worst)
    return out


# -- the report ------------------------------------------------------------------------------
def kind_at(t: float, faults: list[Fault]) -> str:
    """The kind of the last fault injected at or before ``t`` (``NO_FAULT`` before the first)."""
    times = [f.injected for f in faults]
    i = bisect.bisect_right(times, t)
    return faults[i - 1].kind if i else NO_FAULT


@dataclass
class Row:
    kind: str
    faults: int
    acked: int
    anomalies: dict[str, int]
    gap_median: float | None
    gap_worst: float | None
    failover_median: float | None = None
    failover_worst: float | None = None
    commits_failed: int = 0


def summarize(h: History, anomalies: list[Anomaly], gaps, kinds) -> list[Row]:
    """One row per fault kind (in ``kinds`` order, then ``NO_FAULT``: before the first fault):
    faults injected, records acknowledged while it was the last fault, offset commits that
    failed (by when they were sent: a coordinator that stops serving shows here), anomalies by
    class (by when they happened) and the write gaps after its faults (median, worst)."""
    faults = sorted(h.faults, key=lambda f: f.injected)
    rows = {k: Row(k, 0, 0, dict.fromkeys(CLASSES, 0), None, None)
            for k in (*kinds, NO_FAULT)}
    per_kind, failovers = defaultdict(list), defaultdict(list)
    for f, g in zip(h.faults, gaps):
        rows[f.kind].faults += 1
        if g is not None:
            per_kind[f.kind].append(g[0])
        if f.failover is not None:
            failovers[f.kind].append(f.failover)
    for w in h.writes:
        if w.acked is not None:
            rows[kind_at(w.acked, faults)].acked += 1
    for c in h.commits:
        if not c.ok:
            rows[kind_at(c.start, faults)].commits_failed += 1
    for a in anomalies:
        rows[kind_at(a.at, faults)].anomalies[a.kind] += 1
    for kind, values in per_kind.items():
        rows[kind].gap_median = statistics.median(values)
        rows[kind].gap_worst = max(values)
    for kind, values in failovers.items():
        rows[kind].failover_median = statistics.median(values)
        rows[kind].failover_worst = max(values)
    return list(rows.values())


def format_table(rows: list[Row]) -> str:
    head = ["fault", "faults", "acked", "commits failed", *CLASSES, "gap p50 s", "gap max s",
            "failover p50 s", "failover max s"]
    total = Row("total", sum(r.faults for r in rows), sum(r.acked for r in rows),
                {c: sum(r.anomalies[c] for r in rows) for c in CLASSES}, None, None,
                commits_failed=sum(r.commits_failed for r in rows))
    lines = [[r.kind, str(r.faults), str(r.acked), str(r.commits_failed),
              *(str(r.anomalies[c]) for c in CLASSES),
              _secs(r.gap_median), _secs(r.gap_worst), _secs(r.failover_median),
              _secs(r.failover_worst)] for r in [*rows, total]]
    widths = [max(len(x) for x in col) for col in zip(head, *lines)]
    fmt = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(line) for line in lines])


def _secs(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
