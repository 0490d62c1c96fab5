"""OffsetCommit and OffsetFetch on the handler harness (the group coordinator over an in-memory
__consumer_offsets log): a committed offset is fetched back in both layouts (v8+ by group, v7 by
topic) and written to the log; a partition that does not exist, and a group that never
committed, are answered as Kafka does."""
import pytest

from josefk.wire import errors
from josefk.wire.apis import OFFSET_COMMIT, OFFSET_FETCH
from testkit.handlers import call

C, F = OFFSET_COMMIT.Request, OFFSET_FETCH.Request


def commit(services, group, topic, offsets: dict, version=9):
    req = C(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        C.OffsetCommitRequestTopic(name=topic, partitions=[
            C.OffsetCommitRequestPartition(partition_index=p, committed_offset=o,
                                           committed_leader_epoch=3, committed_metadata="m")
            for p, o in offsets.items()])])
    resp = call(services, OFFSET_COMMIT, req, version=version)
    return {p.partition_index: p.error_code for p in resp.topics[0].partitions}


def fetch_v9(services, group, topic, partitions):
    req = F(groups=[F.OffsetFetchRequestGroup(group_id=group, topics=[
        F.OffsetFetchRequestTopics(name=topic, partition_indexes=partitions)])])
    g = call(services, OFFSET_FETCH, req, version=9).groups[0]
    return g.error_code, {p.partition_index: (p.committed_offset, p.committed_leader_epoch,
                                              p.metadata, p.error_code)
                          for t in g.topics for p in t.partitions}


def test_a_commit_is_fetched_back_and_written_to_the_offsets_log(services):
    services.create_topic("t", 2)
    assert commit(services, "g", "t", {0: 42, 1: 7}) == {0: 0, 1: 0}
    assert fetch_v9(services, "g", "t", [0, 1]) == (0, {0: (42, 3, "m", 0), 1: (7, 3, "m", 0)})
    assert sum(len(b) for b in services.offsets_log.batches.values()) == 1


@pytest.mark.parametrize("version", [2, 7])
def test_the_topic_layout_of_versions_before_8(services, version):
    services.create_topic("t")
    commit(services, "g", "t", {0: 5})
    resp = call(services, OFFSET_FETCH, F(group_id="g", topics=[
        F.OffsetFetchRequestTopic(name="t", partition_indexes=[0])]), version=version)
    p = resp.topics[0].partitions[0]
    assert (resp.error_code, p.committed_offset, p.metadata, p.error_code) == (0, 5, "m", 0)


def test_an_unknown_partition_is_refused_and_a_new_group_has_no_offsets(services):
    services.create_topic("t")
    assert commit(services, "g", "t", {0: 1, 5: 1}) == {0: 0, 5: errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert commit(services, "g", "no-such-topic", {0: 1}) == {
        0: errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert fetch_v9(services, "g", "t", [5]) == (0, {5: (-1, -1, "", 0)})
    assert fetch_v9(services, "never-committed", "t", [0]) == (0, {0: (-1, -1, "", 0)})
