"""Turn a raw summarization corpus into fairseq binarized data.

Usage::

    fairseq-sum-prepare --jsonl-dir RAW --out DATA [--vocab-size 8000]
        [--max-src-tokens 512] [--max-tgt-tokens 200] [--workers 2]
    python -m preprocess.prepare ...   # same thing

Input, one of:

* ``--jsonl-dir DIR``: ``train.jsonl``, ``valid.jsonl`` (or ``val.jsonl`` /
  ``validation.jsonl``) and ``test.jsonl``, one JSON object per line. ``--src-field`` /
  ``--tgt-field`` (default ``document`` / ``summary``) hold either a string, in which newlines
  separate sentences or paragraphs, or a list of strings (the sentences). ``id`` is kept if present.
* ``--parallel-dir DIR``: ``{split}.source`` / ``{split}.target``, one example per line. A line
  may mark its sentence boundaries with the token ``<sep>``; a line without it is split by the
  splitter of :mod:`fairseq_sum_plugins.text` chosen by ``--sentence-splitter regex|pysbd``. A
  literal ``\\n`` is *not* interpreted.
* ``--hf-dataset NAME_OR_PATH [--hf-config C]``: a Hugging Face ``datasets`` dataset (optional
  package) with its own train / validation / test splits and the fields ``--src-field`` /
  ``--tgt-field``: a folder written by ``save_to_disk`` (``load_from_disk``), else
  ``datasets.load_dataset(NAME_OR_PATH, C)`` (the local cache, or data files in a folder). Its
  splits are exported to ``OUT/hf_jsonl/{split}.jsonl`` and read as ``--jsonl-dir``.

Steps (each is skipped when its outputs are newer than its inputs and were made with the same
options; ``--force`` redoes everything):

1. tokenize: sentence splitting + Moses (:func:`fairseq_sum_plugins.text.tokenize_document`)
   -> ``OUT/tok/{split}.src|tgt`` (sentences joined by `` <sep> ``), ``OUT/tok/{split}.id``,
   and the untokenized sentences in ``OUT/raw/{split}.src|tgt`` (references / inference input).
2. spm: sentencepiece model trained on the train split only (source and target sentences,
   at most ``--spm-input-size`` of them, a seeded sample) -> ``OUT/spm.model``,
   ``OUT/spm.vocab`` and ``OUT/dict.txt`` (the same vocabulary as a fairseq dictionary,
   ``<sep>`` included). ``<sep>`` is a user-defined symbol, so it is always a single piece.
3. encode: ``OUT/spm/{split}.src|tgt``. An example longer than ``--max-src-tokens`` /
   ``--max-tgt-tokens`` pieces is cut after that many pieces, then trailing ``<sep>`` pieces are
   dropped, so it never ends on a separator and holds at most the limit (+ ``</s>`` added by
   fairseq). 0 disables truncation. With ``--write-full-src`` the untruncated source pieces are
   written too, to ``OUT/spm_full/{split}.src`` (line ``i`` = binarized example ``i``): the Topic
   Assistant's topic model counts whole documents from them (``python -m preprocess.topic_model
   fit OUT/bin --full-src OUT/spm_full``) while the encoder reads the truncated ones.
4. binarize: ``fairseq-preprocess --joined-dictionary --srcdict OUT/dict.txt`` -> ``OUT/bin``. What an
   earlier ``OUT/bin`` holds beside the binarized data (the Topic Assistant's ``topic_model.npz`` and
   ``{split}.theta.npy|json``, anything else) is kept when the source side and the dictionary it was
   made from are unchanged (e.g. only ``--max-tgt-tokens`` changed); files of a split whose source
   changes (and the topic model and all theta when the train split or the dictionary changes) stop
   the run with an error naming them, or are deleted with ``--overwrite`` (:func:`stale_files`).
5. finalize: ``OUT/bin/spm.model`` and ``OUT/bin/prepare_args.json`` (options, tokenizer
   flags for inference, statistics), so ``OUT/bin`` alone is enough for training and inference;
   ``OUT/bin/{split}.ref.jsonl`` (from step 1's ``OUT/raw``): line ``i`` = binarized example
   ``i`` as ``{"id", "file", "line", "summary": [sentences]}``, the untruncated gold summary and
   the source record it came from, which ``fairseq-sum-score`` scores against.

A pretrained model's vocabulary (``--spm-model M --dict D``, e.g. ``fairseq-sum-import-t5``'s
``OUT/spm.model`` and ``OUT/dict.txt``): step 2 copies them instead of training, and step 3 encodes the
untokenized text of ``OUT/raw`` (sentences joined by a space; no Moses, no ``<sep>``), as the model's
own tokenizer does; ``prepare_args.json`` then records no tokenizer for inference.

Empty documents or summaries, and summaries without a word the scorer counts (``...``), are an error
naming file and line unless ``--skip-empty`` is given, which drops the pair from every aligned output
(the count is logged). An id holding a line break is an error naming its line (``tok/{split}.id``
holds one id per line). The output is deterministic (byte-identical
for the same input and options; the sentencepiece model also depends on ``--num-threads``).
"""
import argparse
import filecmp
import io
import json
import logging
import os
import random
import re
import shutil
import sys
import time
from functools import lru_cache, partial
from multiprocessing import Pool

from tqdm import tqdm

from fairseq_sum_plugins.scoring.rouge import clean_summary, rouge_words
from fairseq_sum_plugins.text import (DEFAULT_SENTENCE_SPLITTER, SENT_SEP, SENTENCE_SPLITTERS, segment_document,
                                      tokenize_sentence)

