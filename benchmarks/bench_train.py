"""Training (and beam-search) throughput of sum_transformer presets vs fairseq's ``transformer``.

All models run in one process on the same synthetic batches through fairseq's own training path:
the ``summarization`` task over an in-memory dictionary, batches collated by ``LanguagePairDataset``,
the real criterion (``summarization_loss`` for the presets, ``label_smoothed_cross_entropy`` for the
baseline, both with label smoothing 0.1), Adam, and fairseq's ``Trainer.train_step``. ``--fp16`` is
fairseq's ``--fp16``: a half model under ``FP16Optimizer`` (fp32 master weights, dynamic loss scale),
the same for every model. The baseline is ``transformer`` with a preset's layers, dims, heads, ffn,
dropout and activation, ``--share-all-embeddings`` and pre-LN on both sides: one per distinct set of
dims among ``--archs`` (``transformer (ARCH dims)`` when there are several), each arch measured
against the one of its dims, so the ``*_small`` and the T5-cell presets can share one run.

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

``--peers transformer,hf_t5`` adds, for every T5-cell arch, HF's ``T5ForConditionalGeneration`` built
from that arch's config (random init, HF's one dropout rate, eager attention, pad as the decoder's start
token, the same vocabulary), trained on the same batches with its own loss (token-mean cross-entropy)
and fairseq's optimizer from the same flags, and decoded by ``generate`` (beam 4, ``min_new_tokens =
max_new_tokens = tgt_len + 1``: fairseq's forced length, EOS included). ``--json`` then holds, per arch,
``train_wps``, ``gen_tps``, ``peak_mem`` and ``ops_per_step``, ``gflops_per_step`` of the arch and of each peer, and
``ratios[arch][peer]`` (``train_ratio``, ``gen_ratio``, ``mem_ratio``, ``ops_ratio``, ``flops_ratio``: arch over peer).

How far a training ratio can be trusted: every row keeps its ``rounds`` (seconds and target words of
each round), and each training ratio carries a 95% interval by a paired bootstrap over the rounds
(``train_interval``; :func:`round_interval`), so a run says whether its gaps exceed its own spread
(more rounds, a narrower interval); a generation ratio likewise over the timed batches
(``gen_rounds``, ``gen_interval``: each batch is decoded by every model in turn). ``--over ARCH`` adds every other arch's training ratio over one
of them (``over[arch]`` in the JSON, with its interval and FLOP ceiling), e.g. the presets over the
T5-cell transformer they are built on.

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
import sys
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

from fairseq_sum_plugins.models.sum_transformer import is_t5_cell
from fairseq_sum_plugins.features.topic_assistant.layers import ta_enabled
from fairseq_sum_plugins.tasks.summarization import SummarizationTask  # also registers the presets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the scripts beside this one
from profile_breakdown import breakdown, gemm_ceiling, table as breakdown_table  # noqa: E402

BASELINE = "transformer"
SHARED_DIMS = [f"{side}_{name}" for side in ("encoder", "decoder")
               for name in ("embed_dim", "ffn_embed_dim", "layers", "attention_heads")]
SHARED_DIMS += ["dropout", "attention_dropout", "activation_dropout", "activation_fn"]
DIVERGED = "diverged: fp16 loss scale at its minimum"
HF_T5 = "hf_t5"
PEERS = (BASELINE, HF_T5)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--archs", nargs="+", default=None,
                   help="registered archs to compare with the baseline (default: the three *_small "
                        "presets on CPU, the three *_base presets on CUDA)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--fp16", action="store_true", help="fairseq --fp16 (FP16Optimizer, half model); CUDA only")
    p.add_argument("--bf16", action="store_true",
                   help="fairseq --bf16 (FP16Optimizer without loss scaling, bfloat16 model); CUDA only")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile(dynamic=True) every encoder and decoder layer of every model (peers "
                        "included); the first step's extra time is reported as compile_s")
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
    p.add_argument("--gen-batches", type=int, default=3, help="timed generation batches per model (the 4 synthetic batches in turn; each ratio gets an interval over them)")
    p.add_argument("--profile", metavar="FILE", help="write torch.profiler tables of a few train steps (and of one beam search with --generate) here")
    p.add_argument("--profile-steps", type=int, default=3, help="training steps per profiled pass (--profile)")
    p.add_argument("--ablate", default="",
                   help=f"comma-separated fast paths ({', '.join(FAST_PATHS)}): each arch also "
                        "runs with that path off, as a peer named 'no PATH' in the same rounds")
    p.add_argument("--over", metavar="ARCH",
                   help="also give every other arch's training ratio over this one (an arch of --archs; "
                        "e.g. a preset over the cell it is built on), with its interval over the rounds")
    p.add_argument("--json", metavar="FILE", help="write the results here")
    p.add_argument("--threads", type=int, help="torch CPU threads (use 1 on a CPU shared with other jobs)")
    p.add_argument("--topics", type=int, default=256, help="topics K of the random topic model (TA archs)")
    p.add_argument("--peers", default=BASELINE,
                   help="comma-separated models each arch is measured against: transformer (fairseq's, the "
                        "each arch's dims), hf_t5 (HF T5ForConditionalGeneration of each T5-cell arch's config)")
    a = p.parse_args()
    for flag in ("profile_steps", "steps", "rounds", "batch_size", "src_len", "tgt_len", "beam", "dict_size"):
        value = getattr(a, flag)
        if value is not None and value < 1:
            p.error(f"--{flag.replace('_', '-')} {value}: at least 1")
    for flag in ("warmup_steps", "gen_batches"):
        if getattr(a, flag) is not None and getattr(a, flag) < 0:
            p.error(f"--{flag.replace('_', '-')} {getattr(a, flag)}: at least 0")
    if a.compile and a.warmup_steps is not None and a.warmup_steps < 2:
        p.error(f"--compile --warmup-steps {a.warmup_steps}: at least 2 (the first step compiles, the others "
                "give the step time that compile_s excludes)")
    a.ablate = [name for name in a.ablate.split(",") if name]
    if sorted(set(a.ablate) - set(FAST_PATHS)):
        p.error(f"--ablate: unknown fast path(s) {sorted(set(a.ablate) - set(FAST_PATHS))}; known: "
                f"{', '.join(FAST_PATHS)}")
    if "compile" in a.ablate and a.warmup_steps is not None and a.warmup_steps < 1:
        p.error(f"--ablate compile --warmup-steps {a.warmup_steps}: at least 1 (the compiled peer compiles in "
                "its untimed warm-up)")
    a.peers = [name for name in a.peers.split(",") if name]
    unknown = sorted(set(a.peers) - set(PEERS))
    if unknown or not a.peers:
        p.error(f"--peers: unknown peer(s) {unknown}; known: {', '.join(PEERS)}" if unknown
                else f"--peers: name at least one of {', '.join(PEERS)}")
    cpu = a.device == "cpu"
    if not cpu and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA device here")
    if a.fp16 and a.bf16:
        p.error("--fp16 and --bf16: choose one")
    for flag in ("fp16", "bf16"):
        if getattr(a, flag) and cpu:  # no autocast fallback: a CPU half model is not what a GPU runs
            p.error(f"--{flag} needs --device cuda (on CPU the benchmark runs fp32)")
    size = "small" if cpu else "base"
    a.archs = a.archs or [f"{m}_{size}" for m in ("t5_transformer", "tp_transformer", "tp_transformer_continuous")]
    if a.over is not None and a.over not in a.archs:
        p.error(f"--over {a.over}: not one of --archs ({' '.join(a.archs)}); name it there too")
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
    try:  # the installed name of the checkout's preprocess/ (setup.py)
        from fairseq_sum_plugins_preprocess.topic_model import (PoissonFactorAnalysis, dictionary_checksum,
                                                                excluded_symbols)
    except ImportError:  # the checkout on PYTHONPATH without the package installed
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
    argv += ["--bf16"] if getattr(a, "bf16", False) else []  # bench_etads/_gate: no such flag
    argv += ["--cpu"] if a.device == "cpu" else []
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    args.tpu = False  # fairseq 0.12's --bf16 implies --tpu (XLA); here it is a bfloat16 model on CUDA
    if ta_enabled(args):
        args.ta_topic_model = args.topic_model = a.topic_model  # the option's name, and its old one
        args.side_data = "theta"
    return args, convert_namespace_to_omegaconf(args)


def dims_of(args):
    """The dims a ``transformer`` baseline copies from a preset (``SHARED_DIMS``), as a hashable key."""
    return tuple(getattr(args, name) for name in SHARED_DIMS)


def check_over(a):
    """``--over ARCH`` gives the archs of ``ARCH``'s dims over it (:func:`over_ratios`): stop before
    any work when ``--archs`` holds none besides it."""
    if a.over is None:
        return
    dims = dims_of(fairseq_cfg(a.over, a)[0])
    if not any(arch != a.over and dims_of(fairseq_cfg(arch, a)[0]) == dims for arch in a.archs):
        raise SystemExit(f"--over {a.over}: no other arch of --archs has its dims (layers, widths, "
                         "heads, dropouts): nothing to give over it")


def baseline_groups(archs, a):
    """``{dims: first arch with them}`` in ``archs``' order: one ``transformer`` baseline per distinct
    set of dims, so archs of different shapes (``*_small`` and the T5-cell presets) share one run."""
    groups = {}
    for arch in archs:
        groups.setdefault(dims_of(fairseq_cfg(arch, a)[0]), arch)
    return groups


def baseline_extra(preset_args):
    """``transformer`` flags reproducing a preset's dims (pre-LN, tied embeddings)."""
    extra = ["--share-all-embeddings", "--encoder-normalize-before", "--decoder-normalize-before"]
    for name in SHARED_DIMS:
        extra += ["--" + name.replace("_", "-"), str(getattr(preset_args, name))]
    return extra


