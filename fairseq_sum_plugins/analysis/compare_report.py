"""Report of ``recipes/compare.sh``: a Markdown table and a learning-curve PNG from the runs' folders.

``python -m fairseq_sum_plugins.analysis.compare_report OUT LABEL...`` reads, for every label,

* ``OUT/LABEL/checkpoints/train.log`` (fairseq's ``--log-format simple``): the validation loss at each
  ``valid on 'valid' subset`` line, the training loss at each ``train_inner`` line (both against
  ``num_updates``; training points after the last validation, and the first of two points logged for
  one update by a resumed run, are dropped), the parameter count and the last validation line's auxiliary terms
  (``aux_*``, ``gate_sparsity``);
* ``OUT/LABEL/test.out.rouge.json`` (``fairseq-sum-score --json``): ROUGE-1/2/L F1 with their 95%
  bootstrap intervals, and ``meteor`` when the scorer wrote it (headed by its ``meteor_impl``; a file
  without one predates Meteor 1.5 here and holds nltk's);
* ``OUT/LABEL/test.out``: the mean length of the hypotheses in words (after :func:`clean_summary`);
* ``OUT/LABEL/source_use.json`` (:mod:`.source_use`, when present): the source gain (bits per target
  token a summary gains from its own document over another) and the number of distinct summaries; a
  model below ``MIN_GAIN`` bits or writing one text for most documents is named under the table as
  not reading its source, so that its ROUGE is not read as summarization;
* ``OUT/LABEL/wall.txt`` (wall-clock seconds of compare.sh's train step, validation and start-up
  included, and of the decoding, each recorded by the launch that ran the step as soon as it ended;
  :func:`wall_cell` shows "unknown" for a step without a record, ">= N" for a training resumed after a
  killed launch), ``spec.txt``, ``vs_<first label>.txt`` (paired test output, when present)
  and ``OUT/run_info.txt``;

and writes ``OUT/results.md`` and ``OUT/learning_curve.png`` (validation NLL solid, training NLL
faint, one colour per label: the cross-entropy without auxiliary terms, comparable across models). A label without a score file is an error naming the file.
"""
import argparse
import json
import os
import re
import sys

_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_VALID = re.compile(r"valid on '[^']+' subset")
_PARAMS = re.compile(r"num\. (?:shared )?model params: ([\d,]+)")
_AUX = re.compile(r"\| ((?:aux_\w+|gate_sparsity)) " + _NUM)


MIN_GAIN = 0.05  # bits per target token: below this a model is reported as not reading its source
MIN_DISTINCT = 0.5  # share of distinct summaries: below this likewise


def _field(line, name):
    """Value of ``name`` in a simple-format log line (``| name 1.2 |`` or ``name=1.2``), or None."""
    m = re.search(r"(?:\| |\s|^)" + re.escape(name) + r"[= ]" + _NUM, line)
    return float(m.group(1)) if m else None


def parse_train_log(path):
    """{'valid' / 'train': [(update, loss)], 'valid_nll' / 'train_nll': [(update, nll_loss)], 'params': int|None,
    'aux': {name: value},
    'wall': seconds}; ``wall`` is the sum of fairseq's ``train_wall`` over the end-of-epoch ``| train |``
    lines (seconds spent in training steps, without validation and start-up, over every launch in the
    log; fairseq resets that meter at each epoch and at each ``train_inner`` line, so no single line
    holds the run's total)."""
    out = {"valid": [], "train": [], "valid_nll": [], "train_nll": [], "params": None, "aux": {}, "wall": None}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = _PARAMS.search(line)
            if m and out["params"] is None:
                out["params"] = int(m.group(1).replace(",", ""))
            upd, loss = _field(line, "num_updates"), _field(line, "loss")
            if upd is None or loss is None:
                continue
            nll = _field(line, "nll_loss")
            if _VALID.search(line):
                out["valid"].append((int(upd), loss))
                out["valid_nll"].append((int(upd), nll))
                out["aux"] = {k: float(v) for k, v in _AUX.findall(line)}
            elif "| train_inner |" in line:
                out["train"].append((int(upd), loss))
                out["train_nll"].append((int(upd), nll))
            elif "| train |" in line and (seconds := _field(line, "train_wall")) is not None:
                out["wall"] = (out["wall"] or 0.0) + seconds
    if out["valid"]:  # a run resumed from an earlier checkpoint logs the updates it redid twice
        last = out["valid"][-1][0]
        for key in ("train", "train_nll"):
            out[key] = sorted({u: v for u, v in out[key] if u <= last}.items())
    return out


