"""Committed decodings: the test outputs of a run as plain text, with hashes that tie them to it.

From a ``fairseq-generate`` output (``H-``/``D-``/``T-``/``S-`` lines) and the references the
scorer reads (``fairseq-sum-score``'s reference options,
:func:`~fairseq_sum_plugins.scoring.score_inputs.generate_inputs`)::

    python -m fairseq_sum_plugins.evaluation.decodings RUN/test.out --out RUN --table-dir TABLE \\
        --checkpoint RUN/checkpoints/checkpoint_last.pt --data DATA/bin

writes

* ``RUN/decodings.txt``: the hypotheses, one per line, line ``i`` = test example ``i``;
* ``TABLE/references.txt`` and ``TABLE/sources.txt`` (``--table-dir``, default: the parent of
  ``RUN``): the references the scorer scored against (the untruncated summaries of ``DATA``) and the
  sources as the model saw them (``S-`` lines, cut at prepare's ``--max-src-tokens``), same
  order; when they exist already (another run of the same table) they must be identical, else it
  is an error naming the first line that differs (a run of another data set or split);
* ``RUN/decodings.json``: ``{"split", "examples", "decodings", "references", "sources",
  "checkpoint", "data", "scorer"}``, the sha256 of each file (``checkpoint``: of the checkpoint
  file; ``data``: of the prepared split, :func:`data_sha256`), the cleanup options and which
  references (``untruncated``, or ``--refs t-lines``: the cut ``T-`` lines).

Each line is the scorer's own cleanup of the text
(:func:`fairseq_sum_plugins.scoring.rouge_text.clean_summary`: sentencepiece / BPE undone, special
tokens dropped, Moses-detokenized, with ``--sentence-sep``, ``--split-sentences`` and ``--no-detok``
as in ``fairseq-sum-score``), its sentences joined by `` <sep> ``
(:data:`fairseq_sum_plugins.text.SENT_SEP`, the boundary summary-level ROUGE-L needs). So scoring
the files again with ``Scorer(detok=False)`` (:func:`read_decodings`, :func:`scorer`) gives
``fairseq-sum-score``'s per-document ROUGE exactly: re-cleaning a cleaned line changes nothing.

The output must hold every example of its split once (ids 0..n-1): a decoding with missing ids is
refused, naming them, since line ``i`` would no longer be example ``i``.
"""
import argparse
import hashlib
import json
import os
import sys

from ..cli.outputs import refuse_clobber
from ..scoring.rouge import DEFAULT_BACKEND, Scorer, add_scorer_options
from ..scoring.rouge_text import clean_summary, sentence_separators, split_summary
from ..scoring.score_inputs import (ScoreInputError, add_reference_options, find_data_dir,
                                    generate_inputs, read_lines)
from ..text import SENT_SEP

DECODINGS, REFERENCES, SOURCES = "decodings.txt", "references.txt", "sources.txt"
MANIFEST = "decodings.json"
JOIN = f" {SENT_SEP} "


def sha256_file(path, chunk=1 << 20):
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def data_sha256(data, split="test"):
    """Hex sha256 of a prepared split's examples: over the sorted names and sha256s of its
    binaries and indices (``{split}.*.bin`` / ``.idx``), its references ``{split}.ref.jsonl`` and
    the dictionaries ``dict.*.txt``. Side data written into the folder later (the Topic
    Assistant's ``{split}.theta.*``) is not the split's examples: a run that adds it does not
    change the hash that every run of a table must share."""
    def example_file(n):
        if n.startswith("dict.") and n.endswith(".txt"):
            return True
        return n.startswith(split + ".") and (n.endswith(
            (".bin", ".idx")) or n == f"{split}.ref.jsonl")

    names = sorted(n for n in os.listdir(data)
                   if os.path.isfile(os.path.join(data, n)) and example_file(n))
    if not any(n.startswith(split + ".") for n in names):
        raise ScoreInputError(f"{data}: no files of the {split} split")
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0" + bytes.fromhex(sha256_file(os.path.join(data, name))))
    return h.hexdigest()


def clean_line(text, detok=True, seps=(), splitter=None):
    """One summary or document as one line: its cleaned sentences joined by `` <sep> ``."""
    parts = [text] if splitter is None else split_summary(text, splitter)
    return JOIN.join(s for part in parts for s in clean_summary(part, detok, seps))


def scorer(**fields):
    """The :class:`~fairseq_sum_plugins.scoring.rouge.Scorer` that scores committed lines as
    ``fairseq-sum-score`` scored the output they came from (no second detokenization)."""
    return Scorer(detok=False, **fields)


