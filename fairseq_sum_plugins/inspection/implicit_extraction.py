"""Implicit extraction by Mem2Mem's memory compression (paper §5.4, Table 3; Fig. 2-4 heatmaps).

For every document of a split, the sentences with the highest memory-write attention ``A``
(M2M eq. 5) of each of the ``r`` heads (duplicates removed, in document order) form an extractive
summary, scored with ROUGE against the reference beside Lead-k (the first k sentences)::

    python -m fairseq_sum_plugins.inspection.implicit_extraction DATA/bin --path ckpt.pt \\
        --split test --lead 10 --out ext/ [--document 0]

A model without an encoder memory is an error, or with ``--skip-without-memory`` (the recipes) a
one-line message and nothing written.

Writes ``OUT/extractive.txt`` and ``OUT/lead.txt`` (one document per line in split order, sentences
joined by `` <sep> ``), ``OUT/scores.json``, and with ``--document I`` the heatmaps of document
``I``: ``OUT/write_attn.png`` (``A``, slots x sentences, Fig. 2a/3) and ``OUT/read_attn.png``
(``Psi``, slots x decoding steps of its beam-search summary, Fig. 2b/4). Sentences are the
``<sep>`` spans of the binarized source (full sentences; the model itself sees them capped by
``--max-doc-sentences`` / ``--max-sentence-tokens`` where those are set).
"""
import argparse
import json
import os

import numpy as np
import torch

from ..cli.options import add_data_and_path, old_spelling
from ..cli.outputs import refuse_clobber
from ..scoring.rouge import add_scorer_options, clean_summary, rouge_tokens, scorer_from_args
from .loader import load_for
from .stage import check_documents


def split_sentences(tokens, dictionary, sep):
    """Token-id lists of the ``<sep>`` spans of one unpadded source (``</s>`` dropped)."""
    sents, cur = [], []
    for t in tokens.tolist():
        if t == sep:
            sents.append(cur)
            cur = []
        elif t not in (dictionary.pad(), dictionary.eos()):
            cur.append(t)
    sents.append(cur)
    return sents


def sentence_text(ids, dictionary):
    return " ".join(clean_summary(dictionary.string(torch.tensor(ids,
                                                                 dtype=torch.long)))) if ids else ""


def select_sentences(A, num_sentences):
    """Indices (document order) of the sentences with the highest write attention of each head."""
    return sorted(set(A[:, :num_sentences].argmax(dim=-1).tolist()))


def _ngrams(tokens, n):
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def _f1(hyp, ref):
    overlap = len(hyp & ref)
    return 0.0 if not overlap else 2 * overlap / (len(hyp) + len(ref))


def oracle_sentences(sentences, reference, max_sentences=3):
    """Greedy extractive oracle: indices (document order) of the sentences (texts) that, added one
    at a time, most raise the mean of ROUGE-1 and ROUGE-2 F1 (set overlap of stemmed unigrams /
    bigrams) against ``reference``; stops when no sentence raises it or at ``max_sentences``."""
    ref_tokens = rouge_tokens(reference)
    ref = [_ngrams(ref_tokens, 1), _ngrams(ref_tokens, 2)]
    sent_tokens = [rouge_tokens(s) for s in sentences]
    chosen, best = [], 0.0
    while len(chosen) < max_sentences:
        pick = None
        for j, tokens in enumerate(sent_tokens):
            if j in chosen:
                continue
            union = [t for k in sorted(chosen + [j]) for t in sent_tokens[k]]
            score = (_f1(_ngrams(union, 1), ref[0]) + _f1(_ngrams(union, 2), ref[1])) / 2
            if score > best:
                best, pick = score, j
        if pick is None:
            break
        chosen.append(pick)
    return sorted(chosen)


def oracle_agreement(picked, oracle, num_sentences):
    """Micro-averaged precision / recall of picked sentence indices against oracle indices, and the
    precision expected of as many sentences drawn at random (per document ``|oracle| / n``, weighted
    by the number picked). Lists of per-document index lists; ``num_sentences`` per document."""
    hits = sum(len(set(p) & set(o)) for p, o in zip(picked, oracle))
    n_picked = sum(len(p) for p in picked)
    n_oracle = sum(len(o) for o in oracle)
    chance = sum(len(p) * len(o) / n for p, o, n in zip(picked, oracle, num_sentences) if n)
    return {
        "precision": hits / n_picked if n_picked else 0.0,
        "recall": hits / n_oracle if n_oracle else 0.0,
        "chance_precision": chance / n_picked if n_picked else 0.0,
        "picked": n_picked,
        "oracle": n_oracle
    }


