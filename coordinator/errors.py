"""Kafka error codes used by the group coordinator (the numbers are the protocol's).

Kept separate from ``wire`` on purpose: the coordinator knows nothing about the wire, it only
answers with the ints a real broker would put in the response.
"""

UNKNOWN_SERVER_ERROR = -1
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_FETCH_SIZE = 4
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
MESSAGE_TOO_LARGE = 10
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
RECORD_LIST_TOO_LARGE = 18
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_COMMIT_OFFSET_SIZE = 28
GROUP_AUTHORIZATION_FAILED = 30
KAFKA_STORAGE_ERROR = 56
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNSTABLE_OFFSET_COMMIT = 88

_NAMES = {v: k for k, v in list(globals().items()) if k.isupper() and isinstance(v, int)}


def name(code: int) -> str:
    """The Kafka name of an error code, for logs and test messages."""
    return _NAMES.get(code, f"ERROR_{code}")


class CoordinatorLogError(Exception):
    """Raised by an offsets-log ``append`` that failed; ``error_code`` is the Kafka error of the
    failed append (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, MESSAGE_TOO_LARGE, ...)."""

    def __init__(self, error_code: int, message: str = ""):
        super().__init__(message or name(error_code))
        self.error_code = error_code


def append_error_for_commit(code: int) -> int:
    """Kafka's translation of a failed __consumer_offsets append into an OffsetCommit error."""
    if code in (UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return COORDINATOR_NOT_AVAILABLE
    if code in (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR):
        return NOT_COORDINATOR
    if code in (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE):
        return INVALID_COMMIT_OFFSET_SIZE
    return code


def append_error_for_group(code: int) -> int:
    """Kafka's translation of a failed group-metadata append into a SyncGroup/JoinGroup error."""
    if code in (UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return COORDINATOR_NOT_AVAILABLE
    if code in (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR):
        return NOT_COORDINATOR
    if code == REQUEST_TIMED_OUT:
        return REBALANCE_IN_PROGRESS
    if code in (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE):
        return UNKNOWN_SERVER_ERROR
    return code
