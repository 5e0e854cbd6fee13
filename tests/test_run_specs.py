"""Run folders that know what made them (fairseq_sum_plugins/cli/run_spec.py, recipes/common.sh
step_gate): every step records its spec beside its output and a re-run under another spec is
refused naming the difference, or redone with FORCE=1; tables say SMOKE when a run they show was
made under SMOKE=1; a decoding is matched to its data by content, from any working folder, whatever
spaces its path holds."""
import json
import os
import shutil
import subprocess
import sys
import types

import pytest

from fairseq_sum_plugins.cli import run_spec as R
from fairseq_sum_plugins.scoring import score_inputs as S
from helpers import write_prepared

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a fake step through common.sh's step_gate: OUT made from IN with --flag FLAG; TRAIN=1 makes it a
# training (a folder, resumed from its partial "checkpoint_last.pt", done at ".done")
FAKE_STEP = r"""
source "$REPO/recipes/common.sh"
fake() {
  local out=$1 complete=0
  [ -f "$out" ] && complete=1
  if ! step_gate fake "$out" "$complete" --input "in=$IN" -- --flag "$FLAG"; then
    log "fake: $out exists, skipped"; return
  fi
  echo "made from $(cat "$IN") with $FLAG ($STEP_ACTION)" > "$out"
}
fake_train() {
  local save=$1 complete=0 partial=0
  [ -f "$save/.done" ] && complete=1
  [ -f "$save/checkpoint_last.pt" ] && partial=1
  if ! step_gate train "$save/" "$complete" --partial "$partial" --resumes --input "in=$IN" -- --flag "$FLAG"; then
    log "train: $save finished, skipped"; return
  fi
  mkdir -p "$save"  # what fairseq-train would resume from, after the gate
  echo "resumed=$([ -f "$save/checkpoint_last.pt" ] && echo 1 || echo 0)" > "$save/resumed"
  touch "$save/checkpoint_last.pt"
  [ -n "${STOP:-}" ] || touch "$save/.done"
}
fake_make() {  # fake_make OUT --flag FLAG: OUT from IN; FAIL=1: fails before writing
  [ -z "${FAIL:-}" ] || return 3
  { cat "$IN"; echo "flag $3"; } > "$1"
}
fake_gated() { gated fake "$1" "$1" --input "in=$IN" --root "$(dirname "$1")" -- fake_make "$1" --flag "$FLAG"; }
"$@"
"""


