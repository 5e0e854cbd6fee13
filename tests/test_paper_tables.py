"""recipes/papers.sh, one command per table of each paper, and ledger/paper_tables.py, the tables
it writes (the paper's figures beside the run's).

Each table's command runs end to end at smoke scale in tests/test_paper_table_PAPER.py (one file
per paper; what they share: tests/paper_smoke.py)."""
import json
import os
import subprocess
import sys

import pytest
from helpers import repo_env

from ledger import paper_tables as pt
from paper_smoke import PAPER_ENV_DROP, REPO


# ------------------------------------------------------------------------- tables, fast checks
def test_every_table_lists_its_rows_with_the_papers_figures_and_cites_them(tmp_path):
    for (paper, table), build in pt.TABLES.items():
        t = build()
        assert t.rows, (paper, table)
        for row in t.rows:
            assert len(row.paper) == len(t.columns), (paper, table, row.label)
            assert row.source or row.reason, row.label
        text = pt.render(t, str(tmp_path))
        rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
        assert len(rows) == len(t.rows) + 1  # + the header row
        for line in rows[1:]:
            assert line.count("|") == 2 * len(t.columns) + 3, line


def test_tpt_table2_holds_all_48_cells_and_reads_a_run(tmp_path):
    t = pt.get_table("tpt", "t2")
    cells = [r for r in t.rows if "Lead-3" not in r.label]
    assert len(cells) == 4 * 2 * 2 * 3  # datasets x dev/test x beams x models
    xsum_test4_tptd = next(r for r in cells if r.label.startswith("XSum / Test / beam 4 / TPT-d"))
    assert xsum_test4_tptd.paper == (35.84, 14.06, 28.40, 25.79)
    assert 'Table 2, row "XSum Test 4", TPT-d' in xsum_test4_tptd.label
    (tmp_path / "xsum").mkdir()
    (tmp_path / "xsum" / "test.tp_transformer.beam4.out.rouge.json").write_text(json.dumps(
        {"rouge1": 0.1234, "rouge2": 0.05, "rougeL": 0.1, "meteor": 0.2}))
    text = pt.render(t, str(tmp_path))
    line = next(x for x in text.splitlines() if x.startswith("| XSum / Test / beam 4 / TPT-d"))
    assert "| 35.84 | 12.34 | 14.06 | 5.00 | 28.40 | 10.00 | 25.79 | 20.00 |" in line
    wiki = next(x for x in text.splitlines() if x.startswith("| Wikihow / Dev / beam 1 / TPT-c"))
    assert "not run (wikihow/valid.tp_transformer_continuous.beam1.out.rouge.json missing)" in wiki


def test_rows_without_a_run_say_why(tmp_path):
    text = pt.render(pt.get_table("ta", "main"), str(tmp_path))
    bertsum = next(x for x in text.splitlines() if x.startswith("| CNN/DM / BertSUM+TA"))
    assert "43.06" in bertsum and "weights are not available" in bertsum
    nyt = next(x for x in text.splitlines() if x.startswith("| NYT / Transformer+TA"))
    assert "the paper reports no Transformer+TA figure" in nyt and "LDC2008T19" in nyt
    srl = pt.render(pt.get_table("tpt", "t4"), str(tmp_path))
    assert "SRL / layer 3 / TPT-d" in srl and "SRL tagger" in srl


def test_topic_assistant_mean_and_length_penalty_choice(tmp_path):
    a = {"rouge1": 0.30, "rouge2": 0.10, "rougeL": 0.20, "rouge1_precision": 0.5}
    b = {"rouge1": 0.40, "rouge2": 0.20, "rougeL": 0.30, "rouge1_precision": 0.7}
    mean = pt.mean_scores([a, b], ["a", "b"])
    assert mean["rouge1"] == pytest.approx(0.35) and mean["rouge1_precision"] == pytest.approx(0.6)
    assert mean["averaged"] == 2 and "meteor" not in mean
    best, lines = pt.pick_lenpen([("0.6", a), ("0.7", b), ("0.8", b)])
    assert best == "0.7" and len(lines) == 3  # the highest mean; the earlier alpha on a tie


def test_gate_and_baseline_and_extraction_sources(tmp_path):
    (tmp_path / "newsroom" / "gate_sweep.same").mkdir(parents=True)
    (tmp_path / "newsroom" / "gate_sweep.same" / "gate_sweep.json").write_text(json.dumps(
        [{"threshold": 0.1, "sparsity": 50.0, "rouge1": 30.0, "rouge2": 10.0, "rougeL": 25.0}]))
    text = pt.render(pt.get_table("is", "sweep"), str(tmp_path))
    line = next(x for x in text.splitlines() if x.startswith("| threshold 0.1 "))
    assert "| 58.20 | 50.00 | 41.11 | 30.00 |" in line
    missing = next(x for x in text.splitlines() if x.startswith("| threshold 0.2 "))
    assert "threshold 0.2 not in" in missing


def test_measured_speed_and_the_paper_scale_estimate(tmp_path):
    log = tmp_path / "measure.log"
    inner = "2026-11-29 00:13:1{} | INFO | train_inner | epoch 001:      {} / 50 loss=7.0, ups={}, wall={}\n"
    log.write_text(inner.format(4, 1, "0.05", 20) + inner.format(6, 2, "0.5", 22) + inner.format(8, 3, "0.25", 26)
                   + "2026-11-29 | INFO | train | epoch 001 | ups 0.1 | num_updates 3 | wall 26\n")
    # the first update (warm-up) is left out: mean of 1/0.5 and 1/0.25 = 3 s/update
    assert pt.measured_speed(str(log)) == pytest.approx(3.0)
    lines = pt.scale_lines("tpt", str(log), 4, 2)
    # 3 s / 4 documents x 128 documents x 200,000 updates / 3600 = 5,333 hours on 2 threads
    assert "3.00 s/update on 2 thread(s), 1.500 core-seconds per document" in lines[0]
    assert "5,333 hours on 2 thread(s), 10,667 core-hours per model" in lines[1]
    log.write_text(inner.format(4, 1, "0.05", 20))
    assert pt.measured_speed(str(log)) is None and "not measured" in pt.scale_lines("tpt", str(log), 4, 1)[0]


