"""The fault harness's checker (faults/checker.py): pure functions over recorded histories."""
from __future__ import annotations

from josefk.faults.checker import (CLASSES, check, format_table, kind_at, longest_silence,
                                   lost_moved_duplicated, offset_anomalies, reordered,
                                   resume_anomalies, summarize, txn_anomalies, write_gaps)
from josefk.faults.history import Commit, Fault, History, OffsetRead, Read, Resume, Txn, Write


def w(seq, offset, partition=0, acked=True, producer="w1", sent=None):
    t = float(seq) if sent is None else sent
    return Write(producer, seq, "t", partition, t, t + 0.1 if acked else None,
                 offset if acked else None)


def kinds(anomalies):
    return sorted(a.kind for a in anomalies)


def test_a_clean_history_has_no_anomaly():
    writes = [w(i, i) for i in range(5)]
    final = {("t", 0): [(i, f"w1-{i}") for i in range(5)]}
    assert lost_moved_duplicated(writes, final) == []
    assert reordered(writes, final) == []


def test_lost_moved_and_duplicated():
    writes = [w(0, 0), w(1, 1), w(2, 2), w(3, 3, acked=False)]
    final = {("t", 0): [(0, "w1-0"), (1, "w1-2"), (2, "w1-3"), (3, "w1-3")]}
    found = lost_moved_duplicated(writes, final)
    assert kinds(found) == ["duplicated", "lost", "moved"]
    lost = next(a for a in found if a.kind == "lost")
    assert "w1-1" in lost.detail and lost.at == 1.1
    assert "t-0@1" in next(a for a in found if a.kind == "moved").detail
    # acknowledged without an offset (a DUPLICATE_SEQUENCE_NUMBER answer): only its presence
    unknown = Write("w1", 7, "t", 0, 7.0, 7.1, None)
    assert lost_moved_duplicated([unknown], {("t", 0): [(9, "w1-7")]}) == []
    # an unacknowledged record may be there or not, but never twice
    assert "w1-3" in next(a for a in found if a.kind == "duplicated").detail


def test_partitions_the_final_read_could_not_finish_are_not_judged_lost():
    assert lost_moved_duplicated([w(0, 0, partition=1)], {}, unread=[("t", 1)]) == []


def test_reordered_per_producer_and_partition():
    writes = [w(0, 0), w(1, 1), w(2, 2), w(0, 3, producer="w2", sent=2.5)]
    final = {("t", 0): [(0, "w1-0"), (1, "w1-2"), (2, "w1-1"), (3, "w2-0")]}
    found = reordered(writes, final)
    assert kinds(found) == ["reordered"]
    assert "w1-1" in found[0].detail and "w1-2" in found[0].detail
    # different partitions are different streams
    writes = [w(0, 5, partition=0), w(1, 0, partition=1)]
    final = {("t", 0): [(5, "w1-0")], ("t", 1): [(0, "w1-1")]}
    assert reordered(writes, final) == []


def test_transactions_aborted_reads_and_lost_commits():
    committed = Txn("x1", 0, [("tx", 0, "x1-0-0"), ("tx", 1, "x1-0-1")], 1.0, 2.0, "committed")
    aborted = Txn("x1", 1, [("tx", 0, "x1-1-0")], 3.0, 4.0, "aborted")
    unknown = Txn("x1", 2, [("tx", 0, "x1-2-0")], 5.0, 6.0, "unknown")
    txns = [committed, aborted, unknown]
    final = {("tx", 0): [(0, "x1-0-0"), (2, "x1-2-0")], ("tx", 1): [(0, "x1-0-1")]}
    assert txn_anomalies(txns, [], final) == []
    reads = [Read("tx", 0, 1, "x1-1-0", 7.0)]
    final[("tx", 0)].append((3, "x1-1-0"))
    final[("tx", 1)] = []
    found = txn_anomalies(txns, reads, final)
    assert kinds(found) == ["aborted-read", "aborted-read", "txn-lost"]
    assert any(a.at == 7.0 for a in found)
    assert txn_anomalies(txns, [], {("tx", 0): [(0, "x1-0-0")]}, unread=[("tx", 1)]) == []
    lost = txn_anomalies(txns, [], {("tx", 0): [(0, "x1-0-0")]}, log={("tx", 1): [(4, "x1-0-1")]})
    assert [a.kind for a in lost] == ["txn-lost"]
    assert "in the log at tx-1@4 but not read_committed" in lost[0].detail
    absent = txn_anomalies(txns, [], {("tx", 0): [(0, "x1-0-0")]})
    assert "not in the log at all" in absent[0].detail


