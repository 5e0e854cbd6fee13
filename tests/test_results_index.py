"""results/index.json: every committed table's figures, checkable by a program against its run folders."""
import json
import os
import shutil

import pytest

from fairseq_sum_plugins.analysis import results_index

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


def test_committed_index_is_up_to_date_with_the_committed_runs():
    assert results_index.main([RESULTS, "--check"]) == 0
    index = json.load(open(os.path.join(RESULTS, "index.json")))
    papers = {r["paper"] for r in index["records"]}
    assert papers <= set(results_index.PAPERS) and {"tpt", "gate", "etads", "ta", "mem2mem"} <= papers
    for r in index["records"]:
        for label, figures in r["models"].items():
            for values in figures.values():
                assert len(values) == len(r["seeds"]), (r["table"], label)


def test_a_figure_changed_in_a_run_folder_makes_the_index_stale(tmp_path):
    root = tmp_path / "results"
    shutil.copytree(RESULTS, root, ignore=shutil.ignore_patterns("*.png"))
    path = root / "xsum-1000-mem2mem" / "hred" / "test.out.rouge.json"
    rouge = json.load(open(path))
    rouge["rouge1"] += 0.01
    json.dump(rouge, open(path, "w"))
    with pytest.raises(SystemExit, match="stale at record [0-9]+, table 'xsum-1000-mem2mem' \\(mem2mem\\)"):
        results_index.main([str(root), "--check"])
    assert results_index.main([str(root), "--write"]) == 0
    record = next(r for r in json.load(open(root / "index.json"))["records"] if r["table"] == "xsum-1000-mem2mem")
    assert record["models"]["hred"]["rouge1"] == [round(100 * rouge["rouge1"], 2)]


def test_figures_are_copied_as_measured_by_hand(tmp_path):
    root = tmp_path / "r"
    (root / "t" / "a").mkdir(parents=True)
    json.dump({"rouge1": 0.123456}, open(root / "t" / "a" / "test.out.rouge.json", "w"))
    json.dump({"gain": 0.6789, "distinct": 97}, open(root / "t" / "a" / "source_use.json", "w"))
    (root / "t" / "b").mkdir()
    json.dump({"rouge1": 0.2}, open(root / "t" / "b" / "test.out.rouge.json", "w"))  # measured before source gain
    json.dump({"records": [{"table": "t", "paper": "ta", "claim": "c", "data": "d", "updates": 5,
                            "models": {"a": {"1": "a"}, "b": {"1": "b"}}}]}, open(root / "tables.json", "w"))
    record = results_index.build(str(root))["records"][0]
    assert record["seeds"] == [1]
    assert record["models"] == {"a": {"rouge1": [12.35], "source_gain": [0.679], "distinct": [97]},
                                "b": {"rouge1": [20.0], "source_gain": [None], "distinct": [None]}}


@pytest.mark.parametrize("record, message", [
    ({"table": "t", "paper": "bart", "claim": "c", "data": "d", "updates": 5, "models": {}}, "paper 'bart' is not one of"),
    ({"table": "t", "paper": "ta", "data": "d", "updates": 5, "models": {}}, "missing claim"),
    ({"table": "t", "paper": "ta", "claim": "c", "data": "d", "updates": 5, "models": {"a": {"1": "nowhere"}}},
     "test.out.rouge.json"),
])
def test_bad_tables_are_refused_naming_the_table(tmp_path, record, message):
    json.dump({"records": [record]}, open(tmp_path / "tables.json", "w"))
    with pytest.raises(SystemExit, match=message):
        results_index.main([str(tmp_path), "--check"])
