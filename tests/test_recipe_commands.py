"""The recipes by the commands they run: each recipe runs as a user runs it (``bash recipes/...``), with
every console script and ``python`` replaced by a stand-in that records its command line and does
nothing, so the test sees the convert -> prepare -> train -> generate -> score commands (and the
analyses) with their flags in seconds. One recipe per model family runs end to end in
tests/test_recipes.py, tests/test_bart_ta_recipe.py and tests/test_t5_recipe.py; what the commands
do is tested where they are implemented (the converters, the models, the scorer, the analyses)."""
import os
import subprocess

import pytest

import corpora
from helpers import MEM2MEM_ENV, N_TEST, RECIPE_VARS, TINY_ENV, TINY_TRANSFORMER

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAND_INS = ("python", "python3", "fairseq-sum-prepare", "fairseq-train", "fairseq-generate", "fairseq-sum-score",
             "fairseq-preprocess")
# records its command line; fairseq-sum-prepare also leaves OUT/bin, the folder the next steps name;
# fairseq-train leaves the checkpoints of --keep-best-checkpoints named in $BEST_LOSSES, a --json of
# fairseq-sum-score or paper_tables is left empty, and paper_tables pick-lenpen answers $PICK
RECORD = """#!/usr/bin/env bash
{ printf %s "${0##*/}"; printf "\\t%s" "$@"; printf "\\n"; } >> "$RECIPE_COMMANDS"
prog=${0##*/}
if [ "$prog" = python ] && [ "${3:-}" = pick-lenpen ]; then echo "${PICK:-0.8}"; fi
while [ $# -gt 1 ]; do
  case $prog:$1 in
    fairseq-sum-prepare:--out) mkdir -p "$2/bin" ;;
    fairseq-sum-score:--json) : > "$2" ;;
    fairseq-train:--save-dir) mkdir -p "$2"; for l in ${BEST_LOSSES:-}; do : > "$2/checkpoint.best_loss_$l.pt"; done ;;
  esac
  shift
done
"""


# the recipes' variables that helpers.RECIPE_VARS does not list yet: not inherited either
NEW_VARS = "NAME METEOR SPLITS SCORER COVERAGE_WEIGHT COVERAGE_BETA LENPENS TOP_K SWEEP_SUBSET SWEEP_THRESHOLDS".split()


def recipe_commands(tmp_path, script, *args, **env):
    """``[[program, arg, ...], ...]`` that ``bash recipes/SCRIPT ARGS`` runs, in order, and its stdout."""
    bin_dir = tmp_path / "stand_ins"
    bin_dir.mkdir(exist_ok=True)
    for name in STAND_INS:
        (bin_dir / name).write_text(RECORD)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "commands.tsv"
    full_env = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS + NEW_VARS}
    full_env.update(TINY_ENV, VISIBLE_GPUS="0", RECIPE_COMMANDS=str(log), **env)
    full_env["PATH"] = str(bin_dir) + os.pathsep + full_env.get("PATH", "")
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", script), *map(str, args)], cwd=REPO, env=full_env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{script} exited with {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line.split("\t") for line in lines], proc.stdout


def flag(cmd, name):
    """The value after ``name`` in ``cmd`` (the last one when repeated)."""
    values = [cmd[i + 1] for i, arg in enumerate(cmd[:-1]) if arg == name]
    assert values, f"{name} not in {' '.join(cmd)}"
    return values[-1]


def only(commands, program, module=None):
    found = [c for c in commands if c[0] == program and (module is None or c[1:3] == ["-m", module])]
    assert len(found) == 1, (program, module, [" ".join(c) for c in commands])
    return found[0]


def test_pubmed_ablation_decoder_memory_row(tmp_path):
    """Table 2's "+ Decoder Mem" row: mem2mem_base without the encoder memory (M_D from zeros, with
    writes); its implicit extraction is asked to skip a model without memory (what it then does:
    tests/test_mem2mem.py::test_implicit_extraction_cli_without_encoder_memory)."""
    raw = corpora.write_cohan(tmp_path / "pubmed-dataset")
    work = tmp_path / "work"
    commands, _ = recipe_commands(tmp_path, "pubmed/ablation.sh", raw, "dec_mem", WORK=str(work), **MEM2MEM_ENV)
    train = only(commands, "fairseq-train")
    assert flag(train, "--arch") == "mem2mem_base" and flag(train, "--save-dir") == str(work / "checkpoints" /
                                                                                        "ablation_dec_mem")
    assert flag(train, "--memory-encoder") == "False" and flag(train, "--memory-transfer") == "False"
    assert "--memory-decoder" not in train  # the default: decoder memory with writes
    generate = only(commands, "fairseq-generate")
    assert flag(generate, "--path") == str(work / "checkpoints" / "ablation_dec_mem" / "checkpoint_best.pt")
    assert only(commands, "fairseq-sum-score")[1:3] == ["--generate-output", str(work / "test.ablation_dec_mem.beam4.out")]
    extraction = only(commands, "python", "fairseq_sum_plugins.inspection.implicit_extraction")
    assert "--skip-without-memory" in extraction and flag(extraction, "--out") == str(work /
                                                                                  "implicit_extraction.ablation_dec_mem")