def commit(offset, start, end, ok=True, partition=0):
    return Commit("m1", "g", partition, offset, start, end, ok)


def fetch(offset, start, end=None, partition=0):
    return OffsetRead("observer", "g", partition, offset, start, end or start + 0.1)


def test_committed_offsets_going_backwards():
    commits = [commit(10, 0, 1), commit(5, 2, 3), commit(3, 2.5, 2.8, ok=False)]
    found = offset_anomalies(commits, [])
    assert kinds(found) == ["offsets-back"]
    # overlapping commits are not ordered: no anomaly
    assert offset_anomalies([commit(10, 0, 2), commit(5, 1, 3)], []) == []
    # an answer below an earlier answer (neither below an acknowledged commit)
    found = offset_anomalies([commit(10, 0, 1)], [fetch(20, 2), fetch(15, 3)])
    assert kinds(found) == ["offsets-back"]


def test_stale_offset_fetch():
    commits = [commit(10, 0, 1), commit(20, 2, 3), commit(30, 4, 10, ok=False)]
    reads = [fetch(10, 1.5), fetch(10, 3.5), fetch(None, 3.6), fetch(25, 5), fetch(20, 6)]
    found = offset_anomalies(commits, reads)
    assert [a.kind for a in found] == ["stale-offset", "stale-offset", "offsets-back"]
    assert "answered g-0 = 10 after a commit of 20" in found[0].detail
    assert "answered g-0 = none" in found[1].detail
    assert "= 20 after an answer of 25" in found[2].detail
    # no commit acknowledged yet: any answer is fine; other partitions are apart
    assert offset_anomalies([commit(10, 0, 1, partition=1)], [fetch(None, 0.5), fetch(0, 2)]) == []


def resume(first, assigned=5.0, first_at=6.0, jumps=()):
    return Resume("m2", "g", 0, assigned, first, first_at, first, list(jumps))


def test_resumes_skip_or_replay():
    commits = [commit(10, 0, 1), commit(12, 2, 3, ok=False)]
    assert resume_anomalies(commits, [resume(10), resume(12), resume(11)]) == []
    assert kinds(resume_anomalies(commits, [resume(9)])) == ["replay"]
    assert kinds(resume_anomalies(commits, [resume(13)])) == ["skip"]
    # with nothing committed, a member starts at the log start
    assert kinds(resume_anomalies([], [resume(0), resume(4)])) == ["skip"]
    # a commit acknowledged after the assignment does not make a replay
    assert resume_anomalies([commit(10, 5.5, 5.8)], [resume(0)]) == []
    # jumps inside an assignment
    found = resume_anomalies([], [resume(0, jumps=[(5, 7, 7.0), (9, 3, 8.0)])])
    assert kinds(found) == ["replay", "skip"]
    # no record consumed: nothing to judge
    assert resume_anomalies(commits, [resume(None, first_at=None)]) == []


def test_write_gaps_from_injection_to_the_first_ack_of_a_record_sent_after_it():
    writes = [Write("w1", i, "t", 0, s, a, i) for i, (s, a) in
              enumerate([(0.0, 0.1), (1.0, 1.05), (1.1, 9.0), (1.2, 4.0), (9.5, 9.6)])]
    writes += [Write("w1", 9 + i, "t", 1, i / 2, i / 2 + 0.01, i) for i in range(60)]
    faults = [Fault("kill-leader", "broker 1", 1.0, recovered=1.06),
              Fault("pause", "broker 2", 20.0)]
    gaps = write_gaps(writes, faults, [("t", 0), ("t", 1)], end=30.0)
    # to the cluster whole again: from 1.0 (ack 1.05) and just after 1.0 (records sent from
    # 1.1 on: first ack 4.0), so 3.0 s
    assert gaps[0][1] == ("t", 0) and abs(gaps[0][0] - 3.0) < 1e-9
    assert gaps[1][0] == 10.0  # nothing acknowledged after it: until the end of the run
    assert write_gaps(writes, faults, [], end=30.0) == [None, None]
    faults = [Fault("sigterm", "broker 1", 1.09, recovered=1.1)]
    assert abs(write_gaps(writes, faults, [("t", 0)], end=30.0)[0][0] - (4.0 - 1.09)) < 1e-9
    # a stall that begins during the fault counts: from just after 1.2 to the ack at 9.6
    faults = [Fault("kill-zookeeper", "zookeeper", 0.5, recovered=5.0)]
    assert abs(write_gaps(writes, faults, [("t", 0)], end=30.0)[0][0] - 8.4) < 1e-9


