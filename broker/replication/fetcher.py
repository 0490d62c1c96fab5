"""Replica fetchers: a follower's long-lived tasks that copy its leaders' logs.

One `ReplicaFetcher` per source broker, over one connection, fetching every partition this broker
follows on that leader in each request (Fetch v12: topic names, the replica id, and the last
fetched epoch, so the leader answers a diverging epoch when the logs split, KIP-320). Batches are
appended unchanged (`Partition.append_as_follower`); the follower's high watermark comes from the
leader's answer.
"""
from __future__ import annotations

import asyncio
import logging
import time

from josefk.wire import errors
from josefk.wire.apis import FETCH, LIST_OFFSETS

log = logging.getLogger("josefk.fetcher")

FETCH_VERSION = 12
LIST_OFFSETS_VERSION = 8  # the first with EARLIEST_LOCAL_TIMESTAMP (KIP-1005)
EARLIEST_LOCAL_TIMESTAMP = -4
_RETRY_LATER = frozenset({errors.NOT_LEADER_OR_FOLLOWER, errors.FENCED_LEADER_EPOCH,
                          errors.UNKNOWN_LEADER_EPOCH, errors.UNKNOWN_TOPIC_OR_PARTITION,
                          errors.KAFKA_STORAGE_ERROR, errors.REPLICA_NOT_AVAILABLE})


class FetcherManager:
    """The fetchers of one broker, one per source broker; ``node_id`` is the replica id its
    fetches carry. Mirror topics' links (`mirror.MirrorFetcherManager`) run their own kind."""

    def __init__(self, node_id: int, channel_for, config):
        self.node_id = node_id
        self.channel_for = channel_for  # broker id -> BrokerChannel
        self.max_wait_ms = config.int("replica.fetch.wait.max.ms")
        self.min_bytes = config.int("replica.fetch.min.bytes")
        self.max_bytes = config.int("replica.fetch.response.max.bytes")
        self.partition_max_bytes = config.int("replica.fetch.max.bytes")
        self.backoff_s = config.int("replica.fetch.backoff.ms") / 1000
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.source_of: dict[tuple[str, int], int] = {}

    def add(self, part, leader_id: int) -> None:
        key = (part.topic, part.index)
        old = self.source_of.get(key)
        if old is not None and old != leader_id:
            self.fetchers[old].remove(key)
        self.source_of[key] = leader_id
        f = self.fetchers.get(leader_id)
        if f is None:
            f = self.fetchers[leader_id] = self.new_fetcher(leader_id)
        f.add(part)

    def new_fetcher(self, source_id: int) -> "ReplicaFetcher":
        return ReplicaFetcher(self, source_id)

    def remove(self, part) -> None:
        key = (part.topic, part.index)
        src = self.source_of.pop(key, None)
        if src is not None:
            self.fetchers[src].remove(key)

    def close(self) -> None:
        for f in self.fetchers.values():
            f.close()
        self.fetchers.clear()


