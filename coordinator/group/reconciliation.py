"""How a consumer group member moves from its current assignment to its target (Kafka's
CurrentAssignmentBuilder): the reconciliation rules of KIP-848.

A partition reaches a member only once its previous owner released it. A member that must give
partitions up first stays at its epoch in UNREVOKED_PARTITIONS with them pending revocation,
until a heartbeat no longer lists them as owned; only then does it move to the next epoch. A
member whose new partitions are still owned elsewhere moves to the target epoch with the free
ones and waits for the rest in UNRELEASED_PARTITIONS. Otherwise it is STABLE at the target
epoch.

Pure functions over plain values: ``coordinator.group.consumer_groups`` calls them and writes the
result.
"""
from __future__ import annotations

from typing import Callable

from ..runtime import errors
from .consumer_group import (STABLE_MEMBER, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, ApiError,
                             MemberAssignment)


def reconcile(current: MemberAssignment, target_epoch: int, target: dict,
              partition_epoch: Callable[[object, int], int], owned) -> MemberAssignment:
    """The member's next assignment state. ``target``: {topic id: partitions} it should own at
    ``target_epoch``; ``partition_epoch(topic id, partition)``: the epoch of the partition's
    current owner, -1 when free; ``owned``: {topic id: partitions} the member reported owning
    in this heartbeat, None when it did not say."""
    state = current.state
    if state == STABLE_MEMBER:
        if current.epoch == target_epoch:
            return current
        return _next(current, current.epoch, target_epoch, target, partition_epoch, owned)
    if state == UNREVOKED_PARTITIONS:
        if _still_owns(owned, current.revoking):
            return current
        return _next(current, current.epoch + 1, target_epoch, target, partition_epoch, owned)
    if state == UNRELEASED_PARTITIONS:
        return _next(current, current.epoch, target_epoch, target, partition_epoch, owned)
    # UNKNOWN_MEMBER_STATE (one a newer version wrote): start again from nothing
    if owned is None or any(owned.values()):
        raise ApiError(errors.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown "
                       "state. The member must abandon all its partitions and rejoin.")
    return _next(current, target_epoch, target_epoch, target, partition_epoch, owned)


def _still_owns(owned, revoking: dict) -> bool:
    """Whether the member still holds one of ``revoking``; a member that did not report what
    it owns holds them all."""
    if owned is None:
        return True
    return any(not revoking.get(t, frozenset()).isdisjoint(ps) for t, ps in owned.items())


def _next(current, epoch, target_epoch, target, partition_epoch, owned) -> MemberAssignment:
    assigned, revoking, pending = {}, {}, {}
    unreleased = False
    for t in set(target) | set(current.assigned):
        want = target.get(t, frozenset())
        have = current.assigned.get(t, frozenset())
        keep = have & want
        if keep:
            assigned[t] = keep
        if have - keep:
            revoking[t] = have - keep
        free = {p for p in want - keep if partition_epoch(t, p) == -1}
        unreleased = unreleased or len(free) < len(want - keep)
        if free:
            pending[t] = frozenset(free)
    if revoking and _still_owns(owned, revoking):
        # give the partitions up first, at the current epoch
        return MemberAssignment(epoch, current.epoch,
                                UNREVOKED_PARTITIONS, assigned, revoking)
    for t, ps in pending.items():
        assigned[t] = assigned.get(t, frozenset()) | ps
    return MemberAssignment(target_epoch, current.epoch,
                            UNRELEASED_PARTITIONS if unreleased else STABLE_MEMBER, assigned, {})