def test_longest_silence_between_two_times():
    assert longest_silence([1.0, 2.0, 6.0], 0.5, 7.0) == 4.0
    # times outside the window do not count; none inside: the whole window
    assert longest_silence([0.1, 9.0], 1.0, 3.0) == 2.0
    assert longest_silence([5.0, 1.5], 1.0, 6.0) == 3.5  # in any order


def test_summary_rows_per_fault_kind():
    h = History()
    h.writes = [Write("w1", i, "t", 0, float(i), i + 0.1, i) for i in range(10)]
    h.final = {("t", 0): [(i, f"w1-{i}") for i in range(10) if i != 6]}
    h.faults = [Fault("kill-leader", "broker 1", 2.5, failover=0.75),
                Fault("pause", "broker 2", 5.5)]
    h.gap_partitions = [("t", 0)]
    h.crashes = [(8.0, "broker 3 exited with code 1")]
    h.commits = [Commit("m1", "t", 0, 1, 1.0, 1.1, True),
                 Commit("m1", "t", 0, 6, 6.0, 6.1, False, "NOT_COORDINATOR"),
                 Commit("m1", "t", 0, 6, 6.2, 6.3, True)]
    anomalies = check(h)
    assert kinds(anomalies) == ["crashed", "lost"]
    assert kind_at(6.1, h.faults) == "pause" and kind_at(1.0, h.faults) == "none"
    gaps = write_gaps(h.writes, h.faults, h.gap_partitions, 10.0)
    rows = {r.kind: r for r in summarize(h, anomalies, gaps, ["kill-leader", "pause", "disk"])}
    assert rows["none"].acked == 3 and rows["kill-leader"].acked == 3
    assert rows["pause"].acked == 4 and rows["pause"].faults == 1
    assert rows["pause"].anomalies["lost"] == 1 and rows["pause"].anomalies["crashed"] == 1
    assert rows["disk"].faults == 0 and rows["disk"].gap_worst is None
    assert abs(rows["kill-leader"].gap_median - 1.1) < 1e-9  # one record a second
    assert rows["kill-leader"].failover_worst == 0.75 and rows["pause"].failover_worst is None
    assert (rows["pause"].commits_failed, rows["none"].commits_failed) == (1, 0)
    table = format_table(list(rows.values()))
    assert table.splitlines()[0].split()[:5] == ["fault", "faults", "acked", "commits", "failed"]
    assert all(c in table for c in CLASSES)
    assert table.splitlines()[-1].split()[:4] == ["total", "2", "10", "1"]


def test_the_schedule_ends_before_the_workload_does(tmp_path, monkeypatch):
    """``--rounds`` gives each kind that many turns, one shuffled order per round; no fault is
    injected past the time the workload was given (it stops writing then, and every later
    fault's write gap would run to the next fault)."""
    from josefk.faults import harness

    run = harness.Run(harness.Options(rounds=2, seed=7, dir=tmp_path), out=lambda *_: None)
    kinds = ["kill-leader", "pause", "sigterm"]
    scheduled = list(run._schedule(kinds, harness.now(), 60.0))
    assert sorted(scheduled[:3]) == sorted(scheduled[3:]) == sorted(kinds)
    assert run.problems == []
    clock = iter([0.0, 10.0, 61.0])
    monkeypatch.setattr(harness, "now", lambda: next(clock))
    assert len(list(run._schedule(kinds, 0.0, 60.0))) == 2
    assert run.problems == ["the faults took longer than the 60 s the workload was given; "
                            "stopped injecting"]


def test_records_a_source_truncate_deleted_are_not_lost_and_mirror_anomalies_are_reported():
    h = History(writes=[w(0, 0), w(1, 1), w(2, 2), Write("w1", 3, "t", 0, 3.0, 3.1, None)],
                final={("t", 0): [(2, "w1-2")]}, truncated={("t", 0): 2},
                mirror=[(5.0, "mirror-diverged", "t-0: batches differ")])
    # below the truncation (or at an unknown offset of that partition): not judged
    assert [(a.kind, a.at, a.detail) for a in check(h)] == [
        ("mirror-diverged", 5.0, "t-0: batches differ")]
    h.truncated = {}
    assert kinds(check(h)) == ["lost", "lost", "lost", "mirror-diverged"]
