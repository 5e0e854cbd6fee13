"""Compatibility fixes applied when the plugin is imported (``--user-dir``).

1. Load fairseq checkpoints under torch >= 2.6 without turning off ``weights_only``.

Since torch 2.6, ``torch.load`` defaults to ``weights_only=True`` and refuses any class it does not
know. A fairseq checkpoint holds tensors, plain containers and, for models configured through
``add_args``, an ``argparse.Namespace`` (the model config): that is the only class it needs. We add
exactly those classes to torch's allow-list (``torch.serialization.add_safe_globals``), so fairseq's
own ``torch.load`` calls (``fairseq-generate``, ``-interactive``, ``--restore-file``, the hub
interface) work, while every other ``torch.load`` in the process keeps the safe default and still
rejects arbitrary pickled code. (The alternatives, ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` or
patching ``torch.load`` to pass ``weights_only=False``, would disable that protection for
everything.)

2. Keep the last partial batch that the fork's compiled ``batch_by_size`` drops (see
   :func:`keep_batch_remainder`).

3. Make ``--no-repeat-ngram-size`` block repeated n-grams again (see :func:`fix_no_repeat_ngram`).

4. Name the file when a checkpoint is empty or cut short (see :func:`name_unreadable_checkpoints`).
5. Let ``--ddp-backend pytorch_ddp`` (``c10d``) wrap a CPU model (see :func:`ddp_on_cpu`).
6. On CPU, check fairseq's precision and distributed options before training starts: ``--bf16``
   trains in bfloat16, ``--fp16`` / ``--memory-efficient-fp16`` / ``--amp`` are refused by name,
   torchrun and ``--distributed-world-size N`` start gloo workers, ``--ddp-backend fully_sharded``
   is refused (see :func:`cpu_training_options`); ``fairseq-generate --bf16`` is refused on CPU
   (see :func:`refuse_ignored_bf16_in_generation`).
7. Load a checkpoint saved under an arch name that now builds another model as the preset that
   builds its model, and without the flags added after it was saved (see
   :func:`upgrade_checkpoint_config`).
"""
import argparse
import logging

import torch

from .cli.safe_load import SAFE_CHECKPOINT_GLOBALS, allow_fairseq_checkpoints  # noqa: F401

logger = logging.getLogger(__name__)

allow_fairseq_checkpoints()


def keep_batch_remainder():
    """Make ``data_utils.batch_by_size`` keep the final partial batch.

    The compiled ``batch_by_size_vec`` of the fairseq fork used on Python 3.11 drops the last
    ``< required_batch_size_multiple`` examples (default 8), so ``fairseq-generate`` silently skips
    up to 7 test documents and validation loses as many. The examples it left out are appended as
    one final batch, which is what upstream fairseq 0.12.2 returns; where nothing is missing (as
    upstream) the result is unchanged. Fixed-shape (TPU) batching is left alone.
    """
    import numpy as np
    from fairseq.data import data_utils

    original = data_utils.batch_by_size
    if getattr(original, "_keeps_remainder", False):
        return

    def batch_by_size(indices, num_tokens_fn, num_tokens_vec=None, max_tokens=None,
                      max_sentences=None, required_batch_size_multiple=1, fixed_shapes=None):
        batches = original(indices, num_tokens_fn, num_tokens_vec, max_tokens, max_sentences,
                           required_batch_size_multiple, fixed_shapes)
        if fixed_shapes is not None:
            return batches
        indices = np.asarray(indices, dtype=np.int64)
        covered = sum(len(b) for b in batches)
        if covered < len(indices):
            seen = np.concatenate(batches) if batches else np.empty(0, dtype=np.int64)
            missing = indices[~np.isin(indices, seen)]
            step = max_sentences if max_sentences and max_sentences > 0 else len(missing)
            batches = list(batches) + [missing[i : i + step] for i in range(0, len(missing), step)]
        return batches

    batch_by_size._keeps_remainder = True
    data_utils.batch_by_size = batch_by_size


keep_batch_remainder()


