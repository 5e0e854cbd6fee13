"""Gate threshold sweep of an information selection model (paper Table 2 / Fig. 4) and the gate
scores of one document (Fig. 3).

For each threshold ``t`` the same checkpoint generates summaries of ``--split`` with gates ``<= t``
closed and their positions removed (Algorithm 1); the table gives the sparsity rate (removed /
total source tokens), ROUGE-1/2/L F1 (x 100, summary-level ROUGE-L) of the summaries against the
binarized targets, scored by ``fairseq-sum-score``'s
:class:`~fairseq_sum_plugins.scoring.rouge.Scorer` with its options (``--scorer
rouge155-py|official``, ``--sentence-sep``, ``--no-detok``, ``--split-sentences``; a target without
a word scores 0), and whether the model still reads its source at that threshold: the source gain
(bits per summary token gained from its own document over another, :mod:`.source_use`) and the
number of distinct summaries::

    python -m fairseq_sum_plugins.inspection.gate_sweep DATA/bin \\
        --path checkpoints/checkpoint_best.pt --split test --max-documents 1000 --out sweep/

writes ``sweep/gate_sweep.{md,json}``, ``sweep/sparsity_rouge.png`` (ROUGE against sparsity, one
point per threshold) and ``sweep/gate_scores.png`` (each token of document ``--document`` with its
gate; with per-head gates the maximum over heads, which decides whether the position is removed).
The table opens with a SMOKE=1 line when the checkpoint or the output folder was made under
``SMOKE=1`` (their spec records, :mod:`fairseq_sum_plugins.cli.run_spec`).
Data is what ``fairseq-sum-prepare`` writes (sentencepiece pieces, ``<sep>`` between sentences);
``gate_scores.png`` joins the pieces into words (a word's gate: the largest of its pieces'), names
the document and draws ``--plot-threshold`` (0.1). BART data (GPT-2 ids) is shown as words with
``--gpt2-encoder-json`` / ``--gpt2-vocab-bpe``.
"""
import argparse
import json
import logging
import os
import time
from argparse import Namespace

import numpy as np
import torch

from ..scoring import rouge
from fairseq_sum_plugins.evaluation.plotting import gpt2_pieces

from ..cli.options import add_data_and_path, old_spelling
from ..cli import run_spec
from ..cli.outputs import refuse_clobber
from .loader import load_checkpoint
from .source_use import source_gain
from .stage import check_documents, teacher_forced

logger = logging.getLogger("fairseq_sum_plugins.gate_sweep")

DEFAULT_THRESHOLDS = [0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2]


def get_parser():
    p = argparse.ArgumentParser(prog="python -m fairseq_sum_plugins.inspection.gate_sweep",
                                description=__doc__.split("\n")[0])
    add_data_and_path(p, "checkpoint of a gated model (information selection)")
    p.add_argument("--split", default="test", help="the split decoded (default: test)")
    p.add_argument("--thresholds", type=float, nargs="+", default=DEFAULT_THRESHOLDS,
                   help="gate thresholds t swept (default: 0, 0.02, ..., 0.2)")
    p.add_argument("--max-documents", type=int, default=1000, metavar="N",
                   help="the first N documents of the split (default: the paper's 1000; 0: all)")
    p.add_argument("--beam", type=int, default=4, help="beam size, as fairseq-generate's")
    p.add_argument("--lenpen", type=float, default=1.0, help="length penalty, as "
                   "fairseq-generate's (default: 1)")
    p.add_argument("--max-len-b", type=int, default=128, help="longest summary in tokens, as "
                   "fairseq-generate's (default: 128)")
    p.add_argument("--batch-size", type=int, default=16, help="documents decoded together")
    p.add_argument("--document", type=int, default=0, metavar="N",
                   help="the document of the split shown in gate_scores.png, 0-based (default: 0)")
    p.add_argument("--max-doc-tokens", type=int, default=80, help="words shown in gate_scores.png")
    p.add_argument("--gpt2-encoder-json",
                   help="with --gpt2-vocab-bpe: GPT-2 ids (BART data) shown as words")
    p.add_argument("--gpt2-vocab-bpe", help="with --gpt2-encoder-json: BART's GPT-2 merges")
    p.add_argument("--plot-threshold", type=float, default=0.1,
                   help="threshold drawn in gate_scores.png (default: the paper's 0.1)")
    p.add_argument("--bpe-symbol", default="sentencepiece",
                   help="post-processing of dictionary strings")
    p.add_argument("--cpu", action="store_true", help="stay on CPU even with a GPU")
    p.add_argument(
        "--timing-rounds", type=int, default=0, metavar="N",
        help="after the sweep, time generation at every threshold again in N interleaved rounds "
        "(each round decodes the documents once per threshold, the order rotated by one each "
        "round): the table's speed-up is the median over rounds of each threshold's words/s "
        "over the first threshold's in the same round (0: only the sweep's single timing)")
    p.add_argument("--reference", action="store_true",
                   help="the checkpoint has no gates (a sweep's reference model): one row at "
                        "sparsity 0, no gate figure")
    p.add_argument("--out", metavar="DIR", help="output folder (required)")
    rouge.add_scorer_options(p, rouge.DOCUMENT_BACKENDS)
    for old, new in (("--gen-subset", "--split"), ("--max-examples", "--max-documents"),
                     ("--doc-index", "--document"), ("--out-dir", "--out")):
        old_spelling(p, old, new)
    return p


