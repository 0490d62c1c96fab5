"""Partition logs on disk: segments, indexes, recovery, retention, compaction, checkpoints, and
the validation a leader's records pass before they are appended (``log_validator``).

Owns the file formats (``.log``, ``.index``, ``.timeindex``, snapshots, Kafka's checkpoint
files) and hands out byte ranges of them. Knows record batches only through ``wire``'s
headers and record walk; must not know requests, clients, replication or ZooKeeper (imports ``josefk.wire``
only)."""
from .config import LogConfig
from .errors import (InvalidConfig, OffsetOutOfRange, RecordTooLarge, StorageError,
                     UnexpectedAppendOffset)
from .log import FetchData, Log
from .manager import LogManager

__all__ = ["LogConfig", "Log", "FetchData", "LogManager", "StorageError", "OffsetOutOfRange",
           "RecordTooLarge", "UnexpectedAppendOffset", "InvalidConfig"]
