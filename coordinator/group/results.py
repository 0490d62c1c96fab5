"""Plain result objects returned by the GroupCoordinator (no wire classes)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

NO_GENERATION = -1
NO_LEADER = ""
NO_PROTOCOL = ""


@dataclass(slots=True)
class JoinResult:
    """JoinGroup answer. ``members`` (member_id, group_instance_id, metadata) is filled only for
    the leader. ``protocol_type``/``protocol_name`` are None on errors (nullable in v7+)."""
    error: int
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = NO_LEADER
    member_id: str = ""
    members: list = field(default_factory=list)
    skip_assignment: bool = False

    @classmethod
    def error_result(cls, member_id: str, error: int) -> "JoinResult":
        return cls(error=error, member_id=member_id)


@dataclass(slots=True)
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""

    @classmethod
    def error_result(cls, error: int) -> "SyncResult":
        return cls(error=error)


@dataclass(slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error: int


@dataclass(slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes      # empty unless the group is Stable
    assignment: bytes    # empty unless the group is Stable


@dataclass(slots=True)
class GroupDescription:
    """DescribeGroups entry. An unknown group is reported as state "Dead" with error NONE, like
    Kafka; a group this coordinator cannot answer for has the error and state ""."""
    group_id: str
    error: int
    state: str
    protocol_type: str
    protocol: str
    members: list = field(default_factory=list)   # list[MemberDescription]


@dataclass(slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"   # "consumer": a KIP-848 consumer group


class OffsetFetchPartition(NamedTuple):
    """One OffsetFetch answer; a tuple (offset, leader_epoch, metadata, error)."""
    offset: int
    leader_epoch: int
    metadata: str
    error: int



@dataclass(slots=True)
class ConsumerHeartbeatResult:
    """ConsumerGroupHeartbeat answer; ``assignment`` {topic id: partitions} only when the
    member must be told its assignment (None otherwise)."""
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict | None = None


@dataclass(slots=True)
class ConsumerMemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    topic_names: list
    topic_regex: str | None
    assignment: list          # [(topic id, topic name, sorted partitions)]
    target_assignment: list   # likewise
    classic: bool             # joined with JoinGroup (the classic protocol)


@dataclass(slots=True)
class ConsumerGroupDescription:
    """ConsumerGroupDescribe entry."""
    group_id: str
    error: int
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: list = field(default_factory=list)   # list[ConsumerMemberDescription]