def extract(gen_path, args):
    """(ids, hypotheses, references, sources, data folder, split) as lines (:func:`clean_line`) of a
    ``fairseq-generate`` output, references as ``args``' reference options say."""
    ids, hyps, refs, gen = generate_inputs(gen_path, args)
    data, split, size = find_data_dir(gen, args.data, args.split)
    n = size if size is not None else ids[-1] + 1
    missing = sorted(set(range(n)) - set(ids))
    if missing:
        raise ScoreInputError(f"{gen_path}: {len(missing)} of the {n} examples of the {split} "
                              f"split have no hypothesis (ids {missing[:10]}): line i of "
                              f"{DECODINGS} would not be example i")
    no_source = [i for i in ids if i not in gen.sources]
    if no_source:
        raise ScoreInputError(f"{gen_path}: no S- line for ids {no_source[:10]}")
    seps = sentence_separators(args.sentence_sep, hyps + refs)
    splitter = args.sentence_splitter if args.split_sentences else None
    opts = dict(detok=not args.no_detok, seps=seps, splitter=splitter)
    return (ids, [clean_line(h, **opts) for h in hyps], [clean_line(r, **opts) for r in refs],
            [clean_line(gen.sources[i], detok=not args.no_detok, seps=seps) for i in ids],
            data, split)


def write_lines(path, lines):
    """``lines`` to ``path``, one a line, through a temporary file replaced in one step (a link in
    its place is replaced, not written through; a killed write leaves the old file)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)
    os.replace(tmp, path)


def read_decodings(path, what="decodings"):
    """The lines of a committed file (:data:`DECODINGS`, :data:`REFERENCES`, :data:`SOURCES`)."""
    return read_lines(path, what)


def _same_or_write(path, lines, what):
    if os.path.exists(path):
        old = read_decodings(path, what)
        if old != lines:
            k = next((k for k, (a, b) in enumerate(zip(old, lines)) if a != b),
                     min(len(old), len(lines)))
            raise ScoreInputError(f"{path} ({len(old)} lines) differs from this run's {what} "
                                  f"({len(lines)} lines) at line {k + 1}: a run of another data "
                                  "set or split (use another table folder)")
        return
    write_lines(path, lines)


def write(gen_path, out, args, table_dir=None, checkpoint=None):
    """Writes ``out/decodings.txt``, ``out/decodings.json`` and ``table_dir``'s references and
    sources (module docstring); returns the manifest."""
    ids, hyps, refs, sources, data, split = extract(gen_path, args)
    if checkpoint is not None and not os.path.isfile(checkpoint):
        raise ScoreInputError(f"--checkpoint {checkpoint}: no such file")
    table_dir = table_dir if table_dir is not None else os.path.dirname(os.path.abspath(out))
    for folder, flag in ((out, "--out"), (table_dir, "--table-dir")):
        if not os.path.isdir(folder):
            raise ScoreInputError(f"{flag} {folder}: no such directory")
    refs_path, src_path = os.path.join(table_dir, REFERENCES), os.path.join(table_dir, SOURCES)
    _same_or_write(refs_path, refs, "references")
    _same_or_write(src_path, sources, "sources")
    write_lines(os.path.join(out, DECODINGS), hyps)
    splitter = args.sentence_splitter if args.split_sentences else None
    manifest = {"split": split, "examples": len(ids),
                "decodings": sha256_file(os.path.join(out, DECODINGS)),
                "references": sha256_file(refs_path), "sources": sha256_file(src_path),
                "checkpoint": sha256_file(checkpoint) if checkpoint else None,
                "data": data_sha256(data, split) if data else None,
                "scorer": {"detok": not args.no_detok,
                           "sentence_sep": list(args.sentence_sep or ()),
                           "split_sentences": splitter,
                           "references": "t-lines (cut)" if args.refs else "untruncated"}}
    write_lines(os.path.join(out, MANIFEST), [json.dumps(manifest, indent=1)])
    return manifest


def get_parser():
    p = argparse.ArgumentParser(prog="python -m fairseq_sum_plugins.evaluation.decodings",
                                description=__doc__.split("\n")[0],
                                epilog="See the module docstring for the files and their format.")
    p.add_argument("generate_output", metavar="GEN",
                   help="fairseq-generate output of the test split")
    p.add_argument("--out", required=True, metavar="RUN",
                   help="the run's folder (decodings.txt, decodings.json)")
    p.add_argument("--table-dir", metavar="DIR",
                   help="folder of references.txt and sources.txt (default: the parent of --out)")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="the decoded checkpoint (its sha256 goes into decodings.json)")
    add_reference_options(p)
    add_scorer_options(p, (DEFAULT_BACKEND,))
    return p


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    gen = args.generate_output
    # references.txt and sources.txt of --table-dir are written only where there is none yet
    refuse_clobber(parser, reads=[("GEN", gen), ("the log of GEN", gen + ".log"),
                                  ("--checkpoint", args.checkpoint), ("--ref", args.ref),
                                  ("--ref-jsonl", args.ref_jsonl), ("--data", args.data)],
                   writes=[("--out", os.path.join(args.out, DECODINGS)),
                           ("--out", os.path.join(args.out, MANIFEST))])
    try:
        m = write(args.generate_output, args.out, args, args.table_dir, args.checkpoint)
    except (ScoreInputError, ValueError, OSError) as e:
        sys.exit(f"decodings: error: {e}")
    table = args.table_dir or os.path.dirname(os.path.abspath(args.out))
    print(f"decodings: {m['examples']} {m['split']} decodings -> "
          f"{os.path.join(args.out, DECODINGS)} (sha256 {m['decodings'][:12]}); references and "
          f"sources in {table}")
    return m


if __name__ == "__main__":
    main()
