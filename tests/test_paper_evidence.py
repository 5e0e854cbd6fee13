"""ledger/paper_evidence.py: the seed tables of recipes/xsum/paper_evidence.sh, checked by hand."""
import json
import math
import os

import pytest

from ledger import paper_evidence as E
from tolerances import approx64


def _write(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def _run(root, seed, label, r1, gain=None, distinct=None):
    folder = os.path.join(root, f"seed{seed}", label)
    _write(os.path.join(folder, "test.out.rouge.json"), {"rouge1": r1 / 100, "rouge2": r1 / 1000, "rougeL": r1 / 200})
    if gain is not None:
        _write(os.path.join(folder, "source_use.json"), {"gain": gain, "distinct": distinct})
    return folder


@pytest.fixture
def grid(tmp_path):
    root = str(tmp_path / "out")
    for seed, (b, t) in {1: (20.0, 21.0), 2: (18.0, 21.0), 3: (19.0, 22.0)}.items():
        _run(root, seed, "base", b, 1.0 + seed / 10, 100)
        tpt = _run(root, seed, "tpt", t, 0.9, 99)
        _write(os.path.join(tpt, "roles.json"), {"threshold": 0.98, "overall": 0.5 + seed / 10,
                                                 "sublayers": {"enc.0": {"peaked": 0.5, "usage": [0.5, 0.5, 0.0]}}})
        for label, f1 in (("base", 0.3), ("tpt", 0.4 + seed / 100)):
            _write(os.path.join(root, f"seed{seed}", label, "probe_pos.json"),
                   {"cells": {"1/role": {"f1": f1}, "1/filler": {"f1": f1}, "1/final": {"f1": f1}}, "majority": 0.15})
        gate = _run(root, seed, "gate", 17.0, 0.5, 80)
        _write(os.path.join(gate, "sweep", "gate_sweep.json"), [
            {"threshold": 0.0, "sparsity": 0.0, "rouge1": 17.0, "source_gain": 0.5, "distinct": 80, "words_per_s": 100.0},
            {"threshold": 0.5, "sparsity": 50.0, "rouge1": 16.0, "source_gain": 0.4, "distinct": 70,
             "words_per_s": 100.0 + 10 * seed}])
        _write(os.path.join(gate, "timing", "gate_sweep.json"), [
            {"threshold": 0.0, "sparsity": 0.0, "rouge1": 17.0, "source_gain": 0.5, "distinct": 80, "speedup": 1.0,
             "timing_rounds": 5},
            {"threshold": 0.1, "sparsity": 40.0 + seed, "rouge1": 16.0, "source_gain": 0.4, "distinct": 70,
             "speedup": 1.3 + seed / 10, "timing_rounds": 5}])
        m2m = _run(root, seed, "mem2mem", 15.0, 0.8, 100)
        _run(root, seed, "hred", 16.0, 0.7, 100)
        _write(os.path.join(m2m, "novel.json"), {f"novel_{n}gram_hyp": n / 10 for n in range(1, 5)}
               | {f"novel_{n}gram_ref": n / 5 for n in range(1, 5)})
        _write(os.path.join(m2m, "extraction", "scores.json"), {
            "mean_selected_sentences": 2.0,
            "scores": {"memory": {"rouge1": 0.2}, "lead-3": {"rouge1": 0.25}},
            "oracle_agreement": {"memory": {"precision": 0.3, "recall": 0.2, "chance_precision": 0.1},
                                 "lead-3": {"precision": 0.4, "recall": 0.5, "chance_precision": 0.1}}})
    return root


def test_mean_and_sample_sd_by_hand():
    assert E.mean_sd([18.0, 19.0, 20.0]) == (19.0, 1.0)  # sd: sqrt((1 + 0 + 1) / 2)
    assert E.mean_sd([5.0]) == (5.0, 0.0) and E.mean_sd([None, None]) == (None, None)
    assert E.fmt([18.0, 19.0, 20.0]) == "19.00 +- 1.00 (18.00, 19.00, 20.00)"


def test_summary_table_pairs_each_method_with_its_baseline_per_seed(grid):
    runs = E.collect(grid)
    assert runs["base"]["seeds"] == [1, 2,
                                     3] and runs["tpt"]["rouge1"] == approx64([21.0, 21.0, 22.0])
    seeds, diffs = E.paired_differences(runs, "tpt", "base")
    assert seeds == [1, 2, 3] and diffs == approx64([1.0, 3.0, 3.0])
    table = E.summary_table(runs)
    mean, sd = 7 / 3, math.sqrt(((1 - 7 / 3) ** 2 + 2 * (3 - 7 / 3) ** 2) / 2)
    assert f"{mean:.2f} +- {sd:.2f} (1.00, 3.00, 3.00) vs `base`" in table
    assert "| `base` | 1, 2, 3 | 19.00 +- 1.00 (20.00, 18.00, 19.00)" in table


def test_report_tables_and_figures(grid):
    text = E.write_report(grid)
    assert os.path.getsize(os.path.join(grid, "probe_grid.png")) > 1000
    assert os.path.getsize(os.path.join(grid, "gate_sweep.png")) > 1000
    # probe: tpt's F1 41, 42, 43 -> 42.0 +- 1.0; majority 15.0
    assert "| `tpt` | 1 | 42.0 +- 1.0 | 42.0 +- 1.0 | 42.0 +- 1.0 |" in text
    assert "70.0 +- 10.0 (60.0, 70.0, 80.0) %" in text  # role share > 0.98 per seed
    # sweep: speed at t = 0.5 relative to t = 0 per seed: 1.1, 1.2, 1.3
    assert "| 0.5 | 50.0 +- 0.0 (50.0, 50.0, 50.0) | 16.00 +- 0.00" in text and "1.20 +- 0.10 (1.10, 1.20, 1.30)" in text
    # interleaved timing: speed-ups 1.4, 1.5, 1.6 at sparsities 41, 42, 43
    assert "Pruned generation speed, 5 interleaved rounds per seed" in text
    assert "| 0.1 | 42.0 +- 1.0 (41.0, 42.0, 43.0) | 16.00 +- 0.00 (16.00, 16.00, 16.00) | " in text
    assert "| 0.400 +- 0.000 (0.400, 0.400, 0.400) | 70 +- 0 (70, 70, 70) | 1.50 +- 0.10 (1.40, 1.50, 1.60) |" in text
    assert "| `mem2mem` | 10.0 +- 0.0 (10.0, 10.0, 10.0) | 20.0 +- 0.0" in text  # novel 1-grams of the hypotheses
    assert "| gold | 20.0 | 40.0 | 60.0 | 80.0 |" in text
    assert "| memory | 20.00 +- 0.00 (20.00, 20.00, 20.00) | 30.0 +- 0.0" in text
    runs = json.loads(open(os.path.join(grid, "runs.json")).read())
    assert runs["gate"]["distinct"] == [80, 80, 80]


def test_an_unscored_run_is_an_error_naming_it(grid, capsys):
    os.makedirs(os.path.join(grid, "seed4", "base"))
    with pytest.raises(SystemExit):
        E.main([grid])
    assert "seed4/base: no test.out.rouge.json" in capsys.readouterr().err


def test_focus_section_uses_every_document_when_measured(grid):
    """ETADS focus: with focus_all.json for every seed the report gives the per-seed means over all
    documents (and their spread across documents); with focus.json only, it says it is one document."""
    one = {"layers.0.focus": {"mu": [[1.0, 3.0]], "sigma": [[1.0, 1.0]], "m": 2}}  # 25 % and 50 % by hand
    for seed in (1, 2, 3):
        _run(grid, seed, "etads", 20.0, 1.0, 100)
        _write(os.path.join(grid, f"seed{seed}", "etads", "focus.json"), one)
    text = E.write_report(grid)
    assert "25.0 +- 0.0 (25.0, 25.0, 25.0) %" in text and "(validation document 0 of each seed only)" in text
    for seed in (1, 2, 3):
        _write(os.path.join(grid, f"seed{seed}", "etads", "focus_all.json"),
               {"documents": 100, "distance_mean": 0.30 + seed / 100, "distance_sd": 0.01,
                "scope_mean": 0.5, "scope_sd": 0.02})
    text = E.write_report(grid)
    assert "32.0 +- 1.0 (31.0, 32.0, 33.0) %" in text and "mean over all 100 validation documents" in text
    assert "document 0" not in text.split("## ETADS")[1].split("##")[0]
