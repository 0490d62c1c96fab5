"""What the data tools (console producer/consumer, perf tests, delete-records, log-dirs) need
beyond `broker.client.Client`: the cluster's metadata and one connection per broker, so every
partition request goes to its leader."""
from __future__ import annotations

import time

from josefk.tools.client import Client, KafkaError, command_config
from josefk.wire import errors
from josefk.wire.apis import FETCH, FIND_COORDINATOR, LIST_OFFSETS, METADATA, PRODUCE
from josefk.wire.batch import iter_headers
from josefk.wire.hashing import murmur2
from josefk.wire.records import iter_records

LATEST, EARLIEST = -1, -2
MAX_BLOCK_MS = 60000  # the Java producer's max.block.ms


def partition_for_key(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class ClusterClient:
    """Connections to every broker of the cluster behind ``bootstrap``, opened on demand."""

    def __init__(self, bootstrap: str, client_id: str = "josefk-cli", props: dict | None = None):
        self.client_id, self.props = client_id, props
        self.bootstrap = Client(bootstrap, client_id, props=props)
        self.clients: dict[int, Client] = {}
        self.brokers: dict[int, tuple[str, int]] = {}
        self.topics: dict = {}

    @classmethod
    def from_args(cls, args, client_id: str = "josefk-cli") -> "ClusterClient":
        """A CLI tool's connections: ``--bootstrap-server``, ``--command-config`` for security."""
        return cls(args.bootstrap_server, client_id, props=command_config(args))

    def close(self):
        self.bootstrap.close()
        for c in self.clients.values():
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def refresh(self, topics=None, auto_create: bool = False):
        """Metadata of ``topics`` (None: all); raises KafkaError for a topic that is missing.
        ``auto_create``: the broker creates a missing topic if its auto.create.topics.enable
        says so, as for a producer."""
        R = METADATA.Request
        md = self.bootstrap.request(METADATA, allow_auto_topic_creation=auto_create, topics=None if
                                    topics is None else [R.MetadataRequestTopic(name=t)
                                                         for t in topics])
        self.brokers = {b.node_id: (b.host, b.port) for b in md.brokers}
        for t in md.topics:
            if t.error_code:
                raise KafkaError(t.error_code, f"topic {t.name}: {errors.name(t.error_code)}")
            self.topics[t.name] = t
        return md

    def producer_partitions(self, topic, max_block_ms: int = MAX_BLOCK_MS) -> list[int]:
        """The partitions of ``topic`` as a Kafka producer waits for them: asking with
        auto-creation allowed until the topic is there with its leaders or ``max_block_ms``
        passed (then a TimeoutError in the Java producer's words)."""
        deadline = time.monotonic() + max_block_ms / 1000
        backoff = 0.05
        while True:
            try:
                parts = self.refresh([topic], auto_create=True).topics[0].partitions
                if parts and all(p.leader_id >= 0 for p in parts):
                    return sorted(p.partition_index for p in parts)
            except KafkaError as e:  # being created, or missing with auto-creation off
                if e.code not in (errors.UNKNOWN_TOPIC_OR_PARTITION,
                                  errors.LEADER_NOT_AVAILABLE):
                    raise
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"Topic {topic} not present in metadata after "
                                   f"{max_block_ms} ms.")
            time.sleep(min(backoff, left))
            backoff = min(backoff * 2, 1.0)

    def partitions(self, topic) -> list[int]:
        if topic not in self.topics:
            self.refresh([topic])
        return sorted(p.partition_index for p in self.topics[topic].partitions)

    def broker(self, node_id: int) -> Client:
        c = self.clients.get(node_id)
        if c is None:
            host, port = self.brokers[node_id]
            c = self.clients[node_id] = Client(f"{host}:{port}", self.client_id, props=self.props)
        return c

    def leader(self, topic: str, partition: int) -> Client:
        if topic not in self.topics:
            self.refresh([topic])
        for p in self.topics[topic].partitions:
            if p.partition_index == partition:
                if p.leader_id < 0:
                    raise KafkaError(errors.LEADER_NOT_AVAILABLE, f"{topic}-{partition}")
                return self.broker(p.leader_id)
        raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")

    def list_offsets(self, topic: str, partitions, timestamp: int) -> dict:
        """{partition: offset} for ``timestamp`` (LATEST, EARLIEST or a time in ms; -1 where no
        record is that recent), one ListOffsets per leader."""
        R = LIST_OFFSETS.Request
        by_leader: dict[int, tuple] = {}  # id(client) -> (client, [partitions])
        for p in partitions:
            leader = self.leader(topic, p)
            by_leader.setdefault(id(leader), (leader, []))[1].append(R.ListOffsetsPartition(
                partition_index=p, timestamp=timestamp, current_leader_epoch=-1))
        out = {}
        for leader, parts in by_leader.values():
            resp = leader.request(LIST_OFFSETS, replica_id=-1, isolation_level=0, topics=[
                R.ListOffsetsTopic(name=topic, partitions=parts)])
            for p in resp.topics[0].partitions:
                if p.error_code:
                    raise KafkaError(p.error_code,
                                     f"{topic}-{p.partition_index}: {errors.name(p.error_code)}")
                out[p.partition_index] = p.offset
        return out

    def coordinator(self, group: str) -> Client:
        """A connection to ``group``'s coordinator."""
        return self.broker(self.coordinator_id(group))

    def coordinator_id(self, group: str) -> int:
        """The node id of ``group``'s coordinator (known in ``brokers``)."""
        resp = self.bootstrap.request(FIND_COORDINATOR, key=group, key_type=0,
                                      coordinator_keys=[group])
        node = resp.coordinators[0] if resp.coordinators else resp
        if node.error_code:
            raise KafkaError(node.error_code, f"no coordinator for group {group}")
        if node.node_id not in self.brokers:
            self.refresh([])
        return node.node_id

    def produce(self, topic: str, partition: int, batch, acks: int = 1,
                timeout_ms: int = 30000):
        """Send one record batch to the partition's leader; returns its base offset."""
        R = PRODUCE.Request
        resp = self.leader(topic, partition).request(
            PRODUCE, acks=acks, timeout_ms=timeout_ms, topic_data=[R.TopicProduceData(
                name=topic, partition_data=[R.PartitionProduceData(index=partition,
                                                                   records=batch)])])
        if acks == 0:
            return -1
        p = resp.responses[0].partition_responses[0]
        if p.error_code:
            raise KafkaError(p.error_code, p.error_message or errors.name(p.error_code))
        return p.base_offset

    def fetch(self, positions: dict, max_wait_ms: int = 500, max_bytes: int = 1 << 20,
              partition_max_bytes: int | None = None, read_committed: bool = True) -> list:
        """One Fetch per leader for ``positions`` ({(topic, partition): offset}), at most
        ``max_bytes`` in all and ``partition_max_bytes`` (default: as much) per partition, up
        to the last stable offset if ``read_committed``; returns [(topic, partition, records,
        high watermark, aborted)], ``aborted`` an `AbortedBatches` of the partition's answer.
        Raises KafkaError for a partition error."""
        R = FETCH.Request
        by_leader: dict[int, tuple] = {}  # id(client) -> (client, {topic: [partitions]})
        for (topic, partition), offset in positions.items():
            leader = self.leader(topic, partition)
            by_leader.setdefault(id(leader), (leader, {}))[1].setdefault(topic, []).append(
                R.FetchPartition(partition=partition, fetch_offset=offset,
                                 partition_max_bytes=partition_max_bytes or max_bytes))
        names = {t.topic_id: name for name, t in self.topics.items()}
        out = []
        for leader, topics in by_leader.values():
            resp = leader.request(FETCH, max_wait_ms=max_wait_ms, min_bytes=1,
                                  max_bytes=max_bytes, isolation_level=int(read_committed),
                                  session_id=0,
                                  session_epoch=-1, forgotten_topics_data=[], rack_id="",
                                  topics=[R.FetchTopic(topic=t, topic_id=self.topics[t].topic_id,
                                                       partitions=ps)
                                          for t, ps in topics.items()])
            for t in resp.responses:
                name = t.topic or names.get(t.topic_id)
                for p in t.partitions:
                    if p.error_code:
                        raise KafkaError(p.error_code, f"{name}-{p.partition_index}: "
                                                       f"{errors.name(p.error_code)}")
                    out.append((name, p.partition_index, p.records or b"", p.high_watermark,
                                AbortedBatches(p.aborted_transactions)))
        return out

    def read_ranges(self, topic: str, ranges: dict, max_bytes: int = 16 << 20,
                    partition_max_bytes: int = 256 << 10) -> dict:
        """{partition: the records at offsets lo <= offset < hi} for ``ranges`` ({partition:
        (lo, hi)}), control records left out, fetching from every leader together until each
        range is read (or a bounded number of fetches made no progress)."""
        out = {p: [] for p in ranges}
        pos = {p: lo for p, (lo, hi) in ranges.items() if lo < hi}
        stalls = 0
        while pos and stalls < 3:
            moved = False
            for _t, p, records, _hwm, aborted in self.fetch(
                    {(topic, p): off for p, off in pos.items()}, max_wait_ms=0,
                    max_bytes=max_bytes, partition_max_bytes=partition_max_bytes):
                if p not in pos:
                    continue
                hi = ranges[p][1]
                for hd in iter_headers(records):
                    if not aborted(hd) and hd.last_offset >= pos[p] and not hd.is_control:
                        out[p].extend(r for r in iter_records(records, hd)
                                      if pos[p] <= r.offset < hi)
                    if hd.last_offset >= pos[p]:
                        pos[p], moved = hd.last_offset + 1, True
                if pos[p] >= hi:
                    del pos[p]
            stalls = 0 if moved else stalls + 1
        return out

    def remote_log_sizes(self, topic_id, partitions) -> dict[int, int]:
        """{partition: bytes of its remote log} of a tiered topic: its copied segments, read
        from ``__remote_log_metadata`` (no Kafka request answers it) as the remote log manager
        reads them: the metadata partitions holding ``partitions``, start to end."""
        from josefk.tiered import metadata as rlmd

        try:
            self.refresh([rlmd.TOPIC])
        except KafkaError:  # nothing copied yet anywhere
            return {p: 0 for p in partitions}
        count = len(self.topics[rlmd.TOPIC].partitions)
        where = {p: rlmd.metadata_partition(topic_id, p, count) for p in partitions}
        wanted = sorted(set(where.values()))
        starts = self.list_offsets(rlmd.TOPIC, wanted, EARLIEST)
        ends = self.list_offsets(rlmd.TOPIC, wanted, LATEST)
        events = self.read_ranges(rlmd.TOPIC, {m: (starts[m], ends[m]) for m in wanted})
        return {p: rlmd.fold([bytes(r.value) for r in events[m] if r.value is not None],
                             topic_id, p).size for p, m in where.items()}


class AbortedBatches:
    """Whether a batch of a read_committed fetch belongs to an aborted transaction, from the
    partition's AbortedTransactions (producer id, first offset), as a consumer filters them:
    call it with every batch header of the answer, control batches included, in order (a
    producer's control batch ends its aborted transaction)."""

    def __init__(self, aborted):
        self._starts = sorted((t.first_offset, t.producer_id) for t in aborted or ())
        self._open: set[int] = set()

    def __call__(self, h) -> bool:
        while self._starts and self._starts[0][0] <= h.last_offset:
            self._open.add(self._starts.pop(0)[1])
        if not h.is_transactional or h.producer_id not in self._open:
            return False
        if h.is_control:
            self._open.discard(h.producer_id)
            return False
        return True
