"""``summarization_loss``: label-smoothed cross-entropy plus the models' weighted auxiliary losses.

A model reports auxiliary losses by name in its decoder output: ``net_output[1]["aux_losses"]`` is a
``{name: scalar tensor}`` dict. Each value is the paper's per-unit quantity (e.g. the mean gate L1
per source token, the compression loss per document); the criterion adds ``weight * value`` to the
per-target-token cross-entropy. Since fairseq divides the summed loss by ``sample_size``, the term
enters the summed loss as ``weight * value * sample_size``, so the optimised objective is::

    L = CE_per_token + sum_name weight_name * aux_name

which is how the papers write theirs (M2M eq. 12, IS eq. 9). Every auxiliary loss is logged under
its own name (``aux_<name>``, unweighted). With no auxiliary losses this is exactly fairseq's
``label_smoothed_cross_entropy``.

The criterion names no feature: the losses, their weight flags (``--{name}-weight``, defaults from
the papers), their normalisations (``--{name}-norm``) and the ratios to log are what the features
registered in :mod:`fairseq_sum_plugins.aux_losses` (e.g. ``gate_l1`` and ``gate_sparsity`` in
:mod:`fairseq_sum_plugins.features.information_selection`, ``mem_comp`` / ``mem_read`` in
:mod:`fairseq_sum_plugins.models.mem2mem.memory`, ``coverage`` in
:mod:`fairseq_sum_plugins.models.mem2mem.model`). A ``document`` normalisation makes the sample size
the number of documents: the cross-entropy is then summed over each summary (label-smoothed like the
token reading) and that loss over the units its value is a mean of, averaged over the documents of
the batch; other auxiliary losses then enter once per document (``weight * value * documents``). The
logged ``nll_loss`` stays per target token in both.

**The label-smoothed loss's backward** (:class:`LabelSmoothedNLL`): the gradient of fairseq's
``label_smoothed_nll_loss`` with respect to the log-probabilities is ``-eps_i g`` at every word and
``-(1 - eps - eps_i) g - eps_i g`` at the target (0 at padding). Autograd builds it from a
zero-filled ``N x V`` tensor (the gather's backward), the smoothing term's expanded gradient and
their sum: two ``N x V`` allocations and three passes over them per step. :class:`LabelSmoothedNLL`
writes the same values, computed by the same float32 operations, in one filled tensor (fairseq's
gradients bit for bit, tests/test_speed_paths.py); fairseq's function stays the reference and runs
wherever the loss is not reduced or needs no gradient (``SummarizationLoss.fused_backward``).
"""
import argparse
import difflib
import math
from dataclasses import field, make_dataclass

import torch

from fairseq import metrics, utils
from fairseq.dataclass import ChoiceEnum
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
    label_smoothed_nll_loss,
)

from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
from fairseq.dataclass.utils import gen_parser_from_dataclass
from hydra.core.config_store import ConfigStore

from ..aux_losses import AUX_LOSSES, RATIO_METRICS

NAME = "summarization_loss"
_CONFIG = {}  # the registered losses (a tuple) -> their config dataclass


def _config_fields(losses):
    """One weight field per loss (``{name}_weight``), a ``{name}_norm`` field for those with
    normalisations, and ``aux_weights``."""
    out = []
    for loss in losses:
        out.append((loss.weight_flag, float, field(default=loss.weight,
                                                   metadata={"help": loss.help})))
        if loss.norms:
            out.append((loss.norm_flag, ChoiceEnum(list(loss.norms)),
                        field(default=loss.norms[0], metadata={"help": loss.norm_help})))
    out.append(("aux_weights", str, field(default="", metadata={
        "help": "auxiliary loss weights, 'name=w,name2=w2' (overrides the flags above); a name "
                f"that is none of {', '.join(AUX_LOSSES)} must be one the model reports"})))
    return out


def criterion_config():
    """The criterion's config dataclass for the losses registered now (``SummarizationLossConfig``):
    made when first asked for with these losses, so a loss registered after import has its flags."""
    losses = tuple(AUX_LOSSES.values())
    if losses not in _CONFIG:
        _CONFIG[losses] = make_dataclass("SummarizationLossConfig", _config_fields(losses),
                                         bases=(LabelSmoothedCrossEntropyCriterionConfig,))
    return _CONFIG[losses]