SPLITS = ("train", "valid", "test")
SPLIT_NAMES = {"train": ("train",), "valid": ("valid", "val", "validation"), "test": ("test",)}
WORD_BOUNDARY = "\u2581"


class PrepareError(Exception):
    """Bad input or options; the message names the offending file (and line)."""


def get_parser():
    parser = argparse.ArgumentParser(
        prog="fairseq-sum-prepare",
        description="Tokenize, sentencepiece-encode and binarize a summarization corpus.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--jsonl-dir", help="directory with train/valid/test .jsonl files")
    src.add_argument("--parallel-dir", help="directory with {split}.source / {split}.target")
    src.add_argument("--hf-dataset", metavar="NAME_OR_PATH",
                     help="a Hugging Face `datasets` dataset with train/validation/test splits: a folder "
                     "written by save_to_disk, or a name / data folder for datasets.load_dataset "
                     "(local cache or files; set HF_DATASETS_OFFLINE=1 to never download)")
    parser.add_argument("--hf-config", default=None, help="configuration name of --hf-dataset")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--src-field", default="document", help="JSONL / dataset field of the document")
    parser.add_argument("--tgt-field", default="summary", help="JSONL / dataset field of the summary")
    parser.add_argument("--splits", default="train,valid,test",
                        help="comma-separated splits to prepare (train is required)")
    text = parser.add_argument_group("text")
    text.add_argument("--lang", default="en", help="Moses language")
    text.add_argument("--lowercase", action="store_true", help="lower-case tokenized text")
    text.add_argument("--no-sentence-split", action="store_true",
                      help="no <sep> markers: every document is a single segment")
    text.add_argument("--sentence-splitter", choices=SENTENCE_SPLITTERS, default=DEFAULT_SENTENCE_SPLITTER,
                      help="sentence splitter of strings without <sep> (fairseq_sum_plugins/text.py); "
                      "inference (sum_moses) and the scorer take the same option")
    text.add_argument("--skip-empty", action="store_true",
                      help="drop pairs with an empty document or a summary without words (e.g. '...') "
                      "instead of failing")
    sp = parser.add_argument_group("sentencepiece")
    sp.add_argument("--vocab-size", type=int, default=8000,
                    help="pieces of the trained sentencepiece model, at least 10 (a soft limit: "
                    "a smaller corpus gives fewer; default: %(default)s)")
    sp.add_argument("--model-type", choices=["unigram", "bpe"], default="unigram",
                    help="sentencepiece's model type (default: %(default)s)")
    sp.add_argument("--character-coverage", type=float, default=1.0,
                    help="fraction of the train text's characters the model covers, the rest "
                    "<unk> (sentencepiece's option; default: %(default)s)")
    sp.add_argument("--spm-input-size", type=int, default=1_000_000,
                    help="at most this many train sentences (seeded sample) feed sentencepiece")
    sp.add_argument("--num-threads", type=int, default=1,
                    help="sentencepiece training threads; the model depends on it (float "
                    "summation order), so keep it fixed for identical results across machines")
    sp.add_argument("--seed", type=int, default=1,
                    help="seed of sentencepiece's training and of the --spm-input-size sample "
                    "(default: %(default)s)")
    sp.add_argument("--max-src-tokens", type=int, default=0,
                    help="truncate documents to this many pieces (0: no truncation)")
    sp.add_argument("--max-tgt-tokens", type=int, default=0,
                    help="truncate summaries to this many pieces (0: no truncation)")
    sp.add_argument("--spm-model", help="a pretrained model's sentencepiece model (e.g. fairseq-sum-import-t5's "
                    "OUT/spm.model): no model is trained, and it encodes the raw text (no Moses, no <sep>); "
                    "needs --dict")
    sp.add_argument("--dict", help="the fairseq dictionary of --spm-model (fairseq-sum-import-t5's OUT/dict.txt)")
    sp.add_argument("--write-full-src", action="store_true",
                    help="also write the untruncated source pieces to OUT/spm_full/{split}.src "
                    "(for the topic model: preprocess.topic_model --full-src)")
    parser.add_argument("--workers", type=int, default=1, help="processes for steps 1, 3 and 4")
    parser.add_argument("--force", action="store_true", help="redo steps that are up to date")
    parser.add_argument("--overwrite", action="store_true",
                        help="let a run that changes the binarized source or the dictionary delete the files of "
                        "OUT/bin made from the previous ones (topic model, theta); without it such a run stops "
                        "and names them")
    return parser


# ---------------------------------------------------------------- input


def find_inputs(args):
    """``{split: (source_file, target_file)}``; both are the same file for JSONL input."""
    base = args.jsonl_dir or args.parallel_dir
    if not os.path.isdir(base):
        raise PrepareError(f"{base}: no such directory")
    inputs = {}
    for split in args.splits:
        if args.jsonl_dir:
            names = [os.path.join(base, n + ".jsonl") for n in SPLIT_NAMES[split]]
            found = [p for p in names if os.path.isfile(p)]
            if len(found) > 1:
                raise PrepareError(f"ambiguous {split} split: {' and '.join(found)} both exist")
            if not found:
                raise PrepareError(f"missing {split} split: {' / '.join(names)} not found")
            inputs[split] = (found[0], found[0])
        else:
            pairs = [(os.path.join(base, n + ".source"), os.path.join(base, n + ".target"))
                     for n in SPLIT_NAMES[split]]
            found = [p for p in pairs if os.path.isfile(p[0]) or os.path.isfile(p[1])]
            if not found:
                raise PrepareError(f"missing {split} split: {pairs[0][0]} not found")
            for path in found[0]:
                if not os.path.isfile(path):
                    raise PrepareError(f"missing {split} split: {path} not found")
            inputs[split] = found[0]
    return inputs


