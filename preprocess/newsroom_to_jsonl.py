"""Newsroom (Grusky et al., 2018) as JSONL for ``fairseq-sum-prepare``.

Input: the released split files ``train.jsonl[.gz]``, ``dev.jsonl[.gz]``, ``test.jsonl[.gz]`` (one JSON
object per line with ``text``, ``summary``, ``title``, ``url``, ``density``, ``coverage``,
``compression``, ``density_bin``, ...). Output: ``OUT/{train,valid,test}.jsonl`` with ``id`` (the
article URL), ``document`` (the text as released), ``summary``, ``title``, ``density``,
``coverage``, ``compression``, ``density_bin``.

* ``--density-bin abstractive`` keeps one density bin (comma-separated list) in the splits named by
  ``--density-bin-splits`` (default ``test``: Mem2Mem's "Newsroom*" abstractive test subset).
* ``--min-doc-tokens 100 --min-summary-tokens 10`` is the information selection paper's filter
  (§4.1; whitespace tokens of the raw text; default: no filter). Its truncation of documents to 700
  tokens happens later, in ``fairseq-sum-prepare --max-src-tokens 700`` (subword pieces, as the
  paper counts T5 tokens)::

    python -m preprocess.newsroom_to_jsonl --in release/ --out data/newsroom/jsonl \
        --density-bin abstractive --density-bin-splits test
    python -m preprocess.newsroom_to_jsonl --in release/ --out RAW --min-doc-tokens 100 --min-summary-tokens 10

``--paper-truncation information_selection`` cuts documents after 700 words here already (whole
sentences kept); ``--stats`` prints our averages beside Mem2Mem §5.1's. Bad input (a line that is
not JSON, a missing ``text`` / ``summary`` field, a truncated ``.gz``) stops with the file and line.
"""
import argparse
import gzip
import json
import os
import sys

from tqdm import tqdm

from . import converter_io
from . import stats as stats_module

SPLITS = {"train": ("train",), "valid": ("dev", "valid", "validation"), "test": ("test",)}
KEPT_FIELDS = ("title", "density", "coverage", "compression", "density_bin")
DENSITY_BINS = ("extractive", "mixed", "abstractive")


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--in", "--newsroom-dir", dest="newsroom_dir", required=True,
                   help="directory with train/dev/test .jsonl or .jsonl.gz")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--min-doc-tokens", type=int, default=0,
                   help="drop documents with fewer whitespace tokens (information selection: 100)")
    p.add_argument("--min-summary-tokens", type=int, default=0,
                   help="drop summaries with fewer whitespace tokens (information selection: 10)")
    p.add_argument("--density-bin", default="", help=f"keep only these comma-separated bins ({', '.join(DENSITY_BINS)})")
    p.add_argument("--density-bin-splits", default="test",
                   help="comma-separated splits the --density-bin filter applies to (train, valid, test)")
    p.add_argument("--limit-per-split", type=int, default=0, help="keep the first N kept examples (0: all)")
    converter_io.add_arguments(p)
    return p


def find_split(folder, split):
    for name in SPLITS[split]:
        for ext in (".jsonl", ".jsonl.gz", ".data", ".data.gz"):
            path = os.path.join(folder, name + ext)
            if os.path.exists(path):
                return path
    raise FileNotFoundError(f"no {split} file in {folder} (looked for {', '.join(n + '.jsonl[.gz]' for n in SPLITS[split])})")


def read_jsonl(path):
    opener = gzip.open if path.endswith(".gz") else open
    line_no = 0
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                if line.strip():
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise SystemExit(f"{path}:{line_no}: not JSON ({e}; truncated file?)") from None
                    if not isinstance(obj, dict):
                        raise SystemExit(f"{path}:{line_no}: expected a JSON object")
                    missing = [k for k in ("text", "summary") if k not in obj]
                    if missing:
                        raise SystemExit(f"{path}:{line_no}: missing field {missing[0]!r} (has: {', '.join(sorted(obj))})")
                    yield line_no, obj
    except (EOFError, OSError, UnicodeDecodeError) as e:
        raise SystemExit(f"{path}: unreadable after line {line_no} ({e}; truncated file?)") from None


def density_bin(example):
    """The released ``density_bin``, or the dataset's own cut-offs on ``density`` (< 1.5 abstractive,
    < 8.1875 mixed, else extractive; Grusky et al. 2018, the ``newsroom`` package)."""
    if example.get("density_bin"):
        return example["density_bin"]
    density = example.get("density")
    if density is None:
        return None
    return "abstractive" if density < 1.5 else "mixed" if density < 8.1875 else "extractive"


def convert(args):
    bins = {b.strip() for b in args.density_bin.split(",") if b.strip()}
    unknown = bins - set(DENSITY_BINS)
    if unknown:
        raise ValueError(f"--density-bin: unknown bins {sorted(unknown)} (choose from {DENSITY_BINS})")
    bin_splits = {s.strip() for s in args.density_bin_splits.split(",") if s.strip()}
    if bin_splits - set(SPLITS):
        raise ValueError(f"--density-bin-splits: unknown splits {sorted(bin_splits - set(SPLITS))} (train, valid, test)")
    os.makedirs(args.out, exist_ok=True)
    stats = {}
    for split in SPLITS:
        path = find_split(args.newsroom_dir, split)
        kept = dropped = 0
        with converter_io.open_split(os.path.join(args.out, f"{split}.jsonl")) as out:
            for line_no, ex in tqdm(read_jsonl(path), desc=f"read {os.path.basename(path)}", unit="ex",
                                    mininterval=1, leave=False):
                text, summary = ex.get("text") or "", ex.get("summary") or ""
                # empty documents / summaries are dropped (and counted) whatever the minimum lengths
                if len(text.split()) < max(1, args.min_doc_tokens) or \
                        len(summary.split()) < max(1, args.min_summary_tokens):
                    dropped += 1
                    continue
                if bins and split in bin_splits and density_bin(ex) not in bins:
                    dropped += 1
                    continue
                row = {"id": ex.get("url") or ex.get("archive") or f"{split}-{line_no}", "document": text, "summary": summary}
                row.update({k: ex.get(k) for k in KEPT_FIELDS})
                row["density_bin"] = density_bin(ex)
                out.write(json.dumps(converter_io.finish_example(row, args), ensure_ascii=False) + "\n")
                kept += 1
                if args.limit_per_split and kept >= args.limit_per_split:
                    break
        stats[split] = {"kept": kept, "dropped": dropped}
        print(f"{split}: kept {kept}, dropped {dropped} ({path})", file=sys.stderr)
    stats_module.finish(args, "newsroom")
    return stats


def main(argv=None):
    convert(converter_io.parse_guarded(get_parser(), argv, lambda a: [("--in", a.newsroom_dir)]))


if __name__ == "__main__":
    converter_io.run_converter("newsroom_to_jsonl", main, ValueError)
