"""The distributed herder: two herders on a real josefk broker (real internal topics, real group
protocol) with a small test double of the Worker seam that records what it was asked to run.
A connector created on the leader has its tasks generated and spread; a follower refuses
writes with the leader's URL; a rebalance that moves nothing stops nothing; a worker stopped
hard has its connector and tasks taken over once the scheduled delay is over."""
import asyncio
import threading
import uuid

import pytest

from josefk.connect.rest.server import RestServer
from josefk.connect.runtime.assignor import Assignment
from josefk.connect.runtime.config_store import ClusterConfigState
from josefk.connect.runtime.distributed import DistributedHerder
from josefk.connect.runtime.group import WorkerState
from josefk.connect.runtime.herder import (BadRequest, Forbidden, NotLeader, RequestSignature,
                                           sign)
from josefk.connect.runtime.offset_store import KafkaOffsetStore
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, State, Status, TargetState
from josefk.connect.runtime.worker_config import WorkerConfig
from testkit.waiting import until


class RecordingWorker:
    """The Worker seam: connectors and tasks are names in sets; task configs are
    ``tasks.max`` copies of the connector's ``topic`` (``topics``)."""

    def __init__(self, config):
        self.offset_store = KafkaOffsetStore(config)
        self.connectors, self.tasks = {}, {}
        self.stopped_tasks: list[ConnectorTaskId] = []
        self.started_connectors: list[str] = []
        self.on_reconfigure = {}
        self.targets = {}
        self.extra = {}  # added to every task config
        self.lock = threading.Lock()
        self.worker_id = ""

    def start_connector(self, name, props, target, on_reconfigure):
        with self.lock:
            self.connectors[name] = props
            self.started_connectors.append(name)
            self.on_reconfigure[name] = on_reconfigure

    def connector_task_configs(self, name, props):
        topic = props.get("topic") or props["topics"]
        return [{"task.class": "Recording", "topic": topic, **self.extra}
                for _ in range(int(props["tasks.max"]))]

    def set_target_state(self, name, target):
        with self.lock:
            self.targets[name] = target

    def stop_connectors(self, names):
        with self.lock:
            for n in names:
                self.connectors.pop(n, None)

    def start_task(self, id, connector_props, task_props, target):
        with self.lock:
            self.tasks[id] = task_props
        return True

    def stop_tasks(self, ids):
        with self.lock:
            for id in ids:
                self.tasks.pop(id, None)
                self.stopped_tasks.append(id)

    def connector_names(self):
        with self.lock:
            return list(self.connectors)

    def task_ids(self):
        with self.lock:
            return list(self.tasks)

    def stop(self):
        with self.lock:
            self.connectors.clear()
            self.tasks.clear()


def config(bootstrap, prefix, port, protocol="sessioned"):
    c = WorkerConfig({"connect.protocol": protocol, "bootstrap.servers": bootstrap, "group.id": prefix,
                      "config.storage.topic": f"{prefix}-configs",
                      "offset.storage.topic": f"{prefix}-offsets",
                      "status.storage.topic": f"{prefix}-status",
                      "config.storage.replication.factor": "1",
                      "offset.storage.replication.factor": "1",
                      "status.storage.replication.factor": "1",
                      "offset.storage.partitions": "2", "status.storage.partitions": "2",
                      "session.timeout.ms": "6000", "heartbeat.interval.ms": "300",
                      "rebalance.timeout.ms": "10000",
                      "scheduled.rebalance.max.delay.ms": "1000"}, distributed=True)
    c.advertise([f"http://127.0.0.1:{port}"])
    return c


def stable(*herders):
    return all(not h.rebalance_due() and h.member.running.leader for h in herders)


