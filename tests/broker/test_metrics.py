"""broker/metrics.py: the histograms' buckets."""
import pytest

from josefk.broker.metrics import BUCKETS_MS, Histogram


def test_histogram_buckets_are_cumulative():
    h = Histogram()
    for ms in (0.1, 0.7, 3, 3, 20000):
        h.observe(ms)
    buckets = dict(h.buckets())
    assert buckets["0.5"] == 1 and buckets["1"] == 2 and buckets["5"] == 4
    assert buckets["10000"] == 4 and buckets["+Inf"] == 5
    assert len(buckets) == len(BUCKETS_MS) and h.sum == pytest.approx(20006.8)


def test_remote_storage_metrics_have_kafkas_names(tmp_path):
    from types import SimpleNamespace

    from josefk.tiered.manager import RemoteLogManager
    from josefk.tiered.metadata import PartitionSegments
    from josefk.tiered.store import LocalStore
    from josefk.broker.metrics import BrokerMetrics

    rlm = RemoteLogManager(LocalStore(tmp_path), None, node_id=1)
    for index, lag in ((0, 100), (1, 50)):
        leader = SimpleNamespace(copy_lag_bytes=lag, copy_lag_segments=index + 1,
                                 delete_lag_bytes=7, delete_lag_segments=1,
                                 remote=PartitionSegments())
        rlm.leaders[("t", index)] = leader
    rlm.topic_stats("t").copy_bytes = 4096
    rlm.topic_stats("t").fetch_requests = 3
    owner = SimpleNamespace(replicas=SimpleNamespace(remote=rlm))
    got = {f.name: {tuple(s.labels.values()): s.value for s in f.samples}
           for f in BrokerMetrics._remote_metrics(owner)}
    prefix = "kafka_server_brokertopicmetrics_"
    assert got[prefix + "remotecopylagbytes"] == {("t",): 150}
    assert got[prefix + "remotecopylagsegments"] == {("t",): 3}
    assert got[prefix + "remotedeletelagbytes"] == {("t",): 14}
    assert got[prefix + "remotedeletelagsegments"] == {("t",): 2}
    assert got[prefix + "remotelogmetadatacount"] == {("t",): 0}
    assert got[prefix + "remotelogsizebytes"] == {("t",): 0}
    assert got[prefix + "remotecopybytespersec"][("t",)] == 4096
    assert got[prefix + "remotefetchrequestspersec"][("t",)] == 3
    assert got["josefk_remote_storage_get_requests"] == {(): 0}
    assert list(BrokerMetrics._remote_metrics(SimpleNamespace(
        replicas=SimpleNamespace(remote=None)))) == []
