"""What a fault run did and saw, as plain records (times are ``time.time()`` seconds, so they
line up with the brokers' logs). The workload and the nemesis append to a ``History``; the
checker (``faults.checker``) reads it."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Write:
    """One record of an idempotent acks=all producer, value ``f"{producer}-{seq}"``; ``seq``
    grows in the order the producer sent its records."""
    producer: str
    seq: int
    topic: str
    partition: int
    sent: float
    acked: float | None = None  # delivery reported without error
    offset: int | None = None  # the offset the acknowledgement gave
    error: str | None = None  # delivery reported an error: the outcome is unknown

    @property
    def value(self) -> str:
        return f"{self.producer}-{self.seq}"


@dataclass(slots=True)
class Txn:
    """One transaction: its records (topic, partition, value) and how it ended: "committed"
    (commit_transaction returned), "aborted" (abort_transaction returned) or "unknown"."""
    producer: str
    number: int
    values: list[tuple[str, int, str]]
    start: float
    end: float = 0.0
    outcome: str = "unknown"


@dataclass(slots=True)
class Read:
    """A record a read_committed consumer returned."""
    topic: str
    partition: int
    offset: int
    value: str
    at: float


@dataclass(slots=True)
class Commit:
    """A synchronous OffsetCommit of one partition by a group member (``ok``: acknowledged)."""
    member: str
    topic: str
    partition: int
    offset: int
    start: float
    end: float
    ok: bool
    error: str | None = None  # why it was not acknowledged


@dataclass(slots=True)
class OffsetRead:
    """An OffsetFetch answer for one partition of the group (``offset`` None: no committed
    offset)."""
    who: str
    topic: str
    partition: int
    offset: int | None
    start: float
    end: float


@dataclass(slots=True)
class Resume:
    """A group member consuming a partition from an assignment on: the first offset it got and
    every jump inside the assignment (an offset other than the previous one + 1)."""
    member: str
    topic: str
    partition: int
    assigned: float
    first_offset: int | None = None
    first_at: float | None = None
    last_offset: int | None = None
    jumps: list[tuple[int, int, float]] = field(default_factory=list)  # (expected, got, at)


@dataclass(slots=True)
class Fault:
    """One fault: its kind, what it hit, when it was injected, healed (the victim restarted,
    resumed, reconnected) and when the cluster was whole again; ``failover``: seconds from the
    injection until the other brokers named new leaders for every watched partition the victim
    led (None: it led none, or they did not before the heal)."""
    kind: str
    target: str
    injected: float
    healed: float | None = None
    recovered: float | None = None
    failover: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class History:
    writes: list[Write] = field(default_factory=list)
    txns: list[Txn] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)  # the read_committed reader, during the run
    commits: list[Commit] = field(default_factory=list)
    offset_reads: list[OffsetRead] = field(default_factory=list)
    resumes: list[Resume] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    crashes: list[tuple[float, str]] = field(default_factory=list)  # a broker exited by itself
    # the final reads, from offset 0 to the end: {(topic, partition): [(offset, value)]}
    final: dict[tuple[str, int], list[tuple[int, str]]] = field(default_factory=dict)
    final_committed: dict[tuple[str, int], list[tuple[int, str]]] = field(default_factory=dict)
    # the transactional topic read_uncommitted (evidence: is a missing record in the log at all?)
    final_txn_log: dict[tuple[str, int], list[tuple[int, str]]] = field(default_factory=dict)
    unread: list[tuple[str, int]] = field(default_factory=list)  # final read did not finish
    gap_partitions: list[tuple[str, int]] = field(default_factory=list)  # replicated ones
    # --mirror: source partitions whose records below an offset were deleted (source-truncate)
    truncated: dict[tuple[str, int], int] = field(default_factory=dict)
    # --mirror: the final check's anomalies (at, kind, detail) (faults.mirror.Mirror)
    mirror: list[tuple[float, str, str]] = field(default_factory=list)
    end: float = 0.0