def hard_stop(h: DistributedHerder):
    """The worker dies: no LeaveGroup, no more heartbeats; the group notices at the session
    timeout."""
    h._stopping.set()
    h._wake.set()
    h._thread.join(30)
    h.member.closed.set()
    h.member.heartbeats.join(5)
    h.member.conn.close()
    h.member.cc.close()
    for store in (h.config_store, h.status_store, h.offset_store):
        store.stop()


@pytest.fixture
def prefix():
    return f"dist-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("protocol", ["sessioned", "eager"])
def test_two_workers_share_a_connector_and_take_over_from_a_dead_one(josefk_broker, prefix,
                                                                    protocol):
    async def scenario():
        pairs = await rest_herders(josefk_broker.bootstrap_servers, prefix, 2, protocol)
        herders = [h for h, _ in pairs]
        workers = [h.worker for h in herders]
        dead = None
        try:
            assert await until(lambda: stable(*herders))
            leader = next(h for h in herders if h._is_leader())
            follower = next(h for h in herders if h is not leader)
            props = {"connector.class": "FileStreamSourceConnector", "tasks.max": "4",
                     "topic": "lines"}
            with pytest.raises(NotLeader) as e:
                await follower.put_connector_config("src", props, False)
            assert e.value.leader_url == leader.config.rest_url
            created, info = await leader.put_connector_config("src", props, False)
            assert created and info["type"] == "source"

            def spread():
                tasks = [t for w in workers for t in w.task_ids()]
                return (sorted(tasks) == [ConnectorTaskId("src", i) for i in range(4)]
                        and all(len(w.task_ids()) == 2 for w in workers)
                        and stable(*herders))

            assert await until(spread)
            assert sum(len(w.connector_names()) for w in workers) == 1
            assert [c for w in workers for c in w.started_connectors] == ["src"]  # no bounce
            assert (await leader.task_configs("src"))[3] == {
                "id": {"connector": "src", "task": 3},
                "config": {"task.class": "Recording", "topic": "lines"}}

            # Paused through the follower (any worker writes it): every worker pauses the
            # tasks it runs.
            await follower.pause_connector("src")
            assert await until(lambda: all(w.targets.get("src") is TargetState.PAUSED
                                           for w in workers))
            await follower.resume_connector("src")
            assert await until(lambda: all(w.targets.get("src") is TargetState.STARTED
                                           for w in workers))

            assert leader.member.protocol == {"eager": "default"}.get(protocol, protocol)
            if protocol == "sessioned":
                assert leader.config_store.snapshot().session_key is not None

            # A second connector: with the cooperative protocol, a rebalance that moves no
            # running task stops none.
            stopped_before = [list(w.stopped_tasks) for w in workers]
            await leader.put_connector_config("other", {**props, "tasks.max": "2"}, False)
            assert await until(lambda: sum(len(w.task_ids()) for w in workers) == 6
                               and stable(*herders))
            if protocol == "sessioned":
                assert [w.stopped_tasks for w in workers] == stopped_before

            dead = herders[1]
            await asyncio.to_thread(hard_stop, dead)
            assert await until(lambda: len(workers[0].task_ids()) == 6
                               and sorted(workers[0].connector_names()) == ["other", "src"],
                               timeout=60)
        finally:
            await stop_all(pairs, dead)

    asyncio.run(scenario())


# The sink's consumer group is connect-<name> on the session's broker: a name no other test
# gives its sink.
SNK = "snk-offsets"


