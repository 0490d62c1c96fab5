"""Partition logs on disk: segments, indexes, recovery, retention, compaction, checkpoints.

Owns the file formats (``.log``, ``.index``, ``.timeindex``, snapshots, Kafka's checkpoint
files) and hands out byte ranges of them. Knows record batches only through ``wire``'s
headers; must not know requests, clients, replication or ZooKeeper (imports ``josefk.wire``
only)."""
from .config import LogConfig
from .errors import (InvalidConfig, OffsetOutOfRange, RecordTooLarge, StorageError,
                     UnexpectedAppendOffset)
from .log import FetchData, Log
from .manager import LogManager

__all__ = ["LogConfig", "Log", "FetchData", "LogManager", "StorageError", "OffsetOutOfRange",
           "RecordTooLarge", "UnexpectedAppendOffset", "InvalidConfig"]
