"""recipes/aclsum/quickstart.sh: the run's identity holds every setting that changes the bits.

fairseq's commands and the slow measurements are replaced by stubs on PATH (each logs its call and
writes what the next step reads), so the recipe's own logic runs in seconds: which steps it skips on
a re-run.
"""

import json
import os
import re
import stat
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = re.compile(r"^\[\d\d:\d\d:\d\d\] ([a-z]+): (.*)$", re.M)

STUB = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$STUB_LOG"
json=; prev=
for a in "$@"; do [ "$prev" = --json ] && json=$a; prev=$a; done
case $(basename "$0") in
  fairseq-train) echo "training" ;;
  fairseq-generate) echo "Generate test with beam=4: BLEU4 = 0" ;;
  fairseq-sum-score) echo '{"rouge1": 0.25, "rouge2": 0.05, "rougeL": 0.22,
    "specificity": {"own": 5, "other": 1, "delta": 4, "p": 0.001}}' > "$json" ;;
esac
"""
PYTHON = """#!/usr/bin/env bash
if [ "$1" = -m ] && [[ $2 == fairseq_sum_plugins.inspection.source_use ||
                       $2 == fairseq_sum_plugins.evaluation.baselines.systems ]]; then
  echo "$2 $*" >> "$STUB_LOG"
  json=; outs=; prev=
  for a in "$@"; do [ "$prev" = --json ] && json=$a; [ "$prev" = --outputs ] && outs=$a; prev=$a; done
  [ -z "$outs" ] || { mkdir -p "$outs" && echo "lead" > "$outs/lead3.txt"; }
  if [ "$2" = fairseq_sum_plugins.inspection.source_use ]; then
    echo '{"gain": 0.6, "distinct": 100, "hypotheses": 100, "nll_own": 8.0}' > "$json"
  else
    echo '{"documents": 100, "random_delta": 3.0, "bag_of_pieces": {"nll": 9.0},
           "systems": {}}' > "$json"
  fi
  exit 0
fi
exec {real} "$@"
"""


@pytest.fixture
def stubbed(tmp_path):
    """(env, WORK, log file): stubs of fairseq-train / -generate / fairseq-sum-score and of the
    python modules source_use and baselines; WORK converted and prepared (files the recipe's skips
    look for).
    """
    bin_dir, work, log = tmp_path / "stubs", tmp_path / "work", tmp_path / "calls.log"
    bin_dir.mkdir()
    for name, text in [
        ("fairseq-train", STUB),
        ("fairseq-generate", STUB),
        ("fairseq-sum-score", STUB),
        ("python", PYTHON.replace("{real}", sys.executable)),
    ]:
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod((bin_dir / name).stat().st_mode | stat.S_IEXEC)
    (work / "jsonl").mkdir(parents=True)
    (work / "jsonl" / "test.jsonl").write_text("{}\n")
    (work / "bin").mkdir()
    (work / "bin" / "prepare_args.json").write_text(json.dumps({"options": {"vocab_size": 8000}}))
    (work / "bin" / "dict.src.txt").write_text("a 1\n")
    keep = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "ARCH",
            "MAX_UPDATE",
            "BEAM",
            "BATCH",
            "THREADS",
            "PINNED",
            "MKL_CBWR",
            "ATEN_CPU_CAPABILITY",
        )
    }
    env = {**keep, "PATH": f"{bin_dir}{os.pathsep}{keep['PATH']}", "STUB_LOG": str(log)}
    # the spec records the recipe's convert and prepare steps leave beside their outputs
    # (recipes/common.sh step_gate): without them a made output is refused as of unknown origin
    gate = [sys.executable, "-m", "fairseq_sum_plugins.cli.run_spec", "gate"]
    clean = {k: v for k, v in keep.items() if k not in ("SMOKE", "PRESET", "FORCE")}
    for step, target, inputs, flags in [
        ("convert", f"{work}/jsonl/", ["RAW=ACLSum"], ["aclsum"]),
        ("prepare", f"{work}/bin/", [f"jsonl={work}/jsonl"],
         "--vocab-size 8000 --max-src-tokens 512 --max-tgt-tokens 256 --seed 1 --num-threads 1".split()),
    ]:
        subprocess.run(gate + [step, target, "--complete", "0", "--input", *inputs, "--", *flags],
                       cwd=REPO, env=clean, check=True, capture_output=True)
    return env, work, log


def quickstart(env, work, **settings):
    proc = subprocess.run(
        ["bash", os.path.join(REPO, "recipes", "aclsum", "quickstart.sh"), str(work)],
        cwd=REPO,
        env={**env, **settings},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict(STEP.findall(proc.stdout)), proc.stdout


@pytest.mark.parametrize(
    "first,second,retrains",
    [
        (dict(THREADS="2"), dict(THREADS="1"), True),  # 1 and 2 threads train other parameters
        (dict(PINNED="1"), dict(PINNED="0"), True),
        (dict(BATCH="10"), dict(BATCH="5"), False),  # the same checkpoint, decoded anew
        (dict(BEAM="4"), dict(BEAM="2"), False),
    ],
)
@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_a_rerun_with_a_changed_setting_does_not_reuse_a_finished_run(
    stubbed, first, second, retrains
):
    """Before: the checkpoint was named by ARCH, MAX_UPDATE and PINNED only, the decoding also by
    BEAM: a re-run with THREADS=1 reused the THREADS=2 checkpoint ("finished, skipped"), one with
    BATCH=5 the
    BATCH=10 decoding."""
    env, work, _ = stubbed
    steps, _ = quickstart(env, work, **first)
    assert not steps["train"].endswith("skipped") and not steps["generate"].endswith("skipped")
    again, _ = quickstart(env, work, **first)
    assert again["train"].endswith("finished, skipped") and again["generate"].endswith(
        "exists, skipped"
    )
    changed, _ = quickstart(env, work, **second)
    assert changed["train"].endswith("skipped") is not retrains
    assert not changed["generate"].endswith("skipped")
    assert len(list((work / "checkpoints").iterdir())) == (2 if retrains else 1)


@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_the_run_records_its_spec_and_prints_the_verdict_last(stubbed):
    env, work, log = stubbed
    steps, stdout = quickstart(env, work, THREADS="2", BATCH="7")
    (ckpt,) = (work / "checkpoints").iterdir()
    spec = (ckpt / "run_spec.txt").read_text()
    assert (
        "train.THREADS=2\n" in spec
        and "train.PINNED=1\n" in spec
        and "train.ATEN_CPU_CAPABILITY=default\n" in spec
    )
    assert "--pointer-generator True" in spec and "train.torch=" in spec
    (out_spec,) = work.glob("test.*.out.spec.txt")
    assert out_spec.read_text().startswith(spec) and "decode.BATCH=7\n" in out_spec.read_text()
    assert ".t2.pinned1." in ckpt.name and ".batch7." in out_spec.name
    assert "--specificity" in log.read_text() and "evaluation.baselines.systems --data" in log.read_text()
    last = stdout.rstrip().splitlines()[-1]
    assert last.startswith("[quickstart] specific to its document: ")
    assert "against Lead-3: not measured (" in last  # the stub's decoding has no H- lines