def test_offsets_are_altered_and_reset_only_when_stopped(josefk_broker, prefix):
    async def scenario():
        c = config(josefk_broker.bootstrap_servers, prefix, 9100)
        worker = RecordingWorker(c)
        h = DistributedHerder(c, worker, Plugins())
        await h.start()
        try:
            assert await until(lambda: stable(h))
            source = {"connector.class": "FileStreamSourceConnector", "tasks.max": "1",
                      "topic": "t", "file": "/data/in.txt"}
            sink = {"connector.class": "FileStreamSinkConnector", "tasks.max": "1",
                    "topics": "t"}
            await h.put_connector_config("src", source, False)
            assert await until(lambda: stable(h))
            await h.put_connector_config(SNK, sink, False)
            assert await until(lambda: len(worker.task_ids()) == 2 and stable(h))
            await h.restart_task("src", 0)
            assert worker.stopped_tasks == [ConnectorTaskId("src", 0)]
            assert ConnectorTaskId("src", 0) in worker.task_ids()

            # The connector asks for its task configs again: they changed, its task restarts.
            worker.extra = {"v": "2"}
            worker.on_reconfigure["src"]()
            assert await until(lambda: worker.tasks.get(ConnectorTaskId("src", 0), {}).get("v")
                               == "2" and stable(h))
            assert worker.started_connectors.count("src") == 1

            partition = {"filename": "/data/in.txt"}
            with pytest.raises(BadRequest) as e:
                await h.alter_connector_offsets("src", [{"partition": partition,
                                                         "offset": {"position": 7}}])
            assert e.value.message.startswith(
                "Connectors must be in the STOPPED state before their offsets can be modified.")
            for name in ("src", SNK):  # each empties its tasks: a rebalance follows
                await h.stop_connector(name)
                assert await until(lambda: stable(h))
            assert worker.task_ids() == []

            message = await h.alter_connector_offsets(
                "src", [{"partition": partition, "offset": {"position": 7}}])
            assert "offsets for this connector have been altered successfully" in message
            assert await h.connector_offsets("src") == {
                "offsets": [{"partition": partition, "offset": {"position": 7}}]}
            await h.reset_connector_offsets("src")
            assert await h.connector_offsets("src") == {"offsets": []}

            josefk_broker.create_topic(f"{prefix}-in", partitions=1)
            kafka_partition = {"kafka_topic": f"{prefix}-in", "kafka_partition": 0}
            await h.alter_connector_offsets(
                SNK, [{"partition": kafka_partition, "offset": {"kafka_offset": 12}}])
            assert await h.connector_offsets(SNK) == {
                "offsets": [{"partition": kafka_partition, "offset": {"kafka_offset": 12}}]}
            await h.reset_connector_offsets(SNK)
            assert await h.connector_offsets(SNK) == {"offsets": []}

            # Deleted: its worker removes its statuses.
            await h.resume_connector("src")
            assert await until(lambda: stable(h) and "src" in worker.connector_names())
            h.status_store.put("src", Status(State.RUNNING, None, h.config.worker_id, 1))
            await h.delete_connector("src")
            assert await until(lambda: stable(h) and h.status_store.get("src") is None)
            assert await h.connectors() == [SNK] and "src" not in worker.connector_names()
        finally:
            await h.stop()

    asyncio.run(scenario())


class ConfigTopic:
    """The config store seam as the herder's thread sees it: a position and a snapshot."""

    def __init__(self):
        self.offset = 0

    def refresh(self, timeout=None):
        pass

    def snapshot(self):
        return ClusterConfigState(offset=self.offset)


class JoiningMember:
    """The group member seam: each join is one generation whose assignment was computed
    from ``config_offset``; ``during_join`` runs while the join waits for the group."""

    protocol, version, member_id = "sessioned", 2, "member-1"

    def __init__(self, config_offset, during_join):
        self.config_offset, self.during_join = config_offset, during_join
        self.generation, self.running = 0, Assignment()
        self.rejoin = threading.Event()
        self.rejoin.set()
        self.state = WorkerState("", -1, None)

    def needs_join(self):
        return self.rejoin.is_set()

    def join(self):
        self.rejoin.clear()
        self.during_join()
        self.generation += 1
        return Assignment(config_offset=self.config_offset)


