"""GPT-2 BPE encoding of JSONL splits for fine-tuning fairseq's BART.

Usage::

    python -m preprocess.gpt2_bpe --jsonl-dir J --out O --encoder-json E --vocab-bpe V \\
        [--max-src-tokens N] [--max-tgt-tokens M] [--langs source,target] [--workers W]
    fairseq-preprocess --source-lang source --target-lang target --trainpref O/train \\
        --validpref O/valid --testpref O/test --srcdict BART/dict.txt --tgtdict BART/dict.txt ...

Reads ``J/{train,valid,test}.jsonl`` (``valid`` may be named ``val`` or ``validation``), the output
of the converters: one JSON object per line whose ``--src-field`` / ``--tgt-field`` (default
``document`` / ``summary``) is a string or a list of strings (sentences). Writes
``O/{split}.{SRC}`` and ``O/{split}.{TGT}`` (``--langs``, default ``source,target`` as in fairseq's
BART summarization example): for every example one line of GPT-2 BPE ids, the ids of fairseq's
``fairseq.data.encoders.gpt2_bpe_utils.get_encoder`` (what ``--bpe gpt2`` and fairseq's
``multiprocessing_bpe_encoder`` produce). Whitespace, newlines included, is collapsed to single
spaces first, so line ``i`` of every output is example ``i`` of the JSONL (blank JSONL lines are
not examples).

``--max-src-tokens N`` / ``--max-tgt-tokens M`` keep the first N / M BPE tokens, as BART counts its
positions; ``fairseq-preprocess`` then appends ``</s>``, so ``N = max_source_positions - 1``
(1023 for ``bart_base`` / ``bart_large``) is the longest input BART reads. 0 keeps everything.
``--full-src-out D`` also writes the untruncated source ids to ``D/{split}.{SRC}`` (same lines, same
pass): the Topic Assistant's topic model counts whole documents from them
(``python -m preprocess.topic_model fit BIN --full-src D``).

A missing or empty split file, a missing or non-string field or an empty document / summary is an
error naming the file (and line). Each split is written to temporary files renamed when complete,
``test`` last, so ``O/test.{TGT}`` exists only after a complete run.
"""
import argparse
import os
import sys
from multiprocessing import Pool

from tqdm import tqdm

from . import converter_io

SPLITS = {"train": ("train",), "valid": ("valid", "val", "validation"), "test": ("test",)}


class Gpt2BpeError(Exception):
    """Bad input; the message names the file (and line)."""


def load_encoder(encoder_json, vocab_bpe):
    """fairseq's GPT-2 ``Encoder`` (``gpt2_bpe_utils.get_encoder``)."""
    for path in (encoder_json, vocab_bpe):
        if not os.path.isfile(path):
            raise Gpt2BpeError(f"{path}: no such file (GPT-2 BPE files: encoder.json, vocab.bpe)")
    try:
        from fairseq.data.encoders.gpt2_bpe_utils import get_encoder
    except ImportError as e:
        raise Gpt2BpeError(f"fairseq's GPT-2 BPE is not importable ({e}): install fairseq") from None
    return get_encoder(encoder_json, vocab_bpe)


def normalize(value):
    """One line of text: a list of sentences is joined, whitespace collapsed."""
    if isinstance(value, list):
        value = " ".join(value)
    return " ".join(value.split())


def encode_ids(bpe, text, max_tokens=0):
    """GPT-2 BPE ids of ``text`` (normalised), the first ``max_tokens`` of them (0: all)."""
    ids = bpe.encode(normalize(text))
    return ids[:max_tokens] if max_tokens > 0 else ids


def split_path(jsonl_dir, split):
    for name in SPLITS[split]:
        path = os.path.join(jsonl_dir, f"{name}.jsonl")
        if os.path.exists(path):
            return path
    raise Gpt2BpeError(f"{jsonl_dir}: no {split}.jsonl")


def iter_examples(path, src_field="document", tgt_field="summary"):
    """``(document, summary)`` of every example of a JSONL split, checked."""
    for _, where, obj in converter_io.iter_jsonl(path, Gpt2BpeError, progress=False):
        pair = []
        for name in (src_field, tgt_field):
            value = obj.get(name)
            if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
                raise Gpt2BpeError(f"{where}: field {name!r} must be a string or a list of strings")
            if not normalize(value):
                raise Gpt2BpeError(f"{where}: empty {name!r}")
            pair.append(value)
        yield tuple(pair)


def chunks(iterable, size):
    chunk = []
    for item in iterable:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


_WORKER = {}


def _init_worker(encoder_json, vocab_bpe, max_src, max_tgt, full_src=False):
    _WORKER.update(bpe=load_encoder(encoder_json, vocab_bpe), max_src=max_src, max_tgt=max_tgt, full_src=full_src)


def _encode_pair(pair):
    """(source line, target line), plus the untruncated source line when ``full_src``."""
    bpe = _WORKER["bpe"]
    src = encode_ids(bpe, pair[0])
    out = (" ".join(map(str, src[: _WORKER["max_src"]] if _WORKER["max_src"] > 0 else src)),
           " ".join(map(str, encode_ids(bpe, pair[1], _WORKER["max_tgt"]))))
    return out + (" ".join(map(str, src)),) if _WORKER["full_src"] else out


