"""The leader-epoch cache (Kafka's leader-epoch-checkpoint) and its answers."""
from josefk.storage.epochs import FILE, LeaderEpochCache


def test_assign_and_end_offsets(tmp_path):
    c = LeaderEpochCache(tmp_path)
    assert c.end_offset_for(0, 10) == (-1, -1)
    c.assign(0, 0)
    c.assign(0, 5)  # same epoch: no new entry
    c.assign(2, 7)
    c.assign(3, 12)
    assert c.entries == [(0, 0), (2, 7), (3, 12)]
    assert c.end_offset_for(0, 20) == (0, 7)
    assert c.end_offset_for(1, 20) == (0, 7)  # unknown epoch: the largest one below
    assert c.end_offset_for(2, 20) == (2, 12)
    assert c.end_offset_for(3, 20) == (3, 20)  # latest: the log end
    assert c.end_offset_for(9, 20) == (3, 20)


def test_checkpoint_file_in_kafka_format_survives_reload(tmp_path):
    c = LeaderEpochCache(tmp_path)
    c.assign(1, 0)
    c.assign(4, 100)
    assert not (tmp_path / FILE).exists() and c.unsaved  # the log's flush writes it
    c.save_if_behind()
    assert (tmp_path / FILE).read_text() == "0\n2\n1 0\n4 100\n"
    assert LeaderEpochCache(tmp_path).entries == [(1, 0), (4, 100)]


def test_truncation_forgets_later_epochs(tmp_path):
    c = LeaderEpochCache(tmp_path)
    for epoch, off in ((0, 0), (1, 10), (2, 20)):
        c.assign(epoch, off)
    c.truncate_from_end(15)
    assert c.entries == [(0, 0), (1, 10)]
    c.truncate_from_end(-1)
    assert c.entries == []


def test_new_epoch_overrides_entries_it_starts_before(tmp_path):
    c = LeaderEpochCache(tmp_path)
    c.assign(1, 10)
    c.assign(2, 5)
    assert c.entries == [(2, 5)]


def test_log_follows_epochs_through_appends_and_truncation(tmp_path):
    from josefk.storage.log import Log
    from josefk.storage.log_validator import validate_records
    from josefk.wire.records import build_batch

    lg = Log(tmp_path / "t-0")

    def append(epoch, n):
        buf = build_batch([(None, b"v", None, None)] * n)
        lg.append(validate_records(buf, lg.config), leader_epoch=epoch)

    append(0, 3)
    append(2, 2)
    assert lg.end_offset_for_epoch(0) == (0, 3)
    assert lg.end_offset_for_epoch(2) == (2, 5)
    lg.truncate_to(3)
    assert lg.end_offset_for_epoch(2) == (0, 3)
    lg.close()
    assert Log(tmp_path / "t-0").epochs.entries == [(0, 0)]
