"""BART + Topic Assistant: GPT-2 BPE encoding (preprocess/gpt2_bpe.py), the topic model over a GPT-2
BPE dictionary, and recipes/topic_assistant_bart_run.sh run end to end on CPU with a tiny GPT-2
vocabulary and a tiny fairseq BART ``model.pt``, then run again to check that it resumes."""
import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from helpers import REPO, save_bart_checkpoint
from tolerances import MODEL_ULPS, OP_ULPS, fp32_close
from helpers import ANIMALS, MONEY, BART_N_TEST as N_TEST, STOP, encoder_of, make_example, write_gpt2_files, write_hf_xsum  # noqa: F401

# tiny bart_base: the recipe gets the same dimensions through EXTRA
BART_TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
             "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
             "--decoder-attention-heads", "2", "--max-source-positions", "64", "--max-target-positions", "64"]


def save_tiny_bart(paths, folder):
    """A tiny ``bart_base``-shaped model over ``dict.txt``, saved in the layout of fairseq's BART
    release (``args``, ``model``, ...) as ``folder/model.pt``."""
    import shutil

    data = os.path.join(folder, "dicts")
    os.makedirs(data, exist_ok=True)
    for lang in ("src", "tgt"):
        shutil.copy(paths["dict.txt"], os.path.join(data, f"dict.{lang}.txt"))
    return save_bart_checkpoint(data, os.path.join(folder, "model.pt"), BART_TINY,
                                "--source-lang", "src", "--target-lang", "tgt")


@pytest.fixture(scope="module")
def gpt2_files(tmp_path_factory):
    return write_gpt2_files(str(tmp_path_factory.mktemp("gpt2")))


# --- preprocess/gpt2_bpe.py -----------------------------------------------------------------------


