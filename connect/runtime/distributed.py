"""The distributed herder (Kafka Connect's DistributedHerder): workers of one ``group.id``
share connectors and tasks through the group protocol, keep configs in the config topic,
statuses in the status topic and source offsets in the offsets topic.

One thread (the herder's "tick", as Kafka's) joins the group when a rebalance is due, applies
the assignment (stops what was revoked, starts what was assigned: a rebalance that moves no
task stops no task), and applies what was read from the config topic: a changed connector
config restarts the connector where it runs and has its task configs generated again, written
only if they changed; changed task configs restart those tasks where they run; a new or
removed connector, or a new task count, asks for a rebalance; target states go to the worker.

Requests from the REST API run on the event loop: writes to the config topic are the leader's
(a follower raises NotLeader with the leader's URL, where the REST layer forwards them), and
answer 409 while a rebalance is in progress, as Kafka's."""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import traceback
import urllib.error
import urllib.request
from urllib.parse import quote

import orjson

from josefk.connect.runtime.abstract_herder import AbstractHerder, StatusWriter
from josefk.connect.runtime.assignor import Assignment, AssignorState, Load, eager, incremental
from josefk.connect.runtime.config_store import (ClusterConfigState, KafkaConfigStore,
                                                 RestartRequest, SessionKey)
from josefk.connect.runtime.fencing import cluster_client, fence_producers, transactional_id
from josefk.connect.runtime.group import WorkerGroupMember, WorkerState
from josefk.connect.runtime.herder import (SIGNATURE_ALGORITHM_HEADER, SIGNATURE_HEADER,
                                           AlreadyExists, BadRequest, Forbidden, HerderError,
                                           NotFound, NotLeader, Rebalancing, RequestSignature,
                                           sign)
from josefk.connect.runtime.metrics import ConnectMetrics
from josefk.connect.runtime.offset_store import KafkaOffsetStore
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState
from josefk.connect.runtime.status_store import KafkaStatusStore
from josefk.connect.runtime.worker import Worker
from josefk.connect.runtime.worker_config import WorkerConfig
from josefk.wire.apis.connect_protocol import CONFIG_MISMATCH

log = logging.getLogger("josefk.connect.distributed")

REBALANCING = ("Cannot complete request momentarily due to stale configuration (typically "
               "caused by a concurrent config change)")
TICK_S = 0.2
SESSION_KEY_BYTES = 32  # Java's KeyGenerator for HmacSHA256: 256 bits
INTERNAL_REQUEST_TIMEOUT_S = 30.0
FENCING_TIMEOUT_S = 60.0


def not_found(name: str) -> NotFound:
    return NotFound(f"Connector {name} not found")


