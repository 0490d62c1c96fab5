"""A whole request failed with one error (wire/error_responses.py, what injected faults answer):
every entry of the response that answers an entry of the request carries the error and the
request's name for it, at every version of every API."""
from __future__ import annotations

import random

import pytest

from josefk.wire import errors
from josefk.wire.apis import (ADD_PARTITIONS_TO_TXN, DELETE_TOPICS, FETCH, FIND_COORDINATOR,
                              JOIN_GROUP, OFFSET_FETCH, PRODUCE)
from josefk.wire.error_responses import error_response
from testkit.fuzzer import RequestGenerator, api_versions

CODE = errors.NOT_LEADER_OR_FOLLOWER


def _error_codes(obj, version):
    """Every error code the encoded response holds at ``version``."""
    for f in obj._fields:
        if version not in f.versions:
            continue
        value = getattr(obj, f.name)
        if f.name.endswith("error_code"):
            yield value
        for item in value if isinstance(value, list) else [value]:
            if hasattr(item, "_fields"):
                yield from _error_codes(item, version)


@pytest.mark.parametrize("api,version", api_versions(),
                         ids=[f"{a.name}-v{v}" for a, v in api_versions()])
def test_every_version_encodes_with_the_error_on_every_entry(api, version):
    gen = RequestGenerator(random.Random(f"{api.name}{version}"), ["orders", "t"], ["g"])
    for _ in range(5):
        request = gen.request(api, version)
        response = error_response(api, request, CODE)
        decoded, _end = api.Response.decode(response.to_bytes(version), version)
        codes = list(_error_codes(decoded, version))
        assert set(codes) <= {CODE}, codes


def _request(api, **fields):
    return api.Request(**fields)


def test_produce_answers_each_partition_by_topic_and_index():
    R = PRODUCE.Request
    req = R(acks=-1, timeout_ms=1000, topic_data=[
        R.TopicProduceData(name="a", partition_data=[R.PartitionProduceData(index=0),
                                                     R.PartitionProduceData(index=3)]),
        R.TopicProduceData(name="b", partition_data=[R.PartitionProduceData(index=1)])])
    resp = error_response(PRODUCE, req, CODE)
    assert [(t.name, p.index, p.error_code) for t in resp.responses
            for p in t.partition_responses] == [("a", 0, CODE), ("a", 3, CODE), ("b", 1, CODE)]
    assert resp.node_endpoints == []


def test_fetch_answers_partitions_under_their_response_names_and_the_top_level():
    R = FETCH.Request
    req = R(max_wait_ms=100, min_bytes=1, session_id=5, topics=[R.FetchTopic(
        topic="a", partitions=[R.FetchPartition(partition=2, fetch_offset=7, log_start_offset=3)])],
        forgotten_topics_data=[R.ForgottenTopic(topic="x", partitions=[1])])
    resp = error_response(FETCH, req, CODE)
    assert resp.error_code == CODE and resp.session_id == 0
    (t,) = resp.responses
    (p,) = t.partitions
    assert (t.topic, p.partition_index, p.error_code, p.log_start_offset) == ("a", 2, CODE, -1)


def test_keys_given_as_plain_values_name_their_entries():
    R = OFFSET_FETCH.Request
    req = R(groups=[R.OffsetFetchRequestGroup(group_id="g", topics=[R.OffsetFetchRequestTopics(
        name="a", partition_indexes=[4, 5])])])
    (group,) = error_response(OFFSET_FETCH, req, CODE).groups
    assert (group.group_id, group.error_code) == ("g", CODE)
    assert [(p.partition_index, p.error_code) for p in group.topics[0].partitions] == \
        [(4, CODE), (5, CODE)]
    coordinators = error_response(FIND_COORDINATOR, FIND_COORDINATOR.Request(
        coordinator_keys=["g1", "g2"]), CODE).coordinators
    assert [(c.key, c.error_code) for c in coordinators] == [("g1", CODE), ("g2", CODE)]
    R = ADD_PARTITIONS_TO_TXN.Request
    (topic,) = error_response(ADD_PARTITIONS_TO_TXN, R(v3_and_below_topics=[
        R.AddPartitionsToTxnTopic(name="a", partitions=[0, 1])]), CODE) \
        .results_by_topic_v3_and_below
    assert [(p.partition_index, p.partition_error_code) for p in topic.results_by_partition] \
        == [(0, CODE), (1, CODE)]


def test_old_and_new_request_arrays_answer_in_the_same_response_array():
    R = DELETE_TOPICS.Request
    old = error_response(DELETE_TOPICS, R(topic_names=["a", "b"]), CODE)
    new = error_response(DELETE_TOPICS, R(topics=[R.DeleteTopicState(name="a")]), CODE)
    assert [(r.name, r.error_code) for r in old.responses] == [("a", CODE), ("b", CODE)]
    assert [(r.name, r.error_code) for r in new.responses] == [("a", CODE)]


def test_arrays_without_errors_stay_empty():
    R = JOIN_GROUP.Request
    resp = error_response(JOIN_GROUP, R(group_id="g", protocols=[
        R.JoinGroupRequestProtocol(name="range")]), errors.REBALANCE_IN_PROGRESS)
    assert resp.error_code == errors.REBALANCE_IN_PROGRESS and resp.members == []
