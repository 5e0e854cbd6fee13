"""Information selection: decoding speed with pruned encoder outputs, and training cost of the gate.

1. Generation (beam search, fairseq's ``SequenceGenerator``) of ONE gated model on 700-token
   documents at threshold 0 (nothing removed), and at a threshold removing >= ``--target-sparsity``
   of the source tokens: pruned (keys/values really shorter, Algorithm 1 as implemented) and, as a
   control, masked (same output, closed positions kept in the encoder output). Runs are interleaved
   in rounds in one process; words/s counts the tokens of the best hypotheses, forced to exactly
   ``--tgt-len`` (``min_len = max_len_b``), so every run generates the same number of tokens.
   Without ``--path`` the model is randomly initialised and the threshold is the quantile of its
   gates giving the target sparsity (the gate scores then are not learned ones, the costs are).
   The last line and the JSON's ``ratios`` give the pruned run's words/s over the unpruned
   (threshold 0) run's, ``pruned_vs_unpruned``, at the sparsity reached (``pruned_vs_masked`` and
   ``masked_vs_unpruned`` too; ``*_median``: the median of the per-round ratios).
2. Training words/s of ``transformer_gated_*`` against fairseq's ``transformer`` of the same dims,
   through ``benchmarks/bench_train.py`` (the generic harness), with ``--src-len`` source tokens.

    python benchmarks/bench_gate.py --threads 2                      # CPU, transformer_gated_small
    python benchmarks/bench_gate.py --device cuda --arch transformer_gated_base --batch-size 32 --json gate.json
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time
from argparse import Namespace

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arch", default=None, help="gated preset (transformer_gated_small on CPU, _base on CUDA)")
    p.add_argument("--path", help="a trained gated checkpoint instead of a random model")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--src-len", type=int, default=700, help="source tokens (the paper truncates to 700)")
    p.add_argument("--tgt-len", type=int, default=32, help="generated tokens per summary")
    p.add_argument("--batch-size", type=int, default=None, help="documents per batch (8; CUDA 32)")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--dict-size", type=int, default=16000)
    p.add_argument("--target-sparsity", type=float, default=0.5)
    p.add_argument("--rounds", type=int, default=3, help="interleaved timed rounds per setting")
    p.add_argument("--threads", type=int)
    p.add_argument("--no-train", action="store_true", help="skip the training comparison")
    p.add_argument("--train-steps", type=int, default=None)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args()
    if not 0 < a.target_sparsity < 1:
        p.error(f"--target-sparsity {a.target_sparsity}: a fraction of the source positions, in (0, 1)")
    cuda = a.device == "cuda"
    a.arch = a.arch or ("transformer_gated_base" if cuda else "transformer_gated_small")
    a.batch_size = a.batch_size or (32 if cuda else 8)
    a.train_steps = a.train_steps or (40 if cuda else 8)
    return a


def build_model(a, d):
    from bench_train import fairseq_cfg

    from fairseq_sum_plugins.tasks.summarization import SummarizationTask

    if a.path:
        from fairseq import checkpoint_utils

        models, _, task = checkpoint_utils.load_model_ensemble_and_task([a.path])
        return models[0], task
    bench = Namespace(batch_size=a.batch_size, fp16=False, device=a.device, src_len=a.src_len, tgt_len=a.tgt_len)
    _, cfg = fairseq_cfg(a.arch, bench)
    task = SummarizationTask(cfg.task, d, d)
    torch.manual_seed(0)
    return task.build_model(cfg.model), task


def make_batch(d, a, seed=0):
    from fairseq.data import LanguagePairDataset

    g = torch.Generator().manual_seed(seed)
    src = [torch.cat([torch.randint(d.nspecial, len(d), (a.src_len - 1,), generator=g), torch.tensor([d.eos()])])
           for _ in range(a.batch_size)]
    data = LanguagePairDataset(src, [len(s) for s in src], d, src, [len(s) for s in src], d, shuffle=False)
    return data.collater([data[i] for i in range(a.batch_size)])


def threshold_for(model, batch, target):
    """The smallest gate threshold removing >= ``target`` of the batch's source tokens."""
    gate = model.encoder.info_gate
    saved, gate.threshold = gate.threshold, -1.0
    with torch.no_grad():
        enc = model.encoder(**{k: v for k, v in batch["net_input"].items() if k != "prev_output_tokens"})
    gate.threshold = saved
    from fairseq_sum_plugins.modules.encoder_out import EncoderOut

    view = EncoderOut.of(enc)
    g = view.state["gates"][~view.padding_mask].float().max(-1).values  # removed iff closed in all heads
    return float(torch.quantile(g, target))


def generate(task, model, batch, a):
    gen = task.build_generator([model], Namespace(beam=a.beam, max_len_a=0, max_len_b=a.tgt_len, min_len=a.tgt_len))
    if a.device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    with torch.no_grad():
        hypos = task.inference_step(gen, [model], batch)
    if a.device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, sum(len(h[0]["tokens"]) for h in hypos)


