"""ACLSum as JSONL for ``fairseq-sum-prepare``: paper body (full text) -> abstract.

Usage::

    python -m preprocess.aclsum_to_jsonl --out DIR [--summary abstract]

The ``aclsum`` package ships its 250 ACL papers (train 100 / val 50 / test 100) together with
their S2ORC full-text parses, so nothing is downloaded. For every paper we write one line::

    {"id": ..., "title": ..., "document": "<paragraph>\\n<paragraph>...", "summary": [sentences]}

* ``document``: the body paragraphs of the S2ORC parse (``pdf_parse.body_text``), one per line,
  in order; section titles, acknowledgement paragraphs and back matter are left out.
  ``fairseq-sum-prepare`` splits the paragraphs into sentences.
* ``summary``: the abstract (``--summary abstract``, default), as raw-text sentences cut at the
  sentence boundaries annotated in ACLSum. ``challenge``/``approach``/``outcome`` pick one of
  the ACLSum aspect summaries instead, ``aspects`` all three as three sentences.

Splits ``train``/``val``/``test`` become ``train.jsonl``/``valid.jsonl``/``test.jsonl``.
``--stats`` prints the corpus statistics (``preprocess/stats.py``); ``--max-doc-words`` /
``--max-summary-words`` cut documents / summaries there as in the other converters.
"""
import argparse
import os
import re
import sys

from . import converter_io, stats

SPLITS = {"train": "train", "val": "valid", "test": "test"}
ASPECTS = ("challenge", "approach", "outcome")
_ACK = re.compile(r"^\s*acknowledge?ments?\s*$", re.IGNORECASE)


def get_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="output directory for the JSONL files")
    parser.add_argument("--summary", default="abstract",
                        choices=("abstract",) + ASPECTS + ("aspects",),
                        help="target summary (default: the abstract)")
    converter_io.add_arguments(parser)
    return parser


def align_sentences(raw, sents):
    """Cut ``raw`` text where the (tokenized) ``sents`` end; None when they do not match it."""
    out, pos = [], 0
    for sent in sents:
        target, got, start = re.sub(r"\s+", "", sent), [], pos
        while pos < len(raw) and len(got) < len(target):
            if not raw[pos].isspace():
                got.append(raw[pos])
            pos += 1
        if "".join(got) != target:
            return None
        out.append(raw[start:pos].strip())
    return out if not raw[pos:].strip() else None


def body_paragraphs(paper):
    """Body paragraphs of the S2ORC parse, without acknowledgements."""
    body = paper.get("pdf_parse", {}).get("body_text", [])
    paras = (p["text"].strip() for p in body if not _ACK.match(p.get("section") or ""))
    return [p for p in paras if p]


def convert(doc, summary="abstract"):
    """One :class:`aclsum.aclsum.Document` -> a JSON-serialisable example."""
    paper = doc.get_fulltext_parse()
    paras = body_paragraphs(paper)
    if not paras:  # fall back to the sentences annotated in ACLSum
        paras = doc.get_all_sentences(["introduction", "conclusion"])
    if summary == "abstract":
        sents = doc.sentences["abstract"]
        target = align_sentences(paper.get("abstract") or "", sents) or list(sents)
    elif summary == "aspects":
        target = [doc.summaries[a] for a in ASPECTS]
    else:
        target = [doc.summaries[summary]]
    return {"id": doc.id, "title": doc.title, "document": "\n".join(paras), "summary": target}


def main(argv=None):
    args = get_parser().parse_args(argv)
    try:
        from aclsum import ACLSum
    except ImportError as e:
        sys.exit(f"aclsum_to_jsonl: error: the aclsum package is needed ({e}); pip install aclsum")
    os.makedirs(args.out, exist_ok=True)
    counts = {}
    for split, name in SPLITS.items():
        counts[name] = converter_io.write_split(args, name, [convert(doc, args.summary) for doc in ACLSum(split)])
    stats.finish(args, "aclsum")
    return counts


if __name__ == "__main__":
    converter_io.run_converter("aclsum_to_jsonl", main, converter_io.ExampleError)
