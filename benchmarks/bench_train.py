"""Training (and beam-search) throughput of sum_transformer presets vs fairseq's ``transformer``.

All models run in one process on the same synthetic batches through fairseq's own training path:
the ``summarization`` task over an in-memory dictionary, batches collated by ``LanguagePairDataset``,
the real criterion (``summarization_loss`` for the presets, ``label_smoothed_cross_entropy`` for the
baseline, both with label smoothing 0.1), Adam, and fairseq's ``Trainer.train_step``. ``--fp16`` is
fairseq's ``--fp16``: a half model under ``FP16Optimizer`` (fp32 master weights, dynamic loss scale),
the same for every model. The baseline is ``transformer`` with the first preset's layers, dims, heads,
ffn, dropout and activation, ``--share-all-embeddings`` and pre-LN on both sides.

Timed steps are interleaved in rounds over the models, after a warm-up of each. Peak memory is the
CUDA allocator's peak during a model's warm-up, minus what was allocated before it was built (so it
covers parameters, fp32 master copy, gradients, Adam state and activations). On CPU, where no
allocator keeps a peak, it is the tensors a model holds between steps (parameters, gradients, Adam
state) plus the peak of the allocations made during one training step, replayed in order from the
profiler's memory events.

"ops/step" counts the tensor operations of one forward + backward pass that run a kernel (ATen ops
with no such op inside them; views and other metadata-only ops excluded), on the device the model
runs on. A GPU step at the paper's shape is bound by kernel launches (see benchmarks/README.md), so
this count, which a CPU can measure, tracks what the extra mechanisms cost there. Throughput counts target
tokens (``ntokens``, EOS included); generation counts the tokens of the best hypothesis, forced to
exactly ``--tgt-len`` by ``min_len = max_len_b = tgt_len``.

    python benchmarks/bench_train.py --threads 1          # CPU: *_small presets, src 256, batch 8
    python benchmarks/bench_train.py --device cuda --fp16 --generate --json out.json
                                                          # GPU: *_base presets, src 512, batch 32

T5-cell presets (``--archs t5_small``, ``t5_base``, ``t5_*_gated``, ``*_t5_small``) run like any other:
the baseline then is fairseq's ``transformer`` with T5-small's dims and T5's dropouts (0.1 on
embeddings, sublayers, attention probabilities and FF hidden units), so the table sets the T5 cell
(RMS norm, relative position bias, no biases) against fairseq's cell at the same size::

    python benchmarks/bench_train.py --threads 1 --archs t5_small --generate

Topic Assistant archs (``transformer_ta_small``/``_base``, any arch with ``--ta-*`` on) get a random
topic model over the in-memory dictionary (every topic a Dirichlet draw over the kept symbols, saved
as a temporary ``topic_model.npz`` in :mod:`preprocess.topic_model`'s format, ``--topics`` columns)
and a Dirichlet ``theta`` per example as side data (``net_input["theta"]``); other models get the
same batches without it.
"""
import argparse
import contextlib
import datetime
import json
import logging
import os
import platform
import tempfile
import time
from argparse import Namespace

import numpy as np
import torch
from fairseq import options, utils
from fairseq.data import Dictionary, LanguagePairDataset
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.trainer import Trainer
from torch.autograd import DeviceType

from fairseq_sum_plugins.modules.topic import ta_enabled
from fairseq_sum_plugins.tasks.summarization import SummarizationTask  # also registers the presets

BASELINE = "transformer"
SHARED_DIMS = [f"{side}_{name}" for side in ("encoder", "decoder")
               for name in ("embed_dim", "ffn_embed_dim", "layers", "attention_heads")]
