"""Each paper's own analysis over several seeds: the tables and figures of
``recipes/xsum/paper_evidence.sh``.

The recipe trains every model of the grid once per seed with ``recipes/compare.sh`` and runs each
paper's analysis on the last checkpoint; its output folder holds ``seed<S>/<label>/`` per run (what
compare.sh writes there plus the analyses' JSON). This module reads them and writes
``OUT/results.md`` (mean +- sd over seeds and each seed's value) and the figures::

    python -m ledger.paper_evidence OUT

Per paper (labels as the recipe names them):

* every model: ROUGE-1/2/L F1 (``test.out.rouge.json``), source gain and distinct decodings
  (``source_use.json``), and each method's paired difference from its baseline per seed;
* TP-Transformer (``tpt`` vs ``base``): the probing grid (``probe_pos.json``, ``probe_dep.json``;
  F1 x 100 per layer and role / filler / final) -> ``probe_grid.png``; §4.4's share of role
  distributions above 0.98 (``roles.json``);
* information selection (``gate``, ``gate_warm``): the threshold sweep (``sweep/gate_sweep.json``:
  sparsity, ROUGE-1, source gain, generation words/s per threshold) -> ``gate_sweep.png``;
* ETADS (``etads`` and its ablations vs ``etads_baseline``): the learned focus (``focus.json``: the
  centres' distance from the query position and the scopes, as shares of the document length);
* Topic Assistant (``ta`` vs ``base``): semantic similarity (``semsim.json``) and the decoder's
  attention on the TEMA topic prefix against uniform (``topic_attention.json``);
* Mem2Mem vs HRED: novel n-gram ratios (``novel.json``) and implicit extraction against the oracle
  (``extraction/scores.json``).

A missing analysis file leaves its cell "-"; a run folder without ``test.out.rouge.json`` is an
error naming it (an unfinished grid is not summarised as if complete).
"""
import argparse
import json
import math
import os
import re

import numpy as np

from fairseq_sum_plugins.cli.outputs import refuse_clobber

BASELINES = {"tpt": "base", "gate": "base", "gate_warm": "base", "ta": "base",
             "etads": "etads_baseline", "etads_focus": "etads_baseline",
             "etads_saliency": "etads_baseline", "mem2mem": "hred"}
REPS = ("role", "filler", "final")


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _maybe(path):
    return _load(path) if os.path.exists(path) else None


def seeds_and_labels(root):
    """``{label: [seed, ...]}`` of the ``seed<S>/<label>`` folders under ``root``."""
    runs = {}
    for name in sorted(os.listdir(root)):
        m = re.fullmatch(r"seed(\d+)", name)
        if m and os.path.isdir(os.path.join(root, name)):
            for label in sorted(os.listdir(os.path.join(root, name))):
                if os.path.isdir(os.path.join(root, name, label)):
                    runs.setdefault(label, []).append(int(m.group(1)))
    return {label: sorted(seeds) for label, seeds in runs.items()}


def run_figures(folder):
    """ROUGE-1/2/L (x 100), source gain (bits) and distinct decodings of one run folder."""
    path = os.path.join(folder, "test.out.rouge.json")
    if not os.path.exists(path):
        raise ValueError(f"{folder}: no test.out.rouge.json (the run has not been scored)")
    rouge = _load(path)
    use = _maybe(os.path.join(folder, "source_use.json")) or {}
    return {
        "rouge1": 100 * rouge["rouge1"],
        "rouge2": 100 * rouge["rouge2"],
        "rougeL": 100 * rouge["rougeL"],
        "source_gain": use.get("gain"),
        "distinct": use.get("distinct")
    }