def new_model(name, model, params_of, arch, peer, cuda, before, **calls):
    """A measured model: ``step(batch)`` (one training update), ``forward_backward(batch)`` (no update),
    ``generate(batch)`` (generated tokens), ``held()`` (tensors kept between steps), ``updates()``."""
    return dict(name=name, model=model, arch=arch, peer=peer, mem_before=before, cuda=cuda,
                params=sum(p.numel() for p in params_of), steps=0, time=0.0, words=0, gen_time=0.0, gen_words=0,
                rounds=[], notes=[], **calls)


def set_attribute(cls_path, name):
    """A fast-path switch: ``switch(model)`` flips ``name`` (a class default) on every ``cls_path``
    module; ``switch()`` gives the default."""
    def switch(model=None):
        module, cls = cls_path.rsplit(".", 1)
        kind = getattr(__import__(module, fromlist=[cls]), cls)
        if model is None:
            return getattr(kind, name)
        for mod in model.modules():
            if isinstance(mod, kind):
                setattr(mod, name, not getattr(kind, name))
    return switch


# --ablate NAME: each arch also runs with that path flipped from its default, a peer named
# "no NAME" (on by default; ratio > 1: it helps) or "with NAME" (off by default; > 1: it hurts)
FAST_PATHS = {
    "one_query": set_attribute("fairseq_sum_plugins.modules.attention.MultiheadAttention",
                               "one_query_path"),
    "beam_keys": set_attribute("fairseq_sum_plugins.modules.attention.MultiheadAttention",
                               "share_beam_keys"),
    "packed_mask": set_attribute("fairseq_sum_plugins.modules.dropout.Drops", "packed_mask"),
    "matmul_train": set_attribute("fairseq_sum_plugins.modules.attention.MultiheadAttention",
                                  "matmul_train_path"),
    "sparse_embed": set_attribute("fairseq_sum_plugins.models.sum_transformer.SumTransformerDecoder",
                                  "sparse_embedding_grad"),
    "tied_grad": set_attribute("fairseq_sum_plugins.models.sum_transformer.SumTransformerDecoder",
                               "fresh_tied_grad"),
    "compile": lambda model=None: False if model is None else compile_stacks(model.encoder, model.decoder),
    "encoder_copies": set_attribute("fairseq_sum_plugins.models.sum_transformer.SumTransformerEncoder",
                                    "keep_beam_copies"),
    "fused_loss": set_attribute("fairseq_sum_plugins.criterions.summarization_loss.SummarizationLoss",
                                "fused_backward"),
}
CRITERION_PATHS = {"fused_loss"}  # switched on the model's criterion


