"""Source gain over training: when (if ever) does a model start to read its documents?

For every interval checkpoint ``checkpoint_E_U.pt`` of each run (``fairseq-train
--save-interval-updates N --keep-interval-updates -1``), the source gain of
:mod:`.source_use` (bits per summary token gained from the own document over another) and the
NLL of the summaries given their own documents, on ``--split`` (valid by default). One line per run
in a PNG (gain and NLL against updates), the numbers in JSON::

    python -m fairseq_sum_plugins.inspection.source_curve DATA/bin \\
        --path ckpt/base --path ckpt/copy --names base,copy \\
        --png gain.png --json gain.json [--split valid] [--max-documents 100]

Each ``--path`` is a run's folder of interval checkpoints, one curve each (never fairseq's
colon-separated ensemble); ``--names`` names them (default: the folders as given).

Each checkpoint's figures are cached beside it (``checkpoint_E_U.pt.gain-SPLIT.json``, keyed by the
checkpoint's and the data files' sizes and modification times), so re-plotting after more
checkpoints costs only the new ones.
"""
import argparse
import glob
import json
import os
import re
import sys

from ..cli.options import old_spelling
from ..cli.outputs import refuse_clobber
from .loader import CheckpointError, load_checkpoint

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
    from .source_use import source_gain

    model, task = load_checkpoint(path, data)
    gain = source_gain(model, task, subset, max_examples)
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
    p = argparse.ArgumentParser(prog="python -m fairseq_sum_plugins.inspection.source_curve",
                                description=__doc__.split("\n")[0])
    p.add_argument("data", metavar="DATA", help="binarized data folder (fairseq-sum-prepare's "
                   "OUT/bin), as fairseq-generate's")
    p.add_argument("--path", action="append", default=[], metavar="DIR",  # not required: --run
                   help="a run's folder of interval checkpoints checkpoint_E_U.pt; repeat --path "
                   "for several runs, one curve each (not fairseq's colon-separated ensemble)")
    p.add_argument("--names", help="comma-separated names of the runs, one per --path (default: "
                   "the folders as given)")
    p.add_argument("--run", action="append", default=[], help=argparse.SUPPRESS)  # LABEL=DIR
    p.add_argument("--split", default="valid", help="the split measured (default: valid)")
    p.add_argument("--max-documents", type=int, default=100, metavar="N",
                   help="the first N documents of the split (default: 100; at least 2)")
    p.add_argument("--png", help="write the curves here")
    p.add_argument("--json", help="write the numbers here")
    old_spelling(p, "--subset", "--split")
    old_spelling(p, "--max-examples", "--max-documents")
    return p


def runs_of(p, args):
    """``{name: folder}`` of ``--path`` / ``--names`` (and of the earlier ``--run LABEL=DIR``)."""
    names = args.names.split(",") if args.names else [os.path.normpath(d) for d in args.path]
    if len(names) != len(args.path):
        p.error(f"--names gives {len(names)} names for {len(args.path)} --path folders")
    pairs = list(zip(names, args.path)) + [r.partition("=")[::2] for r in args.run]
    if args.run:
        print(f"{p.prog}: note: --run LABEL=DIR is now --path DIR --names LABEL (the old form goes "
              "in the next release)", file=sys.stderr)
    if not pairs:
        p.error("give --path DIR (a run's folder of interval checkpoints), once per run")
    runs = {}
    for label, folder in pairs:
        if not label or not folder:
            p.error(f"--run takes LABEL=DIR, got {label!r}")
        if label in runs or not interval_checkpoints(folder):
            p.error(f"--path {folder}: " + (f"the name {label} is given twice" if label in runs else
                    "no interval checkpoints checkpoint_E_U.pt in it (one run per --path, not "
                    "fairseq's colon-separated ensemble)"))
        runs[label] = folder
    return runs


def main(argv=None):
    p = get_parser()
    args = p.parse_args(argv)
    folders = args.path + [r.partition("=")[2] for r in args.run]
    refuse_clobber(p, reads=[("DATA", args.data), ("--path", folders)],
                   writes=[("--png", args.png), ("--json", args.json)], files=True)
    if args.max_documents < 2:
        p.error("--max-documents must be at least 2 (the gain pairs each summary with another "
                f"document), got {args.max_documents}")
    if not os.path.isfile(os.path.join(args.data, "dict.src.txt")):
        p.error(f"{args.data}: no dict.src.txt (not a binarized data folder, fairseq-sum-prepare's "
                "bin/)")
    from .stage import check_documents

    try:
        check_documents(args.data, args.split, [])
    except ValueError as e:
        p.error(str(e))
    curves = {}
    for label, folder in runs_of(p, args).items():
        curves[label] = []
        for updates, path in interval_checkpoints(folder):
            try:
                gain = checkpoint_gain(path, args.data, args.split, args.max_documents)
            except CheckpointError as e:
                p.error(str(e))
            except ValueError as e:
                p.error(f"{path}: {e}")
            curves[label].append(dict(updates=updates, **gain))
            print(f"{label}\t{updates}\tgain {gain['gain']:.3f}\tnll {gain['nll_own']:.3f}",
                  flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(curves, f, indent=2)
    if args.png:
        plot(curves, args.png, args.split)
    return curves


if __name__ == "__main__":
    main()
