"""One dropout function for every dropout of the plugin's own cells (default cell, T5 cell,
Mem2Mem).

Every embedding, sublayer, feed-forward hidden and attention-probability dropout of
``models/sum_transformer.py``, ``modules/attention.py`` and ``models/mem2mem/model.py`` calls
:func:`dropout` (BART runs fairseq's own layers and their ``FairseqDropout``). Which mask it draws
is the model's ``--dropout-mask``:

* ``packed`` (the default): on CPU, the mask is drawn as 16-bit integers, four per 64-bit random
  number (``random_`` over the full int64 range, one 64-bit draw of torch's generator, viewed as
  int16), and an element is kept where its integer is at or above ``round(p * 2**16) - 2**15``.
  So the drop probability is ``p`` rounded to a multiple of ``2**-16`` (0.1 -> 0.1000061) and the
  kept elements are scaled by ``1 / (1 - that p)``: the expectation is exact. The comparison
  writes the 0/1 mask in the activations' dtype directly and the scale multiplies it in place.
  Against ``F.dropout`` (``bernoulli_``: one 32-bit draw per element, then the products) it
  draws a quarter of the random numbers; drawing masks was 11-14% of a training step of
  t5_small with torch's, and t5_small trains 1.05x-1.11x faster with the packed mask (the
  smaller presets, whose masks are a smaller share, 1.02x in a run of 16 steps;
  benchmarks/README.md, bench_train.py ``--ablate packed_mask``). The float mask it keeps for
  the backward is 4 bytes per element against ``F.dropout``'s 1-byte one (t5_small's peak
  memory in a step: 1.03x).
  Every operation of the draw is exact integer or IEEE arithmetic, so the mask is the same on
  every CPU model and instruction set for the same generator state. On other devices (CUDA,
  where ``F.dropout`` is one fused kernel that draws and applies its mask) ``packed`` is
  ``F.dropout``.
* ``bernoulli``: ``torch.nn.functional.dropout``, bit for bit: a float mask drawn by
  ``bernoulli_``, one random number per element. The random stream of HF's and fairseq's own
  layers, and of the plugin before ``packed`` was its default: the quickstart names it, so its
  pinned figures (measured with it) hold, and a checkpoint that recorded it keeps it.

Attention dropout: ``F.scaled_dot_product_attention`` draws its own mask inside the kernel, so with
``packed`` and attention dropout on, the attention runs its matmul or explicit path
(:meth:`.attention.MultiheadAttention._matmul_attention`, ``_explicit_attention``), whose dropout
is this function.

The packed draw consumes the generator differently from ``bernoulli_``: a run with ``packed`` is a
different (equally valid) random stream, not the same bits faster.
"""
import math

import torch
import torch.nn.functional as F
from torch import Tensor

MASKS = ("bernoulli", "packed")
DEFAULT_MASK = "packed"
_INT16 = 1 << 16


def packed_keep_mask(shape, p: float, device, dtype) -> Tensor:
    """The ``packed`` mask: ``0`` or ``1 / (1 - p')`` in ``dtype``, ``p' = round(p * 2**16) /
    2**16``."""
    n = math.prod(shape)
    draws = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(1 << 63), None)
    r = draws.view(torch.int16)[:n].view(shape)
    dropped = round(p * _INT16)
    keep = torch.ge(r, dropped - (1 << 15), out=torch.empty(shape, dtype=dtype, device=device))
    return keep.mul_(_INT16 / (_INT16 - dropped))


def dropout(x: Tensor, p: float, training: bool, packed: bool = False) -> Tensor:
    """``x`` with each element zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)``
    when ``training`` (else ``x``); ``packed``: the mask described in the module docstring (on
    CPU; elsewhere, and where ``p`` rounds to 1, ``F.dropout``)."""
    if not training or p == 0.0:
        return x
    if not packed or x.device.type != "cpu" or not 0.0 < p < 1.0 - 0.5 / _INT16:
        return F.dropout(x, p, True)  # also p' = 1 and a p out of [0, 1] (its error)
    return x * packed_keep_mask(x.shape, p, x.device, x.dtype)


class Drops:
    """Mixin of the modules whose dropouts go through :func:`dropout`; ``packed_mask`` (class
    default: the default mask's) is set per module by :func:`set_dropout_mask` from the model's
    ``--dropout-mask``."""

    packed_mask = DEFAULT_MASK == "packed"

    def drop(self, x: Tensor, p: float) -> Tensor:
        return dropout(x, p, self.training, self.packed_mask)


def check_dropout_mask(args):
    """``--dropout-mask`` (command line, ``--model-overrides``, hydra, checkpoint): one of
    :data:`MASKS`."""
    kind = getattr(args, "dropout_mask", None) or DEFAULT_MASK
    if kind not in MASKS:
        raise ValueError(f"--dropout-mask {kind!r}: choose one of {', '.join(MASKS)}")
    return kind


def set_dropout_mask(model, kind: str):
    """Every :class:`Drops` module of ``model`` draws ``kind``'s mask (one of :data:`MASKS`)."""
    for module in model.modules():
        if isinstance(module, Drops):
            module.packed_mask = kind == "packed"


def add_dropout_mask_arg(parser):
    parser.add_argument(
        "--dropout-mask", choices=MASKS, metavar="KIND",
        help="how dropout masks are drawn: packed (default; CPU: four 16-bit draws per 64-bit "
        "random number, p rounded to 1/65536) or bernoulli (torch's F.dropout, one draw per "
        "element; modules/dropout.py)")