def bench_generation(a):
    from bench_train import make_dictionary

    d = make_dictionary(a.dict_size)
    model, task = build_model(a, d)
    d = task.source_dictionary
    model.eval()
    batch = make_batch(d, a)
    if a.device == "cuda":
        from fairseq import utils

        model.cuda()
        batch = utils.move_to_cuda(batch)
    gate = model.encoder.info_gate
    t = threshold_for(model, batch, a.target_sparsity)
    settings = [("threshold 0 (all positions)", 0.0, True), (f"threshold {t:.4f}, masked", t, False),
                (f"threshold {t:.4f}, pruned", t, True)]
    stats = {name: dict(time=0.0, words=0, dropped=0, total=0, round_wps=[]) for name, _, _ in settings}
    for rnd in range(a.rounds + 1):  # round 0: warm-up
        for name, thr, prune in settings:
            gate.threshold, gate.prune = thr, prune
            gate.reset_counts()
            seconds, words = generate(task, model, batch, a)
            if rnd:
                s = stats[name]
                s["time"] += seconds
                s["words"] += words
                s["round_wps"].append(words / seconds)
                dropped, total = gate.sparsity()
                s["dropped"], s["total"] = s["dropped"] + dropped, s["total"] + total
    rows = []
    base = stats[settings[0][0]]["words"] / stats[settings[0][0]]["time"]
    for name, thr, prune in settings:
        s = stats[name]
        wps = s["words"] / s["time"]
        rows.append(dict(setting=name, threshold=thr, pruned=prune, sparsity=100 * s["dropped"] / max(s["total"], 1),
                         gen_wps=wps, speedup=wps / base, round_wps=s["round_wps"]))
    lines = ["| setting | sparsity | gen words/s | vs threshold 0 |", "|---|---|---|---|"]
    lines += [f"| {r['setting']} | {r['sparsity']:.1f}% | {r['gen_wps']:,.1f} | {r['speedup']:.2f}x |" for r in rows]
    return rows, "\n".join(lines)


def generation_ratios(rows):
    """The pruned run's generation words/s over the unpruned (threshold 0) and the masked runs' (over
    all rounds, and the median of the per-round ratios, which a load spike on a shared machine moves
    less), and the sparsity it ran at (% of source positions removed)."""
    unpruned, masked, pruned = rows

    def median_ratio(a, b):
        return statistics.median(x / y for x, y in zip(a["round_wps"], b["round_wps"]))

    return dict(sparsity=pruned["sparsity"], pruned_vs_unpruned=pruned["gen_wps"] / unpruned["gen_wps"],
                pruned_vs_masked=pruned["gen_wps"] / masked["gen_wps"],
                masked_vs_unpruned=masked["gen_wps"] / unpruned["gen_wps"],
                pruned_vs_unpruned_median=median_ratio(pruned, unpruned),
                pruned_vs_masked_median=median_ratio(pruned, masked))


def bench_training(a):
    import bench_train

    argv = ["bench_train.py", "--device", a.device, "--archs", a.arch, "--src-len", str(a.src_len),
            "--tgt-len", str(a.tgt_len), "--batch-size", str(a.batch_size), "--steps", str(a.train_steps),
            "--dict-size", str(a.dict_size)]
    argv += ["--threads", str(a.threads)] if a.threads else []
    argv += ["--json", a.json + ".train.json"] if a.json else []
    saved, sys.argv = sys.argv, argv
    try:
        bench_train.main()
    finally:
        sys.argv = saved


def main():
    a = parse_args()
    import logging

    logging.getLogger("fairseq").setLevel(logging.WARNING)
    if a.threads:
        torch.set_num_threads(a.threads)
    from bench_train import cpu_name

    device = torch.cuda.get_device_name() if a.device == "cuda" else cpu_name()
    rows, table = bench_generation(a)
    ratios = generation_ratios(rows)
    load = os.getloadavg()
    summary = (f"{datetime.date.today().isoformat()}  {device}  torch {torch.__version__}  threads "
               f"{torch.get_num_threads()}  {a.arch}{' (' + a.path + ')' if a.path else ' (random init)'}  "
               f"src {a.src_len} tgt {a.tgt_len} batch {a.batch_size} beam {a.beam} dict {a.dict_size}  "
               f"load average {' '.join(f'{x:.2f}' for x in load)}")
    print(summary + "\n\n" + table + "\n\n"
          f"pruned vs unpruned generation at {ratios['sparsity']:.1f}% sparsity: {ratios['pruned_vs_unpruned']:.2f}x "
          f"(median of the rounds {ratios['pruned_vs_unpruned_median']:.2f}x); vs masked: "
          f"{ratios['pruned_vs_masked']:.2f}x (median {ratios['pruned_vs_masked_median']:.2f}x)\n", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(summary=summary, device=device, load_average=load, args=vars(a), generation=rows,
                           ratios=ratios, table=table), f, indent=2)
    if not a.no_train:
        bench_training(a)


if __name__ == "__main__":
    main()
