"""Kafka error codes the group coordinator answers with, and how failed appends to its log
translate into them. The codes themselves are the protocol's table in ``wire.errors``."""

from josefk.wire.errors import *  # noqa: F401,F403  (re-exported: coordinator code says errors.X)
from josefk.wire.errors import name


class CoordinatorLogError(Exception):
    """Raised by an offsets-log ``append`` that failed; ``error_code`` is the Kafka error of the
    failed append (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, MESSAGE_TOO_LARGE, ...)."""

    def __init__(self, error_code: int, message: str = ""):
        super().__init__(message or name(error_code))
        self.error_code = error_code


def _append_error(code: int, too_large: int, timed_out: int = REQUEST_TIMED_OUT) -> int:
    if code in (UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return COORDINATOR_NOT_AVAILABLE
    if code in (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR):
        return NOT_COORDINATOR
    if code == REQUEST_TIMED_OUT:
        return timed_out
    if code in (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE):
        return too_large
    return code


def append_error_for_commit(code: int) -> int:
    """Kafka's translation of a failed __consumer_offsets append into an OffsetCommit error."""
    return _append_error(code, INVALID_COMMIT_OFFSET_SIZE)


def append_error_for_group(code: int) -> int:
    """Kafka's translation of a failed group-metadata append into a SyncGroup/JoinGroup error."""
    return _append_error(code, UNKNOWN_SERVER_ERROR, REBALANCE_IN_PROGRESS)


def append_error_for_write(code: int) -> int:
    """Kafka's translation of a failed append of a consumer group's records into the error its
    request answers (the coordinator runtime's)."""
    return _append_error(code, UNKNOWN_SERVER_ERROR, COORDINATOR_NOT_AVAILABLE)