SHARED_DIMS += ["dropout", "attention_dropout", "activation_dropout", "activation_fn"]
DIVERGED = "diverged: fp16 loss scale at its minimum"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--archs", nargs="+", default=None,
                   help="registered archs to compare with the baseline (default: the three *_small "
                        "presets on CPU, the three *_base presets on CUDA)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--fp16", action="store_true", help="fairseq --fp16 (FP16Optimizer, half model); CUDA only")
    p.add_argument("--src-len", type=int, default=None, help="source tokens incl. EOS (512; CPU: 256)")
    p.add_argument("--tgt-len", type=int, default=64, help="target tokens incl. EOS")
    p.add_argument("--batch-size", type=int, default=None, help="sentences per batch (32; CPU: 8)")
    p.add_argument("--dict-size", type=int, default=32000)
    p.add_argument("--ragged", action="store_true", help="lengths uniform in [len/2, len] (padded batches)")
    p.add_argument("--steps", type=int, default=None, help="timed steps per model (40; CPU: 8)")
    p.add_argument("--rounds", type=int, default=4, help="timed steps are split into this many rounds")
    p.add_argument("--warmup-steps", type=int, default=None, help="untimed steps per model (10; CPU: 2)")
    p.add_argument("--generate", action="store_true", help="also time beam search (SequenceGenerator)")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--gen-batches", type=int, default=3, help="timed generation batches per model")
    p.add_argument("--profile", metavar="FILE", help="write torch.profiler tables of a few train steps here")
    p.add_argument("--json", metavar="FILE", help="write the results here")
    p.add_argument("--threads", type=int, help="torch CPU threads (use 1 on a CPU shared with other jobs)")
    p.add_argument("--topics", type=int, default=256, help="topics K of the random topic model (TA archs)")
    a = p.parse_args()
    cpu = a.device == "cpu"
    if a.fp16 and cpu:
        p.error("--fp16 needs --device cuda")
    size = "small" if cpu else "base"
    a.archs = a.archs or [f"{m}_{size}" for m in ("t5_transformer", "tp_transformer", "tp_transformer_continuous")]
    a.src_len = a.src_len or (256 if cpu else 512)
    a.batch_size = a.batch_size or (8 if cpu else 32)
    a.steps = a.steps or (8 if cpu else 40)
    a.warmup_steps = a.warmup_steps if a.warmup_steps is not None else (2 if cpu else 10)
    return a


def make_dictionary(size):
    d = Dictionary()
    for i in range(size - len(d)):
        d.add_symbol(f"w{i}")
    d.pad_to_multiple_(8)
    return d


