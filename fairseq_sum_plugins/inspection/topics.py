"""Topic Assistant analyses with the PFA topic model of a data directory (the semantic similarity
SS, TA eq. 10, is the Topic Assistant's own: features/topic_assistant/similarity.py).

A document's top topics and each topic's top words, as a PNG::

    python -m fairseq_sum_plugins.inspection.topics plot DATA/bin --split test --document 0 \\
        --png topics.png

A 2-D map of token topic rows: the ``--tokens`` most frequent kept (non-stop, non-special) symbols,
their Phi rows normalised to ``p(topic | token)``, projected on the first two principal components
(numpy SVD), each labelled with its surface form and coloured by its most probable topic::

    python -m fairseq_sum_plugins.inspection.topics map DATA/bin --tokens 80 --png topic_map.png

The topic attention of a trained Topic Assistant model (TEMA, §4.2, Fig. 3(b)): with the validation
summaries teacher-forced, the share of each decoder layer's self-attention (averaged over its heads)
that summary positions give to the ``n`` topic positions of the prefix, averaged over the non-pad
summary positions; a bar chart per layer and JSON. The share a summary token would give the prefix
if it attended uniformly to everything it sees (``n / (n + t)`` at summary position ``t``) is
reported beside it as ``uniform``::

    python -m fairseq_sum_plugins.inspection.topics attention DATA/bin --path ckpt.pt \\
        --split valid [--max-documents N] --png ta_attn.png --json ta_attn.json
"""
import argparse
import json
import os
from collections import Counter

import numpy as np

# re-exported: this module's names before the move
from ..features.topic_assistant.similarity import (  # noqa: F401
    format_ss, load_topic_model, semantic_similarity, semantic_similarity_scores,
    summary_similarities)
from ..features.topic_assistant.words import top_words, whole_words  # noqa: F401
from fairseq_sum_plugins.evaluation.plotting import place_labels, pyplot

from ..cli.options import add_data_and_path, old_spelling
from ..cli.outputs import refuse_clobber