def plot_matrix(matrix, path, xlabel, title):
    """Heatmap of ``matrix`` (memory slots x sentences or decoding steps), 1-based integer ticks on
    both axes, the colour scale from the data's minimum to its maximum."""
    from fairseq_sum_plugins.evaluation.plotting import pyplot

    plt = pyplot()
    matrix = np.asarray(matrix, dtype=np.float64)
    fig, ax = plt.subplots(figsize=(max(5, 0.25 * matrix.shape[1] + 2.5),
                                    max(3, 0.3 * matrix.shape[0] + 1.6)))
    lo, hi = float(matrix.min()), float(matrix.max())
    im = ax.imshow(matrix, aspect="auto", cmap="Blues", vmin=lo, vmax=hi if hi > lo else lo + 1e-6)
    for size, set_ticks in ((matrix.shape[1], ax.set_xticks), (matrix.shape[0], ax.set_yticks)):
        ticks = range(0, size, -(-size // 20))  # at most 20 integer ticks, 1-based labels
        set_ticks(ticks, [str(t + 1) for t in ticks])
    ax.set_ylabel("memory slot")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="attention weight")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def extract(model, task, split, lead, batch_size, max_docs=0, use_cuda=False, oracle_max=3):
    """(ids, memory summaries, lead summaries, references, selected counts, agreement) of the first
    ``max_docs`` documents of ``split`` (0: all, batched by length as fairseq-generate batches),
    summaries as sentence lists; agreement: :func:`oracle_agreement` of the memory's and Lead-k's
    picks."""
    from fairseq import utils

    dictionary = task.source_dictionary
    sep = model.encoder.sep
    dataset = task.dataset(split)
    n = min(max_docs, len(dataset))
    samples = (dataset.collater([dataset[i] for i in range(b, min(b + batch_size, n))])
               for b in range(0, n, batch_size)) if max_docs else task.get_batch_iterator(
        dataset, max_sentences=batch_size, ignore_invalid_inputs=True).next_epoch_itr(shuffle=False)
    results, picks = {}, {}
    with torch.no_grad():
        for sample in samples:
            sample = utils.move_to_cuda(sample) if use_cuda else sample
            net_input = sample["net_input"]
            enc = model.encoder(net_input["src_tokens"], net_input["src_lengths"])
            A = enc["write_attn"].float().cpu()
            num_sent = enc["sent_mask"].sum(-1).cpu()
            for b, idx in enumerate(sample["id"].tolist()):
                src = utils.strip_pad(net_input["src_tokens"][b], dictionary.pad()).cpu()
                sents = split_sentences(src, dictionary, sep)
                chosen = select_sentences(A[b], int(num_sent[b]))
                ref = task.target_dictionary.string(
                    utils.strip_pad(sample["target"][b], dictionary.pad()).cpu())
                texts = [sentence_text(s, dictionary) for s in sents]
                oracle = oracle_sentences(texts, " ".join(clean_summary(ref)), oracle_max)
                picks[idx] = ([j for j in chosen if j < len(sents)],
                              list(range(min(lead, len(sents)))), oracle, len(sents))
                results[idx] = (
                    [sentence_text(sents[j], dictionary) for j in chosen if j < len(sents)],
                    [sentence_text(s, dictionary) for s in sents[:lead]],
                    ref,
                    len(chosen),
                )
    ids = sorted(results)
    oracle, sizes = [picks[i][2] for i in ids], [picks[i][3] for i in ids]
    agreement = {"memory": oracle_agreement([picks[i][0] for i in ids], oracle, sizes),
                 f"lead-{lead}": oracle_agreement([picks[i][1] for i in ids], oracle, sizes)}
    return (ids, [results[i][0] for i in ids], [results[i][1] for i in ids],
            [results[i][2] for i in ids], [results[i][3] for i in ids], agreement)


def plot_document(model, task, split, index, out_dir, beam=4, max_len_b=200, **decoding):
    """Write-attention and read-attention heatmaps of one document (dataset index ``index``), read
    through the inspection stage (:mod:`.stage`: Mem2Mem's ``memory`` and ``memory_read``, the
    model teacher-forced on its beam-search summary; ``decoding``: :func:`.stage.beam_output`'s)."""
    from .stage import beam_output, teacher_forced

    dataset = task.dataset(split)
    item = dataset[index]
    hypo = beam_output(model, task, dataset.collater([item]), beam, max_len_b, **decoding)
    values = teacher_forced(model, item["source"], hypo, task.target_dictionary.eos())
    A = torch.tensor(values["memory"])
    paths = [os.path.join(out_dir, "write_attn.png")]
    plot_matrix(
        A, paths[0], "input sentence (1-based, document order)",
        f"memory write attention A: slot x sentence\n({split} document #{index}, {A.shape[1]} "
        "sentences)")
    if "memory_read" in values:
        psi = torch.tensor(values["memory_read"]).T  # slots x steps
        paths.append(os.path.join(out_dir, "read_attn.png"))
        plot_matrix(psi, paths[-1], "decoding step (1-based)",
                    f"memory read attention Psi: slot x step\n({split} document #{index}, "
                    f"{psi.shape[1]} steps)")
    return paths


def _fmt(name, res):
    return (f"{name:12s} {100 * res['rouge1']:6.2f} {100 * res['rouge2']:6.2f} "
            f"{100 * res['rougeL']:6.2f}")


def get_parser():
    p = argparse.ArgumentParser(prog="python -m fairseq_sum_plugins.inspection.implicit_extraction",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_and_path(p, "Mem2Mem checkpoint (with an encoder memory)")
    p.add_argument("--split", default="test", help="the split extracted from (default: test)")
    p.add_argument("--lead", type=int, default=0,
                   help="k of the Lead-k baseline (default: the number of slots)")
    p.add_argument("--batch-size", type=int, default=16, help="documents per forward pass")
    p.add_argument("--max-documents", type=int, default=0, metavar="N",
                   help="the first N documents of the split (default 0: all)")
    add_scorer_options(p)  # --scorer, --sentence-sep, ... as fairseq-sum-score's
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--document", type=int, default=None, metavar="N",
                   help="draw the A / Psi heatmaps of this document of the split (0-based)")
    p.add_argument("--beam", type=int, default=4, help="beam size of the summary drawn in the Psi "
                   "heatmap, as fairseq-generate's")
    p.add_argument("--lenpen", type=float, default=1.0, help="length penalty of that summary, as "
                   "fairseq-generate's (default: 1)")
    p.add_argument("--max-len-b", type=int, default=200, help="longest summary in tokens, as "
                   "fairseq-generate's (default: 200)")
    p.add_argument("--oracle-max", type=int, default=3,
                   help="most sentences of the greedy oracle (>= 1)")
    p.add_argument("--cpu", action="store_true", help="stay on the CPU even with a GPU")
    p.add_argument("--skip-without-memory", action="store_true",
                   help="a model without an encoder memory (e.g. Table 2's HRED / + Decoder "
                        "Mem rows): print a one-line message and exit 0 instead of failing")
    old_spelling(p, "--max-docs", "--max-documents")
    old_spelling(p, "--png-index", "--document")
    return p


def cli_main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    refuse_clobber(parser, reads=[("DATA", args.data), ("--path", args.path)],
                   writes=[("--out", args.out)])
    if args.oracle_max < 1:
        parser.error(f"--oracle-max must be >= 1, got {args.oracle_max}")
    if args.max_documents < 0 or args.batch_size < 1:
        parser.error(f"--max-documents {args.max_documents} / --batch-size {args.batch_size}: "
                     ">= 0 and >= 1")
    try:
        check_documents(args.data, args.split, [] if args.document is None else [args.document],
                        "--document")
    except ValueError as e:
        parser.error(str(e))
    use_cuda = torch.cuda.is_available() and not args.cpu
    model, task = load_for(parser, args.path, args.data, cuda=use_cuda)
    if getattr(model.encoder, "compression", None) is None:
        if args.skip_without_memory:
            print(f"implicit extraction skipped: {args.path} has no encoder memory "
                  "(--memory-encoder False)")
            return
        parser.error(f"{args.path}: this model has no encoder memory (--memory-encoder), nothing "
                     "to extract with")
    lead = args.lead or model.encoder.compression.W_a1.out_features
    task.load_dataset(args.split)
    os.makedirs(args.out, exist_ok=True)

    ids, mem, leads, refs, n_sel, agreement = extract(model, task, args.split, lead,
                                                      args.batch_size, args.max_documents, use_cuda,
                                                      args.oracle_max)
    scorer = scorer_from_args(args, refs,
                              bootstrap_samples=1000 if args.scorer == "official" else 0)
    scores = {"memory": scorer.corpus(mem, refs), f"lead-{lead}": scorer.corpus(leads, refs)}
    for name, summaries in (("extractive.txt", mem), ("lead.txt", leads)):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            for sents in summaries:
                f.write(" <sep> ".join(sents) + "\n")
    report = {"split": args.split, "num_docs": len(ids), "scorer": args.scorer,
              "mean_selected_sentences": float(np.mean(n_sel)), "scores": scores,
              "oracle_max": args.oracle_max, "oracle_agreement": agreement}
    with open(os.path.join(args.out, "scores.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(f"{'system':12s} {'R-1':>6s} {'R-2':>6s} {'R-L':>6s}   ({len(ids)} documents of "
          f"{args.split})")
    for name, res in scores.items():
        print(_fmt(name, res))
    print(f"memory extraction picks {report['mean_selected_sentences']:.2f} sentences per document "
          "on average")
    for name, agr in agreement.items():
        print(f"{name:12s} oracle sentences: precision {100 * agr['precision']:.1f}% (chance "
              f"{100 * agr['chance_precision']:.1f}%), recall {100 * agr['recall']:.1f}%")
    if args.document is not None:
        for path in plot_document(model, task, args.split, args.document, args.out, args.beam,
                                  args.max_len_b, lenpen=args.lenpen):
            print(f"wrote {path}")


if __name__ == "__main__":
    cli_main()