def load(data, path, cuda, reference=False):
    """``(model, task, gates)``; a ``ValueError`` naming the file for one that is no checkpoint
    (:class:`~.loader.CheckpointError`), a model without gates, one with gates and ``reference``."""
    model, task = load_checkpoint(path, data, cuda=cuda)
    from ..features.information_selection import information_gates

    gates = information_gates([model])
    if not gates and not reference:
        raise ValueError(
            f"{path} has no information selection layer (train with --info-gate or a *_gated arch; "
            "--reference scores a model without gates)")
    if gates and reference:
        raise ValueError(f"--reference: {path} has information selection gates; drop --reference")
    return model, task, gates


def batches(task, subset, n, batch_size):
    task.load_dataset(subset)
    ds = task.dataset(subset)
    ids = list(range(min(n, len(ds)) if n else len(ds)))
    for i in range(0, len(ids), batch_size):
        yield ds.collater([ds[j] for j in ids[i : i + batch_size]])


def sweep(model, task, gates, args, cuda):
    scorer = rouge.scorer_from_args(args)
    gen = task.build_generator([model],
                               Namespace(beam=args.beam, max_len_a=0, max_len_b=args.max_len_b,
                                         lenpen=args.lenpen))
    rows = []
    for t in args.thresholds:
        for g in gates:
            g.threshold = t
            g.reset_counts()
        hyps, refs, words, seconds = generate_all(model, task, gen, args, cuda)
        texts = set(hyps)
        dropped, total = gates[0].sparsity() if gates else (0, 0)
        gain = source_gain(model, task, args.split, args.max_documents, args.batch_size,
                           cuda)["gain"]
        for g in gates:  # the source-gain forwards counted too
            g.counts = None
        r1, r2, rl = rouge_f1(scorer, hyps, refs)
        rows.append(
            dict(threshold=t, sparsity=100 * dropped / max(total, 1), dropped=dropped, tokens=total,
                 rouge1=r1, rouge2=r2, rougeL=rl, n=len(hyps), words_per_s=words / seconds,
                 source_gain=gain, distinct=len(texts), scorer=args.scorer))
        logger.info(f"threshold {t:g}: sparsity {rows[-1]['sparsity']:.2f}% R-1 {r1:.2f} R-2 "
                    f"{r2:.2f} R-L {rl:.2f} source gain {gain:.3f} bits, {len(texts)} distinct "
                    f"summaries of {len(hyps)}")
    return rows


def generate_all(model, task, gen, args, cuda):
    """Decodes the first ``--max-documents`` of ``--split``: (hypotheses, targets, generated
    tokens, seconds spent in the loop)."""
    from fairseq import utils

    tgt = task.target_dictionary
    hyps, refs, words, start = [], [], 0, time.perf_counter()
    for sample in batches(task, args.split, args.max_documents, args.batch_size):
        sample = utils.move_to_cuda(sample) if cuda else sample
        with torch.no_grad():
            hypos = task.inference_step(gen, [model], sample)
        for i, h in enumerate(hypos):
            hyps.append(tgt.string(h[0]["tokens"].int().cpu(), args.bpe_symbol))
            refs.append(tgt.string(utils.strip_pad(sample["target"][i], tgt.pad()).int().cpu(),
                                   args.bpe_symbol))
            words += len(h[0]["tokens"])
    return hyps, refs, words, time.perf_counter() - start


