"""``recipes/newsroom/t5_gated.sh`` end to end on CPU: a tiny random Hugging Face T5 (built here) is
imported, Newsroom is binarized with its sentencepiece model and dictionary, a gated T5 is fine-tuned
from it (one lambda of the loop, to stay fast) and swept over the thresholds 0.00 .. 0.99 on the test
subset."""
import gzip
import json
import os

import corpora
import pytest
from t5_fixtures import write_tiny_t5
from helpers import N_TEST, REPO, run_recipe, steps

pytest.importorskip("transformers")

# fairseq-train flags matching the tiny T5's dims (the preset's are T5-small's)
TINY_T5 = ("--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 32 --encoder-ffn-embed-dim 64 "
           "--encoder-attention-heads 4 --t5-relative-buckets 8 --t5-relative-max-distance 20")


def newsroom_sentences(raw):
    with gzip.open(os.path.join(raw, "train.jsonl.gz"), "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"].replace("\n", " ") for line in f]


@pytest.mark.slow
def test_newsroom_t5_gated(tmp_path):
    raw = corpora.write_newsroom(tmp_path / "newsroom")
    hf = tmp_path / "t5-tiny"
    write_tiny_t5(str(hf), sentences=newsroom_sentences(raw), vocab_size=120)
    work = tmp_path / "work"
    stdout = run_recipe("newsroom/t5_gated.sh", raw, hf, WORK=str(work), ARCH="t5_small_gated", LAMBDAS="0.3",
                        SWEEP_SUBSETS="test", SUBSET=str(N_TEST), BEAM="1", MAX_LEN_B="6", MAX_TOKENS="2048", EXTRA=TINY_T5,
                        FAIRSEQ_SUM_VERBOSE="1")  # the configuration dump shows each run's lambda
    assert [s for s, _ in steps(stdout)][:4] == ["import", "convert", "prepare", "train"]
    assert (work / "bin" / "dict.src.txt").read_text() == (work / "t5" / "dict.txt").read_text()
    with open(work / "bin" / "prepare_args.json", encoding="utf-8") as f:
        assert json.load(f)["tokenizer"] == {}  # raw text into T5's sentencepiece
    for lam in ("0.3",):
        log = (work / "checkpoints" / f"t5_small_gated.l{lam}" / "train.log").read_text()
        assert "initialising encoder.info_gate.proj.weight fresh" in log
        assert f"'gate_l1_weight': {float(lam)}" in log or f"gate_l1_weight={float(lam)}" in log
        for sub in ("test",):
            with open(work / f"gate_sweep.t5_small_gated.l{lam}.{sub}" / "gate_sweep.json", encoding="utf-8") as f:
                rows = json.load(f)
            assert [round(r["threshold"], 2) for r in rows] == [round(0.01 * i, 2) for i in range(100)]
            assert all(r["n"] == N_TEST for r in rows)
            assert rows[0]["sparsity"] == 0.0 and rows[-1]["sparsity"] > 0  # 0.99 closes gates
    assert "| lambda | best test threshold" in stdout and "\n| 0.3 | " in stdout


def test_recipe_defaults_are_the_papers_grids():
    """The loop runs over lambda 0.0 .. 0.7 and the sweep over thresholds 0.00 .. 0.99 by default."""
    with open(os.path.join(REPO, "recipes", "newsroom", "t5_gated.sh"), encoding="utf-8") as f:
        text = f.read()
    assert 'LAMBDAS=${LAMBDAS:-0.0 0.1 0.2 0.3 0.4 0.5 0.6 0.7}' in text
    assert "THRESHOLDS=${THRESHOLDS:-$(seq -f %.2f 0 0.01 0.99" in text
    assert 'SWEEP_SUBSETS=${SWEEP_SUBSETS:-valid test}' in text and "SUBSET=${SUBSET:-1000}" in text
