"""Source gain over training: when (if ever) does a model start to read its documents?

For every interval checkpoint ``checkpoint_E_U.pt`` of each run (``fairseq-train
--save-interval-updates N --keep-interval-updates -1``), the source gain of
:mod:`.source_use` (bits per summary token gained from the own document over another) and the
NLL of the summaries given their own documents, on ``--subset`` (valid by default). One line per run
in a PNG (gain and NLL against updates), the numbers in JSON::

    python -m fairseq_sum_plugins.inspection.source_curve DATA/bin \\
        --run base=ckpt/base --run copy=ckpt/copy \\
        --png gain.png --json gain.json [--subset valid] [--max-examples 100]

Each checkpoint's figures are cached beside it (``checkpoint_E_U.pt.gain-SUBSET.json``, keyed by the
checkpoint's and the data files' sizes and modification times), so re-plotting after more
checkpoints costs only the new ones.
"""
import argparse
import glob
import json
import os
import re
import sys

# bits per summary token from which a model counts as reading its documents (quickstart, results/)
READS = 0.3
CKPT_RE = re.compile(r"checkpoint_\d+_(\d+)\.pt$")


def interval_checkpoints(folder):
    """``[(updates, path)]`` of the interval checkpoints in ``folder``, by updates."""
    found = []
    for path in glob.glob(os.path.join(folder, "checkpoint_*_*.pt")):
        m = CKPT_RE.search(os.path.basename(path))
        if m:
            found.append((int(m.group(1)), path))
    return sorted(found)


def data_files(data, subset):
    """``{name: [size, mtime]}`` of the dictionaries and the binarized ``subset``: a folder prepared
    again in the same place is another cache key (and meets the checkpoint's dictionary check)."""
    names = ["dict.src.txt", "dict.tgt.txt"] + glob.glob(
        os.path.join(glob.escape(data), f"{glob.escape(subset)}.*"))
    found = {}
    for name in names:
        path = os.path.join(data, os.path.basename(name))
        if os.path.isfile(path):
            st = os.stat(path)
            found[os.path.basename(name)] = [st.st_size, st.st_mtime]
    return found


def checkpoint_gain(path, data, subset, max_examples):
    """Source gain of one checkpoint (cached beside it)."""
    stat = os.stat(path)
    key = {"size": stat.st_size, "mtime": stat.st_mtime, "data": os.path.abspath(data),
           "subset": subset, "max_examples": max_examples,
           "data_files": data_files(data, subset)}
    cache = f"{path}.gain-{subset}.json"
    if os.path.exists(cache):
        with open(cache, encoding="utf-8") as f:
            saved = json.load(f)
        if saved.get("key") == key:
            return saved["gain"]
    from fairseq import checkpoint_utils

    import fairseq_sum_plugins  # noqa: F401  (registers the models and the task)

    from .source_use import source_gain

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([path],
                                                                    arg_overrides={"data": data})
    gain = source_gain(models[0], task, subset, max_examples)
    with open(cache, "w", encoding="utf-8") as f:
        json.dump({"key": key, "gain": gain}, f)
    return gain


def plot(curves, png, subset):
    from fairseq_sum_plugins.evaluation.plotting import pyplot, save

    plt = pyplot()
    fig, (ax_gain, ax_nll) = plt.subplots(1, 2, figsize=(10, 3.8))
    for label, points in curves.items():
        ups = [p["updates"] for p in points]
        ax_gain.plot(ups, [p["gain"] for p in points], marker="o", ms=3, label=label)
        ax_nll.plot(ups, [p["nll_own"] for p in points], marker="o", ms=3, label=label)
    ax_gain.axhline(0, color="grey", lw=0.8)
    ax_gain.axhline(READS, color="grey", lw=0.8, ls="--")
    ax_gain.annotate(f"reads: {READS} bits", (0.01, READS), xycoords=("axes fraction", "data"),
                     xytext=(0, 3), textcoords="offset points", fontsize=7, color="grey")
    ax_gain.set(xlabel="updates", ylabel="source gain (bits / summary token)",
                title=f"Does the model read its document? ({subset})")
    ax_nll.set(xlabel="updates", ylabel="NLL given own document (bits / token)",
               title=f"Summary NLL ({subset})")
    ax_gain.legend(fontsize=7)
    save(fig, png)


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", help="binarized data directory (fairseq-sum-prepare's bin/)")
    p.add_argument("--run", action="append", required=True, metavar="LABEL=DIR",
                   help="a label and a folder of interval checkpoints (repeatable)")
    p.add_argument("--subset", default="valid")
    p.add_argument("--max-examples", type=int, default=100)
    p.add_argument("--png", help="write the curves here")
    p.add_argument("--json", help="write the numbers here")
    return p


def main(argv=None):
    p = get_parser()
    args = p.parse_args(argv)
    if args.max_examples < 2:
        p.error("--max-examples must be at least 2 (the gain pairs each summary with another "
                f"document), got {args.max_examples}")
    if not os.path.isfile(os.path.join(args.data, "dict.src.txt")):
        p.error(f"{args.data}: no dict.src.txt (not a binarized data folder, fairseq-sum-prepare's "
                "bin/)")
    if not glob.glob(os.path.join(glob.escape(args.data), f"{glob.escape(args.subset)}.*-*.*.idx")):
        p.error(f"--subset {args.subset}: no binarized split {args.subset}.SRC-TGT.*.idx in "
                f"{args.data}")
    for flag, path in (("--json", args.json), ("--png", args.png)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            p.error(f"{flag} {path}: its folder does not exist")
    runs = {}
    for spec in args.run:
        label, sep, folder = spec.partition("=")
        if not sep or not label or not folder:
            p.error(f"--run takes LABEL=DIR, got {spec!r}")
        if label in runs:
            p.error(f"--run label {label!r} given twice")
        if not interval_checkpoints(folder):
            p.error(f"--run {spec}: no interval checkpoints checkpoint_E_U.pt in {folder}")
        runs[label] = folder
    curves = {}
    for label, folder in runs.items():
        curves[label] = []
        for updates, path in interval_checkpoints(folder):
            try:
                gain = checkpoint_gain(path, args.data, args.subset, args.max_examples)
            except ValueError as e:
                sys.exit(f"source_curve: {path}: {e}")
            curves[label].append(dict(updates=updates, **gain))
            print(f"{label}\t{updates}\tgain {gain['gain']:.3f}\tnll {gain['nll_own']:.3f}",
                  flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(curves, f, indent=2)
    if args.png:
        plot(curves, args.png, args.subset)
    return curves


if __name__ == "__main__":
    main()