def fix_no_repeat_ngram():
    """Make ``NGramRepeatBlock`` (``--no-repeat-ngram-size``) block repeats again where it does not.

    ``SequenceGenerator`` passes the whole token buffer ``(bsz * beam, max_len + 2)``, padding
    included, to the blocker. The fork's Python fallback (used whenever the CUDA extension is not
    built, i.e. on CPU and with the CPU-built fork on a GPU) takes the last ``n - 1`` entries of
    that buffer as the n-gram prefix to look for: padding, which never matches, so nothing is ever
    blocked and decoding is silently identical to ``--no-repeat-ngram-size 0``. Upstream's fallback
    indexes by ``step`` and is correct. Where a small check shows the bug, the blocker is given the
    tokens generated so far, ``tokens[:, : step + 1]``, which both implementations read correctly.
    """
    import math

    from fairseq.ngram_repeat_block import NGramRepeatBlock

    if getattr(NGramRepeatBlock.forward, "_sees_generated_tokens", False):
        return

    def blocks_repeats():
        block = NGramRepeatBlock(2, use_extension=False)
        pad = 1
        tokens = torch.tensor([[2, 7, 8, 7, pad, pad, pad]])  # step 3 generated "7 8 7"
        lprobs = torch.zeros(1, 10)
        block(tokens, lprobs, 1, 1, 3)
        return lprobs[0, 8].item() == -math.inf  # "7 8" seen: 8 after 7 is banned

    if blocks_repeats():
        return
    original = NGramRepeatBlock.forward

    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if not self.use_extension:
            tokens = tokens[:, : step + 1]
        return original(self, tokens, lprobs, bsz, beam_size, step)

    forward._sees_generated_tokens = True
    NGramRepeatBlock.forward = forward


fix_no_repeat_ngram()


def name_unreadable_checkpoints():
    """Make fairseq's ``checkpoint_utils.load_checkpoint_to_cpu`` (``--path``, ``--restore-file``,
    the hub interface) name the file when it is empty (0 bytes) or truncated, instead of a bare
    ``EOFError`` / unpickling error."""
    import os
    import pickle

    from fairseq import checkpoint_utils

    original = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(original, "_names_file", False):
        return

    def load_checkpoint_to_cpu(path, *args, **kwargs):
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            raise ValueError(
                f"checkpoint {path} is empty (0 bytes): an interrupted save? use another checkpoint"
            )
        try:
            return original(path, *args, **kwargs)
        except (EOFError, pickle.UnpicklingError, RuntimeError) as err:
            if (isinstance(err, RuntimeError) and "zip archive" not in str(err)
                    and "central directory" not in str(err)):
                raise
            raise ValueError(
                f"checkpoint {path} cannot be read (truncated or not a checkpoint): {err}") from err

    load_checkpoint_to_cpu._names_file = True
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu


name_unreadable_checkpoints()


def ddp_on_cpu():
    """Make fairseq's ``pytorch_ddp`` / ``c10d`` wrapper accept a model on the CPU (``--cpu``,
    gloo).

    ``DistributedFairseqModel`` passes ``device_ids=[args.device_id]`` and ``output_device`` to
    ``torch.nn.parallel.DistributedDataParallel`` whatever the device; torch refuses ``device_ids``
    for a CPU module ("DistributedDataParallel device_ids and output_device arguments only work with
    single-device/multiple-device GPU modules or CPU modules, but got device_ids [0]"). The class
    fairseq's wrapper instantiates is replaced by a subclass that drops both arguments when the
    module's parameters live on the CPU; GPU modules are wrapped exactly as before.
    """
    from fairseq.models import distributed_fairseq_model as dfm

    ddp = dfm.DistributedDataParallel
    if getattr(ddp, "_cpu_ok", False):
        return

    class CpuTolerantDDP(ddp):
        _cpu_ok = True

        def __init__(self, module, *args, **kwargs):
            param = next(module.parameters(), None)
            if param is not None and param.device.type == "cpu":
                kwargs.pop("device_ids", None)
                kwargs.pop("output_device", None)
            super().__init__(module, *args, **kwargs)

    dfm.DistributedDataParallel = CpuTolerantDDP


ddp_on_cpu()


# --- fairseq's own options on CPU (fairseq-train, fairseq-hydra-train, fairseq-generate) ------


def _xla_available():
    import importlib.util

    return importlib.util.find_spec("torch_xla") is not None


def training_on_cpu(cfg):
    """Whether fairseq-train runs on the CPU: ``--cpu``, or no CUDA GPU (and no TPU to use)."""
    common = cfg.common
    if getattr(common, "tpu", False) and _xla_available():
        return False
    return bool(getattr(common, "cpu", False)) or not torch.cuda.is_available()