def test_papers_sh_refuses_bad_commands(tmp_path):
    def run(*args, **env):
        full = {k: v for k, v in os.environ.items() if k not in PAPER_ENV_DROP}
        full.update(env, OUT=str(tmp_path / "out"))
        full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
        return subprocess.run(["bash", os.path.join(REPO, "recipes", "papers.sh"), *args], cwd=REPO,
                              env=full, capture_output=True, text=True, timeout=120)

    for args, message in ((("tpt", "t9", "x"), "no table 'tpt t9'"),
                          (("nope", "t2", "x"), "no table 'nope t2'"),
                          (("tpt", "t2", "pubmed=x"), "has no dataset 'pubmed'"),
                          (("tpt", "t2", "xsum="), "an empty path"),
                          (("tpt", "t2", "xsum.aux=y"), "xsum.aux given without xsum=RAW"),
                          (("tpt", "t2"), "no data given")):
        proc = run(*args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr[-500:])
    proc = run("etads", "t2", "x", PRESET="large")
    assert proc.returncode == 2 and "PRESET must be base or small" in proc.stderr
    proc = run("etads", "t2", "x", SCORER="bleu")
    assert proc.returncode == 2 and "SCORER must be official or rouge155-py" in proc.stderr
    assert "tpt t2" in run("list").stdout


class _Runs:
    """Unpickling this runs code: a checkpoint must never be loaded with weights_only=False."""

    def __reduce__(self):
        return (os.system, ("touch RAN_CODE",))


def test_parameter_count_reads_tensors_only_and_refuses_a_pickle_that_runs_code(tmp_path, monkeypatch):
    import argparse

    import torch

    monkeypatch.chdir(tmp_path)
    good = tmp_path / "good.pt"
    torch.save({"args": argparse.Namespace(arch="x"), "model": {
        "w": torch.zeros(3, 4), "b": torch.zeros(5), "steps": torch.tensor(7)}}, good)
    assert pt.parameter_count(str(good))["params_k"] == pytest.approx(17 / 1000)  # the int not counted
    bad = tmp_path / "bad.pt"
    torch.save({"model": {"w": torch.zeros(1)}, "extra": _Runs()}, bad)
    with pytest.raises(ValueError, match=r"bad\.pt: not a readable fairseq checkpoint"):
        pt.parameter_count(str(bad))
    proc = subprocess.run([sys.executable, "-m", "ledger.paper_tables", "params",
                           str(bad), str(tmp_path / "p.json")], cwd=tmp_path, capture_output=True, text=True,
                          env=repo_env())
    assert proc.returncode == 2 and "not a readable fairseq checkpoint" in proc.stderr
    assert not (tmp_path / "RAN_CODE").exists() and not (tmp_path / "p.json").exists()


def test_params_counts_a_tables_checkpoints_in_one_run_and_writes_none_when_one_is_unreadable(
        tmp_path):
    """``params CKPT DEST [CKPT DEST ...]`` (papers.sh counts an ETADS table's models in one
    process): each pair written; a bad checkpoint anywhere in the batch writes no file of it; an
    unpaired argument is refused by name."""
    import argparse

    import torch

    def run(*args):
        return subprocess.run([sys.executable, "-m", "ledger.paper_tables", "params", *map(str, args)],
                              cwd=tmp_path, capture_output=True, text=True,
                              env=repo_env())

    a, b, bad = tmp_path / "a.pt", tmp_path / "b.pt", tmp_path / "bad.pt"
    torch.save({"args": argparse.Namespace(arch="x"), "model": {"w": torch.zeros(2, 3)}}, a)
    torch.save({"model": {"w": torch.zeros(4), "b": torch.zeros(1)}}, b)
    bad.write_bytes(b"not a checkpoint")
    proc = run(a, tmp_path / "a.json", b, tmp_path / "b.json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "a.json").read_text()) == {"params_k": 6 / 1000, "checkpoint": str(a)}
    assert json.loads((tmp_path / "b.json").read_text())["params_k"] == 5 / 1000
    proc = run(a, tmp_path / "a2.json", bad, tmp_path / "bad.json")
    assert proc.returncode == 2 and "bad.pt: not a readable fairseq checkpoint" in proc.stderr
    assert not (tmp_path / "a2.json").exists() and not (tmp_path / "bad.json").exists()
    proc = run(a, tmp_path / "a3.json", b)
    assert proc.returncode == 2 and f"(the last, {b}, has no pair)" in proc.stderr
    assert not (tmp_path / "a3.json").exists()
    proc = run(a, a)  # the output guard: DEST is the checkpoint it reads
    assert proc.returncode == 2 and "which this command reads" in proc.stderr
    proc = run(a, tmp_path / "a4.json", b, tmp_path / "new" / "b.json")  # was a traceback at the end
    assert proc.returncode == 2 and f"DEST {tmp_path / 'new' / 'b.json'}: its folder does not exist" \
        in proc.stderr and not (tmp_path / "a4.json").exists()
