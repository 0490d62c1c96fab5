"""KIP-848's server-side assignors, ``uniform`` and ``range``: the group coordinator computes a
consumer group's target assignment with one of them (``group.remote.assignor`` on the client,
``group.consumer.assignors`` on the broker, whose first entry is the default).

An assignor maps every member to the partitions it should own, from each member's subscribed
topics (by id) and the target assignment it had before, and the partition count of each topic::

    assign(members: {member id: MemberSpec}, partitions: {topic id: count})
        -> {member id: {topic id: frozenset(partitions)}}

``uniform`` balances the number of partitions per member and keeps every partition where it was
whenever balance allows (so a rebalance moves as few partitions as possible); ``range`` gives
each member contiguous ranges of every topic it subscribes to, the same partition numbers of
co-partitioned topics, ordered by instance id (static members first) then member id.

Must not know: records, timers or the group's state; the inputs are plain values.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable, Mapping

Partitions = Mapping[uuid.UUID, frozenset]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    instance_id: str | None
    topics: frozenset                     # subscribed topic ids
    assignment: Partitions = field(default_factory=dict)   # the current target assignment


def uniform(members: dict[str, MemberSpec], partitions: dict) -> dict[str, dict]:
    if not members:
        return {}
    if len({m.topics for m in members.values()}) == 1:
        return _uniform_homogeneous(members, partitions)
    return _uniform_heterogeneous(members, partitions)


def _valid(members, partitions, mid):
    """The partitions of ``mid``'s previous assignment it may keep: of topics it still
    subscribes to, that still exist with that partition."""
    m = members[mid]
    return [(t, p) for t, ps in m.assignment.items() if t in m.topics and t in partitions
            for p in sorted(ps) if p < partitions[t]]


def _uniform_homogeneous(members, partitions):
    topics = sorted((t for t in next(iter(members.values())).topics if t in partitions), key=str)
    every = [(t, p) for t in topics for p in range(partitions[t])]
    quota, extra = divmod(len(every), len(members))
    kept = {mid: _valid(members, partitions, mid) for mid in members}
    # the members that already hold the most get the extra partitions: fewer move
    order = sorted(members, key=lambda mid: (-len(kept[mid]), mid))
    taken: set = set()
    owned: dict[str, list] = {}
    for i, mid in enumerate(order):
        want = quota + (i < extra)
        mine = owned[mid] = []
        for tp in kept[mid]:
            if len(mine) < want and tp not in taken:
                mine.append(tp)
                taken.add(tp)
    free = iter(tp for tp in every if tp not in taken)
    for i, mid in enumerate(order):
        want = quota + (i < extra)
        mine = owned[mid]
        while len(mine) < want:
            mine.append(next(free))
    return {mid: _grouped(tps) for mid, tps in owned.items()}


def _uniform_heterogeneous(members, partitions):
    subscribers = {t: sorted(mid for mid, m in members.items() if t in m.topics)
                   for t in partitions}
    count = dict.fromkeys(members, 0)
    owner: dict = {}
    for mid in sorted(members):
        for tp in _valid(members, partitions, mid):
            if tp not in owner:
                owner[tp] = mid
                count[mid] += 1
    # topics fewer members can take are placed first, each partition on the least loaded
    for t in sorted(subscribers, key=lambda t: (len(subscribers[t]), str(t))):
        subs = subscribers[t]
        for p in range(partitions[t] if subs else 0):
            if (t, p) not in owner:
                mid = min(subs, key=lambda m: (count[m], m))
                owner[(t, p)] = mid
                count[mid] += 1
    while _move_one_along_a_chain(members, owner, count):
        pass
    owned: dict[str, list] = {mid: [] for mid in members}
    for tp, mid in owner.items():
        owned[mid].append(tp)
    return {mid: _grouped(tps) for mid, tps in owned.items()}


def _move_one_along_a_chain(members, owner, count) -> bool:
    """Give one more partition to a least loaded member, taken from a member with at least two
    more, through a chain of members each giving one partition to the previous one (every
    member may only take partitions of topics it subscribes to). False when no such chain
    exists: the assignment is as balanced as the subscriptions allow."""
    held: dict = {}   # topic id -> {member: one partition of that topic it owns}
    for tp, mid in sorted(owner.items(), key=lambda x: (str(x[0][0]), x[0][1])):
        held.setdefault(tp[0], {}).setdefault(mid, tp)
    most = max(count.values())
    for start in sorted(members, key=lambda m: (count[m], m)):
        if count[start] + 2 > most:
            return False
        came_from = {start: None}   # member -> (member it gives to, partition it gives)
        queue = [start]
        for cur in queue:
            for t in sorted(members[cur].topics, key=str):
                for giver, tp in held.get(t, {}).items():
                    if giver in came_from:
                        continue
                    came_from[giver] = (cur, tp)
                    if count[giver] >= count[start] + 2:
                        node = giver
                        while came_from[node] is not None:
                            taker, moved = came_from[node]
                            owner[moved] = taker
                            node = taker
                        count[giver] -= 1
                        count[start] += 1
                        return True
                    queue.append(giver)
    return False


def range_assignor(members: dict[str, MemberSpec], partitions: dict) -> dict[str, dict]:
    order = sorted(members, key=lambda mid: (members[mid].instance_id is None,
                                             members[mid].instance_id or "", mid))
    owned: dict[str, list] = {mid: [] for mid in members}
    for t, count in partitions.items():
        subs = [mid for mid in order if t in members[mid].topics]
        if not subs:
            continue
        quota, extra = divmod(count, len(subs))
        start = 0
        for i, mid in enumerate(subs):
            end = start + quota + (i < extra)
            owned[mid] += [(t, p) for p in range(start, end)]
            start = end
    return {mid: _grouped(tps) for mid, tps in owned.items()}


def _grouped(tps) -> dict:
    out: dict = {}
    for t, p in tps:
        out.setdefault(t, set()).add(p)
    return {t: frozenset(ps) for t, ps in out.items()}


ASSIGNORS: dict[str, Callable] = {"uniform": uniform, "range": range_assignor}

# Kafka's group.consumer.assignors also takes the assignors' class names
CLASS_NAMES = {"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
               "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


def assignor_names(configured: str) -> list[str]:
    """The names of the assignors in a ``group.consumer.assignors`` value, in its order;
    ValueError for one that is not ``uniform`` or ``range`` (or their class names)."""
    names = []
    for item in (s.strip() for s in configured.split(",")):
        if not item:
            continue
        name = CLASS_NAMES.get(item, item)
        if name not in ASSIGNORS:
            raise ValueError(f"group.consumer.assignors: unknown assignor {item!r} "
                             f"(known: {', '.join(ASSIGNORS)})")
        names.append(name)
    if not names:
        raise ValueError("group.consumer.assignors must name at least one assignor")
    return names
