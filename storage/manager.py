"""The broker's data directories: one ``Log`` per ``<topic>-<partition>`` directory, plus Kafka's
per-log-dir checkpoint files.

Checkpoint files (text, as Kafka writes them)::

    0                       <- version
    2                       <- number of entries
    my-topic 0 1234         <- topic partition offset
    my-topic 1 99

``replication-offset-checkpoint`` holds high watermarks, ``recovery-point-offset-checkpoint`` the
offsets below which data was fsynced, ``log-start-offset-checkpoint`` the log start offsets;
``remote-log-start-offset-checkpoint`` (josefk's) the starts of tiered logs below their local
data (a DeleteRecords offset there), apart, so that a log start checkpointed before local
retention moved on is never taken for one.
Topic metadata (ids, configs) is not stored here.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .config import LogConfig
from .errors import StorageError
from .log import Log
from .segment import _fsync_dir

log = logging.getLogger(__name__)

HWM_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
REMOTE_LOG_START_CHECKPOINT = "remote-log-start-offset-checkpoint"
CHECKPOINT_FILES = (HWM_CHECKPOINT, RECOVERY_CHECKPOINT, LOG_START_CHECKPOINT,
                    REMOTE_LOG_START_CHECKPOINT)

_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_DELETE_SUFFIX = "-delete"
_MAX_FILE_NAME = 255
IO_THREADS = 16


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def delete_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>.<uuid>-delete``, the topic cut short (as Kafka does) so that the
    name stays within the 255 bytes a file name may have whatever the topic's length."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{_DELETE_SUFFIX}"
    return topic[:_MAX_FILE_NAME - len(suffix)] + suffix


def parse_partition_dir(name: str):
    """``(topic, partition)`` for a ``<topic>-<partition>`` directory name, else None."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit() or not _TOPIC_RE.match(topic):
        return None
    return topic, int(part)


