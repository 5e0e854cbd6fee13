"""The recipes end to end, as a user runs them (``bash recipes/<dataset>/<method>.sh RAW``), on CPU:
one recipe per model family (the others by their commands: tests/test_recipe_commands.py), each on a
tiny corpus in its dataset's raw release format (:mod:`corpora`), through convert ->
fairseq-sum-prepare -> fairseq-train -> fairseq-generate -> fairseq-sum-score. Only the recipes' environment variables make the runs small (a few updates of a
one-layer model, ~100 sentencepiece pieces, small beams). Every test checks that each test example
got a summary and that the ROUGE json holds finite scores; the XSum one runs its recipe a second time
and checks that every finished step is skipped."""
import gzip
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import corpora
from helpers import MEM2MEM_ENV, N_TEST, RECIPE_VARS, REPO, STEP, TINY_ENV, TINY_TRANSFORMER, run_recipe, steps  # noqa: F401


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


@pytest.mark.slow
def test_xsum_tp_transformer_and_resume(tmp_path):
    """TP-Transformer (TPT-d) on XSum in the Hugging Face layout; a second run redoes nothing."""
    raw = corpora.write_xsum_hf(tmp_path / "xsum")
    work = tmp_path / "work"
    env = dict(WORK=str(work), ARCH="tp_transformer_small", BATCH="8", BEAMS="1", SPLITS="test", METEOR="0",
               SAVE_INTERVAL="3",
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


def rewrite_split_files(folder, edit):
    """Applies ``edit(split, index, record)`` (in place) to every record of the JSON-lines files of
    ``folder`` (``.txt``, ``.jsonl`` or ``.jsonl.gz``)."""
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        for i, record in enumerate(records):
            edit(name.split(".")[0], i, record)
        with opener(path, "wt", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.slow
def test_pubmed_mem2mem(tmp_path):
    """Mem2Mem on PubMed in Cohan et al.'s release format, with the implicit extraction analysis.
    Articles of 6 sections, the first over 500 words: the recipe keeps App. A.2's 4 sections x 500
    words, and the model (MAX_SENTS / SENT_TOKENS unset) cuts nothing further."""
    import torch

    from preprocess.converter_io import truncate_sentences

    raw = corpora.write_cohan(tmp_path / "pubmed-dataset")
    rng = random.Random(1)

    def lengthen(split, i, record):
        sections = record["sections"]
        sections[0] += [corpora.sentence(rng, 9).lower()[:-1] + " ." for _ in range(60)]  # 600 words more
        sections += [[f"section {k} of {split} {i} ."] for k in (4, 5)]
        record["article_text"] = [s for sec in sections for s in sec]

    rewrite_split_files(raw, lengthen)
    work = tmp_path / "work"
    run_recipe("pubmed/mem2mem.sh", raw, WORK=str(work), **MEM2MEM_ENV)
    check_decoding(work / "test.mem2mem_base.beam4.out")
    with open(work / "implicit_extraction.mem2mem_base" / "scores.json", encoding="utf-8") as f:
        assert json.load(f)["num_docs"] == N_TEST
    with open(os.path.join(raw, "test.txt"), encoding="utf-8") as f:
        sections = [json.loads(line)["sections"] for line in f]
    with open(work / "jsonl" / "test.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line)["document"] for line in f]
    firsts = [truncate_sentences(secs[0], 500) for secs in sections]  # section 0 cut at 500 words
    assert all(sum(len(s.split()) for s in first) == 500 for first in firsts)
    assert docs == [first + [s for sec in secs[1:4] for s in sec] for first, secs in zip(firsts, sections)]
    cfg = torch.load(work / "checkpoints" / "mem2mem_base" / "checkpoint_best.pt", weights_only=False)["cfg"]["model"]
    assert (cfg.max_doc_sentences, cfg.max_sentence_tokens) == (0, 0)


def test_gate_lambda_sweep_refuses_an_unknown_target(tmp_path):
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", "newsroom", "gate_lambda_sweep.sh"), "x.jsonl"],
                          env={**os.environ, "TARGET": "abstract", "WORK": str(tmp_path)}, capture_output=True, text=True)
    assert proc.returncode == 2 and "TARGET must be summary or lead, got 'abstract'" in proc.stderr


@pytest.mark.slow
def test_gate_lambda_sweep_table_has_a_row_per_lambda_with_the_source_gain(tmp_path):
    """recipes/newsroom/gate_lambda_sweep.sh on XSum-style pairs: one model per lambda, and sweep.md
    with sparsity, validation NLL, ROUGE, source gain and distinct summaries for each."""
    rng = random.Random(0)
    pairs = tmp_path / "pairs.jsonl"
    with open(pairs, "w", encoding="utf-8") as f:
        for _ in range(28):
            sents, summary = corpora.example(rng)
            f.write(json.dumps({"document": " ".join(sents), "summary": summary}) + "\n")
    work = tmp_path / "work"
    run_recipe("newsroom/gate_lambda_sweep.sh", pairs, WORK=str(work), LAMBDAS="0 0.1", MAX_UPDATE="2",
               N_TRAIN="16", N_VALID="6", N_TEST="6", VOCAB="120", DIM="16", LAYERS="1", TARGET="lead",
               REFERENCE="1")
    # TARGET=lead: each document's first sentence is its summary, the document is kept whole
    first = [json.loads(line) for line in open(pairs, encoding="utf-8")][16]
    valid = json.loads(open(work / "jsonl" / "valid.jsonl", encoding="utf-8").readline())
    assert valid["document"] == first["document"]
    assert first["document"].startswith(valid["summary"]) and len(valid["summary"]) < len(first["document"])
    rows = [line for line in (work / "sweep.md").read_text().splitlines() if line.startswith(("| 0", "| none"))]
    assert [row.split(" | ")[0] for row in rows] == ["| none", "| 0", "| 0.1"]  # none: the model without gates
    assert rows[0].split(" | ")[1:5] == ["-", "-", "2", "0.0"]  # nothing removed without gates
    for row in rows:
        cells = row.strip("| ").split(" | ")
        assert len(cells) == 11 and cells[3] == "2"  # updates
        assert 0 <= float(cells[4]) <= 100 and math.isfinite(float(cells[5])) and math.isfinite(float(cells[9]))
        assert re.fullmatch(r"[1-6]/6", cells[10])


# ------------------------------------------------------------------ recipes/compare.sh

COMPARE_MODEL = "t5_transformer_small " + TINY_TRANSFORMER
# no torch probe for GPUs (VISIBLE_GPUS=0: a CPU run), 2 updates, one decoding batch
COMPARE_ENV = dict(VISIBLE_GPUS="0", MAX_UPDATE="2", VALID_INTERVAL="2", GEN_BATCH="4", MAX_TOKENS="2000", CURVES="1")
COMPARE_VARS = ("MAX_UPDATE SEED VALID_INTERVAL MAX_TOKENS LR WARMUP BEAM MIN_LEN MAX_LEN_B LENPEN NO_REPEAT "
                "GEN_BATCH TOPICS TRAIN_EXTRA GEN_EXTRA NGPU NNODES NODE_RANK UPDATE_FREQ COPY CURVES").split()


def compare_sh(work, out, *specs, **env):
    """``bash recipes/compare.sh WORK OUT SPECS`` with COMPARE_ENV and ``env``: the CompletedProcess."""
    full_env = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS + COMPARE_VARS}
    full_env.update(TINY_ENV, **COMPARE_ENV)
    full_env.update(env)
    full_env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full_env.get("PATH", "")
    return subprocess.run(["bash", os.path.join(REPO, "recipes", "compare.sh"), str(work), str(out), *specs],
                          cwd=REPO, env=full_env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def compare_work(tmp_path_factory):
    """A data folder of fairseq-sum-prepare (24 / 4 / 4 examples, ~110 pieces)."""
    return corpora.prepared_jsonl_work(tmp_path_factory.mktemp("compare"))


@pytest.fixture(scope="module")
def compared(compare_work):
    """compare.sh with one model, its decoding killed once (a fairseq-generate that stops on an unknown
    flag) and the run launched again: ``(out, train seconds recorded by the first launch)``."""
    out = compare_work.parent / "out"
    first = compare_sh(compare_work, out, f"base={COMPARE_MODEL}", GEN_EXTRA="--no-such-flag")
    assert first.returncode != 0 and "--no-such-flag" in first.stderr
    assert not (out / "base" / "test.out.rouge.json").exists()
    wall = dict(kv.split("=") for kv in (out / "base" / "wall.txt").read_text().split())
    second = compare_sh(compare_work, out, f"base={COMPARE_MODEL}")
    assert second.returncode == 0, second.stderr[-3000:]
    assert steps(second.stdout)[0] == ("train", True)
    return out, wall["train_s"]


@pytest.mark.slow
def test_compare_sh_gives_sum_transformers_the_copy_and_plots_source_gain_over_updates(compared):
    """COPY=1 (default): a sum_transformer spec without --pointer-generator gets it, recorded in its spec;
    CURVES=1: every interval checkpoint kept and its source gain plotted (inspection/source_curve.py)."""
    import torch

    out, _ = compared
    spec = (out / "base" / "run_spec.txt").read_text()
    assert f"train.model={COMPARE_MODEL} --pointer-generator True\n" in spec
    ckpt = torch.load(out / "base" / "checkpoints" / "checkpoint_last.pt", weights_only=False)
    assert ckpt["cfg"]["model"].pointer_generator is True
    curves = json.loads((out / "source_gain.json").read_text())
    assert [p["updates"] for p in curves["base"]] == [2]
    assert (out / "source_gain.png").stat().st_size > 1000


@pytest.mark.parametrize("flags,recorded", [
    ("--pointer-generator=False", "--pointer-generator=False"),
    ("--pointer-generator=0", "--pointer-generator=0"),
    ("--pointer-generator=no", "--pointer-generator=no"),
    ("'--pointer-generator=false'", "'--pointer-generator=false'"),
    ("\"--pointer-generator\" False", "\"--pointer-generator\" False"),
    ("--pointer-generator='False'", "--pointer-generator='False'"),
    ("--pointer-generator False", "--pointer-generator False"),
    ("--dropout 0.2", "--dropout 0.2 --pointer-generator True"),  # no copy flag: COPY=1 adds it
])
@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_compare_sh_copy_leaves_a_spec_that_sets_the_copy_in_any_spelling(compare_work, tmp_path, flags,
                                                                            recorded):
    """COPY=1 appends --pointer-generator True only to a spec without the flag: before, it saw only
    the spelling with a space, appended the flag after --pointer-generator=False, and the later flag
    won (the 'no copy' arm trained with the copy). Read from the spec compare.sh records, shown when
    it refuses a run recorded under another spec (before any work)."""
    out = tmp_path / "out"
    (out / "base").mkdir(parents=True)
    (out / "base" / "run_spec.txt").write_text("train.model=other\n")
    proc = compare_sh(compare_work, out, f"base=t5_transformer_small {flags}", COPY="1")
    assert proc.returncode == 2, proc.stderr
    assert f"  model: 'other' -> 't5_transformer_small {recorded}'\n" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_compare_sh_commits_decodings_that_the_results_index_recomputes(compared, tmp_path):
    """compare.sh leaves each run's decodings (evaluation/decodings.py) and the table's references and
    sources; copied into a results/ tree without checkpoint or generate output, results_index
    recomputes the scorer's ROUGE from them, and a changed decoding fails the check."""
    from ledger import results_index

    out, _ = compared
    manifest = json.loads((out / "base" / "decodings.json").read_text())
    lines = (out / "base" / "decodings.txt").read_text().splitlines()
    refs = (out / "references.txt").read_text().splitlines()
    assert len(lines) == manifest["examples"] == len(refs)
    assert len((out / "sources.txt").read_text().splitlines()) == len(lines)
    assert manifest["checkpoint"] and manifest["data"]
    root = tmp_path / "results"
    shutil.copytree(out, root / "t",
                    ignore=shutil.ignore_patterns("checkpoints", "test.out", "*.log"))
    (root / "tables.json").write_text(json.dumps({"records": [
        {"table": "t", "paper": "recipe", "claim": "c", "data": "d", "updates": 2,
         "models": {"base": {"1": "base"}}}]}))
    assert results_index.main([str(root), "--write"]) == 0
    assert results_index.main([str(root), "--check"]) == 0
    index = json.loads((root / "index.json").read_text())
    rouge = json.loads((out / "base" / "test.out.rouge.json").read_text())
    assert index["records"][0]["models"]["base"]["rouge2"] == [pytest.approx(100 * rouge["rouge2"], abs=100 * results_index.TOLERANCE)]  # tol: the check's
    # the baselines' extracts (OUT/baselines/NAME.txt) are rescored, and the run is compared with Lead-3
    assert (out / "baselines" / "lead3.txt").exists()
    assert index["records"][0]["baselines"]["lead3"]["recomputed"] is True
    assert index["records"][0]["models"]["base"]["vs_lead3"][0]["rouge2"]["p"] > 0
    (root / "t" / "base" / "decodings.txt").write_text("\n".join(["x"] + lines[1:]) + "\n")
    with pytest.raises(SystemExit, match="sha256 of decodings.txt"):
        results_index.main([str(root), "--check"])


@pytest.mark.slow
def test_compare_sh_keeps_the_train_seconds_of_a_launch_killed_while_decoding(compared):
    out, first_train_s = compared
    assert int(first_train_s) >= 1  # fairseq-train's start-up alone takes seconds
    wall = dict(kv.split("=") for kv in (out / "base" / "wall.txt").read_text().split())
    assert wall["train_s"] == first_train_s and wall["train_resumed"] == "0" and int(wall["generate_s"]) >= 1
    row = next(line for line in (out / "results.md").read_text().splitlines() if line.startswith("| `base` |"))
    cells = row.strip("| ").split(" | ")
    assert cells[-3] == first_train_s  # train s (wall), not 0


@pytest.mark.slow
def test_compare_sh_resumes_under_the_same_spec(compared, compare_work, tmp_path):
    """The same spec resumes (every step skipped, compare.sh's source use through the gate
    included), also from a copy of the data folder elsewhere."""
    out, _ = compared
    ckpt = out / "base" / "checkpoints" / "checkpoint_last.pt"
    before = ckpt.stat().st_mtime_ns
    moved = tmp_path / "moved"
    shutil.copytree(compare_work, moved)
    proc = compare_sh(moved, out, f"base={COMPARE_MODEL}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert steps(proc.stdout) == [("train", True), ("generate", True), ("score", True),
                                  ("source use", True), ("baselines", True)]
    assert ckpt.stat().st_mtime_ns == before


@pytest.mark.slow
@pytest.mark.parametrize("spec,env,changed", [
    (COMPARE_MODEL, dict(MAX_UPDATE="3"), "  MAX_UPDATE: '2' -> '3'"),
    (COMPARE_MODEL + " --dropout 0.3", {},
     f"  model: '{COMPARE_MODEL} --pointer-generator True' -> '{COMPARE_MODEL} --dropout 0.3 --pointer-generator True'"),
    (COMPARE_MODEL, dict(COPY="0"), f"  model: '{COMPARE_MODEL} --pointer-generator True' -> '{COMPARE_MODEL}'"),
    (COMPARE_MODEL, dict(LR="1e-3", WARMUP="10"), "  LR: '2e-3' -> '1e-3'\n  WARMUP: '50' -> '10'"),
    (COMPARE_MODEL, dict(TRAIN_EXTRA="--weight-decay 0.1"), "  TRAIN_EXTRA: '' -> '--weight-decay 0.1'"),
    (COMPARE_MODEL, dict(UPDATE_FREQ="2"), "  UPDATE_FREQ: '1' -> '2'"),
])
def test_compare_sh_refuses_a_run_trained_under_another_spec(compared, compare_work, spec, env, changed):
    """A re-run on the same OUT with other training settings stops before any work, naming what changed,
    and leaves the run as it is (before: every step was skipped and results.md stated the new settings)."""
    out, _ = compared
    before = {p: p.stat().st_mtime_ns for p in (out / "base").rglob("*") if p.is_file()}
    proc = compare_sh(compare_work, out, f"base={spec}", **env)
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert f"compare.sh: {out}/base was trained under another spec than this run's:\n{changed}\n" in proc.stderr
    assert f"remove {out}/base to train 'base' again" in proc.stderr
    assert {p: p.stat().st_mtime_ns for p in (out / "base").rglob("*") if p.is_file()} == before
    assert "train:" not in proc.stdout


@pytest.mark.slow
def test_compare_sh_refuses_a_decoding_made_with_other_settings(compared, compare_work):
    out, _ = compared
    proc = compare_sh(compare_work, out, f"base={COMPARE_MODEL}", BEAM="2")
    assert proc.returncode == 2
    assert "test.out was decoded with other settings than this run's:\n  BEAM: '1' -> '2'\n" in proc.stderr
    assert f"remove {out}/base/test.out to decode it again" in proc.stderr


@pytest.mark.slow
def test_compare_sh_refuses_a_run_on_other_data(compared, compare_work, tmp_path):
    out, _ = compared
    other = tmp_path / "other"
    shutil.copytree(compare_work, other)
    with open(other / "bin" / "dict.tgt.txt", "a", encoding="utf-8") as f:
        f.write("extra 1\n")
    proc = compare_sh(other, out, f"base={COMPARE_MODEL}")
    assert proc.returncode == 2 and re.search(r"^  data: '\w+ \(WORK/bin.*' -> '\w+ ", proc.stderr, re.M), proc.stderr


@pytest.mark.slow
def test_compare_sh_refuses_a_run_folder_without_a_recorded_spec(compare_work, tmp_path):
    (tmp_path / "out" / "base" / "checkpoints").mkdir(parents=True)  # e.g. an older compare.sh's run
    proc = compare_sh(compare_work, tmp_path / "out", f"base={COMPARE_MODEL}")
    assert proc.returncode == 2 and f"{tmp_path}/out/base exists without run_spec.txt" in proc.stderr
    assert not (tmp_path / "out" / "run_info.txt").exists()


@pytest.mark.parametrize("specs,message", [
    (["..=t5_transformer_small"], "bad label '..'"),
    (["a/b=t5_transformer_small"], "bad label 'a/b'"),
    (["../x=t5_transformer_small"], "bad label '../x'"),
    (["=t5_transformer_small"], "bad label ''"),
    ([".hidden=t5_transformer_small"], "bad label '.hidden'"),
    (["-x=t5_transformer_small"], "bad label '-x'"),
    (["results.md=t5_transformer_small"], "label 'results.md' is the name of a file compare.sh writes"),
    (["report.html=t5_transformer_small"], "label 'report.html' is the name of a file compare.sh writes"),
    (["sources.txt=t5_transformer_small"], "label 'sources.txt' is the name of a file compare.sh writes"),
    (["t5_transformer_small"], "'t5_transformer_small' is not LABEL=ARCH"),
    (["a= --dropout 0.1"], "no architecture name after 'a='"),
    # these two look both architectures up in fairseq's registry first (a python start each)
    pytest.param(["a=t5_transformer_small", "a=tp_transformer_small"], "label 'a' given twice", marks=pytest.mark.slow),
    pytest.param(["a=t5_transformer_small", "A=tp_transformer_small"], "label 'A' given twice ('a' before it)",
                 marks=pytest.mark.slow),
])
def test_compare_sh_labels_are_names_given_once(compare_work, tmp_path, specs, message):
    """A label names a folder of OUT: '..' or a slash would write outside it, and a label given twice
    would test a model against itself; refused before anything is written."""
    out = tmp_path / "sub" / "out"
    proc = compare_sh(compare_work, out, *specs)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "sub").exists()


@pytest.mark.parametrize("value", ["BASH_VERSINFO[$(touch${IFS}PWNED)]", "a[$(touch PWNED)]", "12; touch PWNED",
                                   "128", 1.5, True, 0, -4, None])
def test_compare_sh_reads_prepare_args_as_data(compare_work, tmp_path, value):
    """options.max_src_tokens reached bash arithmetic unchecked: an array index ran a command. Any value
    but a positive integer is refused, naming the file and key, and nothing runs."""
    work = tmp_path / "work"
    (work / "bin").mkdir(parents=True)
    args = json.loads((compare_work / "bin" / "prepare_args.json").read_text())
    args["options"]["max_src_tokens"] = value
    (work / "bin" / "prepare_args.json").write_text(json.dumps(args))
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", "compare.sh"), str(work), str(tmp_path / "out"),
                           "a=t5_transformer_small"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "VISIBLE_GPUS": "0"})
    assert proc.returncode == 2
    assert f"prepare_args.json: options.max_src_tokens = {value!r} is not a positive integer" in proc.stderr
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("env,message", [
    (dict(MAX_UPDATE="0"), "MAX_UPDATE must be an integer >= 1, got 0"),
    (dict(MAX_UPDATE="1e3"), "MAX_UPDATE must be an integer >= 1, got '1e3'"),
    (dict(VALID_INTERVAL="x"), "VALID_INTERVAL must be an integer >= 1, got 'x'"),
    (dict(WARMUP="0"), "WARMUP must be an integer >= 1, got 0"),  # inverse_sqrt divides by it
    (dict(MAX_UPDATE="a[$(touch PWNED)]"), "MAX_UPDATE must be an integer >= 1, got 'a[$(touch PWNED)]'"),
    (dict(BEAM="4x"), "BEAM must be an integer >= 1, got '4x'"),
    (dict(MAX_LEN_B="-1"), "MAX_LEN_B must be an integer >= 1, got -1"),
    (dict(SEED="1.5"), "SEED must be an integer >= 0, got '1.5'"),
    (dict(LR="0"), "LR must be a positive number, got '0'"),
    (dict(LENPEN="one"), "LENPEN must be a number, got 'one'"),
    (dict(TOPICS="0"), "TOPICS must be an integer >= 1, got 0"),
    (dict(COPY="2"), "COPY must be an integer in 0..1, got 2"),
    (dict(CURVES="yes"), "CURVES must be an integer in 0..1, got 'yes'"),
])
def test_compare_sh_refuses_bad_numbers(compare_work, tmp_path, env, message):
    proc = compare_sh(compare_work, tmp_path / "out", "a=t5_transformer_small", **env)
    assert proc.returncode == 2 and f"compare.sh: {message}" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists() and not (Path(REPO) / "PWNED").exists()


