"""ETADS training throughput and peak memory vs fairseq's ``transformer`` of the same dims.

Reuses :mod:`bench_train` (same synthetic batches, fairseq ``Trainer.train_step``, Adam, label
smoothing 0.1, timed steps interleaved in rounds) with a baseline that matches the ETADS presets:
fairseq ``transformer`` with their layers / dims / heads / ffn, shared embeddings and **post-LN**
(the paper's cell, §3.1). Compared: ``transformer``, ``etads_baseline`` (our cell, no extensions),
``etads_base`` (focus attention in every encoder layer, saliency in every decoder layer).

Peak memory: on CUDA the allocator's peak (as in bench_train); on CPU each model runs its warm-up
in a fresh subprocess that resets the kernel's peak-RSS counter after building the model
(``/proc/self/clear_refs``) and reports ``VmHWM - VmRSS``: gradients, Adam state and activations.

    python benchmarks/bench_etads.py                     # CPU: src 400, tgt 100, batch 10 (~4096 tokens)
    python benchmarks/bench_etads.py --device cuda --fp16 --batch-size 32 --steps 40 --json out.json
"""
import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train as bt  # noqa: E402

ARCHS = ["etads_baseline", "etads_base"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--archs", nargs="+", default=ARCHS)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--src-len", type=int, default=400, help="the paper's document truncation")
    p.add_argument("--tgt-len", type=int, default=100, help="the paper's summary truncation")
    p.add_argument("--batch-size", type=int, default=10, help="sentences per batch (10 x 400 ~ 4096 tokens)")
    p.add_argument("--dict-size", type=int, default=50000, help="the paper's shared vocabulary")
    p.add_argument("--ragged", action="store_true")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--threads", type=int)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--profile", metavar="FILE", help="write torch.profiler tables of a few train steps here")
    p.add_argument("--model-args", default="", help="extra model flags for every preset and the baseline dims, "
                                                    "e.g. '--encoder-embed-dim 256'")
    p.add_argument("--memory-of", metavar="NAME", help=argparse.SUPPRESS)  # subprocess mode
    a = p.parse_args(argv)
    a.generate, a.beam, a.gen_batches, a.topics = False, 4, 0, 1  # topics: no TA arch here
    return a


def specs(a):
    extra = a.model_args.split()
    preset_args, _ = bt.fairseq_cfg(a.archs[0], a, extra)
    base = ["--share-all-embeddings"]  # post-LN: no --*-normalize-before
    for name in bt.SHARED_DIMS:
        base += ["--" + name.replace("_", "-"), str(getattr(preset_args, name))]
    if getattr(preset_args, "encoder_normalize_before", False):
        base += ["--encoder-normalize-before", "--decoder-normalize-before"]
    out = [(bt.BASELINE, bt.fairseq_cfg(bt.BASELINE, a, base)[1])]
    return out + [(arch, bt.fairseq_cfg(arch, a, extra)[1]) for arch in a.archs]


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def memory_child(a):
    """Subprocess: build one model, reset the peak RSS, warm up, print the peak increase (bytes)."""
    if a.threads:
        torch.set_num_threads(a.threads)
    d = bt.make_dictionary(a.dict_size)
    batches = bt.without_theta(bt.make_batches(d, a))
    cfg = dict(specs(a))[a.memory_of]
    m = bt.build(a.memory_of, cfg, d, a)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = _status("VmRSS")
    bt.train(m, batches, max(a.warmup_steps, 2))
    print(json.dumps({"peak_bytes": _status("VmHWM") - before}))


def cpu_peak(name, argv):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), *argv, "--memory-of", name],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"memory run of {name} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["peak_bytes"] / 2**30


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse_args(argv)
    import logging

    logging.getLogger("fairseq").setLevel(logging.WARNING)
    if a.memory_of:
        return memory_child(a)
    if a.threads:
        torch.set_num_threads(a.threads)
    cuda = a.device == "cuda"
    d = bt.make_dictionary(a.dict_size)
    batches = bt.without_theta(bt.make_batches(d, a))
    models = []
    for name, cfg in specs(a):
        peer = bt.BASELINE if name == bt.BASELINE else None
        models.append(bt.build(name, cfg, d, a, arch=a.archs[0] if peer else name, peer=peer))
        models[-1]["dims"] = a.model_args  # one baseline, with the presets' dims
        bt.warm_up(models[-1], batches, a)
        if not cuda:
            models[-1]["peak_gib"] = cpu_peak(name, argv)
    per_round = max(1, a.steps // a.rounds)
    a.steps = per_round * a.rounds
    for _ in range(a.rounds):
        for m in models:
            seconds, words = bt.train(m, batches, per_round)
            m["time"] += seconds
            m["words"] += words
            m["rounds"].append((seconds, words))
    if a.profile:
        with open(a.profile, "w") as out:
            for m in models:
                bt.profile(m, batches, out)
    import datetime

    device = torch.cuda.get_device_name() if cuda else bt.cpu_name()
    precision = "fp16" if a.fp16 else "fp32"
    mem = "CUDA allocator peak" if cuda else "peak RSS increase over the built model (fresh process)"
    env = dict(date=datetime.date.today().isoformat(), device=device, torch=torch.__version__,
               threads=torch.get_num_threads(), precision=precision, load_average=os.getloadavg())
    env["summary"] = (f"{env['date']}  {device}  torch {torch.__version__}  {precision}  {torch.get_num_threads()} threads  "
                      f"src {a.src_len} tgt {a.tgt_len} batch {a.batch_size} dict {len(d)}  {a.steps} timed steps/model; "
                      f"memory: {mem}; load average {' '.join(f'{x:.2f}' for x in env['load_average'])}")
    bt.report(models, a, env)


if __name__ == "__main__":
    main()
