"""Partition logs on disk: segments, indexes, recovery, retention, compaction, checkpoints."""
from .config import LogConfig
from .errors import (InvalidConfig, OffsetOutOfRange, RecordTooLarge, StorageError,
                     UnexpectedAppendOffset)
from .log import FetchData, Log
from .manager import LogManager

__all__ = ["LogConfig", "Log", "FetchData", "LogManager", "StorageError", "OffsetOutOfRange",
           "RecordTooLarge", "UnexpectedAppendOffset", "InvalidConfig"]
