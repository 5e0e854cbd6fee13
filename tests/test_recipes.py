"""The recipes end to end, as a user runs them (``bash recipes/<dataset>/<method>.sh RAW``), on CPU:
one recipe per model family, each on a tiny corpus in its dataset's raw release format
(:mod:`corpora`), through convert -> fairseq-sum-prepare -> fairseq-train -> fairseq-generate ->
fairseq-sum-score. Only the recipes' environment variables make the runs small (a few updates of a
one-layer model, ~100 sentencepiece pieces, small beams). Every test checks that each test example
got a summary and that the ROUGE json holds finite scores; the XSum one runs its recipe a second time
and checks that every finished step is skipped."""
import json
import math
import os
import re
import subprocess
import sys

import corpora

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_TEST = corpora.SPLIT_SIZES["test"]

# one thread (a tiny model runs faster so on a small CPU), no fp16 probe, no emulation of the papers'
# 4 GPUs with --update-freq, ~110 sentencepiece pieces, 3 updates
TINY_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "FP16": "0", "NGPU": "1", "PAPER_GPUS": "1",
            "VOCAB": "150", "MAX_UPDATE": "3"}
# fairseq-train flags of a one-layer d=32 transformer (any preset of sum_transformer)
TINY_TRANSFORMER = ("--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 --encoder-ffn-embed-dim 64 "
                    "--encoder-attention-heads 2")
# the recipes' other variables: not inherited from the caller's environment
RECIPE_VARS = ("WORK ARCH EXTRA BATCH BEAM BEAMS UPDATE_FREQ MAX_SRC MAX_TGT MAX_SENTS SENT_TOKENS EPOCHS "
               "SAVE_INTERVAL TOPICS TOPICS_N LENPEN LAMBDA THRESHOLD TEST_SUBSET DENSITY_BIN COVERAGE_TYPE "
               "MAX_SECTIONS MAX_LEN_B").split()
STEP = re.compile(r"^\[\d\d:\d\d:\d\d\] ([a-z][a-z ]*?): (.*)$", re.M)


def run_recipe(script, *args, **env):
    """Runs ``bash recipes/SCRIPT ARGS`` with TINY_ENV and ``env``; returns its stdout."""
    full_env = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS}
    full_env.update(TINY_ENV, **env)
    # the recipes call `python` and the console scripts: those of this interpreter
    full_env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full_env.get("PATH", "")
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", script), *map(str, args)], cwd=REPO,
                          env=full_env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{script} exited with {proc.returncode}:\n{(proc.stdout + proc.stderr)[-5000:]}"
    return proc.stdout


def steps(stdout):
    """``[(step, skipped)]`` of the recipe's log lines (``[HH:MM:SS] step: message``)."""
    return [(step, message.endswith("skipped")) for step, message in STEP.findall(stdout)]


def check_decoding(out):
    """Every test example has a non-empty summary in the fairseq-generate output ``out``, which is
    complete, and ``out.rouge.json`` holds finite ROUGE F1s for all of them."""
    with open(out, encoding="utf-8") as f:
        text = f.read()
    assert re.search(r"^Generate test with beam=", text, re.M), f"{out}: incomplete"
    hyps = {int(i): h for i, h in re.findall(r"^H-(\d+)\t[^\t]*\t(.*)$", text, re.M)}
    assert sorted(hyps) == list(range(N_TEST))
    assert all(h.strip() for h in hyps.values()), hyps
    with open(f"{out}.rouge.json", encoding="utf-8") as f:
        scores = json.load(f)
    assert scores["num_summaries"] == N_TEST
    for metric in ("rouge1", "rouge2", "rougeL"):
        assert math.isfinite(scores[metric]) and 0 <= scores[metric] <= 1, (metric, scores[metric])
    return scores


