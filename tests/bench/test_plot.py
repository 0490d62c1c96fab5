import json

import pytest

from bench.histogram import Histogram
from bench.plot import curves, main


def result(workload, broker, values, ok=True):
    hists = {}
    for kind, scale in (("e2e", 2), ("publish", 1)):
        h = Histogram()
        for v in values:
            h.record(v * scale)
        hists[kind] = h.to_json()
    return {"workload": workload, "broker": broker, "ok": ok, "hist": hists}


def test_rounds_are_merged_per_workload_broker_and_kind_and_failed_runs_left_out():
    data = curves([result("w", "josefk", [1, 2]), result("w", "josefk", [3]),
                   result("w", "null", [5]), result("w", "tansu", [9], ok=False)])
    assert sorted(data["w"]) == ["josefk", "null"]
    assert data["w"]["josefk"]["e2e"].count == 3 and data["w"]["josefk"]["e2e"].max == 6
    assert data["w"]["null"]["publish"].max == 5


def test_a_result_file_becomes_an_svg_with_a_panel_per_workload(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"environment": {"cpu_count": 2}, "results": [
        result("100b-50k", "josefk", range(100, 5000, 7)),
        result("1kb-5mbs-rf3", "cluster", range(1000, 90000, 11))]}))
    assert main([str(path), "-o", str(tmp_path / "p.svg")]) == 0
    svg = (tmp_path / "p.svg").read_text()
    assert "100b-50k" in svg and "1kb-5mbs-rf3" in svg and "josefk end to end" in svg


def test_a_file_without_histograms_is_refused_in_one_line(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"results": [{"workload": "w", "broker": "b", "ok": False}]}))
    with pytest.raises(SystemExit, match="no histograms"):
        main([str(path), "-o", str(tmp_path / "p.svg")])