class DistributedHerder(AbstractHerder):
    """``worker`` None: a Worker over the offsets topic, reporting to the status topic under
    this worker's id and the group generation."""

    def __init__(self, config: WorkerConfig, worker: Worker | None, plugins: Plugins,
                 metrics: ConnectMetrics | None = None):
        status_store = KafkaStatusStore(config)
        metrics = metrics or ConnectMetrics()
        self.generation = -1
        self.listener = StatusWriter(status_store, lambda: config.worker_id,
                                     lambda: self.generation, metrics)
        offset_store = worker.offset_store if worker is not None else KafkaOffsetStore(config)
        worker = worker or Worker(config, plugins, offset_store, self.listener, metrics)
        super().__init__(config, worker, plugins, status_store, offset_store, metrics)
        self.config_store = KafkaConfigStore(config, listener=self)
        self.member: WorkerGroupMember | None = None
        self.snapshot = ClusterConfigState()
        self.assignor_state = AssignorState()
        self.rebalancing = True
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        # Config-topic positions: the newest update that needs a rebalance, and what the last
        # completed rebalance's assignment was computed from (an update it covers needs none).
        self._rebalance_offset = -1
        self._assigned_offset = -1
        self._connector_updates: set[str] = set()
        self._task_updates: set[str] = set()
        self._target_updates: set[str] = set()
        self._reconfigurations: set[str] = set()
        self._restarts: list[RestartRequest] = []
        self._thread: threading.Thread | None = None
        self._owners: dict = {}  # the leader's: connector or task -> its worker's URL
        self._ready = False

    # -- life -------------------------------------------------------------------------------
    async def start(self) -> None:
        await asyncio.to_thread(self._start_stores)
        self.member = WorkerGroupMember(self.config, self._assign)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="DistributedHerder")
        self._thread.start()

    def _start_stores(self) -> None:
        self.status_store.start()
        self.offset_store.start()
        self.config_store.start()
        self.snapshot = self.config_store.snapshot()

    async def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 30)
        await asyncio.to_thread(self._stop_all)

    def _stop_all(self) -> None:
        self.worker.stop()
        if self.member is not None:
            self.member.close()  # LeaveGroup: the others take over at once
        for store in (self.config_store, self.status_store, self.offset_store):
            store.stop()

    # -- the herder's thread ----------------------------------------------------------------
    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._tick()
            except Exception as e:  # noqa: BLE001 - the herder thread goes on, as Kafka's
                log.error("Uncaught exception in herder work thread: %r", e, exc_info=True)
                self.member.rejoin.set()
                self._stopping.wait(1.0)

    def _tick(self) -> None:
        # Updates first, against what runs now (a connector the coming rebalance assigns
        # is started by it, not bounced after it), as Kafka's tick.
        self._apply_config_updates()
        with self._lock:
            if self._needs_rebalance():
                self.member.rejoin.set()
            self._rebalance_offset = -1
        if self.member.needs_join():
            self._rebalance()
            return
        self._rotate_session_key()
        self._wake.wait(TICK_S)
        self._wake.clear()

    def _rebalance(self) -> None:
        self.rebalancing = True
        self.config_store.refresh()
        self.snapshot = self.config_store.snapshot()
        self.member.state = WorkerState(self.config.rest_url, self.snapshot.offset,
                                        self.member.state.allocation)
        assignment = self.member.join()
        if assignment.error == CONFIG_MISMATCH or assignment.config_offset > self.snapshot.offset:
            # The leader has configs we have not read (or not ourselves): catch up, join again.
            try:
                self.config_store.refresh(self.config["worker.sync.timeout.ms"] / 1000)
            except TimeoutError:
                self._out_of_sync()
                return
            self.snapshot = self.config_store.snapshot()
            if assignment.error:
                self.member.rejoin.set()
                return
        self.generation = self.member.generation
        with self._lock:
            self._assigned_offset = assignment.config_offset
        log.info("Joined group at generation %d with protocol version %d and got assignment: "
                 "connectors %s, tasks %s, revoked connectors %s, revoked tasks %s, delay %d "
                 "ms, leader %s", self.generation, self.member.version, assignment.connectors,
                 [str(t) for t in assignment.tasks], assignment.revoked_connectors,
                 [str(t) for t in assignment.revoked_tasks], assignment.delay,
                 assignment.leader_url)
        self._apply_assignment(assignment)
        self.rebalancing = self.member.needs_join()
        self._ready = True

    def _out_of_sync(self) -> None:
        """Kafka's: a worker that cannot read the config topic to the leader's offset within
        ``worker.sync.timeout.ms`` gives up its work, leaves the group, and comes back after
        ``worker.unsync.backoff.ms``."""
        log.info("Didn't reach end of config log quickly enough; leaving the group for %d ms",
                 self.config["worker.unsync.backoff.ms"])
        running = self.member.running
        self._apply_assignment(Assignment(revoked_connectors=list(running.connectors),
                                          revoked_tasks=list(running.tasks)))
        self.member.leave("the worker is out of sync with the config topic")
        self._stopping.wait(self.config["worker.unsync.backoff.ms"] / 1000)

    def _rotate_session_key(self) -> None:
        """The leader of a ``sessioned`` group keeps a session key in the config topic, a new
        one every ``inter.worker.key.ttl.ms`` (KIP-507)."""
        if self.member.protocol != "sessioned" or not self._is_leader():
            return
        key, now = self.snapshot.session_key, int(time.time() * 1000)
        ttl = self.config["inter.worker.key.ttl.ms"]
        if key is not None and now < key.creation_timestamp + ttl:
            return
        self.config_store.put_session_key(SessionKey(
            os.urandom(SESSION_KEY_BYTES),
            self.config["inter.worker.key.generation.algorithm"], now))
        self.snapshot = self.config_store.snapshot()

    def _assign(self, protocol: str, leader: str,
                states: dict[str, WorkerState]) -> dict[str, Assignment]:
        """The leader's part of a round (Kafka's ConnectAssignor): its config must be at least
        as new as every member's, else every member is told CONFIG_MISMATCH."""
        newest = max(s.config_offset for s in states.values())
        if self.snapshot.offset < newest:
            self.config_store.refresh()
            self.snapshot = self.config_store.snapshot()
        if self.snapshot.offset < newest:
            return {m: Assignment(error=CONFIG_MISMATCH, config_offset=newest) for m in states}
        snap = self.snapshot
        configured = Load(snap.connectors(), [t for c in snap.connectors() for t in snap.tasks(c)])
        if protocol == "default":
            out = eager(configured, list(states))
        else:
            members = {m: Load(list(s.allocation.connectors), list(s.allocation.tasks))
                       if s.allocation else Load() for m, s in states.items()}
            out, self.assignor_state = incremental(
                self.assignor_state, configured, members, int(time.time() * 1000),
                self.config["scheduled.rebalance.max.delay.ms"], self.generation,
                self.member.generation)
        owners = {}
        for m, a in out.items():
            a.config_offset = snap.offset
            before = states[m].allocation or Assignment()
            if protocol == "default":
                before = Assignment()
            for item in ([c for c in before.connectors if c not in a.revoked_connectors]
                         + [t for t in before.tasks if t not in a.revoked_tasks]
                         + a.connectors + a.tasks):
                owners[item] = states[m].url
        self._owners = owners
        return out

    def _apply_assignment(self, a: Assignment) -> None:
        running_c, running_t = set(self.worker.connector_names()), set(self.worker.task_ids())
        stop_c = [c for c in a.revoked_connectors if c in running_c]
        stop_t = [t for t in a.revoked_tasks if t in running_t]
        if self.member.version == 0:
            # Eager: everything was given up; what is assigned again keeps running.
            stop_c = [c for c in stop_c if c not in a.connectors]
            stop_t = [t for t in stop_t if t not in a.tasks]
        if stop_c:
            self.worker.stop_connectors(stop_c)
        if stop_t:
            self.worker.stop_tasks(stop_t)
        for name in stop_c:
            if name not in self.snapshot.connector_configs:
                self._deleted(name, set())
        running_c.difference_update(stop_c)
        running_t.difference_update(stop_t)
        for name in a.connectors:
            if name not in running_c:
                self._start_connector(name)
        for id in a.tasks:
            if id not in running_t:
                self._start_task(id)

    def _start_connector(self, name: str) -> None:
        props = self.snapshot.connector_configs.get(name)
        if props is None:
            return
        self.worker.start_connector(name, props, self.snapshot.target_state(name),
                                    lambda: self._request_task_reconfiguration(name))
        self._reconfigure_tasks(name)

    def _start_task(self, id: ConnectorTaskId) -> None:
        props = self.snapshot.connector_configs.get(id.connector)
        task_props = self.snapshot.task_config(id)
        if props is None or task_props is None:
            return
        if (self.config.exactly_once_source and id.connector in self.snapshot.pending_fencing
                and self.connector_type(props) == "source"):
            try:
                self._fence_before_start(id.connector)
            except Exception as e:  # noqa: BLE001 - the task fails, the worker goes on
                log.error("Failed to perform zombie fencing for %s before starting task %s: %s",
                          id.connector, id, e)
                self.listener.on_failure(id, "".join(traceback.format_exception(e)))
                return
        self.worker.start_task(id, props, task_props, self.snapshot.target_state(id.connector))

    def _reconfigure_tasks(self, name: str) -> None:
        """The running connector's task configs, written only if they changed (Kafka's
        reconfigureConnector)."""
        props = self.snapshot.connector_configs.get(name)
        if props is None or self.snapshot.target_state(name) is not TargetState.STARTED:
            return
        configs = self.worker.connector_task_configs(name, props)
        current = [self.snapshot.task_config(t) for t in self.snapshot.tasks(name)]
        if configs == current:
            return
        if self._is_leader():
            self.config_store.put_task_configs(name, configs)
            return
        try:  # Kafka's: a follower's connector has the leader write them
            self._to_leader("POST", f"/connectors/{quote(name, safe='')}/tasks", configs)
        except (OSError, NotLeader) as e:
            log.error("Request to leader to reconfigure connector tasks failed: %s", e)
            with self._lock:  # tried again on the next tick
                self._reconfigurations.add(name)

    def _to_leader(self, method: str, path: str, body) -> None:
        """An internal request to the leader's REST API, signed with the session key when the
        group is ``sessioned`` (KIP-507); OSError when it fails."""
        leader_url = self.member.running.leader_url if self.member else None
        if not leader_url:
            raise NotLeader("No known leader URL", None)
        data = orjson.dumps(body)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.config_store.snapshot().session_key
        if self.member.protocol == "sessioned" and key is not None:
            algorithm = self.config["inter.worker.signature.algorithm"]
            headers[SIGNATURE_HEADER] = sign(key.key, data, algorithm)
            headers[SIGNATURE_ALGORITHM_HEADER] = algorithm
        request = urllib.request.Request(leader_url.rstrip("/") + path + "?forward=false",
                                         data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=INTERNAL_REQUEST_TIMEOUT_S):
                pass
        except urllib.error.HTTPError as e:
            raise OSError(f"{method} {path} answered {e.code}: "
                          f"{e.read().decode('utf-8', 'replace')}") from None

    def _fence_before_start(self, name: str) -> None:
        """KIP-618: a task of a new generation starts only once the previous generation's
        producers are fenced and the task-count record written: by the leader (this worker,
        or asked over ``PUT /connectors/{name}/fence``)."""
        if self._is_leader():
            self._fence_zombies(name)
        else:
            self._to_leader("PUT", f"/connectors/{quote(name, safe='')}/fence", None)
        self.config_store.refresh()
        self.snapshot = self.config_store.snapshot()
        if name in self.snapshot.pending_fencing:
            raise RuntimeError(f"Zombie fencing of connector {name} has not completed")

    def _fence_zombies(self, name: str) -> None:
        """The leader's: fence the producers of every task of the generation its last
        task-count record counted (none before the first), then write the new task count."""
        self.config_store.refresh()  # a follower asking may have read the commit before us
        snap = self.config_store.snapshot()
        if name not in snap.pending_fencing:
            return
        previous = snap.task_count_records.get(name, 0)
        if previous:
            ids = [transactional_id(self.config["group.id"], name, t) for t in range(previous)]
            log.info("Fencing out %d task producers for source connector %s", previous, name)
            cc = cluster_client(self.config, f"connector-fencing-{name}")
            try:
                fence_producers(cc, ids, FENCING_TIMEOUT_S)
            finally:
                cc.close()
        self.config_store.put_task_count_record(name, snap.task_counts.get(name, 0))

    def _request_task_reconfiguration(self, name: str) -> None:
        """The connector's context asking for its task configs to be taken again."""
        with self._lock:
            self._reconfigurations.add(name)
        self._wake.set()

    def _apply_config_updates(self) -> None:
        with self._lock:
            connectors, self._connector_updates = self._connector_updates, set()
            tasks, self._task_updates = self._task_updates, set()
            targets, self._target_updates = self._target_updates, set()
            restarts, self._restarts = self._restarts, []
            reconfigure, self._reconfigurations = self._reconfigurations, set()
        if not (connectors or tasks or targets or restarts or reconfigure):
            return
        self.snapshot = self.config_store.snapshot()
        mine_c = set(self.worker.connector_names())
        mine_t = set(self.worker.task_ids())
        for name in sorted(connectors & mine_c):
            self.worker.stop_connectors([name])
            if name in self.snapshot.connector_configs:
                self._start_connector(name)
            else:
                self._deleted(name, mine_t)
        for name in sorted(tasks):
            ids = sorted(t for t in mine_t if t.connector == name)
            if ids:
                self.worker.stop_tasks(ids)
                for id in ids:
                    if id in self.snapshot.task_configs:
                        self._start_task(id)
        # Every worker: the connector's tasks may run here without it (Kafka's
        # processTargetStateChanges).
        for name in sorted(targets & set(self.snapshot.connector_configs)):
            self.worker.set_target_state(name, self.snapshot.target_state(name))
            if name in mine_c and self.snapshot.target_state(name) is TargetState.STARTED:
                self._reconfigure_tasks(name)
        for request in restarts:
            self._restart(request, mine_c, mine_t)
        for name in sorted((reconfigure - connectors) & mine_c):
            self._reconfigure_tasks(name)

    def _deleted(self, name: str, mine_t: set) -> None:
        """The deleted connector's worker stops its tasks here too (it may not wait for the
        rebalance), and removes its statuses and used topics (Kafka's onDeletion)."""
        tasks = sorted(t for t in mine_t if t.connector == name)
        if tasks:
            self.worker.stop_tasks(tasks)
        for task in self.status_store.tasks(name):
            self.listener.on_deletion(ConnectorTaskId(name, task))
        self.listener.on_deletion(name)
        self.status_store.delete_topics(name)

    def _restart(self, r: RestartRequest, mine_c: set, mine_t: set) -> None:
        """KIP-745 on each worker, for what it runs of the plan."""
        try:
            plan = self.restart_plan(r.connector, r.include_tasks, r.only_failed)
        except NotFound:
            return  # deleted since, or no status yet: nothing ran
        if plan.restart_connector and r.connector in mine_c:
            self.listener.on_restart(r.connector)
            self.worker.stop_connectors([r.connector])
            self._start_connector(r.connector)
        ids = [t for t in plan.tasks if t in mine_t]
        if ids:
            for id in ids:
                self.listener.on_restart(id)
            self.worker.stop_tasks(ids)
            for id in ids:
                self._start_task(id)

    # -- what the config store reads (its thread) --------------------------------------------
    def _rebalance_for_update(self) -> None:
        """Under ``_lock``: the update just read asks for a rebalance (see _needs_rebalance)."""
        self._rebalance_offset = self.config_store.offset

    def _needs_rebalance(self) -> bool:
        """Not when the last rebalance's assignment was computed from that update already (the
        leader read it before this worker did): joining again would only hold up the group."""
        return self._rebalance_offset > self._assigned_offset

    def on_connector_config_update(self, connector: str) -> None:
        with self._lock:
            if connector not in self.snapshot.connector_configs:
                self._rebalance_for_update()
            self._connector_updates.add(connector)
        self._wake.set()

    def on_connector_config_remove(self, connector: str) -> None:
        with self._lock:
            self._rebalance_for_update()
            self._connector_updates.add(connector)
        self._wake.set()

    def on_task_config_update(self, tasks: list[ConnectorTaskId]) -> None:
        """Its tasks restart where they run, and a rebalance places the new set (as Kafka's:
        cooperative, it stops nothing else)."""
        with self._lock:
            self._rebalance_for_update()
            self._task_updates.update(t.connector for t in tasks)
        self._wake.set()

    def on_connector_target_state_change(self, connector: str) -> None:
        with self._lock:
            self._target_updates.add(connector)
        self._wake.set()

    def on_session_key_update(self, key) -> None:
        """The key is read from the store's snapshot when a request is signed or verified."""

    def on_restart_request(self, request: RestartRequest) -> None:
        with self._lock:
            self._restarts.append(request)
        self._wake.set()

    def on_logging_level_update(self, namespace: str, level: str) -> None:
        self.loggers.set_level(namespace, level)

    # -- requests (the event loop) ----------------------------------------------------------
    def ready(self) -> bool:
        """Start-up is complete once the first rebalance's assignment has been applied."""
        return self._ready

    def _verify(self, signature: RequestSignature | None) -> None:
        """KIP-507: a ``sessioned`` group's internal requests carry a signature made with the
        session key (Kafka's DistributedHerder.requestNotSignedProperly)."""
        if self.member is None or self.member.protocol != "sessioned":
            return
        if signature is None:
            raise BadRequest("Internal request missing required signature")
        allowed = self.config["inter.worker.verification.algorithms"]
        if signature.algorithm not in allowed:
            raise BadRequest(
                f"This worker does not support the '{signature.algorithm}' key signing "
                f"algorithm used by other workers. This worker is currently configured to use: "
                f"[{', '.join(allowed)}]. Check that all workers' configuration files permit the "
                f"same set of signature algorithms, and correct any misconfigured worker and "
                f"restart it.")
        key = self.config_store.snapshot().session_key
        if key is None or not signature.is_valid(key.key):
            raise Forbidden("Internal request contained invalid signature.")

    def _leader_only(self, message: str, name: str) -> None:
        if not self._is_leader():
            raise NotLeader(message, self.member.running.leader_url or None
                            if self.member else None)
        if name not in self.config_store.snapshot().connector_configs:
            raise not_found(name)

    async def put_task_configs(self, name: str, configs: list[dict[str, str]],
                               signature: RequestSignature | None) -> None:
        self._verify(signature)
        self._leader_only("Only the leader may write task configurations.", name)
        await asyncio.to_thread(self.config_store.put_task_configs, name, configs)

    async def fence_zombies(self, name: str, signature: RequestSignature | None) -> None:
        self._verify(signature)
        self._leader_only("Only the leader may perform zombie fencing.", name)
        await asyncio.to_thread(self._fence_zombies, name)

    def rebalance_due(self) -> bool:
        """A rebalance is in progress or asked for (Kafka's checkRebalanceNeeded)."""
        return (self.rebalancing or self._needs_rebalance()
                or (self.member is not None and self.member.needs_join()))

    def _is_leader(self) -> bool:
        running = self.member.running if self.member else None
        return bool(running and running.leader and running.leader == self.member.member_id)

    def _check_leader(self, message: str) -> None:
        if self.rebalance_due():
            raise Rebalancing(REBALANCING)
        if not self._is_leader():
            leader_url = self.member.running.leader_url if self.member else ""
            raise NotLeader(message, leader_url or None)

    def _config_state(self) -> ClusterConfigState:
        if self.rebalance_due():
            raise Rebalancing(REBALANCING)
        return self.config_store.snapshot()

    def _existing(self, name: str) -> ClusterConfigState:
        snap = self._config_state()
        if name not in snap.connector_configs:
            raise not_found(name)
        return snap

    def _config(self, name: str) -> dict[str, str]:
        props = self.config_store.snapshot().connector_configs.get(name)
        if props is None:
            raise not_found(name)
        return props

    def _target(self, name: str) -> TargetState:
        self._config(name)
        return self.config_store.snapshot().target_state(name)

    async def connectors(self) -> list[str]:
        return self._config_state().connectors()

    async def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._existing(name).connector_configs[name])

    async def task_configs(self, name: str) -> list[dict]:
        snap = self._existing(name)
        return [{"id": {"connector": t.connector, "task": t.task},
                 "config": snap.task_config(t)} for t in snap.tasks(name)]

    async def connector_info(self, name: str) -> dict:
        snap = self._existing(name)
        props = snap.connector_configs[name]
        return {"name": name, "config": dict(props),
                "tasks": [{"connector": t.connector, "task": t.task} for t in snap.tasks(name)],
                "type": self.connector_type(props)}

    async def put_connector_config(self, name: str, config: dict[str, str],
                                   allow_replace: bool,
                                   initial_state: str | None = None) -> tuple[bool, dict]:
        self._check_leader("Only the leader can set connector configs.")
        config = {**config, "name": name}
        await self._validated(config)
        snap = self.config_store.snapshot()
        exists = name in snap.connector_configs
        if exists and not allow_replace:
            raise AlreadyExists(f"Connector {name} already exists")
        target = None if exists else TargetState(initial_state or "STARTED")
        await asyncio.to_thread(self.config_store.put_connector_config, name, config, target)
        return not exists, {"name": name, "config": config, "tasks": [
            {"connector": t.connector, "task": t.task} for t in snap.tasks(name)],
            "type": self.connector_type(config)}

    async def delete_connector(self, name: str) -> None:
        self._check_leader("Only the leader can delete connector configs.")
        self._existing(name)
        await asyncio.to_thread(self.config_store.remove_connector_config, name)

    async def _put_target(self, name: str, state: TargetState) -> None:
        """Any worker writes a pause or a resume (Kafka's AbstractHerder)."""
        self._existing(name)
        await asyncio.to_thread(self.config_store.put_target_state, name, state)

    async def pause_connector(self, name: str) -> None:
        await self._put_target(name, TargetState.PAUSED)

    async def resume_connector(self, name: str) -> None:
        await self._put_target(name, TargetState.STARTED)

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """KIP-976: through the config topic, which every worker (this one too) reads; any
        worker may write it."""
        await asyncio.to_thread(self.config_store.put_logger_level, namespace, level)

    async def stop_connector(self, name: str) -> None:
        """KIP-875: zero task configs first, then the STOPPED target state (a started
        connector without tasks is a healthier half-way state than a stopped one with)."""
        self._check_leader("Only the leader can transition connectors to the STOPPED state.")
        self._existing(name)
        await asyncio.to_thread(self.config_store.put_task_configs, name, [])
        await asyncio.to_thread(self.config_store.put_target_state, name, TargetState.STOPPED)

    async def restart_connector(self, name: str, include_tasks: bool,
                                only_failed: bool) -> dict | None:
        """KIP-745: the request goes through the config topic to the workers running them;
        the answer is the plan's status, what restarts marked RESTARTING (None when only the
        connector restarts, whatever its state)."""
        self._check_leader("Only the leader can process restart requests.")
        self._existing(name)
        plan = self.restart_plan(name, include_tasks, only_failed)
        await asyncio.to_thread(self.config_store.put_restart_request,
                                RestartRequest(name, include_tasks, only_failed))
        if not include_tasks and not only_failed:
            return None
        return plan.body

    async def restart_task(self, name: str, task: int) -> None:
        """Restarted where it runs: here, or the request goes to its worker (the leader knows
        it) or to the leader, as Kafka's NotAssigned / NotLeader."""
        if self.rebalance_due():
            raise Rebalancing(REBALANCING)
        id = ConnectorTaskId(name, task)
        snap = self._existing(name)
        if snap.task_config(id) is None:
            raise NotFound(f"Unknown task: {id}")
        if id in self.worker.task_ids():
            def restart():
                self.worker.stop_tasks([id])
                self._start_task(id)
            await asyncio.to_thread(restart)
            return
        if self._is_leader():
            raise NotLeader("Cannot restart task since it is not assigned to this member",
                            self._owners.get(id))
        raise NotLeader("Cannot restart task since it is not assigned to this member",
                        self.member.running.leader_url or None)

    async def alter_connector_offsets(self, name: str, offsets: list[dict]) -> str:
        """KIP-875, the leader's, once the connector is STOPPED with no tasks left (Kafka's
        modifyConnectorOffsets)."""
        self._offsets_modifiable(name)
        return await super().alter_connector_offsets(name, offsets)

    async def reset_connector_offsets(self, name: str) -> str:
        self._offsets_modifiable(name)
        return await super().reset_connector_offsets(name)

    async def _before_modifying_offsets(self, name: str, props: dict[str, str]) -> None:
        """KIP-618 with KIP-875 (Kafka's DistributedHerder.modifyConnectorOffsets): an
        exactly-once source's task producers are fenced first, then the checks made again
        (the fencing took time)."""
        if not self.config.exactly_once_source or self.connector_type(props) != "source":
            return
        try:
            await asyncio.to_thread(self._fence_zombies, name)
        except Exception as e:  # noqa: BLE001 - the request fails, with Kafka's message
            log.error("Failed to perform zombie fencing for exactly-once source connector %s "
                      "prior to modifying offsets: %s", name, e)
            raise HerderError("Failed to perform zombie fencing for source connector prior to "
                              "modifying offsets") from e
        self._offsets_modifiable(name)

    def _offsets_modifiable(self, name: str) -> None:
        self._check_leader("Only the leader can process external offsets modification "
                           "requests.")
        snap = self._existing(name)
        self._check_stopped(name, tasks_left=bool(snap.tasks(name)))