def unflushed_phi(model=None):
    """``--ablate flush_phi``: the Topic Assistant's Phi buffers rebuilt from its topic model file
    with their subnormal entries kept (``TopicAssistant.set_phi(flush=False)``)."""
    if model is None:
        return True
    from fairseq_sum_plugins.features.topic_assistant.layers import TopicAssistant
    for mod in model.modules():
        if isinstance(mod, TopicAssistant):
            mod.set_phi(np.load(mod.path)["phi"], flush=False)


FAST_PATHS["flush_phi"] = unflushed_phi
FAST_PATHS["focal_bias"] = set_attribute("fairseq_sum_plugins.features.etads_focus.FocusBias",
                                         "fused_bias")
FAST_PATHS["focus_attention"] = set_attribute(
    "fairseq_sum_plugins.modules.attention.MultiheadAttention", "fused_bias_path")


def compile_stacks(*stacks):
    """``--compile``: every layer of each stack compiled in place with ``torch.compile(dynamic=True)``
    ("regional" compilation): the plugin's layers through the model's own ``--compile``
    (:func:`~fairseq_sum_plugins.modules.compiled.compile_layers`: features that must stay eager stay
    eager), fairseq's ``transformer`` layers and HF's ``T5Block``s alike. The layers of one class share
    one compiled graph (their parameters are graph inputs), so compiling costs about one layer of each
    kind rather than a whole unrolled stack (on an H100 the stack-level compilation of ``t5_base`` and
    HF's T5 ran past 215 s), and the same layers serve training and beam search in every model; the
    embeddings, the output projection and fairseq's / HF's search loops stay eager."""
    from fairseq_sum_plugins.modules.compiled import compile_layers, raise_recompile_limit

    raise_recompile_limit()  # for the peers' layers too (compile_layers raises it for the plugin's)
    for stack in stacks:
        layers = getattr(stack, "layers", None)
        layers = layers if layers is not None else getattr(stack, "block")  # HF's T5Stack
        if type(stack).__module__.startswith("fairseq_sum_plugins"):
            compile_layers(layers, type(stack).__name__)
        else:
            for layer in layers:
                layer.compile(dynamic=True)


def optimizer_state(optimizer):
    return [v for state in optimizer.optimizer.state.values() for v in state.values()]


def build(name, cfg, d, a, arch=None, peer=None):
    """A fairseq model trained through ``Trainer.train_step`` and decoded by ``SequenceGenerator``."""
    cuda = a.device == "cuda"
    before = torch.cuda.memory_allocated() if cuda else 0
    task = SummarizationTask(cfg.task, d, d)
    model = task.build_model(cfg.model)
    trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
    trainer.cuda_env = None  # Trainer resets the CUDA peak-memory counter every step when this is set
    if getattr(a, "compile", False):
        compile_stacks(trainer.model.encoder, trainer.model.decoder)
    beam = Namespace(beam=a.beam, max_len_a=0, max_len_b=a.tgt_len, min_len=a.tgt_len)

    def forward_backward(batch):
        trainer.model.train()
        trainer.zero_grad()  # as Trainer.train_step does before its forward
        trainer.task.train_step(batch, trainer.model, trainer.criterion, trainer.optimizer, trainer.get_num_updates())

    def generate(batch):
        hypos = task.inference_step(task.build_generator([trainer.model], beam), [trainer.model], batch)
        return sum(len(h[0]["tokens"]) for h in hypos)

    m = new_model(name, trainer.model, model.parameters(), arch or name, peer, cuda, before,
                  step=lambda batch: trainer.train_step([batch]), forward_backward=forward_backward,
                  zero_grad=trainer.zero_grad, generate=generate, updates=trainer.get_num_updates,
                  held=lambda: [*trainer.model.parameters(), *(p.grad for p in trainer.model.parameters()),
                                *optimizer_state(trainer.optimizer)])
    m["theta"] = ta_enabled(cfg.model)
    m["criterion"] = trainer.criterion
    return m


def hf_t5_config(args, d):
    """HF ``T5Config`` of a T5-cell arch (``--cell t5``) over dictionary ``d``, and what HF's T5 lacks of it."""
    from transformers import T5Config

    differs = [f"--{n.replace('_', '-')} {getattr(args, n)}" for n in ("attention_dropout", "activation_dropout")
               if getattr(args, n) != args.dropout]  # HF: one dropout_rate everywhere
    differs += ["cross-attention position table"] if args.t5_cross_position_bias else []
    differs += ["information selection"] if getattr(args, "info_gate", False) else []
    config = T5Config(
        vocab_size=len(d), d_model=args.encoder_embed_dim, d_kv=args.encoder_embed_dim // args.encoder_attention_heads,
        d_ff=args.encoder_ffn_embed_dim, num_layers=args.encoder_layers, num_decoder_layers=args.decoder_layers,
        num_heads=args.encoder_attention_heads, relative_attention_num_buckets=args.t5_relative_buckets,
        relative_attention_max_distance=args.t5_relative_max_distance, dropout_rate=args.dropout,
        layer_norm_epsilon=1e-6, feed_forward_proj=args.activation_fn,
        pad_token_id=d.pad(), eos_token_id=d.eos(), decoder_start_token_id=d.pad(),  # T5: pad starts the decoder
    )
    config._attn_implementation = "eager"  # HF's T5 attention as written (matmul, bias, softmax, dropout)
    return config, differs