@pytest.mark.parametrize("assigned_offset, rejoins", [(5, False), (4, True)])
def test_an_update_read_during_a_rebalance_asks_again_only_if_the_assignment_missed_it(
        prefix, assigned_offset, rejoins):
    """A follower reads new task configs (ending at position 5) while it joins: when the
    leader's assignment was computed from them, the follower does not ask for one more
    rebalance (a redundant one answers REST requests 409 once the group has placed all)."""
    c = config("127.0.0.1:9", prefix, 9200)
    h = DistributedHerder(c, RecordingWorker(c), Plugins())
    topic = h.config_store = ConfigTopic()

    def task_configs_read():
        topic.offset = 5
        h.on_task_config_update([ConnectorTaskId("src", 0)])

    h.member = JoiningMember(assigned_offset, task_configs_read)
    h._tick()  # the rebalance, the update read during it
    assert h.member.generation == 1
    assert h.rebalance_due() is rejoins
    h._tick()  # a rebalance again only if the assignment missed the update
    assert h.member.generation == (2 if rejoins else 1)


def rest_herders(bootstrap, prefix, count, protocol="sessioned", **props):
    """``count`` herders, each behind its REST server on a free port (where internal requests
    between workers go)."""
    async def start():
        out = []
        for _ in range(count):
            c = config(bootstrap, prefix, 0, protocol)
            c.values.update(props)
            h = DistributedHerder(c, RecordingWorker(c), Plugins())
            server = RestServer(["http://127.0.0.1:0"], h)
            c.advertise(await server.start())
            assert not h.ready()
            await h.start()
            out.append((h, server))
        return out
    return start()


async def stop_all(pairs, dead=None):
    for h, server in pairs:
        if h is not dead:
            await h.stop()
        await server.stop()


def test_a_followers_task_configs_are_written_by_the_leader_once_their_signature_checks(
        josefk_broker, prefix):
    async def scenario():
        pairs = await rest_herders(josefk_broker.bootstrap_servers, prefix, 2)
        herders = [h for h, _ in pairs]
        try:
            assert await until(lambda: stable(*herders) and all(h.ready() for h in herders))
            leader = next(h for h in herders if h._is_leader())
            follower = next(h for h in herders if h is not leader)
            props = {"connector.class": "FileStreamSourceConnector", "tasks.max": "1",
                     "topic": "lines"}
            for name in ("a", "b"):
                assert await until(lambda: stable(*herders))
                await leader.put_connector_config(name, props, False)
            assert await until(lambda: stable(*herders) and len(follower.worker.connectors) == 1)
            name = follower.worker.connector_names()[0]
            # The follower's connector has new task configs: the leader writes them.
            follower.worker.extra = {"generation": "2"}
            follower.worker.on_reconfigure[name]()
            assert await until(lambda: leader.config_store.snapshot().task_config(
                ConnectorTaskId(name, 0)).get("generation") == "2")

            key = leader.config_store.snapshot().session_key.key
            body = b'[{"task.class": "Recording", "topic": "other"}]'
            configs = [{"task.class": "Recording", "topic": "other"}]
            with pytest.raises(BadRequest, match="^Internal request missing required signature$"):
                await leader.put_task_configs(name, configs, None)
            with pytest.raises(Forbidden) as e:
                await leader.put_task_configs(name, configs, RequestSignature(
                    body, "HmacSHA256", sign(b"not the key", body, "HmacSHA256")))
            assert (e.value.status, e.value.message) == (
                403, "Internal request contained invalid signature.")
            with pytest.raises(BadRequest, match="'HmacSHA512' key signing algorithm"):
                await leader.put_task_configs(name, configs, RequestSignature(
                    body, "HmacSHA512", sign(key, body, "HmacSHA512")))
            good = RequestSignature(body, "HmacSHA256", sign(key, body, "HmacSHA256"))
            with pytest.raises(NotLeader, match="Only the leader may write task configurations"):
                await follower.put_task_configs(name, configs, good)
            await leader.put_task_configs(name, configs, good)
            assert leader.config_store.snapshot().task_config(
                ConnectorTaskId(name, 0))["topic"] == "other"
            # The follower asks the leader to fence (signed PUT /connectors/{name}/fence): no
            # generation counted before, so only the task-count record is written.
            assert name in leader.config_store.snapshot().pending_fencing
            await asyncio.to_thread(follower._to_leader, "PUT", f"/connectors/{name}/fence",
                                    None)
            snap = leader.config_store.snapshot()
            assert snap.task_count_records[name] == 1 and name not in snap.pending_fencing
        finally:
            await stop_all(pairs)

    asyncio.run(scenario())


