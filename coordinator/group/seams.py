"""The written interfaces between the parts of the group coordinator.

::

    GroupCoordinator (group_coordinator)   the API the broker calls; wires the parts together
      ├── Membership (membership)          join / sync / heartbeat / leave, timers
      │      └── needs a GroupMetadataWriter ........ implemented by GroupStore
      ├── OffsetManager (offset_manager)   commit / fetch / delete / expire offsets
      │      └── needs MemberSessions ............... implemented by Membership
      ├── GroupStore (group_store)         group metadata records; loads partitions
      └── ConsumerGroups (consumer_groups) the consumer group protocol (KIP-848)
             └── needs a TopicsView ..................... implemented by the broker
    all of them share one GroupCatalog (group_catalog): groups, ownership, clock, tasks
"""
from __future__ import annotations

from typing import Awaitable, Protocol

from .group import GroupMetadata, MemberMetadata


class GroupMetadataWriter(Protocol):
    """Persists a group's membership (its GroupMetadata record on ``__consumer_offsets``)."""

    def store_group(self, group: GroupMetadata, assignment: dict) -> Awaitable[int]:
        """Append the group's current generation with ``assignment`` (member id -> bytes);
        resolves to a Kafka error code (NONE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE...)."""
        ...


class MemberSessions(Protocol):
    """The member timers the offset manager must touch without knowing the state machine."""

    def extend_session(self, group: GroupMetadata, member: MemberMetadata) -> None:
        """The member showed it is alive (an offset commit counts like a heartbeat)."""
        ...

    def cancel_timers(self, group: GroupMetadata) -> None:
        """Stop every timer of a group that is going away (deleted, expired to Dead)."""
        ...


class TopicsView(Protocol):
    """The cluster's topics, as the consumer group protocol assigns them (by id)."""

    version: int
    """Goes up whenever a topic is created or deleted (regular expressions resolve again)."""

    def get(self, name: str):
        """(topic id, partition count) of topic ``name``, None when it does not exist."""
        ...

    def name_of(self, topic_id) -> str | None:
        ...

    def names(self):
        """The names of every topic a regular expression may match (no internal topic)."""
        ...