def mean_sd(values):
    """Mean and sample standard deviation (n - 1; 0 for one value) of the non-None values, or (None,
    None)."""
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    mean = sum(values) / len(values)
    sd = math.sqrt(sum(
        (v - mean)**2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return mean, sd


def fmt(values, digits=2):
    """``mean +- sd`` and the per-seed values: ``19.53 +- 0.41 (19.5, 19.9, 19.2)``."""
    mean, sd = mean_sd(values)
    if mean is None:
        return "-"
    each = ", ".join("-" if v is None else f"{v:.{digits}f}" for v in values)
    return f"{mean:.{digits}f} +- {sd:.{digits}f} ({each})"


def collect(root):
    """``{label: {"seeds": [...], figure: [per-seed value]}}`` for every run of the grid."""
    out = {}
    for label, seeds in seeds_and_labels(root).items():
        figs = [run_figures(os.path.join(root, f"seed{s}", label)) for s in seeds]
        out[label] = {"seeds": seeds, **{k: [f[k] for f in figs] for k in figs[0]}}
    return out


def paired_differences(runs, label, baseline, key="rouge1"):
    """Per-seed ``label - baseline`` on the seeds both have."""
    if label not in runs or baseline not in runs:
        return [], []
    base = dict(zip(runs[baseline]["seeds"], runs[baseline][key]))
    pairs = [(s, v - base[s]) for s, v in zip(runs[label]["seeds"], runs[label][key])
             if s in base and v is not None and base[s] is not None]
    return [s for s, _ in pairs], [d for _, d in pairs]


def summary_table(runs):
    lines = ["| model | seeds | ROUGE-1 | ROUGE-2 | ROUGE-L | source gain (bits) | distinct (of "
             "100) | ROUGE-1 - baseline (per seed) |", "|---|---|---|---|---|---|---|---|"]
    for label, r in runs.items():
        base = BASELINES.get(label)
        _, diffs = paired_differences(runs, label, base) if base else ([], [])
        diff = f"{fmt(diffs)} vs `{base}`" if diffs else "-"
        lines.append(
            f"| `{label}` | {', '.join(map(str, r['seeds']))} | {fmt(r['rouge1'])} | "
            f"{fmt(r['rouge2'])} | {fmt(r['rougeL'])} | {fmt(r['source_gain'], 3)} | "
            f"{fmt(r['distinct'], 0)} | {diff} |")
    return "\n".join(lines)


def _per_seed(root, label, seeds, relpath):
    return [_maybe(os.path.join(root, f"seed{s}", label, relpath)) for s in seeds]


# ------------------------------------------------------------------------------------------ TPT
def probe_cells(root, runs, labels=("base", "tpt"), tasks=("pos", "dep")):
    """``{task: {label: {(layer, rep): [per-seed F1 x 100]}}}`` and ``{task: {label:
    [majority]}}``."""
    cells, majority = {}, {}
    for task in tasks:
        for label in labels:
            if label not in runs:
                continue
            for grid in _per_seed(root, label, runs[label]["seeds"], f"probe_{task}.json"):
                if grid is None:
                    continue
                for key, v in grid["cells"].items():
                    layer, rep = key.split("/")
                    cells.setdefault(task, {}).setdefault(label, {}).setdefault(
                        (int(layer), rep), []).append(100 * v["f1"])
                majority.setdefault(task, {}).setdefault(label, []).append(100 * grid["majority"])
    return cells, majority


def probe_table(cells, majority):
    lines = []
    for task, by_label in cells.items():
        layers = sorted({layer for grid in by_label.values() for layer, _ in grid})
        lines += [f"**{task.upper()}** (F1 x 100, mean +- sd over seeds; majority class "
                  f"{fmt(next(iter(majority[task].values())), 1)})", "",
                  "| model | layer | " + " | ".join(REPS) + " |", "|---|---|" + "---|" * len(REPS)]
        for label, grid in by_label.items():
            for layer in layers:
                row = []
                for rep in REPS:
                    mean, sd = mean_sd(grid.get((layer, rep), []))
                    row.append("-" if mean is None else f"{mean:.1f} +- {sd:.1f}")
                lines.append(f"| `{label}` | {layer} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def plot_probe_grid(cells, png):
    from fairseq_sum_plugins.evaluation.plotting import pyplot

    plt = pyplot()
    tasks = list(cells)
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.2 * len(tasks), 3.6), squeeze=False)
    colours = {"base": "tab:grey", "tpt": "tab:blue"}
    for ax, task in zip(axes[0], tasks):
        by_label = cells[task]
        keys = sorted({k
                       for grid in by_label.values()
                       for k in grid}, key=lambda k: (k[0], REPS.index(k[1])))
        width = 0.8 / max(len(by_label), 1)
        for j, (label, grid) in enumerate(by_label.items()):
            stats = [mean_sd(grid.get(k, [])) for k in keys]
            ax.bar([i + j * width for i in range(len(keys))], [m or 0 for m, _ in stats], width,
                   yerr=[s or 0 for _, s in stats], color=colours.get(label), label=label,
                   capsize=2)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))],
                      [f"L{k[0]}\n{k[1]}" for k in keys], fontsize=7)
        ax.set_ylabel("probe F1 x 100")
        ax.set_title(f"{task.upper()} probing (mean +- sd over seeds)", fontsize=9)
        ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def role_table(root, runs, label="tpt"):
    if label not in runs:
        return ""
    roles = _per_seed(root, label, runs[label]["seeds"], "roles.json")
    overall = [None if r is None else 100 * r["overall"] for r in roles]
    lines = ["Share of role attention distributions with max > 0.98 (§4.4; the paper finds > "
             f"90%), `{label}`: {fmt(overall, 1)} %", ""]
    names = sorted({n for r in roles if r for n in r["sublayers"]})
    if names:
        lines += ["| sublayer | share > 0.98 (%) | roles used (argmax share > 1%) |",
                  "|---|---|---|"]
        for name in names:
            peaked = [None if r is None else 100 * r["sublayers"][name]["peaked"] for r in roles]
            used = [None if r is None else sum(u > 0.01 for u in r["sublayers"][name]["usage"])
                    for r in roles]
            lines.append(f"| {name} | {fmt(peaked, 1)} | {fmt(used, 0)} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ gate
def sweep_rows(root, runs, label):
    """Per seed, the sweep's rows (dicts with threshold, sparsity, rouge1, source_gain,
    words_per_s)."""
    if label not in runs:
        return []
    return [
        rows for rows in _per_seed(root, label, runs[label]["seeds"],
                                   os.path.join("sweep", "gate_sweep.json")) if rows
    ]


def sweep_table(per_seed):
    if not per_seed:
        return ""
    thresholds = [r["threshold"] for r in per_seed[0]]
    lines = ["| threshold | sparsity (%) | ROUGE-1 | source gain (bits) | distinct | generation "
             "speed vs t = 0 |",
             "|---|---|---|---|---|---|"]
    for i, t in enumerate(thresholds):
        rows = [seed[i] for seed in per_seed if i < len(seed) and seed[i]["threshold"] == t]
        speed = [r["words_per_s"] / seed[0]["words_per_s"] for r, seed in zip(rows, per_seed)]
        lines.append(f"| {t:g} | {fmt([r['sparsity'] for r in rows], 1)} | "
                     f"{fmt([r['rouge1'] for r in rows])} | "
                     f"{fmt([r['source_gain'] for r in rows], 3)} | "
                     f"{fmt([r['distinct'] for r in rows], 0)} | {fmt(speed)} |")
    return "\n".join(lines)


def timing_table(root, runs, label):
    """Pruned generation speed per threshold, from ``seedN/LABEL/timing/gate_sweep.json``
    (inspection/gate_sweep.py ``--timing-rounds``: the median over interleaved rounds of each
    threshold's words/s over the first threshold's)."""
    if label not in runs:
        return ""
    per_seed = [
        rows for rows in _per_seed(root, label, runs[label]["seeds"],
                                   os.path.join("timing", "gate_sweep.json"))
        if rows and all("speedup" in r for r in rows)
    ]
    if not per_seed:
        return ""
    rounds = sorted({r["timing_rounds"] for seed in per_seed for r in seed})
    lines = [f"Pruned generation speed, {'/'.join(map(str, rounds))} interleaved rounds per seed "
             f"(`gate_sweep.py --timing-rounds`):", "",
             "| threshold | sparsity (%) | ROUGE-1 | source gain (bits) | distinct | speed-up vs "
             f"t = {per_seed[0][0]['threshold']:g} (median of the rounds) |",
             "|---|---|---|---|---|---|"]
    for i, t in enumerate(r["threshold"] for r in per_seed[0]):
        rows = [seed[i] for seed in per_seed if i < len(seed) and seed[i]["threshold"] == t]
        lines.append(f"| {t:g} | {fmt([r['sparsity'] for r in rows], 1)} | "
                     f"{fmt([r['rouge1'] for r in rows])} | "
                     f"{fmt([r.get('source_gain') for r in rows], 3)} | "
                     f"{fmt([r.get('distinct') for r in rows], 0)} | "
                     f"{fmt([r['speedup'] for r in rows])} |")
    return "\n".join(lines)


def plot_sweeps(sweeps, png):
    from fairseq_sum_plugins.evaluation.plotting import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for (label, per_seed), colour in zip(sweeps.items(), ("tab:red", "tab:blue", "tab:green")):
        if not per_seed:
            continue
        t = [r["threshold"] for r in per_seed[0]]
        for ax, key, name in zip(
                axes, ("sparsity", "rouge1", "source_gain"),
            ("sparsity (% of source removed)", "ROUGE-1", "source gain (bits/token)")):
            values = np.array([[r[key] for r in seed] for seed in per_seed if len(seed) == len(t)])
            ax.plot(t, values.mean(0), marker="o", color=colour, label=label)
            if len(values) > 1:
                ax.fill_between(t, values.min(0), values.max(0), color=colour, alpha=0.2)
            ax.set_xlabel("gate threshold t")
            ax.set_ylabel(name)
    axes[2].axhline(0.3, color="grey", ls="--", lw=0.8)
    axes[0].legend(fontsize=8, frameon=False)
    fig.suptitle("Information selection: threshold sweep of the trained gates (mean over seeds, "
                 "band: min-max)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------- ETADS
def focus_stats(focus):
    """Mean ``|mu~_i - i| / m`` and ``sigma~_i / m`` of one ``focus.json``
    (inspection/focus_plot.py)."""
    from fairseq_sum_plugins.inspection.focus_plot import focus_stats as stats

    return stats(focus)


# ------------------------------------------------------------------------------------------- TA
def ta_table(root, runs):
    lines = []
    ss = {label: _per_seed(root, label, runs[label]["seeds"], "semsim.json")
          for label in ("base", "ta") if label in runs}
    if ss:
        lines += ["| model | SS(summary, document) | SS(summary, gold summary) |", "|---|---|---|"]
        for label, per_seed in ss.items():
            lines.append(f"| `{label}` | {fmt([r and r.get('ss_sum_doc') for r in per_seed], 3)} | "
                         f"{fmt([r and r.get('ss_sum_gold') for r in per_seed], 3)} |")
        lines.append("")
    if "ta" in runs:
        attn = [a for a in _per_seed(root, "ta", runs["ta"]["seeds"], "topic_attention.json") if a]
        if attn:
            layers = len(attn[0]["share"])
            lines += ["Decoder self-attention on the TEMA topic prefix (% of each summary token's "
                      "attention; uniform attention over what a token sees: "
                      f"{fmt([100 * a['uniform'] for a in attn], 1)}):", "",
                      "| layer | share (%) |", "|---|---|"]
            for i in range(layers):
                lines.append(f"| {i + 1} | {fmt([100 * a['share'][i] for a in attn], 1)} |")
            lines.append("")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- Mem2Mem
def mem2mem_table(root, runs):
    lines = []
    novel = {label: _per_seed(root, label, runs[label]["seeds"], "novel.json")
             for label in ("hred", "mem2mem") if label in runs}
    if novel:
        lines += ["Novel n-grams (% of summary n-grams not in the source; Mem2Mem Table 4):", "",
                  "| summaries | 1-grams | 2-grams | 3-grams | 4-grams |", "|---|---|---|---|---|"]
        for label, per_seed in novel.items():
            lines.append(f"| `{label}` | " + " | ".join(
                fmt([r and 100 * r.get(f"novel_{n}gram_hyp", float("nan")) for r in per_seed], 1)
                for n in range(1, 5)) + " |")
        ref = next((r for per_seed in novel.values() for r in per_seed if r), None)
        if ref:
            lines.append("| gold | " + " | ".join(
                f"{100 * ref.get(f'novel_{n}gram_ref', float('nan')):.1f}" for n in range(1, 5))
                + " |")
        lines.append("")
    if "mem2mem" in runs:
        ext = [e for e in _per_seed(root, "mem2mem", runs["mem2mem"]["seeds"],
                                    os.path.join("extraction", "scores.json"))
               if e]
        if ext:
            lead = next(k for k in ext[0]["scores"] if k.startswith("lead"))
            lines += ["Implicit extraction (the sentences each memory slot writes most, §5.4) "
                      "against Lead-k and the greedy oracle:", "",
                      "| extraction | ROUGE-1 | oracle precision (%) | chance precision (%) | "
                      "oracle recall (%) |",
                      "|---|---|---|---|---|"]
            for name in ("memory", lead):
                lines.append(
                    f"| {name} | {fmt([100 * e['scores'][name]['rouge1'] for e in ext])} | "
                    f"{fmt([100 * e['oracle_agreement'][name]['precision'] for e in ext], 1)} | "
                    f"{fmt([100*e['oracle_agreement'][name]['chance_precision'] for e in ext], 1)} "
                    f"| {fmt([100 * e['oracle_agreement'][name]['recall'] for e in ext], 1)} |")
            lines.append("\nSentences picked per document: "
                         f"{fmt([e['mean_selected_sentences'] for e in ext])}\n")
    return "\n".join(lines)


def write_report(root):
    """Writes ``root/results.md`` (:func:`report_text`), ``runs.json`` and the figures."""
    text, runs = report_text(root, plots=True)
    with open(os.path.join(root, "results.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(root, "runs.json"), "w", encoding="utf-8") as f:
        json.dump(runs, f, indent=1)
    return text


def report_text(root, plots=False):
    """(the text of ``results.md``, the runs :func:`collect` read) from the run folders under
    ``root``; with ``plots`` the figures it links are drawn too. ``results_index --check`` compares
    the tables of a committed report with this text's."""
    runs = collect(root)
    parts = ["# Each paper's own analysis over seeds", "",
             "Written by `python -m ledger.paper_evidence` from the runs "
             "below (mean +- sample sd over seeds, then each seed's value in seed order).", "",
             "## Every model", "", summary_table(runs), ""]
    cells, majority = probe_cells(root, runs)
    if cells:
        if plots:
            plot_probe_grid(cells, os.path.join(root, "probe_grid.png"))
        parts += ["## TP-Transformer: probing (Table 4) and roles (§4.4)", "",
                  "![probing](probe_grid.png)", "",
                  probe_table(cells, majority), role_table(root, runs)]
    sweeps = {label: sweep_rows(root, runs, label) for label in ("gate", "gate_warm")}
    if any(sweeps.values()):
        if plots:
            plot_sweeps(sweeps, os.path.join(root, "gate_sweep.png"))
        parts += ["## Information selection: threshold sweep", "", "![sweep](gate_sweep.png)", ""]
        for label, per_seed in sweeps.items():
            if per_seed:
                parts += [f"`{label}`:", "", sweep_table(per_seed), ""]
                timing = timing_table(root, runs, label)
                if timing:
                    parts += [timing, ""]
    seeds = runs["etads"]["seeds"] if "etads" in runs else []
    every = _per_seed(root, "etads", seeds, "focus_all.json")
    focus = [f for f in _per_seed(root, "etads", seeds, "focus.json") if f]
    if seeds and all(every):  # every validation document of each seed (focus_plot.py --all-json)
        n = sorted({e["documents"] for e in every})
        d_sd = ", ".join(f"{100 * e['distance_sd']:.1f}" for e in every)
        s_sd = ", ".join(f"{100 * e['scope_sd']:.1f}" for e in every)
        parts += ["## ETADS: the learned focus", "",
                  "Mean distance of the focal centre from the query position, as a share of the "
                  f"document length: {fmt([100 * e['distance_mean'] for e in every], 1)} %; mean "
                  f"scope sigma~ / m: {fmt([100 * e['scope_mean'] for e in every], 1)} % (per "
                  f"seed: the mean over all {'/'.join(map(str, n))} validation documents; across "
                  f"documents the standard deviation is {d_sd} points (distance) and {s_sd} "
                  "(scope)).", ""]
    elif focus:
        stats = [focus_stats(f) for f in focus]
        parts += ["## ETADS: the learned focus", "",
                  "Mean distance of the focal centre from the query position, as a share of the "
                  f"document length: {fmt([100 * d for d, _ in stats], 1)} %; mean scope sigma~ / "
                  f"m: {fmt([100 * s for _, s in stats], 1)} % (validation document 0 of each seed "
                  "only).", ""]
    ta = ta_table(root, runs)
    if ta:
        parts += ["## Topic Assistant: semantic similarity and topic attention", "", ta]
    mem = mem2mem_table(root, runs)
    if mem:
        parts += ["## Mem2Mem vs HRED: novel n-grams and implicit extraction", "", mem]
    return "\n".join(parts).rstrip() + "\n", runs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", help="the recipe's output folder (seed<S>/<label>/ run folders)")
    args = p.parse_args(argv)
    seeds = sorted(os.path.join(args.root, n) for n in (
        os.listdir(args.root) if os.path.isdir(args.root) else ()) if re.fullmatch(r"seed\d+", n))
    refuse_clobber(p, reads=[("ROOT", seeds)], writes=[
        ("ROOT", os.path.join(args.root, name)) for name in ("results.md", "runs.json")])
    if not os.path.isdir(args.root):
        p.error(f"{args.root}: not a folder")
    if not seeds_and_labels(args.root):
        p.error(f"{args.root}: no seed<S>/<label> run folders")
    try:
        print(write_report(args.root))
    except ValueError as e:
        p.error(str(e))


if __name__ == "__main__":
    main()
