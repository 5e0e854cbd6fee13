"""Compatibility fixes applied when the plugin is imported (``--user-dir``).

1. Load fairseq checkpoints under torch >= 2.6 without turning off ``weights_only``.

Since torch 2.6, ``torch.load`` defaults to ``weights_only=True`` and refuses any class it does not
know. A fairseq checkpoint holds tensors, plain containers and, for models configured through
``add_args``, an ``argparse.Namespace`` (the model config): that is the only class it needs. We add
exactly those classes to torch's allow-list (``torch.serialization.add_safe_globals``), so fairseq's
own ``torch.load`` calls (``fairseq-generate``, ``-interactive``, ``--restore-file``, the hub
interface) work, while every other ``torch.load`` in the process keeps the safe default and still
rejects arbitrary pickled code. (The alternatives, ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` or patching
``torch.load`` to pass ``weights_only=False``, would disable that protection for everything.)

2. Keep the last partial batch that the fork's compiled ``batch_by_size`` drops (see
   :func:`keep_batch_remainder`).

3. Make ``--no-repeat-ngram-size`` block repeated n-grams again (see :func:`fix_no_repeat_ngram`).

4. Name the file when a checkpoint is empty or cut short (see :func:`name_unreadable_checkpoints`).
5. Let ``--ddp-backend pytorch_ddp`` (``c10d``) wrap a CPU model (see :func:`ddp_on_cpu`).
"""
import argparse

import torch

SAFE_CHECKPOINT_GLOBALS = [argparse.Namespace]


def allow_fairseq_checkpoints():
    """Idempotently allow-list the classes fairseq checkpoints contain (no-op on torch < 2.4)."""
    add = getattr(torch.serialization, "add_safe_globals", None)
    if add is not None:
        add(SAFE_CHECKPOINT_GLOBALS)


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

    def batch_by_size(indices, num_tokens_fn, num_tokens_vec=None, max_tokens=None, max_sentences=None,
                      required_batch_size_multiple=1, fixed_shapes=None):
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
    built, i.e. on CPU and with the CPU-built fork on a GPU) takes the last ``n - 1`` entries of that
    buffer as the n-gram prefix to look for: padding, which never matches, so nothing is ever
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
            raise ValueError(f"checkpoint {path} is empty (0 bytes): an interrupted save? use another checkpoint")
        try:
            return original(path, *args, **kwargs)
        except (EOFError, pickle.UnpicklingError, RuntimeError) as err:
            if isinstance(err, RuntimeError) and "zip archive" not in str(err) and "central directory" not in str(err):
                raise
            raise ValueError(f"checkpoint {path} cannot be read (truncated or not a checkpoint): {err}") from err

    load_checkpoint_to_cpu._names_file = True
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu


name_unreadable_checkpoints()


def ddp_on_cpu():
    """Make fairseq's ``pytorch_ddp`` / ``c10d`` wrapper accept a model on the CPU (``--cpu``, gloo).

    ``DistributedFairseqModel`` passes ``device_ids=[args.device_id]`` and ``output_device`` to
    ``torch.nn.parallel.DistributedDataParallel`` whatever the device; torch refuses ``device_ids``
    for a CPU module ("DistributedDataParallel device_ids and output_device arguments only work with
    single-device/multiple-device GPU modules or CPU modules, but got device_ids [0]").
    The class fairseq's wrapper instantiates is replaced by a subclass that drops both arguments when
    the module's parameters live on the CPU; GPU modules are wrapped exactly as before.
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
