"""bench.omb's processes against a real broker: the protocol, the counts and the histograms
agree (no figure is asserted: the machine's load decides those)."""
from types import SimpleNamespace

from bench.omb import Workload, run_once


def test_one_short_run_counts_every_message_of_its_window_once(josefk_broker):
    w = Workload(name="t", topics=2, partitions=2, size=64, rate=400, duration_s=2.0,
                 warmup_s=0.5, consumers=2)
    opts = SimpleNamespace(duration_s=None, warmup_s=None, interval_s=1.0, drain_s=10.0)
    r = run_once(w, josefk_broker.bootstrap_servers, "test", opts)
    assert r["ok"]
    (producer,) = r["producers"]
    assert producer["scheduled"] == 1000  # 400 msg/s over 0.5 + 2 s, from the schedule alone
    assert producer["errors"] == 0 and producer["undelivered"] == 0
    f = r["figures"]
    acked = f["achieved msg/s"] * 2.0
    assert acked == producer["counts"]["acked"] == r["hist"]["publish"]["count"]
    # every acknowledged message of the window reached one of the two consumers, once
    assert f["consumed msg/s"] == f["achieved msg/s"]
    assert r["hist"]["e2e"]["count"] == acked
    for kind in ("publish", "e2e"):
        values = [f[f"{kind} {p} ms"] for p in ("p50", "p99", "p99.9", "max")]
        assert values == sorted(values) and values[0] > 0
    assert [i["index"] for i in r["intervals"]] == [0, 1]
    assert set(r["intervals"][0]) == {"index", "publish p99 ms", "publish_delay p99 ms",
                                      "e2e p99 ms"}