def build_hf_t5(arch, cfg, d, a):
    """HF's ``T5ForConditionalGeneration`` from ``arch``'s config (random init), its own loss (token-mean
    cross-entropy), fairseq's optimizer built from the same ``cfg``, clipping as fairseq's Trainer;
    ``generate`` with beam search forced to fairseq's length (``tgt_len`` tokens + EOS)."""
    from fairseq import optim
    from transformers import T5ForConditionalGeneration

    cuda = a.device == "cuda"
    before = torch.cuda.memory_allocated() if cuda else 0
    config, differs = hf_t5_config(cfg.model, d)
    torch.manual_seed(cfg.common.seed)
    model = T5ForConditionalGeneration(config).to(a.device)
    if a.fp16 or a.bf16:  # as fairseq's --fp16/--bf16: a half model under FP16Optimizer (fp32 master weights)
        model = model.to(torch.float16 if a.fp16 else torch.bfloat16)
        optimizer = optim.FP16Optimizer.build_optimizer(cfg, list(model.parameters()))
    else:
        optimizer = optim.build_optimizer(cfg.optimizer, list(model.parameters()))
    if a.compile:
        compile_stacks(model.encoder, model.decoder)
    pad, new_tokens, updates = d.pad(), a.tgt_len + 1, [0]  # fairseq's hypotheses: tgt_len tokens + the forced EOS

    def inputs(batch):
        src, tgt = batch["net_input"]["src_tokens"], batch["target"]
        return dict(input_ids=src, attention_mask=src.ne(pad).long(), labels=tgt.masked_fill(tgt.eq(pad), -100))

    def forward_backward(batch):
        model.train()
        optimizer.zero_grad()
        optimizer.backward(model(**inputs(batch)).loss)

    def step(batch):
        forward_backward(batch)
        try:
            optimizer.clip_grad_norm(cfg.optimization.clip_norm)  # fp16: raises OverflowError on inf/NaN grads
        except OverflowError:  # as Trainer.train_step: the update is skipped (the loss scale was lowered);
            optimizer.zero_grad()  # FloatingPointError (scale at its minimum) reaches the caller
            return
        optimizer.step()
        updates[0] += 1

    def generate(batch):
        x = inputs(batch)
        out = model.generate(input_ids=x["input_ids"], attention_mask=x["attention_mask"], num_beams=a.beam,
                             min_new_tokens=new_tokens, max_new_tokens=new_tokens, do_sample=False,
                             length_penalty=1.0, early_stopping=False)
        return out.size(0) * (out.size(1) - 1)  # minus the start token

    m = new_model(f"{HF_T5} ({arch})", model, model.parameters(), arch, HF_T5, cuda, before,
                  step=step, forward_backward=forward_backward, zero_grad=optimizer.zero_grad, generate=generate,
                  updates=lambda: updates[0],
                  held=lambda: [*model.parameters(), *(p.grad for p in model.parameters()), *optimizer_state(optimizer)])
    m["theta"] = False
    m["notes"] += [f"HF T5 lacks: {', '.join(differs)}"] if differs else []
    return m


def ok(models):
    return [m for m in models if "error" not in m]


def sync(cuda):
    if cuda:
        torch.cuda.synchronize()


def on_device(batch, cuda):
    return utils.move_to_cuda(batch) if cuda else batch


def train(m, batches, steps):
    """Run ``steps`` training steps; returns (seconds, target tokens)."""
    sync(m["cuda"])
    start, words = time.perf_counter(), 0
    for i in range(steps):
        batch = batches[i % len(batches)]
        m["steps"] += 1
        m["step"](on_device(batch, m["cuda"]))
        words += batch["ntokens"]
    sync(m["cuda"])
    return time.perf_counter() - start, words


def warm_up(m, batches, a):
    if m["cuda"]:
        torch.cuda.reset_peak_memory_stats()
    if getattr(a, "compile", False):  # the first step compiles; the others: the step time
        first, _ = train(m, batches, 1)
        rest, _ = train(m, batches, a.warmup_steps - 1)
        m["compile_s"] = max(0.0, first - rest / (a.warmup_steps - 1))
    else:
        train(m, batches, a.warmup_steps)
    m["peak_gib"] = (torch.cuda.max_memory_allocated() - m["mem_before"]) / 2**30 if m["cuda"] else cpu_peak(m, batches)
    m["ops"] = count_ops(m, batches[0])
    m["gflops"] = count_flops(m, batches[0])


def count_cpu_flash_attention():
    """Teach torch's FlopCounterMode SDPA's CPU flash kernel (forward and backward), with the
    formulas it has for the CUDA kernels. Torch's registry lacks it, so an attention that took that
    kernel (on CPU: no attention dropout, no bias needing a gradient) counted 0 while the same
    attention by matmuls (the math path, the matmul and explicit paths) counted its GEMMs: until
    2026-12-06 the FLOPs of the ``*_small`` models left out their attention (t5_transformer_small:
    67.4 counted, 74.8 GF), and etads_base's ratio over the transformer, whose attention took the
    kernel where ETADS's encoder did not, read 1.161x where it is 1.10x."""
    from torch.utils import flop_counter as fc

    aten = torch.ops.aten
    forward = aten._scaled_dot_product_flash_attention_for_cpu
    backward = aten._scaled_dot_product_flash_attention_for_cpu_backward
    cuda = aten._scaled_dot_product_flash_attention, aten._scaled_dot_product_flash_attention_backward
    for cpu_op, cuda_op in zip((forward, backward), cuda):
        fc.flop_registry.setdefault(cpu_op, fc.flop_registry[cuda_op])  # the same arguments first


def count_flops(m, batch):
    """GFLOP of one forward + backward (torch's FlopCounterMode: matmuls, convolutions and attention
    kernels, SDPA's CPU flash kernel included (:func:`count_cpu_flash_attention`); elementwise ops
    count 0), so a preset's work is compared with its peer's independently of the machine's load:
    when its speed ratio is about 1 / its FLOP ratio, the gap is its arithmetic."""
    from torch.utils.flop_counter import FlopCounterMode

    count_cpu_flash_attention()
    batch = on_device(batch, m["cuda"])
    with FlopCounterMode(display=False) as counter:
        m["forward_backward"](batch)
    m["zero_grad"]()
    return counter.get_total_flops() / 1e9


