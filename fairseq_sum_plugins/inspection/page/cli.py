"""``fairseq-sum-inspect``: what each paper's mechanism does on a document, as a page and JSON.

::

    fairseq-sum-inspect DATA/bin --path A.pt [--path B.pt ...] --split test --documents 0,3,7 \\
        --html PAGE [--json OUT] [--names A,B]

reads every checkpoint with :func:`..loader.load_for`, runs each document through the
inspection stage (:mod:`.stage`) and writes the page (:mod:`.page`) and the values. Several models
side by side are given as ``--path A.pt --path B.pt`` (never fairseq's colon-separated ensemble:
each model is shown on its own, never averaged). ``--text FILE`` takes raw documents instead, one a
line, encoded with the tokenizer and BPE the data folder records (no reference: the beam output
only), cut at the data folder's source limit as ``fairseq-sum-prepare`` cuts its splits.
A checkpoint without a mechanism named in ``--show`` is refused before any model runs.
"""
import argparse
import json
import math
import os

from fairseq_sum_plugins.evaluation.plotting import gpt2_pieces

from ...cli.outputs import refuse_clobber
from ...data_folder import cut_pieces, prepared_limits
from ..loader import load_for
from .render import html_page
from ..stage import RAW, add_topic_words, as_text, check_documents, exposed, inspect_documents