def test_kip_980_initial_state(josefk_broker, prefix):
    async def scenario():
        pairs = await rest_herders(josefk_broker.bootstrap_servers, prefix, 1)
        h = pairs[0][0]
        try:
            assert await until(lambda: stable(h))
            props = {"connector.class": "FileStreamSourceConnector", "tasks.max": "2",
                     "topic": "lines"}
            for name, state in (("run", "STARTED"), ("paused", "PAUSED"), ("stopped", "STOPPED")):
                assert await until(lambda: stable(h))
                await h.put_connector_config(name, props, False, state)
            # Neither the paused nor the stopped connector generates task configs.
            assert await until(lambda: len(h.worker.task_ids()) == 2 and stable(h))
            snap = h.config_store.snapshot()
            assert {n: snap.target_state(n) for n in ("run", "paused", "stopped")} == {
                "run": TargetState.STARTED, "paused": TargetState.PAUSED,
                "stopped": TargetState.STOPPED}
            assert snap.tasks("stopped") == snap.tasks("paused") == []
            await h.resume_connector("paused")
            assert await until(lambda: len(h.worker.task_ids()) == 4)
        finally:
            await stop_all(pairs)

    asyncio.run(scenario())


@pytest.mark.parametrize("count", [1, 2])
def test_a_zombie_producer_of_the_previous_generation_is_fenced(josefk_broker, prefix, count):
    """KIP-618: the connector's task count shrinks from 4 to 2; before a task of the new
    generation starts, the leader (asked by the follower that runs it, with two workers)
    fences task 3's producer, still open from the old one."""
    from confluent_kafka import KafkaError, KafkaException, Producer

    async def scenario():
        pairs = await rest_herders(josefk_broker.bootstrap_servers, prefix, count,
                                   **{"exactly.once.source.support": "enabled"})
        herders = [h for h, _ in pairs]

        def running():
            return sorted(t for h in herders for t in h.worker.task_ids())
        try:
            assert await until(lambda: stable(*herders))
            h = next(h for h in herders if h._is_leader())
            props = {"connector.class": "FileStreamSourceConnector", "tasks.max": "4",
                     "topic": "lines"}
            await h.put_connector_config("src", props, False)
            assert await until(lambda: len(running()) == 4 and stable(*herders))
            assert all(h.worker.task_ids() for h in herders)  # spread over the workers
            snap = h.config_store.snapshot()
            assert snap.task_count_records == {"src": 4} and not snap.pending_fencing
            zombie = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers,
                               "transactional.id": f"{prefix}-src-3"})
            await asyncio.to_thread(zombie.init_transactions, 10)
            zombie.begin_transaction()
            zombie.produce("lines", b"from the zombie")
            zombie.flush(10)
            await h.put_connector_config("src", {**props, "tasks.max": "2"}, True)
            assert await until(lambda: h.config_store.snapshot().task_count_records
                               == {"src": 2} and running() == [
                                   ConnectorTaskId("src", 0), ConnectorTaskId("src", 1)],
                               timeout=30)
            with pytest.raises(KafkaException) as e:
                await asyncio.to_thread(zombie.commit_transaction, 10)
            assert e.value.args[0].code() == KafkaError._FENCED
        finally:
            await stop_all(pairs)

    asyncio.run(scenario())


