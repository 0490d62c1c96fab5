"""Leader election rules of Kafka's ZooKeeper-mode controller, as plain functions.

Each takes a partition's assignment (replica list, preferred leader first), its ISR and the
set of live brokers, and returns ``(leader, isr)`` or None when no leader may be elected.
"""
from __future__ import annotations

NO_LEADER = -1


def offline_leader(assignment, isr, live, unclean: bool):
    """A partition whose leader died (or a new partition): the first live ISR member in
    assignment order; with unclean election, else the first live replica (data may be lost)."""
    live_isr = [r for r in isr if r in live]
    for r in assignment:
        if r in live_isr:
            return r, live_isr
    if unclean:
        for r in assignment:
            if r in live:
                return r, [r]
    return None


def new_partition_leader(assignment, live):
    """A partition being created: every live replica is in sync (all are empty)."""
    live_replicas = [r for r in assignment if r in live]
    if not live_replicas:
        return None
    return live_replicas[0], live_replicas


def preferred_leader(assignment, isr, live):
    """Preferred replica election: the first replica of the assignment if alive and in sync."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return assignment[0], list(isr)
    return None


def controlled_shutdown_leader(assignment, isr, live, shutting_down):
    """Move leadership off brokers shutting down: the first live ISR member not leaving; the
    ISR loses the leaving brokers."""
    isr_left = [r for r in isr if r not in shutting_down]
    for r in assignment:
        if r in isr_left and r in live:
            return r, isr_left
    return None


def without_replica(isr, broker_id):
    """The ISR once ``broker_id`` has gone (never empty: Kafka keeps the last member)."""
    rest = [r for r in isr if r != broker_id]
    return rest if rest else list(isr)


def leader_imbalance(assignments: dict, leaders: dict, broker_id: int) -> float:
    """Kafka's auto leader rebalance check: of the partitions whose preferred leader is
    ``broker_id``, the fraction it does not lead."""
    preferred = [tp for tp, a in assignments.items() if a and a[0] == broker_id]
    if not preferred:
        return 0.0
    return sum(1 for tp in preferred if leaders.get(tp) != broker_id) / len(preferred)