def parse_documents(text):
    """``"0,3,7"`` -> ``[0, 3, 7]``; a ``ValueError`` naming ``--documents`` otherwise."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--documents {text!r}: comma-separated document numbers, such as "
                         "0,3,7") from None
    if not out:
        raise ValueError("--documents: name at least one document")
    if len(set(out)) < len(out):
        raise ValueError(f"--documents {text!r} names a document twice")
    return out


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-sum-inspect", description=__doc__.split("\n")[0])
    p.add_argument("data", metavar="DATA", help="binarized data folder (DATA/bin), as "
                   "fairseq-generate's")
    p.add_argument("--path", dest="checkpoints", action="append", required=True, metavar="CKPT",
                   help="a checkpoint; repeat --path to show several models side by side (each on "
                   "its own: not fairseq's colon-separated ensemble)")
    p.add_argument("--text", help="raw documents, one a line (encoded as DATA records; no "
                   "references): --documents are its line numbers, 0-based")
    p.add_argument("--split", default="test", help="the binarized split the documents come from "
                   "(default: test)")
    p.add_argument("--documents", default="0", help="document numbers of the split: 0,3,7")
    p.add_argument("--html", help="write the page here")
    p.add_argument("--json", help="write the values here")
    p.add_argument("--names", help="comma-separated model names (default: checkpoint files)")
    p.add_argument("--title", default="Mechanisms at work", help="the page's title")
    p.add_argument("--show", help="mechanisms every checkpoint must show, e.g. gate,focus "
                   "(default: what each has)")
    p.add_argument("--gpt2-encoder-json", help="with --gpt2-vocab-bpe: BART's GPT-2 ids as text")
    p.add_argument("--gpt2-vocab-bpe", help="with --gpt2-encoder-json: BART's GPT-2 merges")
    p.add_argument("--beam", type=int, default=4, help="beam size of the beam output, as "
                   "fairseq-generate's (default: 4)")
    p.add_argument("--max-len-b", type=int, default=60, help="longest beam output in tokens, as "
                   "fairseq-generate's (default: 60)")
    p.add_argument("--min-len", type=int, default=1, help="as fairseq-generate's (the beam "
                   "output equals its hypothesis under the same options)")
    p.add_argument("--lenpen", type=float, default=1.0, help="length penalty, as "
                   "fairseq-generate's (default: 1)")
    p.add_argument("--no-repeat-ngram-size", type=int, default=0, help="as fairseq-generate's "
                   "(default: 0, off)")
    return p


def _check_args(parser, args):
    if not (args.html or args.json):
        parser.error("give --html PAGE and/or --json OUT")
    if args.beam < 1 or args.max_len_b < 1 or args.min_len < 1:
        parser.error(f"--beam {args.beam} / --max-len-b {args.max_len_b} / --min-len "
                     f"{args.min_len}: at least 1")
    if args.min_len > args.max_len_b:
        parser.error(f"--min-len {args.min_len} is above --max-len-b {args.max_len_b}")
    if args.no_repeat_ngram_size < 0 or not math.isfinite(args.lenpen):
        parser.error(f"--no-repeat-ngram-size {args.no_repeat_ngram_size} (0: off) / --lenpen "
                     f"{args.lenpen}: a count >= 0 and a finite number")
    for path in args.checkpoints:
        if not os.path.isfile(path) and ":" in path and all(os.path.isfile(p)
                                                            for p in path.split(":")):
            parser.error(f"--path {path}: a colon-separated ensemble; this tool shows each model "
                         "on its own: repeat --path for each")
        if not os.path.isfile(path):
            parser.error(f"--path {path}: no such checkpoint file")
    refuse_clobber(parser, reads=[("DATA", args.data), ("--path", args.checkpoints),
                                  ("--text", args.text),
                                  ("--gpt2-encoder-json", args.gpt2_encoder_json),
                                  ("--gpt2-vocab-bpe", args.gpt2_vocab_bpe)],
                   writes=[("--html", args.html), ("--json", args.json)])
    for flag in ("html", "json"):
        path = getattr(args, flag)
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            parser.error(f"--{flag} {path}: its folder does not exist")
        if path and os.path.isdir(path):
            parser.error(f"--{flag} {path} is a folder")
    gpt2 = [args.gpt2_encoder_json, args.gpt2_vocab_bpe]
    if any(gpt2) and not all(f and os.path.isfile(f) for f in gpt2):
        parser.error("--gpt2-encoder-json and --gpt2-vocab-bpe: give both, as existing files")
    names = args.names.split(",") if args.names else [os.path.basename(os.path.dirname(
        os.path.abspath(c))) + "/" + os.path.basename(c) for c in args.checkpoints]
    if len(names) != len(args.checkpoints):
        parser.error(f"--names gives {len(names)} names for {len(args.checkpoints)} checkpoints")
    names = [n if names.index(n) == i else f"{n} ({i + 1})" for i, n in enumerate(names)]
    try:
        docs = parse_documents(args.documents)
        prepared_limits(args.data)  # a bad prepare_args.json: refused before any model loads
        if args.text:
            texts = read_texts(args.text, docs)
        else:
            texts = None
            check_documents(args.data, args.split, docs, "--documents")
    except ValueError as e:
        parser.error(str(e))
    return names, docs, texts


def read_texts(path, indices):
    """The lines ``indices`` (0-based) of the raw-text file ``path``, one document a line; a
    ``ValueError`` naming the file for a line it lacks, an empty line or a file that is not
    UTF-8."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"--text {path}: {e}") from None
    bad = [i for i in indices if not 0 <= i < len(lines)]
    if bad:
        raise ValueError(f"--documents {bad[0]}: {path} has {len(lines)} lines "
                         f"(0..{len(lines) - 1})")
    empty = [i for i in indices if not lines[i].strip()]
    if empty:
        raise ValueError(f"--text {path}: line {empty[0] + 1} (document {empty[0]}) is empty")
    return {i: lines[i] for i in indices}


