"""The worker (Kafka's ``Worker``): runs connectors and tasks for a herder, each on a thread of
its own. A connector's thread applies its target state (STARTED: ``start``; PAUSED: started
and paused; STOPPED: ``stop``) and the connector's ConnectorContext reaches the herder
(``request_task_reconfiguration``) or fails the connector (``raise_error``). A task is built
here (its class from ``task.class``, converters, transformations, error handling, Kafka
clients) and runs its loop in source_task / sink_task. Every state change goes to the
StatusListener."""
from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Callable

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from josefk.connect.api.config import ConfigException
from josefk.connect.api.connector import Connector, SinkConnector, SinkTask, SourceTask
from josefk.connect.api.errors import ConnectException
from josefk.connect.runtime.connector_config import ConnectorConfig, finder, uses_topic_creation
from josefk.connect.runtime.errors import (DeadLetterQueueReporter, LogReporter,
                                           RetryWithToleranceOperator, stack_trace)
from josefk.connect.runtime.metrics import ConnectMetrics
from josefk.connect.runtime.offset_store import connector_offset_store
from josefk.connect.runtime.plugins import Plugins, import_class
from josefk.connect.runtime.seams import (ConnectorTaskId, OffsetStore, StatusListener,
                                          TargetState)
from josefk.connect.runtime.sink_task import (MAX_POLL_RECORDS, WorkerSinkTask, consumer_defaults,
                                              subscription)
from josefk.connect.runtime.source_task import (TopicCreation, WorkerSourceTask,
                                                producer_defaults, transactional_settings)
from josefk.connect.runtime.worker_config import WorkerConfig
from josefk.connect.runtime.worker_task import Pipeline, WorkerTask
from josefk.connect.transforms.chain import TransformationChain

log = logging.getLogger("josefk.connect.worker")

_STOP = object()


class WorkerConnector:
    """One connector on its thread: target states applied in order from a queue."""

    def __init__(self, name: str, connector: Connector, props: dict[str, str],
                 listener: StatusListener, on_reconfigure: Callable[[], None]):
        self.name, self.connector, self.props = name, connector, props
        self.listener, self.on_reconfigure = listener, on_reconfigure
        self.started = self.failed = False
        self.state: TargetState | None = None
        self.lock = threading.Lock()  # the connector's methods, one caller at a time
        self.ready = threading.Event()
        self.commands: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self.run, name=f"connector-{name}", daemon=True)

    # ConnectorContext
    def request_task_reconfiguration(self) -> None:
        if self.started and not self.failed:
            self.on_reconfigure()

    def raise_error(self, error: Exception) -> None:
        self._fail(error)

    def _fail(self, error: BaseException) -> None:
        if self.failed:
            return
        self.failed = True
        log.error("WorkerConnector{id=%s} Connector raised an error", self.name, exc_info=error)
        self.listener.on_failure(self.name, stack_trace(error))

    def run(self) -> None:
        try:
            with self.lock:
                self.connector.initialize(self)
        except Exception as e:
            self._fail(e)
            self.ready.set()
        while True:
            target, done = self.commands.get()
            if target is _STOP:
                break
            if not self.failed:
                self._transition(target)
            self.ready.set()
            done.set()
        self._shutdown()

    def transition_to(self, target, wait: float = 0.0) -> None:
        """Queue a target state (or _STOP); wait up to ``wait`` seconds for it to apply."""
        done = threading.Event()
        self.commands.put((target, done))
        if wait:
            done.wait(wait)

    def _transition(self, target: TargetState) -> None:
        try:
            with self.lock:
                if target is TargetState.STOPPED:
                    if self.started:
                        self.connector.stop()
                        self.started = False
                    self.listener.on_stop(self.name)
                elif not self.started:
                    self.connector.start(self.props)
                    self.started = True
                    if target is TargetState.PAUSED:
                        self.listener.on_pause(self.name)
                    else:
                        self.listener.on_startup(self.name)
                elif target is TargetState.PAUSED:
                    self.listener.on_pause(self.name)
                elif self.state is not TargetState.STARTED:
                    self.listener.on_running(self.name)
                self.state = target
        except Exception as e:
            self._fail(e)

    def _shutdown(self) -> None:
        try:
            with self.lock:
                if self.started:
                    self.connector.stop()
                    self.started = False
        except Exception as e:
            self._fail(e)
        if not self.failed:
            self.listener.on_shutdown(self.name)

    def task_configs(self, max_tasks: int, enforce: bool) -> list[dict[str, str]]:
        if not self.ready.wait(30):
            raise ConnectException(f"Connector {self.name} did not start in time")
        if self.failed or not self.started:
            raise ConnectException(f"Connector {self.name} is not running")
        with self.lock:
            configs = self.connector.task_configs(max_tasks)
            task_class = self.connector.task_class()
        if len(configs) > max_tasks:
            message = (f"The connector {self.name} has generated {len(configs)} tasks, which "
                       f"is greater than {max_tasks}, the maximum number of tasks it is "
                       f"configured to create. ")
            if enforce:
                error = ConnectException(message + "This behaviour should be considered a bug "
                                                   "and is no longer permitted.")
                self._fail(error)
                raise error
            log.warning("%sThe connector's extra tasks run, as tasks.max.enforce=false.",
                        message)
        name = f"{task_class.__module__}.{task_class.__qualname__}"
        return [dict(config, **{"task.class": name}) for config in configs]