def _lines(path):
    """Yield ``(line_number, text)``; lines end at ``\\n`` only. A byte order mark opening the file
    (JSONL or ``--parallel-dir`` text alike) is an encoding mark, not text: it is dropped."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield lineno, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise PrepareError(f"{path}:{lineno}: not valid UTF-8 ({e.reason})") from None


def _field(obj, name, where, flag):
    if name not in obj:
        raise PrepareError(f"{where}: missing field {name!r} (has: {', '.join(sorted(obj))}); "
                           f"choose the field with {flag}")
    value = obj[name]
    if isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    ):
        return value
    raise PrepareError(f"{where}: field {name!r} must be a string or a list of strings, "
                       f"got {type(value).__name__}")


def read_jsonl(path, src_field, tgt_field):
    """Yield ``(where, id, document, summary)``; blank lines are ignored."""
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise PrepareError(f"{where}: invalid JSON ({e.msg}, column {e.colno})") from None
        if not isinstance(obj, dict):
            raise PrepareError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        doc = _field(obj, src_field, where, "--src-field")
        summ = _field(obj, tgt_field, where, "--tgt-field")
        ex_id = str(lineno if obj.get("id") is None else obj["id"])
        if ex_id.splitlines() not in ([ex_id], []):
            raise PrepareError(f"{where}: id {ex_id!r} holds a line break, but OUT/tok/SPLIT.id holds one id "
                               "per line (it would shift every later id): give the example an id without one")
        yield (where, where), ex_id, doc, summ


def read_parallel(src_path, tgt_path):
    """Yield ``((src_where, tgt_where), id, document, summary)``; the id is the line number."""
    n_src = sum(1 for _ in _lines(src_path))
    n_tgt = sum(1 for _ in _lines(tgt_path))
    if n_src != n_tgt:
        raise PrepareError(f"{src_path} has {n_src} lines but {tgt_path} has {n_tgt}")
    for (lineno, doc), (_, summ) in zip(_lines(src_path), _lines(tgt_path)):
        yield (f"{src_path}:{lineno}", f"{tgt_path}:{lineno}"), str(lineno), doc, summ


def count_examples(args, src_path):
    if args.jsonl_dir:
        return sum(1 for _, line in _lines(src_path) if line.strip())
    return sum(1 for _ in _lines(src_path))


def _load_hf(args):
    try:
        import datasets
    except ImportError:
        raise PrepareError("--hf-dataset needs the `datasets` package: pip install datasets "
                           "(or pip install 'fairseq-sum-plugins[data]')") from None
    path = args.hf_dataset
    saved = any(os.path.isfile(os.path.join(path, n)) for n in ("dataset_dict.json", "state.json"))
    try:
        ds = datasets.load_from_disk(path) if saved else datasets.load_dataset(path, args.hf_config)
    except Exception as e:  # noqa: BLE001 - datasets raises many kinds; the message names the flag
        raise PrepareError(f"--hf-dataset {path}: cannot load it ({type(e).__name__}: {e})") from None
    if not isinstance(ds, (dict, datasets.DatasetDict)):
        raise PrepareError(f"--hf-dataset {path}: one split without names; save a DatasetDict with "
                           "train / validation / test splits")
    return ds


def _hf_split(args, ds, split):
    """The dataset's split for ``split`` (one of :data:`SPLIT_NAMES`), with both fields; none or two
    (``valid`` and ``validation``) is an error, as for ``--jsonl-dir``."""
    names = [n for n in SPLIT_NAMES[split] if n in ds]
    if not names:
        raise PrepareError(f"--hf-dataset {args.hf_dataset}: no {split} split "
                           f"(looked for {' / '.join(SPLIT_NAMES[split])}; it has {', '.join(ds)})")
    if len(names) > 1:
        raise PrepareError(f"--hf-dataset {args.hf_dataset}: ambiguous {split} split: "
                           f"{' and '.join(names)} both exist (keep one in the saved dataset)")
    data = ds[names[0]]
    for name, flag in ((args.src_field, "--src-field"), (args.tgt_field, "--tgt-field")):
        if name not in data.column_names:
            raise PrepareError(f"--hf-dataset {args.hf_dataset} [{names[0]}]: no field {name!r} "
                               f"(has: {', '.join(data.column_names)}); choose it with {flag}")
    return data


def export_hf_dataset(args):
    """``--hf-dataset``: the dataset's own splits (``train``, ``validation`` / ``valid`` / ``val``,
    ``test``) written as JSONL (``id`` when the dataset has one, ``--src-field``, ``--tgt-field``) to
    ``OUT/hf_jsonl``, which then is the ``--jsonl-dir``. A split file is replaced only when its content
    changes, so the later steps stay up to date on a re-run."""
    ds = _load_hf(args)
    chosen = {split: _hf_split(args, ds, split) for split in args.splits}  # every split checked before writing
    out_dir = os.path.join(args.out, "hf_jsonl")
    os.makedirs(out_dir, exist_ok=True)
    for split, data in chosen.items():
        path = os.path.join(out_dir, split + ".jsonl")
        with open(path + ".tmp", "w", encoding="utf-8", newline="\n") as f:
            for i, row in enumerate(tqdm(data, desc=f"export {split}", unit="ex", mininterval=1)):
                rec = {"id": str(row.get("id", i)), args.src_field: row[args.src_field],
                       args.tgt_field: row[args.tgt_field]}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        if os.path.isfile(path) and filecmp.cmp(path, path + ".tmp", shallow=False):
            os.remove(path + ".tmp")
        else:
            os.replace(path + ".tmp", path)
    return out_dir


# ---------------------------------------------------------------- helpers


def _mtime(path):
    return os.stat(path).st_mtime_ns


def _stamp_path(out, step):
    return os.path.join(out, ".stamps", step + ".json")


def _signature(paths):
    """Size and mtime of each input: a file replaced by another (even an older one: ``mv``, ``cp -p``,
    ``rsync -a``) no longer matches the stamp."""
    return {p: [os.stat(p).st_size, _mtime(p)] for p in paths}


def up_to_date(args, step, outputs, inputs, options):
    """The stats of a previous run of ``step``, or None when it has to run.

    Up to date: every output exists, none is older than an input, and the step's stamp (written
    when it last finished) records the same options and the same inputs (size, mtime). When the
    step has to run, its stamp is removed first, so a run that fails half-way (some outputs
    already replaced) is never taken for a finished one by the next run."""
    stats = _stamped_stats(args, step, outputs, inputs, options)
    if stats is None:
        try:
            os.remove(_stamp_path(args.out, step))
        except FileNotFoundError:
            pass
    return stats


def _stamped_stats(args, step, outputs, inputs, options):
    if args.force or not all(os.path.exists(p) for p in outputs):
        return None
    if min(map(_mtime, outputs)) < max(map(_mtime, inputs)):
        return None
    try:
        with open(_stamp_path(args.out, step), encoding="utf-8") as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return None
    if stamp.get("options") != options or stamp.get("inputs") != _signature(inputs):
        return None
    return stamp["stats"]


def save_stamp(args, step, options, stats, inputs):
    os.makedirs(os.path.join(args.out, ".stamps"), exist_ok=True)
    with open(_stamp_path(args.out, step), "w", encoding="utf-8") as f:
        json.dump({"options": options, "inputs": _signature(inputs), "stats": stats}, f, indent=1, sort_keys=True)


class AtomicFiles:
    """Write to ``path.tmp`` files that replace their targets only on success."""

    def __init__(self, *paths):
        self.paths = paths

    def __enter__(self):
        self.files = [open(p + ".tmp", "w", encoding="utf-8", newline="\n") for p in self.paths]
        return self.files

    def __exit__(self, exc_type, *_):
        for f in self.files:
            f.close()
        for p in self.paths:
            if exc_type is None:
                os.replace(p + ".tmp", p)
            else:
                os.remove(p + ".tmp")


def _map(fn, items, workers):
    """Ordered map, in a process pool when ``workers > 1``."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with Pool(workers) as pool:
        yield from pool.imap(fn, items, chunksize=4)