def test_xsum_tp_transformer_and_resume(tmp_path):
    """TP-Transformer (TPT-d) on XSum in the Hugging Face layout; a second run redoes nothing."""
    raw = corpora.write_xsum_hf(tmp_path / "xsum")
    work = tmp_path / "work"
    env = dict(WORK=str(work), ARCH="tp_transformer_small", BATCH="8", BEAMS="1", SAVE_INTERVAL="3",
               MAX_SRC="128", MAX_TGT="32", EXTRA=TINY_TRANSFORMER + " --tpr-roles 4")
    first = run_recipe("xsum/tp_transformer.sh", raw, **env)
    assert "statistics of xsum" in first  # the converter's --stats table
    order = ["convert", "prepare", "train", "generate", "score"]
    assert steps(first) == [(step, False) for step in order]
    out = work / "test.tp_transformer_small.beam1.out"
    check_decoding(out)
    ckpt = work / "checkpoints" / "tp_transformer_small" / "checkpoint_best.pt"
    assert (work / "bin" / "prepare_args.json").is_file() and ckpt.is_file()
    before = {p: p.stat().st_mtime_ns for p in (ckpt, out, work / "bin" / "test.src-tgt.src.bin")}

    second = run_recipe("xsum/tp_transformer.sh", raw, **env)
    assert steps(second) == [(step, True) for step in order]
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_cnndm_etads_raw_stories(tmp_path):
    """ETADS (focus attention + saliency selection, GNMT length/coverage penalties) on the raw
    CNN / Daily Mail .story files with abisee's url lists."""
    stories, url_lists = corpora.write_cnndm_stories(tmp_path / "cnndm")
    work = tmp_path / "work"
    run_recipe("cnn_dm/etads.sh", " ".join(stories), url_lists, WORK=str(work), BEAM="2", EXTRA=TINY_TRANSFORMER)
    check_decoding(work / "test.etads_base.beam2.out")


def test_pubmed_mem2mem(tmp_path):
    """Mem2Mem on PubMed in Cohan et al.'s release format, with the implicit extraction analysis."""
    raw = corpora.write_cohan(tmp_path / "pubmed-dataset")
    work = tmp_path / "work"
    run_recipe("pubmed/mem2mem.sh", raw, WORK=str(work), EPOCHS="1", BATCH="8", MAX_SRC="256", MAX_SENTS="8",
               SENT_TOKENS="24", EXTRA="--embed-dim 32 --encoder-hidden-size 32 --decoder-hidden-size 64 "
                                   "--memory-attn-dim 32")
    check_decoding(work / "test.mem2mem_base.beam4.out")
    with open(work / "implicit_extraction.mem2mem_base" / "scores.json", encoding="utf-8") as f:
        assert json.load(f)["num_docs"] == N_TEST


def test_newsroom_transformer_gated(tmp_path):
    """Information selection (gate layer, L1 loss) on the Newsroom release: one decoding without
    pruning (THRESHOLD=0; a 3-update model's gates are far above the paper's 0.1 anyway) and the sweep
    over the pruning thresholds 0, 0.02, ..., 0.2."""
    raw = corpora.write_newsroom(tmp_path / "newsroom")
    work = tmp_path / "work"
    stdout = run_recipe("newsroom/transformer_gated.sh", raw, WORK=str(work), ARCH="transformer_gated_small",
                        THRESHOLD="0", TEST_SUBSET=str(N_TEST), EXTRA=TINY_TRANSFORMER)
    assert [step for step, _ in steps(stdout)].count("generate") == 1
    check_decoding(work / "test.transformer_gated_small.l0.1.t0.out")
    with open(work / "gate_sweep.transformer_gated_small.l0.1" / "gate_sweep.json", encoding="utf-8") as f:
        rows = json.load(f)
    assert len(rows) == 11 and all(row["n"] == N_TEST for row in rows)


def test_xsum_transformer_ta_raw_bbc(tmp_path):
    """Transformer + Topic Assistant (PFA topic model, SIA/TEMA/DRM) on the raw BBC extraction of XSum
    with the official split file."""
    raw, split_file = corpora.write_xsum_raw(tmp_path / "xsum")
    work = tmp_path / "work"
    run_recipe("xsum/transformer_ta.sh", raw, split_file, WORK=str(work), ARCH="transformer_ta_small",
               TOPICS="8", TOPICS_N="2", EXTRA=TINY_TRANSFORMER)
    assert (work / "bin" / "test.theta.npy").is_file()
    check_decoding(work / "test.transformer_ta_small.beam5.out")
