"""What the rooms above ask of the replica manager about this broker's leaderships, as
protocols (`replica.ReplicaManager` implements them): the transaction markers and the
coordinators' topics need a partition it leads, share-partitions also whether that leadership
is fenced."""
from __future__ import annotations

from typing import Protocol


class Leaders(Protocol):
    def leader_partition(self, topic: str, index: int):
        """The partition if this broker leads it, else None."""

    def not_hosted_error(self, topic: str, index: int) -> int:
        """The error to answer for a partition this broker does not lead."""


class FencedLeaders(Leaders, Protocol):
    def fenced_leader(self, topic: str, index: int) -> bool:
        """True while this broker's leadership of the partition may have moved unseen."""
