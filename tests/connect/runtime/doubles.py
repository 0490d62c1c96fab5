"""Test doubles of plug-ins for failures the real ones do not make on demand: a converter
that fails retriably a few times, and a sink task whose put does."""
from __future__ import annotations

from josefk.connect.api.errors import RetriableException
from josefk.connect.connectors.file_stream import FileStreamSinkConnector, FileStreamSinkTask
from josefk.connect.converters.simple import StringConverter


class FlakyConverter(StringConverter):
    """A StringConverter failing retriably the first ``failures`` calls of the whole test
    (class-wide), as a registry-backed converter whose registry is unreachable for a while."""
    failures = 0

    def to_connect_data(self, topic, value, headers=None):
        if FlakyConverter.failures > 0:
            FlakyConverter.failures -= 1
            raise RetriableException("the schema store is unreachable for now")
        return super().to_connect_data(topic, value, headers)


class FlakySinkTask(FileStreamSinkTask):
    """FileStreamSink whose put fails retriably ``failures`` times (class-wide) first."""
    failures = 0
    attempts = 0

    def put(self, records):
        FlakySinkTask.attempts += 1
        if FlakySinkTask.failures > 0:
            FlakySinkTask.failures -= 1
            self.context.timeout(100)
            raise RetriableException("the file system is busy")
        super().put(records)


class FlakySinkConnector(FileStreamSinkConnector):
    def task_class(self):
        return FlakySinkTask


PLUGINS = {"converter": {"tests.FlakyConverter": FlakyConverter},
           "connector": {"tests.FlakySinkConnector": FlakySinkConnector}}