def interleaved_timing(model, task, gates, args, cuda, rounds):
    """Generation speed per threshold, measured in ``rounds`` interleaved rounds so that a change in
    the machine's load falls on every threshold alike: round ``k`` decodes the examples once per
    threshold, starting at threshold ``k mod n``. Returns per threshold ``{'timing_words_per_s':
    [per round], 'speedup': median over rounds of words/s over the first threshold's words/s of the
    same round}``."""
    gen = task.build_generator([model],
                               Namespace(beam=args.beam, max_len_a=0, max_len_b=args.max_len_b,
                                         lenpen=args.lenpen))
    n = len(args.thresholds)
    speeds = [[0.0] * rounds for _ in range(n)]
    for k in range(rounds):
        for j in range(n):
            i = (k + j) % n
            for g in gates:
                g.threshold = args.thresholds[i]
            _, _, words, seconds = generate_all(model, task, gen, args, cuda)
            speeds[i][k] = words / seconds
        logger.info(f"timing round {k + 1}/{rounds}: " + ", ".join(
            f"t={t:g} {speeds[i][k]:.1f} words/s" for i, t in enumerate(args.thresholds)))
    for g in gates:
        g.counts = None
    return [{
        "timing_words_per_s": speeds[i],
        "speedup": float(np.median([speeds[i][k] / speeds[0][k] for k in range(rounds)]))
    } for i in range(n)]


def rouge_f1(scorer, hyps, refs):
    """[ROUGE-1, ROUGE-2, ROUGE-L] F1 x 100 of decoded summaries against their targets, means over
    the documents (:meth:`~fairseq_sum_plugins.scoring.rouge.Scorer.documents`, a target without a
    word scoring 0)."""
    if not hyps:
        return [0.0, 0.0, 0.0]
    per = scorer.documents([scorer.sentences(h) for h in hyps], [scorer.sentences(r) for r in refs],
                           wordless_zero=True)
    return (100 * np.stack([per[m][:, 2] for m in rouge.MAIN_METRICS], 1).mean(0)).tolist()


def table(rows):
    timed = all("speedup" in r for r in rows)
    head = ("| threshold | sparsity | R-1 | R-2 | R-L | source gain (bits) | distinct "
            "| gen words/s |")
    if timed:
        head += (f" speed-up vs t = {rows[0]['threshold']:g} "
                 f"(median of {rows[0]['timing_rounds']} interleaved rounds) |")
    lines = [head, "|---" * head.count(" | ") + "|---|"]
    for r in rows:
        lines.append(f"| {r['threshold']:g} | {r['sparsity']:.2f}% | {r['rouge1']:.2f} | "
                     f"{r['rouge2']:.2f} | {r['rougeL']:.2f} | {r['source_gain']:.3f} | "
                     f"{r['distinct']}/{r['n']} | {r['words_per_s']:.1f} |"
                     + (f" {r['speedup']:.2f}x |" if timed else ""))
    return "\n".join(lines)