def plot_main(args):
    plt = pyplot()
    dictionary, model = load_topic_model(args.data, args.topic_model)
    path = os.path.join(args.data, f"{args.split}.theta.npy")
    if not os.path.isfile(path):
        raise ValueError(f"--split {args.split}: no {path} (preprocess/topic_model.py infer)")
    thetas = np.load(path, mmap_mode="r")
    if not 0 <= args.document < len(thetas):
        raise ValueError(f"--document {args.document}: {path} has {len(thetas)} documents")
    theta = thetas[args.document]
    top = np.argsort(-theta)[: args.topics]
    mask = whole_words(model, dictionary, args.data)
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(top) + 1.6))
    ax.barh(range(len(top)), theta[top], color="tab:blue")
    ax.set_yticks(range(len(top)))
    ax.set_yticklabels([f"topic {k}: " + " ".join(top_words(model, dictionary, k, args.words, mask))
                        for k in top],
                       fontsize=8)
    for y, k in enumerate(top):
        ax.text(theta[k], y, f" {theta[k]:.2f}", va="center", fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("theta (topic proportion of the document)")
    ax.set_title(
        f"{args.split} document #{args.document}: its top {len(top)} of {model.num_topics} topics\n"
        f"each with its {args.words} most relevant whole words", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    plt.close(fig)
    print(f"wrote {args.png}")


def token_map(model, dictionary, n_tokens=80, data=None):
    """(token ids, (n, 2) PCA coordinates of their normalised Phi rows) of the most frequent kept
    whole words (:func:`whole_words`)."""
    counts = np.asarray(dictionary.count, dtype=np.float64)
    mass = model.phi.sum(1)
    candidates = np.flatnonzero(model.keep & (mass > 0) & whole_words(model, dictionary, data))
    ids = candidates[np.argsort(-counts[candidates], kind="stable")][:n_tokens]
    rows = model.phi[ids].astype(np.float64)
    rows = rows / rows.sum(1, keepdims=True)
    centred = rows - rows.mean(0, keepdims=True)
    u, sv, _ = np.linalg.svd(centred, full_matrices=False)
    coords = np.zeros((len(ids), 2))
    k = min(2, len(sv))
    coords[:, :k] = u[:, :k] * sv[:k]
    return ids, coords


def map_main(args):
    plt = pyplot()
    dictionary, model = load_topic_model(args.data, args.topic_model)
    ids, coords = token_map(model, dictionary, args.tokens, args.data)
    if len(ids) == 0:
        raise ValueError("no kept token has a non-zero Phi row")
    colour = model.phi[ids].argmax(1)
    topics = [k for k, _ in sorted(Counter(colour.tolist()).items(),
                                   key=lambda kv: (-kv[1], kv[0]))]
    shown = topics[:10]  # the legend names the 10 topics most tokens belong to; the rest in grey
    cmap = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(11, 8))
    mask = whole_words(model, dictionary, args.data)
    for j, k in enumerate(shown):
        sel = colour == k
        ax.scatter(coords[sel, 0], coords[sel, 1], color=cmap(j), s=16,
                   label=f"topic {k}: " + " ".join(top_words(model, dictionary, k, 3, mask)))
    rest = ~np.isin(colour, shown)
    if rest.any():
        ax.scatter(coords[rest, 0], coords[rest, 1], color="lightgrey", s=12,
                   label=f"{len(topics) - len(shown)} other topics")
    ax.legend(title="colour: the word's most likely topic (its top words)", fontsize=7,
              title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    title = f"{len(ids)} most frequent whole words: PCA of p(topic | word)"
    ax.set_title(title + "; N crowded labels left out", fontsize=9)
    fig.tight_layout()
    skipped = place_labels(ax, coords, [model.surface(i, dictionary) for i in ids])
    ax.set_title(title + (f"; {skipped} crowded labels left out" if skipped else ""), fontsize=9)
    fig.savefig(args.png, dpi=120)
    plt.close(fig)
    print(f"wrote {args.png}")
    return ids, coords


def topic_attention(model, batches, pad=1):
    """``{"share": per-layer mean prefix share, "uniform": float, "n_prefix": n, "tokens": count}``
    over the summary positions of ``batches`` (fairseq samples, teacher-forced, one document at a
    time), read through the inspection stage (:mod:`.stage`: the Topic Assistant's
    ``topic_share``, the head-averaged self-attention on the topic positions)."""
    import torch

    from .stage import teacher_forced

    topic = getattr(model.decoder, "topic", None)  # set only on a model with the Topic Assistant
    if topic is None or not topic.tema:
        raise ValueError("this model has no TEMA topic prefix (train with --arch transformer_ta_* "
                         "or --ta-tema True)")
    n = topic.n
    sums, tokens, uniform = np.zeros(len(model.decoder.layers)), 0, 0.0
    for sample in batches:
        net_input = sample["net_input"]
        for b in range(net_input["src_tokens"].size(0)):
            src, tgt = net_input["src_tokens"][b], sample["target"][b]
            side = {k: v[b:b + 1] for k, v in net_input.items()
                    if k not in ("src_tokens", "src_lengths", "prev_output_tokens")}
            share = teacher_forced(model, src[src.ne(pad)], tgt[tgt.ne(pad)], int(
                net_input["prev_output_tokens"][b, 0]), side)["topic_share"]
            sums += [sum(layer) for layer in share]
            t = len(share[0])
            tokens += t
            uniform += float((n / (n + torch.arange(1, t + 1, dtype=torch.float))).sum())
    return {"share": (sums / max(tokens, 1)).tolist(), "uniform": uniform / max(tokens, 1),
            "n_prefix": n, "tokens": tokens}


def attention_main(args):
    from .loader import load_checkpoint
    from .stage import check_documents

    check_documents(args.data, args.split, [])
    model, task = load_checkpoint(args.path, args.data)
    task.load_dataset(args.split)
    ds, size = task.dataset(args.split), args.batch_size
    n = min(args.max_documents or len(ds), len(ds))
    batches = (ds.collater([ds[i] for i in range(b, min(b + size, n))]) for b in range(0, n, size))
    result = topic_attention(model, batches, task.target_dictionary.pad())
    share = np.asarray(result["share"])
    print(f"share of decoder self-attention on the {result['n_prefix']} topic positions "
          f"({result['tokens']} summary tokens of {args.split}); uniform attention would give "
          f"{100 * result['uniform']:.1f}%")
    for i, v in enumerate(share):
        print(f"layer {i + 1}: {100 * v:5.1f}%")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"path": args.path, "split": args.split, **result}, f, indent=1)
    if args.png:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(0.8 * len(share) + 3, 3.2))
        ax.bar(range(1, len(share) + 1), 100 * share, color="tab:blue", label="trained model")
        ax.axhline(100 * result["uniform"], color="grey", ls="--", label="uniform attention")
        for i, v in enumerate(share, 1):
            ax.text(i, 100 * v, f"{100 * v:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(1, len(share) + 1), [f"layer {i}" for i in range(1, len(share) + 1)])
        ax.set_ylabel("% of self-attention on topics")
        ax.set_title(f"decoder self-attention on the {result['n_prefix']} TEMA topic positions\n"
                     f"{args.split}, {result['tokens']} summary tokens", fontsize=9)
        # room for the legend above the line
        ax.set_ylim(0, 1.35 * 100 * max(result["uniform"], share.max()))
        ax.legend(fontsize=8, frameon=False, loc="upper right")
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)
        plt.close(fig)
        print(f"wrote {args.png}")
    return result


