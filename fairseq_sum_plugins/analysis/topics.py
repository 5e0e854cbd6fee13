"""Topic Assistant analyses with the PFA topic model of a data directory.

Semantic similarity (§5.5, eq. 10) of generated summaries to their documents and to the gold
summaries, ``SS(D1, D2; Phi) = theta_1^T theta_2 / (||theta_1|| ||theta_2||)`` with both thetas
inferred with ``Phi`` fixed (Table 6), :func:`semantic_similarity_scores`; its command line is the
scorer's::

    fairseq-sum-score --generate-output gen.out --topic-model DATA/bin/topic_model.npz [--src FILE]

A document's top topics and each topic's top words, as a PNG::

    python -m fairseq_sum_plugins.analysis.topics plot DATA/bin --split test --index 0 --png topics.png

Texts are encoded again with the tokenizer and sentencepiece model recorded in
``DATA/prepare_args.json`` (for a topic model fit over BART's GPT-2 BPE dictionary, with the GPT-2
encoder recorded in ``topic_model.npz``). A summary with no countable token has theta = 0 and
scores 0.

A 2-D map of token topic rows: the ``--tokens`` most frequent kept (non-stop, non-special) symbols,
their Phi rows normalised to ``p(topic | token)``, projected on the first two principal components
(numpy SVD), each labelled with its surface form and coloured by its most probable topic::

    python -m fairseq_sum_plugins.analysis.topics map DATA/bin --tokens 80 --png topic_map.png
"""
import argparse
import json
import os
from argparse import Namespace

import numpy as np


def semantic_similarity(theta_1, theta_2):
    """Row-wise eq. 10; 0 where a theta is the zero vector (no countable token)."""
    theta_1, theta_2 = np.asarray(theta_1, np.float64), np.asarray(theta_2, np.float64)
    num = (theta_1 * theta_2).sum(-1)
    den = np.linalg.norm(theta_1, axis=-1) * np.linalg.norm(theta_2, axis=-1)
    return np.where(den > 0, num / np.maximum(den, 1e-30), 0.0)


def _encoder(data, dictionary, model=None):
    """``text -> dictionary ids`` as the data of ``data`` was encoded (``model``: the topic model,
    whose GPT-2 encoder serves a BART data directory, which has no ``prepare_args.json``)."""
    from fairseq.data import encoders

    from .. import text  # noqa: F401  (registers sum_moses)

    recorded = {}
    path = os.path.join(data, "prepare_args.json")
    if os.path.exists(path):
        with open(path) as f:
            recorded = json.load(f)
    tok_args = recorded.get("tokenizer", {})
    bpe_args = dict(recorded.get("bpe", {}))
    if bpe_args.get("sentencepiece_model") and not os.path.isabs(bpe_args["sentencepiece_model"]):
        bpe_args["sentencepiece_model"] = os.path.join(data, bpe_args["sentencepiece_model"])
    gpt2 = model.gpt2_encoder() if model is not None and not bpe_args.get("bpe") else None
    if gpt2 is not None:

        def encode_gpt2(line):
            ids = gpt2.encode(" ".join(line.replace("<sep>", " ").split()))
            return dictionary.encode_line(" ".join(map(str, ids)), add_if_not_exist=False, append_eos=False).numpy()

        return encode_gpt2
    tokenizer = encoders.build_tokenizer(Namespace(**tok_args)) if tok_args.get("tokenizer") else None
    bpe = encoders.build_bpe(Namespace(**bpe_args)) if bpe_args.get("bpe") else None

    def encode(line):
        if tokenizer is not None:
            line = tokenizer.encode(line)
        if bpe is not None:
            line = bpe.encode(line)
        return dictionary.encode_line(line, add_if_not_exist=False, append_eos=False).numpy()

    return encode


def load_topic_model(data, topic_model=None):
    """(dictionary, PoissonFactorAnalysis) of a data dir; Phi is checked against the dictionary."""
    from preprocess.topic_model import PoissonFactorAnalysis, load_dictionary

    dictionary = load_dictionary(data)
    model = PoissonFactorAnalysis.load(topic_model or os.path.join(data, "topic_model.npz"), dictionary)
    return dictionary, model


def summary_similarities(model, encode, hyps, docs, refs=None):
    """Mean eq. 10 of each summary to its document (and gold summary), thetas inferred with Phi fixed.

    ``hyps``/``refs`` are texts; ``docs`` are texts or arrays of dictionary ids.
    """
    # no countable token: theta = 0 (no topic evidence), SS 0; not the prior of the summarizer's side data
    theta_s = model.infer_tokens([encode(h) for h in hyps], empty="zero")
    theta_d = model.infer_tokens([encode(d) if isinstance(d, str) else d for d in docs], empty="zero")
    result = {"num_summaries": len(hyps), "ss_sum_doc": float(semantic_similarity(theta_s, theta_d).mean())}
    if refs:
        theta_g = model.infer_tokens([encode(r) for r in refs], empty="zero")
        result["ss_sum_gold"] = float(semantic_similarity(theta_s, theta_g).mean())
    return result


