"""The coordinator runtime and what every coordinator shares: the runtime that loads, unloads
and writes the partitions of an internal topic for its coordinator (its shard), the clock and
timers, per-key locks, Kafka's error codes and the mapping of a key to its partition. Knows no
coordinator (imports ``josefk.wire`` only)."""
from . import errors
from .clock import AsyncioClock, FakeClock
from .memory_log import InMemoryOffsetsLog
from .partitions import java_string_hash, partition_for
from .runtime import CoordinatorResult, CoordinatorRuntime, CoordinatorShard

__all__ = ["errors", "AsyncioClock", "FakeClock", "InMemoryOffsetsLog", "java_string_hash",
           "partition_for", "CoordinatorResult", "CoordinatorRuntime", "CoordinatorShard"]
