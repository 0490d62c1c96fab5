"""Which worker runs which connector and task: Kafka Connect's IncrementalCooperativeAssignor
(``connect.protocol`` compatible / sessioned) and EagerAssignor (eager), as functions of the
group's members with what each runs now, the configured connectors and tasks, and the
leader's memory of the previous round (``AssignorState``), without I/O.

The incremental assignor keeps every connector and task where it runs, assigns new ones to
the least loaded workers, revokes only what must move to balance the load (one revoking round,
then the next revocation waits an exponential backoff), and holds a departed worker's
connectors and tasks for ``scheduled.rebalance.max.delay.ms`` (the ``delay`` members wait
before joining again): a worker that comes back in time gets them back, otherwise they go to
the workers that joined with nothing, or to everyone."""
from __future__ import annotations

from dataclasses import dataclass, field

from josefk.connect.runtime.seams import ConnectorTaskId

BACKOFF_MULTIPLIER = 40


@dataclass
class Load:
    """What one worker runs (or will run): Kafka's ConnectorsAndTasks / WorkerLoad."""
    connectors: list[str] = field(default_factory=list)
    tasks: list[ConnectorTaskId] = field(default_factory=list)

    def empty(self) -> bool:
        return not self.connectors and not self.tasks

    def copy(self) -> Load:
        return Load(list(self.connectors), list(self.tasks))


@dataclass
class Assignment:
    """One member's share of a round (what SyncGroup carries, Kafka's ExtendedAssignment)."""
    connectors: list[str] = field(default_factory=list)
    tasks: list[ConnectorTaskId] = field(default_factory=list)
    revoked_connectors: list[str] = field(default_factory=list)
    revoked_tasks: list[ConnectorTaskId] = field(default_factory=list)
    delay: int = 0
    error: int = 0
    leader: str = ""
    leader_url: str = ""
    config_offset: int = -1


@dataclass(frozen=True)
class AssignorState:
    """The leader's memory between rounds (fields of Kafka's IncrementalCooperativeAssignor)."""
    previous: Load = field(default_factory=Load)
    previous_generation: int = -1
    previous_members: frozenset = frozenset()
    previous_revocation: Load = field(default_factory=Load)
    revoked_in_previous: bool = False
    successive_revoking_rounds: int = 0
    scheduled_rebalance: int = 0  # ms since the epoch; 0: none
    delay: int = 0
    candidates: frozenset = frozenset()


def _union(loads) -> Load:
    out = Load()
    for load in loads:
        out.connectors += load.connectors
        out.tasks += load.tasks
    return out


def _minus(a: Load, *others: Load) -> Load:
    cs = set().union(*(o.connectors for o in others))
    ts = set().union(*(o.tasks for o in others))
    return Load([c for c in a.connectors if c not in cs], [t for t in a.tasks if t not in ts])


def _backoff(attempts: int, max_delay: int) -> int:
    return 0 if max_delay == 0 else int(min(BACKOFF_MULTIPLIER ** attempts, max_delay))


def _balance_revocations(total: int, loads: dict[str, list]) -> dict[str, list]:
    """What to take from each worker so none has more than its fair share (Kafka's
    loadBalancingRevocations for one kind of resource)."""
    workers = len(loads)
    least, extras = divmod(total, workers)
    sizes = [len(v) for v in loads.values()]
    if sizes.count(least + 1) == extras and sizes.count(least) + extras == workers:
        return {}
    out, given = {}, 0
    for worker, items in loads.items():
        if len(items) <= least:
            continue
        if given < extras:
            given += 1
            if len(items) == least + 1:
                continue
            most = least + 1
        else:
            most = least
        out[worker] = items[:len(items) - most]
    return out


def _assign_least_loaded(workers: dict[str, Load], items, kind: str) -> None:
    for item in items:
        worker = min(workers, key=lambda w: len(getattr(workers[w], kind)))
        getattr(workers[worker], kind).append(item)