def get_parser():
    p = argparse.ArgumentParser(
        prog="python -m fairseq_sum_plugins.inspection.topics",
        description="Topic Assistant analyses (a document's topics, the topic map, a model's "
        "attention on its topics); semantic similarity: fairseq-sum-score --topic-model")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("plot", help="a document's top topics with their top words, as a PNG")
    m = sub.add_parser("map",
                       help="2-D PCA map of the Phi rows of the most frequent tokens, as a PNG")
    a = sub.add_parser("attention",
                       help="a trained model's decoder self-attention on the TEMA topic prefix")
    for q in (g, m):
        q.add_argument("data", metavar="DATA", help="binarized data folder (fairseq-sum-prepare's "
                       "OUT/bin) with its topic model")
    add_data_and_path(a, "checkpoint of a model with TEMA (transformer_ta_*)")
    for q, split in ((g, "test"), (a, "valid")):
        q.add_argument("--split", default=split, help=f"the split read (default: {split})")
    g.add_argument("--document", type=int, default=0, metavar="N",
                   help="the document of the split shown, 0-based (default: 0)")
    g.add_argument("--topics", type=int, default=5, help="its top topics shown (default: 5)")
    g.add_argument("--words", type=int, default=8, help="words shown per topic (default: 8)")
    g.add_argument("--png", default="topics.png", help="write the plot here (topics.png)")
    m.add_argument("--tokens", type=int, default=80, help="most frequent words mapped (80)")
    m.add_argument("--png", default="topic_map.png", help="write the map here (topic_map.png)")
    for q in (g, m):
        q.add_argument("--topic-model", default=None, help="the topic model's file (default: "
                       "the data folder's)")
    a.add_argument("--batch-size", type=int, default=16, help="documents per forward pass")
    a.add_argument("--max-documents", type=int, default=0, metavar="N",
                   help="the first N documents of the split (default 0: all)")
    a.add_argument("--png", help="write the bar chart here")
    a.add_argument("--json", help="write the shares here")
    old_spelling(g, "--index", "--document")
    old_spelling(a, "--max-batches", "--max-documents", dest="max_batches",
                 note=" (documents: --max-batches N reads the first N x --batch-size)")
    return p


def main(argv=None):
    p = get_parser()
    args = p.parse_args(argv)
    reads = [("DATA", args.data), ("--topic-model", getattr(args, "topic_model", None)),
             ("--path", getattr(args, "path", None))]
    refuse_clobber(p, reads, [("--png", args.png), ("--json", getattr(args, "json", None))],
                   files=True)
    if args.cmd == "attention":
        if getattr(args, "max_batches", None):
            args.max_documents = args.max_batches * args.batch_size
        if args.batch_size < 1 or args.max_documents < 0:
            p.error("--batch-size must be >= 1 and --max-documents >= 0")
    try:
        return {"plot": plot_main, "map": map_main, "attention": attention_main}[args.cmd](args)
    except ValueError as e:  # a file that is no checkpoint (the loader's CheckpointError) too
        p.error(str(e))


if __name__ == "__main__":
    main()
