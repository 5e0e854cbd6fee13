"""XSum as JSONL (``document``, ``summary``, ``id``) for ``fairseq-sum-prepare``.

Usage::

    # Hugging Face style JSONL: a directory with train/validation/test.jsonl ...
    python -m preprocess.xsum_to_jsonl --jsonl DIR --out RAW
    # ... or one file, carved into train/valid/test by a seeded shuffle
    python -m preprocess.xsum_to_jsonl --jsonl test.jsonl --out RAW --valid-frac 0.1 --test-frac 0.1
    # ... or one file kept whole as one split (e.g. the released test split, for --stats)
    python -m preprocess.xsum_to_jsonl --jsonl test.jsonl --out RAW --single-split test --stats
    # the raw BBC extraction: {id}.summary (or {id}.data) files + the official split file
    python -m preprocess.xsum_to_jsonl --raw-dir bbc-summary-data \\
        --split-file XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json --out RAW
    # datasets.load_dataset (needs the ``datasets`` package and its cache or network)
    python -m preprocess.xsum_to_jsonl --hf-name xsum --out RAW

A raw file holds sections opened by ``[SN]NAME[SN]`` (``[XSUM]NAME[XSUM]`` is accepted too):
``URL``, ``TITLE``, ``FIRST-SENTENCE`` (the summary) and ``RESTBODY`` (the document, one
sentence per line). Social-media share lines are removed as in the Hugging Face loader.
A directory without a validation split gets one carved from train with ``--valid-frac``.
``--limit-per-split N`` keeps the first N examples of every split.
"""
import argparse
import json
import os
import random
import re
import sys

from . import converter_io, stats

SPLIT_NAMES = {"train": ("train",), "valid": ("validation", "valid", "val"), "test": ("test",)}
SECTION = re.compile(r"\[(?:SN|XSUM)\]([A-Z][A-Z-]*)\[(?:SN|XSUM)\]")
# lines of the BBC share widget (dropped by the Hugging Face loader as well)
SHARE_LINES = frozenset([
    "Share this with", "Email", "Facebook", "Messenger", "Twitter", "Pinterest", "WhatsApp",
    "Linkedin", "LinkedIn", "Copy this link",
    "These are external links and will open in a new window",
])


class ConvertError(Exception):
    """Bad or truncated input; the message names the file (and line)."""


def get_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--jsonl", help="HF JSONL file, or directory with train/validation/test.jsonl")
    src.add_argument("--raw-dir", help="directory of raw {id}.summary / {id}.data files")
    src.add_argument("--hf-name", help="dataset name for datasets.load_dataset (e.g. xsum)")
    parser.add_argument("--split-file", help="official split JSON (with --raw-dir)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--valid-frac", type=float, default=0.1,
                        help="validation share carved from a single file or a train-only directory")
    parser.add_argument("--test-frac", type=float, default=0.1,
                        help="test share carved from a single file")
    parser.add_argument("--seed", type=int, default=1, help="seed of the carving shuffle")
    parser.add_argument("--single-split", choices=("train", "valid", "test"),
                        help="with a single --jsonl file: write all of it to this split (the other two "
                             "are written empty) instead of carving it")
    parser.add_argument("--limit-per-split", type=int, default=0, help="keep the first N (0: all)")
    parser.add_argument("--skip-missing", action="store_true",
                        help="skip ids of the split file without a raw file instead of failing")
    converter_io.add_arguments(parser)
    return parser


# ---------------------------------------------------------------- HF JSONL


def read_jsonl(path):
    """Examples of an HF XSum JSONL file (blank lines are ignored)."""
    examples = []
    for lineno, where, obj in converter_io.iter_jsonl(path, ConvertError):
        for key in ("document", "summary"):
            if not isinstance(obj.get(key), str):
                raise ConvertError(f"{where}: missing or non-string field {key!r}")
        ex_id = obj.get("id")
        examples.append({"document": obj["document"], "summary": obj["summary"],
                         "id": str(lineno if ex_id is None else ex_id)})
    return examples


def carve(examples, fracs, seed):
    """Split ``examples`` by a seeded shuffle into ``{name: examples}`` with the given shares;
    the first name gets the rest. Every part keeps the input order."""
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    parts, start = {}, 0
    for name, frac in list(fracs.items())[1:]:
        n = int(round(len(examples) * frac))
        parts[name] = sorted(order[start:start + n])
        start += n
    first = next(iter(fracs))
    parts[first] = sorted(order[start:])
    return {name: [examples[i] for i in parts[name]] for name in fracs}


def find_split_file(directory, names, ext=".jsonl"):
    for name in names:
        path = os.path.join(directory, name + ext)
        if os.path.isfile(path):
            return path
    return None