# ops that only make a view, allocate, or read metadata: no kernel of their own
METADATA_OPS = frozenset(f"aten::{n}" for n in """
    view view_as reshape _reshape_alias _unsafe_view as_strided t transpose permute expand expand_as
    unsqueeze squeeze flatten unflatten select slice narrow split chunk unbind alias detach detach_ lift_fresh
    empty empty_like empty_strided resize_ resolve_conj resolve_neg numpy_T mT matrix_H contiguous
    size stride dim result_type is_nonzero to _to_copy""".split())


def kernel_ops(prof):
    """Kernel-running ATen ops among a profile's events: ops with no such op inside them."""
    def runs_kernel(e):
        return e.name not in METADATA_OPS or any(runs_kernel(c) for c in e.cpu_children)

    return [e for e in prof.events() if e.name.startswith("aten::") and e.name not in METADATA_OPS
            and not any(runs_kernel(c) for c in e.cpu_children)]


def count_ops(m, batch):
    """Kernel-running ATen ops in one forward + backward (no optimizer step)."""
    batch = on_device(batch, m["cuda"])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        m["forward_backward"](batch)
    m["zero_grad"]()
    return len(kernel_ops(prof))


def cpu_peak(m, batches):
    """GiB: tensors held between steps + the peak of one training step's allocations (CPU)."""
    held = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in m["held"]() if torch.is_tensor(t)}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        train(m, batches, 1)
    # allocations are charged to the op that made them (its start), frees are "[memory]" events
    deltas = sorted((e.time_range.start, e.cpu_memory_usage if e.name == "[memory]" else e.self_cpu_memory_usage)
                    for e in prof.events())
    level = peak = 0
    for _, delta in deltas:
        level += delta
        peak = max(peak, level)
    return (sum(held.values()) + peak) / 2**30


def generate(m, batches):
    """Beam search on ``batches``; returns (seconds, generated tokens of the best hypotheses)."""
    m["model"].eval()
    sync(m["cuda"])
    start, words = time.perf_counter(), 0
    with torch.no_grad():
        for batch in batches:
            words += m["generate"](on_device(batch, m["cuda"]))
    sync(m["cuda"])
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


def profile(m, batches, out, steps=3, gen_steps=None):
    """Op tables (by device and by CPU self time) and per-module forward totals of a few train steps;
    with ``gen_steps`` (decoding steps per hypothesis), the op table of one beam search too."""
    cuda = m["cuda"]
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=acts) as prof:
        seconds, _ = train(m, batches, steps)
    kernels = [e for e in prof.events() if e.device_type == DeviceType.CUDA and not e.is_user_annotation]
    busy = sum(e.device_time_total for e in kernels) / 1e3 / steps
    wall = 1e3 * m["time"] / m["words"] * batches[0]["ntokens"] if m["words"] else float("nan")
    gpu = f", GPU kernels {busy:.1f} ms/step ({len(kernels) / steps:.0f} kernels/step)" if cuda else ""
    out.write(f"\n===== {m['name']}: wall {wall:.1f} ms/step unprofiled{gpu} =====\n")
    m["wall_ms"], m["profiled_ms"] = wall, 1e3 * seconds / steps
    m["breakdown_ms"] = breakdown(prof.events(), steps, m["profiled_ms"], device=cuda)
    for key in (["self_device_time_total"] if cuda else []) + ["self_cpu_time_total"]:
        out.write(f"\n----- {m['name']}: top ops by {key} over {steps} steps -----\n")
        out.write(prof.key_averages().table(sort_by=key, row_limit=25, max_name_column_width=70))

    with module_ranges(m["model"]), torch.profiler.profile(activities=acts) as prof:
        train(m, batches, steps)
    out.write(f"\n----- {m['name']}: forward of each module class, per step (nested classes overlap) -----\n")
    rows = [e for e in prof.key_averages() if e.key.startswith("## ") and e.device_type == DeviceType.CPU]
    for e in sorted(rows, key=lambda e: -e.cpu_time_total):
        out.write(f"{e.key:34s} calls/step {e.count // steps:4d}   CPU {e.cpu_time_total / 1e3 / steps:8.2f} ms"
                  f"   GPU kernels {e.device_time_total / 1e3 / steps:8.2f} ms\n")
    if gen_steps:
        with torch.profiler.profile(activities=acts) as prof:
            seconds, _ = generate(m, batches[:1])
        timed = m.get("gen_batches_timed") or 0  # unprofiled wall time per decoding step
        m["gen_wall_ms"] = 1e3 * m["gen_time"] / (timed * gen_steps) if timed and m["gen_time"] else None
        m["gen_profiled_ms"] = 1e3 * seconds / gen_steps
        m["gen_breakdown_ms"] = breakdown(prof.events(), gen_steps, m["gen_profiled_ms"], device=cuda)
        out.write(f"\n----- {m['name']}: beam search on one batch, {len(kernel_ops(prof)) / gen_steps:.0f} "
                  f"kernel-running ops per decoding step ({gen_steps} steps), top ops by self CPU time -----\n")
        out.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=70))


def ratio(x, base):
    return x / base if x is not None and base else None


def fmt(v, spec, suffix=""):
    return "-" if v is None else format(v, spec) + suffix


def is_peer_of(p, r):
    """Whether row ``p`` is a peer of arch row ``r``: fairseq's ``transformer`` of ``r``'s dims, or a peer
    built from ``r``'s arch (HF's T5)."""
    return p["peer"] is not None and (p["dims"] == r["dims"] if p["peer"] == BASELINE else p["arch"] == r["arch"])


RESAMPLES = 2000


