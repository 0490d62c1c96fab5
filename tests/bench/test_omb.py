import json

import pytest

from bench.omb import (WORKLOAD_DIR, Workload, as_run_on, brokers_for, consumer_assignments,
                       load_workload, parse_workload, summarize_run)
from bench.histogram import Histogram


def base(**more):
    return {"topics": 1, "partitionsPerTopic": 8, "messageSize": 1024, "producerRate": 4883,
            "testDurationSeconds": 30, **more}


def test_the_shipped_workloads_load():
    names = {p.stem: load_workload(p.stem) for p in WORKLOAD_DIR.glob("*.json")}
    assert {"1kb-5mbs-rf1", "1kb-5mbs-rf3", "100b-50k", "many-partitions"} <= set(names)
    rf3 = names["1kb-5mbs-rf3"]
    assert (rf3.replication_factor, rf3.acks, rf3.size, rf3.rate) == (3, "all", 1024, 4883)
    assert names["many-partitions"].partitions == 1000


def test_omb_field_names_and_defaults():
    data = base(consumerPerSubscription=3, acks="1", testDurationMinutes=2)
    del data["testDurationSeconds"]
    w = parse_workload(data, "x")
    assert (w.name, w.duration_s, w.consumers, w.acks, w.replication_factor, w.warmup_s,
            w.producers, w.subscriptions) == ("x", 120.0, 3, "1", 1, 5.0, 1, 1)


@pytest.mark.parametrize("data, message", [
    (base(partitionsPerTopic=0), "partitionsPerTopic must be a number >= 1"),
    (base(producerRate="fast"), "producerRate must be a number"),
    (base(messageSize=4), "messageSize must be a number >= 8"),
    (base(acks="2"), "acks must be 0, 1 or all"),
    (base(partitions=8), "unknown field(s) partitions"),
    (base(testDurationMinutes=1), "not both"),
    ({k: v for k, v in base().items() if k != "producerRate"}, "producerRate is required"),
    (base(producerConfig=["linger.ms"]), "producerConfig must be an object"),
    (base(testDurationSeconds=0), "duration must be above 0"),
])
def test_bad_workloads_are_refused_in_one_line(data, message):
    with pytest.raises(ValueError, match=r"^workload bad: .*" + message.replace("(", r"\(")
                       .replace(")", r"\)")):
        parse_workload(data, "bad")


def test_a_workload_file_by_path(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(base(replicationFactor=3)))
    assert load_workload(str(path)).replication_factor == 3
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        load_workload(str(tmp_path / "broken.json"))
    with pytest.raises(ValueError, match="no workload 'nope' \\(shipped: .*1kb-5mbs-rf1"):
        load_workload("nope")


def test_every_subscription_reads_every_partition_split_between_its_consumers():
    w = Workload(name="w", topics=2, partitions=3, size=100, rate=10, duration_s=1,
                 subscriptions=2, consumers=4)
    parts = consumer_assignments(w, ["a", "b"])
    assert len(parts) == 8
    for sub in (parts[:4], parts[4:]):
        assert sorted(tp for p in sub for tp in p) == [(t, p) for t in "ab" for p in range(3)]
    # more consumers than partitions: the idle ones are not started
    w.consumers, w.subscriptions = 10, 1
    assert len(consumer_assignments(w, ["a"])) == 3


def hist(*values):
    h = Histogram()
    for v in values:
        h.record(v)
    return h.to_json()


def producer(acked, unsent=0, errors=0):
    return {"counts": {"sent": acked, "acked": acked, "received": 0}, "unsent": unsent,
            "errors": errors, "first_error": "boom" if errors else None,
            "hist": {"publish": hist(1000, 2000), "publish_delay": hist(10)}}


def consumer(received):
    return {"counts": {"received": received}, "hist": {"e2e": hist(1500, 90_000)}}


def test_a_run_that_holds_its_rate():
    w = Workload(name="w", topics=1, partitions=1, size=100, rate=100, duration_s=10)
    r = summarize_run(w, [producer(1000)], [consumer(1000)], 10, {}, 2, 1.5)
    f = r["figures"]
    assert (f["achieved msg/s"], f["consumed msg/s"], f["broker CPU s"]) == (100, 100, 1.5)
    assert (f["publish max ms"], f["e2e max ms"]) == (2.0, 90.0)  # maxima are exact
    assert f["publish p50 ms"] == pytest.approx(1.0, rel=0.008)
    assert r["notes"] == []


def test_a_run_that_cannot_hold_its_rate_says_so():
    w = Workload(name="w", topics=1, partitions=1, size=100, rate=100, duration_s=10)
    r = summarize_run(w, [producer(600, unsent=400, errors=2)], [consumer(500)], 10, {}, 2,
                      None)
    assert "broker CPU s" not in r["figures"]
    assert any(n.startswith("could not hold the rate: 60 of 100 msg/s") and "400 scheduled"
               in n for n in r["notes"])
    assert "2 delivery errors (first: boom)" in r["notes"]
    assert "100 acknowledged messages of the window not consumed" in r["notes"]


def test_interval_p99s_are_merged_over_every_process():
    w = Workload(name="w", topics=1, partitions=1, size=100, rate=100, duration_s=10)
    intervals = {0: [{"hist": {"publish": hist(1000)}}, {"hist": {"e2e": hist(4000)}}],
                 1: [{"hist": {"publish": hist(1000)}}]}  # incomplete: left out
    r = summarize_run(w, [producer(1000)], [consumer(1000)], 10, intervals, 2, None)
    # one value each: the p99 is that value (the maximum)
    assert r["intervals"] == [{"index": 0, "publish p99 ms": 1.0, "e2e p99 ms": 4.0}]


def test_replicated_workloads_run_on_the_cluster_beside_themselves_at_rf1():
    w = load_workload("1kb-5mbs-rf3")
    assert brokers_for(w, ["josefk", "tansu", "null"]) == ["cluster", "cluster-rf1"]
    assert as_run_on(w, "cluster") is w
    rf1 = as_run_on(w, "cluster-rf1")
    assert (rf1.replication_factor, rf1.acks, rf1.name, rf1.rate) == (1, "1", w.name, w.rate)
    single = load_workload("1kb-5mbs-rf1")
    assert brokers_for(single, ["josefk", "null"]) == ["josefk", "null"]
