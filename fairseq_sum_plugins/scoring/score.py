"""``fairseq-sum-score``: ROUGE (P/R/F1 with bootstrap CIs), METEOR, novel n-grams and the Topic
Assistant's semantic similarity of generated summaries.

Inputs: the stdout of ``fairseq-generate`` (``--generate-output``) or two files with one summary
per line (``--hyp`` with ``--ref``, ``--ref-jsonl`` or ``--data``).

References of a generate output are the untruncated gold summaries that ``fairseq-sum-prepare``
writes to ``DATA/bin/{split}.ref.jsonl`` (``--data``, or the absolute data path of fairseq's log
line in the output or in ``GEN.log`` beside it), or ``--ref-jsonl RAW.jsonl`` (field
``--ref-field``; binarized example ``i`` is matched to its record through the data folder's
reference index, so records dropped by ``--skip-empty`` stay aligned), or ``--ref FILE``; each is
checked against the ``T-`` lines (a cut ``T-`` line starts its reference; the error names the first
sample that differs). Without references the output is refused; ``--refs t-lines`` scores the
``T-`` lines, cut by ``--max-tgt-tokens``, by name. With the split's size known, sample ids missing
from the output (at its end too) are reported. ``--hyp`` with ``--data`` must cover the split
(references from ``DATA/bin/{split}.ref.jsonl`` unless given). All of it is
:mod:`fairseq_sum_plugins.scoring.score_inputs`, shared with ``fairseq-sum-compare``.

Measurements (all also in ``--json``):

* ROUGE (:class:`fairseq_sum_plugins.scoring.rouge.Scorer`, the options of
  :func:`~fairseq_sum_plugins.scoring.rouge.add_scorer_options` shared with ``fairseq-sum-compare``
  and the gate sweep): ``--scorer rouge155-py`` (default: ROUGE-1.5.5 in Python, equal to it per
  document; ``rouge-score`` is its deprecated name) | ``official`` (ROUGE-1.5.5, ``--workers``
  processes) | ``files2rouge``; ``--report prf`` adds a precision / recall / F1 table of every ROUGE
  variant (ETADS Tables 5-6).
* ``--meteor``: METEOR (:mod:`fairseq_sum_plugins.scoring.meteor`, TP-Transformer Table 2): nltk's,
  or with ``--meteor-impl 1.5`` Meteor Universal 1.5's jar (the paper's); labelled ``meteor_impl``.
* ``--novel-ngrams [1,2,3,4]``: share of summary n-grams not in the source, for hypotheses and
  references (:mod:`fairseq_sum_plugins.scoring.novelty`, Mem2Mem Table 4).
* ``--specificity``: ROUGE-2 reference specificity
  (:mod:`fairseq_sum_plugins.scoring.specificity`): ROUGE-2 F1 of each output against its own
  reference (``own``) and against the other documents' references (``other``), their difference
  ``delta`` in ROUGE points and its permutation p-value (``--permutations``, at least 1,000, seeded
  by ``--seed``); needs an output and a reference for every document of the split; ``--json`` key
  ``specificity`` {``own``, ``other``, ``delta``, ``p``, ...}.
* ``--topic-model NPZ``: semantic similarity (TA eq. 10) of each summary to its document and to its
  gold summary (:func:`fairseq_sum_plugins.inspection.topics.semantic_similarity_scores`; imports
  fairseq).

Documents (novel n-grams, semantic similarity) are the ``S-`` lines of the generate output (the
encoder's possibly truncated input) or ``--src FILE`` (line ``i`` = sample ``i``: one line per
example of the split, or per hypothesis of ``--hyp``).

Sentences end at ``<sep>`` and newlines; ``--sentence-sep TOKEN`` adds separators (See et al.'s
``<q>``), and a known separator found in the summaries without it is warned about.
``--split-sentences`` splits one-line outputs (BART's) with the rule-based splitter.
"""
import argparse
import json
import os
import sys

import numpy as np