def raw_text_dataset(task, data, texts):
    """A dataset of the raw ``texts`` ({index: line}), encoded as the data folder records it
    (:func:`~..data_folder.text_encoder`: its tokenizer and BPE) and cut as ``fairseq-sum-prepare``
    cut its splits (:func:`~..data_folder.prepared_limits`, ``cut_pieces``), without references;
    returns
    ``(dataset, line numbers in order, {line: [pieces before the cut, pieces kept]})``."""
    import torch

    from ...data_folder import text_encoder

    encode = text_encoder(data, task.source_dictionary)
    limit = prepared_limits(data).get("src", 0)
    d = task.source_dictionary
    tokens, cuts = [], {}
    for i in sorted(texts):
        ids = encode(texts[i])[:-1]
        kept = cut_pieces([d[int(t)] for t in ids], limit)
        tokens.append(torch.cat([ids[:len(kept)], ids.new_tensor([d.eos()])]))
        if len(kept) < len(ids):
            cuts[i] = [len(ids), len(kept)]
    return (task.build_dataset_for_inference(tokens, [t.numel() for t in tokens]), sorted(texts),
            cuts)


def note_limits(docs, limits):
    """Each document's ``limits`` (:func:`~..data_folder.prepared_limits`), and
    ``reference_at_limit`` / ``source_at_limit`` where its pieces (without EOS) reach the limit
    less the separators the cut may drop: the prepared split's text was most likely cut there."""
    for doc in docs:
        doc["limits"] = limits
        for side, key in (("src", "source"), ("tgt", "reference")):
            n = len(doc[key]) - 1
            if side in limits and n >= limits[side] - 1 and doc[key]:
                doc[f"{key}_at_limit"] = True


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    names, indices, texts = _check_args(parser, args)
    show = [s.strip() for s in (args.show or "").split(",") if s.strip()]
    models, task = [], None
    for name, path in zip(names, args.checkpoints):
        model, model_task = load_for(parser, path, args.data, fp32=True)
        has = exposed(model)
        missing = [s for s in show if s not in has]
        if missing:
            parser.error(f"{path} shows no {', '.join(missing)} (it shows: "
                         f"{', '.join(has) or 'only attention'})")
        if task is not None and \
                model_task.source_dictionary.symbols != task.source_dictionary.symbols:
            parser.error(f"{path}: another dictionary than {args.checkpoints[0]}")
        task = task or model_task
        if texts is None:
            model_task.load_dataset(args.split)  # with the side data this model reads
        elif getattr(model_task, "side_data_names", None):
            parser.error(f"{path} reads side data ({', '.join(model_task.side_data_names)}), "
                         "which --text documents do not have: inspect a prepared split")
        else:
            try:
                dataset, order, cuts = raw_text_dataset(model_task, args.data, texts)
            except ValueError as e:
                parser.error(f"--text {args.text}: {e}")
            model_task.datasets[RAW] = dataset
        models.append((name, model, model_task))
    decoding = dict(min_len=args.min_len, lenpen=args.lenpen,
                    no_repeat_ngram_size=args.no_repeat_ngram_size)
    if texts is None:
        docs = inspect_documents(models, args.split, indices, args.beam, args.max_len_b, decoding)
    else:  # the raw dataset holds the documents in line order
        docs = inspect_documents(models, RAW, range(len(order)), args.beam, args.max_len_b,
                                 decoding)
        for doc, line in zip(docs, order):
            doc["index"] = line
            if line in cuts:
                doc["source_cut"] = cuts[line]
    if texts is None:
        try:
            note_limits(docs, prepared_limits(args.data))
        except ValueError as e:
            parser.error(str(e))
    add_topic_words(docs, args.data)
    if args.gpt2_encoder_json:
        as_text(docs, lambda ids: gpt2_pieces(ids, args.gpt2_encoder_json, args.gpt2_vocab_bpe))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(docs, f)
        print(f"wrote {args.json}")
    if args.html:
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(html_page(docs, args.title, decoding=(
                f"fairseq-generate's --beam {args.beam} --max-len-b {args.max_len_b} --min-len "
                f"{args.min_len} --lenpen {args.lenpen:g} --no-repeat-ngram-size "
                f"{args.no_repeat_ngram_size}")))
        print(f"wrote {args.html} ({len(docs)} documents, {len(models)} models)")


def cli_main():
    main()


if __name__ == "__main__":
    main()