def test_newsroom_hred_long_references(tmp_path):
    """HRED on Newsroom, tested on the abstractive subset: references are kept up to MAX_TGT = 200
    pieces and every position limit covers them (no example skipped in training, none refused by
    fairseq-generate), while decoded summaries stop at 60 pieces."""
    raw = corpora.write_newsroom(tmp_path / "newsroom", sizes={"test": 3 * N_TEST})
    work = tmp_path / "work"
    env = {**MEM2MEM_ENV, "MAX_SRC": "4000"}
    commands, _ = recipe_commands(tmp_path, "newsroom/hred.sh", raw, WORK=str(work), **env)
    convert = only(commands, "python", "preprocess.newsroom_to_jsonl")
    assert flag(convert, "--density-bin") == "abstractive" and flag(convert, "--density-bin-splits") == "test"
    prepare = only(commands, "fairseq-sum-prepare")
    assert flag(prepare, "--max-tgt-tokens") == "200" and flag(prepare, "--max-src-tokens") == "4000"
    train, generate = only(commands, "fairseq-train"), only(commands, "fairseq-generate")
    assert flag(train, "--arch") == "hred_base"
    for cmd in (train, generate):
        assert flag(cmd, "--max-target-positions") == "201" and flag(cmd, "--max-source-positions") == "4001"
    assert flag(generate, "--max-len-b") == "60" and flag(generate, "--beam") == "4"
    assert not [c for c in commands if "implicit_extraction" in " ".join(c)]  # HRED has no memory


def test_cnndm_etads_raw_stories(tmp_path):
    """ETADS on the raw CNN / Daily Mail .story files with abisee's url lists: the stories converter,
    etads_base with focus attention and saliency selection, and decoding with the GNMT length and
    coverage penalties."""
    stories, url_lists = corpora.write_cnndm_stories(tmp_path / "cnndm")
    work = tmp_path / "work"
    commands, _ = recipe_commands(tmp_path, "cnn_dm/etads.sh", " ".join(stories), url_lists, WORK=str(work),
                                  BEAM="2", EXTRA=TINY_TRANSFORMER)
    convert = only(commands, "python", "preprocess.cnndm_to_jsonl")
    assert flag(convert, "--url-lists") == str(url_lists)
    assert convert[convert.index("--stories-dir") + 1: convert.index("--url-lists")] == [str(s) for s in stories]
    train = only(commands, "fairseq-train")
    assert flag(train, "--arch") == "etads_base" and flag(train, "--label-smoothing") == "0"
    generate = only(commands, "fairseq-generate")
    assert flag(generate, "--beam") == "2" and "--lenpen-gnmt" in generate and "--coverage-penalty" in generate
    assert flag(generate, "--path") == str(work / "checkpoints" / "etads_base" / "checkpoint_best.pt")


def test_newsroom_transformer_gated(tmp_path):
    """Information selection on the Newsroom release: one decoding at THRESHOLD, the source use of
    that model and the sweep over the pruning thresholds."""
    raw = corpora.write_newsroom(tmp_path / "newsroom")
    work = tmp_path / "work"
    commands, _ = recipe_commands(tmp_path, "newsroom/transformer_gated.sh", raw, WORK=str(work),
                                  ARCH="transformer_gated_small", THRESHOLD="0", TEST_SUBSET=str(N_TEST),
                                  EXTRA=TINY_TRANSFORMER)
    train = only(commands, "fairseq-train")
    assert flag(train, "--arch") == "transformer_gated_small" and flag(train, "--gate-l1-weight") == "0.03"
    ckpt = flag(train, "--save-dir") + "/checkpoint_best.pt"
    generate = only(commands, "fairseq-generate")
    assert generate[1] == str(work / "bin") and flag(generate, "--path") == ckpt
    assert flag(generate, "--model-overrides") == "{'gate_threshold': 0}"
    use = only(commands, "python", "fairseq_sum_plugins.inspection.source_use")
    assert flag(use, "--path") == ckpt and flag(use, "--max-documents") == str(N_TEST)
    assert flag(use, "--generate-output") == str(work / "test.transformer_gated_small.l0.03.t0.out")
    sweep = only(commands, "python", "fairseq_sum_plugins.inspection.gate_sweep")  # thresholds 0..0.2: its default
    assert flag(sweep, "--path") == ckpt and flag(sweep, "--split") == "test"
    assert flag(sweep, "--max-documents") == str(N_TEST)


