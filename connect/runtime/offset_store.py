"""Source connectors' offsets in Kafka's layout: the key ``["<connector>",{<source
partition>}]``, the value the source offset (null: removed), both JSON as Kafka's
JsonConverter without schemas writes them; ``KafkaOffsetStore`` keeps them in the offsets
topic (Kafka Connect's KafkaOffsetBackingStore)."""
from __future__ import annotations

import json
import logging
import threading

from josefk.connect.api.errors import ConnectException
from josefk.connect.runtime.kafka_log import to_json, worker_log

log = logging.getLogger("josefk.connect.offset_store")


def offset_key(connector: str, partition: dict) -> bytes:
    return to_json([connector, partition])


def offset_value(offset: dict | None) -> bytes | None:
    return None if offset is None else to_json(offset)


def parse_offset_key(key: bytes) -> tuple[str, dict] | None:
    """(connector, source partition) of an offsets topic key, None if it is not Connect's
    layout."""
    try:
        data = json.loads(key)
    except (ValueError, UnicodeDecodeError):
        return None
    if (not isinstance(data, list) or len(data) != 2 or not isinstance(data[0], str)
            or not isinstance(data[1], dict)):
        return None
    return data[0], data[1]


def _identity(partition: dict) -> str:
    # Java's maps have no order: the same partition may come back with its keys reordered.
    return json.dumps(partition, sort_keys=True, separators=(",", ":"))


class OffsetState:
    """The offsets topic's records applied in order: {connector: {partition: (partition,
    offset)}}."""

    def __init__(self):
        self.offsets: dict[str, dict[str, tuple[dict, dict]]] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        parsed = parse_offset_key(key or b"")
        try:
            offset = None if value is None else json.loads(value)
        except ValueError:
            parsed = None
        if parsed is None:
            log.warning("Ignoring offset record with key %r: not Connect's layout", key)
            return
        connector, partition = parsed
        mine = self.offsets.setdefault(connector, {})
        if offset is None:
            mine.pop(_identity(partition), None)
        else:
            mine[_identity(partition)] = (partition, offset)


class KafkaOffsetStore:
    """The OffsetStore seam on ``offset.storage.topic``."""

    def __init__(self, config):
        self._state = OffsetState()
        self._lock = threading.Lock()
        self.topic = config["offset.storage.topic"]
        self.log = worker_log(config, "offset.storage.topic", "source connector offsets",
                              self._on_record, config["offset.storage.partitions"], "offsets")

    def _on_record(self, key, value, _partition, _offset):
        with self._lock:
            self._state.apply(key, value)

    def start(self) -> None:
        self.log.start()

    def stop(self) -> None:
        self.log.stop()

    def get(self, connector: str, partitions: list[dict]) -> list[dict | None]:
        self.log.read_to_end()
        with self._lock:
            mine = self._state.offsets.get(connector, {})
            return [mine.get(_identity(p), (None, None))[1] for p in partitions]

    def all(self, connector: str) -> list[tuple[dict, dict]]:
        self.log.read_to_end()
        with self._lock:
            return list(self._state.offsets.get(connector, {}).values())

    def records(self, connector: str,
                offsets: list[tuple[dict, dict | None]]) -> list[tuple[bytes, bytes | None]]:
        return [(offset_key(connector, p), offset_value(o)) for p, o in offsets]

    def put(self, connector: str, offsets: list[tuple[dict, dict | None]]) -> None:
        failures: list[Exception] = []
        for key, value in self.records(connector, offsets):
            self.log.send(key, value, on_delivery=lambda e: e and failures.append(e))
        self.log.flush()
        if failures:
            raise ConnectException(f"Failed to write offsets of {connector}: {failures[0]}")