# ---------------------------------------------------------------- 1. tokenize


def _tokenize_example(example, lang, lowercase, sentence_split, splitter=DEFAULT_SENTENCE_SPLITTER):
    where, ex_id, doc, summ = example
    out = [where, ex_id]
    for text in (doc, summ):
        pairs = [(s, tokenize_sentence(s, lang, lowercase))
                 for s in segment_document(text, sentence_split, splitter, lang)]
        pairs = [(s, t) for s, t in pairs if t]
        out.append(f" {SENT_SEP} ".join(s for s, _ in pairs))
        out.append(f" {SENT_SEP} ".join(t for _, t in pairs))
    return out


def tokenize_split(args, split, src_path, tgt_path):
    examples = (read_jsonl(src_path, args.src_field, args.tgt_field) if args.jsonl_dir
                else read_parallel(src_path, tgt_path))
    fn = partial(_tokenize_example, lang=args.lang, lowercase=args.lowercase,
                 sentence_split=not args.no_sentence_split, splitter=args.sentence_splitter)
    stats = dict(examples=0, skipped=0, src_tokens=0, src_sents=0, tgt_tokens=0, tgt_sents=0)
    tok, raw = os.path.join(args.out, "tok", split), os.path.join(args.out, "raw", split)
    total = count_examples(args, src_path)
    with AtomicFiles(raw + ".src", raw + ".tgt", tok + ".src", tok + ".tgt", tok + ".id",
                     raw + ".ref.jsonl") as outs:
        results = _map(fn, examples, args.workers)
        for (src_where, tgt_where), ex_id, raw_src, tok_src, raw_tgt, tok_tgt in tqdm(
            results, total=total, desc=f"tokenize {split}", unit="ex"
        ):
            unusable = _unusable(src_where, tgt_where, tok_src, tok_tgt, raw_tgt)
            if unusable:
                if args.skip_empty:
                    stats["skipped"] += 1
                    continue
                raise PrepareError(f"{unusable} (use --skip-empty to drop such pairs)")
            for f, line in zip(outs, (raw_src, raw_tgt, tok_src, tok_tgt, ex_id,
                                      reference_record(ex_id, tgt_where, raw_tgt))):
                f.write(line + "\n")
            stats["examples"] += 1
            for side, line in (("src", tok_src), ("tgt", tok_tgt)):
                words = line.split()
                stats[side + "_sents"] += words.count(SENT_SEP) + 1
                stats[side + "_tokens"] += len(words) - words.count(SENT_SEP)
    if stats["skipped"]:
        print(f"| tokenize {split}: dropped {stats['skipped']} pairs with an empty document "
              "or a summary without words", file=sys.stderr)
    if stats["examples"] == 0:
        raise PrepareError(f"{src_path}: no examples")
    return stats