from ..cli.outputs import refuse_clobber
from . import rouge
from .score_inputs import (ScoreInputError, add_reference_options, generate_inputs,
                           hypothesis_inputs, int_at_least, read_lines)


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-sum-score", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--generate-output", metavar="FILE", help="stdout of fairseq-generate")
    src.add_argument("--hyp", metavar="FILE", help="hypotheses, one summary per line")
    add_reference_options(p)
    rouge.add_scorer_options(p)
    p.add_argument("--report", default="f1", choices=["f1", "prf"],
                   help="prf: also a precision/recall/F1 table of every ROUGE variant")
    p.add_argument("--meteor", action="store_true",
                   help="also METEOR (--meteor-impl, default nltk)")
    p.add_argument(
        "--meteor-impl", choices=("nltk", "1.5"),
        help="METEOR implementation: nltk (default) or 1.5 (Meteor Universal 1.5's jar, -l en "
        "-norm, as TP-Transformer Table 2; scripts/install.sh --meteor15); needs --meteor")
    p.add_argument(
        "--novel-ngrams", nargs="?", const=[1, 2, 3, 4], type=ngram_orders, metavar="ORDERS",
        help="also the novel n-gram ratios of hypotheses and references (default 1,2,3,4)")
    p.add_argument(
        "--specificity", action="store_true",
        help="also ROUGE-2 reference specificity: own vs other documents' "
        "references, with a permutation p-value (needs every document of the split)")
    p.add_argument("--permutations", type=int_at_least(1000), default=None,
                   help="permutations of the --specificity p-value (default and minimum 1000; "
                        "seeded by --seed)")
    p.add_argument("--bootstrap-samples", type=int_at_least(0), default=1000,
                   help="bootstrap resamples for the CIs (0: no CIs)")
    p.add_argument("--seed", type=int, default=1,
                   help="bootstrap (and --specificity permutation) seed")
    p.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    p.add_argument("--topic-model", metavar="NPZ",
                   help="also report semantic similarity (TA eq. 10) with this PFA topic model")
    p.add_argument("--topic-data", metavar="DIR",
                   help="data dir of the topic model (dict, spm.model, prepare_args.json; "
                        "default: the topic model's folder)")
    p.add_argument(
        "--src", metavar="FILE",
        help="documents, one per line (line i = sample id / hyp line i; as many lines as the "
        "split / the hypotheses); default: S- lines")
    return p


