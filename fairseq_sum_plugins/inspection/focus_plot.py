"""Learned focus centres and scopes of an ETADS encoder (You et al., 2019, §3.2, ETADS eq. 5-6).

For one document, plots per focus layer (rows) and head (columns) the centre ``mu~_i`` of every
query position ``i`` with its scope ``mu~_i +- sigma~_i`` (the band where the focal bias of
ETADS eq. 7 is above ``-2``), over the document's positions ``1..m``; the diagonal marks ``mu~_i =
i``::

    python -m fairseq_sum_plugins.inspection.focus_plot DATA/bin \\
        --path checkpoints/checkpoint_best.pt --split valid --document 0 --png focus.png \\
        [--json focus.json] [--all-json focus_all.json]

``--all-json`` also measures every document of the split (:func:`focus_stats` per document: the mean
distance of the centre from its query position and the mean scope, each as a share of the document
length ``m``) and writes their mean and standard deviation over the documents with the per-document
figures.
"""
import argparse
import json
import statistics

import torch

from fairseq_sum_plugins.evaluation.decodings import sha256_file
from fairseq_sum_plugins.evaluation.plotting import pyplot
from ..cli.options import add_data_and_path, old_spelling
from ..cli.outputs import refuse_clobber
from .loader import load_for
from .stage import check_documents, exposed, teacher_forced


def collect_focus(model, src_tokens):
    """Runs one unpadded document ``(S,)`` through the inspection stage (:mod:`.stage`: ETADS
    focus's ``focus``; the decoder reads the document's final EOS only); returns ``{layer name:
    {"mu": H x m, "sigma": H x m, "m": m}}`` (positions are 1-based, as in ETADS eq. 7)."""
    eos = src_tokens[-1:]
    focus = teacher_forced(model, src_tokens, eos, int(eos)).get("focus")
    if not focus:
        raise ValueError(
            "this model has no focus attention (train with --focus-layers or --arch etads_base)")
    return focus


def focus_stats(focus):
    """``(distance, scope)`` of one document: the mean ``|mu~_i - i| / m`` and ``sigma~_i / m`` over
    the layers, heads and positions of :func:`collect_focus`'s output (positions 1-based)."""
    dist, scope = [], []
    for layer in focus.values():
        mu, sigma = torch.tensor(layer["mu"],
                                 dtype=torch.float64), torch.tensor(layer["sigma"],
                                                                    dtype=torch.float64)
        pos = torch.arange(1, mu.shape[-1] + 1, dtype=torch.float64)
        dist.append(float((mu - pos).abs().mean()) / layer["m"])
        scope.append(float(sigma.mean()) / layer["m"])
    return sum(dist) / len(dist), sum(scope) / len(scope)


def mean_sd(values):
    """Mean and sample standard deviation (0.0 for one value)."""
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def all_documents(model, dataset, split):
    """:func:`focus_stats` of every document of ``dataset``, with their mean and standard
    deviation."""
    docs = []
    for i in range(len(dataset)):
        src = dataset[i]["source"]
        distance, scope = focus_stats(collect_focus(model, src))
        docs.append({"index": i, "m": int(src.numel()), "distance": distance, "scope": scope})
    if not docs:
        raise ValueError(f"split {split!r} has no documents")
    (d_mean, d_sd), (s_mean, s_sd) = (mean_sd([d[k] for d in docs]) for k in ("distance", "scope"))
    return {"split": split, "documents": len(docs), "distance_mean": d_mean, "distance_sd": d_sd,
            "scope_mean": s_mean, "scope_sd": s_sd, "per_document": docs}


