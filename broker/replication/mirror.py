"""Mirror topics' fetchers: a cluster link's leaders copy their source partitions.

The replica fetchers' loop (`fetcher.ReplicaFetcher`), one per source broker of the link,
fetching as a consumer does (replica id -1, read_uncommitted: up to the source's high
watermark, aborted transactions and markers included, as Cluster Linking does) from the
source partition's leader; the batches go into the mirror partition's log at their own
offsets (`Partition.append_mirrored`) and the log start follows the source's. What the
fetchers cannot do alone is told to the link (`MirrorFetcherManager.link`): a source
partition led elsewhere now (its metadata is read again) and a mirror stopped because the
source's log no longer holds its next offset (retention, DeleteRecords, a recreated topic):
nothing is skipped in silence.
"""
from __future__ import annotations

import logging
import time
from typing import Protocol

from josefk.broker.replication.fetcher import _RETRY_LATER, FetcherManager, ReplicaFetcher
from josefk.wire import errors
from josefk.wire.apis import FETCH

log = logging.getLogger("josefk.mirror")

CONSUMER = -1  # the replica id of a consumer's fetch


class LinkSide(Protocol):
    """What the mirror fetchers tell their cluster link (`broker.links.Link`)."""

    def leader_lost(self, key: tuple[str, int]) -> None: ...

    def source_unreachable(self, source_id: int) -> None: ...

    def stop_partition(self, key: tuple[str, int], reason: str) -> None: ...

    def resumed(self, key: tuple[str, int], dropped: tuple[int, int], start: int) -> None: ...


class MirrorFetcherManager(FetcherManager):
    """One cluster link's fetchers, by source broker id; ``channel_for`` opens the source's
    brokers."""

    def __init__(self, link: LinkSide, channel_for, config):
        super().__init__(CONSUMER, channel_for, config)
        self.link = link
        self.source_end: dict[tuple[str, int], int] = {}  # the source's last high watermark
        # how old the last batch appended was then (now - its max timestamp), in ms
        self.latency_ms: dict[tuple[str, int], int] = {}
        # bytes per offset of the last answer's batches (the lag in bytes is estimated by it)
        self.bytes_per_offset: dict[tuple[str, int], float] = {}
        self.caught_up_at: dict[tuple[str, int], float] = {}  # monotonic
        self.answered_at: dict[tuple[str, int], float] = {}  # the source's last answer
        # an answer older than this (a cut link, a stopped partition): the lag in ms is the
        # time since it was last caught up, whatever the last high watermark said
        self.stale_s = 2 * self.max_wait_ms / 1000 + 1.0
        # partitions an operator resumed: they start over at the source's log start
        self.resuming: set[tuple[str, int]] = set()

    def forget(self, key) -> None:
        """What is known of ``key`` (no longer mirrored here)."""
        for known in (self.source_end, self.latency_ms, self.bytes_per_offset,
                      self.caught_up_at, self.answered_at):
            known.pop(key, None)
        self.resuming.discard(key)

    def new_fetcher(self, source_id: int) -> ReplicaFetcher:
        return MirrorFetcher(self, source_id)


class MirrorFetcher(ReplicaFetcher):
    def _position(self, index: int, part):
        return FETCH.Request.FetchPartition(
            partition=index, current_leader_epoch=-1, fetch_offset=part.log.log_end_offset,
            last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=self.manager.partition_max_bytes)

    def _unreachable(self) -> None:
        self.manager.link.source_unreachable(self.source_id)

    def _handle_partition(self, key, part, pd):
        lg = part.log
        err = pd.error_code
        manager = self.manager
        link = manager.link
        if key in manager.resuming and err in (errors.NONE, errors.OFFSET_OUT_OF_RANGE):
            # an operator's command: start over at the source's log start (what it answered
            # is fetched again from there)
            manager.resuming.discard(key)
            dropped = (lg.log_start_offset, lg.log_end_offset)
            part.restart_at(pd.log_start_offset)
            link.resumed(key, dropped, pd.log_start_offset)
            return
        if err == errors.NONE:
            manager.source_end[key] = pd.high_watermark
            manager.answered_at[key] = time.monotonic()
            before = lg.log_end_offset
            newest = part.append_mirrored(pd.records or b"")
            if newest is not None:
                manager.latency_ms[key] = max(0, int(time.time() * 1000) - newest)
                moved = lg.log_end_offset - before
                if moved > 0:
                    manager.bytes_per_offset[key] = len(pd.records) / moved
            if lg.log_end_offset >= pd.high_watermark:
                manager.caught_up_at[key] = time.monotonic()
            if pd.log_start_offset > lg.log_start_offset:  # retention or DeleteRecords there
                lg.delete_records_before(min(pd.log_start_offset, lg.high_watermark))
        elif err == errors.OFFSET_OUT_OF_RANGE:
            if lg.log_end_offset == 0 and pd.log_start_offset > 0:  # a new mirror
                log.info("%s-%d: mirroring from the source's log start %d", *key,
                         pd.log_start_offset)
                part.restart_at(pd.log_start_offset)
                return
            where = ("below the source's log start" if lg.log_end_offset < pd.log_start_offset
                     else "past the source's log end")
            link.stop_partition(key, f"offset {lg.log_end_offset} is {where} "
                             f"({pd.log_start_offset}..{pd.high_watermark})")
        elif err in _RETRY_LATER:
            link.leader_lost(key)
        else:
            log.warning("%s-%d: mirror fetch from source broker %d answered error %d", *key,
                        self.source_id, err)
            self.delayed[key] = time.monotonic() + self.manager.backoff_s
