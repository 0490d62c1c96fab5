"""Share-group layouts (KIP-932) pinned byte for byte: kafka-python vendors no share schemas, so
these are written down from Kafka 4.2's JSON schemas and from how librdkafka's share consumer
writes and reads them (rdkafka_request.c, rdkafka_fetcher.c)."""
from __future__ import annotations

import uuid

from josefk.wire.apis import (SHARE_ACKNOWLEDGE, SHARE_FETCH, SHARE_GROUP_HEARTBEAT,
                              WRITE_SHARE_GROUP_STATE)
from josefk.wire.internal_topics.share_group_state import SHARE_SNAPSHOT, SHARE_UPDATE

TID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def test_share_group_heartbeat_v1_request_as_librdkafka_writes_it():
    # GroupId, MemberId (compact strings), MemberEpoch, RackId (null), SubscribedTopicNames
    data = bytes.fromhex("0267" "026d" "00000000" "00" "02" "0274" "00")
    req, end = SHARE_GROUP_HEARTBEAT.Request.decode(data, 1)
    assert end == len(data)
    assert (req.group_id, req.member_id, req.member_epoch, req.rack_id,
            req.subscribed_topic_names) == ("g", "m", 0, None, ["t"])
    # a heartbeat leaves the topics null when they did not change
    req, _ = SHARE_GROUP_HEARTBEAT.Request.decode(bytes.fromhex("0267026d00000003000000"), 1)
    assert req.subscribed_topic_names is None and req.member_epoch == 3


def test_share_group_heartbeat_v1_response_assignment_is_a_nullable_struct():
    R = SHARE_GROUP_HEARTBEAT.Response
    resp = R(error_code=0, member_id="m", member_epoch=2, heartbeat_interval_ms=5000,
             assignment=R.Assignment(topic_partitions=[R.TopicPartitions(topic_id=TID,
                                                                          partitions=[0])]))
    assert resp.to_bytes(1) == bytes.fromhex(
        "00000000" "0000" "00" "026d" "00000002" "00001388"
        "01" "02" + TID.hex + "02" "00000000" "00" "00" "00")
    assert R(error_code=0, member_epoch=2).to_bytes(1).endswith(bytes.fromhex("ff" "00"))


def test_share_fetch_v1_response_in_librdkafkas_reading_order():
    R = SHARE_FETCH.Response
    resp = R(acquisition_lock_timeout_ms=30000, responses=[R.ShareFetchableTopicResponse(
        topic_id=TID, partitions=[R.PartitionData(
            partition_index=0, current_leader=R.LeaderIdAndEpoch(leader_id=1, leader_epoch=0),
            records=b"", acquired_records=[R.AcquiredRecords(first_offset=0, last_offset=9,
                                                             delivery_count=1)])])])
    assert resp.to_bytes(1) == bytes.fromhex(
        "00000000" "0000" "00" "00007530"  # throttle, error, message, lock timeout
        "02" + TID.hex +  # one topic
        "02" "00000000" "0000" "00" "0000" "00"  # partition, error, message, ack error, message
        "00000001" "00000000" "00"  # CurrentLeader (not tagged)
        "01"  # records: empty
        "02" "0000000000000000" "0000000000000009" "0001" "00"  # acquired 0-9, delivered once
        "00" "00"  # partition and topic tags
        "01"  # NodeEndpoints (not tagged): none
        "00")


def test_share_fetch_and_acknowledge_v2_add_the_acquire_mode_and_renew():
    Q = SHARE_FETCH.Request
    req = Q(group_id="g", member_id="m", share_session_epoch=1, max_wait_ms=500, min_bytes=1,
            max_bytes=1024, max_records=500, batch_size=500, share_acquire_mode=1,
            is_renew_ack=True, topics=[], forgotten_topics_data=[])
    v1, v2 = req.to_bytes(1), req.to_bytes(2)
    assert v2 == v1[:-3] + bytes.fromhex("01" "01") + v1[-3:]
    A = SHARE_ACKNOWLEDGE.Response
    assert len(A(acquisition_lock_timeout_ms=1).to_bytes(2)) == \
        len(A().to_bytes(1)) + 4


def test_write_share_group_state_v1_adds_the_delivery_complete_count():
    Q = WRITE_SHARE_GROUP_STATE.Request
    req = Q(group_id="g", topics=[Q.WriteStateData(topic_id=TID, partitions=[Q.PartitionData(
        partition=0, state_epoch=0, leader_epoch=1, start_offset=5, delivery_complete_count=3,
        state_batches=[])])])
    v0, v1 = req.to_bytes(0), req.to_bytes(1)
    assert len(v1) == len(v0) + 4 and bytes.fromhex("00000003") in v1


def test_share_state_records_as_kafka_writes_them():
    key = SHARE_SNAPSHOT.key(group_id="g", topic_id=TID, partition=2)
    assert key == bytes.fromhex("0000" "0001" "67") + TID.bytes + bytes.fromhex("00000002")
    assert SHARE_UPDATE.key(group_id="g", topic_id=TID, partition=2)[:2] == b"\x00\x01"
    B = SHARE_SNAPSHOT.Value.StateBatch
    value = SHARE_SNAPSHOT.value(0, snapshot_epoch=1, state_epoch=0, leader_epoch=3,
                                 start_offset=5, delivery_complete_count=2, create_timestamp=7,
                                 write_timestamp=8, state_batches=[B(
                                     first_offset=5, last_offset=9, delivery_state=2,
                                     delivery_count=1)])
    assert value == bytes.fromhex(
        "0000" "00000001" "00000000" "00000003" "0000000000000005"
        "0000000000000007" "0000000000000008"
        "02" "0000000000000005" "0000000000000009" "02" "0001" "00"
        "01" "00" "04" "00000002")  # one tagged field: tag 0, 4 bytes, DeliveryCompleteCount 2
