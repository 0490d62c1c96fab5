"""The log cleaner: ``log.cleaner.threads`` threads compacting the logs whose cleanup.policy
includes "compact", as Kafka's LogCleaner does.

Each pass puts every compacted log in a shared queue; a thread takes the next log no other
thread is cleaning, compacts it and takes another. A thread that finds the queue empty sleeps
``log.cleaner.backoff.ms`` and starts the next pass. The number of threads changes at run time
(a dynamic broker config): new threads join the current pass, removed ones finish the log they
are cleaning and exit.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque

log = logging.getLogger("josefk.cleaner")


class LogCleaner:
    def __init__(self, logs, backoff_ms: int):
        self._logs = logs  # a LogManager
        self._backoff_s = backoff_ms / 1000
        self._lock = threading.Lock()
        self._queue: deque = deque()  # this pass's (topic, partition) keys not yet taken
        self._busy: set = set()  # keys being cleaned now
        self._threads: list[tuple[threading.Thread, threading.Event]] = []
        self._next_id = 0
        self._running = False

    @property
    def thread_count(self) -> int:
        return len(self._threads)

    def start(self, threads: int) -> None:
        self._running = True
        self.resize(threads)

    def resize(self, threads: int) -> None:
        """Run ``threads`` cleaner threads (only once started)."""
        if not self._running or threads == len(self._threads):
            return
        with self._lock:
            while len(self._threads) < threads:
                stop = threading.Event()
                t = threading.Thread(target=self._run, args=(stop,), daemon=True,
                                     name=f"josefk-cleaner-{self._next_id}")
                self._next_id += 1
                self._threads.append((t, stop))
                t.start()
            while len(self._threads) > threads:
                self._threads.pop()[1].set()
        log.info("log cleaner running %d threads", threads)

    def stop(self) -> None:
        """Stop every thread, letting a compaction in progress finish."""
        self._running = False
        with self._lock:
            threads, self._threads = self._threads, []
        for _, stop in threads:
            stop.set()
        for t, _ in threads:
            t.join()

    def _take(self):
        with self._lock:
            while self._queue:
                key = self._queue.popleft()
                if key not in self._busy:
                    self._busy.add(key)
                    return key
            return None

    def _refill(self) -> None:
        with self._lock:
            if not self._queue:
                self._queue.extend(key for key, lg in self._logs.all_logs().items()
                                   if lg.config.compact)

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            key = self._take()
            if key is None:
                if not stop.wait(self._backoff_s):
                    self._refill()
                continue
            try:
                lg = self._logs.get(*key)
                if lg is not None and not lg.closed:
                    lg.compact(int(time.time() * 1000))
            except Exception:  # noqa: BLE001 - a log that fails to clean must not stop the rest
                log.exception("cleaning %s-%d failed", *key)
            finally:
                with self._lock:
                    self._busy.discard(key)