def read_checkpoint(path) -> dict[tuple[str, int], int]:
    """Parse a Kafka offset checkpoint file; a missing or malformed file reads as empty."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return {}
    lines = text.splitlines()
    try:
        if lines[0].strip() != "0":
            raise ValueError(f"unsupported checkpoint version {lines[0]!r}")
        count = int(lines[1])
        out = {}
        for line in lines[2:2 + count]:
            topic, part, off = line.split()
            out[(topic, int(part))] = int(off)
        if len(out) != count:
            raise ValueError("entry count mismatch")
        return out
    except (IndexError, ValueError) as e:
        log.warning("ignoring malformed checkpoint file %s: %s", path, e)
        return {}


def write_checkpoint(path, entries: dict[tuple[str, int], int]) -> None:
    """Write a Kafka offset checkpoint file atomically (tmp file, fsync, rename)."""
    path = Path(path)
    lines = ["0", str(len(entries))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, ("\n".join(lines) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _in_parallel(fn, items) -> list:
    """``[fn(x) for x in items]`` over threads: loading or closing thousands of logs waits
    mostly on the disk (opens, directory fsyncs), which threads overlap."""
    if len(items) < 2 * IO_THREADS:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(IO_THREADS, thread_name_prefix="josefk-logs") as pool:
        return list(pool.map(fn, items))


def remove_dirs(dirs) -> None:
    """Remove the directories `LogManager.detach` renamed (slow for many: a worker's job)."""
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


class LogManager:
    """All partition logs of this broker across ``log_dirs``.

    ``config_for(topic)`` (optional) returns the LogConfig of a topic whose logs are found at
    start-up; otherwise ``default_config`` is used until the broker sets ``log.config``.
    """

    def __init__(self, log_dirs: list[str], default_config: LogConfig | None = None, *,
                 config_for=None):
        if not log_dirs:
            raise ValueError("at least one log dir is required")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config if default_config is not None else LogConfig()
        self._config_for = config_for
        self._logs: dict[tuple[str, int], Log] = {}
        self._dir_of: dict[tuple[str, int], Path] = {}
        self.failed: dict[tuple[str, int], str] = {}  # logs that cannot be served, and why
        self.offline_dirs: set[Path] = set()  # dirs taken offline after an I/O error
        self._lock = threading.RLock()
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self._load()

    def _load(self):
        found = []
        for d in self.log_dirs:
            hwms = read_checkpoint(d / HWM_CHECKPOINT)
            recovery = read_checkpoint(d / RECOVERY_CHECKPOINT)
            starts = read_checkpoint(d / LOG_START_CHECKPOINT)
            remote_starts = read_checkpoint(d / REMOTE_LOG_START_CHECKPOINT)
            for entry in sorted(os.listdir(d)):
                path = d / entry
                if not path.is_dir():
                    continue
                if entry.endswith(_DELETE_SUFFIX):
                    log.info("finishing the deletion of %s", path)
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                tp = parse_partition_dir(entry)
                if tp is None:
                    continue  # e.g. "-future"/"-stray" dirs or foreign directories
                if tp in self._dir_of:
                    raise RuntimeError(f"partition {tp[0]}-{tp[1]} found in both "
                                       f"{self._dir_of[tp]} and {d}")
                self._dir_of[tp] = d
                found.append((tp, path, starts.get(tp), recovery.get(tp), hwms.get(tp),
                              remote_starts.get(tp, -1)))

        def load(item):
            tp, path, start, recovery_point, hwm, remote_start = item
            try:
                cfg = self._config_for(tp[0]) if self._config_for is not None else None
                lg = Log(path, cfg if cfg is not None else self.default_config,
                         log_start_offset=start, recovery_point=recovery_point,
                         high_watermark=hwm)
                lg.remote_log_start = remote_start
                return lg
            except (StorageError, OSError) as e:
                # One log that cannot load must not keep the broker from serving the others.
                log.error("cannot load the log of %s-%d in %s: %s", tp[0], tp[1], path.parent, e)
                return f"cannot load {path}: {e}"

        for (tp, *_), lg in zip(found, _in_parallel(load, found)):
            if isinstance(lg, str):
                self.failed[tp] = lg
                del self._dir_of[tp]
            else:
                self._logs[tp] = lg

    # -- access ----------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The partition's log, created in the least-loaded log dir if absent. A given
        ``config`` replaces the log's config."""
        with self._lock:
            tp = (topic, partition)
            lg = self._logs.get(tp)
            if lg is not None:
                if config is not None:
                    lg.config = config
                return lg
            if tp in self.failed:
                raise StorageError(self.failed[tp])
            if not _TOPIC_RE.match(topic) or topic in (".", "..") or partition < 0:
                raise ValueError(f"invalid topic partition {topic!r} {partition}")
            d = self._least_loaded_dir()
            lg = Log(d / partition_dir_name(topic, partition),
                     config if config is not None else self.default_config)
            self._logs[tp] = lg
            self._dir_of[tp] = d
            return lg

    def create_many(self, topic: str, partitions, config: LogConfig) -> list[Log]:
        """``get_or_create`` for many partitions of ``topic``, the new logs made by several
        threads at once (thousands of directories: the disk's latency, overlapped); returns
        the logs it made."""
        with self._lock:
            for p in partitions:
                if (topic, p) in self.failed:
                    raise StorageError(self.failed[(topic, p)])
                if not _TOPIC_RE.match(topic) or topic in (".", "..") or p < 0:
                    raise ValueError(f"invalid topic partition {topic!r} {p}")
            new = [p for p in partitions if (topic, p) not in self._logs]
            todo = list(zip(new, self._least_loaded_dirs(len(new))))
        made = _in_parallel(lambda pd: Log(pd[1] / partition_dir_name(topic, pd[0]), config),
                            todo)
        with self._lock:
            for (p, d), lg in zip(todo, made):
                if (topic, p) in self._logs:  # made meanwhile by get_or_create: that one stays
                    lg.close(clean_marker=False)
                    continue
                self._logs[(topic, p)] = lg
                self._dir_of[(topic, p)] = d
        return [lg for lg in made if not lg.closed]

    def _least_loaded_dir(self) -> Path:
        return self._least_loaded_dirs(1)[0]

    def _least_loaded_dirs(self, n: int) -> list[Path]:
        """The dirs of ``n`` new logs, each in the dir holding the fewest logs so far."""
        dirs = [d for d in self.log_dirs if d not in self.offline_dirs]
        if not dirs:
            raise StorageError("every log dir is offline")
        if len(dirs) == 1:  # no count over every partition per new partition
            return dirs * n
        counts = {d: 0 for d in dirs}
        for d in self._dir_of.values():
            if d in counts:
                counts[d] += 1
        out = []
        for _ in range(n):
            d = min(dirs, key=lambda x: counts[x])
            counts[d] += 1
            out.append(d)
        return out

    def fail_dir(self, d: Path, reason: str) -> list[tuple[str, int]]:
        """Take log dir ``d`` offline after an I/O error, as Kafka does: its logs are closed
        without writing anything more to it and stay unavailable (``failed``) until the broker
        restarts; no new log is made there. Returns the partitions it held."""
        with self._lock:
            self.offline_dirs.add(d)
            lost = [tp for tp, where in self._dir_of.items() if where == d]
            for tp in lost:
                del self._dir_of[tp]
                lg = self._logs.pop(tp, None)
                self.failed[tp] = f"log dir {d} is offline: {reason}"
                if lg is not None:
                    try:
                        lg.close(clean_marker=False)
                    except OSError:
                        pass  # the disk is failing: recovery at the next start sorts it out
            return lost

    def all_logs(self) -> dict[tuple[str, int], Log]:
        return dict(self._logs)

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get((topic, partition))

    def delete(self, topic: str, partitions) -> int:
        """Delete the logs of ``partitions`` of ``topic`` (`detach`, then `remove_dirs`).
        Returns how many of them had a log here."""
        renamed = self.detach(topic, partitions)
        remove_dirs(renamed)
        return len(renamed)

    def detach(self, topic: str, partitions) -> list[Path]:
        """Close the logs of ``partitions`` of ``topic`` and rename their dirs to
        ``<topic>-<partition>.<uuid>-delete`` (removed at start-up if not before); the
        checkpoints are written once per log dir, not once per partition (a topic of thousands
        of partitions is detached in one pass). Returns the renamed dirs, for `remove_dirs`."""
        renamed = []
        with self._lock:
            dirs = set()
            for partition in partitions:
                lg = self._logs.pop((topic, partition), None)
                if lg is None:
                    continue
                d = self._dir_of.pop((topic, partition))
                lg.close(clean_marker=False)
                dst = d / delete_dir_name(topic, partition)
                os.rename(lg.dir, dst)
                renamed.append(dst)
                dirs.add(d)
            for d in dirs:
                _fsync_dir(d)
                self._checkpoint_dir(d)
        return renamed

    # -- maintenance -------------------------------------------------------------------------

    def run_retention(self, now_ms: int | None = None) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        return sum(lg.apply_retention(now_ms) for lg in list(self._logs.values())
                   if not lg.closed)

    def flush_rolled(self) -> None:
        """fsync the rolled (no longer active) segments of every log, advancing their recovery
        points; meant to run periodically in an executor, before ``checkpoint``."""
        for lg in list(self._logs.values()):
            if not lg.closed:
                lg.flush_closed()

    def checkpoint(self) -> None:
        """Write the three checkpoint files of every log dir that is online (atomically)."""
        with self._lock:
            for d in self.log_dirs:
                if d not in self.offline_dirs:
                    self._checkpoint_dir(d)

    def _checkpoint_dir(self, d: Path) -> None:
        logs = {tp: lg for tp, lg in self._logs.items() if self._dir_of[tp] == d}
        write_checkpoint(d / HWM_CHECKPOINT, {tp: lg.high_watermark for tp, lg in logs.items()})
        write_checkpoint(d / RECOVERY_CHECKPOINT,
                         {tp: lg.recovery_point for tp, lg in logs.items()})
        write_checkpoint(d / LOG_START_CHECKPOINT,
                         {tp: lg.log_start_offset for tp, lg in logs.items()})
        write_checkpoint(d / REMOTE_LOG_START_CHECKPOINT, {
            tp: lg.remote_log_start for tp, lg in logs.items() if lg.remote_log_start >= 0})

    def close(self) -> None:
        """Close every log (flush + clean-shutdown marker), then write the checkpoints."""
        with self._lock:
            _in_parallel(Log.close, list(self._logs.values()))
            self.checkpoint()
