"""Corpus statistics of the converters' JSONL, beside the figures the papers print.

``--stats`` (an option of every converter, :func:`preprocess.converter_io.add_arguments`): after
writing ``OUT/{train,valid,test}.jsonl``, print the number of examples per split and the average
words / sentences of documents and summaries (over all splits), with the rows the papers report
for that corpus underneath (:data:`REFERENCE`). Words are whitespace tokens, sentences those of
:func:`fairseq_sum_plugins.text.split_sentences` (what ``fairseq-sum-prepare`` keeps as ``<sep>``).
The papers count tokens of their own tokenizers (Stanford CoreNLP, Moses), which split off
punctuation, so on news text whitespace words are fewer than the papers' tokens. Sentence counts
compare directly.

Usable on its own, on any JSONL directory::

    python -m preprocess.stats data/xsum/jsonl --dataset xsum [--sentence-splitter pysbd]
"""
import argparse
import sys
from collections import namedtuple

from .converter_io import SPLITS, read_jsonl_dir, split_sentences

# docs: (train, valid, test) or None; averages over the whole corpus, None where not printed.
Ref = namedtuple("Ref", "source docs doc_words doc_sents sum_words sum_sents note", defaults=("",))

REFERENCE = {
    "cnn_dm": [
        Ref("Topic Assistant Table 1 (CNN)", (90266, 1220, 1093), 760.50, 33.98, 45.70, 3.59),
        Ref("Topic Assistant Table 1 (DM)", (196961, 12148, 10397), 653.33, 29.33, 54.65, 3.86),
        Ref("ETADS §4.1", (287226, 13368, 11490), None, 42.1, None, 3.8),
        Ref("Mem2Mem §5.1", None, 781, None, 56, None, "average lengths, tokens"),
        Ref("TP-Transformer §3.1", None, None, None, None, None, "93k CNN + 220k Daily Mail articles"),
    ],
    "xsum": [
        Ref("Topic Assistant Table 1", (204045, 11332, 11334), 431.07, 19.77, 23.26, 1.00),
        Ref("TP-Transformer §3.1", None, None, None, None, None, "227k BBC articles"),
    ],
    "nyt": [
        Ref("Topic Assistant Table 1", (96834, 4000, 3452), 800.04, 35.55, 45.54, 2.44,
            "test: published from 2007-01-01, summaries >= 50 tokens (App. A)"),
    ],
    "pubmed": [Ref("Mem2Mem §5.1", None, 3016, None, 203, None, "average lengths, tokens")],
    "arxiv": [
        Ref("Mem2Mem §5.1", None, 4938, None, 220, None, "average lengths, tokens"),
        Ref("TP-Transformer §3.1", None, None, None, None, None, "113k papers"),
    ],
    "newsroom": [
        Ref("Mem2Mem §5.1", None, 751, None, 30, None, "average lengths, tokens"),
        Ref("Information selection §4.1", None, None, None, None, None,
            "1.3M pairs, split 82% / 9% / 9%; documents < 100 or summaries < 10 tokens dropped"),
    ],
    "wikihow": [
        Ref("TP-Transformer §3.1", None, None, None, None, None,
            "200k examples; summary = the concatenated step summaries"),
    ],
    "aclsum": [
        Ref("ACLSum (Takeshita et al., 2024)", (100, 50, 100), None, None, None, None,
            "250 ACL papers; the paper's targets are the aspect summaries, here the abstract by default"),
    ],
}

def _counts(text, splitter=None):
    sents = split_sentences(text, splitter)
    return sum(len(s.split()) for s in sents), len(sents)


def corpus_stats(splits, splitter=None):
    """``splits``: ``{split: iterable of examples}`` -> examples per split and averages over all
    (sentences by ``splitter``, None: the default of :mod:`fairseq_sum_plugins.text`)."""
    n = {}
    totals = [0, 0, 0, 0]
    for split, examples in splits.items():
        n[split] = 0
        for ex in examples:
            dw, ds = _counts(ex["document"], splitter)
            sw, ss = _counts(ex["summary"], splitter)
            for i, v in enumerate((dw, ds, sw, ss)):
                totals[i] += v
            n[split] += 1
    total = sum(n.values()) or 1
    avg = [t / total for t in totals]
    return {"examples": n, "doc_words": avg[0], "doc_sents": avg[1], "sum_words": avg[2], "sum_sents": avg[3]}


def _num(v, fmt="{:.2f}"):
    return "-" if v is None else fmt.format(v)


def format_table(dataset, ours):
    """Our statistics and the papers' rows for ``dataset`` as a text table."""
    head = ("", "train/valid/test", "doc words", "doc sents", "sum words", "sum sents")
    rows = [("ours", "/".join(f"{ours['examples'].get(s, 0):,}" for s in SPLITS),
             *(_num(ours[k]) for k in ("doc_words", "doc_sents", "sum_words", "sum_sents")))]
    notes = []
    for ref in REFERENCE.get(dataset, []):
        docs = "/".join(f"{d:,}" for d in ref.docs) if ref.docs else "-"
        rows.append((ref.source, docs, *(_num(v) for v in (ref.doc_words, ref.doc_sents, ref.sum_words, ref.sum_sents))))
        if ref.note:
            notes.append(f"  {ref.source}: {ref.note}")
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    lines = [f"statistics of {dataset} (words: whitespace tokens; sentences: as fairseq-sum-prepare splits them)"]
    for r in [head] + rows:
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines + notes)


def report(out_dir, dataset, file=None, splitter=None):
    """Print the table of ``out_dir``'s JSONL for ``dataset``; returns our statistics."""
    ours = corpus_stats(read_jsonl_dir(out_dir), splitter)
    print(format_table(dataset, ours), file=file or sys.stdout)
    return ours


def finish(args, dataset, out_dir=None):
    """Call at the end of a converter: prints the statistics when ``--stats`` was given."""
    if getattr(args, "stats", False):
        return report(out_dir or args.out, dataset, splitter=getattr(args, "sentence_splitter", None))
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description="statistics of a JSONL directory beside the papers' figures")
    p.add_argument("jsonl_dir", help="a folder of {train,valid,test}.jsonl with the fields document "
                   "and summary (a converter's OUT; a missing split is skipped)")
    p.add_argument("--dataset", required=True, choices=sorted(REFERENCE),
                   help="the corpus whose figures in the papers are printed underneath")
    p.add_argument("--sentence-splitter", choices=("regex", "pysbd"), default=None,
                   help="as fairseq-sum-prepare --sentence-splitter (default: regex)")
    args = p.parse_args(argv)
    return report(args.jsonl_dir, args.dataset, splitter=args.sentence_splitter)


if __name__ == "__main__":
    main()