def from_jsonl(args):
    if os.path.isfile(args.jsonl):
        if args.single_split:
            examples = read_jsonl(args.jsonl)
            return {s: examples if s == args.single_split else [] for s in SPLIT_NAMES}
        fracs = {"train": None, "valid": args.valid_frac, "test": args.test_frac}
        if args.valid_frac + args.test_frac >= 1:
            raise ConvertError("--valid-frac + --test-frac must be below 1")
        return carve(read_jsonl(args.jsonl), fracs, args.seed)
    if not os.path.isdir(args.jsonl):
        raise ConvertError(f"{args.jsonl}: no such file or directory")
    paths = {s: find_split_file(args.jsonl, names) for s, names in SPLIT_NAMES.items()}
    for split in ("train", "test"):
        if paths[split] is None:
            raise ConvertError(f"{args.jsonl}: no {split}.jsonl (pass a single file to carve "
                               "all splits from it)")
    splits = {s: read_jsonl(p) for s, p in paths.items() if p}
    if paths["valid"] is None:
        if args.valid_frac <= 0:
            raise ConvertError(f"{args.jsonl}: no validation.jsonl and --valid-frac is 0")
        splits.update(carve(splits["train"], {"train": None, "valid": args.valid_frac}, args.seed))
    return splits


# ---------------------------------------------------------------- raw BBC files


def parse_raw(text, path="<text>"):
    """``(document, summary)`` of one raw XSum file."""
    parts = SECTION.split(text)
    sections = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    for name in ("FIRST-SENTENCE", "RESTBODY"):
        if name not in sections:
            raise ConvertError(f"{path}: no [SN]{name}[SN] section (truncated or not an XSum file)")

    def clean(s):
        lines = (line.strip() for line in s.splitlines())
        return "\n".join(line for line in lines if line and line not in SHARE_LINES)

    return clean(sections["RESTBODY"]), clean(sections["FIRST-SENTENCE"])


def read_split_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConvertError(f"{path}: cannot read the split file: {e}") from None
    ids = {}
    for split, names in SPLIT_NAMES.items():
        key = next((k for k in names if isinstance(data, dict) and k in data), None)
        if key is None or not isinstance(data[key], list):
            raise ConvertError(f"{path}: no list of ids under {' / '.join(names)}")
        ids[split] = [str(i) for i in data[key]]
    return ids


def from_raw(args):
    if not args.split_file:
        raise ConvertError("--raw-dir needs --split-file "
                           "(XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json)")
    if not os.path.isdir(args.raw_dir):
        raise ConvertError(f"{args.raw_dir}: no such directory")
    splits = {}
    for split, ids in read_split_file(args.split_file).items():
        examples, missing = [], []
        for ex_id in ids:
            if args.limit_per_split and len(examples) >= args.limit_per_split:
                break
            path = find_split_file(args.raw_dir, [ex_id], ".summary") or find_split_file(args.raw_dir, [ex_id], ".data")
            if path is None:
                missing.append(ex_id)
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    document, summary = parse_raw(f.read(), path)
            except UnicodeDecodeError as e:
                raise ConvertError(f"{path}: not valid UTF-8 ({e.reason})") from None
            examples.append({"document": document, "summary": summary, "id": ex_id})
        if missing and not args.skip_missing:
            raise ConvertError(f"{args.raw_dir}: {len(missing)} {split} ids of {args.split_file} "
                               f"have no .summary/.data file (first: {missing[0]}); "
                               "use --skip-missing")
        if missing:
            print(f"| {split}: skipped {len(missing)} ids without a file", file=sys.stderr)
        splits[split] = examples
    return splits


# ---------------------------------------------------------------- datasets


def from_hf(args):
    try:
        import datasets
    except ImportError:
        raise ConvertError("--hf-name needs the 'datasets' package "
                           "(pip install datasets)") from None
    ds = datasets.load_dataset(args.hf_name)
    splits = {}
    for split, names in SPLIT_NAMES.items():
        name = next((n for n in names if n in ds), None)
        if name is None:
            raise ConvertError(f"{args.hf_name}: no {split} split (has {', '.join(ds)})")
        splits[split] = [{"document": ex["document"], "summary": ex["summary"], "id": str(ex["id"])}
                         for ex in ds[name]]
    return splits


def convert(args):
    """Write ``OUT/{train,valid,test}.jsonl``; returns the number of examples per split."""
    if args.single_split and not (args.jsonl and os.path.isfile(args.jsonl)):
        raise ConvertError("--single-split goes with a single --jsonl file")
    if args.jsonl:
        splits = from_jsonl(args)
    elif args.raw_dir:
        splits = from_raw(args)
    else:
        splits = from_hf(args)
    os.makedirs(args.out, exist_ok=True)
    counts = {}
    for split in ("train", "valid", "test"):
        examples = splits[split]
        if args.limit_per_split:
            examples = examples[:args.limit_per_split]
        counts[split] = converter_io.write_split(args, split, examples)
    stats.finish(args, "xsum")
    return counts


def main(argv=None):
    return convert(converter_io.parse_guarded(get_parser(), argv, lambda a: [
        ("--jsonl", a.jsonl), ("--raw-dir", a.raw_dir), ("--split-file", a.split_file)]))


def cli_main():
    converter_io.run_converter("xsum_to_jsonl", main, ConvertError)


if __name__ == "__main__":
    cli_main()
