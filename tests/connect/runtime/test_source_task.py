from josefk.connect.api.records import SourceRecord
from josefk.connect.runtime.source_task import SubmittedRecords, TransactionContext


def record(partition, offset):
    return SourceRecord({"p": partition}, {"o": offset}, "t")


def test_only_the_acknowledged_prefix_of_each_partition_is_committable():
    submitted = SubmittedRecords()
    a0, a1, a2 = (submitted.submit(record("a", i)) for i in range(3))
    b0 = submitted.submit(record("b", 0))
    assert submitted.submit(SourceRecord(None, None, "t")) is None  # no offset to keep
    submitted.ack(a1)
    submitted.ack(b0)
    assert submitted.committable() == [({"p": "b"}, {"o": 0})]   # a1 waits for a0
    submitted.ack(a0)
    assert submitted.committable() == [({"p": "a"}, {"o": 1})]
    assert submitted.outstanding == 1
    submitted.ack(a2)
    assert submitted.committable() == [({"p": "a"}, {"o": 2})]
    assert submitted.committable() == [] and submitted.outstanding == 0


def test_a_partition_dict_reused_and_changed_in_place_is_kept_under_its_new_key():
    submitted = SubmittedRecords()
    partition = {"p": "a"}
    submitted.submit(SourceRecord(partition, {"o": 0}, "t"))
    submitted.submit(SourceRecord(partition, {"o": 1}, "t"))
    partition["p"] = "b"
    submitted.submit(SourceRecord(partition, {"o": 2}, "t"))
    assert {k: len(v) for k, v in submitted.pending.items()} == {'{"p":"a"}': 2, '{"p":"b"}': 1}


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
    assert sticky.partition("unknown", 10) is None       # the producer chooses