@pytest.mark.parametrize("env,message", [
    (dict(MAX_UPDATE="0"), "MAX_UPDATE must be an integer >= 1, got 0"),  # fairseq: 0 is no limit
    (dict(MAX_UPDATE="-5"), "MAX_UPDATE must be an integer >= 1, got -5"),
    (dict(THREADS="0"), "THREADS must be an integer >= 1, got 0"),  # torch: 0 is every core
    (dict(THREADS="two"), "THREADS must be an integer >= 1, got 'two'"),
    (dict(BEAM="4.0"), "BEAM must be an integer >= 1, got '4.0'"),
    (dict(BATCH="10 "), "BATCH must be an integer >= 1, got '10 '"),
    (dict(PINNED="2"), "PINNED must be an integer in 0..1, got 2"),
    (dict(PINNED="yes"), "PINNED must be an integer in 0..1, got 'yes'"),
])
def test_quickstart_refuses_bad_numbers_before_any_work(tmp_path, env, message):
    full_env = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS + ["MAX_UPDATE", "THREADS", "PINNED"]}
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", "aclsum", "quickstart.sh"), str(tmp_path / "w")],
                          cwd=REPO, env={**full_env, **env}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and f"quickstart.sh: {message}\n" in proc.stderr, proc.stderr
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("script,env,message", [
    ("xsum/tp_transformer.sh", dict(VOCAB="abc"), "tp_transformer_run.sh: VOCAB must be an integer >= 1, got 'abc'"),
    ("xsum/transformer_ta.sh", dict(TOPICS_N="0"), "topic_assistant_run.sh: TOPICS_N must be an integer >= 1, got 0"),
    ("pubmed/mem2mem.sh", dict(EPOCHS="0"), "mem2mem_run.sh: EPOCHS must be an integer >= 1, got 0"),
    ("cnn_dm/etads.sh", dict(PAPER_GPUS="x[$(echo RAN >&2)]"), "etads.sh: PAPER_GPUS must be an integer >= 1, got 'x[$(echo RAN >&2)]'"),
    ("newsroom/transformer_gated.sh", dict(GATE_WARMUP="-1"), "transformer_gated.sh: GATE_WARMUP must be an integer >= 0, got -1"),
    ("newsroom/gate_lambda_sweep.sh", dict(DIM="1.5"), "gate_lambda_sweep.sh: DIM must be an integer >= 1, got '1.5'"),
])
def test_recipes_refuse_bad_numbers_before_any_work(tmp_path, script, env, message):
    full_env = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS}
    full_env.update(TINY_ENV, VISIBLE_GPUS="0", WORK=str(tmp_path / "w"), **env)
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", script), str(tmp_path / "raw"), str(tmp_path / "aux")],
                          cwd=REPO, env=full_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and f"{message}\n" in proc.stderr, proc.stderr
    assert not (tmp_path / "w").exists() and "RAN" not in proc.stderr.replace(message, "")
