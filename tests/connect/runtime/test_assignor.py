"""The incremental cooperative assignor in the scenarios of Kafka's
IncrementalCooperativeAssignorTest (workers joining, leaving for good, coming back within the
delay, connectors added and deleted), and the eager assignor."""
from josefk.connect.runtime.assignor import AssignorState, Load, eager, incremental
from josefk.connect.runtime.seams import ConnectorTaskId

MAX_DELAY = 10_000


def configured(**connectors: int) -> Load:
    return Load(sorted(connectors), [ConnectorTaskId(c, i) for c, n in sorted(connectors.items())
                                     for i in range(n)])


class Group:
    """The leader's rounds, with each member applying what it was given (revoked first)."""

    def __init__(self, *members):
        self.running = {m: Load() for m in members}
        self.state = AssignorState()
        self.generation = 0
        self.now = 1_000_000
        self.last = {}

    def round(self, config: Load):
        self.last, self.state = incremental(self.state, config, self.running, self.now,
                                            MAX_DELAY, self.generation, self.generation + 1)
        self.generation += 1
        for m, a in self.last.items():
            load = self.running[m]
            load.connectors = [c for c in load.connectors if c not in a.revoked_connectors]
            load.tasks = [t for t in load.tasks if t not in a.revoked_tasks]
            load.connectors += a.connectors
            load.tasks += a.tasks
        return self.last

    def counts(self):
        return {m: (len(v.connectors), len(v.tasks)) for m, v in self.running.items()}

    def everything(self):
        out = Load()
        for v in self.running.values():
            out.connectors += v.connectors
            out.tasks += v.tasks
        return sorted(out.connectors), sorted(out.tasks)


def test_a_first_round_spreads_everything():
    g = Group("w1", "w2")
    g.round(configured(a=4, b=4))
    assert g.counts() == {"w1": (1, 4), "w2": (1, 4)}
    assert all(not a.revoked_tasks and a.delay == 0 for a in g.last.values())


def test_a_joining_worker_gets_its_share_through_one_revocation():
    config = configured(a=4, b=4)
    g = Group("w1")
    g.round(config)
    g.running["w2"] = Load()
    first = g.round(config)
    assert len(first["w1"].revoked_tasks) == 4 and len(first["w1"].revoked_connectors) == 1
    assert first["w2"].tasks == []  # what was revoked is assigned in the next round
    g.round(config)
    assert g.counts() == {"w1": (1, 4), "w2": (1, 4)}
    assert g.everything() == (config.connectors, config.tasks)
    steady = g.round(config)  # balanced: nothing moves
    assert all(not a.tasks and not a.revoked_tasks for a in steady.values())


def test_a_departed_worker_is_waited_for_and_gets_its_tasks_back_in_time():
    config = configured(a=2, b=2)
    g = Group("w1", "w2")
    g.round(config)
    gone = g.running.pop("w2")
    g.round(config)
    assert g.last["w1"].delay == MAX_DELAY and g.last["w1"].tasks == []
    g.now += 4000
    g.round(config)
    assert g.last["w1"].delay == MAX_DELAY - 4000
    g.running["w2"] = gone  # back within the delay, running what it ran
    back = g.round(config)
    assert back["w2"].tasks == [] and back["w1"].tasks == []
    assert all(a.delay == 0 and not a.revoked_tasks for a in back.values())
    assert g.counts() == {"w1": (1, 2), "w2": (1, 2)}


def test_a_departed_worker_s_tasks_move_once_the_delay_is_over():
    config = configured(a=2, b=2)
    g = Group("w1", "w2")
    g.round(config)
    lost = g.running.pop("w2")
    g.round(config)
    g.now += MAX_DELAY
    moved = g.round(config)
    assert sorted(moved["w1"].tasks) == sorted(lost.tasks)
    assert moved["w1"].connectors == lost.connectors and moved["w1"].delay == 0
    assert g.everything() == (config.connectors, config.tasks)


def test_a_worker_joining_during_the_delay_takes_the_lost_tasks():
    config = configured(a=2, b=2)
    g = Group("w1", "w2")
    g.round(config)
    lost = g.running.pop("w2")
    g.round(config)
    g.running["w3"] = Load()  # a new, empty worker: the candidate
    g.now += 1000
    g.round(config)
    g.now += MAX_DELAY
    moved = g.round(config)
    assert sorted(moved["w3"].tasks) == sorted(lost.tasks) and moved["w1"].tasks == []


def test_new_connectors_go_to_the_least_loaded_and_deleted_ones_are_revoked():
    g = Group("w1", "w2")
    g.round(configured(a=3))
    assert g.counts() == {"w1": (1, 2), "w2": (0, 1)}
    g.round(configured(a=3, b=1))
    assert g.counts() == {"w1": (1, 2), "w2": (1, 2)}
    removed = g.round(configured(b=1))
    revoked = [t for a in removed.values() for t in a.revoked_tasks]
    assert sorted(revoked) == [ConnectorTaskId("a", i) for i in range(3)]
    assert g.everything() == (["b"], [ConnectorTaskId("b", 0)])


def test_a_task_run_by_two_workers_is_revoked_from_both_then_assigned_once():
    config = configured(a=2)
    g = Group("w1", "w2")
    g.round(config)
    twice = g.running["w1"].tasks[0]
    g.running["w2"].tasks.append(twice)
    out = g.round(config)
    assert twice in out["w1"].revoked_tasks and twice in out["w2"].revoked_tasks
    g.round(config)
    assert sorted(g.everything()[1]) == config.tasks


def test_successive_revoking_rounds_back_off():
    config = configured(a=6)
    g = Group("w1")
    g.round(config)
    g.running["w2"] = Load()
    g.round(config)  # revokes at once: none in the previous round
    g.running["w3"] = Load()
    out = g.round(config)  # would revoke again: delayed instead
    assert out["w1"].revoked_tasks == [] and out["w1"].delay == 40


def test_eager_round_robin_connectors_then_tasks():
    out = eager(configured(a=2, b=1), ["w2", "w1"])
    assert (out["w1"].connectors, out["w2"].connectors) == (["a"], ["b"])
    assert out["w1"].tasks == [ConnectorTaskId("a", 0), ConnectorTaskId("b", 0)]
    assert out["w2"].tasks == [ConnectorTaskId("a", 1)]
