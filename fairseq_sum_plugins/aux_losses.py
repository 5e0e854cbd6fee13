"""A neutral registry of the auxiliary losses that features add to the summarization objective.

The criterion ``summarization_loss`` names no feature: each feature declares here, at import time,
the losses its model reports in ``net_output[1]["aux_losses"]`` (``{name: per-unit scalar}``)::

    register_aux_loss(AuxLoss("gate_l1", 0.1, "weight of the gate L1 loss (IS eq. 9)",
                              norms=..., units=...))

and the criterion builds one weight flag per loss (``--{name}-weight``, its dest ``{name}_weight``,
plus ``aliases``), and with ``norms`` a normalisation flag ``--{name}-norm`` whose first choice is
the default. ``"token"`` adds ``weight * value`` per target token; ``"document"`` makes the
criterion's sample size the number of documents and sums the loss over ``units(extra)`` of its
units (e.g. the batch's source tokens for a mean gate), so it enters once per document.

A feature may also register a ratio it wants logged (:class:`RatioMetric`): a percentage of two
counts read from the decoder's ``extra`` (e.g. ``gate_sparsity``: removed / total source tokens).
Feature modules import this module, never the criterion.
"""
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

# name -> AuxLoss, in registration order
AUX_LOSSES: Dict[str, "AuxLoss"] = {}
RATIO_METRICS: Dict[str, "RatioMetric"] = {}


@dataclass(frozen=True)
class AuxLoss:
    """One auxiliary loss: ``name`` (its key in ``aux_losses``), the default ``weight`` of its
    ``--{name}-weight`` flag, that flag's ``help`` and other spellings (``aliases``, e.g.
    ``"--coverage-loss-weight"``), and optionally its normalisations ``norms`` (first: default) with
    ``units(extra) -> tensor``, the count the per-unit value is a mean over (for ``document``)."""

    name: str
    weight: float
    help: str
    aliases: Tuple[str, ...] = ()
    norms: Tuple[str, ...] = ()
    norm_help: str = ""
    units: Optional[Callable] = None

    @property
    def weight_flag(self):
        return f"{self.name}_weight"

    @property
    def norm_flag(self):
        return f"{self.name}_norm" if self.norms else None


@dataclass(frozen=True)
class RatioMetric:
    """A logged percentage ``100 * numerator / denominator``, summed over batches and workers;
    ``counts(extra) -> (numerator, denominator)`` or None, logged as the keys ``numerator`` and
    ``denominator`` of the logging output."""

    name: str
    numerator: str
    denominator: str
    counts: Callable


def register_aux_loss(loss: AuxLoss):
    if loss.norms and loss.units is None:
        raise ValueError(f"auxiliary loss {loss.name!r}: normalisations need units(extra)")
    previous = AUX_LOSSES.get(loss.name)
    if previous is not None and previous != loss:
        raise ValueError(f"auxiliary loss {loss.name!r} registered twice, differently")
    AUX_LOSSES[loss.name] = loss
    return loss


def register_ratio_metric(metric: RatioMetric):
    RATIO_METRICS[metric.name] = metric
    return metric
