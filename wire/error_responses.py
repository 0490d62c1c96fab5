"""The response a broker gives when a whole request fails with one error, as Kafka's
``AbstractRequest.getErrorResponse`` builds it: every entry of the response that answers an
entry of the request (a topic, a partition, a group, a coordinator key...) carries the error and
the request's name for it, and so does the top-level error code where the response has one.
Nothing else is filled in (the layout's defaults)."""
from __future__ import annotations

from josefk.wire.schema import UUID, STRING, Array, Prim

# Response arrays that answer a request array of another name (the names of Kafka's schemas);
# arrays of the same name answer each other.
ANSWERS = {
    "Produce": {"topic_data": "responses", "partition_data": "partition_responses"},
    "Fetch": {"topics": "responses"},
    "OffsetFetch": {"partition_indexes": "partitions"},
    "FindCoordinator": {"coordinator_keys": "coordinators"},
    "DeleteTopics": {"topics": "responses", "topic_names": "responses"},
    "AddPartitionsToTxn": {"transactions": "results_by_transaction", "topics": "topic_results",
                           "partitions": "results_by_partition",
                           "v3_and_below_topics": "results_by_topic_v3_and_below"},
    "WriteTxnMarkers": {"partition_indexes": "partitions"},
    "DescribeConfigs": {"resources": "results"},
    "AlterConfigs": {"resources": "responses"},
    "IncrementalAlterConfigs": {"resources": "responses"},
    "CreatePartitions": {"topics": "results"},
    "DeleteGroups": {"groups_names": "results"},
    "ElectLeaders": {"topic_partitions": "replica_election_results",
                     "partitions": "partition_result"},
    "DescribeProducers": {"partition_indexes": "partitions"},
    "DescribeTransactions": {"transactional_ids": "transaction_states"},
    "CreateAcls": {"creations": "results"},
    "DeleteAcls": {"filters": "filter_results"},
    "DescribeUserScramCredentials": {"users": "results"},
}
# Request fields that name an entry besides its first field (copied where the response has them).
_NAMING_TYPES = (STRING, UUID)


def error_response(api, request, code: int):
    """``api``'s response to ``request`` with ``code`` on every entry that has an error code."""
    return _answer(api.Response, request, None, code, ANSWERS.get(api.name, {}), top=True)


def _is_error(name: str) -> bool:
    return name.endswith("error_code")


def _carries_errors(fields) -> bool:
    """Whether a struct, or one nested in it, has an error code."""
    return any(_is_error(f.name) or (isinstance(f.type, list) and _carries_errors(f.type))
               for f in fields)


def _answer(klass, entry, key_type, code, answers, top=False):
    """An instance of response struct ``klass`` answering ``entry``: a request struct, or one
    value of a request array of ``key_type`` (a topic name, a partition index...)."""
    out = klass()
    fields = klass._fields
    for f in fields:
        if _is_error(f.name):
            setattr(out, f.name, code)
    keys = [f for f in fields if isinstance(f.type, Prim) and not _is_error(f.name)]
    if key_type is not None:  # the entry is the key itself
        slot = next((f for f in keys if f.type is key_type), None)
        if slot is not None:
            setattr(out, slot.name, entry)
        return out
    request_fields = type(entry)._fields
    if not top:
        _copy_keys(out, keys, entry, request_fields)
    for f in fields:
        if not (isinstance(f.type, list) and _carries_errors(f.type)):
            continue
        nested = klass._nested[f.name]
        items = []
        for source in request_fields:
            if source.name != f.name and answers.get(source.name) != f.name:
                continue
            values = getattr(entry, source.name) or ()
            item_type = source.type.item if isinstance(source.type, Array) else None
            if item_type is None and not isinstance(source.type, list):
                continue
            items += [_answer(nested, v, item_type, code, answers) for v in values]
        setattr(out, f.name, items)
    return out


def _copy_keys(out, keys, entry, request_fields) -> None:
    """The request entry's first field (under its own name, or into the response's first field
    of its type) and its other names and ids."""
    by_name = {f.name for f in keys}
    first = next((f for f in request_fields if isinstance(f.type, Prim)), None)
    if first is not None and first.name not in by_name:
        slot = next((f for f in keys if f.type is first.type), None)
        if slot is not None:
            setattr(out, slot.name, getattr(entry, first.name))
    for f in request_fields:
        if f.name in by_name and (f is first or f.type in _NAMING_TYPES):
            setattr(out, f.name, getattr(entry, f.name))