def test_an_exactly_once_sources_offsets_are_written_after_fencing_in_a_transaction(
        josefk_broker, prefix, monkeypatch):
    """KIP-875 with KIP-618, as Kafka's DistributedHerder and Worker: PATCH and DELETE of a
    stopped exactly-once source first fence its tasks' producers (task 1's zombie is fenced by
    that alone) and write the task count record of zero tasks, then write the offsets with
    task 0's transactional producer (which fences task 0's zombie even when no fencing is
    pending). A fencing that fails answers Kafka's message and writes nothing; concurrent
    requests are written one after another, none fenced by another."""
    from confluent_kafka import KafkaError, KafkaException, Producer

    from josefk.connect.runtime import distributed
    from josefk.connect.runtime.herder import HerderError

    bootstrap = josefk_broker.bootstrap_servers

    async def zombie(task):
        producer = Producer({"bootstrap.servers": bootstrap,
                             "transactional.id": f"{prefix}-src-{task}"})
        await asyncio.to_thread(producer.init_transactions, 10)
        producer.begin_transaction()
        producer.produce(f"{prefix}-lines", b"from the zombie")
        producer.flush(10)
        return producer

    async def fenced(producer):
        with pytest.raises(KafkaException) as e:
            await asyncio.to_thread(producer.commit_transaction, 10)
        return e.value.args[0].code() == KafkaError._FENCED

    async def scenario():
        pairs = await rest_herders(bootstrap, prefix, 1,
                                   **{"exactly.once.source.support": "enabled"})
        h = pairs[0][0]
        try:
            assert await until(lambda: stable(h))
            await h.put_connector_config("src", {
                "connector.class": "FileStreamSourceConnector", "tasks.max": "2",
                "topic": f"{prefix}-lines", "file": "/data/in.txt"}, False)
            assert await until(lambda: len(h.worker.task_ids()) == 2 and stable(h))
            assert h.config_store.snapshot().task_count_records == {"src": 2}
            zombies = [await zombie(0), await zombie(1)]
            await h.stop_connector("src")
            assert await until(lambda: stable(h) and not h.worker.task_ids())
            offsets = [{"partition": {"filename": "/data/in.txt"}, "offset": {"position": 7}}]

            def unreachable(cc, ids, timeout_s):
                raise TimeoutError(f"Timed out fencing producer with transactional ID {ids[0]}")
            monkeypatch.setattr(distributed, "fence_producers", unreachable)
            with pytest.raises(HerderError) as e:
                await h.alter_connector_offsets("src", offsets)
            assert (e.value.status, e.value.message) == (
                500, "Failed to perform zombie fencing for source connector prior to "
                     "modifying offsets")
            assert "src" in h.config_store.snapshot().pending_fencing
            assert await h.connector_offsets("src") == {"offsets": []}
            monkeypatch.undo()

            assert await h.alter_connector_offsets("src", offsets) == (
                "The offsets for this connector have been altered successfully")
            assert [await fenced(z) for z in zombies] == [True, True]
            snap = h.config_store.snapshot()
            assert snap.task_count_records == {"src": 0} and not snap.pending_fencing
            assert await h.connector_offsets("src") == {"offsets": offsets}

            # Concurrent requests (the leader's alone): each written whole, one after another.
            asked = [[{**offsets[0], "offset": {"position": p}}] for p in (10, 20, 30, 40)]
            answers = await asyncio.gather(*(h.alter_connector_offsets("src", o) for o in asked))
            assert set(answers) == {
                "The offsets for this connector have been altered successfully"}
            assert (await h.connector_offsets("src"))["offsets"] in asked

            again = await zombie(0)  # no fencing pending: the write's own producer fences it
            assert await h.reset_connector_offsets("src") == (
                "The offsets for this connector have been reset successfully")
            assert await fenced(again)
            assert await h.connector_offsets("src") == {"offsets": []}
        finally:
            await stop_all(pairs)

    asyncio.run(scenario())