@pytest.fixture
def step(tmp_path):
    script = tmp_path / "fake_step.sh"
    script.write_text(FAKE_STEP)
    (tmp_path / "in.txt").write_text("input one\n")

    def run(*args, **env):
        full = {k: v for k, v in os.environ.items() if k not in ("SMOKE", "PRESET", "FORCE", "STOP")}
        full.update(REPO=REPO, IN=str(tmp_path / "in.txt"), FLAG="a",
                    PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
        full.update(env)
        return subprocess.run(["bash", str(script), *map(str, args)], cwd=tmp_path, env=full,
                              capture_output=True, text=True, timeout=60)
    return run


def test_a_step_is_skipped_under_its_spec_and_refused_under_another_naming_the_field(step, tmp_path):
    out = tmp_path / "out dir" / "x.txt"  # a path with a space
    out.parent.mkdir()
    assert step("fake", out, SMOKE="1").returncode == 0
    assert out.read_text() == "made from input one with a (run)\n"
    record = json.loads((tmp_path / "out dir" / "x.txt.spec.json").read_text())
    assert record["SMOKE"] == "1" and record["flags"] == ["--flag", "a"]
    again = step("fake", out, SMOKE="1")
    assert again.returncode == 0 and "exists, skipped" in again.stdout
    # the defect: a re-run without SMOKE took the smoke output as its own
    proc = step("fake", out)
    assert proc.returncode == 2
    assert f"{out} was made with SMOKE=1, this run has SMOKE=0: use another OUT, or FORCE=1" in proc.stderr
    proc = step("fake", out, SMOKE="1", PRESET="base")
    assert proc.returncode == 2 and "made with PRESET=, this run has PRESET=base" in proc.stderr
    proc = step("fake", out, SMOKE="1", FLAG="b")
    assert proc.returncode == 2 and "made with other flags: 'a' -> 'b'" in proc.stderr
    (tmp_path / "in.txt").write_text("input two\n")  # the input's content, not its name
    proc = step("fake", out, SMOKE="1")
    # the recorded input by its name (a record holds no machine path), this run's as given
    assert proc.returncode == 2 and "made from input in in.txt (sha256:" in proc.stderr
    assert f"this run's is {tmp_path}/in.txt (sha256:" in proc.stderr
    assert out.read_text() == "made from input one with a (run)\n"  # refused: nothing touched
    forced = step("fake", out, FORCE="1")
    assert forced.returncode == 0 and "FORCE=1" in forced.stdout
    assert out.read_text() == "made from input two with a (force)\n"
    assert json.loads((tmp_path / "out dir" / "x.txt.spec.json").read_text())["SMOKE"] == "0"
    assert "exists, skipped" in step("fake", out).stdout
    assert "FORCE must be 0 or 1" in step("fake", out, FORCE="yes").stderr


def test_an_output_without_a_record_or_with_a_broken_one_is_refused_unless_forced(step, tmp_path):
    out = tmp_path / "x.txt"
    out.write_text("made by an older recipe\n")
    proc = step("fake", out)
    assert proc.returncode == 2 and "exists without a spec record (x.txt.spec.json" in proc.stderr
    assert step("fake", out, FORCE="1").returncode == 0
    (tmp_path / "x.txt.spec.json").write_text('{"SMOKE": "0", "inp')  # a half-written record
    proc = step("fake", out)
    assert proc.returncode == 2 and "unreadable spec record" in proc.stderr
    assert step("fake", out, FORCE="1").returncode == 0
    assert "exists, skipped" in step("fake", out).stdout
    # no output to reuse: a record of another spec is simply replaced
    out.unlink()
    assert step("fake", out, SMOKE="1").returncode == 0 and out.exists()


def test_an_interrupted_training_resumes_under_its_spec_only(step, tmp_path):
    save = tmp_path / "ckpt"
    assert step("fake_train", save, STOP="1").returncode == 0  # killed: checkpoint_last, no .done
    assert (save / "spec.json").exists() and not (save / ".done").exists()
    proc = step("fake_train", save, SMOKE="1")  # would resume the other run's checkpoint_last.pt
    assert proc.returncode == 2 and "made with SMOKE=0, this run has SMOKE=1" in proc.stderr
    assert step("fake_train", save).returncode == 0  # same spec: resumed
    assert (save / "resumed").read_text() == "resumed=1\n" and (save / ".done").exists()
    forced = step("fake_train", save, SMOKE="1", FORCE="1")  # the old run removed, not resumed
    assert forced.returncode == 0 and (save / "resumed").read_text() == "resumed=0\n"
    assert json.loads((save / "spec.json").read_text())["SMOKE"] == "1"


def test_identities_are_of_content_not_of_paths_or_times(tmp_path):
    data = write_prepared(tmp_path / "a" / "bin", ["one summary", "two"])
    (tmp_path / "a" / "bin" / "dict.src.txt").write_text("x 1\n")
    before = R.identity(data)
    shutil.copytree(tmp_path / "a", tmp_path / "moved")
    os.utime(os.path.join(data, "dict.src.txt"), (1, 1))
    # a later step's theta beside the data is not the data
    (tmp_path / "a" / "bin" / "test.theta.npy").write_bytes(b"theta")
    assert before.startswith("data:") and R.identity(data) == before
    assert R.identity(str(tmp_path / "moved" / "bin")) == before
    (tmp_path / "a" / "bin" / "dict.src.txt").write_text("y 1\n")
    assert R.identity(data) != before
    assert R.identity("ACLSum") == "text:ACLSum"
    flags = R.normalize_flags(["--save-dir", f"{tmp_path}/w/ck", "--workers", "8", "--restore-file",
                               "m.pt", "--reset-optimizer", "--lr", "2"], root=str(tmp_path / "w"))
    assert flags == ["--save-dir", "{root}/ck", "--lr", "2"]


def test_a_table_is_marked_smoke_when_a_run_it_shows_was_made_under_smoke(tmp_path):
    from ledger import paper_tables as pt

    table = pt.get_table("is", "sweep")
    kind, rel, arg = next(r.source for r in table.rows if r.source)
    path = tmp_path / rel
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([{"threshold": arg, "sparsity": 1.0, "rouge1": 0.3, "rouge2": 0.1,
                                 "rougeL": 0.2}]))
    write = [sys.executable, "-m", "ledger.paper_tables", "write", "is", "sweep", str(tmp_path)]

    def text():
        subprocess.run(write, cwd=REPO, check=True, capture_output=True)
        return (tmp_path / "is-sweep.md").read_text()
    assert "SMOKE" not in text()  # no record: nothing known
    R.write(R.record_path(str(path.parent) + "/"), R.build("gate sweep", env={"SMOKE": "0"}))
    assert "SMOKE" not in text()
    R.write(R.record_path(str(path.parent) + "/"), R.build("gate sweep", env={"SMOKE": "1"}))
    assert f"SMOKE=1: 1 of the runs shown were made under SMOKE=1 (their spec records: {rel})" in text()