def make_batches(d, a, n=4):
    """``n`` batches of random tokens, collated by fairseq (left-padded source, EOS-terminated)."""
    g = torch.Generator().manual_seed(0)

    def seq(max_len):
        length = int(torch.randint(max_len // 2, max_len + 1, (), generator=g)) if a.ragged else max_len
        return torch.cat([torch.randint(d.nspecial, len(d), (length - 1,), generator=g), torch.tensor([d.eos()])])

    src = [seq(a.src_len) for _ in range(n * a.batch_size)]
    tgt = [seq(a.tgt_len) for _ in range(n * a.batch_size)]
    data = LanguagePairDataset(src, [len(s) for s in src], d, tgt, [len(t) for t in tgt], d, shuffle=False)
    batches = [data.collater([data[i] for i in range(b * a.batch_size, (b + 1) * a.batch_size)]) for b in range(n)]
    rng = np.random.default_rng(0)
    for b in batches:  # theta side data, used by the Topic Assistant archs only
        b["net_input"]["theta"] = torch.from_numpy(rng.dirichlet(np.full(a.topics, 0.1), len(b["id"])).astype(np.float32))
    return batches


def without_theta(batches):
    return [dict(b, net_input={k: v for k, v in b["net_input"].items() if k != "theta"}) for b in batches]


def write_topic_model(d, k, folder, seed=0):
    """A random PFA topic model over ``d`` (each topic ~ Dirichlet(0.05) over the kept symbols)."""
    from preprocess.topic_model import PoissonFactorAnalysis, dictionary_checksum, excluded_symbols

    keep = ~excluded_symbols(d)
    phi = np.zeros((len(d), k), np.float32)
    phi[keep] = np.random.default_rng(seed).dirichlet(np.full(int(keep.sum()), 0.05), k).T
    path = os.path.join(folder, "topic_model.npz")
    PoissonFactorAnalysis(phi, keep, dictionary_checksum(d)).save(path)
    return path


def fairseq_cfg(arch, a, extra=()):
    argv = ["unused", "--task", "summarization", "--arch", arch, "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
            "--lr", "1e-4", "--label-smoothing", "0.1", "--seed", "1", "--batch-size", str(a.batch_size),
            "--criterion", "label_smoothed_cross_entropy" if arch == BASELINE else "summarization_loss",
            "--save-dir", tempfile.gettempdir(), "--max-source-positions", str(max(1024, a.src_len)),
            "--max-target-positions", str(max(1024, a.tgt_len)), *extra]
    argv += ["--fp16"] if a.fp16 else []
    argv += ["--cpu"] if a.device == "cpu" else []
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    if ta_enabled(args):
        args.topic_model, args.side_data = a.topic_model, "theta"
    return args, convert_namespace_to_omegaconf(args)


def baseline_extra(preset_args):
    """``transformer`` flags reproducing a preset's dims (pre-LN, tied embeddings)."""
    extra = ["--share-all-embeddings", "--encoder-normalize-before", "--decoder-normalize-before"]
    for name in SHARED_DIMS:
        extra += ["--" + name.replace("_", "-"), str(getattr(preset_args, name))]
    return extra


def build(name, cfg, d, cuda):
    before = torch.cuda.memory_allocated() if cuda else 0
    task = SummarizationTask(cfg.task, d, d)
    model = task.build_model(cfg.model)
    trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
    trainer.cuda_env = None  # Trainer resets the CUDA peak-memory counter every step when this is set
    params = sum(p.numel() for p in model.parameters())
    return dict(name=name, task=task, trainer=trainer, mem_before=before, params=params,
                steps=0, time=0.0, words=0, gen_time=0.0, gen_words=0, theta=ta_enabled(cfg.model))


def ok(models):
    return [m for m in models if "error" not in m]


def sync(cuda):
    if cuda:
        torch.cuda.synchronize()


def train(m, batches, steps, cuda):
    """Run ``steps`` training steps; returns (seconds, target tokens)."""
    sync(cuda)
    start, words = time.perf_counter(), 0
    for i in range(steps):
        batch = batches[i % len(batches)]
        m["steps"] += 1
        m["trainer"].train_step([batch])
        words += batch["ntokens"]
    sync(cuda)
    return time.perf_counter() - start, words


def warm_up(m, batches, a, cuda):
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    train(m, batches, a.warmup_steps, cuda)
    m["peak_gib"] = (torch.cuda.max_memory_allocated() - m["mem_before"]) / 2**30 if cuda else cpu_peak(m, batches)
    m["ops"] = count_ops(m, batches[0], cuda)


# ops that only make a view, allocate, or read metadata: no kernel of their own
METADATA_OPS = frozenset(f"aten::{n}" for n in """
    view view_as reshape _reshape_alias _unsafe_view as_strided t transpose permute expand expand_as
    unsqueeze squeeze flatten unflatten select slice narrow split chunk unbind alias detach detach_ lift_fresh
    empty empty_like empty_strided resize_ resolve_conj resolve_neg numpy_T mT matrix_H contiguous
    size stride dim result_type is_nonzero to _to_copy""".split())


def count_ops(m, batch, cuda):
    """Kernel-running ATen ops in one forward + backward (``task.train_step``, no optimizer step)."""
    trainer = m["trainer"]
    batch = utils.move_to_cuda(batch) if cuda else batch
    trainer.model.train()
    trainer.zero_grad()  # as Trainer.train_step does before its forward
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        trainer.task.train_step(batch, trainer.model, trainer.criterion, trainer.optimizer, trainer.get_num_updates())
    trainer.zero_grad()

    def runs_kernel(e):
        return e.name not in METADATA_OPS or any(runs_kernel(c) for c in e.cpu_children)

    return sum(1 for e in prof.events() if e.name.startswith("aten::") and e.name not in METADATA_OPS
               and not any(runs_kernel(c) for c in e.cpu_children))


def cpu_peak(m, batches):
    """GiB: tensors held between steps + the peak of one training step's allocations (CPU)."""
    trainer = m["trainer"]
    held = {}
    tensors = [p for p in trainer.model.parameters()] + [p.grad for p in trainer.model.parameters()]
    tensors += [v for state in trainer.optimizer.optimizer.state.values() for v in state.values()]
    for t in tensors:
        if torch.is_tensor(t):
            held[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        train(m, batches, 1, False)
    # allocations are charged to the op that made them (its start), frees are "[memory]" events
    deltas = sorted((e.time_range.start, e.cpu_memory_usage if e.name == "[memory]" else e.self_cpu_memory_usage)
                    for e in prof.events())
    level = peak = 0
    for _, delta in deltas:
        level += delta
        peak = max(peak, level)
    return (sum(held.values()) + peak) / 2**30


def generate(m, batches, a, cuda):
    """Beam search on ``batches``; returns (seconds, generated tokens of the best hypotheses)."""
    task, model = m["task"], m["trainer"].model
    gen = task.build_generator([model], Namespace(beam=a.beam, max_len_a=0, max_len_b=a.tgt_len, min_len=a.tgt_len))
    model.eval()
    sync(cuda)
    start, words = time.perf_counter(), 0
    for batch in batches:
        batch = utils.move_to_cuda(batch) if cuda else batch
        hypos = task.inference_step(gen, [model], batch)
        words += sum(len(h[0]["tokens"]) for h in hypos)
    sync(cuda)
    return time.perf_counter() - start, words


@contextlib.contextmanager
def module_ranges(model):
    """Name each module's forward after its class in profiler traces ("## EncoderLayer", ...)."""
    def enter(mod, _):
        mod._bench_range = torch.autograd.profiler.record_function(f"## {type(mod).__name__}").__enter__()

    def leave(mod, *_):
        mod._bench_range.__exit__(None, None, None)

    hooks = [h for mod in model.modules()
             for h in (mod.register_forward_pre_hook(enter), mod.register_forward_hook(leave))]
    try:
        yield
    finally:
        for h in hooks:
            h.remove()


def profile(m, batches, cuda, out, steps=3):
    """Op tables (by device and by CPU self time) and per-module forward totals of a few train steps."""
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=acts) as prof:
        train(m, batches, steps, cuda)
    kernels = [e for e in prof.events() if e.device_type == DeviceType.CUDA and not e.is_user_annotation]
    busy = sum(e.device_time_total for e in kernels) / 1e3 / steps
    wall = 1e3 * m["time"] / m["words"] * batches[0]["ntokens"] if m["words"] else float("nan")
    gpu = f", GPU kernels {busy:.1f} ms/step ({len(kernels) / steps:.0f} kernels/step)" if cuda else ""
    out.write(f"\n===== {m['name']}: wall {wall:.1f} ms/step unprofiled{gpu} =====\n")
    for key in (["self_device_time_total"] if cuda else []) + ["self_cpu_time_total"]:
        out.write(f"\n----- {m['name']}: top ops by {key} over {steps} steps -----\n")
        out.write(prof.key_averages().table(sort_by=key, row_limit=25, max_name_column_width=70))

    with module_ranges(m["trainer"].model), torch.profiler.profile(activities=acts) as prof:
        train(m, batches, steps, cuda)
    out.write(f"\n----- {m['name']}: forward of each module class, per step (nested classes overlap) -----\n")
    rows = [e for e in prof.key_averages() if e.key.startswith("## ") and e.device_type == DeviceType.CPU]
    for e in sorted(rows, key=lambda e: -e.cpu_time_total):
        out.write(f"{e.key:34s} calls/step {e.count // steps:4d}   CPU {e.cpu_time_total / 1e3 / steps:8.2f} ms"
                  f"   GPU kernels {e.device_time_total / 1e3 / steps:8.2f} ms\n")


def ratio(x, base):
    return x / base if x is not None and base else None


def fmt(v, spec, suffix=""):
    return "-" if v is None else format(v, spec) + suffix


def report(models, a, env):
    """Print the Markdown table (first row: the baseline) and write the JSON."""
    def per_s(words, seconds):
        return words / seconds if seconds else None

    rows = [dict(model=m["name"], params_m=m["params"] / 1e6, train_wps=per_s(m["words"], m["time"]),
                 peak_gib=m["peak_gib"], ops=m.get("ops"), gen_wps=per_s(m["gen_words"], m["gen_time"]),
                 skipped_updates=m["steps"] - m["trainer"].get_num_updates(), steps=m["steps"], error=m.get("error"))
            for m in models]
    for r in rows:
        for key, x in (("train_wps", "train_x"), ("peak_gib", "mem_x"), ("ops", "ops_x"), ("gen_wps", "gen_x")):
            r[x] = ratio(r[key], rows[0][key])
    cols = ["model", "params (M)", "train tgt words/s", "vs transformer", "peak mem (GiB)", "vs transformer",
            "ops/step", "vs transformer"]
    cols += [f"gen words/s (beam {a.beam})", "vs transformer"] if a.generate else []
    cols += ["notes"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r["model"], fmt(r["params_m"], ".1f"), fmt(r["train_wps"], ",.0f"), fmt(r["train_x"], ".2f", "x"),
                 fmt(r["peak_gib"], ".3f"), fmt(r["mem_x"], ".2f", "x"), fmt(r["ops"], "d"), fmt(r["ops_x"], ".2f", "x")]
        cells += [fmt(r["gen_wps"], ",.0f"), fmt(r["gen_x"], ".2f", "x")] if a.generate else []
        skipped = f"{r['skipped_updates']}/{r['steps']} updates skipped (fp16 overflow)" if r["skipped_updates"] else ""
        cells += [r["error"] or skipped]
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(env["summary"] + "\n\n" + table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(env=env, args=vars(a), results=rows, table=table), f, indent=2)


def main():
    a = parse_args()
    logging.getLogger("fairseq").setLevel(logging.WARNING)
    if a.threads:
        torch.set_num_threads(a.threads)
    cuda = a.device == "cuda"
    d = make_dictionary(a.dict_size)
    tmp = tempfile.TemporaryDirectory(prefix="bench-topic-model-")
    a.topic_model = write_topic_model(d, a.topics, tmp.name)
    theta_batches = make_batches(d, a)
    plain_batches = without_theta(theta_batches)

    preset_args, _ = fairseq_cfg(a.archs[0], a)
    specs = [(BASELINE, fairseq_cfg(BASELINE, a, baseline_extra(preset_args))[1])]
    specs += [(arch, fairseq_cfg(arch, a)[1]) for arch in a.archs]

    models = []
    for name, cfg in specs:  # build and warm up one at a time, so each peak is the model's own
        models.append(build(name, cfg, d, cuda))
        models[-1]["batches"] = theta_batches if models[-1]["theta"] else plain_batches
        try:
            warm_up(models[-1], models[-1]["batches"], a, cuda)
        except FloatingPointError:  # fairseq gives up: fp16 loss scale at its minimum
            models[-1].update(error=DIVERGED, peak_gib=None)

    per_round = max(1, a.steps // a.rounds)
    a.steps = per_round * a.rounds
    for _ in range(a.rounds):
        for m in ok(models):
            try:
                seconds, words = train(m, m["batches"], per_round, cuda)
            except FloatingPointError:
                m.update(error=DIVERGED, peak_gib=None, time=0.0)
                continue
            m["time"] += seconds
            m["words"] += words

    if a.generate:
        for m in ok(models):
            generate(m, m["batches"][:1], a, cuda)  # warm-up
        for i in range(min(a.gen_batches, len(theta_batches))):
            for m in ok(models):
                seconds, words = generate(m, [m["batches"][i]], a, cuda)
                m["gen_time"] += seconds
                m["gen_words"] += words

    if a.profile:
        with open(a.profile, "w") as out:
            for m in ok(models):
                profile(m, m["batches"], cuda, out)

    device = torch.cuda.get_device_name() if cuda else platform.processor() or platform.machine()
    precision = "fp16 (fairseq --fp16: FP16Optimizer, half model)" if a.fp16 else "fp32"
    env = dict(date=datetime.date.today().isoformat(), device=device, torch=torch.__version__,
               threads=torch.get_num_threads(), precision=precision)
    threads = "" if cuda else f"  {torch.get_num_threads()} threads"
    env["summary"] = (f"{env['date']}  {device}{threads}  torch {torch.__version__}  {precision}  "
                      f"src {a.src_len} tgt {a.tgt_len} batch {a.batch_size} dict {len(d)}"
                      f"{' ragged' if a.ragged else ''}  {a.steps} timed steps/model")
    report(models, a, env)
    tmp.cleanup()


if __name__ == "__main__":
    main()