def check_cpu_precision(cfg):
    """The precision flags of a CPU training (``cfg``: fairseq's whole config, argparse or hydra).

    - ``--fp16`` / ``--memory-efficient-fp16`` need a CUDA GPU: refused, each by its own name
      (fairseq sets ``fp16`` for ``--memory-efficient-fp16`` too).
    - ``--amp`` is CUDA float16 autocast with loss scaling; on CPU fairseq's ``torch.cuda.amp``
      autocast is a no-op and the model would train in float32 while the log says AMP: refused,
      naming ``--bf16`` as the CPU way.
    - ``--bf16`` / ``--memory-efficient-bf16`` work: this fairseq makes ``--bf16`` imply ``--tpu``
      (``options.parse_args_and_arch``), and without torch_xla the trainer dies on
      ``xm.xla_device()``. Without torch_xla the implied TPU is dropped, so fairseq's own bfloat16
      path runs on the CPU: model and criterion in bfloat16, the float32 master copy of the
      parameters in ``FP16Optimizer`` (``MemoryEfficientFP16Optimizer`` for the memory-efficient
      flag), float inputs cast to bfloat16 (``Trainer._fp_convert_sample``).
    """
    from omegaconf import OmegaConf, open_dict

    common = cfg.common
    for flag in ("memory_efficient_fp16", "fp16"):
        if getattr(common, flag, False):
            raise ValueError(f"--{flag.replace('_', '-')} needs a CUDA GPU and none is in use: "
                             "drop it to run in float32 on CPU, or train with --bf16 for "
                             "bfloat16 on CPU")
    if getattr(common, "amp", False):
        raise ValueError("--amp is CUDA float16 autocast: on CPU the model would train in float32 "
                         "while the log says AMP; drop --amp, or use --bf16 for bfloat16 training "
                         "on CPU")
    bf16 = getattr(common, "bf16", False) or getattr(common, "memory_efficient_bf16", False)
    if bf16 and getattr(common, "tpu", False) and not _xla_available():
        with open_dict(common) if OmegaConf.is_config(common) else _nothing():
            common.tpu = False
            common.bf16 = True
        logger.info("--bf16 on CPU: no torch_xla here, so the --tpu it implies is dropped; "
                    "training in bfloat16 on the CPU")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


TORCHRUN_VARS = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")


def refuse_fully_sharded(cfg):
    """``--ddp-backend fully_sharded`` on CPU (``cfg``: fairseq's whole config, on CPU)."""
    if cfg.distributed_training.ddp_backend == "fully_sharded":
        raise ValueError("--ddp-backend fully_sharded (fairscale's FullyShardedDataParallel) needs "
                         "CUDA GPUs: on CPU use --ddp-backend pytorch_ddp or legacy_ddp")


def torchrun_world_size():
    """WORLD_SIZE of a torchrun launch of more than one process (else 0)."""
    import os

    launched = all(k in os.environ for k in TORCHRUN_VARS)
    return int(os.environ["WORLD_SIZE"]) if launched and int(os.environ["WORLD_SIZE"]) > 1 else 0


def refuse_training_alone(cfg):
    """A process of a torchrun launch that reaches the trainer without a process group would train
    alone on the whole data. fairseq-hydra-train loads the plugin only after fairseq has read (or
    not) the launch, so on CPU its torchrun processes end here."""
    world = torchrun_world_size()
    if world and not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        raise ValueError(
            f"torchrun started WORLD_SIZE={world} processes, but this one would train alone on the "
            "whole data (no process group: --distributed-world-size is "
            f"{cfg.distributed_training.distributed_world_size}); on CPU launch fairseq-train (the "
            "command line, which reads torchrun's variables) under torchrun")