def test_xsum_transformer_ta_raw_bbc(tmp_path):
    """Transformer + Topic Assistant on the raw BBC extraction of XSum with the official split file:
    the topic model is fitted on the prepared data and the model reads its theta side data."""
    raw, split_file = corpora.write_xsum_raw(tmp_path / "xsum")
    work = tmp_path / "work"
    commands, _ = recipe_commands(tmp_path, "xsum/transformer_ta.sh", raw, split_file, WORK=str(work),
                                  ARCH="transformer_ta_small", TOPICS="8", TOPICS_N="2", EXTRA=TINY_TRANSFORMER,
                                  BEST_LOSSES="3.30 3.10 12.0 3.20", PICK="0.7")
    convert = only(commands, "python", "preprocess.xsum_to_jsonl")
    assert flag(convert, "--raw-dir") == str(raw) and flag(convert, "--split-file") == str(split_file)
    fit = only(commands, "python", "preprocess.topic_model")
    assert fit[3] == "fit" and flag(fit, "--topics") == "8"
    train = only(commands, "fairseq-train")
    assert flag(train, "--arch") == "transformer_ta_small" and flag(train, "--ta-topics-n") == "2"
    assert flag(train, "--keep-best-checkpoints") == "3"
    generates = [c for c in commands if c[0] == "fairseq-generate"]
    for cmd in [train] + generates:
        assert flag(cmd, "--side-data") == "theta"
    # App. B: alpha tuned on validation over 0.6 .. 1 with checkpoint_best, then the top-3
    # checkpoints by validation loss (the lowest three, 12.0 left out) decode the test set at it
    valid = [c for c in generates if flag(c, "--gen-subset") == "valid"]
    assert [flag(c, "--lenpen-gnmt") for c in valid] == ["0.6", "0.7", "0.8", "0.9", "1.0"]
    assert {flag(c, "--path") for c in valid} == {str(work / "checkpoints" / "transformer_ta_small" / "checkpoint_best.pt")}
    test = [c for c in generates if flag(c, "--gen-subset") == "test"]
    assert [os.path.basename(flag(c, "--path")) for c in test] == [
        "checkpoint.best_loss_3.10.pt", "checkpoint.best_loss_3.20.pt", "checkpoint.best_loss_3.30.pt"]
    assert {flag(c, "--lenpen-gnmt") for c in test} == {"0.7"} and {flag(c, "--beam") for c in test} == {"5"}
    tables = [c[3] for c in commands if c[:3] == ["python", "-m", "ledger.paper_tables"]]
    assert tables == ["pick-lenpen", "mean"]
    mean = next(c for c in commands if c[3:4] == ["mean"])
    assert mean[4] == str(work / "transformer_ta_small" / "test.mean.json") and len(mean) == 5 + 3
    assert (work / "test.transformer_ta_small.beam5.out").exists()


def test_xsum_tp_transformer_decodes_dev_and_test_at_both_beams_with_meteor(tmp_path):
    """TP-Transformer Table 2: dev and test, beam 1 and 4, ROUGE and METEOR 1.5 (the jar's
    implementation; METEOR=nltk where it is not installed), under NAME."""
    raw = corpora.write_xsum_hf(tmp_path / "xsum")
    work = tmp_path / "work"
    commands, _ = recipe_commands(tmp_path, "xsum/tp_transformer.sh", raw, WORK=str(work), NAME="tptd",
                                  ARCH="tp_transformer_small", EXTRA=TINY_TRANSFORMER)
    assert flag(only(commands, "fairseq-train"), "--save-dir") == str(work / "checkpoints" / "tptd")
    generates = [c for c in commands if c[0] == "fairseq-generate"]
    assert [(flag(c, "--gen-subset"), flag(c, "--beam")) for c in generates] == [
        ("valid", "1"), ("valid", "4"), ("test", "1"), ("test", "4")]
    scores = [c for c in commands if c[0] == "fairseq-sum-score"]
    assert [flag(c, "--generate-output") for c in scores] == [
        str(work / f"{split}.tptd.beam{beam}.out") for split in ("valid", "test") for beam in (1, 4)]
    assert all("--meteor" in c and flag(c, "--meteor-impl") == "1.5" for c in scores)
    (tmp_path / "again").mkdir()
    commands, _ = recipe_commands(tmp_path / "again", "xsum/tp_transformer.sh", raw, WORK=str(work), METEOR="0",
                                  SPLITS="test", BEAMS="4", EXTRA=TINY_TRANSFORMER)
    scores = [c for c in commands if c[0] == "fairseq-sum-score"]
    assert len(scores) == 1 and "--meteor" not in scores[0]


