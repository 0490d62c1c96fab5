"""Replica placement: which brokers hold the replicas of each partition of a new topic (or of
partitions added to one), and checks on an assignment a client gives explicitly.

Pure functions over broker ids and racks, with the randomness passed in, so the controller's
decisions are testable without a cluster. The algorithm is Kafka's (ZooKeeper mode), so replicas
land where an operator used to Kafka expects them:

* Without racks, brokers in id order. Partition ``p``'s first replica (its preferred leader) is
  ``brokers[(start + p) % n]`` for a random ``start``, so leaders go round-robin. Follower ``j``
  sits ``1 + (shift + j) % (n - 1)`` places after the leader; ``shift`` starts random and grows by
  one each time the partitions wrap around the brokers, so the followers of a broker's partitions
  are spread over the other brokers instead of always being its neighbours.
* With racks (every broker must have one), the same walk over a list that alternates racks
  (rack1's first broker, rack2's first, ..., rack1's second, ...), and a candidate follower is
  skipped while its rack already holds a replica of the partition and some rack holds none, or
  while it already holds one and some broker holds none: replicas land on distinct racks first.
"""
from __future__ import annotations

import random
from typing import Iterable, Mapping

from josefk.wire import errors


class PlacementError(Exception):
    """A placement request that cannot be satisfied; ``code`` is the Kafka error code to answer
    with (CreateTopics / CreatePartitions), ``message`` the error message Kafka gives."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"PlacementError({errors.name(self.code)}, {self.message!r})"


def _broker_racks(brokers) -> dict[int, str | None]:
    """Accept ``{id: rack or None}`` or an iterable of ids (no racks). An empty rack is no rack."""
    if isinstance(brokers, Mapping):
        return {int(b): (r or None) for b, r in brokers.items()}
    return {int(b): None for b in brokers}


def rack_alternated_brokers(broker_racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered by taking one from each rack in turn (racks sorted by name, brokers of a
    rack by id): {1:a, 2:a, 3:b, 4:c, 5:c} -> [1, 3, 4, 2, 5]."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker)
    queues = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    out: list[int] = []
    depth = 0
    while len(out) < len(broker_racks):
        for q in queues:
            if depth < len(q):
                out.append(q[depth])
        depth += 1
    return out


def _follower_index(first_index: int, shift: int, follower: int, n: int) -> int:
    """Index of the ``follower``-th follower, ``1 + (shift + follower) % (n - 1)`` places after
    the leader: never the leader itself, and distinct for distinct ``follower`` < n - 1."""
    return (first_index + 1 + (shift + follower) % (n - 1)) % n


def assign_replicas(brokers, num_partitions: int, replication_factor: int, start_partition: int = 0,
                    fixed_start_index: int = -1, start_shift: int = -1,
                    rng=random) -> dict[int, list[int]]:
    """Replicas for partitions ``start_partition`` .. ``start_partition + num_partitions - 1``.

    ``brokers``: ``{broker id: rack or None}`` (or just ids) of the brokers to use, typically the
    live ones. ``fixed_start_index`` >= 0 fixes the first leader's index in the broker order (and,
    as in Kafka, the initial follower shift too, unless ``start_shift`` >= 0 says otherwise);
    otherwise both are drawn from ``rng`` (anything with ``randrange``, e.g. ``random.Random(7)``).
    Returns ``{partition: [leader, follower, ...]}``.

    Raises ``PlacementError``: INVALID_PARTITIONS (no partitions), INVALID_REPLICATION_FACTOR
    (factor < 1 or more than the brokers), UNKNOWN_SERVER_ERROR (some brokers have a rack and some
    don't: Kafka's AdminOperationException, which it answers with that code)."""
    racks = _broker_racks(brokers)
    if num_partitions <= 0:
        raise PlacementError(errors.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise PlacementError(errors.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if replication_factor > len(racks):
        raise PlacementError(errors.INVALID_REPLICATION_FACTOR,
                             f"Replication factor: {replication_factor} larger than available "
                             f"brokers: {len(racks)}.")
    with_rack = sum(1 for r in racks.values() if r is not None)
    if with_rack == 0:
        order = sorted(racks)
        rack_of = None
    elif with_rack == len(racks):
        order = rack_alternated_brokers(racks)
        rack_of = racks
    else:
        raise PlacementError(errors.UNKNOWN_SERVER_ERROR,
                             "Not all brokers have rack information for replica rack aware assignment.")

    n = len(order)
    start = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    if start_shift >= 0:
        shift = start_shift
    else:
        shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    num_racks = len(set(racks.values())) if rack_of else 1

    out: dict[int, list[int]] = {}
    first_partition = max(0, start_partition)
    for p in range(first_partition, first_partition + num_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = order[first]
        replicas = [leader]
        if rack_of is None:
            replicas += [order[_follower_index(first, shift, j, n)] for j in range(replication_factor - 1)]
        else:
            racks_used = {rack_of[leader]}
            k = 0
            while len(replicas) < replication_factor:
                broker = order[_follower_index(first, shift * num_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                if rack in racks_used and len(racks_used) < num_racks:
                    continue  # a rack without a replica of this partition comes first
                if broker in replicas and len(replicas) < n:
                    continue  # as does a broker without one
                replicas.append(broker)
                racks_used.add(rack)
        out[p] = replicas
    return out


def assign_additional_partitions(brokers, existing: Mapping[int, list[int]], total_partitions: int,
                                 rng=random) -> dict[int, list[int]]:
    """Replicas for the partitions CreatePartitions adds to a topic whose current assignment is
    ``existing`` ({partition: replicas}), up to ``total_partitions`` in all. As Kafka does, the
    new partitions keep partition 0's replication factor and continue the round-robin from the
    first broker (in id order) at or after partition 0's leader. Returns the new partitions only.

    Raises ``PlacementError`` INVALID_PARTITIONS when it is not an increase, plus those of
    ``assign_replicas``."""
    current = len(existing)
    if total_partitions <= current:
        raise PlacementError(errors.INVALID_PARTITIONS,
                             f"Topic currently has {current} partitions, {total_partitions} would "
                             f"not be an increase.")
    if 0 not in existing or not existing[0]:
        raise PlacementError(errors.UNKNOWN_SERVER_ERROR, "The topic has no replicas for partition 0.")
    partition0 = list(existing[0])
    ids = sorted(_broker_racks(brokers))
    start = next((i for i, b in enumerate(ids) if b >= partition0[0]), 0)
    return assign_replicas(brokers, total_partitions - current, len(partition0), start_partition=current,
                           fixed_start_index=start, rng=rng)


def _pairs(assignment) -> list[tuple[int, list[int]]]:
    items = assignment.items() if isinstance(assignment, Mapping) else assignment
    return [(p, list(reps)) for p, reps in items]


def validate_manual_assignment(assignment, live_broker_ids: Iterable[int] | None = None, *,
                               first_partition: int = 0,
                               replication_factor: int | None = None) -> str | None:
    """Check an explicit replica assignment; the error message to answer with
    INVALID_REPLICA_ASSIGNMENT, or None when it is fine.

    ``assignment``: ``{partition: [broker ids]}`` or an iterable of ``(partition, broker ids)``
    pairs (as CreateTopics' ``assignments`` arrive, so a partition given twice is caught).
    Partitions must be ``first_partition``, ``first_partition + 1``, ... (0-based for a new
    topic; the current partition count for CreatePartitions), each with a non-empty list of
    distinct brokers, all in ``live_broker_ids`` (when given), and all lists of one length
    (``replication_factor`` when given, e.g. the topic's existing factor)."""
    pairs = _pairs(assignment)
    if not pairs:
        return "The replica assignment is empty."
    seen: set[int] = set()
    for p, _ in pairs:
        if p in seen:
            return f"Partition id {p} appears more than once in the replica assignment."
        seen.add(p)
    pairs.sort(key=lambda pr: pr[0])
    for p, replicas in pairs:
        if not replicas:
            return f"Cannot have replication factor of 0 for partition id {p}."
        if len(set(replicas)) != len(replicas):
            return (f"Duplicate brokers not allowed in replica assignment: "
                    f"{', '.join(map(str, replicas))} for partition id {p}.")
    if live_broker_ids is not None:
        live = set(live_broker_ids)
        unknown = sorted({b for _, reps in pairs for b in reps} - live)
        if unknown:
            return f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}."
    expected = replication_factor if replication_factor is not None else len(pairs[0][1])
    bad = [(p, len(reps)) for p, reps in pairs if len(reps) != expected]
    if bad:
        if replication_factor is None:
            return "All partitions should have the same number of replicas."
        return (f"Inconsistent replication factor between partitions, partition {first_partition} "
                f"should have {expected} while partitions [{', '.join(str(p) for p, _ in bad)}] "
                f"have replication factors [{', '.join(str(n) for _, n in bad)}], respectively.")
    if [p for p, _ in pairs] != list(range(first_partition, first_partition + len(pairs))):
        if first_partition == 0:
            return "partitions should be a consecutive 0-based integer sequence"
        return (f"partitions should be a consecutive integer sequence starting at {first_partition}, "
                f"got {[p for p, _ in pairs]}")
    return None
