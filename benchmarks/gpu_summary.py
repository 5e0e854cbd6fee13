"""One Markdown table from the JSON files that ``benchmarks/gpu_table.sh`` writes into its folder.

    python benchmarks/gpu_summary.py benchmarks/results/gpu-YYYY-MM-DD > table.md

Rows come from ``bench_train.py`` (one JSON per precision and mode: ``fp16_eager.json``,
``bf16_eager.json``, ``fp16_compiled.json``) and ``bench_mem2mem.py`` (``mem2mem_fp16.json``). Ratios
are those of each run (every model of a section ran in one process, interleaved in rounds), so they
compare within a section; words/s across sections compare only on the same machine. A section whose
JSON is missing (failed or out of time, see ``status.txt``) is listed as such, not left out.
"""
import json
import os
import sys

SECTIONS = [("fp16_eager", "fp16", "eager"), ("bf16_eager", "bf16", "eager"),
            ("fp16_compiled", "fp16", "compiled")]
M2M = ("mem2mem_fp16", "fp16", "eager")


def fmt(v, spec, suffix=""):
    return "-" if v is None else format(v, spec) + suffix


def peer_ratio(data, arch, peer, key):
    return (data.get("ratios", {}).get(arch, {}).get(peer) or {}).get(key)


def bench_rows(data, precision, mode):
    """Rows of one bench_train.py JSON: every model, its ratios over the transformer of its dims and,
    for T5-cell archs, over HF's T5."""
    rows = []
    for r in data["results"]:
        own = r["peer"] is None
        hf_train = peer_ratio(data, r["arch"], "hf_t5", "train_ratio") if own else None
        hf_gen = peer_ratio(data, r["arch"], "hf_t5", "gen_ratio") if own else None
        compile_s = r.get("compile_s")
        skipped = r.get("skipped_updates") or 0  # fp16 overflow: the step ran, the update was dropped
        notes = [r["error"]] if r.get("error") else (
            [f"{skipped}/{r.get('steps')} updates skipped (fp16 overflow)"] if skipped else []) + list(r.get("notes") or [])
        rows.append([precision, mode, r["model"], fmt(r["params_m"], ".1f"), fmt(r["train_wps"], ",.0f"),
                     fmt(r.get("train_x"), ".2f", "x"), fmt(hf_train, ".2f", "x"),
                     fmt(r.get("gen_wps"), ",.0f"), fmt(r.get("gen_x"), ".2f", "x"), fmt(hf_gen, ".2f", "x"),
                     fmt(r["peak_gib"], ".2f"), fmt(r.get("mem_x"), ".2f", "x"),
                     fmt(compile_s, ".0f", " s"), "; ".join(notes)])
    return rows


def mem2mem_rows(data, precision, mode):
    return [[precision, mode, r["model"], fmt(r["params_m"], ".1f"), fmt(r["train_wps"], ",.0f"),
             fmt(r["train_x"], ".2f", "x") + " (vs lstm)", "-", "-", "-", "-", fmt(r["peak_gib"], ".2f"),
             fmt(r["mem_x"], ".2f", "x"), "-", ""] for r in data["results"]]


def main(folder):
    cols = ["precision", "mode", "model", "params (M)", "train tgt words/s", "vs transformer", "vs HF T5",
            "gen words/s (beam 4)", "vs transformer", "vs HF T5", "peak mem (GiB)", "vs transformer",
            "compile", "notes"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    heads, missing = [], []
    for name, precision, mode in SECTIONS + [M2M]:
        path = os.path.join(folder, name + ".json")
        if not os.path.exists(path):
            missing.append(name)
            continue
        with open(path) as f:
            data = json.load(f)
        env = data["env"]
        if isinstance(env, dict) and not str(env.get("precision", precision)).startswith(precision):
            precision = env["precision"].split(" ")[0]  # what ran (fp32 in a CPU smoke run)
        heads.append(f"- `{name}`: " + (env["summary"] if isinstance(env, dict) else env))
        make = mem2mem_rows if name == M2M[0] else bench_rows
        lines += ["| " + " | ".join(row) + " |" for row in make(data, precision, mode)]
    out = ["Runs:"] + heads + [""] + lines
    if missing:
        out += ["", "Missing sections (see status.txt): " + ", ".join(missing)]
    print("\n".join(out))
    return 0 if heads else 1


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: python benchmarks/gpu_summary.py FOLDER (the folder gpu_table.sh wrote)")
    sys.exit(main(sys.argv[1]))
