"""recipes/compare.sh's report: the table and learning curve read from fairseq's logs and the scorer's
JSON (no training here; compare.sh itself runs in results/ with the commands recorded there)."""
import json
import os

import pytest

from fairseq_sum_plugins.analysis.compare_report import parse_train_log, write_report

LOG = """\
2026-11-23 21:11:15 | INFO | fairseq_cli.train | num. shared model params: 1,234,567 (num. trained: 1,234,567)
2026-11-23 21:20:50 | INFO | train_inner | epoch 001:      5 / 33 loss=12.5, nll_loss=12.1, aux_gate_l1=0.9, gate_sparsity=0, num_updates=5, wall=50
2026-11-23 21:20:50 | INFO | train_inner | epoch 001:     10 / 33 loss=11.0, nll_loss=10.7, aux_gate_l1=0.8, gate_sparsity=0, num_updates=10, wall=100
2026-11-23 21:21:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 10.5 | nll_loss 10.1 | aux_gate_l1 0.7 | gate_sparsity 12.5 | num_updates 10
2026-11-23 21:21:50 | INFO | train_inner | epoch 001:     15 / 33 loss=9.0, nll_loss=8.7, num_updates=15, train_wall=14, wall=150
2026-11-23 21:22:00 | INFO | train | epoch 001 | loss 10.0 | nll_loss 9.6 | num_updates 33 | train_wall 120 | wall 160
2026-11-23 21:22:20 | INFO | train_inner | epoch 002:      5 / 33 loss=8.0, nll_loss=7.7, num_updates=38, train_wall=3, wall=170
2026-11-23 21:22:30 | INFO | train | epoch 002 | loss 8.0 | nll_loss 7.7 | num_updates 40 | train_wall 20 | wall 175
"""


def write_run(out, label, rouge1, log=LOG, words="the cat sat"):
    run = os.path.join(out, label)
    os.makedirs(os.path.join(run, "checkpoints"))
    with open(os.path.join(run, "checkpoints", "train.log"), "w") as f:
        f.write(log)
    with open(os.path.join(run, "test.out"), "w") as f:
        f.write(f"S-0\tdoc\nT-0\tref\nH-0\t-1.0\t{words}\nD-0\t-1.0\t{words}\n")
    scores = {"rouge1": rouge1, "rouge1_ci": [rouge1 - 0.01, rouge1 + 0.02], "rouge2": 0.05, "rougeL": 0.2}
    with open(os.path.join(run, "test.out.rouge.json"), "w") as f:
        json.dump(scores, f)
    with open(os.path.join(run, "wall.txt"), "w") as f:
        f.write("train_s=200 generate_s=42\n")


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