def _unusable(src_where, tgt_where, tok_src, tok_tgt, raw_tgt):
    """What makes a pair unusable (``FILE:LINE: empty document`` / ``empty summary`` / a summary
    without words), or None."""
    if not tok_src:
        return f"{src_where}: empty document"
    if not tok_tgt:
        return f"{tgt_where}: empty summary"
    if not has_rouge_word(raw_tgt):
        return f"{tgt_where}: summary with no word ROUGE can count ({raw_tgt!r})"
    return None


def has_rouge_word(raw_summary):
    """Whether a summary (sentences joined by ``<sep>``) has a word the scorer counts: one without
    (``...``) is a reference ``fairseq-sum-score`` refuses."""
    return any(rouge_words(sent) for sent in clean_summary(raw_summary, detok=False))


def reference_record(ex_id, where, raw_tgt):
    """One line of ``{split}.ref.jsonl``: the untruncated summary's sentences and its source record."""
    path, _, line = where.rpartition(":")
    return json.dumps({"id": ex_id, "file": os.path.abspath(path), "line": int(line),
                       "summary": raw_tgt.split(f" {SENT_SEP} ")}, ensure_ascii=False)


def copy_references(args, splits):
    """``OUT/raw/{split}.ref.jsonl`` -> ``OUT/bin``: the scorer's untruncated references."""
    for split in splits:
        name = f"{split}.ref.jsonl"
        shutil.copyfile(os.path.join(args.out, "raw", name), os.path.join(args.out, "bin", name))


def step_tokenize(args, inputs):
    options = dict(
        inputs={s: [os.path.abspath(p) for p in paths] for s, paths in inputs.items()},
        src_field=args.src_field, tgt_field=args.tgt_field, lang=args.lang,
        lowercase=args.lowercase, sentence_split=not args.no_sentence_split,
        skip_empty=args.skip_empty, sentence_splitter=args.sentence_splitter,
    )
    outputs = [os.path.join(args.out, d, f"{s}.{ext}")
               for s in inputs for d in ("tok", "raw") for ext in ("src", "tgt")]
    outputs += [os.path.join(args.out, "tok", f"{s}.id") for s in inputs]
    outputs += [os.path.join(args.out, "raw", f"{s}.ref.jsonl") for s in inputs]
    sources = [p for paths in inputs.values() for p in paths]
    stats = up_to_date(args, "tokenize", outputs, sources, options)
    if stats is not None:
        print("| tokenize: up to date", file=sys.stderr)
        return stats
    for d in ("tok", "raw"):
        os.makedirs(os.path.join(args.out, d), exist_ok=True)
    stats = {split: tokenize_split(args, split, *paths) for split, paths in inputs.items()}
    save_stamp(args, "tokenize", options, stats, sources)
    return stats


# ---------------------------------------------------------------- 2. sentencepiece


def _train_sentences(paths, limit, seed):
    """Sentences of ``paths`` (split at ``<sep>``); a seeded uniform sample of ``limit`` if more."""
    rng, sample, n = random.Random(seed), [], 0
    for path in paths:
        for _, line in _lines(path):
            for sent in line.split(f" {SENT_SEP} "):
                if limit <= 0 or len(sample) < limit:
                    sample.append((n, sent))
                else:
                    j = rng.randrange(n + 1)
                    if j < limit:
                        sample[j] = (n, sent)
                n += 1
    sample.sort()
    return [s for _, s in sample], n


def step_given_spm(args):
    """``--spm-model`` / ``--dict``: copied to ``OUT/spm.model`` / ``OUT/dict.txt`` (``spm.vocab`` listed)."""
    import sentencepiece as spm

    model, vocab, fdict = (os.path.join(args.out, n) for n in ("spm.model", "spm.vocab", "dict.txt"))
    inputs = [args.spm_model, args.dict]
    stats = up_to_date(args, "spm", [model, vocab, fdict], inputs, dict(given=True))
    if stats is not None:
        print("| spm: up to date", file=sys.stderr)
        return stats
    sp = spm.SentencePieceProcessor(model_file=args.spm_model)
    with AtomicFiles(vocab) as (fv,):
        for i in range(sp.get_piece_size()):
            fv.write(f"{sp.id_to_piece(i)}\t{sp.get_score(i):g}\n")
    shutil.copyfile(args.spm_model, model)
    shutil.copyfile(args.dict, fdict)
    stats = dict(vocab_size=sp.get_piece_size(), train_sentences=0)
    save_stamp(args, "spm", dict(given=True), stats, inputs)
    return stats