def write_jsonl_dir(folder, rows_by_split):
    os.makedirs(folder, exist_ok=True)
    for split, rows in rows_by_split.items():
        with open(os.path.join(folder, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" if r is not None else "\n" for r in rows))
    return folder


def test_gpt2_bpe_one_line_per_example_and_truncation(gpt2_files, tmp_path):
    from preprocess import gpt2_bpe

    bpe = encoder_of(gpt2_files)
    rows = [{"document": "The cat sat\n on the  farm.\nThe dog ran.", "summary": "A cat."},
            None,  # a blank line is not an example
            {"document": ["The bank rates.", "The market fell."], "summary": ["Rates", "fell."]}]
    jsonl = write_jsonl_dir(str(tmp_path / "jsonl"), {"train": rows, "val": rows[:1], "test": rows[2:]})
    out = str(tmp_path / "bpe")
    counts = gpt2_bpe.main(["--jsonl-dir", jsonl, "--out", out, "--encoder-json", gpt2_files["encoder.json"],
                            "--vocab-bpe", gpt2_files["vocab.bpe"], "--max-src-tokens", "6", "--langs", "src,tgt"])
    assert counts == {"train": 2, "valid": 1, "test": 1}
    src = open(os.path.join(out, "train.src")).read().splitlines()
    tgt = open(os.path.join(out, "train.tgt")).read().splitlines()
    assert len(src) == len(tgt) == 2
    full = bpe.encode("The cat sat on the farm. The dog ran.")  # whitespace collapsed, one line
    assert len(full) > 6 and src[0] == " ".join(map(str, full[:6]))  # the first 6 BPE tokens
    assert tgt[1] == " ".join(map(str, bpe.encode("Rates fell.")))  # sentences joined, not truncated
    assert bpe.decode([int(t) for t in tgt[0].split()]) == "A cat."
    assert bpe.encode(" cat") == [bpe.encoder["\u0120cat"]]  # the merges make " cat" one token
    assert sorted(os.listdir(out)) == sorted(f"{s}.{l}" for s in ("train", "valid", "test") for l in ("src", "tgt"))
    # default suffixes (fairseq's BART example: .source / .target), several workers, same ids
    out2 = str(tmp_path / "bpe2")
    gpt2_bpe.main(["--jsonl-dir", jsonl, "--out", out2, "--encoder-json", gpt2_files["encoder.json"],
                   "--vocab-bpe", gpt2_files["vocab.bpe"], "--max-src-tokens", "6", "--workers", "2"])
    assert open(os.path.join(out2, "train.source")).read().splitlines() == src


def test_gpt2_bpe_errors(gpt2_files, tmp_path):
    from preprocess.gpt2_bpe import Gpt2BpeError, main

    good = {"document": "The cat.", "summary": "Cat."}

    def run(rows_by_split, **paths):
        jsonl = write_jsonl_dir(str(tmp_path / f"j{len(os.listdir(tmp_path))}"), rows_by_split)
        main(["--jsonl-dir", jsonl, "--out", str(tmp_path / "o"), "--encoder-json", paths.get("enc", gpt2_files["encoder.json"]),
              "--vocab-bpe", gpt2_files["vocab.bpe"]])

    with pytest.raises(Gpt2BpeError, match=r"no test\.jsonl"):
        run({"train": [good], "valid": [good]})
    with pytest.raises(Gpt2BpeError, match=r"valid\.jsonl: no examples \(empty file\)"):
        run({"train": [good], "valid": [], "test": [good]})
    with pytest.raises(Gpt2BpeError, match=r"train\.jsonl:2: field 'summary' must be a string"):
        run({"train": [good, {"document": "x"}], "valid": [good], "test": [good]})
    with pytest.raises(Gpt2BpeError, match=r"test\.jsonl:1: empty 'document'"):
        run({"train": [good], "valid": [good], "test": [{"document": " \n", "summary": "s"}]})
    assert not [f for f in os.listdir(tmp_path / "o") if f.endswith(".tmp")]  # no partial output left
    assert not os.path.exists(tmp_path / "o" / "test.target")  # the mark of a complete run
    with pytest.raises(Gpt2BpeError, match=r"nowhere\.json: no such file"):
        run({"train": [good], "valid": [good], "test": [good]}, enc=str(tmp_path / "nowhere.json"))
    proc = subprocess.run([sys.executable, "-m", "preprocess.gpt2_bpe", "--jsonl-dir", str(tmp_path / "none"),
                           "--out", str(tmp_path / "o"), "--encoder-json", gpt2_files["encoder.json"],
                           "--vocab-bpe", gpt2_files["vocab.bpe"]], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.strip().startswith("gpt2_bpe: error:") and "no train.jsonl" in proc.stderr


# --- the topic model over a GPT-2 BPE dictionary ----------------------------------------------------


def test_gpt2_symbols_are_decoded_for_the_exclusion_rules(gpt2_files):
    from fairseq.data import Dictionary

    from preprocess.topic_model import excluded_symbols, gpt2_surfaces

    d = Dictionary.load(gpt2_files["dict.txt"])
    bpe = encoder_of(gpt2_files)
    surfaces = gpt2_surfaces(d, bpe)
    ex = excluded_symbols(d, surfaces)
    index = {w: d.index(str(bpe.encoder["\u0120" + w])) for w in ("the", "and", "cat", "market", "ca")}
    assert surfaces[index["the"]] == "the" and surfaces[index["cat"]] == "cat"  # the leading space stripped
    assert ex[index["the"]] and ex[index["and"]]  # stop words
    assert not ex[index["cat"]] and not ex[index["market"]]  # content words
    assert not ex[index["ca"]]  # a word piece with letters is kept, as sentencepiece's "ing" is
    assert ex[d.index(str(bpe.encoder["a"]))] and ex[d.index(str(bpe.encoder["."]))]  # one character, punctuation
    assert ex[d.index("madeupword0000")] and all(ex[: d.nspecial])
    # the ids themselves have no letters: without the mapping every symbol would be dropped
    with pytest.raises(ValueError, match="GPT-2 BPE ids"):
        excluded_symbols(d)
    text_dict = Dictionary()
    for w in ("\u2581the", "\u2581cat"):
        text_dict.add_symbol(w)
    with pytest.raises(ValueError, match="not GPT-2 BPE ids"):
        gpt2_surfaces(text_dict, bpe)


# --- the recipe, end to end ---------------------------------------------------------------------------


def run_recipe(raw, bart, work):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env.update(
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
        PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""),
        OMP_NUM_THREADS="1", WORK=work, ARCH="bart_base_ta", MAX_UPDATE="2", TOPICS="4", NGPU="1", UPDATE_FREQ="1",
        FP16="0", MAX_SRC="60", BATCH="4",
        EXTRA=" ".join(BART_TINY + ["--num-workers", "0", "--log-interval", "1", "--seed", "1"]),
    )
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", "xsum", "bart_ta.sh"), raw, bart], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"recipe failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


@pytest.fixture(scope="module")
def recipe_run(gpt2_files, tmp_path_factory):
    root = tmp_path_factory.mktemp("bart_ta_recipe")
    bart = str(root / "bart")
    os.makedirs(bart)
    for name, path in gpt2_files.items():
        with open(path, "rb") as src, open(os.path.join(bart, name), "wb") as dst:
            dst.write(src.read())
    save_tiny_bart(gpt2_files, bart)
    raw = write_hf_xsum(str(root / "xsum_hf"))
    work = str(root / "work")
    first = run_recipe(raw, bart, work)
    return {"root": root, "raw": raw, "bart": bart, "work": work, "first": first}


@pytest.mark.slow
def test_recipe_generates_every_test_summary_and_scores(recipe_run):
    work = recipe_run["work"]
    out = os.path.join(work, "test.bart_base_ta.beam5.out")
    lines = open(out, encoding="utf-8").read().splitlines()
    hyp_ids = sorted(int(l.split("\t")[0][2:]) for l in lines if l.startswith("H-"))
    assert hyp_ids == list(range(N_TEST))
    assert sum(l.startswith("D-") for l in lines) == N_TEST  # decoded with --bpe gpt2
    assert lines[-1].startswith("Generate test with beam=5")
    rouge = json.load(open(out + ".rouge.json"))
    assert rouge["num_summaries"] == N_TEST and all(0 <= rouge[k] <= 1 for k in ("rouge1", "rouge2", "rougeL"))
    log = open(os.path.join(work, "checkpoints", "bart_base_ta", "train.log")).read()
    assert "initialising encoder.layers.0.self_attn.sia.v_add.weight fresh" in log  # BART restored, TA parameters fresh
    assert re.search(r"num_updates 2\b", log)
    # side data: theta for every example of every split, K = TOPICS
    for split, n in (("train", 24), ("valid", 4), ("test", N_TEST)):
        theta = np.load(os.path.join(work, "bin", f"{split}.theta.npy"))
        # float32 distributions
        assert theta.shape == (n, 4) and fp32_close(theta.sum(1), 1.0, 1.0, OP_ULPS)


@pytest.mark.slow
def test_topic_model_of_the_recipe_uses_the_gpt2_mapping(recipe_run, gpt2_files):
    from fairseq_sum_plugins.features.topic_assistant.similarity import _encoder
    from preprocess.topic_model import PoissonFactorAnalysis, load_dictionary

    data = os.path.join(recipe_run["work"], "bin")
    d = load_dictionary(data)
    model = PoissonFactorAnalysis.load(os.path.join(data, "topic_model.npz"), d)
    bpe = encoder_of(gpt2_files)
    the, cat = (d.index(str(bpe.encoder["\u0120" + w])) for w in ("the", "cat"))
    assert not model.keep[the] and model.keep[cat] and not model.phi[the].any()
    assert model.surface(cat, d) == "cat" and model.gpt2["sha256"]
    # semantic similarity (TA eq. 10) encodes texts with the GPT-2 encoder of the fit
    assert list(_encoder(data, d, model)("the cat")) == [d.index(str(i)) for i in bpe.encode("the cat")]


@pytest.mark.slow
def test_raw_text_through_the_hub_gets_the_same_theta(recipe_run, gpt2_files):
    """BART's hub interface (raw text, --bpe gpt2): the task's provider infers theta from the
    dictionary ids; it equals the theta the recipe wrote for the binarized test split."""
    from fairseq_sum_plugins.models.bart import SumBARTModel

    work, bart = recipe_run["work"], recipe_run["bart"]
    hub = SumBARTModel.from_pretrained(
        os.path.join(work, "checkpoints", "bart_base_ta"), checkpoint_file="checkpoint_best.pt",
        data_name_or_path=os.path.join(work, "bin"), bpe="gpt2",
        gpt2_encoder_json=os.path.join(bart, "encoder.json"), gpt2_vocab_bpe=os.path.join(bart, "vocab.bpe"))
    hub.eval()
    docs = [json.loads(l)["document"] for l in open(os.path.join(work, "jsonl", "test.jsonl"))]
    tokens = [hub.encode(" ".join(doc.split())) for doc in docs]
    assert tokens[0][0] == hub.task.source_dictionary.bos()  # <s> ... </s>: specials, never counted
    theta = hub.task.provide_side_data("theta", tokens)
    # the hub's inference against the recipe's, other batches: float32 rounding of values <= 1
    assert fp32_close(theta, np.load(os.path.join(work, "bin", "test.theta.npy")), 1.0, MODEL_ULPS)
    summaries = hub.sample([" ".join(docs[0].split()), " ".join(docs[1].split())], beam=2, max_len_b=8)
    assert len(summaries) == 2 and all(isinstance(s, str) for s in summaries)


@pytest.mark.slow
def test_recipe_resumes(recipe_run):
    work = recipe_run["work"]
    ckpt = os.path.join(work, "checkpoints", "bart_base_ta", "checkpoint_best.pt")
    out = os.path.join(work, "test.bart_base_ta.beam5.out")
    before = {p: os.path.getmtime(p) for p in (ckpt, out, out + ".rouge.json", os.path.join(work, "bin", "topic_model.npz"))}
    second = run_recipe(recipe_run["raw"], recipe_run["bart"], work)
    for step in ("convert", "gpt2 bpe", "binarize", "topic model", "train", "generate", "score"):
        assert re.search(rf"\] {step}: .* skipped", second.stdout), (step, second.stdout)
    assert {p: os.path.getmtime(p) for p in before} == before


@pytest.mark.parametrize("env, message", [
    (dict(TA="2"), "TA must be 1 or 0, got '2'"),
    (dict(TA="0", ARCH="bart_base_ta"), "TA=0 trains BART without the Topic Assistant: ARCH bart_base_ta is a "
                                        "Topic Assistant model (give bart_base)")])
def test_recipe_refuses_a_bad_ta_setting_by_name(tmp_path, env, message):
    full = {k: v for k, v in os.environ.items() if k not in ("TA", "ARCH", "WORK")}
    full.update(env, WORK=str(tmp_path / "work"))
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", "topic_assistant_bart_run.sh"), "xsum",
                           str(tmp_path / "raw"), str(tmp_path / "bart")], cwd=REPO, env=full,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "work").exists()
