"""One dropout function for every dropout of the plugin's own cells (default cell, T5 cell,
Mem2Mem).

Every embedding, sublayer, feed-forward hidden and attention-probability dropout of
``models/sum_transformer.py``, ``modules/attention.py`` and ``models/mem2mem/model.py`` calls
:func:`dropout` (BART runs fairseq's own layers and their ``FairseqDropout``). Which mask it draws
is the model's ``--dropout-mask``:

* ``bernoulli`` (the default): ``torch.nn.functional.dropout``, bit for bit: a float mask drawn
  by ``bernoulli_``, one random number per element. Checkpoints and pinned runs keep their bits.
* ``packed``: on CPU, the mask is drawn as 16-bit integers, two per 32-bit random number
  (``random_`` over the full int32 range, viewed as int16), and an element is kept where its integer
  is at or above ``round(p * 2**16) - 2**15``. So the drop probability is ``p`` rounded to a
  multiple of ``2**-16`` (0.1 -> 0.1000061) and the kept elements are scaled by ``1 / (1 - that
  p)``: the expectation is exact. It draws half as many random numbers per element as
  ``bernoulli_`` (its cost in a training step: benchmarks/results/HISTORY.md, bench_train.py
  ``--ablate packed_mask``). On CUDA, where ``F.dropout`` is one fused kernel that draws and
  applies its mask, ``packed`` falls back to it (one warning per process says so).

Attention dropout: ``F.scaled_dot_product_attention`` draws its own mask inside the kernel, so with
``packed`` and attention dropout on, the attention runs its explicit path
(:meth:`.attention.MultiheadAttention._explicit_attention`), whose dropout is this function.

The packed draw consumes the generator differently from ``bernoulli_``: a run with ``packed`` is a
different (equally valid) random stream, not the same bits faster.
"""
import logging
import math

import torch
import torch.nn.functional as F
from torch import Tensor

logger = logging.getLogger(__name__)
MASKS = ("bernoulli", "packed")
_FELL_BACK = []  # the device types on which the packed mask fell back (logged once per process)
_INT16 = 1 << 16


def packed_keep_mask(shape, p: float, device, dtype) -> Tensor:
    """The ``packed`` mask: ``0`` or ``1 / (1 - p')`` in ``dtype``, ``p' = round(p * 2**16) /
    2**16``."""
    n = math.prod(shape)
    draws = torch.empty((n + 1) // 2, dtype=torch.int32, device=device).random_(-(1 << 31), 1 << 31)
    r = draws.view(torch.int16)[:n].view(shape)
    dropped = round(p * _INT16)
    keep = r >= dropped - (1 << 15)
    return keep.to(dtype).mul_(_INT16 / (_INT16 - dropped))


def dropout(x: Tensor, p: float, training: bool, packed: bool = False) -> Tensor:
    """``x`` with each element zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)``
    when ``training`` (else ``x``); ``packed``: the mask described in the module docstring."""
    if not training or p == 0.0:
        return x
    if packed and x.device.type != "cpu" and not _FELL_BACK:
        _FELL_BACK.append(x.device.type)
        logger.warning(
            "--dropout-mask packed: on %s dropout draws torch's fused mask (the packed mask "
            "is for CPU; modules/dropout.py)", x.device.type)
    if not packed or x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, True)
    return x * packed_keep_mask(x.shape, p, x.device, x.dtype)


class Drops:
    """Mixin of the modules whose dropouts go through :func:`dropout`; ``packed_mask`` (class
    default False) is set per module by :func:`set_dropout_mask` from the model's
    ``--dropout-mask``."""

    packed_mask = False

    def drop(self, x: Tensor, p: float) -> Tensor:
        return dropout(x, p, self.training, self.packed_mask)


def check_dropout_mask(args):
    """``--dropout-mask`` (command line, ``--model-overrides``, hydra, checkpoint): one of
    :data:`MASKS`."""
    kind = getattr(args, "dropout_mask", None) or "bernoulli"
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
        help="how dropout masks are drawn: bernoulli (default, torch's F.dropout) or "
        "packed (CPU: two 16-bit draws per 32-bit random number, p rounded to "
        "1/65536; modules/dropout.py)")
