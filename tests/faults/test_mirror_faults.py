"""The fault harness's mirror mode (faults/mirror.py): one run of each link nemesis against
real clusters (a source of three brokers under the workload, a destination of three mirroring
it over two links), and the final check finding a destination that is not the source's copy."""
from __future__ import annotations

from types import SimpleNamespace

from confluent_kafka import Producer

from josefk.faults import mirror as faults_mirror
from josefk.faults.harness import Options, run
from josefk.faults.history import Write
from josefk.faults.mirror import Mirror
from josefk.faults.nemesis import MIRROR_KINDS
from josefk.mirror.links import main as mirror
from josefk.testing import broker


def test_each_link_nemesis_once_leaves_the_mirrors_equal_to_their_sources(tmp_path):
    lines = []
    result = run(Options(rounds=1, kinds=MIRROR_KINDS, mirror=True, seed=7,
                         dir=tmp_path / "run"), out=lines.append)
    report = "\n".join(lines)
    assert result.ok, report
    injected = sorted(f.kind for f in result.history.faults)
    assert injected == sorted(k for k in MIRROR_KINDS if k not in result.skipped), report
    assert "mirror: 9 partitions compared with the source, 0 anomalies" in report
    for f in result.history.faults:
        if f.kind == "link-cut":  # the mirrors' lag grew while the source did not answer
            lag = int(f.notes[0].split()[3])
            assert lag >= 5000, f.notes
        if f.kind == "source-truncate":
            assert any(n.startswith("reported stopped") for n in f.notes), f.notes
            assert any(n.startswith("resumed, ") for n in f.notes), f.notes
            assert result.history.truncated


def mirror_of(source, destination):
    """A `Mirror` over two running brokers (its clusters stand-ins with their addresses)."""
    m = Mirror.__new__(Mirror)
    m.source = SimpleNamespace(bootstrap=source.bootstrap_servers)
    m.dest = SimpleNamespace(bootstrap=destination.bootstrap_servers)
    m.topics = [("a", "faults-rf2")]
    return m


def test_the_final_check_finds_a_destination_that_is_not_the_sources_copy(capsys,
                                                                          monkeypatch):
    with broker() as source, broker() as copy, broker() as other:
        source.create_topic("faults-rf2", partitions=3)
        other.create_topic("faults-rf2", partitions=3)
        producer = Producer({"bootstrap.servers": source.bootstrap_servers})
        writes = []
        for i in range(60):
            w = Write("w1", i, "faults-rf2", i % 3, 0.0)
            producer.produce("faults-rf2", value=w.value, partition=w.partition,
                             on_delivery=lambda e, m, w=w: setattr(w, "offset", m.offset())
                             or setattr(w, "acked", 1.0))
            writes.append(w)
        assert producer.flush(15) == 0
        assert mirror(["create-link", "--bootstrap-server", copy.bootstrap_servers, "--link",
                       "a", "--config", f"bootstrap.servers={source.bootstrap_servers}"]) == 0
        assert mirror(["create-topic", "--bootstrap-server", copy.bootstrap_servers, "--link",
                       "a", "--topic", "faults-rf2"]) == 0
        capsys.readouterr()
        anomalies, notes = mirror_of(source, copy).final_check(writes)
        assert anomalies == [] and len(notes) == 3

        # the same values written anew elsewhere: other batches (producer ids, timestamps)
        again = Producer({"bootstrap.servers": other.bootstrap_servers})
        for w in writes[:45]:
            again.produce("faults-rf2", value=w.value, partition=w.partition)
        assert again.flush(15) == 0
        monkeypatch.setattr(faults_mirror, "CATCH_UP_TIMEOUT", 3.0)
        anomalies, _notes = mirror_of(source, other).final_check(writes)
        kinds = {k for _at, k, _d in anomalies}
        assert kinds == {"mirror-lost", "mirror-diverged"}
        lost = [d for _at, k, d in anomalies if k == "mirror-lost"]
        assert sum("acknowledged at faults-rf2" in d for d in lost) == 15
        assert sum(d.startswith("faults-rf2-") for d in lost) == 3