def test_the_score_step_finds_a_data_folder_whose_path_holds_a_space(tmp_path):
    """The defect: the data folder was read from generate's log line up to its first space, so a
    recipe run into OUT="out dir" trained and decoded, then stopped: "no references"."""
    data = write_prepared(tmp_path / "out dir" / "bin", ["the cat sat .", "a dog ran ."])
    gen = tmp_path / "out dir" / "test.out"
    gen.write_text("".join(f"S-{i}\tx\nT-{i}\t{t}\nH-{i}\t-0.1\t{t}\nD-{i}\t-0.1\t{t}\n"
                           for i, t in enumerate(["the cat sat .", "a dog ran ."]))
                   + "Generate test with beam=1: BLEU4 = 1.0\n")
    (tmp_path / "out dir" / "test.out.log").write_text(
        f"2026-01-01 00:00:00 | INFO | fairseq.tasks.summarization | {data} test src-tgt 2 examples\n")
    assert S.GenerateOutput(str(gen)).loaded == (data, "test", 2)
    script = f'source "{REPO}/recipes/common.sh"; score "{gen}" --bootstrap-samples 0'
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((tmp_path / "out dir" / "test.out.rouge.json").read_text())["rouge1"] == 1.0


def _decoding(path, log_data, n=2, split="valid"):
    path.write_text("".join(f"S-{i}\tx\nT-{i}\tsummary {i}\nH-{i}\t-0.1\t\u2581s{i}\n"
                            for i in range(n)))
    (path.parent / (path.name + ".log")).write_text(
        f"INFO:fairseq.tasks.summarization:{log_data} {split} src-tgt {n} examples\n")


def test_a_decoding_is_matched_to_its_data_by_content_from_any_working_folder(tmp_path, monkeypatch):
    """The defect: fairseq-sum-probe compared the log's path, resolved from where it ran, with its
    DATA: a decoding written with a relative data path was refused from another folder."""
    from fairseq_sum_plugins.inspection import probe

    work = tmp_path / "work"
    write_prepared(work / "prep" / "bin", ["summary 0", "summary 1"], split="valid")
    (work / "prep" / "bin" / "dict.tgt.txt").write_text("\u2581s0 1\n")
    _decoding(work / "valid.out", "prep/bin")  # fairseq-generate ran in work/
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    data = str(work / "prep" / "bin")

    class Dictionary:
        def encode_line(self, text, add_if_not_exist=False):
            import torch
            return torch.tensor([len(text)])

    task = types.SimpleNamespace(datasets={}, target_dictionary=Dictionary(),
                                 load_dataset=lambda split: None, dataset=lambda split: Sized(2))
    probe.use_generated_summaries(task, "valid", str(work / "valid.out"), data)
    assert [t.tolist() for t in task.datasets["valid"].tgt] == [[3], [3]]
    gen = S.GenerateOutput(str(work / "valid.out"))
    assert S.check_decoding_of(gen, data, "valid") == 2
    # a log naming an existing folder of other dictionaries: refused by name, as the scorer does
    other = tmp_path / "other"
    shutil.copytree(work / "prep" / "bin", other)
    (other / "dict.tgt.txt").write_text("\u2581s9 1\n")
    _decoding(work / "valid.out", other)
    with pytest.raises(ValueError, match=rf"a decoding of {other} \(generate's log\), not of {data}: "
                                         r"their dict.tgt.txt differs"):
        probe.use_generated_summaries(task, "valid", str(work / "valid.out"), data)
    shutil.copy(work / "prep" / "bin" / "dict.tgt.txt", other)  # a copy of the data: the same
    assert S.check_decoding_of(S.GenerateOutput(str(work / "valid.out")), data, "valid") == 2
    _decoding(work / "valid.out", "prep/bin", n=3)  # another count of examples
    with pytest.raises(S.ScoreInputError, match=r"a decoding of 3 valid examples .* has 2"):
        S.check_decoding_of(S.GenerateOutput(str(work / "valid.out")), data, "valid")