def encode_split(path, outs, args, pool=None, chunk_size=8192):
    """Encodes the examples of ``path`` into ``outs`` (source, target files, and a third one for the
    untruncated source if given; written under temporary names, renamed when complete, the target
    last); returns (examples, source tokens, target tokens)."""
    full = len(outs) > 2
    if pool is None:
        _init_worker(args.encoder_json, args.vocab_bpe, args.max_src_tokens, args.max_tgt_tokens, full)
    n = n_src = n_tgt = 0
    files = []
    try:
        files = [open(out + ".tmp", "w", encoding="utf-8", newline="\n") for out in outs]
        bar = tqdm(desc=f"gpt2 bpe {os.path.basename(path)}", unit="ex", mininterval=1)
        for chunk in chunks(iter_examples(path, args.src_field, args.tgt_field), chunk_size):
            lines = pool.map(_encode_pair, chunk, chunksize=64) if pool is not None else map(_encode_pair, chunk)
            for encoded in lines:
                for f, line in zip(files, encoded):
                    f.write(line + "\n")
                src, tgt = encoded[:2]
                n, n_src, n_tgt = n + 1, n_src + src.count(" ") + 1, n_tgt + tgt.count(" ") + 1
            bar.update(len(chunk))
        bar.close()
        for f in files:
            f.close()
        if n == 0:
            raise Gpt2BpeError(f"{path}: no examples (empty file)")
    except BaseException:
        for f in files:
            f.close()
        for out in outs:
            if os.path.exists(out + ".tmp"):
                os.remove(out + ".tmp")
        raise
    for out in [outs[0]] + list(outs[2:]) + [outs[1]]:  # the target last
        os.replace(out + ".tmp", out)
    return n, n_src, n_tgt


def get_parser():
    p = argparse.ArgumentParser(prog="python -m preprocess.gpt2_bpe", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jsonl-dir", required=True, help="train/valid/test.jsonl")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--encoder-json", required=True, help="GPT-2 encoder.json (of fairseq's BART release)")
    p.add_argument("--vocab-bpe", required=True, help="GPT-2 vocab.bpe")
    p.add_argument("--max-src-tokens", type=int, default=0,
                   help="keep the first N BPE tokens of a document (BART: max_source_positions - 1 = 1023; 0: all)")
    p.add_argument("--max-tgt-tokens", type=int, default=0, help="keep the first M BPE tokens of a summary (0: all)")
    p.add_argument("--full-src-out", metavar="D",
                   help="also write the untruncated source ids to D/{split}.SRC (for the topic model's "
                        "--full-src)")
    p.add_argument("--src-field", default="document",
                   help="JSONL field of the document: a string or a list of strings "
                        "(default: %(default)s)")
    p.add_argument("--tgt-field", default="summary",
                   help="JSONL field of the summary, as --src-field (default: %(default)s)")
    p.add_argument("--langs", default="source,target", help="output suffixes SRC,TGT (default: source,target)")
    p.add_argument("--workers", type=int, default=1,
                   help="encoding processes; 1 encodes in this process, and the output is the same "
                        "with any number (default: %(default)s)")
    return p


def main(argv=None):
    from fairseq_sum_plugins.cli.outputs import contents, refuse_clobber

    parser = get_parser()
    args = parser.parse_args(argv)
    langs = [s.strip() for s in args.langs.split(",")]
    if len(langs) != 2 or not all(langs) or langs[0] == langs[1]:
        raise Gpt2BpeError(f"--langs needs two different suffixes SRC,TGT, got {args.langs!r}")
    refuse_clobber(parser, reads=[("--jsonl-dir", contents(args.jsonl_dir)), ("--encoder-json", args.encoder_json),
                                  ("--vocab-bpe", args.vocab_bpe)],
                   writes=[("--out", os.path.join(args.out, f"{s}.{lang}")) for s in SPLITS for lang in langs]
                   + [("--full-src-out", args.full_src_out and os.path.join(args.full_src_out, f"{s}.{langs[0]}"))
                      for s in SPLITS])
    paths = {split: split_path(args.jsonl_dir, split) for split in SPLITS}
    load_encoder(args.encoder_json, args.vocab_bpe)  # fail early on missing files (imports fairseq)
    os.makedirs(args.out, exist_ok=True)
    if args.full_src_out:
        os.makedirs(args.full_src_out, exist_ok=True)
    pool = None
    if args.workers > 1:
        pool = Pool(args.workers, _init_worker,
                    (args.encoder_json, args.vocab_bpe, args.max_src_tokens, args.max_tgt_tokens,
                     bool(args.full_src_out)))
    counts = {}
    try:
        for split in SPLITS:  # test last: its target file marks a complete run
            outs = [os.path.join(args.out, f"{split}.{lang}") for lang in langs]
            if args.full_src_out:
                outs.append(os.path.join(args.full_src_out, f"{split}.{langs[0]}"))
            n, n_src, n_tgt = encode_split(paths[split], outs, args, pool)
            print(f"| {paths[split]} -> {outs[0]}, {outs[1]}: {n} examples, "
                  f"{n_src / n:.1f} / {n_tgt / n:.1f} BPE tokens per document / summary")
            counts[split] = n
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return counts


def cli_main():
    try:
        main()
    except Gpt2BpeError as e:
        sys.exit(f"gpt2_bpe: error: {e}")


if __name__ == "__main__":
    cli_main()