def step_spm(args):
    import sentencepiece as spm

    if getattr(args, "spm_model", None):
        return step_given_spm(args)
    tok = [os.path.join(args.out, "tok", "train." + ext) for ext in ("src", "tgt")]
    model, vocab, fdict = (os.path.join(args.out, n)
                           for n in ("spm.model", "spm.vocab", "dict.txt"))
    options = dict(vocab_size=args.vocab_size, model_type=args.model_type, seed=args.seed,
                   character_coverage=args.character_coverage, input_size=args.spm_input_size,
                   num_threads=args.num_threads)
    stats = up_to_date(args, "spm", [model, vocab, fdict], tok, options)
    if stats is not None:
        print("| spm: up to date", file=sys.stderr)
        return stats
    sents, n_total = _train_sentences(tok, args.spm_input_size, args.seed)
    print(f"| spm: training a {args.model_type} model (vocab {args.vocab_size}) on "
          f"{len(sents)} of {n_total} train sentences", file=sys.stderr)
    spm.set_random_generator_seed(args.seed)
    buf = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sents), model_writer=buf, vocab_size=args.vocab_size,
            model_type=args.model_type, character_coverage=args.character_coverage,
            user_defined_symbols=[SENT_SEP], num_threads=args.num_threads,
            input_sentence_size=0, shuffle_input_sentence=False, max_sentence_length=1 << 16,
            hard_vocab_limit=False, minloglevel=2,
        )
    except RuntimeError as e:
        raise PrepareError(f"sentencepiece training on {tok[0]} failed: {e}") from None
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    size = sp.get_piece_size()
    with AtomicFiles(vocab, fdict) as (fv, fd):
        for i in range(size):
            piece = sp.id_to_piece(i)
            fv.write(f"{piece}\t{sp.get_score(i):g}\n")
            if not (sp.is_unknown(i) or sp.is_control(i)):  # fairseq adds <unk> <s> </s>
                fd.write(f"{piece} {size - i}\n")
    with open(model + ".tmp", "wb") as f:
        f.write(buf.getvalue())
    os.replace(model + ".tmp", model)
    stats = dict(vocab_size=size, train_sentences=len(sents))
    save_stamp(args, "spm", options, stats, tok)
    return stats


# ---------------------------------------------------------------- 3. encode


@lru_cache(maxsize=None)
def _processor(model):
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=model)


def truncate(pieces, limit):
    """At most ``limit`` pieces, not ending on a separator (``limit <= 0``: unchanged)."""
    if limit <= 0 or len(pieces) <= limit:
        return pieces
    cut = pieces[:limit]
    while cut and cut[-1] in (SENT_SEP, WORD_BOUNDARY):
        cut.pop()
    return cut or pieces[:limit]


def _encode_line(line, model, limit, full=False):
    """``(pieces before truncation, truncated line)``, plus the untruncated line with ``full``."""
    pieces = _processor(model).encode(line, out_type=str)
    out = (len(pieces), " ".join(truncate(pieces, limit)))
    return out + (" ".join(pieces),) if full else out


def step_encode(args, splits):
    model = os.path.join(args.out, "spm.model")
    limits = dict(src=args.max_src_tokens, tgt=args.max_tgt_tokens)
    options = dict(max_src_tokens=args.max_src_tokens, max_tgt_tokens=args.max_tgt_tokens)
    write_full = getattr(args, "write_full_src", False)
    if write_full:  # only then: stamps of earlier runs stay valid
        options["write_full_src"] = True
    text_dir = "raw" if getattr(args, "spm_model", None) else "tok"  # a pretrained spm reads raw text
    if text_dir == "raw":
        options["text"] = "raw"
    outputs = [os.path.join(args.out, "spm", f"{s}.{e}") for s in splits for e in limits]
    if write_full:
        outputs += [os.path.join(args.out, "spm_full", f"{s}.src") for s in splits]
    inputs = [model] + [os.path.join(args.out, text_dir, f"{s}.{e}") for s in splits for e in limits]
    stats = up_to_date(args, "encode", outputs, inputs, options)
    if stats is not None:
        print("| encode: up to date", file=sys.stderr)
        return stats
    os.makedirs(os.path.join(args.out, "spm"), exist_ok=True)
    if write_full:
        os.makedirs(os.path.join(args.out, "spm_full"), exist_ok=True)
    stats = {}
    for split in splits:
        st = stats[split] = {}
        for side, limit in limits.items():
            src = os.path.join(args.out, text_dir, f"{split}.{side}")
            lines = (line for _, line in _lines(src))
            if text_dir == "raw":  # sentences joined by a space: the pretrained vocabulary has no <sep>
                lines = (line.replace(f" {SENT_SEP} ", " ") for line in lines)
            full = write_full and side == "src"
            fn = partial(_encode_line, model=model, limit=limit, full=full)
            n = before = after = truncated = longest = 0
            paths = [os.path.join(args.out, "spm", f"{split}.{side}")]
            if full:
                paths.append(os.path.join(args.out, "spm_full", f"{split}.{side}"))
            with AtomicFiles(*paths) as outs:
                for length, encoded, *whole in tqdm(_map(fn, lines, args.workers),
                                                    desc=f"encode {split}.{side}", unit="ex"):
                    outs[0].write(encoded + "\n")
                    if whole:
                        outs[1].write(whole[0] + "\n")
                    kept = encoded.count(" ") + 1
                    n, before, after = n + 1, before + length, after + kept
                    truncated += length > kept
                    longest = max(longest, kept)
            st.update({f"{side}_pieces": before, f"{side}_pieces_kept": after,
                       f"{side}_truncated": truncated, f"{side}_max_pieces": longest})
    save_stamp(args, "encode", options, stats, inputs)
    return stats


# ---------------------------------------------------------------- 4. binarize


