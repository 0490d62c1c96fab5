"""MirrorHeartbeatConnector and its task, as Kafka's: one task writes a Heartbeat (source
alias, target alias, the time) every ``emit.heartbeats.interval.seconds`` to the target's
heartbeats topic, which MirrorSourceConnectors downstream replicate like any other topic, so
that the heartbeats' journey traces the replication flows."""
from __future__ import annotations

import threading
import time

from josefk.connect.api.config import ConfigDef, Importance, Range
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import SourceConnector, SourceTask
from josefk.connect.api.records import SourceRecord
from josefk.connect.api.schema import Schema
from josefk.mirror.config import (MirrorConfig, common_config, create_compacted_topic,
                                  validate_offsets)
from josefk.mirror.records import Heartbeat

VERSION = "1.0"
_BYTES = Schema.BYTES_SCHEMA


def heartbeat_config() -> ConfigDef:
    return (common_config()
            .define("emit.heartbeats.enabled", T.BOOLEAN, True, importance=Importance.LOW,
                    documentation="Whether to emit heartbeats to target cluster.")
            .define("emit.heartbeats.interval.seconds", T.LONG, 1, Range.at_least(0),
                    importance=Importance.LOW,
                    documentation="Frequency of heartbeats.")
            .define("heartbeats.topic.replication.factor", T.INT, 3, importance=Importance.LOW,
                    documentation="Replication factor for heartbeats topic."))


class MirrorHeartbeatConnector(SourceConnector):
    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return heartbeat_config()

    def task_class(self):
        return MirrorHeartbeatTask

    def start(self, props: dict[str, str]) -> None:
        self.mirror = MirrorConfig(heartbeat_config(), props)
        create_compacted_topic(self.mirror.admin("target"), self.mirror.policy.heartbeats_topic(),
                               self.mirror["heartbeats.topic.replication.factor"])

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # one task at most, and none when heartbeats are off
        return [dict(self.mirror.props)] if self.mirror["emit.heartbeats.enabled"] else []

    def stop(self) -> None:
        """Nothing to release."""

    def alter_offsets(self, connector_config, offsets) -> bool:
        validate_offsets(offsets, {"sourceClusterAlias": str, "targetClusterAlias": str},
                         only_zero=True)
        return True

class MirrorHeartbeatTask(SourceTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.mirror = MirrorConfig(heartbeat_config(), props)
        self.topic = self.mirror.policy.heartbeats_topic()
        self.interval = self.mirror["emit.heartbeats.interval.seconds"]
        self.stopping = threading.Event()
        self.next_beat = 0.0

    def poll(self) -> list[SourceRecord] | None:
        wait = self.next_beat - time.monotonic()
        if wait > 0 and self.stopping.wait(wait):
            return None
        self.next_beat = time.monotonic() + self.interval
        beat = Heartbeat(self.mirror.source, self.mirror.target, int(time.time() * 1000))
        return [SourceRecord(beat.connect_partition(), {"offset": 0}, self.topic, 0, _BYTES,
                             beat.record_key(), _BYTES, beat.record_value(), beat.timestamp)]

    def stop(self) -> None:
        self.stopping.set()
