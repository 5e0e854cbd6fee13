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
