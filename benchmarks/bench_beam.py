"""Beam search cost per hypothesis at several beams and batch sizes, the T5 cell against HF's T5.

One process, one thread (``--threads``), interleaved rounds: for each ``(beam, batch size)`` of the
grid, one beam search of each model on the same sources, every hypothesis forced to ``--tgt-len``
tokens (fairseq: ``min_len = max_len_b = tgt_len``; HF: ``min_new_tokens = max_new_tokens = tgt_len
+ 1``, EOS included), so both decode the same number of steps. Reported per model and grid point:
ms per decoding step, and ms per decoding step per hypothesis (``batch x beam`` rows). A step whose
cost per hypothesis stays flat as the beam grows costs what its GEMMs cost; one that grows pays
per-step work that does not scale with the rows (Python, the search's own bookkeeping).

    python benchmarks/bench_beam.py --threads 1 --arch t5_small --grid 1x8 4x8 8x8 4x1 4x4
"""
import argparse
import logging
import os
import sys
import tempfile
import time
from argparse import Namespace

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train as bt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arch", default="t5_small")
    p.add_argument("--grid", nargs="+", default=["1x8", "4x8", "8x8", "4x1", "4x4"],
                   help="BEAMxBATCH points")
    p.add_argument("--src-len", type=int, default=256)
    p.add_argument("--tgt-len", type=int, default=64)
    p.add_argument("--dict-size", type=int, default=32000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int)
    p.add_argument("--json")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    for name in ("fairseq", "hydra"):
        logging.getLogger(name).setLevel(logging.WARNING)
    grid = [tuple(int(x) for x in g.split("x")) for g in a.grid]
    a.batch_size = max(b for _, b in grid)
    a.device, a.fp16, a.bf16, a.ragged, a.topics, a.compile = "cpu", False, False, False, 8, False
    d = bt.make_dictionary(a.dict_size)
    batch = bt.without_theta(bt.make_batches(d, a, n=1))[0]
    args, cfg = bt.fairseq_cfg(a.arch, a)
    from fairseq_sum_plugins.tasks.summarization import SummarizationTask

    task = SummarizationTask(cfg.task, d, d)
    model = task.build_model(cfg.model).eval()
    config, _ = bt.hf_t5_config(args, d)
    from transformers import T5ForConditionalGeneration

    torch.manual_seed(1)
    hf = T5ForConditionalGeneration(config).eval()

    def sub(n):
        net = {k: v[:n] for k, v in batch["net_input"].items() if torch.is_tensor(v)}
        return dict(batch, net_input=net, id=batch["id"][:n], nsentences=n)

    def ours(beam, n):
        gen = task.build_generator([model], Namespace(beam=beam, max_len_a=0, max_len_b=a.tgt_len,
                                                      min_len=a.tgt_len))
        task.inference_step(gen, [model], sub(n))

    def theirs(beam, n):
        src = batch["net_input"]["src_tokens"][:n]
        hf.generate(input_ids=src, attention_mask=src.ne(d.pad()).long(), num_beams=beam,
                    min_new_tokens=a.tgt_len + 1, max_new_tokens=a.tgt_len + 1, do_sample=False,
                    length_penalty=1.0, early_stopping=False)

    models = {a.arch: ours, f"hf_t5 ({a.arch})": theirs}
    seconds = {(m, g): 0.0 for m in models for g in grid}
    with torch.no_grad():
        for fn in models.values():  # warm-up
            fn(*grid[0])
        for _ in range(a.rounds):
            for g in grid:
                for name, fn in models.items():
                    start = time.perf_counter()
                    fn(*g)
                    seconds[name, g] += time.perf_counter() - start
    steps = a.tgt_len + 1
    lines = [f"{bt.cpu_name()}  {torch.get_num_threads()} threads  torch {torch.__version__}  "
             f"src {a.src_len} tgt {a.tgt_len} dict {len(d)}  {a.rounds} rounds  load average "
             + " ".join(f"{x:.2f}" for x in os.getloadavg()), "",
             "| beam | batch | hypotheses | " + " | ".join(
                 f"{n}: ms/step | {n}: ms/step/hyp" for n in models) + " | ratio (HF / cell) |",
             "|---|---|---|" + "---|---|" * len(models) + "---|"]
    rows = []
    for beam, n in grid:
        ms = {m: 1e3 * seconds[m, (beam, n)] / a.rounds / steps for m in models}
        rows.append(dict(beam=beam, batch=n, ms_per_step=ms))
        names = list(models)
        lines.append(f"| {beam} | {n} | {beam * n} | " + " | ".join(
            f"{ms[m]:.1f} | {ms[m] / (beam * n):.2f}" for m in names)
            + f" | {ms[names[1]] / ms[names[0]]:.2f}x |")
    print("\n".join(lines))
    if a.json:
        import json
        with open(a.json, "w") as f:
            json.dump(dict(args=vars(a), load_average=os.getloadavg(), device=bt.cpu_name(),
                           rows=rows, table="\n".join(lines)), f, indent=2)


if __name__ == "__main__":
    main()