def round_interval(model, peer, resamples=RESAMPLES, seed=0):
    """The 95% interval of ``model``'s training rate over ``peer``'s, by a paired bootstrap over the
    timed rounds (both lists of ``(seconds, words)`` per round, in the rounds' order): each resample
    draws rounds with replacement, the same for both models (a round's load is shared by the models
    that ran in it), and takes the ratio of the two rates summed over the drawn rounds, as the table
    does over all of them. ``None`` with fewer than 2 rounds or rounds that do not pair up (a model
    that failed part way, or rows that kept none)."""
    if not model or not peer or len(model) < 2 or len(model) != len(peer):
        return None
    (ms, mw), (ps, pw) = (np.asarray(x, dtype=float).T for x in (model, peer))
    draws = np.random.default_rng(seed).integers(0, len(model), size=(resamples, len(model)))
    ratios = (mw[draws].sum(1) / ms[draws].sum(1)) / (pw[draws].sum(1) / ps[draws].sum(1))
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def fmt_interval(x, interval):
    """``0.97x [0.94, 1.01]``: a ratio and its interval over the rounds."""
    if interval is None:
        return fmt(x, ".2f", "x")
    return f"{fmt(x, '.2f', 'x')} [{interval[0]:.2f}, {interval[1]:.2f}]"


def peer_ratios(rows):
    """``{arch: {peer: {train_ratio, train_interval, gen_ratio, gen_interval, mem_ratio, ops_ratio,
    flops_ratio}}}``: each arch over each of its peers (the ``transformer`` of its dims; an HF peer
    belongs to the arch it was built from). ``gen_interval`` is :func:`round_interval` over the timed
    generation batches (each batch decoded by every model in turn, as a training round)."""
    return {r["arch"]: {p["peer"]: dict(train_ratio=ratio(r["train_wps"], p["train_wps"]),
                                        train_interval=round_interval(r.get("rounds"), p.get("rounds")),
                                        gen_ratio=ratio(r["gen_wps"], p["gen_wps"]),
                                        gen_interval=round_interval(r.get("gen_rounds"),
                                                                    p.get("gen_rounds")),
                                        mem_ratio=ratio(r["peak_gib"], p["peak_gib"]),
                                        ops_ratio=ratio(r["ops"], p["ops"]),
                                        flops_ratio=ratio(r.get("gflops"), p.get("gflops")))
                        for p in rows if is_peer_of(p, r)}
            for r in rows if r["peer"] is None}


def over_ratios(rows, base_arch):
    """``--over ARCH``: ``{arch: {train_ratio, train_interval, flops_ratio, flop_ceiling, per_flop}}``,
    every other arch of ``ARCH``'s dims (a preset over the cell it is built on; an arch of other dims
    in the same run is left out) over ``ARCH``'s training, both measured in the same rounds. The FLOP ceiling
    is the ratio the arch would reach if it did its FLOPs at ``ARCH``'s rate (``1 / flops_ratio``);
    ``per_flop`` is the rate per FLOP over ``ARCH``'s (``train_ratio * flops_ratio``)."""
    base = next((r for r in rows if r["peer"] is None and r["arch"] == base_arch), None)
    if base is None:
        return {}
    out = {}
    for r in rows:
        if r["peer"] is not None or r is base or r.get("dims") != base.get("dims"):
            continue
        train, flops = ratio(r["train_wps"], base["train_wps"]), ratio(r["gflops"], base["gflops"])
        out[r["arch"]] = dict(train_ratio=train, train_interval=round_interval(r.get("rounds"), base.get("rounds")),
                              flops_ratio=flops, flop_ceiling=1 / flops if flops else None,
                              per_flop=train * flops if train and flops else None)
    return out


