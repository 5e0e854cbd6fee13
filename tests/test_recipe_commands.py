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
# records its command line; fairseq-sum-prepare also leaves OUT/bin, the folder the next steps name
RECORD = """#!/usr/bin/env bash
{ printf %s "${0##*/}"; printf "\\t%s" "$@"; printf "\\n"; } >> "$RECIPE_COMMANDS"
if [ "${0##*/}" = fairseq-sum-prepare ]; then
  while [ $# -gt 1 ]; do if [ "$1" = --out ]; then mkdir -p "$2/bin"; fi; shift; done
fi
"""


def recipe_commands(tmp_path, script, *args, **env):
    """``[[program, arg, ...], ...]`` that ``bash recipes/SCRIPT ARGS`` runs, in order, and its stdout."""
    bin_dir = tmp_path / "stand_ins"
    bin_dir.mkdir(exist_ok=True)
    for name in STAND_INS:
        (bin_dir / name).write_text(RECORD)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "commands.tsv"
    full_env = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS}
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
    extraction = only(commands, "python", "fairseq_sum_plugins.analysis.implicit_extraction")
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
    use = only(commands, "python", "fairseq_sum_plugins.analysis.source_use")
    assert flag(use, "--path") == ckpt and flag(use, "--max-examples") == str(N_TEST)
    assert flag(use, "--generate-output") == str(work / "test.transformer_gated_small.l0.03.t0.out")
    sweep = only(commands, "python", "fairseq_sum_plugins.analysis.gate_sweep")  # thresholds 0..0.2: its default
    assert flag(sweep, "--path") == ckpt and flag(sweep, "--gen-subset") == "test"
    assert flag(sweep, "--max-examples") == str(N_TEST)


def test_xsum_transformer_ta_raw_bbc(tmp_path):
    """Transformer + Topic Assistant on the raw BBC extraction of XSum with the official split file:
    the topic model is fitted on the prepared data and the model reads its theta side data."""
    raw, split_file = corpora.write_xsum_raw(tmp_path / "xsum")
    work = tmp_path / "work"
    commands, _ = recipe_commands(tmp_path, "xsum/transformer_ta.sh", raw, split_file, WORK=str(work),
                                  ARCH="transformer_ta_small", TOPICS="8", TOPICS_N="2", EXTRA=TINY_TRANSFORMER)
    convert = only(commands, "python", "preprocess.xsum_to_jsonl")
    assert flag(convert, "--raw-dir") == str(raw) and flag(convert, "--split-file") == str(split_file)
    fit = only(commands, "python", "preprocess.topic_model")
    assert fit[3] == "fit" and flag(fit, "--topics") == "8"
    train, generate = only(commands, "fairseq-train"), only(commands, "fairseq-generate")
    assert flag(train, "--arch") == "transformer_ta_small" and flag(train, "--ta-topics-n") == "2"
    for cmd in (train, generate):
        assert flag(cmd, "--side-data") == "theta"
