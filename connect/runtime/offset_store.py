"""Where source connectors' offsets live, in Kafka Connect's layout: a record keyed by
``["<connector>",{<source partition>}]`` with the source offset as value (None: removed), both
compact JSON as Kafka's JsonConverter (``schemas.enable=false``) writes them. Standalone mode
keeps them in a local file (``FileOffsetStore``); distributed mode in the offsets topic."""
from __future__ import annotations

import json
import logging
import os
import tempfile
import threading

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import ConnectException
from josefk.connect.runtime.kafka_log import TopicBackedStore, to_json

log = logging.getLogger("josefk.connect.offset_store")

FILE_SETTING = "offset.storage.file.filename"


def offset_key(connector: str, partition: dict) -> bytes:
    """The offsets topic's key of one source partition: ``["<connector>",{...}]``."""
    return to_json([connector, partition])


def offset_value(offset: dict | None) -> bytes | None:
    """The offsets topic's value: the offset as compact JSON, None (a tombstone) to remove."""
    return None if offset is None else to_json(offset)


def parse_offset_key(key: bytes) -> tuple[str, dict] | None:
    """(connector, partition) of an offsets key, None if it is not Connect's layout."""
    try:
        parsed = json.loads(key)
    except (ValueError, UnicodeDecodeError):
        return None
    if (not isinstance(parsed, list) or len(parsed) != 2 or not isinstance(parsed[0], str)
            or not isinstance(parsed[1], dict)):
        return None
    return parsed[0], parsed[1]


class FileOffsetStore:
    """Standalone mode's offsets (``offset.storage.file.filename``): every key and value of
    the offsets topic's layout, kept in memory and written to the file as one JSON object
    ``{"<key>": <offset>}`` on each ``put``, atomically (a temporary file renamed over it).
    Kafka's own standalone worker writes this file as a serialised Java HashMap: neither
    worker reads the other's file."""

    topic = None

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._data: dict[str, dict] = {}
        if os.path.exists(path) and os.path.getsize(path):
            try:
                with open(path, encoding="utf-8") as f:
                    loaded = json.load(f)
            except (OSError, ValueError) as e:
                raise ConfigException(FILE_SETTING, path, f"not an offsets file: {e}") from None
            if not isinstance(loaded, dict):
                raise ConfigException(FILE_SETTING, path,
                                      "not an offsets file (a JSON object expected)")
            self._data = loaded

    @staticmethod
    def _key(connector: str, partition: dict) -> str:
        return offset_key(connector, partition).decode()

    def get(self, connector: str, partitions: list[dict]) -> list[dict | None]:
        with self._lock:
            return [self._data.get(self._key(connector, p)) for p in partitions]

    def put(self, connector: str, offsets: list[tuple[dict, dict | None]]) -> None:
        with self._lock:
            for partition, offset in offsets:
                key = self._key(connector, partition)
                if offset is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = offset
            self._write()

    def all(self, connector: str) -> list[tuple[dict, dict]]:
        with self._lock:
            items = list(self._data.items())
        found = []
        for key, offset in items:
            parsed = parse_offset_key(key.encode())
            if parsed is not None and parsed[0] == connector:
                found.append((parsed[1], offset))
        return found

    def records(self, connector: str,
                offsets: list[tuple[dict, dict | None]]) -> list[tuple[bytes, bytes | None]]:
        return [(offset_key(connector, p), offset_value(o)) for p, o in offsets]

    def _write(self) -> None:
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".offsets-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self._data, f, separators=(",", ":"), ensure_ascii=False)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise


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


class KafkaOffsetStore(TopicBackedStore):
    """The OffsetStore seam on ``offset.storage.topic``, or on ``topic`` (a connector's own
    offsets topic, KIP-618: made as the worker's, its clients' settings ``clients``)."""

    def __init__(self, config, topic: str | None = None, clients: dict[str, dict] | None = None,
                 suffix: str = "offsets"):
        super().__init__(OffsetState(), config, "offset.storage.topic",
                         "source connector offsets", config["offset.storage.partitions"],
                         suffix, topic, clients)
        self.topic = topic or config["offset.storage.topic"]
        if topic is not None:  # errors name the connector's setting, as Kafka's
            self.log.spec = self.log.spec._replace(setting="offsets.storage.topic")

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
        self.send(connector, offsets, lambda e: e and failures.append(e))
        self.log.flush()
        if failures:
            raise ConnectException(f"Failed to write offsets of {connector}: {failures[0]}")

    def send(self, connector: str, offsets: list[tuple[dict, dict | None]],
             on_delivery) -> None:
        """Write the offsets without waiting: ``on_delivery(error or None)`` per record."""
        for key, value in self.records(connector, offsets):
            self.log.send(key, value, on_delivery=on_delivery)


