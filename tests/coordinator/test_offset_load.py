"""Bulk loading of __consumer_offsets (issue 11, defect 9): plain batches are reduced to each
key's last write natively and only those records are decoded, with the same result as a
record-by-record replay, transactions, tombstones, old key versions and compression included."""
from __future__ import annotations

import random
import struct

import pytest

from josefk.coordinator.group import offset_store
from josefk.coordinator.group.group import OffsetAndMetadata
from josefk.coordinator.group.offset_store import (GroupRecord, OffsetStore, group_metadata_key,
                                                   group_metadata_value, offset_commit_key,
                                                   offset_commit_value)
from josefk.coordinator.runtime import InMemoryOffsetsLog
from josefk.wire import records as wire_records
from josefk.wire import recscan

pytestmark = pytest.mark.usefixtures("record_walk")


def _commit(group, topic, part, offset):
    return (offset_commit_key(group, topic, part),
            offset_commit_value(OffsetAndMetadata(offset, -1, "", 1000)), None, 1000)


def _append(log, records, **kw):
    log.append(0, wire_records.build_batch(records, now_ms=1000, **kw))


def _summary(loaded):
    return ({g: {tp: (cr.appended_batch_offset, cr.offset_and_metadata.offset)
                 for tp, cr in offs.items()} for g, offs in loaded.offsets.items()},
            {g: rec.generation for g, rec in loaded.groups.items()}, loaded.removed_groups,
            {pid: {k: cr.offset_and_metadata.offset for k, cr in t.items()}
             for pid, t in loaded.pending_txn.items()})


def _replay_one_by_one(log):
    """What a replay that decodes every record in order yields (the reference)."""
    r = offset_store.OffsetsReplay(0)
    for header, buf in log.read_batches(0):
        if header.is_control:
            rec = next(iter(wire_records.iter_records(buf, header)))
            kind, _ = wire_records.parse_control_record(rec)
            r.end_txn(header.producer_id, kind == wire_records.CONTROL_COMMIT)
            continue
        pid = header.producer_id if header.is_transactional else -1
        for rec in wire_records.iter_records(buf, header):
            if rec.key is not None:
                r.apply(rec.key, rec.value, header.base_offset, pid)
    return r.result()


def test_bulk_load_matches_a_record_by_record_replay():
    rng = random.Random(11)
    log = InMemoryOffsetsLog()
    for step in range(400):
        kind = rng.random()
        g = f"g{rng.randrange(5)}"
        if kind < 0.6:
            recs = [_commit(g, f"t{rng.randrange(3)}", rng.randrange(4), step * 10 + i)
                    for i in range(rng.randrange(1, 6))]
            _append(log, recs, compression=rng.choice([0, 0, 1, 4]))
        elif kind < 0.7:  # tombstones, and a keyless record the replay ignores
            _append(log, [(offset_commit_key(g, "t0", rng.randrange(4)), None, None, 1000),
                          (None, b"x", None, 1000)])
        elif kind < 0.8:
            value = None if rng.random() < 0.3 else group_metadata_value(
                GroupRecord("consumer", step, "range", None, 1000, []))
            _append(log, [(group_metadata_key(g), value, None, 1000)])
        elif kind < 0.9:  # a transactional commit, then maybe its marker
            pid = rng.randrange(3)
            _append(log, [_commit(g, "t1", rng.randrange(4), 50_000 + step)], producer_id=pid,
                    producer_epoch=0, transactional=True)
            if rng.random() < 0.7:
                marker = rng.choice([wire_records.CONTROL_COMMIT, wire_records.CONTROL_ABORT])
                _append(log, [wire_records.control_record(marker)], producer_id=pid,
                        producer_epoch=0, transactional=True, control=True)
        else:  # a key of version 0: the same logical key as version 1
            key = struct.pack(">h", 0) + offset_commit_key(g, "t2", 0)[2:]
            _append(log, [(key, offset_commit_value(OffsetAndMetadata(step, -1, "", 1000)),
                           None, 1000)])
    assert _summary(OffsetStore(log).load(0)) == _summary(_replay_one_by_one(log))


def test_only_the_last_write_of_each_key_is_decoded(monkeypatch):
    log = InMemoryOffsetsLog()
    for round_ in range(200):
        _append(log, [_commit("g", "t", p, round_) for p in range(50)])
    decoded = []
    real = offset_store.read_offset_value
    monkeypatch.setattr(offset_store, "read_offset_value",
                        lambda v: decoded.append(1) or real(v))
    loaded = OffsetStore(log).load(0)
    assert len(decoded) == 50  # of 10,000 commits
    assert {tp: cr.offset_and_metadata.offset for tp, cr in loaded.offsets["g"].items()} == {
        ("t", p): 199 for p in range(50)}


def test_a_malformed_batch_is_skipped_not_fatal():
    log = InMemoryOffsetsLog()
    _append(log, [_commit("g", "t", 0, 5)])
    bad = wire_records.build_batch([_commit("g", "t", 0, 6)], now_ms=1000)
    bad[61] = 0x7F  # the first record's length now runs past the batch
    log.append(0, bad)
    loaded = OffsetStore(log).load(0)
    assert loaded.offsets["g"][("t", 0)].offset_and_metadata.offset == 5


@pytest.mark.parametrize("data", [b"", b"\x02", b"\x0a\x00\x00\x00\x02"])
def test_latest_rejects_truncated_records(data):
    with pytest.raises(ValueError):
        recscan.latest(data, 1, {}, 0)