@pytest.mark.parametrize("env,message", [
    (dict(METEOR="1.4"), "METEOR must be 1.5, nltk or 0, got '1.4'"),
    (dict(SPLITS="dev"), "SPLITS: unknown split 'dev'"),
    (dict(BEAMS="0"), "BEAM must be an integer >= 1, got 0"),
    (dict(NAME="../x"), "NAME must be letters"),
])
def test_tp_transformer_refuses_bad_settings(tmp_path, env, message):
    full = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS + NEW_VARS}
    full.update(TINY_ENV, VISIBLE_GPUS="0", **env)
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", "xsum", "tp_transformer.sh"), str(tmp_path)],
                          cwd=REPO, env=full, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-500:]


def test_mem2mem_trains_with_see_et_al_coverage_loss(tmp_path):
    """HRED and Mem2Mem are See et al.'s pointer-generator with coverage: the coverage loss is on
    with weight 1; COVERAGE_WEIGHT=0 turns it off."""
    raw = corpora.write_cohan(tmp_path / "pubmed-dataset")
    commands, _ = recipe_commands(tmp_path, "pubmed/hred.sh", raw, WORK=str(tmp_path / "w"), **MEM2MEM_ENV)
    train = only(commands, "fairseq-train")
    assert flag(train, "--coverage-loss") == "True" and flag(train, "--coverage-loss-weight") == "1"
    (tmp_path / "again").mkdir()
    commands, _ = recipe_commands(tmp_path / "again", "pubmed/hred.sh", raw, WORK=str(tmp_path / "w2"),
                                  COVERAGE_WEIGHT="0", **MEM2MEM_ENV)
    train = only(commands, "fairseq-train")
    assert flag(train, "--coverage-loss") == "False" and "--coverage-loss-weight" not in train


def test_cnndm_etads_decodes_with_the_papers_coverage_weight_and_scores_with_rouge155(tmp_path):
    """ETADS §4.1: coverage weight 1 (GNMT's wu penalty, beta 1) beside alpha 0.9, beam 10, min
    length 35; Table 2's official ROUGE script with precision and recall (Tables 5-6)."""
    stories, url_lists = corpora.write_cnndm_stories(tmp_path / "cnndm")
    work = tmp_path / "work"
    commands, _ = recipe_commands(tmp_path, "cnn_dm/etads.sh", " ".join(stories), url_lists, WORK=str(work),
                                  NAME="etads_basic", ARCH="etads_baseline", EXTRA=TINY_TRANSFORMER)
    generate = only(commands, "fairseq-generate")
    assert (flag(generate, "--coverage-penalty"), flag(generate, "--coverage-penalty-type")) == ("1", "wu")
    assert (flag(generate, "--lenpen-gnmt"), flag(generate, "--beam"), flag(generate, "--min-len")) == ("0.9", "10", "35")
    assert flag(generate, "--path") == str(work / "checkpoints" / "etads_basic" / "checkpoint_best.pt")
    score = only(commands, "fairseq-sum-score")
    assert flag(score, "--scorer") == "official" and flag(score, "--report") == "prf"
    assert flag(score, "--generate-output") == str(work / "test.etads_basic.beam10.out")


def test_topic_assistant_baseline_trains_without_the_topic_side_data(tmp_path):
    """The Transformer of Tables 2-4 (t5_transformer_*) on the Topic Assistant's data: no theta (the
    model refuses side data it does not read), the same decoding protocol."""
    raw = corpora.write_xsum_hf(tmp_path / "xsum")
    commands, _ = recipe_commands(tmp_path, "xsum/transformer_ta.sh", raw, WORK=str(tmp_path / "w"),
                                  ARCH="t5_transformer_small", TOPICS="8", EXTRA=TINY_TRANSFORMER,
                                  BEST_LOSSES="3.1", PICK="0.6", LENPENS="0.6")
    for cmd in [only(commands, "fairseq-train")] + [c for c in commands if c[0] == "fairseq-generate"]:
        assert "--side-data" not in cmd and "--ta-topics-n" not in cmd
