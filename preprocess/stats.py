"""Corpus statistics of the converters' JSONL, beside the figures the papers print, and the
papers' truncations.

Every converter (``preprocess/*_to_jsonl.py``) takes the options of :func:`add_arguments`:

* ``--stats``: after writing ``OUT/{train,valid,test}.jsonl``, print the number of examples per
  split and the average words / sentences of documents and summaries (over all splits), with the
  rows the papers report for that corpus underneath (:data:`REFERENCE`). Words are whitespace
  tokens, sentences those of :func:`fairseq_sum_plugins.text.split_sentences` (what
  ``fairseq-sum-prepare`` keeps as ``<sep>``). The papers count tokens of their own tokenizers
  (Stanford CoreNLP, Moses), which split off punctuation: on news text whitespace words are roughly
  10-15% fewer (1,000 real XSum test pairs: 376 words / 435 Moses tokens per document, 21.0 / 23.2
  per summary, against 431.07 / 23.26 in Topic Assistant Table 1). Sentence counts compare
  directly.
* ``--paper-truncation NAME``: cut documents / summaries to the lengths of a paper
  (:data:`PAPER_TRUNCATION`), in words, keeping whole sentences: the sentence that crosses the
  limit is cut at it, the following ones dropped. ``--max-doc-words`` / ``--max-summary-words``
  set (or override) the limits. A truncated document is written as its list of sentences.
  ``fairseq-sum-prepare --max-src-tokens`` truncates again, in subword pieces.

Usable on its own, on any JSONL directory::

    python -m preprocess.stats data/xsum/jsonl --dataset xsum
"""
import argparse
import contextlib
import json
import os
import sys
from collections import namedtuple

SPLITS = ("train", "valid", "test")

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

# name -> (max document words, max summary words, max sections, max words per section, where)
PAPER_TRUNCATION = {
    "etads": (400, 100, 0, 0, "ETADS §4.1: documents <= 400 tokens, summaries <= 100"),
    "mem2mem": (0, 200, 4, 500, "Mem2Mem App. A.2: 4 sections x 500 tokens, summaries <= 200 tokens"),
    "information_selection": (700, 0, 0, 0, "information selection §4.1: documents truncated to 700 tokens"),
    "topic_assistant": (512, 0, 0, 0, "Topic Assistant App. B: the encoder's 512 input tokens (BertSUM)"),
}


def add_arguments(parser):
    g = parser.add_argument_group("statistics and truncation (preprocess/stats.py)")
    g.add_argument("--stats", action="store_true",
                   help="print examples / average words and sentences beside the papers' figures")
    g.add_argument("--paper-truncation", choices=sorted(PAPER_TRUNCATION),
                   help="; ".join(v[-1] for v in PAPER_TRUNCATION.values()))
    g.add_argument("--max-doc-words", type=int, default=None, help="cut documents after N words (0: off)")
    g.add_argument("--max-summary-words", type=int, default=None, help="cut summaries after N words (0: off)")
    return parser


def limits(args):
    """``(max_doc_words, max_summary_words, max_sections, max_section_words)`` of ``args``."""
    doc, summ, sections, section_words, _ = PAPER_TRUNCATION.get(
        getattr(args, "paper_truncation", None) or "", (0, 0, 0, 0, ""))
    if getattr(args, "max_doc_words", None) is not None:
        doc = args.max_doc_words
    if getattr(args, "max_summary_words", None) is not None:
        summ = args.max_summary_words
    return doc, summ, sections, section_words


def split_sentences(text):
    """:func:`fairseq_sum_plugins.text.split_sentences` (imported when first needed)."""
    from fairseq_sum_plugins.text import split_sentences as split

    return split(text)


def truncate_sentences(sents, max_words):
    """The leading sentences of ``sents`` holding at most ``max_words`` words (0: all); the
    sentence crossing the limit is cut at it."""
    if not max_words:
        return list(sents)
    out, left = [], max_words
    for s in sents:
        words = s.split()
        if not words:
            continue
        if len(words) >= left:
            out.append(" ".join(words[:left]))
            break
        out.append(s)
        left -= len(words)
    return out