def check_cpu_distributed(cfg):
    """Several CPU processes (gloo): torchrun works, ``--distributed-world-size N`` spawns N
    workers, ``--ddp-backend fully_sharded`` is refused; no process trains alone on the whole data.

    - torchrun (``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``RANK`` set, ``WORLD_SIZE > 1``):
      fairseq reads the launch only when ``--distributed-world-size`` is given (default 1 on CPU:
      each process then trained alone), and then divides by ``torch.cuda.device_count()``. Here
      the world size, rank and ``env://`` rendezvous come from torchrun's variables, the backend
      is gloo (nccl needs GPUs); a ``--distributed-world-size`` other than 1 or ``WORLD_SIZE`` is
      refused.
    - ``--distributed-world-size N`` (N > 1) without a launcher or ``--distributed-init-method``:
      fairseq asserts N <= the number of GPUs (0). Here N processes are spawned on a free local
      port, as fairseq spawns one per GPU.
    - A rendezvous given by hand (``--distributed-init-method``) is fairseq's own path, unchanged
      (backend nccl on CPU becomes gloo).

    Returns the number of processes to spawn (0: let fairseq proceed).
    """
    import os
    import socket

    dt = cfg.distributed_training
    refuse_fully_sharded(cfg)
    world = torchrun_world_size()
    slurm = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_STEP_NODELIST")
    if dt.distributed_init_method is None and world and not getattr(dt, "tpu", False):
        if dt.distributed_world_size not in (1, world):
            raise ValueError(f"--distributed-world-size {dt.distributed_world_size}, but torchrun "
                             f"started WORLD_SIZE={world} processes: drop the flag or make them "
                             "agree")
        dt.distributed_world_size = world
        dt.distributed_rank = int(os.environ["RANK"])
        dt.device_id = int(os.environ.get("LOCAL_RANK", 0))
        dt.distributed_init_method = "env://"
        dt.distributed_no_spawn = True
    elif dt.distributed_init_method is None and dt.distributed_world_size > 1 and not slurm:
        n = dt.distributed_world_size
        if dt.distributed_no_spawn:
            raise ValueError(f"--distributed-world-size {n} --distributed-no-spawn on CPU: nothing "
                             "starts the other processes; launch them with torchrun "
                             f"--nproc_per_node {n}, or give --distributed-init-method and "
                             "--distributed-rank")
        if dt.distributed_port > 0:
            port = dt.distributed_port
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        dt.distributed_init_method = f"tcp://localhost:{port}"
    if dt.distributed_init_method is not None and dt.distributed_backend == "nccl":
        logger.info("several processes on CPU: --distributed-backend gloo (nccl needs GPUs)")
        dt.distributed_backend = "gloo"
    if dt.distributed_init_method is not None and not dt.distributed_no_spawn:
        return dt.distributed_world_size
    return 0


def refuse_ignored_bf16_in_validation(common):
    """``fairseq-validate --bf16`` on CPU: this fairseq converts the models for ``--fp16`` only, so
    the loss was computed in float32 without a word (``--fp16`` is refused as in training)."""
    if getattr(common, "bf16", False) or getattr(common, "memory_efficient_bf16", False):
        efficient = getattr(common, "memory_efficient_bf16", False)
        flag = "--memory-efficient-bf16" if efficient else "--bf16"
        raise ValueError(f"{flag}: fairseq-validate evaluates in bfloat16 only on TPUs; on CPU it "
                         f"would run in float32 all the same: drop {flag}")


def cpu_training_options():
    """Check fairseq's precision and distributed options of a CPU training before it starts.

    ``fairseq-train`` hands its whole config to ``fairseq.distributed.utils.call_main``: it is
    wrapped so that, on CPU, :func:`check_cpu_precision` and :func:`check_cpu_distributed` see it
    first, and N CPU workers are spawned where fairseq would spawn one process per GPU
    (``min(torch.cuda.device_count(), N)``: none on CPU). A world size below 1 is refused anywhere
    (fairseq spawned no process and exited 0). (``fairseq-hydra-train`` imports the plugin after
    ``call_main``: see :func:`checked_trainer`.)
    """
    from fairseq.distributed import utils as distributed_utils

    original = distributed_utils.call_main
    if getattr(original, "_checks_cpu", False):
        return

    def call_main(cfg, main, **kwargs):
        world = cfg.distributed_training.distributed_world_size
        if world is not None and world < 1:
            raise ValueError(f"--distributed-world-size {world}: the number of training "
                             "processes, at least 1")
        if training_on_cpu(cfg):
            if getattr(main, "__module__", None) == "fairseq_cli.validate":
                refuse_ignored_bf16_in_validation(cfg.common)
            check_cpu_precision(cfg)
            nprocs = check_cpu_distributed(cfg)
            if nprocs:
                dt = cfg.distributed_training
                kwargs["start_rank"] = dt.distributed_rank
                dt.distributed_rank = None  # distributed_main assigns start_rank + i
                torch.multiprocessing.spawn(fn=distributed_utils.distributed_main,
                                            args=(main, cfg, kwargs), nprocs=nprocs, join=True)
                return None
        return original(cfg, main, **kwargs)

    call_main._checks_cpu = True
    distributed_utils.call_main = call_main


