"""What source and sink tasks share (Kafka's WorkerTask): a thread running the task's loop,
its target state (running or paused), its status told to a StatusListener (RUNNING once
started, PAUSED/RUNNING on pause and resume, FAILED with the trace, UNASSIGNED once shut
down), and the record pipeline's parts: converters, the transformation chain, the error
handling operator."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from josefk.connect.api.connector import Task
from josefk.connect.runtime.errors import (ProcessingContext, RetryWithToleranceOperator, Stage,
                                           stack_trace)
from josefk.connect.runtime.seams import ConnectorTaskId, StatusListener, TargetState
from josefk.connect.transforms.chain import TransformationChain

log = logging.getLogger("josefk.connect.task")


@dataclass
class Pipeline:
    """A task's converters and transformation chain, built by the worker."""
    key_converter: object
    value_converter: object
    header_converter: object
    chain: TransformationChain = field(default_factory=TransformationChain)

    def transform(self, record, operator: RetryWithToleranceOperator,
                  context: ProcessingContext):
        """The record after every transformation, None if one dropped it or failed (and
        the failure was tolerated): each stage run by the operator, as Kafka's
        TransformationChain does."""
        for _, stage in self.chain.stages:
            executing = getattr(stage, "transformation", stage)
            record = operator.execute(context, Stage.TRANSFORMATION, type(executing),
                                      stage.apply, record)
            if record is None:
                return None
        return record

    def close(self) -> None:
        try:
            self.chain.close()
        except Exception as e:
            log.warning("Closing the transformation chain failed: %s", e)


class WorkerTask:
    """A task on its thread. Subclasses implement ``initialize_task`` (clients, ``start``),
    ``iteration`` (one turn of the loop), ``on_pause``/``on_resume`` hooks and ``close``."""

    kind = "task"
    stop_from_caller = False
    """Whether the task's ``stop`` is called from the thread stopping it (a source's, so a
    blocking ``poll`` can be woken) rather than from the task's own thread once its loop
    ended."""

    def __init__(self, id: ConnectorTaskId, task: Task, task_props: dict[str, str],
                 listener: StatusListener, target: TargetState, pipeline: Pipeline,
                 operator: RetryWithToleranceOperator, stopping: threading.Event):
        self.id, self.task, self.task_props = id, task, task_props
        self.listener, self.pipeline, self.operator = listener, pipeline, operator
        self.target = target
        self.stopping = stopping
        self._wake = threading.Event()
        self.failed = self._started = self._task_stopped = False
        self._stop_lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, name=f"task-{id}", daemon=True)

    def __str__(self):
        return f"Worker{self.kind.capitalize()}Task{{id={self.id}}}"

    def start(self) -> None:
        self.thread.start()

    def transition_to(self, target: TargetState) -> None:
        self.target = target
        self._wake.set()

    def stop(self) -> None:
        self.stopping.set()
        self._wake.set()
        if self.stop_from_caller:
            self._stop_task()

    def _stop_task(self) -> None:
        """The task's ``stop``, once, if it was started."""
        with self._stop_lock:
            if self._task_stopped or not self._started:
                return
            self._task_stopped = True
        try:
            self.task.stop()
        except Exception as e:
            log.error("%s Task threw an exception in stop()", self, exc_info=e)

    def join(self, timeout: float) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def run(self) -> None:
        started = False
        try:
            self.initialize_task()
            started = self._started = True
            paused = False
            if self.target is TargetState.PAUSED:
                self.listener.on_pause(self.id)
                paused = True
                self.on_pause()
            else:
                self.listener.on_startup(self.id)
            while not self.stopping.is_set():
                if self.target is TargetState.PAUSED:
                    if not paused:
                        paused = True
                        self.on_pause()
                        self.listener.on_pause(self.id)
                    if self.paused_iteration():
                        continue
                    self._wake.wait(0.5)
                    self._wake.clear()
                    continue
                if paused:
                    paused = False
                    self.on_resume()
                    self.listener.on_running(self.id)
                self.iteration()
        except Exception as e:
            if self.stopping.is_set() and self._task_stopped:
                log.debug("%s failed while stopping: %s", self, e)
            else:
                self.fail(e)
        finally:
            self._shutdown(started)

    def fail(self, error: BaseException) -> None:
        self.failed = True
        log.error("%s Task threw an uncaught and unrecoverable exception. Task is being "
                  "killed and will not recover until manually restarted", self, exc_info=error)
        self.listener.on_failure(self.id, stack_trace(error))

    def _shutdown(self, started: bool) -> None:
        try:
            self.close(started)
        except Exception as e:
            log.error("%s failed to close", self, exc_info=e)
        self._stop_task()
        self.pipeline.close()
        if not self.failed:
            self.listener.on_shutdown(self.id)

    # ---- for subclasses ----------------------------------------------------------------
    def initialize_task(self) -> None:
        raise NotImplementedError

    def iteration(self) -> None:
        raise NotImplementedError

    def on_pause(self) -> None:
        """Paused: stop taking records in."""

    def on_resume(self) -> None:
        """Resumed."""

    def paused_iteration(self) -> bool:
        """What a paused task still does (a sink keeps its consumer alive); True if it
        waited itself."""
        return False

    def close(self, started: bool) -> None:
        """Commit what can be committed and close the clients."""
