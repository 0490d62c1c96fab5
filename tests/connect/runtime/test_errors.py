import threading

import pytest

from josefk.connect.api.errors import DataException, RetriableException
from josefk.connect.runtime.errors import (ProcessingContext, RetryWithToleranceOperator, Stage,
                                           ToleranceExceeded)


class Recorder:
    def __init__(self):
        self.reported = []

    def report(self, context):
        self.reported.append((context.stage, context.attempt, type(context.error)))


def failing(times, error=RetriableException):
    calls = []

    def operation(value):
        calls.append(value)
        if len(calls) <= times:
            raise error("not yet")
        return value * 2
    return operation, calls


def test_retriable_failures_are_retried_until_they_pass():
    operation, calls = failing(2)
    operator = RetryWithToleranceOperator(5000, 10, False, [Recorder()])
    context = ProcessingContext()
    assert operator.execute(context, Stage.VALUE_CONVERTER, int, operation, 21) == 42
    assert len(calls) == 3 and context.attempt == 3 and not context.failed
    assert operator.total_retries == 2


def test_no_retry_with_timeout_zero_and_tolerance_none_fails():
    operation, calls = failing(1)
    recorder = Recorder()
    operator = RetryWithToleranceOperator(0, 10, False, [recorder])
    with pytest.raises(ToleranceExceeded, match="Tolerance exceeded in error handler") as e:
        operator.execute(ProcessingContext(), Stage.TRANSFORMATION, int, operation, 1)
    assert isinstance(e.value.__cause__, RetriableException)
    assert len(calls) == 1
    assert recorder.reported == [(Stage.TRANSFORMATION, 1, RetriableException)]


def test_tolerance_all_skips_the_record_and_later_stages():
    operation, _ = failing(1, DataException)
    recorder = Recorder()
    operator = RetryWithToleranceOperator(0, 10, True, [recorder])
    context = ProcessingContext()
    assert operator.execute(context, Stage.KEY_CONVERTER, int, operation, 1) is None
    assert context.failed and operator.total_skipped == 1
    assert operator.execute(context, Stage.VALUE_CONVERTER, int, lambda: 1) is None
    assert recorder.reported == [(Stage.KEY_CONVERTER, 1, DataException)]


def test_a_non_retriable_failure_of_the_task_itself_is_not_tolerated():
    operation, _ = failing(1, ValueError)
    operator = RetryWithToleranceOperator(0, 10, True)
    with pytest.raises(ToleranceExceeded, match="Unhandled exception in error handler"):
        operator.execute(ProcessingContext(), Stage.TASK_PUT, int, operation, 1)


def test_retries_stop_at_the_timeout_and_when_the_task_stops():
    operation, calls = failing(1000)
    stopping = threading.Event()
    stopping.set()
    operator = RetryWithToleranceOperator(-1, 10, True, stopping=stopping)
    assert operator.execute(ProcessingContext(), Stage.KEY_CONVERTER, int, operation, 1) is None
    assert len(calls) == 1
    timed, timed_calls = failing(1000)
    operator = RetryWithToleranceOperator(700, 100000, True)
    assert operator.execute(ProcessingContext(), Stage.KEY_CONVERTER, int, timed, 1) is None
    assert 2 <= len(timed_calls) <= 3  # 300 ms, then the rest of the 700 ms


def test_the_log_reporter_says_where_and_with_which_record(caplog):
    from josefk.connect.api.records import SourceRecord
    from josefk.connect.runtime.errors import LogReporter
    record = SourceRecord({"f": "x"}, {"p": 1}, "t", value="v")
    context = ProcessingContext(source_record=record)
    operation, _ = failing(1, DataException)
    reporter = LogReporter("src-0", include_messages=True)
    operator = RetryWithToleranceOperator(0, 10, True, [reporter])
    with caplog.at_level("ERROR", logger="josefk.connect.errors"):
        operator.execute(context, Stage.VALUE_CONVERTER, DataException, operation, 1)
    [logged] = caplog.records
    assert logged.getMessage().startswith(
        "Error encountered in task src-0. Executing stage 'VALUE_CONVERTER' with class "
        "'josefk.connect.api.errors.DataException', where source record is = SourceRecord{")
    assert logged.exc_info[0] is DataException
    assert LogReporter("src-0", include_messages=False).message(context) == (
        "Error encountered in task src-0. Executing stage 'VALUE_CONVERTER' with class "
        "'josefk.connect.api.errors.DataException'.")