cpu_training_options()


def checked_trainer():
    """The same checks where every training passes, ``fairseq.trainer.Trainer``:
    fairseq-hydra-train imports the plugin (``common.user_dir``) only after ``call_main``, so its
    config is checked here (on CPU: ``common.fp16`` / ``memory_efficient_fp16`` / ``amp`` and
    ``fully_sharded`` refused; anywhere: a torchrun process without a process group, which would
    train alone, refused)."""
    from fairseq.trainer import Trainer

    original = Trainer.__init__
    if getattr(original, "_checks_cpu", False):
        return

    def __init__(self, cfg, *args, **kwargs):
        refuse_training_alone(cfg)
        if training_on_cpu(cfg):
            check_cpu_precision(cfg)
            refuse_fully_sharded(cfg)
        original(self, cfg, *args, **kwargs)

    __init__._checks_cpu = True
    Trainer.__init__ = __init__


checked_trainer()


def refuse_fully_sharded_in_task_setup(cfg):
    """``fairseq_cli.train`` enters fairscale's wrapping context for ``fully_sharded`` before
    building the model, after setting up the task: the task calls this with its config, whose
    root (a hydra config's or the command line's) holds ``distributed_training``."""
    from omegaconf import OmegaConf

    root = cfg._get_root() if OmegaConf.is_config(cfg) and hasattr(cfg, "_get_root") else None
    if root is not None and root is not cfg and "distributed_training" in root and "common" in root:
        if training_on_cpu(root):
            refuse_fully_sharded(root)


def refuse_ignored_bf16_in_generation():
    """``fairseq-generate`` / ``-interactive --bf16`` on CPU: refused by name.

    This fairseq converts models for ``--fp16`` only, so ``--bf16`` (and
    ``--memory-efficient-bf16``) would be accepted and decoding would run in float32. Both commands
    hand their whole config to ``model.prepare_for_inference_``; the command line (not a
    checkpoint's saved training config, which the hub interface passes: it has no
    ``common_eval.path``) is refused there.
    """
    from fairseq.models import BaseFairseqModel

    original = BaseFairseqModel.prepare_for_inference_
    if getattr(original, "_refuses_bf16", False):
        return

    def prepare_for_inference_(self, cfg):
        common, common_eval = getattr(cfg, "common", None), getattr(cfg, "common_eval", None)
        command_line = getattr(common_eval, "path", None) is not None
        if command_line and getattr(common, "bf16", False) and not _xla_available():
            param = next(self.parameters(), None)
            if param is None or param.device.type == "cpu":
                efficient = getattr(common, "memory_efficient_bf16", False)
                flag = "--memory-efficient-bf16" if efficient else "--bf16"
                raise ValueError(f"{flag}: this fairseq decodes in bfloat16 only on TPUs; on CPU "
                                 f"generation would run in float32 all the same: drop {flag}")
        return original(self, cfg)

    prepare_for_inference_._refuses_bf16 = True
    BaseFairseqModel.prepare_for_inference_ = prepare_for_inference_


refuse_ignored_bf16_in_generation()


# --- fairseq-hydra-train: a model config's keys -----------------------------------------------


class _RecordedReads(argparse.Namespace):
    """A Namespace that records the name of every attribute read from it (getattr, hasattr)."""

    def __getattribute__(self, name):
        if not name.startswith("_"):
            object.__getattribute__(self, "__dict__").setdefault("_reads", set()).add(name)
        return super().__getattribute__(name)