class ReplicaFetcher:
    def __init__(self, manager: FetcherManager, source_id: int):
        self.manager = manager
        self.source_id = source_id
        self.partitions: dict[tuple[str, int], object] = {}
        self.delayed: dict[tuple[str, int], float] = {}  # key -> monotonic time to retry at
        self.wakeup = asyncio.Event()
        self._rebuilds: set[asyncio.Task] = set()  # logs restarting from tiered storage's copy
        self.task = asyncio.ensure_future(self._run())

    def add(self, part) -> None:
        key = (part.topic, part.index)
        self.partitions[key] = part
        self.delayed.pop(key, None)
        self.wakeup.set()

    def remove(self, key) -> None:
        self.partitions.pop(key, None)
        self.delayed.pop(key, None)

    def close(self) -> None:
        self.task.cancel()
        for task in self._rebuilds:
            task.cancel()

    async def _run(self):
        m = self.manager
        while True:
            try:
                ready = self._ready()
                if not ready:
                    self.wakeup.clear()
                    timeout = None
                    if self.delayed:
                        timeout = max(0.0, min(self.delayed.values()) - time.monotonic())
                    try:
                        await asyncio.wait_for(self.wakeup.wait(), timeout)
                    except asyncio.TimeoutError:
                        pass
                    continue
                try:
                    resp = await m.channel_for(self.source_id).request(
                        FETCH, FETCH_VERSION, self._request(ready),
                        timeout=m.max_wait_ms / 1000 + 30)
                except Exception as e:  # noqa: BLE001 - the leader is away: retry later
                    log.debug("fetch from broker %d failed: %s", self.source_id, e)
                    self._unreachable()
                    await asyncio.sleep(m.backoff_s)
                    continue
                if resp.error_code:
                    log.warning("fetch from broker %d: error %d", self.source_id, resp.error_code)
                    await asyncio.sleep(m.backoff_s)
                    continue
                self._handle(resp, ready)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - never let the fetcher die
                log.exception("replica fetcher for broker %d failed; retrying", self.source_id)
                await asyncio.sleep(self.manager.backoff_s)

    def _ready(self):
        now = time.monotonic()
        for key, at in list(self.delayed.items()):
            if at <= now:
                del self.delayed[key]
        return {k: p for k, p in self.partitions.items() if k not in self.delayed}

    def _unreachable(self) -> None:
        """The source broker did not answer (its leaderships stay: the controller moves them)."""

    def _position(self, index: int, part):
        """The FetchPartition asking for ``part``'s next records."""
        lg = part.log
        return FETCH.Request.FetchPartition(
            partition=index, current_leader_epoch=part.leader_epoch,
            fetch_offset=lg.log_end_offset, last_fetched_epoch=lg.epochs.latest_epoch,
            log_start_offset=part.log_start_offset,
            partition_max_bytes=self.manager.partition_max_bytes)

    def _request(self, ready):
        m = self.manager
        Q = FETCH.Request
        by_topic: dict[str, list] = {}
        for (topic, index), part in ready.items():
            by_topic.setdefault(topic, []).append(self._position(index, part))
        return Q(replica_id=m.node_id, max_wait_ms=m.max_wait_ms, min_bytes=m.min_bytes,
                 max_bytes=m.max_bytes, isolation_level=0, session_id=0,
                 session_epoch=-1,
                 topics=[Q.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
                 forgotten_topics_data=[], rack_id="")

    def _handle(self, resp, asked):
        for t in resp.responses:
            for pd in t.partitions:
                key = (t.topic, pd.partition_index)
                part = self.partitions.get(key)
                if part is None or part is not asked.get(key):
                    continue  # no longer fetched from here
                try:
                    self._handle_partition(key, part, pd)
                except OSError as e:  # its log dir failed
                    part.manager.storage_failed(part, e)
                    self.delayed[key] = time.monotonic() + self.manager.backoff_s
                except Exception:  # noqa: BLE001 - one bad partition must not stop the others
                    log.exception("replicating %s-%d from broker %d failed", key[0], key[1],
                                  self.source_id)
                    self.delayed[key] = time.monotonic() + self.manager.backoff_s

    def _handle_partition(self, key, part, pd):
        lg = part.log
        err = pd.error_code
        if err == errors.NONE:
            div = pd.diverging_epoch
            if div is not None and (div.epoch >= 0 or div.end_offset >= 0):
                self._truncate_diverging(part, div.epoch, div.end_offset)
                return
            part.append_as_follower(pd.records or b"", pd.high_watermark)
            if pd.log_start_offset > lg.log_start_offset:  # the leader deleted records
                lg.delete_records_before(min(pd.log_start_offset, lg.high_watermark))
            elif 0 <= pd.log_start_offset < lg.log_start_offset \
                    and part.config.remote_storage_enable:
                # the whole log's start, in the remote log (`Partition.follower_log_start`)
                part.remote_log_start = pd.log_start_offset
        elif err == errors.OFFSET_MOVED_TO_TIERED_STORAGE:
            rlm = part.manager.remote
            if rlm is None or part.topic_id is None:
                log.warning("%s-%d: the leader's data below %d is in tiered storage, which "
                            "this broker does not have enabled", *key, lg.log_end_offset)
                self.delayed[key] = time.monotonic() + self.manager.backoff_s
                return
            # its state below the leader's local log comes from the remote copy: not fetched
            # meanwhile
            self.delayed[key] = float("inf")
            self._rebuilds.add(asyncio.ensure_future(
                self._restart_from_remote(key, part, rlm, pd.log_start_offset)))
        elif err == errors.OFFSET_OUT_OF_RANGE:
            if lg.log_end_offset < pd.log_start_offset:
                log.warning("%s-%d: fetch offset %d below the leader's log start %d: restarting "
                            "the log there", *key, lg.log_end_offset, pd.log_start_offset)
                part.restart_at(pd.log_start_offset)
            else:
                log.warning("%s-%d: fetch offset %d past the leader's end: truncating to its "
                            "high watermark %d", *key, lg.log_end_offset, pd.high_watermark)
                part.truncate_to(max(pd.high_watermark, 0))
        elif err in _RETRY_LATER:
            self.delayed[key] = time.monotonic() + self.manager.backoff_s
        else:
            log.warning("%s-%d: fetch from broker %d answered error %d", *key, self.source_id,
                        err)
            self.delayed[key] = time.monotonic() + self.manager.backoff_s

    async def _restart_from_remote(self, key, part, rlm, leader_log_start) -> None:
        """KIP-405's follower (answered OFFSET_MOVED_TO_TIERED_STORAGE): the log restarts at
        the leader's local log start (asked with ListOffsets EARLIEST_LOCAL_TIMESTAMP) with
        the leader epochs and producer state of the remote segment ending there (without
        them, if none can be read: logged); the log start over remote data is the leader's."""
        retry_at = time.monotonic() + self.manager.backoff_s
        try:
            offset = await self._leader_local_start(key, part)
            if offset is None:
                return
            try:
                state = await asyncio.to_thread(rlm.follower_state, part.topic, part.index,
                                                part.topic_id, offset)
            except Exception as e:  # noqa: BLE001 - the store or metadata away: restart bare
                log.warning("%s-%d: cannot read the remote state below %d: %s", *key, offset, e)
                state = None
            if self.partitions.get(key) is part and part.log.log_end_offset < offset:
                if state is None:
                    log.warning("%s-%d: no remote segment ends at %d: restarting without "
                                "the state below", *key, offset)
                log.info("%s-%d: restarting the log at the leader's local log start %d (log "
                         "start %d) from the remote copy", *key, offset, leader_log_start)
                part.restart_at(offset, state)
                part.remote_log_start = min(leader_log_start, offset)
            retry_at = 0.0
        finally:
            self.delayed[key] = retry_at
            self._rebuilds.discard(asyncio.current_task())
            self.wakeup.set()

    async def _leader_local_start(self, key, part) -> int | None:
        """The leader's local log start, or None (logged) when it cannot answer now."""
        Q = LIST_OFFSETS.Request
        try:
            resp = await self.manager.channel_for(self.source_id).request(
                LIST_OFFSETS, LIST_OFFSETS_VERSION, Q(
                    replica_id=self.manager.node_id, isolation_level=0, topics=[
                        Q.ListOffsetsTopic(name=key[0], partitions=[Q.ListOffsetsPartition(
                            partition_index=key[1], current_leader_epoch=part.leader_epoch,
                            timestamp=EARLIEST_LOCAL_TIMESTAMP)])]),
                timeout=30)
        except Exception as e:  # noqa: BLE001 - the leader is away: fetch again later
            log.debug("%s-%d: ListOffsets from broker %d failed: %s", *key, self.source_id, e)
            return None
        p = resp.topics[0].partitions[0]
        if p.error_code:
            log.debug("%s-%d: ListOffsets from broker %d: error %d", *key, self.source_id,
                      p.error_code)
            return None
        return p.offset

    @staticmethod
    def _truncate_diverging(part, epoch, end_offset):
        """KIP-320: the leader's log ends epoch ``epoch`` at ``end_offset``; cut ours there."""
        lg = part.log
        if epoch < 0:
            target = lg.high_watermark
        else:
            mine, my_end = lg.end_offset_for_epoch(epoch)
            target = min(end_offset, my_end) if mine >= 0 else lg.high_watermark
        log.info("%s-%d: truncating to %d (diverging at leader epoch %d, end offset %d)",
                 part.topic, part.index, target, epoch, end_offset)
        part.truncate_to(target)