class ConnectorOffsetStore:
    """A source connector's offsets (Kafka's ConnectorOffsetBackingStore, KIP-618): its own
    offsets topic (``connector_store``) as the primary store and the worker's as the
    secondary one, or the worker's alone. Reads prefer the primary store's offset of a
    partition and fall back to the worker's; writes go to the primary store and, once it took
    them, to the worker's without waiting (a failure there is only logged), except removals
    (None), which the worker's store takes first, so that a partition removed from the
    primary store cannot come back from the secondary one. ``start`` and ``stop`` touch only
    the connector's own store: the worker's serves every connector."""

    def __init__(self, worker_store, connector_store: KafkaOffsetStore | None = None):
        self.connector_store = connector_store
        self.primary = connector_store or worker_store
        self.secondary = worker_store if connector_store is not None else None
        self.topic = self.primary.topic

    def start(self) -> None:
        if self.connector_store is not None:
            self.connector_store.start()

    def stop(self) -> None:
        if self.connector_store is not None:
            self.connector_store.stop()

    def get(self, connector: str, partitions: list[dict]) -> list[dict | None]:
        found = self.primary.get(connector, partitions)
        if self.secondary is None or all(o is not None for o in found):
            return found
        fallback = self.secondary.get(connector, partitions)
        return [o if o is not None else f for o, f in zip(found, fallback)]

    def all(self, connector: str) -> list[tuple[dict, dict]]:
        merged = {}
        if self.secondary is not None:
            merged = {_identity(p): (p, o) for p, o in self.secondary.all(connector)}
        merged.update({_identity(p): (p, o) for p, o in self.primary.all(connector)})
        return list(merged.values())

    def records(self, connector: str,
                offsets: list[tuple[dict, dict | None]]) -> list[tuple[bytes, bytes | None]]:
        return self.primary.records(connector, offsets)

    def put(self, connector: str, offsets: list[tuple[dict, dict | None]]) -> None:
        removed = [(p, None) for p, o in offsets if o is None]
        if self.secondary is not None and removed:
            self.secondary.put(connector, removed)
        self.primary.put(connector, offsets)
        self.copy_to_secondary(connector, offsets)

    def put_in_transaction(self, connector: str, offsets: list[tuple[dict, dict | None]],
                           producer, timeout_s: float) -> None:
        """``put`` for an exactly-once connector: the primary store's records written by its
        transactional ``producer`` (confluent-kafka's, not yet initialised) in one
        transaction; its ``init_transactions`` fences the producers of its transactional id."""
        producer.init_transactions(timeout_s)
        producer.begin_transaction()
        removed = [(p, None) for p, o in offsets if o is None]
        if self.secondary is not None and removed:
            self.secondary.put(connector, removed)
        for key, value in self.records(connector, offsets):
            producer.produce(self.topic, key=key, value=value)
        producer.commit_transaction(timeout_s)
        self.copy_to_secondary(connector, offsets)

    def copy_to_secondary(self, connector: str, offsets: list[tuple[dict, dict | None]]) -> None:
        """The offsets the primary store took (``put``, or a task's transaction) written to
        the worker's store too, not waited for."""
        regular = [(p, o) for p, o in offsets if o is not None]
        if self.secondary is None or not regular:
            return

        def delivered(error):
            if error is not None:
                log.warning("Failed to write offsets of %s to secondary backing store: %s",
                            connector, error)
        try:
            self.secondary.send(connector, regular, delivered)
        except Exception as e:  # noqa: BLE001 - best effort, as Kafka's
            log.warning("Failed to write offsets of %s to secondary backing store: %s",
                        connector, e)


def _servers(value) -> set[str]:
    items = value if isinstance(value, list) else str(value or "").split(",")
    return {s.strip() for s in items if s.strip()}


def connector_offset_store(config, worker_store, props: dict[str, str],
                           clients: dict[str, dict], suffix: str) -> ConnectorOffsetStore:
    """The offset store of a source connector or task (Kafka's Worker.offsetStoreFor...):
    its own topic when ``offsets.storage.topic`` names one and the worker is distributed,
    and with exactly-once support always (the worker's topic name when it names none), so
    that the task's transactional producer writes the offsets; the worker's store alone
    when that is the worker's own topic on the worker's cluster. ``clients``: the
    connector's client settings (per "producer", "consumer", "admin")."""
    topic = (props.get("offsets.storage.topic") or "").strip() or None
    if not config.distributed or (topic is None and not config.exactly_once_source):
        return ConnectorOffsetStore(worker_store)
    topic = topic or config["offset.storage.topic"]
    same_cluster = (_servers(clients["producer"].get("bootstrap.servers"))
                    == _servers(config["bootstrap.servers"]))
    if topic == config["offset.storage.topic"] and same_cluster:
        return ConnectorOffsetStore(worker_store)
    return ConnectorOffsetStore(worker_store, KafkaOffsetStore(config, topic, clients, suffix))
