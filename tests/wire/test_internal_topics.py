"""The records of __consumer_offsets and __transaction_state, declared in wire/internal_topics/,
against the bytes the hand-written codecs wrote before them (and Kafka writes).

``tests/data/consumer_offsets-0.log`` and ``transaction_state-0.log`` are whole logs (record
batches back to back, offsets assigned) written by josefk's OffsetStore and transaction log
before their records were declared as data: offset commits (value v3, v1 with an expire
timestamp, gzip-compressed, non-ASCII metadata), group metadata (static and dynamic members, an
empty generation with null protocol and leader), tombstones of offsets and of a group,
transactional commits (committed, aborted, still open); transactional ids in every state of
interest, a tombstone. Existing deployments' logs must load unchanged, and every record must
come back byte for byte when re-encoded.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from josefk.coordinator.runtime.clock import FakeClock
from josefk.coordinator.group.group import CommitRecord, OffsetAndMetadata
from josefk.coordinator.group.offset_store import (GroupKey, GroupMemberRecord, GroupRecord, OffsetKey,
                                             OffsetStore, group_metadata_key,
                                             group_metadata_value, offset_commit_key,
                                             offset_commit_value, read_group_value, read_key,
                                             read_offset_value)
from josefk.coordinator.txn.txn_coordinator import TransactionCoordinator
from josefk.coordinator.txn.txn_log import (COMPLETE_ABORT, COMPLETE_COMMIT, ONGOING, PREPARE_COMMIT,
                                        TxnRecord, read_txn_key, read_txn_value, txn_key,
                                        txn_value)
from josefk.wire import batch as wire_batch
from josefk.wire import records as wire_records
from josefk.wire.internal_topics.consumer_offsets import CONSUMER_OFFSETS, OFFSET_COMMIT
from josefk.wire.types import DecodeError

DATA = Path(__file__).parent / "data"
T0 = 1_700_000_000_000


class FileLog:
    """The offsets-log interface over a log file of batches (read only)."""

    def __init__(self, path: Path):
        self.buf = path.read_bytes()

    def read_batches(self, partition: int):
        for h in wire_batch.iter_headers(self.buf):
            yield h, self.buf

    def records(self):
        """(key, value) of every data record (transaction markers left out)."""
        for h, buf in self.read_batches(0):
            if h.is_control:
                continue
            for r in wire_records.iter_records(buf, h):
                yield (None if r.key is None else bytes(r.key),
                       None if r.value is None else bytes(r.value))


# ------------------------------------------------------------------------------------------
# single records: the bytes the hand-written encoders produced

SAMPLES = [
    (offset_commit_key("grüppe", "orders", 7),
     "000100076772c3bc70706500066f726465727300000007"),
    (group_metadata_key("g1"), "000200026731"),
    (offset_commit_value(OffsetAndMetadata(2**40, 4, "ünï", T0 + 5)),
     "00030000010000000000000000040005c3bc6ec3af0000018bcfe56805"),
    (offset_commit_value(OffsetAndMetadata(5, 9, "", T0 + 6, T0 + 86_400_000)),
     "0001000000000000000500000000018bcfe568060000018bd50bc400"),
    (group_metadata_value(GroupRecord("consumer", 1, "range", "m-1", T0, [
        GroupMemberRecord("m-1", "i-1", "c-1", "/h", 300000, 45000, b"s", b"a"),
        GroupMemberRecord("m-2", None, "c-2", "/h", 60000, 10000, b"", b"")])),
     "00030008636f6e73756d657200000001000572616e676500036d2d310000018bcfe56800000000020003"
     "6d2d310003692d310003632d3100022f68000493e00000afc80000000173000000016100036d2d32ffff"
     "0003632d3200022f680000ea60000027100000000000000000"),
    (group_metadata_value(GroupRecord("", 3, None, None, -1, [])),
     "0003000000000003ffffffffffffffffffffffff00000000"),
    (txn_key("tx-a"), "0000000474782d61"),
    (txn_value(TxnRecord(1000, 0, 60000, ONGOING, {("b", 1), ("a", 2), ("a", 0)}, T0 + 1, T0)),
     "000000000000000003e800000000ea600100000002000161000000020000000000000002000162000000"
     "01000000010000018bcfe568010000018bcfe56800"),
    (txn_value(TxnRecord(1000, 1, 60000, 0, set(), T0 + 1, -1)),
     "000000000000000003e800010000ea6000ffffffff0000018bcfe56801ffffffffffffffff"),
]


@pytest.mark.parametrize("encoded,expected", SAMPLES)
def test_records_encode_to_the_bytes_written_before(encoded, expected):
    assert encoded.hex() == expected


def test_samples_decode_back():
    assert read_key(bytes.fromhex(SAMPLES[0][1])) == OffsetKey("grüppe", "orders", 7)
    assert read_key(bytes.fromhex(SAMPLES[1][1])) == GroupKey("g1")
    assert read_offset_value(bytes.fromhex(SAMPLES[2][1])) == OffsetAndMetadata(
        2**40, 4, "ünï", T0 + 5)
    assert read_offset_value(bytes.fromhex(SAMPLES[3][1])) == OffsetAndMetadata(
        5, -1, "", T0 + 6, T0 + 86_400_000)  # v1 has no leader epoch
    g = read_group_value(bytes.fromhex(SAMPLES[4][1]))
    assert [m.group_instance_id for m in g.members] == ["i-1", None]
    assert read_txn_key(bytes.fromhex(SAMPLES[6][1])) == "tx-a"
    assert read_txn_value(bytes.fromhex(SAMPLES[7][1])).partitions == {
        ("a", 0), ("a", 2), ("b", 1)}


def test_undeclared_types_and_versions_are_decode_errors():
    with pytest.raises(DecodeError, match="record type 200"):
        read_key(b"\x00\xc8\x00\x01g")
    with pytest.raises(DecodeError, match="OffsetCommitValue version 5"):
        read_offset_value(b"\x00\x05" + bytes(30))
    with pytest.raises(DecodeError):
        read_offset_value(b"\x00\x03\x00")           # truncated
    with pytest.raises(DecodeError):
        read_txn_key(b"\x00\x01\x00\x01a")           # __transaction_state has type 0 only
    with pytest.raises(DecodeError):
        read_key(None)


# ------------------------------------------------------------------------------------------
# whole logs written before

def test_every_record_of_the_old_logs_reencodes_byte_for_byte():
    n = 0
    for key, value in FileLog(DATA / "consumer_offsets-0.log").records():
        record, k = CONSUMER_OFFSETS.read_key(key)
        assert record.key(**{f.name: getattr(k, f.name) for f in record.Key._fields}) == key
        if record is OFFSET_COMMIT:
            assert value is None or offset_commit_value(read_offset_value(value)) == value
        else:
            assert value is None or group_metadata_value(read_group_value(value)) == value
        n += 1
    for key, value in FileLog(DATA / "transaction_state-0.log").records():
        assert txn_key(read_txn_key(key)) == key
        assert value is None or txn_value(read_txn_value(value)) == value
        n += 1
    assert n == 24  # 17 + 7


def test_an_old_consumer_offsets_log_loads_unchanged():
    loaded = OffsetStore(FileLog(DATA / "consumer_offsets-0.log")).load(0)
    assert loaded.offsets == {
        "g1": {("orders", 0): CommitRecord(18, OffsetAndMetadata(30, 4, "last", T0 + 12)),
               ("payments", 7): CommitRecord(3, OffsetAndMetadata(2**40, 1, "x" * 300, T0 + 5))},
        "simple": {("orders", 2): CommitRecord(5, OffsetAndMetadata(5, -1, "", T0 + 6,
                                                                    T0 + 86_400_000))},
        "empty": {("t", 0): CommitRecord(7, OffsetAndMetadata(1, -1, "", T0 + 7))},
        "txg": {("orders", 3): CommitRecord(13, OffsetAndMetadata(100, 2, "tx", T0 + 10))},
    }
    assert loaded.groups == {
        "g1": GroupRecord("consumer", 1, "range", "m-1", T0, [
            GroupMemberRecord("m-1", "instance-1", "client-1", "/127.0.0.1", 300000, 45000,
                              b"\x00\x01\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff",
                              b"\x00\x01asg"),
            GroupMemberRecord("m-2", None, "client-2", "/127.0.0.2", 60000, 10000, b"sub", b"")]),
        "empty": GroupRecord("consumer", 3, None, None, T0 + 7, []),
    }
    assert loaded.removed_groups == {"gone"}
    assert loaded.pending_txn == {9: {("txg", "orders", 3): CommitRecord(
        15, OffsetAndMetadata(300, 2, "tx", T0 + 10))}}


def test_an_old_transaction_state_log_loads_unchanged():
    markers = []

    async def write_markers(pid, epoch, commit, coordinator_epoch, partitions):
        markers.append((pid, epoch, commit, sorted(partitions)))
        return True

    async def load():
        coord = TransactionCoordinator({"transaction.state.log.num.partitions": 1},
                                       FileLog(DATA / "transaction_state-0.log"), None,
                                       write_markers, FakeClock())
        coord.load_partition(0, 1)
        before = {tid: (t.producer_id, t.producer_epoch, t.timeout_ms, t.state,
                        set(t.partitions), t.update_ms, t.start_ms)
                  for tid, t in coord.txns.items()}
        coord.shutdown()
        return before

    assert asyncio.run(load()) == {
        "tx-a": (1000, 0, 60000, ONGOING, {("orders", 0), ("orders", 1),
                                           ("__consumer_offsets", 12)}, T0 + 1, T0 + 1),
        "tx-b": (1001, 5, 900000, PREPARE_COMMIT, {("payments", 3)}, T0 + 2, T0),
        "tx-c": (1002, 32767, 1000, COMPLETE_ABORT, set(), T0 + 3, T0),
        "ünï": (1004, 2, 30000, COMPLETE_COMMIT, set(), T0 + 4, T0 + 3),
    }


# ------------------------------------------------------------------------------------------
# KIP-848 consumer groups: Kafka 4's record types 3-8 and 16, bytes derived by hand from
# group-coordinator/src/main/resources/common/message/ConsumerGroup*.json (flexible values v0)

def test_consumer_group_records_in_kafkas_bytes():
    import uuid

    from josefk.coordinator.group import consumer_records
    from josefk.coordinator.group.consumer_group import (CURRENT_ASSIGNMENT, GROUP_EPOCH,
                                                   MEMBER_METADATA, REGULAR_EXPRESSION,
                                                   ClassicMetadata, MemberAssignment,
                                                   MemberMetadata, Record, ResolvedRegex)

    tid = uuid.UUID(int=5)
    cases = [
        (Record(GROUP_EPOCH, "g", None, 7), "0003000167", "00000000000700"),
        (Record(MEMBER_METADATA, "g", "m", MemberMetadata(
            None, None, "c", "/h", ("a", "b"), None, 300000, None,
            ClassicMetadata(45000, (("range", b"xy"),)))),
         "0005000167" "00016d",
         "0000" "00" "00" "0263" "032f68" "03" "0261" "0262" "00" "000493e0" "00"
         "01" "00" "10" "0000afc8" "02" "0672616e6765" "037879" "00" "00"),
        (Record(CURRENT_ASSIGNMENT, "g", "m", MemberAssignment(3, 2, 0, {tid: frozenset({0, 1})},
                                                               {})),
         "000800016700016d",
         "0000" "00000003" "00000002" "00" "02" + tid.bytes.hex() + "03" "00000000" "00000001"
         "00" "01" "00"),
        (Record(REGULAR_EXPRESSION, "g", "t.*", ResolvedRegex(frozenset({"tx"}), 4, 9)),
         "0010000167" "0003742e2a",
         "0000" "02" "037478" "0000000000000004" "0000000000000009" "00"),
        (Record(MEMBER_METADATA, "g", "m", None), "0005000167" "00016d", None),
    ]
    for record, key, value in cases:
        k, v = consumer_records.encode(record)
        assert (k.hex(), v.hex() if v is not None else None) == (key, value)
        declared, decoded_key = CONSUMER_OFFSETS.read_key(k)
        assert consumer_records.decode(declared, decoded_key, v) == record


# ------------------------------------------------------------------------------------------
# KIP-932 share group members: Kafka 4's record types 10, 12, 13 and 14, bytes derived by hand
# from group-coordinator/src/main/resources/common/message/ShareGroup*.json (flexible values v0)

def test_share_group_member_records_in_kafkas_bytes():
    import uuid

    from josefk.coordinator.group.share_groups import (ShareMember, current_assignment_record,
                                                 member_record, member_tombstones)
    from josefk.wire.internal_topics.share_groups import (SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                                                          SHARE_GROUP_TARGET_ASSIGNMENT_METADATA)

    tid = uuid.UUID(int=5)
    m = ShareMember("m", "c", "/h")
    m.subscribed, m.epoch, m.assignment = ["t"], 3, {tid: [0, 1]}
    target = SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER
    cases = [
        (member_record("g", m), "000a000167" "00016d",
         "0000" "00" "0263" "032f68" "02" "0274" "00"),
        (current_assignment_record("g", m, 2), "000e000167" "00016d",
         "0000" "00000003" "00000002" "00" "02" + tid.bytes.hex() + "03" "00000000" "00000001"
         "00" "00"),
        ((target.key(group_id="g", member_id="m"), target.value(
            0, topic_partitions=[target.Value.TopicPartition(topic_id=tid, partitions=[0, 1])])),
         "000d000167" "00016d", "0000" "02" + tid.bytes.hex() + "03" "00000000" "00000001" "00"
         "00"),
        ((SHARE_GROUP_TARGET_ASSIGNMENT_METADATA.key(group_id="g"),
          SHARE_GROUP_TARGET_ASSIGNMENT_METADATA.value(0, assignment_epoch=3)),
         "000c000167", "0000" "00000003" "00"),
    ]
    for (k, v), key, value in cases:
        assert (k.hex(), v.hex()) == (key, value)
    assert [(k.hex(), v) for k, v in member_tombstones("g", "m")] == [
        ("000a000167" "00016d", None), ("000d000167" "00016d", None),
        ("000e000167" "00016d", None)]