def report(models, a, env):
    """Print the Markdown tables (first row: the baseline, then the ratios over the peers) and write the JSON."""
    def per_s(words, seconds):
        return words / seconds if seconds else None

    rows = [dict(model=m["name"], arch=m["arch"], peer=m["peer"], params_m=m["params"] / 1e6,
                 train_wps=per_s(m["words"], m["time"]), peak_gib=m["peak_gib"], ops=m.get("ops"), gflops=m.get("gflops"),
                 gen_wps=per_s(m["gen_words"], m["gen_time"]), gen_tokens=m["gen_words"],
                 gen_rounds=m.get("gen_rounds", []), skipped_updates=m["steps"] - m["updates"](),
                 steps=m["steps"], rounds=m.get("rounds", []), error=m.get("error"), notes=m["notes"], dims=m["dims"],
                 compile_s=m.get("compile_s"), gen_compile_s=m.get("gen_compile_s"),
                 wall_ms=m.get("wall_ms"), profiled_ms=m.get("profiled_ms"),
                 breakdown_ms=m.get("breakdown_ms"), gen_wall_ms=m.get("gen_wall_ms"),
                 gen_profiled_ms=m.get("gen_profiled_ms"), gen_breakdown_ms=m.get("gen_breakdown_ms"))
            for m in models]
    for r in rows:  # "vs transformer": over the transformer of the row's dims
        base = next((p for p in rows if p["peer"] == BASELINE and p["dims"] == r["dims"]), {})
        for key, x in (("train_wps", "train_x"), ("peak_gib", "mem_x"), ("ops", "ops_x"), ("gen_wps", "gen_x"),
                       ("gflops", "flops_x")):
            r[x] = ratio(r[key], base.get(key))
        # speed x work: 1.00x when the row does its FLOPs at the baseline's rate (the gap is its arithmetic)
        r["per_flop_x"] = r["train_x"] * r["flops_x"] if r["train_x"] and r["flops_x"] else None
    cols = ["model", "params (M)", "train tgt words/s", "vs transformer", "peak mem (GiB)", "vs transformer",
            "ops/step", "vs transformer", "GFLOP/step", "vs transformer", "speed x FLOPs"]
    cols += [f"gen words/s (beam {a.beam})", "vs transformer"] if a.generate else []
    compiled = getattr(a, "compile", False)  # bench_etads's namespace has no --compile
    cols += ["compile s (train" + (" / gen)" if a.generate else ")")] if compiled else []
    cols += ["notes"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r["model"], fmt(r["params_m"], ".1f"), fmt(r["train_wps"], ",.0f"), fmt(r["train_x"], ".2f", "x"),
                 fmt(r["peak_gib"], ".3f"), fmt(r["mem_x"], ".2f", "x"), fmt(r["ops"], "d"), fmt(r["ops_x"], ".2f", "x"),
                 fmt(r["gflops"], ".1f"), fmt(r["flops_x"], ".3f", "x"), fmt(r["per_flop_x"], ".2f", "x")]
        cells += [fmt(r["gen_wps"], ",.0f"), fmt(r["gen_x"], ".2f", "x")] if a.generate else []
        cells += [fmt(r["compile_s"], ".1f") + (" / " + fmt(r["gen_compile_s"], ".1f") if a.generate else "")
                  ] if compiled else []
        skipped = [f"{r['skipped_updates']}/{r['steps']} updates skipped (fp16 overflow)"] if r["skipped_updates"] else []
        cells += ["; ".join([r["error"]] if r["error"] else skipped + r["notes"])]
        lines.append("| " + " | ".join(cells) + " |")
    ratios = peer_ratios(rows)
    lines += ["", "| arch | peer | train [95% over rounds] | gen [95% over batches] | peak mem | ops/step "
              "| FLOPs/step |", "|---|---|---|---|---|---|---|"]
    for arch, peers in ratios.items():
        for peer, x in peers.items():
            gen = fmt_interval(x["gen_ratio"], x["gen_interval"])
            lines.append(f"| {arch} | {peer} | {fmt_interval(x['train_ratio'], x['train_interval'])} | "
                         + " | ".join([gen] + [fmt(x[k], ".2f", "x") for k in ("mem_ratio", "ops_ratio")])
                         + " | " + fmt(x["flops_ratio"], ".3f", "x") + " |")
    over = over_ratios(rows, getattr(a, "over", None))
    if over:
        lines += ["", f"Over {a.over} (training; the interval: a paired bootstrap over the {a.rounds} rounds):",
                  "", f"| arch | train over {a.over} [95%] | FLOPs/step | FLOP ceiling | speed x FLOPs |",
                  "|---|---|---|---|---|"]
        for arch, x in over.items():
            lines.append(f"| {arch} | {fmt_interval(x['train_ratio'], x['train_interval'])} | "
                         f"{fmt(x['flops_ratio'], '.3f', 'x')} | {fmt(x['flop_ceiling'], '.3f', 'x')} | "
                         f"{fmt(x['per_flop'], '.2f', 'x')} |")
    if a.profile:
        lines += where_the_time_goes(rows, ratios, a.generate)
    table = "\n".join(lines)
    print(env["summary"] + "\n\n" + table)
    if a.json:
        def figures(r):
            return dict(train_wps=r["train_wps"], gen_tps=r["gen_wps"], peak_mem=r["peak_gib"], ops_per_step=r["ops"],
                        gflops_per_step=r["gflops"],
                        compile_s=r["compile_s"], gen_compile_s=r["gen_compile_s"],
                        **{k: r[k] for k in ("wall_ms", "profiled_ms", "breakdown_ms", "gen_wall_ms",
                                             "gen_profiled_ms", "gen_breakdown_ms")})

        archs = {r["arch"]: dict(figures(r), peers={p["peer"]: figures(p) for p in rows if is_peer_of(p, r)})
                 for r in rows if r["peer"] is None}
        with open(a.json, "w") as f:
            json.dump(dict(env=env, args=vars(a), results=rows, archs=archs, ratios=ratios, over=over,
                           table=table), f, indent=2)


def where_the_time_goes(rows, ratios, generate):
    """``--profile``: per arch, the kinds of work of a training step (and of a decoding step) of the
    arch and its peers, ms per step of the profiled pass (profile_breakdown.py), and each pair's GEMM
    ceiling (the ratio the arch would reach over the peer if all but its matrix products took no
    time: the peer's profiled wall over the arch's GEMM time), which ``ratios[arch][peer]`` also
    holds as ``gemm_ceiling`` / ``gen_gemm_ceiling``."""
    lines = []
    for r in (r for r in rows if r["peer"] is None and r["breakdown_ms"]):
        group = [r] + [p for p in rows if is_peer_of(p, r) and p["breakdown_ms"]]
        phases = [("training step", "", "train_ratio", "gemm_ceiling")]
        phases += [("decoding step (beam search)", "gen_", "gen_ratio", "gen_gemm_ceiling")
                   ] if generate else []
        for phase, pre, measured, ceiling in phases:
            key = pre + "breakdown_ms"
            cols = {p["model"]: p[key] for p in group if p[key]}
            if not cols:
                continue
            lines += ["", breakdown_table(
                cols, {p["model"]: p[pre + "profiled_ms"] for p in group},
                f"Where the time goes, {r['arch']}: ms per {phase} (self time of ATen ops in a "
                "profiled pass; share of its wall time)",
                unprofiled={p["model"]: p[pre + "wall_ms"] for p in group})]
            for p in group[1:]:
                if not (r[key] and p[key]):  # a beam search that failed (noted in its row)
                    continue
                x = ratios[r["arch"]][p["peer"]]
                x[ceiling] = gemm_ceiling(r[key], p[pre + "profiled_ms"])
                lines.append(f"- {r['arch']} over {p['model']}: measured {fmt(x[measured], '.2f', 'x')}, "
                             f"GEMM ceiling {fmt(x[ceiling], '.2f', 'x')} (GEMM {r[key]['GEMM']:,.1f} vs "
                             f"{p[key]['GEMM']:,.1f} ms)")
    return lines