def __getattr__(name):  # SummarizationLossConfig: the config of the losses registered now
    if name == "SummarizationLossConfig":
        return criterion_config()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def refresh_registration():
    """Makes fairseq's registries hold :func:`criterion_config` (as ``register_criterion`` stores a
    config: the criterion's dataclass registry and hydra's config store); called where the config is
    used: the command-line parser (:meth:`SummarizationLoss.add_args`) and the criterion's build."""
    config = criterion_config()
    if CRITERION_DATACLASS_REGISTRY.get(NAME) is not config:
        CRITERION_DATACLASS_REGISTRY[NAME] = config
        setattr(SummarizationLoss, "__dataclass", config)
        node = config()
        node._name = NAME
        ConfigStore.instance().store(name=NAME, group="criterion", node=node, provider="fairseq")
    return config


def parse_aux_weights(weights, aux_weights):
    """``weights`` (``{name: w}`` of the weight flags) updated by ``--aux-weights 'name=w,...'``."""
    weights = dict(weights)
    for item in filter(None, (s.strip() for s in aux_weights.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--aux-weights expects 'name=weight' items, got {item!r}")
        name = name.strip()
        close = difflib.get_close_matches(name, AUX_LOSSES, n=1, cutoff=0.7)
        if name not in AUX_LOSSES and close:
            raise ValueError(
                f"--aux-weights: unknown auxiliary loss {name!r} (did you mean {close[0]!r}?); "
                f"the models' losses are {', '.join(AUX_LOSSES)}")
        weights[name] = _weight(value, f"--aux-weights {name}=")
    return weights


def _weight(value, flag):
    """``value`` as a weight: a finite number >= 0 (a negative weight would reward the loss the
    paper minimises), else a ValueError naming ``flag``."""
    try:
        w = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{flag} expects a number, got {value!r}") from None
    if not math.isfinite(w) or w < 0:
        raise ValueError(f"{flag} must be a finite weight >= 0, got {value!r}")
    return w


def feature_flags():
    """The criterion flags (dests) the registered losses add: weights and normalisations."""
    return [f for loss in AUX_LOSSES.values() for f in (loss.weight_flag, loss.norm_flag) if f]


class LabelSmoothedNLL(torch.autograd.Function):
    """fairseq's ``label_smoothed_nll_loss(lprobs, target, epsilon, ignore_index, reduce=True)``
    with its gradient written in one pass (see the module docstring). ``lprobs`` ``(N, V)``,
    ``target`` ``(N,)``; returns ``(loss, nll_loss)``, the latter for logging (no gradient)."""

    @staticmethod
    def forward(ctx, lprobs, target, epsilon, ignore_index):
        loss, nll_loss = label_smoothed_nll_loss(lprobs, target, epsilon, ignore_index, True)
        ctx.save_for_backward(target)
        ctx.epsilon, ctx.ignore_index, ctx.shape = epsilon, ignore_index, lprobs.shape
        ctx.mark_non_differentiable(nll_loss)
        return loss, nll_loss

    @staticmethod
    def backward(ctx, grad, _grad_nll):
        (target,) = ctx.saved_tensors
        n, vocab = ctx.shape
        eps_i = ctx.epsilon / (vocab - 1)
        # the reference's operations on the incoming gradient, in its order: the weights'
        # products, the negations of -lprobs, the gather's zeros plus the smoothing term
        smooth = (grad * eps_i).neg()
        nll = (grad * (1.0 - ctx.epsilon - eps_i)).neg()
        out = torch.empty(ctx.shape, dtype=grad.dtype, device=grad.device).fill_(smooth + 0.0)
        out[torch.arange(n, device=target.device), target] = (nll + 0.0) + smooth
        if ctx.ignore_index is not None:
            out.masked_fill_(target.eq(ctx.ignore_index).unsqueeze(-1), 0.0)
        return out, None, None, None


@register_criterion(NAME, dataclass=criterion_config())
class SummarizationLoss(LabelSmoothedCrossEntropyCriterion):
    # the label-smoothed loss's gradient in one pass (LabelSmoothedNLL); False: fairseq's autograd
    fused_backward = True

    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0,
                 report_accuracy=False, aux_weights="", **flags):
        """``flags``: the registered losses' ``{name}_weight`` / ``{name}_norm`` (defaults:
        registered)."""
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        unknown = sorted(set(flags) - set(feature_flags()))
        if unknown:
            raise TypeError(f"summarization_loss: unknown arguments {unknown} (the losses' flags "
                            f"are {feature_flags()})")
        self.aux_weights = parse_aux_weights(
            {n: _weight(flags.get(loss.weight_flag, loss.weight),
                        f"--{loss.weight_flag.replace('_', '-')}")
             for n, loss in AUX_LOSSES.items()},
            aux_weights)
        self.norms = {}  # loss name -> its normalisation
        for name, loss in AUX_LOSSES.items():
            if loss.norms:
                # a plain string (fairseq's ChoiceEnum)
                norm = str(flags.get(loss.norm_flag, loss.norms[0]))
                if norm not in loss.norms:
                    raise ValueError(f"--{loss.norm_flag.replace('_', '-')} must be one of "
                                     f"{', '.join(loss.norms)}, got {norm!r}")
                self.norms[name] = norm
        # names given only through --aux-weights: checked against what the model reports (first
        # forward)
        self.unchecked_aux = {n for n in self.aux_weights if n not in AUX_LOSSES}

    @classmethod
    def build_criterion(cls, cfg, task):
        refresh_registration()
        flags = {f: getattr(cfg, f) for f in feature_flags() if getattr(cfg, f, None) is not None}
        return cls(task, cfg.sentence_avg, cfg.label_smoothing,
                   getattr(cfg, "ignore_prefix_size", 0), getattr(cfg, "report_accuracy", False),
                   getattr(cfg, "aux_weights", ""), **flags)

    def compute_loss(self, model, net_output, sample, reduce=True):
        lprobs, target = self.get_lprobs_and_target(model, net_output, sample)
        if (reduce and self.fused_backward and lprobs.requires_grad and lprobs.dim() == 2
                and target.dim() == 1):
            return LabelSmoothedNLL.apply(lprobs, target, self.eps, self.padding_idx)
        return label_smoothed_nll_loss(lprobs, target, self.eps, ignore_index=self.padding_idx,
                                       reduce=reduce)

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        loss, nll_loss = self.compute_loss(model, net_output, sample, reduce=reduce)
        per_document = self.sentence_avg or "document" in self.norms.values()
        sample_size = sample["target"].size(0) if per_document else sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        extra = net_output[1] if isinstance(net_output[1], dict) else {}
        reported = extra.get("aux_losses") or {}
        if self.unchecked_aux:
            missing = sorted(self.unchecked_aux - set(reported))
            if missing:
                raise ValueError(
                    f"--aux-weights: this model reports no auxiliary loss {missing} (it reports "
                    f"{sorted(reported) or 'none'}; the models' losses are {', '.join(AUX_LOSSES)})"
                )
            self.unchecked_aux = set()
        for name, value in reported.items():
            if name not in self.aux_weights:
                raise ValueError(
                    f"the model returned auxiliary loss {name!r} with no weight; "
                    f"set it with --aux-weights '{name}=W' (known: {sorted(self.aux_weights)})"
                )
            # per-unit value -> summed-loss scale, see module doc; in float32: under fp16 e.g.
            # a per-document value ~48 x 2000 tokens overflows half precision
            units = AUX_LOSSES[name].units(extra) if self.norms.get(name) == "document" else None
            scaled = value.float() * (sample_size if units is None else units)
            loss = loss + self.aux_weights[name] * scaled
            logging_output[f"aux_{name}"] = scaled.data
            logging_output["loss"] = loss.data
        for ratio in RATIO_METRICS.values():  # the features' logged ratios (aux_losses.RatioMetric)
            counts = ratio.counts(extra)
            if counts is not None:
                logging_output[ratio.numerator], logging_output[ratio.denominator] = (
                    int(c) for c in counts)
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = utils.item(n_correct.data)
            logging_output["total"] = utils.item(total.data)
        return loss, sample_size, logging_output

    @classmethod
    def add_args(cls, parser):
        gen_parser_from_dataclass(parser, refresh_registration()())  # the losses registered now
        for loss in AUX_LOSSES.values():  # other spellings of the weight flags (AuxLoss.aliases)
            for alias in loss.aliases:
                parser.add_argument(alias, dest=loss.weight_flag, type=float, metavar="W",
                                    default=argparse.SUPPRESS,
                                    help=f"same as --{loss.weight_flag.replace('_', '-')}")

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        names = sorted({k for log in logging_outputs for k in log if k.startswith("aux_")})
        for name in names:
            total = sum(log.get(name, 0) for log in logging_outputs)
            metrics.log_scalar(name, total / max(sample_size, 1), sample_size, round=5)
        for ratio in RATIO_METRICS.values():
            denominator = sum(log.get(ratio.denominator, 0) for log in logging_outputs)
            # summed over workers the counts are tensors: log plain numbers (round() needs them)
            if denominator:
                numerator = sum(log.get(ratio.numerator, 0) for log in logging_outputs)
                metrics.log_scalar(f"_{ratio.numerator}", float(utils.item(numerator)))
                metrics.log_scalar(f"_{ratio.denominator}", float(utils.item(denominator)))
                metrics.log_derived(ratio.name, _percentage(ratio))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


def _percentage(ratio):
    num, den = f"_{ratio.numerator}", f"_{ratio.denominator}"
    return lambda m: round(100 * m[num].sum / max(m[den].sum, 1), 2)
