"""Role usage of a trained TP-Transformer (paper §4.4).

For every TPR sublayer, reports the share of role attention distributions ``softmax(F W_r^h)``
(TPT eq. 5, one per token and head) whose maximum exceeds ``--threshold`` (0.98 in the paper, which
finds > 90%), and writes a PNG heatmap of how often each role is the argmax, per sublayer::

    fairseq-sum-roles DATA/bin --path checkpoints/checkpoint_best.pt --split valid --png roles.png
"""
import argparse
import json
import re

import numpy as np
import torch

from ..cli.options import add_data_and_path, old_spelling
from ..cli.outputs import refuse_clobber
from .loader import load_for
from .stage import check_documents, exposed, teacher_forced


def collect_role_usage(model, documents, threshold=0.98):
    """Returns ``{sublayer name: {"peaked": share, "usage": per-role argmax frequency, "n":
    count}}`` over ``documents`` (``(source, target)`` token pairs, the target teacher-forced), read
    through the inspection stage (:mod:`.stage`: the TP-Transformer's ``roles``)."""
    stats = {}
    for src, tgt in documents:
        roles = teacher_forced(model, src, tgt, int(tgt[-1])).get("roles")
        if roles is None:
            raise ValueError(
                "role analysis needs a TP-Transformer with discrete roles (--tpr discrete)")
        for name, attn in roles.items():
            best, idx = torch.tensor(attn).max(dim=-1)  # (positions, H)
            s = stats.setdefault(name, {"peaked": 0, "n": 0, "usage": np.zeros(len(attn[0][0]))})
            s["peaked"] += int((best > threshold).sum())
            s["n"] += best.numel()
            s["usage"] += np.bincount(idx.flatten().numpy(), minlength=len(s["usage"]))
    return {
        n: {"peaked": s["peaked"] / max(s["n"], 1), "n": s["n"],
            "usage": (s["usage"] / max(s["usage"].sum(), 1)).tolist()}
        for n, s in stats.items()
    }


def sublayer_label(name):
    """``encoder.layers.0.self_attn_binding`` -> ``encoder layer 1 self-attn`` (1-based layers, as
    ``--focus-layers`` and the other plots count them)."""
    m = re.match(r"(\w+)\.layers\.(\d+)\.(\w+?)(?:_binding)?$", name)
    if m is None:
        return name
    return (f"{m.group(1)} layer {int(m.group(2)) + 1} "
            f"{m.group(3).replace('_attn', '-attn').replace('_', ' ')}")


def plot_role_usage(stats, path, threshold=0.98):
    """Heatmap of how often each role is the argmax, one row per sublayer labelled with its share of
    role attention distributions whose maximum exceeds ``threshold``."""
    from fairseq_sum_plugins.evaluation.plotting import pyplot

    plt = pyplot()
    names = list(stats)
    usage = np.array([stats[n]["usage"] for n in names])
    fig, ax = plt.subplots(figsize=(max(6, usage.shape[1] * 0.18 + 4), 0.35 * len(names) + 1.7))
    im = ax.imshow(usage, aspect="auto", cmap="viridis")
    labels = [f"{sublayer_label(n)}  ({100 * stats[n]['peaked']:.0f}% max > {threshold:g})"
              for n in names]
    ax.set_yticks(range(len(names)), labels, fontsize=7)
    step = 1 if usage.shape[1] <= 20 else 5
    ticks = [r for r in range(usage.shape[1]) if r == 0 or (r + 1) % step == 0]
    ax.set_xticks(ticks, [str(r + 1) for r in ticks], fontsize=7)
    ax.set_xlabel("role (1-based): argmax of the role attention (TPT eq. 5)", fontsize=8)
    ax.set_title(f"TP-Transformer role usage per sublayer\nin brackets: share of role attention "
                 f"distributions with max > {threshold:g} (paper §4.4)", fontsize=8)
    fig.colorbar(im, ax=ax, label="share of token-heads")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-sum-roles", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_and_path(p, "checkpoint of a TP-Transformer with discrete roles (--tpr discrete)")
    p.add_argument("--split", default="valid", help="the split whose summaries are read "
                   "teacher-forced (default: valid)")
    p.add_argument("--max-documents", type=int, default=0, metavar="N",
                   help="the first N documents of the split (default 0: all)")
    p.add_argument("--threshold", type=float, default=0.98,
                   help="a role attention distribution is peaked above this maximum (0.98)")
    p.add_argument("--png", help="write the role-usage heatmap here")
    p.add_argument("--json", help="write the statistics here")
    p.add_argument("--cpu", action="store_true", help="stay on the CPU even with a GPU")
    old_spelling(p, "--max-docs", "--max-documents")
    return p


def cli_main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    refuse_clobber(parser, reads=[("DATA", args.data), ("--path", args.path)],
                   writes=[("--png", args.png), ("--json", args.json)], files=True)
    if args.max_documents < 0:
        parser.error(f"--max-documents must be >= 0, got {args.max_documents}")
    try:
        check_documents(args.data, args.split, [])
    except ValueError as e:
        parser.error(str(e))
    model, task = load_for(parser, args.path, args.data,
                           cuda=torch.cuda.is_available() and not args.cpu)
    if "roles" not in exposed(model):
        parser.error(f"{args.path}: role analysis needs a TP-Transformer with discrete roles "
                     "(--tpr discrete)")
    task.load_dataset(args.split)
    dataset = task.dataset(args.split)
    n = min(len(dataset), args.max_documents or len(dataset))
    documents = ((dataset[i]["source"], dataset[i]["target"]) for i in range(n))
    stats = collect_role_usage(model, documents, args.threshold)
    total_peaked = sum(s["peaked"] * s["n"]
                       for s in stats.values()) / max(sum(s["n"] for s in stats.values()), 1)
    print(f"{'sublayer':45s} {'max>' + str(args.threshold):>10s} {'roles used':>10s}")
    for name, s in stats.items():
        print(f"{name:45s} {100 * s['peaked']:9.1f}% {sum(u > 0.01 for u in s['usage']):10d}")
    print(f"overall: {100 * total_peaked:.1f}% of role attention distributions have max > "
          f"{args.threshold}")
    if args.png:
        plot_role_usage(stats, args.png, args.threshold)
        print(f"wrote {args.png}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threshold": args.threshold, "overall": total_peaked, "sublayers": stats},
                      f, indent=1)


if __name__ == "__main__":
    cli_main()