class Sized(list):
    """A dataset of ``n`` examples with targets, as with_targets copies it."""

    def __init__(self, n):
        super().__init__(range(n))
        self.tgt, self.tgt_sizes = [None] * n, None


@pytest.mark.slow  # a SMOKE=1 papers.sh run (minutes)
def test_papers_sh_refuses_to_reuse_a_smoke_run_or_another_datasets_run(raw_corpora, tmp_path):
    """The defect: `SMOKE=1 papers.sh is sweep newsroom=A`, then the same without SMOKE=1 into the
    same OUT skipped every step (the smoke model stood in for the paper's) and wrote the table
    without its SMOKE header; newsroom=B reused A's data, checkpoint and decodings."""
    from paper_smoke import PAPER_ENV_DROP, papers_sh

    out = str(tmp_path / "out dir")  # a space in OUT: the scorer finds its data all the same
    text = papers_sh(out, "is", "sweep", f"newsroom={raw_corpora['newsroom']}")
    assert any(line.startswith("SMOKE=1") for line in text.split("| row |")[0].splitlines())
    env = {k: v for k, v in os.environ.items() if k not in PAPER_ENV_DROP}
    env.update(OMP_NUM_THREADS="1", VISIBLE_GPUS="0", OUT=out,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    other = tmp_path / "B"
    shutil.copytree(raw_corpora["newsroom"], other)
    with open(other / "test.jsonl.gz", "ab") as f:  # another release: one more (empty) gzip member
        import gzip
        f.write(gzip.compress(b""))

    def again(raw, **extra):
        return subprocess.run(["bash", os.path.join(REPO, "recipes", "papers.sh"), "is", "sweep",
                               f"newsroom={raw}"], cwd=REPO, env={**env, **extra},
                              capture_output=True, text=True, timeout=600)
    table = os.path.join(out, "is-sweep.md")
    before = open(table).read()
    proc = again(raw_corpora["newsroom"])
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert (f"convert: {out}/newsroom/jsonl was made with SMOKE=1, this run has SMOKE=0; made "
            "with PRESET=small, this run has PRESET=base: use another OUT, or FORCE=1") in proc.stderr
    proc = again(other, SMOKE="1")
    raw_name = os.path.basename(os.path.normpath(raw_corpora["newsroom"]))
    assert proc.returncode == 2 and f"made from input RAW {raw_name} (" in proc.stderr
    assert f"this run's is {other} (" in proc.stderr
    assert open(table).read() == before  # refused before any step: the table is the smoke run's
    proc = again(raw_corpora["newsroom"], SMOKE="1")  # the same run: every step skipped
    assert proc.returncode == 0 and "train: " in proc.stdout and "finished, skipped" in proc.stdout
    assert open(table).read() == before  # written again, with its SMOKE header


def test_gated_records_the_command_and_a_failed_forced_step_leaves_no_old_output(step, tmp_path):
    """The defect: FORCE=1 wrote the new record before the step ran and left the old output in
    place; when the step then failed, the next run found the old output under the new record and
    skipped it as complete."""
    out = tmp_path / "x.txt"
    assert step("fake_gated", out).returncode == 0 and out.read_text() == "input one\nflag a\n"
    record = json.loads((tmp_path / "x.txt.spec.json").read_text())
    assert record["step"] == "fake" and record["flags"] == ["fake_make", "{root}/x.txt", "--flag", "a"]
    assert "fake: " + str(out) + " exists, skipped" in step("fake_gated", out).stdout
    proc = step("fake_gated", out, FLAG="b")  # another option of the command: another spec
    assert proc.returncode == 2 and "made with other flags: 'a' -> 'b'" in proc.stderr
    (tmp_path / "in.txt").write_text("input two\n")
    assert step("fake_gated", out).returncode == 2
    failed = step("fake_gated", out, FORCE="1", FAIL="1")
    assert failed.returncode != 0 and not out.exists()
    again = step("fake_gated", out)
    assert again.returncode == 0 and "skipped" not in again.stdout
    assert out.read_text() == "input two\nflag a\n"


def test_a_record_holds_no_machine_path_and_still_gates(step, tmp_path):
    """A record travels with its run folder into results/ (compare.sh's OUT/LABEL/*.spec.json):
    its inputs were recorded by their machine paths, which results_index --check refuses. Now an
    input under --root is ``{root}/...``, another its name; the gate compares as before (the
    content's identity), and a refusal shows the recorded name and this run's path."""
    from ledger import results_paths

    run = tmp_path / "run"
    (run / "base").mkdir(parents=True)
    (run / "base" / "decoding.txt").write_text("H-0\tx\n")
    data = tmp_path / "work" / "bin"
    write_prepared(data, ["one summary"])
    out = run / "base" / "x.json"
    script = tmp_path / "gated.sh"
    script.write_text('source "$REPO/recipes/common.sh"\n'
                      'gated step "$1" "$1" --input "data=$DATA" --input "decoding=$2/base/decoding.txt" '
                      '--root "$2" -- cp "$2/base/decoding.txt" "$1"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("SMOKE", "PRESET", "FORCE")}
    env.update(REPO=REPO, DATA=str(data),
               PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""))

    def gated(**extra):
        return subprocess.run(["bash", str(script), str(out), str(run)], env={**env, **extra},
                              capture_output=True, text=True, timeout=60)
    assert gated().returncode == 0 and out.is_file()
    record = json.loads((run / "base" / "x.json.spec.json").read_text())
    assert record["input_paths"] == {"data": "bin", "decoding": "{root}/base/decoding.txt"}
    assert record["flags"] == ["cp", "{root}/base/decoding.txt", "{root}/base/x.json"]
    assert results_paths.check_paths(str(run)) == []  # {root}/base/...: a placeholder's path
    # moved: the same content elsewhere is the same input, the step skipped
    moved = tmp_path / "moved" / "bin"
    shutil.copytree(data, moved)
    assert "exists, skipped" in gated(DATA=str(moved)).stdout
    (run / "base" / "decoding.txt").write_text("H-0\ty\n")
    proc = gated()
    assert proc.returncode == 2
    assert (f"made from input decoding {run}/base/decoding.txt (sha256:" in proc.stderr
            and f"this run's is {run}/base/decoding.txt (sha256:" in proc.stderr), proc.stderr


PROBE = r"""
source "$REPO/recipes/common.sh"
eval "$(sed -n '/^tpt_probe() {/,/^}/p' "$REPO/recipes/papers.sh")"  # papers.sh's own step
fairseq-sum-probe() { printf '%s\n' "$@" > "${@: -1}"; }  # its arguments, into --json's file
tpt_probe pos t5_transformer
"""


def test_a_probe_is_refused_when_its_labels_change_or_evaluation_labels_are_added(tmp_path):
    """`papers.sh tpt t4`: a probe made before PROBE_LABELS held the model's own dev-summary
    labels (evaluated on held-out training references) must not stand in for one evaluated on
    them; nor one made from other training labels."""
    out = tmp_path / "out"
    write_prepared(out / "xsum" / "bin", ["one summary", "two"])
    ckpt = out / "xsum" / "checkpoints" / "t5_transformer" / "checkpoint_best.pt"
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(b"weights")
    (out / "xsum" / "valid.t5_transformer.beam4.out").write_text("H-0\tx\n")
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "pos.conllu").write_text("1\tone\t_\tNUM\n")
    script = tmp_path / "probe.sh"
    script.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in ("SMOKE", "PRESET", "FORCE", "SPACY_MODEL")}
    env.update(REPO=REPO, OUT=str(out), PROBE_LABELS=str(labels),
               PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""))

    def probe(**extra):
        return subprocess.run(["bash", str(script)], cwd=tmp_path, env={**env, **extra},
                              capture_output=True, text=True, timeout=60)
    result = out / "xsum" / "probe.pos.t5_transformer.json"
    first = probe()
    assert first.returncode == 0, first.stderr
    assert "evaluated on held-out training references" in first.stdout
    assert "--eval-labels" not in result.read_text()
    assert "exists, skipped" in probe().stdout
    (labels / "pos.conllu").write_text("1\tone\t_\tNOUN\n")  # other training labels
    proc = probe()
    assert proc.returncode == 2 and "made from input labels pos.conllu (sha256:" in proc.stderr
    assert f"this run's is {labels}/pos.conllu (sha256:" in proc.stderr
    (labels / "pos.conllu").write_text("1\tone\t_\tNUM\n")
    (labels / "pos.valid.t5_transformer.conllu").write_text("1\tx\t_\tX\n")  # added later
    proc = probe()
    assert proc.returncode == 2 and "made from input eval labels ? (none), this run's is" in proc.stderr
    assert "--eval-labels" not in result.read_text()  # refused: the old JSON untouched
    forced = probe(FORCE="1")
    assert forced.returncode == 0 and "--eval-labels" in result.read_text()
    assert "exists, skipped" in probe().stdout