def format_ss(result):
    return (f"SS summary-document {result['ss_sum_doc']:.3f}"
            + (f"  summary-gold {result['ss_sum_gold']:.3f}" if "ss_sum_gold" in result else "")
            + f"  ({result['num_summaries']} summaries)")


def semantic_similarity_scores(hyps, docs, refs, topic_model, data=None):
    """Mean SS (eq. 10) of summaries to documents (``ss_sum_doc``) and to gold (``ss_sum_gold``).

    Texts are cleaned summaries / documents (sentences joined by ``<sep>``), encoded as the data
    of ``data`` was (the binarized data dir the topic model was fit on, default: the folder of
    ``topic_model``). The command line is ``fairseq-sum-score --topic-model``. Imports fairseq.
    """
    data = data or os.path.dirname(os.path.abspath(topic_model))
    dictionary, model = load_topic_model(data, topic_model)
    return summary_similarities(model, _encoder(data, dictionary, model), hyps, docs, refs)


def plot_main(args):
    import logging

    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dictionary, model = load_topic_model(args.data, args.topic_model)
    theta = np.load(os.path.join(args.data, f"{args.split}.theta.npy"), mmap_mode="r")[args.index]
    top = np.argsort(-theta)[: args.topics]
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(top) + 1))
    ax.barh(range(len(top)), theta[top], color="tab:blue")
    ax.set_yticks(range(len(top)))
    labels = []
    # words ranked by relevance (Sievert & Shirley, 2014, lambda 0.6): frequent pieces shared by
    # every topic go down
    marginal = model.phi.mean(1) + 1e-12
    for k in top:
        col = model.phi[:, k] + 1e-12
        relevance = np.where(model.keep, 0.6 * np.log(col) + 0.4 * np.log(col / marginal), -np.inf)
        words = np.argsort(-relevance)[: args.words]
        labels.append(f"topic {k}: " + " ".join(model.surface(w, dictionary) for w in words))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("theta (topic proportion)")
    ax.set_title(f"{args.split} example {args.index}: top {len(top)} topics")
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"wrote {args.png}")


def token_map(model, dictionary, n_tokens=80):
    """(token ids, (n, 2) PCA coordinates of their normalised Phi rows) of the most frequent kept tokens."""
    counts = np.asarray(dictionary.count, dtype=np.float64)
    mass = model.phi.sum(1)
    candidates = np.flatnonzero(model.keep & (mass > 0))
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
    import logging

    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dictionary, model = load_topic_model(args.data, args.topic_model)
    ids, coords = token_map(model, dictionary, args.tokens)
    if len(ids) == 0:
        raise ValueError("no kept token has a non-zero Phi row")
    colour = model.phi[ids].argmax(1)
    fig, ax = plt.subplots(figsize=(10, 8))
    ax.scatter(coords[:, 0], coords[:, 1], c=colour, cmap="tab20", s=12)
    for (x, y), i in zip(coords, ids):
        ax.annotate(model.surface(i, dictionary), (x, y), fontsize=7, xytext=(2, 2),
                    textcoords="offset points")
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.set_title(f"{len(ids)} most frequent tokens: PCA of p(topic | token), colour = top topic")
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    plt.close(fig)
    print(f"wrote {args.png}")
    return ids, coords


def main(argv=None):
    p = argparse.ArgumentParser(description="Topic Assistant analyses (a document's topics, the topic map); "
                                "semantic similarity: fairseq-sum-score --topic-model")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("plot", help="a document's top topics with their top words, as a PNG")
    g.add_argument("data")
    g.add_argument("--split", default="test")
    g.add_argument("--index", type=int, default=0)
    g.add_argument("--topics", type=int, default=5)
    g.add_argument("--words", type=int, default=8)
    g.add_argument("--png", default="topics.png")
    m = sub.add_parser("map", help="2-D PCA map of the Phi rows of the most frequent tokens, as a PNG")
    m.add_argument("data")
    m.add_argument("--tokens", type=int, default=80)
    m.add_argument("--png", default="topic_map.png")
    for q in (g, m):
        q.add_argument("--topic-model", default=None)
    args = p.parse_args(argv)
    return {"plot": plot_main, "map": map_main}[args.cmd](args)


if __name__ == "__main__":
    main()