def model_config_keys(arch):
    """The keys a model config of ``arch`` may hold: the dests of its model's ``add_args`` (the
    flags of ``fairseq-train --arch ARCH``, ``-`` written ``_``), every attribute its architecture
    function reads (fairseq's transformer defaults read with ``getattr``, the earlier names of
    renamed flags that it still reads), and ``_name`` / ``arch``."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    ARCH_MODEL_REGISTRY[arch].add_args(parser)
    keys = {a.dest for a in parser._actions if a.dest != argparse.SUPPRESS}
    for values in ({}, parser.parse_known_args([])[0].__dict__):
        start = _RecordedReads(**values)
        try:
            ARCH_CONFIG_REGISTRY[arch](start)
        except Exception:  # an architecture that needs values: the next start, else add_args alone
            continue
        keys |= set(start.__dict__.get("_reads", ())) | set(start.__dict__)
        break
    return (keys - {"_reads"}) | {"_name", "arch"}


def check_model_config_keys(cfg):
    """A hydra model config (``model: {_name: ARCH, ...}``) of one of the plugin's architectures
    holds only keys that architecture reads: a misspelt key is an error naming it (and the nearest
    known keys), instead of a model trained with the key ignored. The plugin's models have no
    dataclass (their presets are ``--arch`` functions): their config is a plain DictConfig that
    fairseq hands to the architecture function unchecked. The command line (a Namespace) is checked
    by argparse; checkpoints are not checked (their saved args may hold keys of older versions)."""
    import difflib

    arch = plugin_arch(cfg)
    if arch is None:
        return
    known = model_config_keys(arch)
    unknown = [k for k in cfg.keys() if k not in known]
    if unknown:
        hints = []
        for k in unknown:
            near = difflib.get_close_matches(k, sorted(known), n=2)
            hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
            hints.append(f"{k!r}{hint}")
        raise ValueError(f"model {arch}: unknown key{'s' if len(unknown) > 1 else ''} in the model "
                         f"config: {', '.join(hints)}; the keys are the flags of fairseq-train "
                         f"--arch {arch} with '_' for '-' (fairseq-train --arch ... --help lists "
                         "them)")
    check_model_config_types(cfg, arch)


def check_model_config_types(cfg, arch):
    """Each value of a hydra model config that its flag types (``int``, ``float``, a ``choices``
    list) as the command line would: ``encoder_layers: two`` is an error naming the key and its
    flag, where it was a TypeError deep in the model's constructor. Boolean flags go through their
    own parser (:func:`.flags.parse_bool_options`, at build time)."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    ARCH_MODEL_REGISTRY[arch].add_args(parser)
    for action in parser._actions:
        if action.dest not in cfg or cfg[action.dest] is None or not action.option_strings:
            continue
        value, flag = cfg[action.dest], action.option_strings[0]
        if action.type in (int, float):
            numeric = isinstance(value, int) if action.type is int else isinstance(
                value, (int, float))
            if isinstance(value, bool) or not numeric:
                kind = "a whole number" if action.type is int else "a number"
                raise ValueError(f"model {arch}: {action.dest}={value!r} is not {kind} ({flag})")
        if action.choices is not None and value not in action.choices:
            raise ValueError(f"model {arch}: {action.dest}={value!r}: choose one of "
                             f"{', '.join(map(str, action.choices))} ({flag})")


RECORDABLE = (str, int, float, bool, type(None))


def plugin_arch(cfg):
    """The plugin's architecture a model config names (without a dataclass), else None."""
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_DATACLASS_REGISTRY

    arch = getattr(cfg, "_name", None) or getattr(cfg, "arch", None)
    model_cls = ARCH_MODEL_REGISTRY.get(arch)
    if model_cls is None or arch in MODEL_DATACLASS_REGISTRY:
        return None
    return arch if model_cls.__module__.startswith(__package__) else None


def flat_bart_config(cfg):
    """A hydra model config of the plugin's BART family as the flat Namespace its layers read.

    fairseq's ``TransformerConfig.from_namespace`` keeps, of a DictConfig, only its own fields:
    the feature flags (``focus_layers``, ``gate``, ...) that the plugin's BART layers read were lost
    (``AttributeError: invalid argument focus_layers`` in fairseq-hydra-train), and fairseq's BART
    reads ``args.task``, which a model config lacks (loading the checkpoint failed). The
    architecture function fills the DictConfig first (so the saved config holds the preset's values,
    as on the command line), then the model is built from a Namespace copy of it."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY
    from fairseq.models.bart import BARTModel
    from omegaconf import OmegaConf, open_dict

    arch = plugin_arch(cfg)
    if arch is None or not issubclass(ARCH_MODEL_REGISTRY[arch], BARTModel):
        return cfg
    with open_dict(cfg):
        ARCH_CONFIG_REGISTRY[arch](cfg)
    flat = OmegaConf.to_container(cfg, resolve=True)
    flat.setdefault("task", None)  # BARTModel.upgrade_state_dict_named reads args.task
    return argparse.Namespace(**flat)


# arch names that now build another model -> the preset that builds what they built before, for a
# checkpoint saved under them with the default cell (TP-Transformer's names became App. B's models
# on the T5 cell; the default-cell models kept their weights under these names)
RENAMED_ARCHS = {
    "t5_transformer_base": "t5_transformer_default_cell_base",
    "tp_transformer_base": "tp_transformer_default_cell_base",
    "tp_transformer_continuous_base": "tp_transformer_continuous_default_cell_base",
}


# model -> flags added after checkpoints of it were saved, with the value that builds the model
# those checkpoints hold (fairseq runs the preset again on load, and a preset may switch a new flag
# on)
LATER_FLAGS = {
    "sum_transformer": {"output_bias": False},  # ETADS eq. 4's b^o (on in the etads presets)
}


def _saved(cfg, key):
    """``cfg``'s value of ``key`` (a Namespace or a DictConfig), or None where it has none."""
    from omegaconf import OmegaConf

    return cfg.get(key) if OmegaConf.is_config(cfg) else getattr(cfg, key, None)


