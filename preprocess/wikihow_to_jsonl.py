"""WikiHow (Koupaee & Wang, 2018) as JSONL (``document``, ``summary``, ``id``) for ``fairseq-sum-prepare``.

Usage::

    # wikihowAll.csv + the official title lists (all_train.txt, all_val.txt, all_test.txt)
    python -m preprocess.wikihow_to_jsonl --csv wikihowAll.csv --split-lists DIR --out RAW
    # without the lists: a deterministic split by a hash of the title
    python -m preprocess.wikihow_to_jsonl --csv wikihowAll.csv --out RAW [--valid-frac 0.033 --test-frac 0.033]

``wikihowAll.csv`` has the columns ``headline`` (the summary: one summary line per step),
``title`` and ``text`` (the document: the step paragraphs). As in the dataset's own
``process.py`` and the Hugging Face loader, the ``.,`` joins of the headline lines and the
``.\\n,`` joins of the paragraphs are undone, and rows whose summary is not shorter than 3/4 of
the article, or whose headline or text is empty, are dropped (counted on stderr). The summary is
written as its list of lines (one sentence each), the document with its paragraphs on separate
lines. The id is the title (``_N`` added to repeated titles).

Split: with ``--split-lists`` a row goes to the list holding its title (titles compared on their
letters and digits only, case-folded, so both ``How to Tie a Tie`` and ``HowtoTieaTie`` match);
rows in no list are dropped and counted. Without lists, the SHA-1 of the normalised title picks
the split, so the split does not depend on the row order or on the other rows.

A row with a different number of fields than the header (a truncated file) or a missing column is
an error naming the line, unless ``--skip-bad-rows``.
"""
import argparse
import csv
import hashlib
import os
import re
import sys

from tqdm import tqdm

from . import converter_io, stats
from .xsum_to_jsonl import ConvertError

COLUMNS = ("headline", "title", "text")
LISTS = {"train": ("all_train",), "valid": ("all_val", "all_valid", "all_validation"), "test": ("all_test",)}
_ARTICLE_JOIN = re.compile(r"[.]+[\n]+[,]")
_SUFFIX = re.compile(r"_\d+$")


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--csv", required=True, help="wikihowAll.csv")
    p.add_argument("--split-lists", help="directory with all_train.txt, all_val.txt, all_test.txt (title lists)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--valid-frac", type=float, default=0.033, help="validation share without --split-lists")
    p.add_argument("--test-frac", type=float, default=0.033, help="test share without --split-lists")
    p.add_argument("--skip-bad-rows", action="store_true", help="drop rows with a wrong number of fields")
    p.add_argument("--no-length-filter", action="store_true",
                   help="keep rows whose summary is at least 3/4 of the article's length")
    p.add_argument("--limit-per-split", type=int, default=0, help="keep the first N examples (0: all)")
    converter_io.add_arguments(p)
    return p


def norm_title(title):
    """Titles compared across the CSV and the lists: letters and digits, case-folded."""
    return "".join(c for c in _SUFFIX.sub("", title.strip()) if c.isalnum()).casefold()


def clean(headline, text, length_filter=True):
    """``(summary lines, document)`` of a row, or ``None`` when the row is to be dropped."""
    headline, text = headline.strip(), text.strip()
    if not headline or not text or (length_filter and len(headline) >= 0.75 * len(text)):
        return None
    summary = [line.strip().strip(",").strip() for line in headline.replace(".,", ".").splitlines()]
    summary = [s for s in summary if s]
    paragraphs = [" ".join(line.split()) for line in _ARTICLE_JOIN.sub(".\n", text).splitlines()]
    paragraphs = [p.strip(",").strip() for p in paragraphs]
    document = "\n".join(p for p in paragraphs if p)
    if not summary or not document:
        return None
    return summary, document