def step_binarize(args, splits):
    bin_dir = os.path.join(args.out, "bin")
    fdict = os.path.join(args.out, "dict.txt")
    spm_prefix = {s: os.path.join(args.out, "spm", s) for s in splits}
    inputs = [fdict] + [spm_prefix[s] + "." + e for s in splits for e in ("src", "tgt")]
    outputs = [os.path.join(bin_dir, f"{s}.src-tgt.{e}.{x}")
               for s in splits for e in ("src", "tgt") for x in ("bin", "idx")]
    outputs.append(os.path.join(bin_dir, "dict.src.txt"))
    if up_to_date(args, "binarize", outputs, inputs, {}) is not None:
        print("| binarize: up to date", file=sys.stderr)
        return
    from fairseq import options
    from fairseq_cli import preprocess

    tmp = bin_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    argv = ["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary",
            "--srcdict", fdict, "--destdir", tmp, "--workers", str(max(1, args.workers))]
    for split in splits:
        argv += [f"--{split}pref", spm_prefix[split]]
    fargs = options.get_preprocessing_parser().parse_args(argv)
    log = logging.getLogger("fairseq_cli.preprocess")
    handlers = list(log.handlers)
    try:
        preprocess.main(fargs)
    finally:
        for h in log.handlers[len(handlers):]:  # main() adds a FileHandler on every call
            log.removeHandler(h)
            h.close()
    old = bin_dir + ".old"
    if not os.path.isdir(bin_dir) and os.path.isdir(old):  # a run stopped between the two renames below
        os.replace(old, bin_dir)
    if os.path.isdir(bin_dir):
        try:
            carry_over(args, bin_dir, tmp)
        except PrepareError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    shutil.rmtree(old, ignore_errors=True)
    if os.path.isdir(bin_dir):
        os.replace(bin_dir, old)
    os.replace(tmp, bin_dir)
    shutil.rmtree(old, ignore_errors=True)
    save_stamp(args, "binarize", {}, {}, inputs)


# what fairseq-preprocess and the finalize step write into OUT/bin; everything else there is carried over
_BINARIZED = re.compile(r"([^.]+)\.[^.]+-[^.]+\.[^.]+\.(?:bin|idx)")  # SPLIT.SRC-TGT.LANG.bin|idx
_WRITTEN = ("dict.src.txt", "dict.tgt.txt", "preprocess.log", "spm.model", "spm.vocab", "prepare_args.json")


def _same_file(a, b):
    return os.path.isfile(a) and os.path.isfile(b) and filecmp.cmp(a, b, shallow=False)


def stale_files(old_dir, new_dir):
    """``(kept, stale, change)`` for the files of ``old_dir`` (the previous ``OUT/bin``) that this
    program does not write (the Topic Assistant's ``topic_model.npz`` and ``{split}.theta.npy|json``,
    other side data, anything else), against the data binarized anew in ``new_dir``.

    Changed splits: those whose binarized source differs (or is gone), all of them when the
    dictionary differs (``change`` says which, None when nothing changed). Stale: a file of a changed
    split (``SPLIT.*``), ``topic_model.npz`` when the train split changed (Phi was fit on it, over the
    dictionary), and every theta file with it. The rest stays valid (the same documents over the same
    dictionary) and is kept."""
    binarized = {m.group(1) for d in (old_dir, new_dir) for m in map(_BINARIZED.fullmatch, os.listdir(d)) if m}
    same_dict = _same_file(os.path.join(old_dir, "dict.src.txt"), os.path.join(new_dir, "dict.src.txt"))
    changed = sorted(s for s in binarized if not same_dict or not all(
        _same_file(os.path.join(old_dir, f"{s}.src-tgt.src.{e}"), os.path.join(new_dir, f"{s}.src-tgt.src.{e}"))
        for e in ("bin", "idx")))
    names = sorted(n for n in os.listdir(old_dir)
                   if n not in _WRITTEN and not n.endswith(".ref.jsonl") and not _BINARIZED.fullmatch(n))
    topic_stale = "topic_model.npz" in names and "train" in changed
    kept, stale = [], []
    for name in names:
        split = name.split(".")[0]
        bad = topic_stale if name == "topic_model.npz" else (
            split in binarized and (split in changed or (topic_stale and ".theta." in name)))
        (stale if bad else kept).append(name)
    change = None if not changed else (
        f"the binarized source of {', '.join(changed)}" if same_dict else "the dictionary")
    return kept, stale, change


def _link(src, dst):
    """``dst`` as a hard link of ``src`` (a copy where links are not possible); folders recursively."""
    if os.path.isdir(src):
        shutil.copytree(src, dst, copy_function=_link)
        return
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def carry_over(args, bin_dir, new_dir):
    """Keep what the previous ``OUT/bin`` holds beside the binarized data and is still valid
    (:func:`stale_files`) by linking it into ``new_dir``; files made from a source side or
    dictionary this run changes are an error naming them, or are dropped with ``--overwrite``."""
    kept, stale, what = stale_files(bin_dir, new_dir)
    if stale:
        redo = ""
        theta_splits = sorted({n.split(".")[0] for n in stale if ".theta." in n} & set(args.splits))
        if "topic_model.npz" in stale:
            redo = f" (then refit: `python -m preprocess.topic_model fit {bin_dir}`)"
        elif theta_splits:
            redo = f" (then `python -m preprocess.topic_model infer {bin_dir} --splits {','.join(theta_splits)}`)"
        if not getattr(args, "overwrite", False):
            raise PrepareError(f"{bin_dir}: this run changes {what}, so {', '.join(stale)} (made from the previous "
                               "data) would no longer fit: re-run with the options they were made with, or with "
                               f"--overwrite to delete them{redo}")
        print(f"| binarize: removed {', '.join(stale)} from {bin_dir}: made from the previous data, and this run "
              f"changes {what}{redo}", file=sys.stderr)
    for name in kept:
        _link(os.path.join(bin_dir, name), os.path.join(new_dir, name))
    if kept:
        print(f"| binarize: kept {', '.join(kept)} of the previous {bin_dir}"
              + ("" if what else " (the source side and dictionary are unchanged)"), file=sys.stderr)