def _set_saved(cfg, values):
    from omegaconf import OmegaConf, open_dict

    with open_dict(cfg) if OmegaConf.is_config(cfg) else _nothing():
        for key, value in values.items():
            setattr(cfg, key, value)


def upgrade_checkpoint_config(cfg):
    """A checkpoint's model config, before fairseq runs its preset again on it: renamed arch names
    (:func:`upgrade_renamed_arch`), and each flag of :data:`LATER_FLAGS` that the config lacks set
    to the value the checkpoint was trained with."""
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    upgrade_renamed_arch(cfg)
    arch = _saved(cfg, "_name") or _saved(cfg, "arch")
    later = LATER_FLAGS.get(ARCH_MODEL_NAME_REGISTRY.get(arch), {})
    _set_saved(cfg, {k: v for k, v in later.items() if _saved(cfg, k) is None})


def upgrade_renamed_arch(cfg):
    """A checkpoint's model config (Namespace or DictConfig) saved under a name of
    :data:`RENAMED_ARCHS` with the default cell (``cell`` ``default``, or absent: saved before the
    T5 cell existed) is renamed to the preset that builds that model, so its saved args say what it
    is: fairseq runs the preset of the saved name again on load, and the new preset would set the
    T5 cell where the saved args lack ``cell``. A T5-cell checkpoint keeps its name. Returns the new
    name or None."""
    arch = _saved(cfg, "_name") or _saved(cfg, "arch")
    new = RENAMED_ARCHS.get(arch)
    if new is None or _saved(cfg, "cell") not in (None, "default"):
        return None
    _set_saved(cfg, {**{k: new for k in ("_name", "arch") if _saved(cfg, k) == arch},
                     "cell": "default"})
    logger.info(f"checkpoint of --arch {arch} on the default cell: loaded as {new} ({arch} is now "
                "TP-Transformer App. B's model on the T5 cell)")
    return new


def refuse_unknown_model_keys():
    """Wrap ``fairseq.models.build_model`` (what ``FairseqTask.build_model`` calls) with
    :func:`check_model_config_keys` for configs built from scratch (not ``from_checkpoint``), and
    :func:`upgrade_checkpoint_config` for checkpoints' configs."""
    from omegaconf import OmegaConf, open_dict
    from fairseq import models

    original = models.build_model
    if getattr(original, "_checks_keys", False):
        return

    def build_model(cfg, task, from_checkpoint=False):
        if from_checkpoint:
            upgrade_checkpoint_config(cfg)
        if not (OmegaConf.is_config(cfg) and plugin_arch(cfg)):
            return original(cfg, task, from_checkpoint)
        if not from_checkpoint:
            check_model_config_keys(cfg)
        # open: what the build records in the config (the Topic Assistant's Phi checksum, ...) is
        # saved with the checkpoint, as on the command line (a struct config refused the keys)
        with open_dict(cfg):
            flat = flat_bart_config(cfg)
            model = original(flat, task, from_checkpoint)
            if flat is not cfg:
                for key, value in vars(flat).items():
                    if key not in cfg and key != "task" and isinstance(value, RECORDABLE):
                        cfg[key] = value
        return model

    build_model._checks_keys = True
    models.build_model = build_model


refuse_unknown_model_keys()
