"""New York Times Annotated Corpus (Sandhaus, 2008) as JSONL (``document``, ``summary``, ``id``).

The corpus is licensed (LDC2008T19), so there is nothing to download: extract it yourself into
JSONL, one object per line with ``article`` (the full text: a string with paragraphs on separate
lines, or a list of paragraphs / sentences) and ``abstract`` (the online abstract: string or
list), optionally ``id`` (e.g. the document's GUID), ``date`` (``YYYY-MM-DD``, or
``publication_date``) and ``split`` (``train`` / ``valid`` / ``test``)::

    # a directory with train/valid(ation)/test.jsonl
    python -m preprocess.nyt_to_jsonl --jsonl DIR --out RAW
    # one file: by its "split" field, else Liu (2019)'s split by date (test = published from
    # 2007-01-01; 4,000 training articles held out for validation), else a seeded carve
    python -m preprocess.nyt_to_jsonl --jsonl nyt.jsonl --out RAW --min-summary-words 50 --stats

``--min-summary-words 50`` is the filter of Durrett et al. / Liu & Lapata (2019) that Topic
Assistant follows (App. A: "removing documents whose summary has less than 50 tokens", 3,452 test
articles). ``--field-article`` / ``--field-abstract`` read other field names. The NYT abstracts
carry trailing markers such as ``(M)`` / ``(S)`` (map, photo), removed with ``--strip-markers``
(default on). An invalid JSON line or a missing field is an error naming the file and line.
"""
import argparse
import os
import random
import re

from . import converter_io, stats
from .xsum_to_jsonl import SPLIT_NAMES, ConvertError, carve, find_split_file

_MARKER = re.compile(r"\s*(?:;\s*)?\((?:[A-Z])\)\s*$")


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jsonl", required=True, help="JSONL file, or directory with train/valid/test.jsonl")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--field-article", default="article",
                   help="JSONL field of the full text: a string or a list of strings "
                   "(default: %(default)s)")
    p.add_argument("--field-abstract", default="abstract",
                   help="JSONL field of the abstract, the summary: a string or a list of strings "
                   "(default: %(default)s)")
    p.add_argument("--test-from-date", default="2007-01-01",
                   help="one file with dates: articles published from this day form the test split")
    p.add_argument("--valid-size", type=int, default=4000, help="validation articles held out of train (date split)")
    p.add_argument("--valid-frac", type=float, default=0.05, help="carve shares when the file has no split or date")
    p.add_argument("--test-frac", type=float, default=0.05,
                   help="test share carved when the file has no split or date (default: %(default)s)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the shuffle that picks the --valid-size articles (date split) or "
                   "carves the shares (default: %(default)s)")
    p.add_argument("--min-summary-words", type=int, default=0,
                   help="drop examples whose abstract has fewer words (Liu & Lapata 2019: 50)")
    p.add_argument("--strip-markers", type=lambda s: s.lower() not in ("0", "false", "no"), default=True,
                   help="remove trailing (M)/(S)-style markers of the abstracts (default: true)")
    p.add_argument("--limit-per-split", type=int, default=0, help="keep the first N examples (0: all)")
    converter_io.add_arguments(p)
    return p


def _text(value, where, field):
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise ConvertError(f"{where}: missing field {field!r} or not a string / list of strings")


def read_jsonl(path, args):
    examples = []
    for lineno, where, obj in converter_io.iter_jsonl(path, ConvertError):
        article = _text(obj.get(args.field_article), where, args.field_article)
        abstract = _text(obj.get(args.field_abstract), where, args.field_abstract)
        if args.strip_markers:
            if isinstance(abstract, str):
                abstract = _MARKER.sub("", abstract)
            else:
                abstract = [s for s in (_MARKER.sub("", a) for a in abstract) if s]
        ex = {"document": article, "summary": abstract, "id": str(obj.get("id", lineno))}
        date = obj.get("date") or obj.get("publication_date")
        examples.append((ex, obj.get("split"), str(date) if date else None, where))
    return examples


def split_examples(examples, args):
    """``{split: examples}`` of one file: by ``split`` field, else by date, else carved."""
    if all(s is not None for _, s, _, _ in examples):
        splits = {s: [] for s in converter_io.SPLITS}
        for ex, s, _, where in examples:
            s = {"validation": "valid", "val": "valid", "dev": "valid"}.get(s, s)
            if s not in splits:
                raise ConvertError(f"{where}: unknown split {s!r} (train, valid, test)")
            splits[s].append(ex)
        return splits
    if examples and all(d is not None for _, _, d, _ in examples):
        train = [ex for ex, _, d, _ in examples if d[:10] < args.test_from_date]
        test = [ex for ex, _, d, _ in examples if d[:10] >= args.test_from_date]
        order = list(range(len(train)))
        random.Random(args.seed).shuffle(order)
        held = set(order[: args.valid_size])
        return {"train": [e for i, e in enumerate(train) if i not in held],
                "valid": [e for i, e in enumerate(train) if i in held], "test": test}
    return carve([ex for ex, _, _, _ in examples],
                 {"train": None, "valid": args.valid_frac, "test": args.test_frac}, args.seed)


def convert(args):
    """Write ``OUT/{train,valid,test}.jsonl``; returns the number of examples per split."""
    if os.path.isdir(args.jsonl):
        paths = {s: find_split_file(args.jsonl, names) for s, names in SPLIT_NAMES.items()}
        missing = [s for s, p in paths.items() if p is None]
        if missing:
            raise ConvertError(f"{args.jsonl}: no {missing[0]}.jsonl")
        splits = {s: [e[0] for e in read_jsonl(p, args)] for s, p in paths.items()}
    elif os.path.isfile(args.jsonl):
        splits = split_examples(read_jsonl(args.jsonl, args), args)
    else:
        raise ConvertError(f"{args.jsonl}: no such file or directory")
    os.makedirs(args.out, exist_ok=True)
    counts = {}
    for split in converter_io.SPLITS:
        kept = [e for e in splits[split] if e["document"] and e["summary"]]
        short = 0
        if args.min_summary_words:
            n = len(kept)
            kept = [e for e in kept if sum(len(s.split()) for s in converter_io.split_sentences(e["summary"], args.sentence_splitter))
                    >= args.min_summary_words]
            short = n - len(kept)
        empty = len(splits[split]) - len(kept) - short
        kept = kept[: args.limit_per_split or None]
        note = f" ({empty} empty, {short} with a summary < {args.min_summary_words} words dropped)"
        counts[split] = converter_io.write_split(args, split, kept, note)
    stats.finish(args, "nyt")
    return counts


def main(argv=None):
    return convert(converter_io.parse_guarded(get_parser(), argv, lambda a: [("--jsonl", a.jsonl)]))


def cli_main():
    converter_io.run_converter("nyt_to_jsonl", main, ConvertError)


if __name__ == "__main__":
    cli_main()