def ngram_orders(text):
    """argparse type of ``--novel-ngrams``: comma-separated orders >= 1."""
    try:
        orders = [int(n) for n in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected orders like 1,2,3,4, got {text!r}") from None
    if not orders or min(orders) < 1:
        raise argparse.ArgumentTypeError(f"n-gram orders must be >= 1, got {text!r}")
    return orders


# ---------------------------------------------------------------------------------------- inputs
def load_inputs(args):
    """(ids, hyps, refs, {id: source} or None, split size or None) from the command line's files."""
    if args.generate_output:
        ids, hyps, refs, gen = generate_inputs(args.generate_output, args)
        return ids, hyps, refs, gen.sources, gen.size
    ids, hyps, refs = hypothesis_inputs(args.hyp, args)
    return ids, hyps, refs, None, len(hyps)


def documents(args, ids, sources, size=None):
    """The source documents of sample ``ids`` (``--src``: ``size`` lines when known, else the S-
    lines)."""
    if args.src:
        docs = read_lines(args.src, "documents")
        if (size is not None and len(docs) != size) or ids[-1] >= len(docs):
            of = (f"{size} {'hypotheses' if args.hyp else 'examples of the split'}"
                  if size is not None else f"sample ids up to {ids[-1]}")
            raise ScoreInputError(
                f"{args.src} has {len(docs)} documents for {of} (line i = sample i)")
        return [docs[i] for i in ids]
    if sources is None:
        raise ScoreInputError("--topic-model / --novel-ngrams need the documents: --src FILE")
    missing = [i for i in ids if i not in sources]
    if missing:
        raise ScoreInputError(f"{args.generate_output}: no S- line for ids {missing[:10]} "
                              "(pass the documents with --src)")
    return [sources[i] for i in ids]


# ------------------------------------------------------------------------------------ measures
def extra_scores(args, scorer, ids, hyps, refs, sources, size=None):
    """Novel n-grams and semantic similarity, as asked for (ROUGE and METEOR:
    :meth:`Scorer.corpus`)."""
    out = {}
    if not (args.novel_ngrams or args.topic_model or args.specificity):
        return out
    hyp_sents, ref_sents = scorer.pairs(hyps, refs, ids if args.generate_output else None)
    if args.specificity:
        from .specificity import specificity

        if size is not None and len(ids) != size:
            raise ScoreInputError(f"--specificity needs an output for every document of the split: "
                                  f"{len(ids)} of {size} are there")
        out["specificity"] = specificity(hyp_sents, ref_sents, args.permutations or 1000, args.seed)
    if not (args.novel_ngrams or args.topic_model):
        return out
    docs = [rouge.clean_summary(d, scorer.detok, scorer.seps)
            for d in documents(args, ids, sources, size)]
    if args.novel_ngrams:
        from .novelty import novel_ngram_ratios

        for side, summaries in (("hyp", hyp_sents), ("ref", ref_sents)):
            for n, ratio in novel_ngram_ratios(summaries, docs, args.novel_ngrams).items():
                out[f"novel_{n}gram_{side}"] = ratio
    if args.topic_model:
        from ..features.topic_assistant.similarity import semantic_similarity_scores

        join = " <sep> ".join
        ss = semantic_similarity_scores([join(h) for h in hyp_sents], [join(d) for d in docs],
                                        [join(r) for r in ref_sents], args.topic_model,
                                        args.topic_data)
        out.update(ss_sum_doc=ss["ss_sum_doc"], ss_sum_gold=ss["ss_sum_gold"])
    return out


# ---------------------------------------------------------------------------------------- report
def format_results(res, report="f1"):
    """Text report in files2rouge's / ROUGE-1.5.5's layout plus one-line summaries."""
    lines = []
    for m in [k for k in rouge.LABELS if k in res]:
        lines.append("-" * 45)
        for letter, name in rouge.MEASURES:
            key = m if name is None else f"{m}_{name}"
            ci = res.get(key + "_ci")
            ci = f" (95%-conf.int. {ci[0]:.5f} - {ci[1]:.5f})" if ci else ""
            lines.append(f"{rouge.LABELS[m]} Average_{letter}: {res[key]:.5f}{ci}")
    lines.append("-" * 45)
    if report == "prf":
        lines.append(f"{'metric':<15} {'P':>6} {'R':>6} {'F1':>6}")
        for m in [k for k in rouge.LABELS if k in res]:
            lines.append(f"{rouge.LABELS[m]:<15} {100 * res[m + '_precision']:6.2f} "
                         f"{100 * res[m + '_recall']:6.2f} {100 * res[m]:6.2f}")
    lines.append("ROUGE-1/2/L F1: " + "/".join(f"{100 * res[m]:.2f}" for m in rouge.MAIN_METRICS))
    if "meteor" in res:
        ci = res.get("meteor_ci")
        lines.append(f"METEOR ({res['meteor_impl']}): {100 * res['meteor']:.2f}"
                     + (f" (95%-conf.int. {100 * ci[0]:.2f} - {100 * ci[1]:.2f})" if ci else ""))
    for side, name in (("hyp", "hypotheses"), ("ref", "references")):
        keys = sorted((k for k in res if k.startswith("novel_") and k.endswith("_" + side)),
                      key=lambda k: int(k.split("_")[1][:-4]))
        if keys:
            cells = [f"{k.split('_')[1]} " + ("-" if res[k] is None else f"{100 * res[k]:.1f}%")
                     for k in keys]
            lines.append(f"novel n-grams ({name}): " + "  ".join(cells))
    if "specificity" in res:
        from .specificity import format_specificity

        lines.append(format_specificity(res["specificity"]))
    if "ss_sum_doc" in res:
        lines.append(f"SS (TA eq. 10) summary-document: {res['ss_sum_doc']:.4f}  "
                     f"summary-gold: {res['ss_sum_gold']:.4f}")
    return "\n".join(lines)


def main(argv=None):
    """Runs the scorer CLI and returns the scores (``cli_main`` is the console entry point)."""
    parser = get_parser()
    args = parser.parse_args(argv)
    gen = args.generate_output
    refuse_clobber(parser, reads=[
        ("--generate-output", gen), ("the log of --generate-output", gen and gen + ".log"),
        ("--hyp", args.hyp), ("--ref", args.ref), ("--ref-jsonl", args.ref_jsonl),
        ("--data", args.data), ("--src", args.src), ("--topic-model", args.topic_model),
        ("--topic-data", args.topic_data), ("the folder of --topic-model", None if args.topic_data
                                             else args.topic_model and os.path.dirname(
                                                 os.path.abspath(args.topic_model)))],
        writes=[("--json", args.json)], files=True)
    if args.meteor_impl and not args.meteor:
        parser.error("--meteor-impl goes with --meteor")
    if args.permutations is not None and not args.specificity:
        parser.error("--permutations goes with --specificity")
    try:
        ids, hyps, refs, sources, size = load_inputs(args)
        scorer = rouge.scorer_from_args(
            args, hyps + refs, bootstrap_samples=args.bootstrap_samples, seed=args.seed,
            meteor=(args.meteor_impl or "nltk") if args.meteor else None)
        res = scorer.corpus(hyps, refs, ids if args.generate_output else None)
        res.update(extra_scores(args, scorer, ids, hyps, refs, sources, size))
    except (ValueError, RuntimeError, OSError) as e:
        sys.exit(f"fairseq-sum-score: error: {e}")
    print(format_results(res, args.report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"scorer": args.scorer, **res}, f, indent=2)
    return res


def cli_main():
    main()


if __name__ == "__main__":
    cli_main()