def compiled_hf_t5(arch, cfg, d, a):
    """``--ablate compile`` with ``--peers hf_t5``: HF's T5 with every block compiled (a peer named
    "hf_t5 with compile" of ``arch``)."""
    m = build_hf_t5(arch, cfg, d, a)
    compile_stacks(m["model"].encoder, m["model"].decoder)
    m.update(name=f"{HF_T5} ({arch}) (with compile)", peer=f"{HF_T5} with compile")
    return m


def ablated(m, path):
    FAST_PATHS[path](m["criterion"] if path in CRITERION_PATHS else m["model"])
    return m


def build_models(a, d, theta_batches, plain_batches):
    """The peers and archs, each built and warmed up alone (so each peak is the model's own)."""
    specs = []
    groups = baseline_groups(a.archs, a) if BASELINE in a.peers else {}
    for dims, first in groups.items():  # named after the first arch of its dims when there are several
        name = BASELINE if len(groups) == 1 else f"{BASELINE} ({first} dims)"
        extra = baseline_extra(fairseq_cfg(first, a)[0])
        specs.append((dims, lambda name=name, extra=extra, first=first: build(
            name, fairseq_cfg(BASELINE, a, extra)[1], d, a, arch=first, peer=BASELINE)))
    for arch in a.archs:
        args, cfg = fairseq_cfg(arch, a)
        specs.append((dims_of(args), lambda cfg=cfg, arch=arch: build(arch, cfg, d, a)))
        for path in a.ablate:
            peer = f"{'no' if FAST_PATHS[path]() else 'with'} {path}"
            specs.append((dims_of(args), lambda cfg=cfg, arch=arch, path=path, peer=peer: ablated(
                build(f"{arch} ({peer})", cfg, d, a, arch=arch, peer=peer), path)))
        if HF_T5 in a.peers:
            if is_t5_cell(args):
                specs.append((dims_of(args), lambda cfg=cfg, arch=arch: build_hf_t5(arch, cfg, d, a)))
                if "compile" in a.ablate:  # HF's T5 compiled the same way, in the same run
                    specs.append((dims_of(args), lambda cfg=cfg, arch=arch: compiled_hf_t5(arch, cfg, d, a)))
            else:
                print(f"--peers {HF_T5}: {arch} is not a T5-cell arch (--cell t5), so it has no HF T5 peer")
    models = []
    for dims, make in specs:
        models.append(make())
        models[-1]["dims"] = dims
        models[-1]["batches"] = theta_batches if models[-1]["theta"] else plain_batches
        try:
            warm_up(models[-1], models[-1]["batches"], a)
        except FloatingPointError:  # fairseq gives up: fp16 loss scale at its minimum
            models[-1].update(error=DIVERGED, peak_gib=None)
    return models


def main():
    a = parse_args()
    for name in ("fairseq", "hydra"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if a.threads:
        torch.set_num_threads(a.threads)
    cuda = a.device == "cuda"
    d = make_dictionary(a.dict_size)
    tmp = tempfile.TemporaryDirectory(prefix="bench-topic-model-")
    a.topic_model = write_topic_model(d, a.topics, tmp.name)
    check_over(a)
    theta_batches = make_batches(d, a)
    models = build_models(a, d, theta_batches, without_theta(theta_batches))

    per_round = max(1, a.steps // a.rounds)
    a.steps = per_round * a.rounds
    for _ in range(a.rounds):
        for m in ok(models):
            try:
                seconds, words = train(m, m["batches"], per_round)
            except FloatingPointError:
                m.update(error=DIVERGED, peak_gib=None, time=0.0)
                continue
            m["time"] += seconds
            m["words"] += words
            m["rounds"].append((seconds, words))

    if a.generate:
        decoding = []
        for m in ok(models):
            try:  # warm-up (with --compile: compiles)
                m["gen_warmup_s"], _ = generate(m, m["batches"][:1])
                decoding.append(m)
            except (AssertionError, FloatingPointError, RuntimeError) as e:  # e.g. fp16: no EOS by max_len
                m["notes"].append(f"beam search failed: {type(e).__name__}: {e}")
        for i in range(a.gen_batches):  # the batches again in turn past the last
            for m in decoding:
                seconds, words = generate(m, [m["batches"][i % len(m["batches"])]])
                m["gen_time"] += seconds
                m["gen_words"] += words
                m.setdefault("gen_rounds", []).append((seconds, words))
                m["gen_batches_timed"] = i + 1

    if a.generate and a.compile:  # the warm-up's time beyond a timed batch's
        for m in decoding:
            batches = a.gen_batches
            m["gen_compile_s"] = max(0.0, m["gen_warmup_s"] - (m["gen_time"] / batches if batches else 0.0))

    if a.profile:
        with open(a.profile, "w") as out:
            for m in ok(models):
                profile(m, m["batches"], out, a.profile_steps, gen_steps=a.tgt_len + 1 if a.generate else None)

    device = torch.cuda.get_device_name() if cuda else cpu_name()
    precision = ("fp16 (fairseq --fp16: FP16Optimizer, half model)" if a.fp16 else
                 "bf16 (fairseq --bf16: FP16Optimizer without loss scale, bfloat16 model)" if a.bf16 else "fp32")
    precision += ", compiled (torch.compile dynamic=True, every layer)" if a.compile else ""
    env = dict(date=datetime.date.today().isoformat(), device=device, torch=torch.__version__,
               threads=torch.get_num_threads(), precision=precision, load_average=os.getloadavg())
    threads = "" if cuda else f"  {torch.get_num_threads()} threads"
    env["summary"] = (f"{env['date']}  {device}{threads}  torch {torch.__version__}  {precision}  "
                      f"src {a.src_len} tgt {a.tgt_len} batch {a.batch_size} dict {len(d)}"
                      f"{' ragged' if a.ragged else ''}  {a.steps} timed steps/model  "
                      f"load average {' '.join(f'{x:.2f}' for x in env['load_average'])}")
    report(models, a, env)
    tmp.cleanup()


def cpu_name():
    """``lscpu``'s model name (from /proc/cpuinfo), else the platform's processor / machine."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


if __name__ == "__main__":
    main()
