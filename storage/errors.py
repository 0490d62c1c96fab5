"""Storage errors. Each maps to one Kafka error code (noted per class); the broker does the mapping."""


class StorageError(Exception):
    """Base class of the errors raised by ``storage``."""


class OffsetOutOfRange(StorageError):
    """Requested offset is below the log start offset or above the log end offset
    (OFFSET_OUT_OF_RANGE, error code 1)."""

    def __init__(self, offset, log_start_offset, log_end_offset, what="offset"):
        super().__init__(f"{what} {offset} is out of range [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class RecordTooLarge(StorageError):
    """A batch is bigger than the topic's max.message.bytes (MESSAGE_TOO_LARGE, error code 10)."""


class UnexpectedAppendOffset(StorageError):
    """A follower append whose offsets are not after the log end offset or not increasing
    (Kafka raises UnexpectedAppendOffsetException; the replica fetcher truncates and retries)."""


class InvalidConfig(StorageError, ValueError):
    """A log config value that cannot be parsed or is out of range (INVALID_CONFIG, code 40)."""
