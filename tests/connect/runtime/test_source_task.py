from josefk.connect.api.records import SourceRecord
from josefk.connect.runtime.source_task import (SubmittedBatch, SubmittedRecords,
                                                 TransactionContext)


def record(partition, offset):
    return SourceRecord({"p": partition}, {"o": offset}, "t")


def sent(submitted, records, count=None):
    """A batch of ``records`` of which ``count`` (all) went to the producer."""
    batch = SubmittedBatch(lambda err, msg: False)
    batch.sent = len(records) if count is None else count
    submitted.submit(batch, records)
    return batch


class Error:
    def code(self):
        return 2


def test_only_the_prefix_of_done_batches_of_each_partition_is_committable():
    submitted = SubmittedRecords()
    first = sent(submitted, [record("a", 0), record("a", 1), SourceRecord(None, None, "t")])
    second = sent(submitted, [record("a", 2), record("b", 0)])
    third = sent(submitted, [record("b", 1), record("b", 2)], count=1)  # one dropped
    second.delivered(None, None)
    second.delivered(None, None)
    # a's second batch waits for its first; b's first is done
    assert submitted.committable() == [({"p": "b"}, {"o": 0})]
    third.delivered(None, None)
    assert submitted.committable() == [({"p": "b"}, {"o": 2})]  # the dropped one's with it
    first.delivered(None, None)
    first.delivered(None, None)
    assert not first.done and submitted.committable() == []   # the offsetless one counts too
    first.delivered(None, None)
    assert submitted.committable() == [({"p": "a"}, {"o": 2})]
    assert submitted.committable() == []


def test_a_failed_record_counts_as_acknowledged_only_when_the_error_handling_lets_it_go():
    submitted = SubmittedRecords()
    for partition, tolerated in (("a", True), ("b", False)):
        batch = SubmittedBatch(lambda err, msg: tolerated)
        batch.sent = 2
        submitted.submit(batch, [record(partition, 0), record(partition, 1)])
        batch.delivered(None, None)
        batch.delivered(Error(), None)
        assert batch.done is tolerated
    assert submitted.committable() == [({"p": "a"}, {"o": 1})]


def test_a_partition_dict_reused_and_changed_in_place_is_kept_under_its_new_key():
    submitted = SubmittedRecords()
    partition = {"p": "a"}
    batches = [sent(submitted, [SourceRecord(partition, {"o": 0}, "t")]),
               sent(submitted, [SourceRecord(partition, {"o": 1}, "t")])]
    partition["p"] = "b"
    batches.append(sent(submitted, [SourceRecord(partition, {"o": 2}, "t")]))
    assert {k: len(v) for k, v in submitted.pending.items()} == {'{"p":"a"}': 2, '{"p":"b"}': 1}
    for batch in batches:
        batch.delivered(None, None)
    assert submitted.committable() == [({"p": "a"}, {"o": 1}), ({"p": "b"}, {"o": 2})]


def test_the_connector_asks_for_commits_and_aborts_after_given_records():
    context = TransactionContext()
    first, second = record("a", 0), record("a", 1)
    context.commit_transaction(first)
    context.abort_transaction(second)
    context.commit_transaction()
    assert context.after(second) == "abort"
    assert context.after(first) == "commit"
    assert context.after(first) is None
    assert context.commit_requested and not context.abort_requested


class Metadata:
    """What StickyPartitioner reads of a producer's list_topics (a seam double)."""

    def __init__(self, counts):
        self.counts, self.asked = counts, 0

    def list_topics(self, topic, timeout):
        self.asked += 1
        found = {t: type("T", (), {"partitions": dict.fromkeys(range(n)), "error": None})()
                 for t, n in self.counts.items()}
        return type("M", (), {"topics": found})()


def test_keyless_records_stick_to_a_partition_for_a_batch_then_move():
    from josefk.connect.runtime.source_task import StickyPartitioner
    metadata = Metadata({"t": 3})
    sticky = StickyPartitioner(metadata)
    first = sticky.partition("t", 10000)
    assert sticky.partition("t", 6000) == first          # 16000 bytes: still the batch
    assert sticky.partition("t", 500) == first           # 16384 passed with this one
    moved = sticky.partition("t", 100)
    assert moved != first and moved in range(3)
    assert metadata.asked == 1                           # the count is cached
    assert sticky.partition("unknown", 10) == -1          # the producer chooses
    assert sticky.choose("t", 2, None, b"v") == 2         # the record's own
    assert sticky.choose("t", None, b"k", b"v") == -1     # keyed: librdkafka's murmur2
    assert sticky.choose("t", None, None, b"v") in range(3)