# ---------------------------------------------------------------- 5. finalize


def step_finalize(args, stats):
    bin_dir = os.path.join(args.out, "bin")
    for name in ("spm.model", "spm.vocab"):
        shutil.copyfile(os.path.join(args.out, name), os.path.join(bin_dir, name))
    tokenizer = ["--tokenizer", "sum_moses", "--moses-lang", args.lang]
    if args.lowercase:
        tokenizer.append("--sum-lowercase")
    if args.no_sentence_split:
        tokenizer.append("--sum-sentence-split")  # fairseq: a True-default bool flag sets False
    tokenizer += ["--sentence-splitter", args.sentence_splitter]
    moses = dict(tokenizer="sum_moses", moses_lang=args.lang, sum_lowercase=args.lowercase,
                 sum_sentence_split=not args.no_sentence_split, sentence_splitter=args.sentence_splitter)
    if getattr(args, "spm_model", None):  # raw text straight into the pretrained sentencepiece
        tokenizer, moses = [], {}
    info = dict(
        options={k: v for k, v in sorted(vars(args).items()) if k not in ("force", "overwrite")},
        tokenizer=moses,
        bpe=dict(bpe="sentencepiece", sentencepiece_model="spm.model"),
        interactive_args=" ".join(tokenizer + ["--bpe", "sentencepiece", "--sentencepiece-model",
                                               os.path.join(bin_dir, "spm.model")]),
        stats=stats,
    )
    with open(os.path.join(bin_dir, "prepare_args.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")


def print_summary(stats, splits, file=sys.stdout):
    tok, enc = stats["tokenize"], stats["encode"]
    print(f"| sentencepiece vocabulary: {stats['spm']['vocab_size']} pieces "
          f"(fairseq dictionary adds <pad>)", file=file)
    header = ("split", "examples", "skipped", "src tok", "src sent", "src pcs", "src trunc",
              "tgt tok", "tgt sent", "tgt pcs", "tgt trunc")
    print("| " + " ".join(f"{h:>9}" for h in header), file=file)
    for split in splits:
        t, e = tok[split], enc[split]
        n = max(t["examples"], 1)
        row = [split, t["examples"], t["skipped"]]
        for side in ("src", "tgt"):
            row += [f"{t[side + '_tokens'] / n:.1f}", f"{t[side + '_sents'] / n:.1f}",
                    f"{e[side + '_pieces'] / n:.1f}", e[side + "_truncated"]]
        print("| " + " ".join(f"{c:>9}" for c in row), file=file)
    print("| averages per example before truncation (tok: Moses tokens without <sep>, "
          "sent: sentences, pcs: sentencepiece pieces)", file=file)


def _timed(name, fn, *args):
    start = time.time()
    result = fn(*args)
    print(f"| {name}: done in {time.time() - start:.1f}s", file=sys.stderr)
    return result


def prepare(args):
    """Run all steps; returns the statistics."""
    args.splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    unknown = [s for s in args.splits if s not in SPLITS]
    if unknown or "train" not in args.splits:
        raise PrepareError("--splits must name train and optionally valid/test, "
                           f"got {unknown or args.splits}")
    args.splits = [s for s in SPLITS if s in args.splits]
    if args.vocab_size < 10:
        raise PrepareError("--vocab-size must be at least 10")
    if bool(getattr(args, "spm_model", None)) != bool(getattr(args, "dict", None)):
        raise PrepareError("--spm-model and --dict go together (fairseq-sum-import-t5 writes both)")
    for path in (getattr(args, "spm_model", None), getattr(args, "dict", None)):
        if path and not os.path.isfile(path):
            raise PrepareError(f"{path}: no such file")
    if args.hf_dataset:
        args.jsonl_dir = export_hf_dataset(args)
    inputs = find_inputs(args)
    os.makedirs(args.out, exist_ok=True)
    start = time.time()
    stats = {"tokenize": _timed("tokenize", step_tokenize, args, inputs)}
    stats["spm"] = _timed("spm", step_spm, args)
    stats["encode"] = _timed("encode", step_encode, args, args.splits)
    _timed("binarize", step_binarize, args, args.splits)
    copy_references(args, args.splits)
    step_finalize(args, stats)
    print_summary(stats, args.splits)
    print(f"| wrote {os.path.join(args.out, 'bin')} in {time.time() - start:.1f}s")
    return stats


# what prepare writes into --out: its folders and files
OUT_FOLDERS = ("raw", "tok", "spm", "spm_full", "bin", "hf_jsonl", ".stamps")
OUT_FILES = ("spm.model", "spm.vocab", "dict.txt")


def main(argv=None):
    from fairseq_sum_plugins.cli.outputs import contents, refuse_clobber

    parser = get_parser()
    args = parser.parse_args(argv)
    hf_path = args.hf_dataset if args.hf_dataset and os.path.exists(args.hf_dataset) else None
    refuse_clobber(parser, reads=[("--jsonl-dir", contents(args.jsonl_dir)),
                                  ("--parallel-dir", contents(args.parallel_dir)),
                                  ("--hf-dataset", contents(hf_path)), ("--spm-model", args.spm_model),
                                  ("--dict", args.dict)],
                   writes=[("--out", os.path.join(args.out, name)) for name in OUT_FOLDERS + OUT_FILES])
    return prepare(args)


def cli_main():
    try:
        main()
    except PrepareError as e:
        sys.exit(f"fairseq-sum-prepare: error: {e}")


if __name__ == "__main__":
    cli_main()