def incremental(state: AssignorState, configured: Load, members: dict[str, Load],
                now_ms: int, max_delay_ms: int, last_completed_generation: int,
                generation: int) -> tuple[dict[str, Assignment], AssignorState]:
    """One round of the incremental cooperative assignor: ``configured`` holds every
    connector and task of the config snapshot, ``members`` what each member reported running
    (its allocation). Returns each member's assignment (newly assigned and revoked only) and
    the state the leader keeps for the next round."""
    s = state
    previous = s.previous if s.previous_generation == last_completed_generation else Load()
    order = sorted(members)
    active = _union(members[m] for m in order)
    revoked_in_previous, successive = s.revoked_in_previous, s.successive_revoking_rounds
    if not s.previous_revocation.empty():
        pr = s.previous_revocation
        if (set(pr.connectors) & set(active.connectors)) or (set(pr.tasks) & set(active.tasks)):
            previous = active
    configured = Load(sorted(configured.connectors), sorted(configured.tasks))
    deleted = _minus(previous, configured)
    duplicated = _duplicates(members, order)
    lost = _minus(previous, active, deleted)
    created = _minus(configured, previous, active)

    current = {m: _minus(members[m], deleted) for m in order}
    to_revoke = {m: Load() for m in order}
    for m in order:
        mine = members[m]
        to_revoke[m].connectors += [c for c in mine.connectors
                                    if c in deleted.connectors or c in duplicated[m].connectors]
        to_revoke[m].tasks += [t for t in mine.tasks
                               if t in deleted.tasks or t in duplicated[m].tasks]
    nxt = {m: _minus(current[m], to_revoke[m]) for m in order}

    delay, scheduled, candidates = s.delay, s.scheduled_rebalance, set(s.candidates)
    reassign = Load()
    # Lost assignments (Kafka's handleLostAssignments).
    if lost.empty() and not revoked_in_previous:
        delay, scheduled, candidates = 0, 0, set()
    elif scheduled <= 0 and set(order) >= s.previous_members:
        reassign = lost  # nobody left: they were lost on the way, assign them again
    elif 0 < scheduled <= now_ms:
        chosen = [m for m in order if m in candidates]
        if chosen:
            for i, c in enumerate(lost.connectors):
                nxt[chosen[i % len(chosen)]].connectors.append(c)
            for i, t in enumerate(lost.tasks):
                nxt[chosen[i % len(chosen)]].tasks.append(t)
        else:
            reassign = lost
        delay, scheduled, candidates = 0, 0, set()
        revoked_in_previous = False
    else:
        candidates |= {m for m in order if nxt[m].empty()}
        delay = min(scheduled - now_ms, max_delay_ms) if now_ms < scheduled else max_delay_ms
        delay = max(delay, 0)
        scheduled = now_ms + delay

    if delay == 0:
        revocations = _load_balancing(configured, nxt, order)
        if revoked_in_previous and revocations:
            successive += 1
            delay = _backoff(successive, max_delay_ms)
            if delay:
                scheduled = now_ms + delay
            else:
                _take(to_revoke, nxt, revocations)
        elif revocations:
            _take(to_revoke, nxt, revocations)
            revoked_in_previous = True
        elif revoked_in_previous:
            revoked_in_previous, successive = False, 0
    else:
        revoked_in_previous = False

    _assign_least_loaded(nxt, created.connectors + reassign.connectors, "connectors")
    _assign_least_loaded(nxt, created.tasks + reassign.tasks, "tasks")

    out = {}
    for m in order:
        out[m] = Assignment(
            [c for c in nxt[m].connectors if c not in current[m].connectors],
            [t for t in nxt[m].tasks if t not in current[m].tasks],
            to_revoke[m].connectors, to_revoke[m].tasks, delay)
    revoked_all = _union(to_revoke[m] for m in order)
    assigned_all = _union(nxt[m] for m in order)
    # What the leader expects to run after this round: the assigned, plus what is lost and
    # held for its worker's return.
    held = _minus(lost, assigned_all)
    new_state = AssignorState(
        previous=_union([assigned_all, held]), previous_generation=generation,
        previous_members=frozenset(order), previous_revocation=revoked_all,
        revoked_in_previous=revoked_in_previous, successive_revoking_rounds=successive,
        scheduled_rebalance=scheduled, delay=delay, candidates=frozenset(candidates))
    return out, new_state


def _duplicates(members: dict[str, Load], order: list[str]) -> dict[str, Load]:
    """Per member, what it runs that another member runs too (all of them give it up)."""
    seen_c: dict[str, int] = {}
    seen_t: dict[ConnectorTaskId, int] = {}
    for m in order:
        for c in members[m].connectors:
            seen_c[c] = seen_c.get(c, 0) + 1
        for t in members[m].tasks:
            seen_t[t] = seen_t.get(t, 0) + 1
    return {m: Load([c for c in members[m].connectors if seen_c[c] > 1],
                    [t for t in members[m].tasks if seen_t[t] > 1]) for m in order}


def _load_balancing(configured: Load, nxt: dict[str, Load], order: list[str]) -> dict[str, Load]:
    if not order or all(nxt[m].empty() for m in order):
        return {}
    cs = _balance_revocations(len(configured.connectors),
                              {m: nxt[m].connectors for m in order})
    ts = _balance_revocations(len(configured.tasks), {m: nxt[m].tasks for m in order})
    return {m: Load(cs.get(m, []), ts.get(m, [])) for m in order if m in cs or m in ts}


def _take(to_revoke: dict[str, Load], nxt: dict[str, Load], revocations: dict[str, Load]):
    for m, load in revocations.items():
        to_revoke[m].connectors += load.connectors
        to_revoke[m].tasks += load.tasks
        nxt[m] = _minus(nxt[m], load)


def eager(configured: Load, members: list[str]) -> dict[str, Assignment]:
    """Kafka's EagerAssignor: every connector, then every task, round robin over the members
    in id order (each member gives up everything before the round)."""
    order = sorted(members)
    out = {m: Assignment() for m in order}
    i = 0
    connectors = sorted(set(configured.connectors))
    for c in connectors:
        out[order[i % len(order)]].connectors.append(c)
        i += 1
    for t in sorted(configured.tasks):
        out[order[i % len(order)]].tasks.append(t)
        i += 1
    return out