def _mean_words(gen_output):
    from fairseq_sum_plugins.rouge_text import clean_summary
    from fairseq_sum_plugins.score_inputs import read_generate_output

    _, hyps, _ = read_generate_output(gen_output)
    return sum(len(" ".join(clean_summary(h)).split()) for h in hyps) / max(len(hyps), 1)


def _read(path, default=""):
    return open(path, encoding="utf-8").read().strip() if os.path.exists(path) else default


def collect(out_dir, label):
    """Everything the report shows about one label."""
    run = os.path.join(out_dir, label)
    score_file = os.path.join(run, "test.out.rouge.json")
    if not os.path.exists(score_file):
        raise FileNotFoundError(f"{score_file} missing: run recipes/compare.sh for {label!r} first")
    with open(score_file, encoding="utf-8") as f:
        scores = json.load(f)
    log = parse_train_log(os.path.join(run, "checkpoints", "train.log"))
    wall = dict(kv.partition("=")[::2] for kv in _read(os.path.join(run, "wall.txt")).split())
    use_file = os.path.join(run, "source_use.json")
    use = json.load(open(use_file, encoding="utf-8")) if os.path.exists(use_file) else None
    return {"label": label, "spec": _read(os.path.join(run, "spec.txt"), label), "scores": scores, "log": log,
            "wall": wall, "words": _mean_words(os.path.join(run, "test.out")), "source_use": use}


def wall_cell(wall, step):
    """Seconds of ``step`` (train, generate) from wall.txt's ``{key: value}``: "unknown" when no launch
    recorded them (a step killed, or skipped because an older compare.sh's launch ran it), ">= N" when
    the recorded launch resumed a killed training (whose seconds are not in N)."""
    seconds = wall.get(f"{step}_s")
    if seconds is None or not seconds.isdigit():
        return "unknown"
    return f">= {seconds}" if wall.get(f"{step}_resumed") == "1" else seconds


def reads_source(row):
    """False when the row's source_use shows a model that ignores its document, None when unmeasured."""
    use = row.get("source_use")
    if not use:
        return None
    distinct = use.get("distinct", 1) / max(use.get("hypotheses", 1), 1)
    return use["gain"] >= MIN_GAIN and distinct >= MIN_DISTINCT


def _ci(scores, key):
    value = 100 * scores[key]
    ci = scores.get(key + "_ci")
    return f"{value:.2f} [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]" if ci else f"{value:.2f}"