class Worker:
    """The Worker seam. ``offset_store`` holds source offsets; ``listener`` is told of every
    state change; ``metrics`` gets the counters."""

    def __init__(self, config: WorkerConfig, plugins: Plugins, offset_store: OffsetStore,
                 listener: StatusListener, metrics: ConnectMetrics | None = None):
        self.config, self.plugins, self.offset_store = config, plugins, offset_store
        self.listener = listener
        self.metrics = metrics or ConnectMetrics()
        self.connectors: dict[str, WorkerConnector] = {}
        self.tasks: dict[ConnectorTaskId, WorkerTask] = {}
        self._lock = threading.Lock()

    @property
    def worker_id(self) -> str:
        return self.config.worker_id

    def _connector_config(self, props: dict[str, str]) -> ConnectorConfig:
        sink = self.is_sink(props)
        return ConnectorConfig(self.plugins, props, sink,
                               bool(self.config.get("topic.creation.enable", True)))

    def is_sink(self, connector_props: dict[str, str]) -> bool:
        return issubclass(self.plugins.connector_class(connector_props["connector.class"]),
                          SinkConnector)

    # ---- connectors ------------------------------------------------------------------------
    def start_connector(self, name: str, props: dict[str, str], target: TargetState,
                        on_reconfigure: Callable[[], None]) -> None:
        with self._lock:
            if name in self.connectors:
                raise ConnectException(f"Connector with name {name} already exists")
            try:
                self._connector_config(props)
                connector = self.plugins.new_connector(props["connector.class"])
            except Exception as e:
                log.error("Failed to start connector %s", name, exc_info=e)
                self.listener.on_failure(name, stack_trace(e))
                return
            running = WorkerConnector(name, connector, props, self.listener, on_reconfigure)
            self.connectors[name] = running
            self.metrics.connector_count.set(len(self.connectors))
        running.thread.start()
        running.transition_to(target)

    def connector_task_configs(self, name: str, props: dict[str, str]) -> list[dict[str, str]]:
        running = self.connectors.get(name)
        if running is None:
            raise ConnectException(f"Connector {name} is not running on this worker")
        config = self._connector_config(props)
        return running.task_configs(config["tasks.max"], config["tasks.max.enforce"])

    def set_target_state(self, name: str, target: TargetState) -> None:
        running = self.connectors.get(name)
        if running is not None:
            running.transition_to(target, wait=30)
        ids = [id for id in self.tasks if id.connector == name]
        if target is TargetState.STOPPED:
            self.stop_tasks(ids)
            return
        for id in ids:
            self.tasks[id].transition_to(target)

    def stop_connectors(self, names: list[str]) -> None:
        stopping = [self.connectors.pop(n) for n in names if n in self.connectors]
        for running in stopping:
            running.transition_to(_STOP)
        deadline = time.monotonic() + self.config["task.shutdown.graceful.timeout.ms"] / 1000
        for running in stopping:
            running.thread.join(max(0.0, deadline - time.monotonic()))
            if running.thread.is_alive():
                log.error("Connector %s did not stop in time", running.name)
        self.metrics.connector_count.set(len(self.connectors))

    def connector_names(self) -> list[str]:
        return list(self.connectors)

    # ---- tasks -----------------------------------------------------------------------------
    def start_task(self, id: ConnectorTaskId, connector_props: dict[str, str],
                   task_props: dict[str, str], target: TargetState) -> bool:
        if id in self.tasks:
            raise ConnectException(f"Task already exists in this worker: {id}")
        try:
            worker_task = self._build_task(id, connector_props, task_props, target)
        except Exception as e:
            log.error("Failed to start task %s", id, exc_info=e)
            self.listener.on_failure(id, stack_trace(e))
            return False
        self.tasks[id] = worker_task
        self.metrics.task_count.set(len(self.tasks))
        worker_task.start()
        return True

    def _build_task(self, id, connector_props, task_props, target) -> WorkerTask:
        config = self._connector_config(connector_props)
        task_class = import_class(task_props.get("task.class") or "")
        if task_class is None:
            raise ConfigException(f"Task class {task_props.get('task.class')} could not be "
                                  f"found.")
        task = task_class()
        pipeline = self._pipeline(config)
        stopping = threading.Event()
        task_metrics = self.metrics.task(id, config.sink)
        reporters = []
        if config["errors.log.enable"]:
            reporters.append(LogReporter(id, config["errors.log.include.messages"]))
        dlq = None
        if config.sink and config["errors.deadletterqueue.topic.name"].strip():
            dlq = self._dead_letter_queue(id, config)
            reporters.append(dlq)

        def on_error(tolerated: bool):
            task_metrics.record_errors.inc()
            if tolerated:
                task_metrics.records_skipped.inc()
            if dlq is not None:
                task_metrics.dlq.inc()
        operator = RetryWithToleranceOperator.from_config(config, reporters, stopping, on_error)
        flush_ms = self.config["offset.flush.interval.ms"]
        if config.sink:
            if not isinstance(task, SinkTask):
                raise ConfigException(f"{task_class.__qualname__} is not a SinkTask")
            settings = dict(consumer_defaults(id.connector, f"connector-consumer-{id}"))
            settings.update(self._client_settings("consumer", config))
            return WorkerSinkTask(id, task, task_props, self.listener, target, pipeline,
                                  operator, stopping, consumer_settings=settings,
                                  topics=subscription(config), flush_interval_ms=flush_ms,
                                  metrics=task_metrics, dlq=dlq,
                                  errant_reporting=bool(reporters),
                                  max_poll_records=self._max_poll_records(config))
        if not isinstance(task, SourceTask):
            raise ConfigException(f"{task_class.__qualname__} is not a SourceTask")
        settings = dict(producer_defaults(f"connector-producer-{id}"))
        transactional = None
        if self.config.exactly_once_source:
            settings.update(transactional_settings(self.config["group.id"], id))
            boundary = config["transaction.boundary"].lower()
            transactional = {"boundary": boundary}
            if boundary == "interval" and config["transaction.boundary.interval.ms"] is not None:
                flush_ms = config["transaction.boundary.interval.ms"]
        settings.update(self._client_settings("producer", config))
        offset_store = connector_offset_store(
            self.config, self.offset_store, config.props,
            {kind: self._client_settings(kind, config) for kind in ("producer", "consumer",
                                                                     "admin")},
            f"connector-offsets-{id}")
        creation = None
        if self.config.get("topic.creation.enable", True) and uses_topic_creation(config.props):
            creation = TopicCreation(self._admin(config), config)
        return WorkerSourceTask(id, task, task_props, self.listener, target, pipeline, operator,
                                stopping, producer_settings=settings,
                                offset_store=offset_store, flush_interval_ms=flush_ms,
                                flush_timeout_ms=self.config["offset.flush.timeout.ms"],
                                metrics=task_metrics, topic_creation=creation,
                                transactional=transactional)

    def _max_poll_records(self, config: ConnectorConfig) -> int:
        """The Java consumer's ``max.poll.records`` (librdkafka has none): the connector's
        override, else the worker's ``consumer.max.poll.records``, else 500."""
        value = config.props.get("consumer.override.max.poll.records",
                                 self.config.props.get("consumer.max.poll.records"))
        try:
            return max(1, int(value)) if value is not None else MAX_POLL_RECORDS
        except ValueError:
            raise ConfigException("max.poll.records", value, "Not a number of type INT") \
                from None

    def _client_settings(self, kind: str, config: ConnectorConfig) -> dict:
        overrides = config.prefixed(f"{kind}.override.")
        refused = self.config.check_overrides(kind, overrides)
        if refused:
            raise ConfigException(
                f"The '{self.config['connector.client.config.override.policy']}' policy does "
                f"not allow '{refused[0]}' to be overridden in the connector configuration.")
        return self.config.client_settings(kind, overrides)

    def _admin(self, config: ConnectorConfig):
        return AdminClient(self._client_settings("admin", config))

    def _dead_letter_queue(self, id: ConnectorTaskId, config: ConnectorConfig):
        topic = config["errors.deadletterqueue.topic.name"].strip()
        admin = self._admin(config)
        if topic not in admin.list_topics(timeout=30).topics:
            future = admin.create_topics([NewTopic(
                topic, 1, config["errors.deadletterqueue.topic.replication.factor"])])[topic]
            try:
                future.result(30)
            except KafkaException as e:
                if e.args[0].code() != 36:  # TOPIC_ALREADY_EXISTS
                    raise ConnectException(f"Could not initialize dead letter queue with "
                                           f"topic={topic}: {e}") from e
        settings = dict(producer_defaults(f"connector-dlq-producer-{id}"))
        settings.update(self._client_settings("producer", config))
        return DeadLetterQueueReporter(Producer(settings), topic, id.connector, id.task,
                                       config["errors.deadletterqueue.context.headers.enable"])

    def _pipeline(self, config: ConnectorConfig) -> Pipeline:
        converters = []
        for setting, kind in (("key.converter", "converter"), ("value.converter", "converter"),
                              ("header.converter", "header_converter")):
            name = config.get(setting)
            source = config.props if name else self.config.props
            name = name or self.config[setting]
            converter = self.plugins.new_plugin(kind, name)
            prefix = setting + "."
            settings = {k[len(prefix):]: v for k, v in source.items() if k.startswith(prefix)}
            if kind == "converter":
                settings["converter.type"] = setting.split(".")[0]
                converter.configure(settings, setting == "key.converter")
            else:
                settings["converter.type"] = "header"
                converter.configure(settings)
            converters.append(converter)
        chain = TransformationChain.from_config(config.props, finder(self.plugins))
        return Pipeline(*converters, chain=chain)

    def stop_tasks(self, ids: list[ConnectorTaskId]) -> None:
        stopping = [self.tasks.pop(id) for id in ids if id in self.tasks]
        for worker_task in stopping:
            worker_task.stop()
        deadline = time.monotonic() + self.config["task.shutdown.graceful.timeout.ms"] / 1000
        for worker_task in stopping:
            if not worker_task.join(max(0.0, deadline - time.monotonic())):
                log.error("Graceful stop of task %s failed.", worker_task.id)
        self.metrics.task_count.set(len(self.tasks))

    def task_ids(self) -> list[ConnectorTaskId]:
        return list(self.tasks)

    def stop(self) -> None:
        self.stop_tasks(list(self.tasks))
        self.stop_connectors(list(self.connectors))

