"""recipes/compare.sh's report: the table and learning curve read from fairseq's logs and the scorer's
JSON (no training here; compare.sh itself runs in results/ with the commands recorded there)."""
import json
import os

import pytest

from fairseq_sum_plugins.evaluation.compare_report import parse_train_log, write_report
from helpers import LOG, write_run  # noqa: F401


def test_parse_train_log(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(LOG)
    log = parse_train_log(str(path))
    assert log["params"] == 1234567
    assert log["valid"] == [(10, 10.5)]
    assert log["train"] == [(5, 12.5), (10, 11.0)]  # the point after the last validation is dropped
    assert log["valid_nll"] == [(10, 10.1)] and log["train_nll"] == [(5, 12.1), (10, 10.7)]
    assert log["aux"] == {"aux_gate_l1": 0.7, "gate_sparsity": 12.5}
    assert log["wall"] == 140  # 120 + 20: every epoch's training seconds, not the last line's (3) or epoch's (20)


def test_report_table_and_png(tmp_path):
    out = str(tmp_path)
    write_run(out, "base", 0.25)
    write_run(out, "method", 0.3, words="a b c d e")
    write_report(out, ["base", "method"])
    md = open(os.path.join(out, "results.md")).read()
    assert "| `base` | 1.23M | 10 | 10.500 | 10.100 | 25.00 [24.00, 27.00] | 5.00 | 20.00 | 3.0 | aux_gate_l1 0.7, gate_sparsity 12.5 | 200 | 140 | 42 |" in md
    assert "| train s (wall) | train s (steps) | generate s |" in md
    assert "| `method` |" in md and "30.00 [29.00, 32.00] | 5.00 | 20.00 | 5.0 |" in md
    assert os.path.getsize(os.path.join(out, "learning_curve.png")) > 1000


def test_missing_scores_name_the_file(tmp_path):
    write_run(str(tmp_path), "base", 0.25)
    with pytest.raises(FileNotFoundError, match="other/test.out.rouge.json"):
        write_report(str(tmp_path), ["base", "other"])


def test_models_that_ignore_their_source_are_named_under_the_table(tmp_path):
    out = str(tmp_path)
    write_run(out, "base", 0.25)
    write_run(out, "method", 0.3)
    for label, use in (("base", {"gain": 0.004, "distinct": 1, "hypotheses": 1}),
                       ("method", {"gain": 0.8, "distinct": 1, "hypotheses": 1})):
        with open(os.path.join(out, label, "source_use.json"), "w") as f:
            json.dump(use, f)
    write_report(out, ["base", "method"])
    md = open(os.path.join(out, "results.md")).read()
    assert "| 0.004 | 1/1 |" in md and "| 0.800 | 1/1 |" in md
    assert "**Not reading the source:** `base` (source gain < 0.05 bits" in md


def test_report_without_source_measurements_has_no_such_columns(tmp_path):
    write_run(str(tmp_path), "base", 0.25)
    write_report(str(tmp_path), ["base"])
    md = open(os.path.join(str(tmp_path), "results.md")).read()
    assert "| source gain (bits) |" not in md and "Not reading the source" not in md


@pytest.mark.parametrize("wall,train_cell,generate_cell", [
    ("train_s=200 generate_s=42", "200", "42"),
    ("generate_s=42", "unknown", "42"),  # no launch recorded the training: not 0
    ("train_s=200 train_resumed=1", ">= 200", "unknown"),  # the killed launch's seconds are not in 200
    ("", "unknown", "unknown"),
])
def test_train_seconds_missing_are_unknown(tmp_path, wall, train_cell, generate_cell):
    out = str(tmp_path)
    write_run(out, "base", 0.25)
    with open(os.path.join(out, "base", "wall.txt"), "w") as f:
        f.write(wall + "\n")
    write_report(out, ["base"])
    row = next(line for line in open(os.path.join(out, "results.md")) if line.startswith("| `base` |"))
    cells = row.strip().strip("|").split(" | ")
    assert (cells[-3].strip(), cells[-1].strip()) == (train_cell, generate_cell)
