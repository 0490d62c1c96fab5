"""Incremental fetch sessions (KIP-227).

A client that sends session epoch 0 gets a session: the broker remembers the partitions it
fetches and their fetch positions, so the following requests (epochs 1, 2, ...) carry only the
partitions whose position changed, and the responses only the partitions with something new
(records, an error, a moved high watermark, last stable offset or log start offset). Epoch -1
closes a session (and is a plain full fetch). The cache holds
``max.incremental.fetch.session.cache.slots`` sessions; when full, a new session may evict one
idle for ``min.incremental.fetch.session.eviction.ms``, else one with fewer partitions that is not
a follower's (followers' sessions are privileged), as Kafka's FetchSessionCache does.
"""
from __future__ import annotations

import random
import time

from josefk.wire import errors

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0
_INT32_MAX = 0x7FFFFFFF


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= _INT32_MAX else epoch + 1


class CachedPartition:
    """A session's partition: its last fetch request, and what its last response said."""

    __slots__ = ("request", "high_watermark", "last_stable_offset", "log_start_offset")

    def __init__(self, request):
        self.request = request
        self.high_watermark = self.last_stable_offset = self.log_start_offset = None


class FetchSession:
    __slots__ = ("id", "privileged", "partitions", "epoch", "created_ms", "last_used_ms",
                 "_by_topic")

    def __init__(self, session_id, privileged, partitions, now_ms):
        self.id = session_id
        self.privileged = privileged
        self.partitions = partitions  # {(topic key, index): CachedPartition}, request order
        self._by_topic = None
        self.epoch = next_epoch(INITIAL_EPOCH)  # the epoch the next request must carry
        self.created_ms = self.last_used_ms = now_ms

    def by_topic(self, changed: bool):
        """The partitions grouped by topic, [(topic key, [CachedPartition])], regrouped only
        when ``changed`` (partitions were added or removed)."""
        if changed or self._by_topic is None:
            grouped: dict = {}
            for (tkey, _i), cached in self.partitions.items():
                grouped.setdefault(tkey, []).append(cached)
            self._by_topic = list(grouped.items())
        return self._by_topic


class FetchContext:
    """What one Fetch request reads (``topics``: [(topic key, [FetchPartition])]) and how its
    response is shaped (``finish``)."""

    def __init__(self, topics, session=None, incremental=False, cache=None, error=errors.NONE,
                 cached=()):
        self.topics = topics
        self.cached = cached  # incremental: [(topic key, [CachedPartition])], as ``topics``
        self.session = session
        self.incremental = incremental
        self.cache = cache
        self.error = error

    def finish(self, resp, key_of):
        """Give the response its session id; an incremental one keeps only what changed. A full
        fetch at epoch 0 creates the session now (if the cache has room)."""
        session = self.session
        if self.cache is not None and session is None:  # epoch 0: try to open one
            session = self.cache.create(self.privileged, self._partitions())
        if session is None:
            resp.session_id = NO_SESSION
            return resp
        resp.session_id = session.id
        kept_topics = []
        for t in resp.responses:
            tkey = key_of(t)
            kept = [pd for pd in t.partitions
                    if self._changed(session.partitions.get((tkey, pd.partition_index)), pd)
                    or not self.incremental]
            if kept:
                t.partitions = kept
                kept_topics.append(t)
        resp.responses = kept_topics
        return resp

    privileged = False

    def _partitions(self):
        return {(tkey, fp.partition): CachedPartition(fp) for tkey, fps in self.topics
                for fp in fps}

    @staticmethod
    def _changed(cached, pd) -> bool:
        if cached is None:
            return True
        changed = (bool(pd.records) or pd.error_code != errors.NONE
                   or pd.high_watermark != cached.high_watermark
                   or pd.last_stable_offset != cached.last_stable_offset
                   or pd.log_start_offset != cached.log_start_offset
                   or (pd.diverging_epoch is not None and pd.diverging_epoch.end_offset >= 0))
        # After an error, the next answer without one is sent even if nothing else moved.
        cached.high_watermark = pd.high_watermark if pd.error_code == errors.NONE else -1
        cached.last_stable_offset = pd.last_stable_offset
        cached.log_start_offset = pd.log_start_offset
        return changed


class FetchSessionCache:
    def __init__(self, slots: int, eviction_ms: int):
        self.slots = slots
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}

    def context(self, session_id, epoch, topics, forgotten, privileged) -> FetchContext:
        """``topics``: [(topic key, [FetchPartition])] as requested; ``forgotten``:
        [(topic key, [partition])]."""
        if epoch == FINAL_EPOCH or epoch == INITIAL_EPOCH:
            if session_id != NO_SESSION:
                self.sessions.pop(session_id, None)
            ctx = FetchContext(topics, cache=self if epoch == INITIAL_EPOCH else None)
            ctx.privileged = privileged
            return ctx
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext([], error=errors.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            return FetchContext([], error=errors.INVALID_FETCH_SESSION_EPOCH)
        parts = session.partitions
        size = len(parts)
        removed = False
        for tkey, indexes in forgotten:
            for i in indexes:
                removed |= parts.pop((tkey, i), None) is not None
        for tkey, fps in topics:
            for fp in fps:
                cached = parts.get((tkey, fp.partition))
                if cached is None:
                    parts[(tkey, fp.partition)] = CachedPartition(fp)
                else:
                    cached.request = fp
        session.epoch = next_epoch(epoch)
        session.last_used_ms = _now_ms()
        by_topic = session.by_topic(removed or len(parts) != size)
        return FetchContext([(tkey, [c.request for c in cs]) for tkey, cs in by_topic],
                            session=session, incremental=True, cached=by_topic)

    def create(self, privileged: bool, partitions: dict) -> FetchSession | None:
        now = _now_ms()
        if len(self.sessions) >= self.slots and not self._evict_for(privileged, len(partitions),
                                                                    now):
            return None
        while True:
            sid = random.randint(1, _INT32_MAX)
            if sid not in self.sessions:
                break
        s = self.sessions[sid] = FetchSession(sid, privileged, partitions, now)
        return s

    def _evict_for(self, privileged: bool, size: int, now: int) -> bool:
        if not self.sessions:  # no slots at all (0 configured): every fetch is sessionless
            return False
        stale = [s for s in self.sessions.values() if now - s.last_used_ms >= self.eviction_ms]
        if stale:
            victim = min(stale, key=lambda s: s.last_used_ms)
        else:
            victim = min(self.sessions.values(),
                         key=lambda s: (s.privileged, len(s.partitions), s.last_used_ms))
            # A follower's session may evict a consumer's; a larger one, a smaller one that has
            # had its eviction period.
            bigger = size > len(victim.partitions) and now - victim.created_ms >= self.eviction_ms
            if victim.privileged or not (privileged or bigger):
                return False
        del self.sessions[victim.id]
        return True
