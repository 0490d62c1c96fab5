"""Error handling of a task's record pipeline, as Kafka Connect's
``RetryWithToleranceOperator``: an operation that fails with a RetriableException is retried
with exponential backoff (300 ms doubling, at most ``errors.retry.delay.max.ms``) until
``errors.retry.timeout`` (0: never retried, -1: forever); a failure is then tolerated
(``errors.tolerance=all``: the record is skipped and counted) or fails the task (``none``:
``Tolerance exceeded in error handler``). Every failure is reported: to the log
(``errors.log.enable``) and, for sinks, to the dead letter queue with Connect's
``__connect.errors.*`` headers."""
from __future__ import annotations

import enum
import logging
import random
import threading
import time
import traceback
from typing import Callable

from josefk.connect.api.errors import ConnectException, RetriableException

log = logging.getLogger("josefk.connect.errors")

RETRIES_DELAY_MIN_MS = 300
HEADER_PREFIX = "__connect.errors."


class Stage(enum.Enum):
    """Where in the pipeline an operation runs (Kafka's Stage names)."""
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TRANSFORMATION = "TRANSFORMATION"
    TASK_PUT = "TASK_PUT"
    TASK_POLL = "TASK_POLL"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


# Stages whose every exception may be tolerated; elsewhere only retriable ones are.
_TOLERATE_ANY = {Stage.KEY_CONVERTER, Stage.VALUE_CONVERTER, Stage.HEADER_CONVERTER,
                 Stage.TRANSFORMATION}


class ToleranceExceeded(ConnectException):
    """The task fails: ``Tolerance exceeded in error handler`` (the cause chained)."""


def java_class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def stack_trace(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


class ProcessingContext:
    """What one record's trip through the pipeline is doing: the stage, the class at work,
    the attempt, the error, and the record (a consumed message for sinks: its topic,
    partition, offset, raw key, value and headers; a SourceRecord for sources)."""

    __slots__ = ("stage", "executing_class", "attempt", "error", "consumed", "source_record")

    def __init__(self, consumed=None, source_record=None):
        self.stage: Stage | None = None
        self.executing_class: type | None = None
        self.attempt = 0
        self.error: BaseException | None = None
        self.consumed, self.source_record = consumed, source_record

    @property
    def failed(self) -> bool:
        return self.error is not None


class LogReporter:
    """``errors.log.enable``: each failure logged at ERROR as Connect's LogReporter."""

    def __init__(self, task_id, include_messages: bool):
        self.task_id, self.include_messages = task_id, include_messages

    def report(self, context: ProcessingContext) -> None:
        log.error("%s", self.message(context), exc_info=context.error)

    def message(self, context: ProcessingContext) -> str:
        text = (f"Error encountered in task {self.task_id}. Executing stage "
                f"'{context.stage.value}' with class "
                f"'{java_class_name(context.executing_class) if context.executing_class else None}'")
        if self.include_messages and context.consumed is not None:
            m = context.consumed
            ts_type, ts = m.timestamp()
            text += (f", where consumed record is {{topic='{m.topic()}', "
                     f"partition={m.partition()}, offset={m.offset()}, timestamp={ts}, "
                     f"timestampType={_TIMESTAMP_TYPES.get(ts_type, 'NoTimestampType')}}}")
        elif self.include_messages and context.source_record is not None:
            text += f", where source record is = {context.source_record!r}"
        return text + "."


_TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}


class DeadLetterQueueReporter:
    """Sinks' ``errors.deadletterqueue.topic.name``: the consumed message's original key,
    value and headers to the DLQ topic, with the error context headers when
    ``errors.deadletterqueue.context.headers.enable``. ``producer`` is a confluent-kafka
    Producer; ``flush`` waits for what was sent (before the consumer offsets commit)."""

    def __init__(self, producer, topic: str, connector: str, task: int, context_headers: bool):
        self.producer, self.topic = producer, topic
        self.connector, self.task, self.context_headers = connector, task, context_headers
        self.failure: str | None = None

    def report(self, context: ProcessingContext) -> None:
        m = context.consumed
        if m is None:
            return
        headers = list(m.headers() or [])
        if self.context_headers:
            headers.extend(self.error_headers(context))
        ts_type, ts = m.timestamp()
        self.producer.produce(self.topic, key=m.key(), value=m.value(), headers=headers,
                              timestamp=ts if ts_type in _TIMESTAMP_TYPES else 0,
                              on_delivery=self._delivered)
        self.producer.poll(0)

    def error_headers(self, context: ProcessingContext) -> list[tuple[str, bytes]]:
        m, error = context.consumed, context.error
        fields = [("topic", m.topic()), ("partition", m.partition()), ("offset", m.offset()),
                  ("connector.name", self.connector), ("task.id", self.task),
                  ("stage", context.stage.value),
                  ("class.name", java_class_name(context.executing_class)
                   if context.executing_class else None)]
        if error is not None:
            fields += [("exception.class.name", java_class_name(type(error))),
                       ("exception.message", str(error)),
                       ("exception.stacktrace", stack_trace(error))]
        return [(HEADER_PREFIX + name, None if value is None else str(value).encode())
                for name, value in fields]

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.failure = f"Could not produce message to dead letter queue. topic={self.topic}: {err}"
            log.error("%s", self.failure)

    def flush(self, timeout: float) -> None:
        left = self.producer.flush(timeout)
        if left or self.failure:
            raise ConnectException(self.failure or f"{left} records to the dead letter queue "
                                                   f"{self.topic} not acknowledged in time")


