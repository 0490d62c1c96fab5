"""broker/metrics.py: the histograms' buckets, the remote-storage metrics."""
import threading
import time

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

    rlm = RemoteLogManager(LocalStore(tmp_path), None, node_id=1, reader_threads=2)
    for topic, index, lag in (("t", 0, 100), ("t", 1, 50), ("u", 0, 1)):
        leader = SimpleNamespace(copy_lag_bytes=lag, copy_lag_segments=index + 1,
                                 delete_lag_bytes=7, delete_lag_segments=1,
                                 remote=PartitionSegments())
        rlm.leaders[(topic, index)] = leader
    rlm.topic_stats("t").copy_bytes = 4096
    rlm.topic_stats("u").copy_bytes = 4
    rlm.topic_stats("t").fetch_requests = 3
    owner = SimpleNamespace(replicas=SimpleNamespace(remote=rlm), _remote_busy=None)
    BrokerMetrics._sample_remote_idle(owner, 1.0)
    rlm.task_busy_s += 0.25  # the task thread busy a quarter of the next second

    # five reads at once on two reader threads: three wait, and the readers are busy
    release = threading.Event()
    futures = [rlm.submit_read(release.wait, 10) for _ in range(5)]
    deadline = time.monotonic() + 10
    while rlm.reads_waiting != 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        BrokerMetrics._sample_remote_idle(owner, 1.0)
        got = {f.name: {tuple(s.labels.values()): s.value for s in f.samples}
               for f in BrokerMetrics._remote_metrics(owner)}
    finally:
        release.set()
    assert all(f.result(10) for f in futures) and rlm.reads_waiting == 0
    assert rlm.read_busy_s > 0
    prefix = "kafka_server_brokertopicmetrics_"
    # per topic, and the broker's totals without a topic label
    assert got[prefix + "remotecopylagbytes"] == {("t",): 150, ("u",): 1, (): 151}
    assert got[prefix + "remotecopylagsegments"] == {("t",): 3, ("u",): 1, (): 4}
    assert got[prefix + "remotedeletelagbytes"] == {("t",): 14, ("u",): 7, (): 21}
    assert got[prefix + "remotedeletelagsegments"] == {("t",): 2, ("u",): 1, (): 3}
    assert got[prefix + "remotelogmetadatacount"] == {("t",): 0, ("u",): 0, (): 0}
    assert got[prefix + "remotelogsizebytes"] == {("t",): 0, ("u",): 0, (): 0}
    assert got[prefix + "remotecopybytespersec"] == {("t",): 4096, ("u",): 4, (): 4100}
    assert got[prefix + "remotefetchrequestspersec"] == {("t",): 3, ("u",): 0, (): 3}
    assert got["josefk_remote_storage_get_requests"] == {(): 0}
    assert got["kafka_log_remote_remotelogmanager_remotelogmanagertasksavgidlepercent"] == \
        {(): 0.75}
    assert got["kafka_log_remote_remotestoragethreadpool_remotelogreadertaskqueuesize"] == \
        {(): 3}
    # no read done yet when sampled; then the reads' time over the two threads' second
    assert got["kafka_log_remote_remotestoragethreadpool_remotelogreaderavgidlepercent"] == \
        {(): 1.0}
    BrokerMetrics._sample_remote_idle(owner, 1.0)
    assert owner.remote_reader_idle == pytest.approx(max(0.0, 1.0 - rlm.read_busy_s / 2))
    assert owner.remote_reader_idle < 1.0
    rlm.readers.shutdown()
    assert list(BrokerMetrics._remote_metrics(SimpleNamespace(
        replicas=SimpleNamespace(remote=None)))) == []