def plot_curve(rows, png):
    """Fig. 4: ROUGE against the sparsity rate; thresholds that reach the same point share one
    label, the other labels are placed where they overlap none."""
    from fairseq_sum_plugins.evaluation.plotting import place_labels, pyplot

    plt = pyplot()
    x = [r["sparsity"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for key, label in (("rouge1", "ROUGE-1"), ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L")):
        ax.plot(x, [r[key] for r in rows], marker="o", label=label)
    points = {}
    for r in rows:
        points.setdefault(
            (round(r["sparsity"], 2), round(r["rouge1"], 2)), []).append(f"{r['threshold']:g}")
    ax.set_xlabel("sparsity rate (% of source tokens removed)")
    ax.set_ylabel("F1 x 100")
    ax.set_title("Gate threshold sweep (labels: thresholds t on the ROUGE-1 curve)", fontsize=9)
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(alpha=0.3)
    ax.margins(x=0.12, y=0.15)
    fig.tight_layout()
    place_labels(
        ax, list(points), ["t=" + ",".join(ts) for ts in points.values()],
        offsets=((0, 7), (0, -13), (6, 2), (-6, 2), (0, 17), (0, -23), (6, -10), (-6, -10)))
    fig.savefig(png, dpi=120)
    plt.close(fig)


def document_gates(model, task, subset, index):
    """Raw gate scores (no threshold; per-head: max over heads) of one example, read through the
    inspection stage (:func:`.stage.teacher_forced`, information selection's ``gate``):
    ``(tokens, scores)``."""
    task.load_dataset(subset)
    item = task.dataset(subset)[index]
    values = teacher_forced(model, item["source"], item["target"], task.target_dictionary.eos())
    return [task.source_dictionary[int(t)] for t in item["source"]], values["gate"]


def plot_gates(tokens, scores, png, max_words=80, threshold=0.1, title=""):
    """Fig. 3: one bar per source word (sentencepiece pieces joined; a word's gate is the largest of
    its pieces'), bars of words whose gates are all closed (``<= threshold``) in grey, the threshold
    line always drawn; ``title`` names the document."""
    from fairseq_sum_plugins.evaluation.plotting import join_pieces, pyplot

    plt = pyplot()
    words, values = join_pieces(tokens, scores)
    closed = sum(v <= threshold for v in values)
    words, values = words[:max_words], values[:max_words]
    fig, ax = plt.subplots(figsize=(max(6, 0.2 * len(words)), 3.8))
    ax.bar(range(len(words)), values,
           color=["lightgrey" if v <= threshold else "tab:blue" for v in values])
    ax.axhline(threshold, color="tab:red", lw=1, ls="--",
               label=f"threshold t = {threshold:g} (grey: removed)")
    ax.legend(loc="upper right", fontsize=7)
    ax.set_xticks(range(len(words)))
    ax.set_xticklabels(words, rotation=90, fontsize=7)
    ax.set_xlim(-0.6, len(words) - 0.4)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("gate g_i (max over the word's pieces)")
    shown = "" if len(words) == len(join_pieces(tokens,
                                                scores)[0]) else f", first {len(words)} shown"
    ax.set_title(
        f"Gate scores of {title or 'one document'}\nthreshold t = {threshold:g}: {closed} of "
        f"{len(join_pieces(tokens, scores)[0])} words removed{shown}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def document_title(subset, index, tokens, words=8):
    """``subset #index: "first words ..."`` of one document."""
    from fairseq_sum_plugins.evaluation.plotting import join_pieces

    text = join_pieces([t for t in tokens if t not in ("<sep>", "</s>")], [0.0] * len(tokens))[0]
    return (f'{subset} #{index}: "' + " ".join(text[:words])
            + (' ..."' if len(text) > words else '"'))


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    refuse_clobber(parser, reads=[("DATA", args.data), ("--path", args.path),
                                  ("--gpt2-encoder-json", args.gpt2_encoder_json),
                                  ("--gpt2-vocab-bpe", args.gpt2_vocab_bpe)],
                   writes=[("--out", args.out)])
    if not args.out:
        parser.error("the following arguments are required: --out")
    if args.timing_rounds < 0:
        parser.error(f"--timing-rounds must be >= 0, got {args.timing_rounds}")
    if args.timing_rounds and (args.reference or len(args.thresholds) < 2):
        parser.error("--timing-rounds compares thresholds: give two or more --thresholds, without "
                     "--reference")
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s")
    cuda = torch.cuda.is_available() and not args.cpu
    try:
        rouge.scorer_from_args(args).check()
    except RuntimeError as e:
        parser.error(str(e))
    try:
        check_documents(args.data, args.split, [args.document], "--document")
        model, task, gates = load(args.data, args.path, cuda, args.reference)
    except ValueError as e:  # CheckpointError too
        parser.error(str(e))
    if args.reference:
        args.thresholds = args.thresholds[:1]
    os.makedirs(args.out, exist_ok=True)
    rows = sweep(model, task, gates, args, cuda)
    if args.timing_rounds:
        timings = interleaved_timing(model, task, gates, args, cuda, args.timing_rounds)
        for r, t in zip(rows, timings):
            r.update(t, timing_rounds=args.timing_rounds)
    md = table(rows)
    smoke = run_spec.smoke_runs([args.path, args.out])
    if smoke:  # a recipe's step records its spec (recipes/common.sh step_gate)
        md = (f"SMOKE=1: {' and '.join(smoke)} made under SMOKE=1 (tiny models, a few updates): "
              "the figures check the pipeline, not the paper.\n\n" + md)
    print(md)
    with open(os.path.join(args.out, "gate_sweep.md"), "w") as f:
        f.write(md + "\n")
    with open(os.path.join(args.out, "gate_sweep.json"), "w") as f:
        json.dump(rows, f, indent=2)
    if args.reference:
        return rows
    plot_curve(rows, os.path.join(args.out, "sparsity_rouge.png"))
    tokens, scores = document_gates(model, task, args.split, args.document)
    if args.gpt2_encoder_json and args.gpt2_vocab_bpe:
        tokens = gpt2_pieces(tokens, args.gpt2_encoder_json, args.gpt2_vocab_bpe)
    plot_gates(tokens, scores, os.path.join(args.out, "gate_scores.png"), args.max_doc_tokens,
               threshold=args.plot_threshold,
               title=document_title(args.split, args.document, tokens))
    return rows


if __name__ == "__main__":
    main()