class RetryWithToleranceOperator:
    """Runs one pipeline operation as the error settings say. ``stopping`` (an Event) ends
    backoff sleeps early when the task is asked to stop."""

    def __init__(self, retry_timeout_ms: int, max_delay_ms: int, tolerance_all: bool,
                 reporters: list | None = None, stopping: threading.Event | None = None,
                 on_error: Callable[[bool], None] | None = None):
        self.retry_timeout_ms, self.max_delay_ms = retry_timeout_ms, max_delay_ms
        self.tolerance_all = tolerance_all
        self.reporters = reporters or []
        self.stopping = stopping or threading.Event()
        self.on_error = on_error  # told of each failure: (tolerated)
        self.total_skipped = self.total_retries = 0

    @classmethod
    def from_config(cls, config, reporters, stopping, on_error=None):
        return cls(config["errors.retry.timeout"], config["errors.retry.delay.max.ms"],
                   config["errors.tolerance"] == "all", reporters, stopping, on_error)

    def execute(self, context: ProcessingContext, stage: Stage, executing_class: type,
                operation: Callable, *args):
        """``operation(*args)``'s result; None when it failed and the failure is tolerated
        (``context.failed``); ToleranceExceeded when it is not. Later calls on a failed
        context do nothing (the record is skipped)."""
        if context.failed:
            return None
        context.stage, context.executing_class = stage, executing_class
        try:
            return self._retrying(context, operation, args)
        except Exception as e:
            return self._failed(context, e, stage in _TOLERATE_ANY
                                or isinstance(e, RetriableException))

    def execute_failed(self, context: ProcessingContext, stage: Stage, executing_class: type,
                       error: Exception) -> None:
        """A failure the task met itself (KIP-610's errant record reporter): reported, then
        tolerated or ToleranceExceeded, as Kafka's executeFailed."""
        context.stage, context.executing_class = stage, executing_class
        self._failed(context, error, True)

    def _failed(self, context: ProcessingContext, error: Exception, tolerable: bool):
        context.error = error
        tolerated = self.tolerance_all and tolerable
        for reporter in self.reporters:
            try:
                reporter.report(context)
            except Exception as failure:  # a failing reporter must not hide the error
                log.error("Error reporter %s failed: %s", type(reporter).__name__, failure)
        if self.on_error:
            self.on_error(tolerated)
        if not tolerated:
            if self.tolerance_all:
                raise ToleranceExceeded("Unhandled exception in error handler") from error
            raise ToleranceExceeded("Tolerance exceeded in error handler") from error
        self.total_skipped += 1
        return None

    def _retrying(self, context: ProcessingContext, operation: Callable, args):
        attempt, deadline = 1, None
        while True:
            context.attempt = attempt
            try:
                return operation(*args)
            except RetriableException:
                now = time.monotonic()
                if deadline is None:  # the clock is read only once something failed
                    deadline = (now + self.retry_timeout_ms / 1000
                                if self.retry_timeout_ms >= 0 else float("inf"))
                if now >= deadline or self.stopping.is_set():
                    raise
                self.total_retries += 1
                self._backoff(attempt, deadline)
                attempt += 1

    def _backoff(self, attempt: int, deadline: float) -> None:
        delay = RETRIES_DELAY_MIN_MS << min(attempt - 1, 40)
        if delay > self.max_delay_ms:
            delay = random.randrange(self.max_delay_ms) if self.max_delay_ms > 0 else 0
        delay_s = min(delay / 1000, max(0.0, deadline - time.monotonic()))
        self.stopping.wait(delay_s)
