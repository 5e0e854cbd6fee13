"""CNN / Daily Mail as JSONL (``document``, ``summary``, ``id``) for ``fairseq-sum-prepare``.

The non-anonymized version (See et al., 2017), from either source::

    # Hugging Face ``cnn_dailymail`` JSONL (fields article / highlights / id): a directory with
    # train/validation/test.jsonl, or one file carved into splits by a seeded shuffle
    python -m preprocess.cnndm_to_jsonl --jsonl DIR --out RAW
    # the raw .story files (cnn/stories, dailymail/stories) + abisee/cnn-dailymail's url lists
    # (all_train.txt, all_val.txt, all_test.txt): the official 287,226 / 13,368 / 11,490 split
    python -m preprocess.cnndm_to_jsonl --stories-dir cnn/stories dailymail/stories --url-lists url_lists --out RAW

A ``.story`` file holds the article's paragraphs, then each highlight after a line ``@highlight``.
A story is named by the SHA-1 of its URL (as in the url lists). The document keeps its paragraphs
(newline-separated, split into sentences by ``fairseq-sum-prepare``); the summary is the
highlights, one sentence each. Stories without article text or highlights (a few hundred in the
corpus) are dropped and counted. Without url lists, ``--valid-frac`` / ``--test-frac`` carve the
splits. ``--limit-per-split N`` keeps the first N examples of every split.
"""
import argparse
import hashlib
import os
import sys

from . import converter_io, stats
from .xsum_to_jsonl import SPLIT_NAMES, ConvertError, carve, find_split_file

URL_LISTS = {"train": ("all_train",), "valid": ("all_val", "all_valid", "all_validation"), "test": ("all_test",)}


def get_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--jsonl", help="HF JSONL file, or directory with train/validation/test.jsonl")
    src.add_argument("--stories-dir", nargs="+", help="directories of raw {sha1(url)}.story files")
    parser.add_argument("--url-lists", help="directory with all_train.txt, all_val.txt, all_test.txt")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--valid-frac", type=float, default=0.05, help="share carved when there is no split")
    parser.add_argument("--test-frac", type=float, default=0.05, help="share carved when there is no split")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the shuffle that carves the splits (one --jsonl file, or "
                        "stories without --url-lists; default: %(default)s)")
    parser.add_argument("--limit-per-split", type=int, default=0, help="keep the first N (0: all)")
    converter_io.add_arguments(parser)
    return parser


def hashhex(url):
    return hashlib.sha1(url.strip().encode("utf-8")).hexdigest()


def parse_story(text):
    """``(article, highlights)`` of a ``.story`` file: paragraphs joined by newlines, highlights by newlines."""
    article, highlights, next_is_highlight = [], [], False
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("@highlight"):
            next_is_highlight = True
        elif next_is_highlight:
            highlights.append(line)
            next_is_highlight = False
        else:
            article.append(line)
    return "\n".join(article), "\n".join(highlights)


def read_hf_jsonl(path):
    examples = []
    for lineno, where, obj in converter_io.iter_jsonl(path, ConvertError):
        for key in ("article", "highlights"):
            if not isinstance(obj.get(key), str):
                raise ConvertError(f"{where}: missing or non-string field {key!r}")
        examples.append({"document": obj["article"].strip(), "summary": obj["highlights"].strip(),
                         "id": str(obj.get("id", lineno))})
    return examples


def from_jsonl(args):
    if os.path.isfile(args.jsonl):
        return carve(read_hf_jsonl(args.jsonl), {"train": None, "valid": args.valid_frac, "test": args.test_frac}, args.seed)
    if not os.path.isdir(args.jsonl):
        raise ConvertError(f"{args.jsonl}: no such file or directory")
    paths = {s: find_split_file(args.jsonl, names) for s, names in SPLIT_NAMES.items()}
    missing = [s for s, p in paths.items() if p is None]
    if missing:
        raise ConvertError(f"{args.jsonl}: no {missing[0]}.jsonl (pass a single file to carve all splits from it)")
    return {s: read_hf_jsonl(p) for s, p in paths.items()}


def from_stories(args):
    for d in args.stories_dir:
        if not os.path.isdir(d):
            raise ConvertError(f"{d}: no such directory")
    index = {}
    for d in args.stories_dir:
        for name in os.listdir(d):
            if name.endswith(".story"):
                index[name[: -len(".story")]] = os.path.join(d, name)

    def load(key):
        try:
            with open(index[key], encoding="utf-8") as f:
                document, summary = parse_story(f.read())
        except UnicodeDecodeError as e:
            raise ConvertError(f"{index[key]}: not valid UTF-8 ({e.reason}; truncated or not a .story file?)") from None
        return {"document": document, "summary": summary, "id": key}

    if not args.url_lists:
        return carve([load(k) for k in sorted(index)], {"train": None, "valid": args.valid_frac, "test": args.test_frac}, args.seed)
    splits = {}
    for split, names in URL_LISTS.items():
        path = find_split_file(args.url_lists, names, ".txt")
        if path is None:
            raise ConvertError(f"{args.url_lists}: no {names[0]}.txt")
        with open(path, encoding="utf-8") as f:
            keys = [hashhex(url) for url in f if url.strip()]
        absent = [k for k in keys if k not in index]
        if absent:
            raise ConvertError(f"{path}: {len(absent)} urls have no .story file in {' '.join(args.stories_dir)} "
                               f"(first: {absent[0]}.story)")
        splits[split] = [load(k) for k in keys]
    return splits


def convert(args):
    """Write ``OUT/{train,valid,test}.jsonl``; returns the number of examples per split."""
    splits = from_jsonl(args) if args.jsonl else from_stories(args)
    os.makedirs(args.out, exist_ok=True)
    counts = {}
    for split in ("train", "valid", "test"):
        examples = splits[split]
        kept = [e for e in examples if e["document"] and e["summary"]]
        if len(kept) < len(examples):
            print(f"| {split}: dropped {len(examples) - len(kept)} stories without article or highlights", file=sys.stderr)
        if args.limit_per_split:
            kept = kept[: args.limit_per_split]
        counts[split] = converter_io.write_split(args, split, kept)
    stats.finish(args, "cnn_dm")
    return counts


def main(argv=None):
    return convert(converter_io.parse_guarded(get_parser(), argv, lambda a: [
        ("--jsonl", a.jsonl), ("--stories-dir", a.stories_dir), ("--url-lists", a.url_lists)]))


def cli_main():
    converter_io.run_converter("cnndm_to_jsonl", main, ConvertError)


if __name__ == "__main__":
    cli_main()