def plot_focus(focus, path, title=""):
    """One panel per (layer, head): centre (line), scope (band), ``mu~_i = i`` (dotted), with a
    legend; ``title`` names the document."""
    plt = pyplot()
    layers = list(focus)
    heads = len(focus[layers[0]]["mu"])
    fig, axes = plt.subplots(len(layers), heads, figsize=(2.2 * heads, 2.0 * len(layers)),
                             squeeze=False, sharex=True, sharey=True)
    for r, name in enumerate(layers):
        f = focus[name]
        pos = list(range(1, f["m"] + 1))
        for h in range(heads):
            ax = axes[r][h]
            mu, sigma = f["mu"][h], f["sigma"][h]
            band = ax.fill_between(pos, [a - b for a, b in zip(mu, sigma)],
                                   [a + b for a, b in zip(mu, sigma)], color="tab:blue", alpha=0.25,
                                   linewidth=0)
            line, = ax.plot(pos, mu, color="tab:blue", linewidth=1)
            diag, = ax.plot(pos, pos, color="grey", linewidth=0.8, linestyle=":")
            ax.set_ylim(0, f["m"] + 1)
            if r == 0:
                ax.set_title(f"head {h + 1}", fontsize=8)
            if h == 0:
                # 1-based, as --focus-layers
                ax.set_ylabel(f"layer {int(name.split('.')[1]) + 1}\ncentre", fontsize=7)
            if r == len(layers) - 1:
                ax.set_xlabel("query position i", fontsize=7)
            ax.tick_params(labelsize=6)
    fig.legend([line, band, diag], [
        "centre mu~_i (ETADS eq. 6)", "scope mu~_i +- sigma~_i (focal bias > -2)",
        "mu~_i = i (no shift)"
    ], loc="lower center", ncol=3, fontsize=7, frameon=False)
    head = "ETADS focus attention: centre and scope of every query position"
    fig.suptitle(f"{head}\n{title}" if title else head, fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def document_name(task, split, index, src, words=10):
    """``split #index (N tokens): "first words ..."`` of one source document (pieces joined into
    words)."""
    text = task.source_dictionary.string(src)
    if "\u2581" in text:  # sentencepiece pieces: joined into words
        text = text.replace(" ", "").replace("\u2581", " ").replace("<sep>", " <sep> ")
    head = text.replace("<sep>", "/").split()
    snippet = " ".join(head[:words]) + (" ..." if len(head) > words else "")
    return f'{split} #{index} ({len(src)} tokens): "{snippet}"'


def get_parser():
    p = argparse.ArgumentParser(prog="python -m fairseq_sum_plugins.inspection.focus_plot",
                                description=__doc__.split("\n")[0])
    add_data_and_path(p, "checkpoint of a model with focus attention (ETADS)")
    p.add_argument("--split", default="valid", help="the split of the document (default: valid)")
    p.add_argument("--document", type=int, default=0, metavar="N",
                   help="the document of the split to plot, 0-based (default: 0)")
    p.add_argument("--png", required=True, help="write the plot here")
    p.add_argument("--json", help="also write the centres and scopes here")
    p.add_argument("--all-json", metavar="FILE",
                   help="also write the focus statistics of every document of the split here")
    p.add_argument("--user-dir", default=None, help="ignored (the plugin is imported directly)")
    old_spelling(p, "--index", "--document")
    return p


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    # before the model is loaded and run: a bad path stops early
    refuse_clobber(parser, reads=[("DATA", args.data), ("--path", args.path)], writes=[
        ("--png", args.png), ("--json", args.json), ("--all-json", args.all_json)], files=True)
    try:
        check_documents(args.data, args.split, [args.document], "--document")
    except ValueError as e:
        parser.error(str(e))
    model, task = load_for(parser, args.path, args.data, fp32=True)
    if "focus" not in exposed(model):
        parser.error(f"{args.path}: this model has no focus attention (train with --focus-layers "
                     "or --arch etads_base)")
    task.load_dataset(args.split)
    src = task.dataset(args.split)[args.document]["source"]
    focus = collect_focus(model, src)
    plot_focus(focus, args.png, document_name(task, args.split, args.document, src))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(focus, f)
    print(f"wrote {args.png} ({len(focus)} focus layers)")
    if args.all_json:
        stats = all_documents(model, task.dataset(args.split), args.split)
        stats["checkpoint_sha256"] = sha256_file(args.path)
        with open(args.all_json, "w") as f:
            json.dump(stats, f, indent=1)
        print(f"wrote {args.all_json}: {stats['documents']} documents, distance "
              f"{100 * stats['distance_mean']:.1f} +- {100 * stats['distance_sd']:.1f} %, scope "
              f"{100 * stats['scope_mean']:.1f} +- {100 * stats['scope_sd']:.1f} % of the document "
              "length")


if __name__ == "__main__":
    main()