def truncate_text(text, max_words):
    """``text`` (string or list of sentences) cut after ``max_words`` words; unchanged when
    ``max_words`` is 0 or the text is short enough, else the list of kept sentences."""
    if not max_words:
        return text
    sents = split_sentences(text)
    if sum(len(s.split()) for s in sents) <= max_words:
        return text
    return truncate_sentences(sents, max_words)


def truncate_example(example, args, doc_field="document", summary_field="summary"):
    """``example`` with its document / summary cut to the limits of ``args`` (in place)."""
    doc, summ, _, _ = limits(args)
    if doc:
        example[doc_field] = truncate_text(example[doc_field], doc)
    if summ:
        example[summary_field] = truncate_text(example[summary_field], summ)
    return example


@contextlib.contextmanager
def open_split(path):
    """``path`` opened for writing (UTF-8) under a temporary name that replaces ``path`` only when
    the block ends without an error. An interrupted converter thus leaves no partial split: the
    recipes skip conversion when ``test.jsonl`` (written last) exists, and must not find a
    truncated one."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            yield f
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    os.replace(tmp, path)


def write_split(args, split, examples, note=""):
    """Writes ``OUT/{split}.jsonl`` (each example truncated as asked), reports it, returns the count."""
    path = os.path.join(args.out, f"{split}.jsonl")
    with open_split(path) as f:
        for example in examples:
            f.write(json.dumps(truncate_example(example, args), ensure_ascii=False) + "\n")
    print(f"| {path}: {len(examples)} examples{note}")
    return len(examples)


def iter_jsonl(path, error):
    """Yields ``(line number, where, object)`` for the non-blank lines of a JSONL file; a line that is not valid
    UTF-8 JSON (e.g. a truncated file) or not an object raises ``error`` naming ``path:line``."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                obj = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise error(f"{where}: invalid JSON line (truncated file?): {e}") from None
            if not isinstance(obj, dict):
                raise error(f"{where}: expected a JSON object")
            yield lineno, where, obj


def run_converter(name, main, errors):
    """Console entry of a converter: its errors become a one-line message and exit status 1."""
    try:
        main()
    except errors as e:
        sys.exit(f"{name}: error: {e}")


def _counts(text):
    sents = split_sentences(text)
    return sum(len(s.split()) for s in sents), len(sents)


def corpus_stats(splits):
    """``splits``: ``{split: iterable of examples}`` -> examples per split and averages over all."""
    n = {}
    totals = [0, 0, 0, 0]
    for split, examples in splits.items():
        n[split] = 0
        for ex in examples:
            dw, ds = _counts(ex["document"])
            sw, ss = _counts(ex["summary"])
            for i, v in enumerate((dw, ds, sw, ss)):
                totals[i] += v
            n[split] += 1
    total = sum(n.values()) or 1
    avg = [t / total for t in totals]
    return {"examples": n, "doc_words": avg[0], "doc_sents": avg[1], "sum_words": avg[2], "sum_sents": avg[3]}


def read_jsonl_dir(directory):
    """``{split: examples}`` of a converter's output directory (missing splits are skipped)."""
    splits = {}
    for split in SPLITS:
        path = os.path.join(directory, split + ".jsonl")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                splits[split] = [json.loads(line) for line in f if line.strip()]
    return splits


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


def report(out_dir, dataset, file=None):
    """Print the table of ``out_dir``'s JSONL for ``dataset``; returns our statistics."""
    ours = corpus_stats(read_jsonl_dir(out_dir))
    print(format_table(dataset, ours), file=file or sys.stdout)
    return ours


def finish(args, dataset, out_dir=None):
    """Call at the end of a converter: prints the statistics when ``--stats`` was given."""
    if getattr(args, "stats", False):
        return report(out_dir or args.out, dataset)
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description="statistics of a JSONL directory beside the papers' figures")
    p.add_argument("jsonl_dir")
    p.add_argument("--dataset", required=True, choices=sorted(REFERENCE))
    args = p.parse_args(argv)
    return report(args.jsonl_dir, args.dataset)


if __name__ == "__main__":
    main()
