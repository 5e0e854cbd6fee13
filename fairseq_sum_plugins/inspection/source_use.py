"""Does a model read its source? The source gain, and how many different summaries it writes.

A summarizer trained briefly from scratch can reach a plausible validation loss and a respectable
ROUGE while ignoring its input: it has learnt a language model of summaries and writes the same
generic text for every document (results/xsum-read/results.md has such runs). ROUGE alone does
not show this. Two measurements do:

* **source gain** (bits per target token): the teacher-forced NLL of each reference summary given
  another document of the split (document ``i + 1`` for summary ``i``, the last with the first;
  side data such as the Topic Assistant's theta travels with its document) minus its NLL given its
  own document::

      gain = NLL(y_i | x_{i+1}) - NLL(y_i | x_i)

  0 for a model that ignores the source, positive when the source helps, in eval mode (no dropout;
  an information selection model at its ``--gate-threshold``).
* **distinct outputs**: the number of different summary texts among the N test documents' generated
  summaries (``fairseq-generate`` output, each text after
  :func:`~fairseq_sum_plugins.scoring.rouge_text.clean_summary`), reported as ``distinct`` of
  ``hypotheses``: 1 of N when one text is written for every document, N of N when no two documents
  share a summary. Texts are counted, not documents: summaries "a", "a", "b" are 2 distinct of 3
  (the number of documents whose summary differs from every other's would be 1).

::

    python -m fairseq_sum_plugins.inspection.source_use DATA/bin --path CKPT [--split test] \\
        [--max-documents 1000] [--generate-output test.out] [--json OUT.json]

``recipes/compare.sh`` and ``recipes/newsroom/gate_lambda_sweep.sh`` put both into their tables.
"""
import argparse
import json
import math

import torch

from fairseq_sum_plugins.evaluation.decodings import sha256_file

from ..cli.options import add_data_and_path, old_spelling
from ..cli.outputs import refuse_clobber
from .loader import load_for
from .stage import check_documents


def _other_source(ds, i, j):
    """Example ``i`` of ``ds`` with the source (and every side-data field) of example ``j``."""
    item, donor = dict(ds[i]), ds[j]
    for key in item:
        if key not in ("id", "target"):
            item[key] = donor[key]
    return item


def _nll_bits(model, sample, pad):
    """Summed NLL (bits) of the sample's targets and their count."""
    net_output = model(**sample["net_input"])
    lprobs = model.get_normalized_probs(net_output, log_probs=True)
    target = model.get_targets(sample, net_output)
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1).float()
    mask = target.ne(pad)
    return float(nll[mask].sum()) / math.log(2), int(mask.sum())


def source_gain(model, task, split="test", max_documents=None, batch_size=16, cuda=False):
    """``{'nll_own', 'nll_other', 'gain', 'examples', 'tokens'}`` (NLL in bits per target token) of
    the first ``max_documents`` documents of ``split`` (all when None)."""
    from fairseq import utils

    if split not in task.datasets:
        task.load_dataset(split)
    ds = task.dataset(split)
    n = min(max_documents, len(ds)) if max_documents else len(ds)
    if n < 2:
        raise ValueError(f"source gain needs at least 2 documents of {split!r}, it has {n}")
    pad = task.target_dictionary.pad()
    was_training = model.training
    model.eval()
    own = other = 0.0
    tokens = 0
    try:
        with torch.no_grad():
            for start in range(0, n, batch_size):
                ids = range(start, min(start + batch_size, n))
                for items, acc in (([ds[i] for i in ids], "own"),
                                   ([_other_source(ds, i, (i + 1) % n) for i in ids], "other")):
                    sample = ds.collater(items)
                    sample = utils.move_to_cuda(sample) if cuda else sample
                    bits, count = _nll_bits(model, sample, pad)
                    if acc == "own":
                        own += bits
                        tokens += count
                    else:
                        other += bits
    finally:
        model.train(was_training)
    return {"nll_own": own / tokens, "nll_other": other / tokens, "gain": (other - own) / tokens,
            "examples": n, "tokens": tokens}


def distinct_outputs(gen_output):
    """``(distinct, total)``: the number of different hypothesis texts of a ``fairseq-generate``
    output (after :func:`~fairseq_sum_plugins.scoring.rouge_text.clean_summary`) and the number of
    hypotheses."""
    from ..scoring.rouge_text import clean_summary
    from ..scoring.score_inputs import read_generate_output

    _, hyps, _ = read_generate_output(gen_output)
    texts = [" ".join(clean_summary(h)) for h in hyps]
    return len(set(texts)), len(texts)


def get_parser():
    p = argparse.ArgumentParser(prog="python -m fairseq_sum_plugins.inspection.source_use",
                                description=__doc__.split("\n")[0])
    add_data_and_path(p)
    p.add_argument("--split", default="test", help="the split measured (default: test)")
    p.add_argument("--max-documents", type=int, default=1000, metavar="N",
                   help="the first N documents of the split (default: 1000; 0: all)")
    p.add_argument("--batch-size", type=int, default=16, help="documents per forward pass")
    p.add_argument("--side-data", default="", help="as fairseq-generate's --side-data (e.g. theta)")
    p.add_argument("--generate-output",
                   help="fairseq-generate output of the same model: adds distinct outputs")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--cpu", action="store_true", help="stay on CPU even with a GPU")
    old_spelling(p, "--subset", "--split")
    old_spelling(p, "--max-examples", "--max-documents")
    return p


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    refuse_clobber(parser, reads=[("DATA", args.data), ("--path", args.path),
                                  ("--generate-output", args.generate_output)],
                   writes=[("--json", args.json)], files=True)
    if args.max_documents < 0 or args.batch_size < 1:
        parser.error(f"--max-documents {args.max_documents} / --batch-size {args.batch_size}: "
                     ">= 0 and >= 1")
    try:
        check_documents(args.data, args.split, [])
    except ValueError as e:
        parser.error(str(e))
    cuda = torch.cuda.is_available() and not args.cpu
    model, task = load_for(parser, args.path, args.data, cuda=cuda, overrides={
        "side_data": args.side_data} if args.side_data else None)
    try:
        out = source_gain(model, task, args.split, args.max_documents, args.batch_size, cuda)
    except ValueError as e:
        parser.error(str(e))
    if args.generate_output:
        out["distinct"], out["hypotheses"] = distinct_outputs(args.generate_output)
        # which output it measured: fairseq-sum-compare --html uses this file for that output only
        out["generate_output_sha256"] = sha256_file(args.generate_output)
    line = (f"{args.split}: NLL {out['nll_own']:.3f} bits/token with its own document, "
            f"{out['nll_other']:.3f} with another: source gain {out['gain']:.3f} over "
            f"{out['examples']} examples")
    if "distinct" in out:
        line += f"; {out['distinct']} distinct summaries of {out['hypotheses']}"
    print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
    return out


if __name__ == "__main__":
    main()
