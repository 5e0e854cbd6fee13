"""arXiv / PubMed (Cohan et al., 2018) as JSONL (``id``, ``document``, ``summary``) for ``fairseq-sum-prepare``.

Usage::

    python -m preprocess.arxiv_pubmed_to_jsonl --in pubmed-dataset --out data/pubmed/jsonl
        [--keep-sections] [--max-sections 4] [--limit-per-split N]

Input: the directory of the released data (``train.txt``, ``val.txt``, ``test.txt``; ``.jsonl``
names are accepted too), one JSON object per line with ``article_id``, ``article_text`` (list of
sentences), ``abstract_text`` (list of ``<S> sentence </S>`` strings), ``section_names`` and
``sections`` (list of sentence lists).

Output: ``OUT/{train,valid,test}.jsonl`` with ``document`` = the article sentences and ``summary``
= the abstract sentences (``<S>``/``</S>`` removed), both as lists so that ``fairseq-sum-prepare``
keeps every sentence (as ``<sep>``). ``--max-sections N`` builds the document from the first N
sections only (App. A.2 of Mem2Mem / Cohan et al. use 4). ``--max-section-words N`` cuts every
section after N words (whole sentences kept, the one crossing the limit cut; Mem2Mem: 500).
``--paper-truncation mem2mem`` sets 4 sections x 500 words (every one of the 4 sections keeps its
first 500 words: at most 2000 words) and abstracts of at most 200 words; the recipes
(``recipes/{pubmed,arxiv}/run.sh``) use it. A record without ``sections`` falls back to
``article_text``, cut after N x 500 words when both limits are set. ``--stats`` prints our
averages beside Mem2Mem §5.1's (``--dataset`` names the corpus, default: guessed from the input
path).
``--keep-sections`` also writes ``sections`` and ``section_names``. Examples with an empty article
or abstract are skipped (counted on stderr).
"""
import argparse
import json
import os
import re
import sys

from . import converter_io, stats

SPLITS = {"train": ("train",), "valid": ("val", "valid", "validation"), "test": ("test",)}
TAG = re.compile(r"</?S>")


class ConvertError(Exception):
    """Bad input; the message names the file (and line)."""


def clean_sentences(sents):
    out = []
    for s in sents or []:
        s = " ".join(TAG.sub(" ", str(s)).split())
        if s:
            out.append(s)
    return out


def convert_example(obj, where, max_sections=0, keep_sections=False, max_section_words=0):
    """The output record of one input object, or None when the article or abstract is empty."""
    for key in ("article_text", "abstract_text"):
        if key not in obj:
            raise ConvertError(f"{where}: missing field {key!r} (has: {', '.join(sorted(obj))})")
    if not isinstance(obj["article_text"], list) or not isinstance(obj["abstract_text"], list):
        raise ConvertError(f"{where}: article_text and abstract_text must be lists of sentences")
    sections = [clean_sentences(sec) for sec in obj.get("sections") or []]
    if max_section_words:
        sections = [converter_io.truncate_sentences(sec, max_section_words) for sec in sections]
    if (max_sections or max_section_words) and sections:
        document = [s for sec in sections[:max_sections or None] for s in sec]
    else:
        document = clean_sentences(obj["article_text"])
        if max_sections and max_section_words:  # no sections: the same word budget over the article
            document = converter_io.truncate_sentences(document, max_sections * max_section_words)
    summary = clean_sentences(obj["abstract_text"])
    if not document or not summary:
        return None
    record = {"id": str(obj.get("article_id", "")), "document": document, "summary": summary}
    if keep_sections:
        record["sections"] = sections
        record["section_names"] = [str(n) for n in obj.get("section_names") or []]
    return record


def find_split(directory, split):
    for name in SPLITS[split]:
        for ext in (".txt", ".jsonl"):
            path = os.path.join(directory, name + ext)
            if os.path.isfile(path):
                return path
    raise ConvertError(f"{directory}: no {split} file ({', '.join(n + '.txt' for n in SPLITS[split])})")


def convert_file(path, out_path, max_sections=0, keep_sections=False, limit=0, max_section_words=0, args=None):
    kept = skipped = 0
    with converter_io.open_split(out_path) as fout:
        for _, where, obj in converter_io.iter_jsonl(path, ConvertError):
            record = convert_example(obj, where, max_sections, keep_sections, max_section_words)
            if record is None:
                skipped += 1
                continue
            if args is not None:
                record = converter_io.finish_example(record, args)
            fout.write(json.dumps(record, ensure_ascii=False) + "\n")
            kept += 1
            if limit and kept >= limit:
                break
    return kept, skipped


def get_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--in", dest="input", required=True, help="directory of train.txt / val.txt / test.txt")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--max-sections", type=int, default=None, help="document = first N sections (0: the whole article)")
    parser.add_argument("--max-section-words", type=int, default=None, help="cut every section after N words (0: off)")
    parser.add_argument("--dataset", choices=("arxiv", "pubmed"), help="corpus name for --stats (default: from --in)")
    parser.add_argument("--keep-sections", action="store_true", help="also write sections and section_names")
    parser.add_argument("--limit-per-split", type=int, default=0, help="keep the first N examples (0: all)")
    converter_io.add_arguments(parser)
    return parser


def main(argv=None):
    args = converter_io.parse_guarded(get_parser(), argv, lambda a: [("--in", a.input)])
    _, _, paper_sections, paper_section_words = converter_io.limits(args)
    max_sections = paper_sections if args.max_sections is None else args.max_sections
    max_section_words = paper_section_words if args.max_section_words is None else args.max_section_words
    try:
        os.makedirs(args.out, exist_ok=True)
        for split in SPLITS:
            path = find_split(args.input, split)
            kept, skipped = convert_file(path, os.path.join(args.out, f"{split}.jsonl"),
                                         max_sections, args.keep_sections, args.limit_per_split,
                                         max_section_words, args)
            print(f"{split}: {kept} examples from {path} ({skipped} with an empty article or abstract skipped)",
                  file=sys.stderr)
        dataset = args.dataset or ("pubmed" if "pubmed" in os.path.abspath(args.input).lower() else "arxiv")
        stats.finish(args, dataset)
    except ConvertError as e:
        sys.exit(f"arxiv_pubmed_to_jsonl: {e}")


if __name__ == "__main__":
    converter_io.run_converter("arxiv_pubmed_to_jsonl", main, ConvertError)
