"""LexRank (Erkan & Radev, 2004), the unsupervised extractive baseline of Mem2Mem Table 3.

Each document is a graph of its sentences (words of
:func:`fairseq_sum_plugins.scoring.rouge.rouge_words`: lower-cased, no stemming)::

    idf(w)       = log(N / n_w)        N: sentences of the document, n_w: those containing w
    cos(x, y)    = sum_w tf_x(w) tf_y(w) idf(w)^2
                   / (sqrt(sum_w (tf_x(w) idf(w))^2) sqrt(sum_w (tf_y(w) idf(w))^2))   (E&R eq. 3)
    A[u, v]      = 1 if cos(u, v) > t else 0          (threshold t = 0.1, E&R §3.2; A[u, u] = 1)
    p            = d / N + (1 - d) B^T p,  B = A / rowsum(A)                          (E&R eq. 5)

``p`` by power iteration from the uniform vector until its L1 change is below ``1e-8`` (at most
1000 steps). The extract is the ``k`` highest-scoring sentences (ties: the earlier sentence) in
document order; ``k`` = 10 for Table 3, beside Lead-10.

Chosen where the papers are silent: idf is computed over the document's own sentences (no
background corpus is named; a word in every sentence weighs 0), the jump probability is d = 0.15
(E&R: "typically chosen in [0.1, 0.2]"), and a sentence without any word (punctuation only) is an
isolated vertex with a zero vector.

``python -m fairseq_sum_plugins.evaluation.baselines.lexrank --data WORK --out FILE
[--json SCORES]``: the extracts of a fairseq-sum-prepare folder's split (WORK/raw/SPLIT.src), one
line per document joined by `` <sep> ``, and with ``--json`` their ROUGE against the untruncated
references (the keys of ``fairseq-sum-score --json``).
"""

import argparse
import json
import math
import os
import sys
from collections import Counter

import numpy as np

DEFAULT_THRESHOLD = 0.1
DEFAULT_DAMPING = 0.15


def _words(sentence):
    from ...scoring.rouge import rouge_words

    return rouge_words(sentence)


def similarity_matrix(sentences):
    """(N, N) idf-modified cosine of E&R eq. 3 between the sentences (strings) of one document."""
    tfs = [Counter(_words(s)) for s in sentences]
    n = len(sentences)
    df = Counter(w for tf in tfs for w in tf)
    idf = {w: math.log(n / c) for w, c in df.items()}
    vocab = {w: i for i, w in enumerate(sorted(df))}
    vectors = np.zeros((n, len(vocab)))
    for i, tf in enumerate(tfs):
        for w, c in tf.items():
            vectors[i, vocab[w]] = c * idf[w]
    norms = np.linalg.norm(vectors, axis=1)
    dots = vectors @ vectors.T
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = dots / np.outer(norms, norms)
    sim[~np.isfinite(sim)] = 0.0
    np.fill_diagonal(sim, 1.0)
    return sim


def lexrank_scores(sentences, threshold=DEFAULT_THRESHOLD, damping=DEFAULT_DAMPING, tol=1e-8,
                   max_steps=1000):
    """Stationary LexRank scores (summing to 1) of the sentences of one document."""
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    if not 0 < damping <= 1:
        raise ValueError(f"damping must be in (0, 1], got {damping}")
    n = len(sentences)
    if n == 0:
        return np.zeros(0)
    adjacency = (similarity_matrix(sentences) > threshold).astype(float)
    np.fill_diagonal(adjacency, 1.0)
    transition = adjacency / adjacency.sum(axis=1, keepdims=True)
    p = np.full(n, 1.0 / n)
    for _ in range(max_steps):
        nxt = damping / n + (1 - damping) * transition.T @ p
        if np.abs(nxt - p).sum() < tol:
            return nxt
        p = nxt
    return p


def lexrank_extract(sentences, k=10, threshold=DEFAULT_THRESHOLD, damping=DEFAULT_DAMPING):
    """The ``k`` best sentences by LexRank score (ties: the earlier), in document order."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    scores = lexrank_scores(sentences, threshold, damping)
    best = sorted(range(len(sentences)), key=lambda i: (-round(scores[i], 12), i))[:k]
    return [sentences[i] for i in sorted(best)]


def get_parser():
    from ...scoring import rouge

    p = argparse.ArgumentParser(prog="python -m fairseq_sum_plugins.evaluation.baselines.lexrank",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, metavar="WORK",
                   help="a folder of fairseq-sum-prepare (WORK or WORK/bin)")
    p.add_argument("--split", default="test",
                   help="the split to extract: WORK/raw/SPLIT.src, its references "
                        "WORK/bin/SPLIT.ref.jsonl (default: %(default)s)")
    p.add_argument("--sentences", type=int, default=10, help="sentences per extract (k)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help="cosine above which two sentences are linked, t in [0, 1) "
                        "(default: %(default)s)")
    p.add_argument("--damping", type=float, default=DEFAULT_DAMPING,
                   help="jump probability d of the random walk, in (0, 1] (default: %(default)s)")
    p.add_argument("--out", required=True, help="extracts, one line per document")
    p.add_argument("--json", help="also their ROUGE (the keys of fairseq-sum-score --json)")
    rouge.add_scorer_options(p, rouge.DOCUMENT_BACKENDS)
    return p


def main(argv=None):
    from ...cli.outputs import refuse_clobber
    from ...scoring import rouge
    from .systems import BaselineError, prepared_reads, read_prepared
    from ..decodings import JOIN, write_lines

    parser = get_parser()
    args = parser.parse_args(argv)
    refuse_clobber(parser, prepared_reads("--data", args.data, args.split),
                   [("--out", args.out), ("--json", args.json)], files=True)
    if args.sentences < 1:
        parser.error(f"--sentences must be >= 1, got {args.sentences}")
    if not 0 <= args.threshold < 1:
        parser.error(f"--threshold must be in [0, 1), got {args.threshold}")
    if not 0 < args.damping <= 1:
        parser.error(f"--damping must be in (0, 1], got {args.damping}")
    for name in ("out", "json"):
        path = getattr(args, name)
        if path and os.path.isdir(path):
            parser.error(f"--{name} {path}: a folder")
    try:
        docs, refs = read_prepared(args.data, args.split)
    except BaselineError as e:
        parser.error(str(e))
    extracts = [lexrank_extract(d, args.sentences, args.threshold, args.damping) for d in docs]
    write_lines(args.out, [JOIN.join(e) for e in extracts])
    print(f"lexrank: {len(extracts)} extracts of {args.sentences} sentences -> {args.out}")
    if args.json:
        scorer = rouge.scorer_from_args(args, refs, bootstrap_samples=0).check()
        res = scorer.corpus(extracts, refs)
        res.update(system="lexrank", sentences=args.sentences, threshold=args.threshold,
                   damping=args.damping, split=args.split)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"scorer": args.scorer, **res}, f, indent=2)
        print(" ".join(f"{k} {100 * res[k]:.2f}" for k in ("rouge1", "rouge2", "rougeL")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