def test_the_compare_tables_carry_the_smoke_mark_of_any_run_they_show(tmp_path):
    from fairseq_sum_plugins.evaluation.baselines import table as baseline_table
    from fairseq_sum_plugins.evaluation.compare_report import write_report
    from helpers import write_run

    out = str(tmp_path)
    write_run(out, "base", 0.25)
    write_run(out, "method", 0.3)
    write_report(out, ["base", "method"])
    assert "SMOKE" not in open(os.path.join(out, "results.md")).read()  # no record: nothing known
    for label, smoke in (("base", "0"), ("method", "1")):
        gen = os.path.join(out, label, "test.out")
        R.write(R.record_path(gen + ".rouge.json"), R.build("score", env={"SMOKE": smoke}))
    write_report(out, ["base", "method"])
    md = open(os.path.join(out, "results.md")).read()
    assert md.startswith("# Comparison\n\n**SMOKE=1:** 1 of the 2 runs shown (`method`) were made "
                         "under SMOKE=1")
    # a training made under SMOKE=1 marks its label too (its folder's spec.json)
    R.write(R.record_path(os.path.join(out, "base", "checkpoints") + "/"),
            R.build("train", env={"SMOKE": "1"}))
    write_report(out, ["base", "method"])
    assert "2 of the 2 runs shown (`base`, `method`)" in open(os.path.join(out, "results.md")).read()
    # baselines.md: the runs of each seed folder and the baselines' own record
    runs = {"seed1/base": R.run_files(os.path.join(out, "base"))}
    assert baseline_table._smoke(runs, os.path.join(out, "baselines.json")).startswith(
        "**SMOKE=1:** 1 of the 2 runs shown (`seed1/base`)")
    os.remove(R.record_path(os.path.join(out, "base", "checkpoints") + "/"))
    assert baseline_table._smoke(runs, os.path.join(out, "baselines.json")) == ""
    R.write(R.record_path(os.path.join(out, "baselines.json")), R.build("baselines", env={"SMOKE": "1"}))
    assert "(`baselines`)" in baseline_table._smoke(runs, os.path.join(out, "baselines.json"))


def test_the_root_is_recorded_only_where_a_flag_names_it_as_a_path():
    """A short root such as ``out`` replaced inside every word turned ``--out`` into ``--{root}``."""
    from fairseq_sum_plugins.cli.run_spec import normalize_flags

    flags = ["--out", "out", "--save-dir", "out/ckpt", "--data=out/bin", "--outputs", "layout",
             "about"]
    assert normalize_flags(flags, root="out") == [
        "--out", "{root}", "--save-dir", "{root}/ckpt", "--data={root}/bin", "--outputs", "layout",
        "about"]
    assert normalize_flags(["/w/out dir/x", "--y"], root="/w/out dir/") == ["{root}/x", "--y"]
