"""The Topic Assistant's semantic similarity (§5.5, TA eq. 10) of summaries to their documents and
to the gold summaries, ``SS(D1, D2; Phi) = theta_1^T theta_2 / (||theta_1|| ||theta_2||)``, both
thetas inferred with ``Phi`` fixed (Table 6). Its command line is the scorer's::

    fairseq-sum-score --generate-output gen.out --data DATA/bin
                      --topic-model DATA/bin/topic_model.npz [--src FILE]

Texts are encoded again with the tokenizer and sentencepiece model recorded in
``DATA/prepare_args.json`` (for a topic model fit over BART's GPT-2 BPE dictionary, with the GPT-2
encoder recorded in ``topic_model.npz``). A summary with no countable token has theta = 0 and
scores 0.
"""
import os
from argparse import Namespace

import numpy as np


def semantic_similarity(theta_1, theta_2):
    """Row-wise TA eq. 10; 0 where a theta is the zero vector (no countable token)."""
    theta_1, theta_2 = np.asarray(theta_1, np.float64), np.asarray(theta_2, np.float64)
    num = (theta_1 * theta_2).sum(-1)
    den = np.linalg.norm(theta_1, axis=-1) * np.linalg.norm(theta_2, axis=-1)
    return np.where(den > 0, num / np.maximum(den, 1e-30), 0.0)


def _encoder(data, dictionary, model=None):
    """``text -> dictionary ids`` as the data of ``data`` was encoded (``model``: the topic model,
    whose GPT-2 encoder serves a BART data directory, which has no ``prepare_args.json``)."""
    from fairseq.data import encoders

    from ... import text  # noqa: F401  (registers sum_moses)
    from ...data_folder import read_prepare_args

    recorded = read_prepare_args(data) or {}  # validated: only the keys fairseq-sum-prepare writes
    tok_args = recorded.get("tokenizer", {})
    bpe_args = dict(recorded.get("bpe", {}))
    gpt2 = model.gpt2_encoder() if model is not None and not bpe_args.get("bpe") else None
    if gpt2 is not None:

        def encode_gpt2(line):
            ids = gpt2.encode(" ".join(line.replace("<sep>", " ").split()))
            return dictionary.encode_line(" ".join(map(str, ids)), add_if_not_exist=False,
                                          append_eos=False).numpy()

        return encode_gpt2
    tokenizer = encoders.build_tokenizer(Namespace(
        **tok_args)) if tok_args.get("tokenizer") else None
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
    from .topic_model import PoissonFactorAnalysis, load_dictionary

    dictionary = load_dictionary(data)
    model = PoissonFactorAnalysis.load(topic_model or os.path.join(data, "topic_model.npz"),
                                       dictionary)
    return dictionary, model


def summary_similarities(model, encode, hyps, docs, refs=None):
    """Mean TA eq. 10 of each summary to its document (and gold summary), thetas inferred with Phi
    fixed.

    ``hyps``/``refs`` are texts; ``docs`` are texts or arrays of dictionary ids.
    """
    # no countable token: theta = 0 (no topic evidence), SS 0; not the prior of the summarizer's
    # side data
    theta_s = model.infer_tokens([encode(h) for h in hyps], empty="zero")
    theta_d = model.infer_tokens([encode(d) if isinstance(d, str) else d for d in docs],
                                 empty="zero")
    result = {"num_summaries": len(hyps),
              "ss_sum_doc": float(semantic_similarity(theta_s, theta_d).mean())}
    if refs:
        theta_g = model.infer_tokens([encode(r) for r in refs], empty="zero")
        result["ss_sum_gold"] = float(semantic_similarity(theta_s, theta_g).mean())
    return result


def format_ss(result):
    return (f"SS summary-document {result['ss_sum_doc']:.3f}"
            + (f"  summary-gold {result['ss_sum_gold']:.3f}" if "ss_sum_gold" in result else "")
            + f"  ({result['num_summaries']} summaries)")


def semantic_similarity_scores(hyps, docs, refs, topic_model, data=None):
    """Mean SS (TA eq. 10) of summaries to documents (``ss_sum_doc``) and to gold (``ss_sum_gold``).

    Texts are cleaned summaries / documents (sentences joined by ``<sep>``), encoded as the data
    of ``data`` was (the binarized data dir the topic model was fit on, default: the folder of
    ``topic_model``). The command line is ``fairseq-sum-score --topic-model``. Imports fairseq.
    """
    data = data or os.path.dirname(os.path.abspath(topic_model))
    dictionary, model = load_topic_model(data, topic_model)
    return summary_similarities(model, _encoder(data, dictionary, model), hyps, docs, refs)
