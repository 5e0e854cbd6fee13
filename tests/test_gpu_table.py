"""benchmarks/gpu_table.sh and gpu_summary.py: bad settings refused, sections gathered, missing ones named."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "gpu_table.sh")
SUMMARY = os.path.join(ROOT, "benchmarks", "gpu_summary.py")


def bench_json(path, precision, rows, ratios):
    env = dict(summary=f"2026-01-01  H100  torch 2.x  {precision}", precision=precision)
    with open(path, "w") as f:
        json.dump(dict(env=env, results=rows, ratios=ratios), f)


def row(model, arch, peer, wps, train_x, **kw):
    r = dict(model=model, arch=arch, peer=peer, params_m=10.0, train_wps=wps, train_x=train_x,
             gen_wps=None, gen_x=None, peak_gib=1.5, mem_x=1.0, error=None, notes=[])
    r.update(kw)
    return r


def summary(folder):
    return subprocess.run([sys.executable, SUMMARY, str(folder)], capture_output=True, text=True)


def test_summary_carries_each_sections_ratios_and_names_the_missing_ones(tmp_path):
    rows = [row("transformer", "t5_base", "transformer", 1000.0, 1.0),
            row("t5_base", "t5_base", None, 1500.0, 1.5, compile_s=42.0),
            row("hf_t5 (t5_base)", "t5_base", "hf_t5", 1200.0, 1.2)]
    bench_json(tmp_path / "fp16_compiled.json", "fp16 (fairseq --fp16)", rows,
               {"t5_base": {"hf_t5": {"train_ratio": 1.25, "gen_ratio": None}}})
    out = summary(tmp_path)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("| fp16 | compiled | t5_base |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[4:7] == ["1,500", "1.50x", "1.25x"]  # words/s, vs transformer, vs HF T5 (1500/1200)
    assert cells[12] == "42 s"
    assert "Missing sections (see status.txt): fp16_eager, bf16_eager, mem2mem_fp16" in out.stdout


def test_summary_labels_rows_with_the_precision_that_ran(tmp_path):
    bench_json(tmp_path / "bf16_eager.json", "fp32", [row("transformer", "x", "transformer", 1.0, 1.0)], {})
    out = summary(tmp_path)
    assert "| fp32 | eager | transformer |" in out.stdout


def test_summary_of_an_empty_folder_fails(tmp_path):
    assert summary(tmp_path).returncode == 1
    bad = subprocess.run([sys.executable, SUMMARY, str(tmp_path / "nope")], capture_output=True, text=True)
    assert bad.returncode != 0 and "usage" in bad.stderr


def test_table_script_refuses_bad_settings_by_name(tmp_path):
    for env, word in (({"BUDGET": "ten"}, "BUDGET"), ({"BUDGET": "-5"}, "BUDGET"),
                      ({"BUDGET": "30"}, "too short"), ({"SMOKE": "yes"}, "SMOKE"),
                      ({"SECTIONS": "fp16_eager fp8"}, "unknown section 'fp8'"),
                      ({"SECTIONS": "  "}, "SECTIONS is empty")):
        out = subprocess.run(["bash", SCRIPT, str(tmp_path / "o")], capture_output=True, text=True,
                             env={**os.environ, **env})
        assert out.returncode == 2 and word in out.stderr, (env, out.stderr)


def test_summary_says_when_fp16_dropped_updates_and_decoding_failed(tmp_path):
    """A model whose every fp16 update overflowed trained nothing: its row says so beside its speed."""
    rows = [row("transformer", "x", "transformer", 1000.0, 1.0),
            row("transformer_ta_base", "transformer_ta_base", None, 960.0, 0.96, skipped_updates=15, steps=15,
                notes=["beam search failed: AssertionError: 64 < 64"])]
    bench_json(tmp_path / "fp16_eager.json", "fp16 (fairseq --fp16)", rows, {})
    out = summary(tmp_path)
    line = next(x for x in out.stdout.splitlines() if "| transformer_ta_base |" in x)
    assert line.rstrip(" |").endswith("15/15 updates skipped (fp16 overflow); beam search failed: AssertionError: 64 < 64")
