"""Activation checkpointing of transformer layers: ``--checkpoint-activations`` and
``--offload-activations``, fairseq's transformer options, on ``sum_transformer`` and ``bart_sum``.

A checkpointed layer keeps only its inputs in training and recomputes its activations in backward
(torch's non-reentrant ``torch.utils.checkpoint``, random state restored, so dropout draws the same
masks): the gradients are those without checkpointing, the memory of a layer's activations is freed.
``--offload-activations`` also moves the layer's tensor inputs to CPU memory until backward (it
implies checkpointing; on a CPU it changes nothing).

Why not fairseq's ``checkpoint_wrapper`` as it is: its reentrant recomputation sees only the tensors
passed as arguments. The layers here also read per-batch values beside their arguments (the
features' inputs that ``bart_sum`` hands its layers through :class:`..models.bart.BatchInputs`, e.g.
IS eq. 6's key/value scale from the gates, TEMA's prefix; the role dictionaries that
:func:`.tpr.shared_role_normalization` normalises once per stack); some of them carry gradients (the
gates, the prefix), which a reentrant recomputation would not pass back. ``context`` captures them
at the forward and gives them back to the recomputation, which then computes exactly what the
forward did.

Like fairseq's wrapper, the layer's ``forward`` is replaced in place (parameter names do not change,
so checkpoints load with or without the option) and the original is kept as
``precheckpoint_forward`` (fairseq's ``unwrap_checkpoint`` undoes it); the wrapper is a
``functools.partial`` of bound methods, so ``copy.deepcopy`` of a model (fairseq's ``--ema``) binds
the copy to the copied layer. In eval mode or without gradients (validation, generation, where
incremental states are updated in place) the layer runs as it is.
"""
import contextlib
import functools

import torch
from torch.utils.checkpoint import checkpoint


def checkpoint_layer(layer, offload_to_cpu=False, context=None):
    """Activation checkpointing of ``layer`` (in place; returns it). ``context()``, called at each
    forward, returns a factory of context managers that restores what the forward read beside its
    arguments; it is entered around the forward and around its recomputation in backward."""
    if hasattr(layer, "precheckpoint_forward"):
        raise ValueError(f"activation checkpointing applied twice to {type(layer).__name__}")
    layer.precheckpoint_forward = layer.forward
    forward = layer.precheckpoint_forward
    layer.forward = functools.partial(_checkpointed_forward, forward, offload_to_cpu, context)
    return layer


def _run(forward, restore, device, *args, **kwargs):
    if device is not None:  # --offload-activations: the inputs back on the layer's device
        args, kwargs = _move((args, kwargs), device)
    with restore():
        return forward(*args, **kwargs)


def _checkpointed_forward(forward, offload_to_cpu, context, *args, **kwargs):
    if not (torch.is_grad_enabled() and forward.__self__.training):  # eval: incremental states are
        return forward(*args, **kwargs)  # updated in place, a recomputation would update them twice
    restore = context() if context is not None else contextlib.nullcontext
    device = None
    if offload_to_cpu:
        device = next((t.device for t in _tensors((args, kwargs)) if t.device.type != "cpu"), None)
        if device is not None:
            args, kwargs = _move((args, kwargs), torch.device("cpu"))
    run = functools.partial(_run, forward, restore, device)
    return checkpoint(run, *args, use_reentrant=False, **kwargs)


def _tensors(tree):
    if torch.is_tensor(tree):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for t in tree:
            yield from _tensors(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            yield from _tensors(t)


def _move(tree, device):
    """``(args, kwargs)`` with their top-level tensors on ``device`` (differentiable copies)."""
    args, kwargs = tree

    def move(t):
        return t.to(device, non_blocking=device.type != "cpu") if torch.is_tensor(t) else t

    return tuple(move(a) for a in args), {k: move(v) for k, v in kwargs.items()}


def checkpoint_layers(layers, args, context=None):
    """Checkpoints every layer of ``layers`` when ``args`` ask for it (:func:`checkpoint_options`);
    ``context(layer)``: see :func:`checkpoint_layer`."""
    on, offload = checkpoint_options(args)
    if on:
        for layer in layers:
            restore = functools.partial(context, layer) if context is not None else None
            checkpoint_layer(layer, offload, restore)
    return layers


def checkpoint_options(args):
    """``(checkpoint, offload)`` of fairseq's options (``--offload-activations`` implies
    checkpointing)."""
    offload = bool(getattr(args, "offload_activations", False))
    return bool(getattr(args, "checkpoint_activations", False)) or offload, offload


def add_checkpoint_args(parser):
    """fairseq's transformer flags, with its help texts."""
    parser.add_argument("--checkpoint-activations", action="store_true",
                        help="checkpoint activations at each layer, which saves GPU memory usage "
                             "at the cost of some additional compute (recomputed in backward; "
                             "same gradients)")
    parser.add_argument("--offload-activations", action="store_true",
                        help="checkpoint activations at each layer, then save to CPU memory "
                             "(sets --checkpoint-activations)")