def table(rows):
    """Markdown table, one row per label."""
    meteor = any("meteor" in r["scores"] for r in rows)
    head = ["model", "params", "updates", "valid loss", "valid nll", "ROUGE-1", "ROUGE-2", "ROUGE-L"]
    impls = sorted({r["scores"].get("meteor_impl", "nltk") for r in rows if "meteor" in r["scores"]})
    head += [f"METEOR ({', '.join(impls)})"] if meteor else []
    use = any(r.get("source_use") for r in rows)
    head += ["source gain (bits)", "distinct"] if use else []
    head += ["words", "aux terms (valid)", "train s (wall)", "train s (steps)", "generate s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        s, log = r["scores"], r["log"]
        last = log["valid"][-1] if log["valid"] else (None, float("nan"))
        nll = log["valid_nll"][-1][1] if log["valid_nll"] and log["valid_nll"][-1][1] is not None else float("nan")
        cells = [f"`{r['label']}`", f"{log['params'] / 1e6:.2f}M" if log["params"] else "-", str(last[0]),
                 f"{last[1]:.3f}", f"{nll:.3f}", _ci(s, "rouge1"), _ci(s, "rouge2"), _ci(s, "rougeL")]
        mixed = f" ({s.get('meteor_impl', 'nltk')})" if len(impls) > 1 else ""  # label each cell
        cells += [_ci(s, "meteor") + mixed if "meteor" in s else "-"] if meteor else []
        if use:
            u = r.get("source_use") or {}
            cells += [f"{u['gain']:.3f}" if "gain" in u else "-",
                      f"{u['distinct']}/{u['hypotheses']}" if "distinct" in u else "-"]
        aux = ", ".join(f"{k} {v:.3g}" for k, v in sorted(log["aux"].items())) or "-"
        cells += [f"{r['words']:.1f}", aux, wall_cell(r["wall"], "train"),
                  f"{log['wall']:.0f}" if log["wall"] is not None else "-", wall_cell(r["wall"], "generate")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, r in enumerate(rows):
        color = f"C{i}"
        train = [(u, v) for u, v in r["log"]["train_nll"] if v is not None]
        valid = [(u, v) for u, v in r["log"]["valid_nll"] if v is not None]
        if train:
            ax.plot(*zip(*train), color=color, alpha=0.35, linestyle="--", linewidth=1)
        if valid:
            ax.plot(*zip(*valid), color=color, marker="o", label=f"{r['label']} (valid)")
    ax.set_xlabel("updates")
    ax.set_ylabel("NLL per target token (base 2)")
    ax.set_title("validation NLL (solid) and training NLL (dashed)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def write_report(out_dir, labels):
    rows = [collect(out_dir, label) for label in labels]
    plot(rows, os.path.join(out_dir, "learning_curve.png"))
    parts = ["# Comparison", "", "ROUGE F1 x 100 on the test split with 95% bootstrap intervals "
             "(fairseq-sum-score, rouge-score, ROUGE-L summary-level); `words`: mean hypothesis length; "
             "`valid loss`: the training objective at the last validation (label-smoothed cross-entropy plus the "
             "model's weighted auxiliary terms, base 2), `valid nll`: its cross-entropy alone, comparable across "
             "models; the last validation is the decoded checkpoint's; `source gain`: bits per summary token "
             "gained from its own document over another (0: the source is ignored), `distinct`: different "
             "summaries among the test documents.", "", table(rows), ""]
    blind = [r["label"] for r in rows if reads_source(r) is False]
    if blind:
        parts += [f"**Not reading the source:** {', '.join(f'`{b}`' for b in blind)} (source gain < {MIN_GAIN} bits "
                  f"or fewer than {MIN_DISTINCT:.0%} distinct summaries). Their ROUGE is that of a generic summary "
                  "written whatever the document, and differences involving them say nothing about summarization.", ""]
    parts += ["![learning curves](learning_curve.png)", "", "## Models", ""]
    parts += [f"- `{r['spec']}`" for r in rows]
    tests = [(r["label"], _read(os.path.join(out_dir, r["label"], f"vs_{labels[0]}.txt"))) for r in rows[1:]]
    if any(text for _, text in tests):
        parts += ["", f"## Paired significance against `{labels[0]}` (fairseq-sum-compare)", ""]
        for label, text in tests:
            parts += [f"### {label}", "", "```", text or "(no output)", "```", ""]
    parts += ["", "## Settings and hardware", "", "```", _read(os.path.join(out_dir, "run_info.txt")), "```", ""]
    with open(os.path.join(out_dir, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return rows


def cli_main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="the OUT folder of recipes/compare.sh")
    p.add_argument("labels", nargs="+", help="labels in table order (the first is the baseline)")
    args = p.parse_args(argv)
    try:
        write_report(args.out, args.labels)
    except (FileNotFoundError, ValueError) as e:
        sys.exit(f"compare_report: {e}")
    print(f"wrote {os.path.join(args.out, 'results.md')} and learning_curve.png")


if __name__ == "__main__":
    cli_main()
