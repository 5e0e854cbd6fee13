"""What made the figures of a written paper table: the paper's scorer as the paper states it, and
the ROUGE scorer and METEOR implementation each run file records (ledger/paper_tables.py
``scorer_lines``); the Topic Assistant's mean of checkpoints keeps them and refuses to average
figures of different scorers; Mem2Mem Table 1's run cells of type and parameters."""
import json
import os
import subprocess
import sys

import pytest

from ledger import paper_tables as pt
from paper_smoke import REPO


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _scores(scorer, **extra):
    return {"scorer": scorer, "rouge1": 0.4, "rouge2": 0.2, "rougeL": 0.3, **extra}


def _head(text):
    return text.split("| row |")[0]


def test_etads_table2_names_the_scorer_that_made_the_run_not_official_rouge(tmp_path):
    t = pt.get_table("etads", "t2")
    assert "official" not in t.title
    _write(tmp_path / "cnn_dm" / "test.etads_basic.beam2.out.rouge.json", _scores("rouge155-py"))
    _write(tmp_path / "cnn_dm" / "test.etads_focus.beam2.out.rouge.json", _scores("rouge155-py"))
    head = _head(pt.render(t, str(tmp_path)))
    assert "The paper's figures: the official ROUGE script (Table 2's caption)" in head
    assert ("The run's ROUGE: rouge155-py (this package's ROUGE-1.5.5 in Python) in 2 file(s)."
            in head)
    # an official run says so; mixed runs are both named
    _write(tmp_path / "cnn_dm" / "test.etads_etads.beam2.out.rouge.json", _scores("official"))
    head = _head(pt.render(t, str(tmp_path)))
    assert ("official (ROUGE-1.5.5 itself) in 1 file(s); rouge155-py (this package's "
            "ROUGE-1.5.5 in Python) in 2 file(s)." in head)


def test_a_file_that_records_no_scorer_is_named_and_no_files_says_so(tmp_path):
    t = pt.get_table("is", "sweep")
    assert "The run's figures: none read yet." in _head(pt.render(t, str(tmp_path)))
    _write(tmp_path / "newsroom" / "gate_sweep.same" / "gate_sweep.json",
           [{"threshold": 0.1, "sparsity": 50.0, "rouge1": 30.0, "rouge2": 10.0, "rougeL": 25.0}])
    head = _head(pt.render(t, str(tmp_path)))
    assert ("The run's ROUGE: not recorded in 1 file(s) "
            "(newsroom/gate_sweep.same/gate_sweep.json)." in head)
    assert "ROUGE on 1k-document subsets (§4.3), implementation not stated" in head
    # gate_sweep.py records its scorer in every row: the table names it
    _write(tmp_path / "newsroom" / "gate_sweep.same" / "gate_sweep.json",
           [{"threshold": 0.1, "sparsity": 50.0, "rouge1": 30.0, "rouge2": 10.0, "rougeL": 25.0,
             "scorer": "rouge155-py"}])
    head = _head(pt.render(t, str(tmp_path)))
    assert "The run's ROUGE: rouge155-py (this package's ROUGE-1.5.5 in Python) in 1 file(s)." in head


def test_tpt_table2_names_the_meteor_implementation(tmp_path):
    _write(tmp_path / "xsum" / "test.tp_transformer.beam4.out.rouge.json",
           _scores("rouge155-py", meteor=0.2, meteor_impl="nltk-3.9.1"))
    head = _head(pt.render(pt.get_table("tpt", "t2"), str(tmp_path)))
    assert "METEOR: Meteor Universal (Denkowski and Lavie, 2014" in head
    assert "The run's METEOR: nltk-3.9.1 in 1 file(s)." in head
    # a table without ROUGE or METEOR (probing F1) has no scorer line
    assert "The paper's figures" not in pt.render(pt.get_table("tpt", "t4"), str(tmp_path))


def test_the_mean_of_checkpoints_keeps_the_scorer_and_refuses_to_mix_scorers(tmp_path):
    a = _scores("official", meteor=0.1, meteor_impl="meteor-1.5")
    b = _scores("official", meteor=0.3, meteor_impl="meteor-1.5")
    mean = pt.mean_scores([a, b], ["a.json", "b.json"])
    assert mean["scorer"] == "official" and mean["meteor_impl"] == "meteor-1.5"
    assert mean["meteor"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match=r"different scorers \(a.json: official, b.json: "
                                         r"rouge155-py\)"):
        pt.mean_scores([a, _scores("rouge155-py")], ["a.json", "b.json"])
    for name, data in (("a.json", a), ("b.json", _scores("rouge155-py"))):
        _write(tmp_path / name, data)
    proc = subprocess.run([sys.executable, "-m", "ledger.paper_tables", "mean",
                           str(tmp_path / "mean.json"), str(tmp_path / "a.json"),
                           str(tmp_path / "b.json")], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and "different scorers" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "mean.json").exists()


def test_mem2mem_table1_run_cells_type_and_parameters_of_the_checkpoint(tmp_path):
    import torch

    _write(tmp_path / "pubmed" / "test.mem2mem_base.beam4.out.rouge.json", _scores("official"))
    ckpt = tmp_path / "pubmed" / "checkpoints" / "mem2mem_base" / "checkpoint_best.pt"
    ckpt.parent.mkdir(parents=True)
    torch.save({"model": {"w": torch.zeros(1000, 1500), "b": torch.zeros(500),
                          "step": torch.tensor(3)}}, ckpt)  # 1,500,500 floats: 1.5 M
    _write(tmp_path / "pubmed" / "test.hred_base.beam4.out.rouge.json", _scores("official"))
    text = pt.render(pt.get_table("mem2mem", "t1"), str(tmp_path))
    mem = next(x for x in text.splitlines() if x.startswith("| PubMed / Mem2Mem"))
    assert "| A | A | 14.7 | 1.5 | 42.06 | 40.00 | 16.56 | 20.00 | 38.11 | 30.00 |" in mem
    hred = next(x for x in text.splitlines() if x.startswith("| PubMed / HRED"))
    assert "| - | A | - | - | 40.02 | 40.00 |" in hred  # no checkpoint: no count, the rest read
    # a checkpoint that is not one: the row says so instead of figures
    bad = tmp_path / "pubmed" / "checkpoints" / "hred_base" / "checkpoint_best.pt"
    bad.parent.mkdir(parents=True)
    bad.write_text("not a checkpoint")
    text = pt.render(pt.get_table("mem2mem", "t1"), str(tmp_path))
    hred = next(x for x in text.splitlines() if x.startswith("| PubMed / HRED"))
    assert "not a readable fairseq checkpoint" in hred and os.path.basename(str(bad)) in hred


def test_a_score_file_that_is_not_json_is_named_not_a_traceback(tmp_path):
    bad = tmp_path / "cnn_dm" / "test.etads_basic.beam10.out.rouge.json"
    bad.parent.mkdir()
    bad.write_text("{cut off")
    proc = subprocess.run([sys.executable, "-m", "ledger.paper_tables", "write", "etads", "t2",
                           str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{bad}: not a JSON file" in proc.stderr
    assert not (tmp_path / "etads-t2.md").exists()