def read_csv(path, skip_bad_rows=False, length_filter=True):
    """Yield examples of ``wikihowAll.csv``; counts of dropped rows in the returned dict."""
    csv.field_size_limit(2 ** 31 - 1)
    dropped = {"empty": 0, "bad": 0}
    examples, seen = [], {}
    try:
        f = open(path, encoding="utf-8", newline="")
    except OSError as e:
        raise ConvertError(f"{path}: {e.strerror}") from None
    with f:
        reader = csv.reader(f, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                raise ConvertError(f"{path}: empty file")
            header = [h.strip() for h in header]
            missing = [c for c in ("headline", "text") if c not in header]
            if missing:
                raise ConvertError(f"{path}: missing column {missing[0]!r} (header: {', '.join(header)})")
            col = {c: header.index(c) for c in COLUMNS if c in header}
            for row in tqdm(reader, desc=f"read {os.path.basename(path)}", unit="row", mininterval=1, leave=False):
                where = f"{path}:{reader.line_num}"
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    if skip_bad_rows:
                        dropped["bad"] += 1
                        continue
                    raise ConvertError(f"{where}: {len(row)} fields, the header has {len(header)} "
                                       "(truncated or malformed row; --skip-bad-rows drops such rows)")
                cleaned = clean(row[col["headline"]], row[col["text"]], length_filter)
                if cleaned is None:
                    dropped["empty"] += 1
                    continue
                title = row[col["title"]].strip() if "title" in col else ""
                key = title or f"row{reader.line_num}"
                seen[key] = seen.get(key, 0) + 1
                ex_id = key if seen[key] == 1 else f"{key}_{seen[key] - 1}"
                examples.append({"document": cleaned[1], "summary": cleaned[0], "id": ex_id, "title": title})
        except csv.Error as e:
            raise ConvertError(f"{path}:{reader.line_num}: malformed CSV ({e}; truncated file?)") from None
    return examples, dropped


def read_lists(directory):
    titles = {}
    for split, names in LISTS.items():
        path = next((os.path.join(directory, n + ".txt") for n in names
                     if os.path.isfile(os.path.join(directory, n + ".txt"))), None)
        if path is None:
            raise ConvertError(f"{directory}: no {names[0]}.txt")
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    titles.setdefault(norm_title(line), split)
    return titles


def hash_split(title, valid_frac, test_frac):
    h = int(hashlib.sha1(norm_title(title).encode("utf-8")).hexdigest()[:8], 16) / 16 ** 8
    return "test" if h < test_frac else "valid" if h < test_frac + valid_frac else "train"


def convert(args):
    """Write ``OUT/{train,valid,test}.jsonl``; returns the number of examples per split."""
    if args.valid_frac + args.test_frac >= 1:
        raise ConvertError("--valid-frac + --test-frac must be below 1")
    examples, dropped = read_csv(args.csv, args.skip_bad_rows, not args.no_length_filter)
    titles = read_lists(args.split_lists) if args.split_lists else None
    splits = {s: [] for s in converter_io.SPLITS}
    unlisted = 0
    for ex in examples:
        title = ex.pop("title") or ex["id"]
        if titles is None:
            split = hash_split(title, args.valid_frac, args.test_frac)
        else:
            split = titles.get(norm_title(title))
            if split is None:
                unlisted += 1
                continue
        splits[split].append(ex)
    print(f"| {args.csv}: {len(examples)} rows kept, {dropped['empty']} dropped (empty headline or text, "
          f"or summary >= 3/4 of the article), {dropped['bad']} malformed rows skipped"
          + (f", {unlisted} titles in no split list" if titles is not None else ""), file=sys.stderr)
    os.makedirs(args.out, exist_ok=True)
    counts = {}
    for split in converter_io.SPLITS:
        rows = splits[split][: args.limit_per_split or None]
        counts[split] = converter_io.write_split(args, split, rows)
    stats.finish(args, "wikihow")
    return counts


def main(argv=None):
    return convert(converter_io.parse_guarded(get_parser(), argv, lambda a: [
        ("--csv", a.csv), ("--split-lists", a.split_lists)]))


def cli_main():
    converter_io.run_converter("wikihow_to_jsonl", main, ConvertError)


if __name__ == "__main__":
    cli_main()
