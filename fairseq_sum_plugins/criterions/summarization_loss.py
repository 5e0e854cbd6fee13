"""``summarization_loss``: label-smoothed cross-entropy plus the models' weighted auxiliary losses.

A model reports auxiliary losses by name in its decoder output: ``net_output[1]["aux_losses"]`` is a
``{name: scalar tensor}`` dict. Each value is the paper's per-unit quantity (e.g. the mean gate L1
per source token, the compression loss per document); the criterion adds ``weight * value`` to the
per-target-token cross-entropy. Since fairseq divides the summed loss by ``sample_size``, the term
enters the summed loss as ``weight * value * sample_size``, so the optimised objective is::

    L = CE_per_token + sum_name weight_name * aux_name

which is how the papers write theirs (M2M eq. 12, IS eq. 9). Every auxiliary
loss is logged under its own name (``aux_<name>``, unweighted). With no auxiliary losses this is
exactly fairseq's ``label_smoothed_cross_entropy``. Models with an information selection layer
also report ``gate_sparsity``: % of source tokens whose gate is <= ``--gate-threshold`` (removed
from the encoder output in eval mode, so in validation this is the pruning rate).

**Gate loss normalisation** (``--gate-l1-norm``), two readings of IS eq. 7-9::

    token (default)  L = CE / target token + lambda * (sum_i g_i) / source token
    document         L = (1/|D|) sum_docs [ sum_t CE_t + lambda * sum_i g_i ]      (IS eq. 7-9 as written)

``token`` divides both terms by their token counts, so one ``lambda`` means the same for any document
and summary length (``gate_l1`` is the mean gate per non-pad source token, modules/gates.py).
``document`` is IS eq. 7-9 literally: the NLL summed over each summary's tokens (IS eq. 7, label-smoothed
like the token reading) and ``lambda`` times the gate sum of the document (IS eq. 8), averaged over the
documents of the batch (fairseq's ``sample_size`` is the number of documents). With per-head gates,
``g_i`` is token ``i``'s gate averaged over the heads. Other auxiliary losses then enter once per
document (``weight * value * documents``). The logged ``nll_loss`` stays per target token in both.
"""
import argparse
import difflib
from dataclasses import dataclass, field

from fairseq import metrics, utils
from fairseq.dataclass import ChoiceEnum
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)

# Default weights follow the papers: information selection λ = 0.1 (best of its sweep),
# Mem2Mem λ1 = 1e-4 (compression) and λ2 = 0.01 (read), coverage 1.0 (See et al., 2017).
KNOWN_AUX_LOSSES = ("gate_l1", "mem_comp", "mem_read", "coverage")


@dataclass
class SummarizationLossConfig(LabelSmoothedCrossEntropyCriterionConfig):
    gate_l1_weight: float = field(default=0.1, metadata={"help": "weight of the gate L1 loss (IS eq. 9)"})
    mem_comp_weight: float = field(default=1e-4, metadata={"help": "λ1, memory compression loss (M2M eq. 6, 12)"})
    mem_read_weight: float = field(default=0.01, metadata={"help": "λ2, memory read loss (M2M eq. 11, 12)"})
    coverage_weight: float = field(default=1.0, metadata={"help": "coverage loss weight (See et al., 2017); "
                                                                  "also spelled --coverage-loss-weight"})
    gate_l1_norm: ChoiceEnum(["token", "document"]) = field(
        default="token",
        metadata={"help": "gate loss reading (module doc): 'token': CE per target token + lambda x mean gate per "
                          "source token; 'document': IS eq. 7-9 as written, summary NLL summed + lambda x sum of "
                          "the document's gates, averaged over documents"},
    )
    aux_weights: str = field(
        default="",
        metadata={"help": "auxiliary loss weights, 'name=w,name2=w2' (overrides the flags above); a name that is "
                          "none of gate_l1, mem_comp, mem_read, coverage must be one the model reports"},
    )


def parse_aux_weights(cfg):
    weights = {name: getattr(cfg, f"{name}_weight") for name in KNOWN_AUX_LOSSES}
    for item in filter(None, (s.strip() for s in cfg.aux_weights.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--aux-weights expects 'name=weight' items, got {item!r}")
        name = name.strip()
        close = difflib.get_close_matches(name, KNOWN_AUX_LOSSES, n=1, cutoff=0.7)
        if name not in KNOWN_AUX_LOSSES and close:
            raise ValueError(f"--aux-weights: unknown auxiliary loss {name!r} (did you mean {close[0]!r}?); "
                             f"the models' losses are {', '.join(KNOWN_AUX_LOSSES)}")
        weights[name] = float(value)
    return weights


@register_criterion("summarization_loss", dataclass=SummarizationLossConfig)
class SummarizationLoss(LabelSmoothedCrossEntropyCriterion):
    def __init__(
        self,
        task,
        sentence_avg,
        label_smoothing,
        ignore_prefix_size=0,
        report_accuracy=False,
        gate_l1_weight=0.1,
        mem_comp_weight=1e-4,
        mem_read_weight=0.01,
        coverage_weight=1.0,
        aux_weights="",
        gate_l1_norm="token",
    ):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        self.aux_weights = parse_aux_weights(
            SummarizationLossConfig(
                gate_l1_weight=gate_l1_weight,
                mem_comp_weight=mem_comp_weight,
                mem_read_weight=mem_read_weight,
                coverage_weight=coverage_weight,
                aux_weights=aux_weights,
            )
        )
        if gate_l1_norm not in ("token", "document"):
            raise ValueError(f"--gate-l1-norm must be 'token' or 'document', got {gate_l1_norm!r}")
        self.gate_l1_norm = gate_l1_norm
        # names given only through --aux-weights: checked against what the model reports (first forward)
        self.unchecked_aux = {n for n in self.aux_weights if n not in KNOWN_AUX_LOSSES}

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        loss, nll_loss = self.compute_loss(model, net_output, sample, reduce=reduce)
        per_document = self.sentence_avg or self.gate_l1_norm == "document"
        sample_size = sample["target"].size(0) if per_document else sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        extra = net_output[1] if isinstance(net_output[1], dict) else {}
        units = {}  # loss name -> how many units its per-unit value is summed over (default sample_size)
        if self.gate_l1_norm == "document" and extra.get("gate_counts") is not None:
            units["gate_l1"] = extra["gate_counts"][:, 1].sum()  # mean gate per token -> sum over documents
        reported = extra.get("aux_losses") or {}
        if self.unchecked_aux:
            missing = sorted(self.unchecked_aux - set(reported))
            if missing:
                raise ValueError(f"--aux-weights: this model reports no auxiliary loss {missing} (it reports "
                                 f"{sorted(reported) or 'none'}; the models' losses are {', '.join(KNOWN_AUX_LOSSES)})")
            self.unchecked_aux = set()
        for name, value in reported.items():
            if name not in self.aux_weights:
                raise ValueError(
                    f"the model returned auxiliary loss {name!r} with no weight; "
                    f"set it with --aux-weights '{name}=W' (known: {sorted(self.aux_weights)})"
                )
            # per-unit value -> summed-loss scale, see module doc; in float32: under fp16 e.g.
            # mem_comp ~48 x 2000 tokens overflows half precision
            scaled = value.float() * units.get(name, sample_size)
            loss = loss + self.aux_weights[name] * scaled
            logging_output[f"aux_{name}"] = scaled.data
            logging_output["loss"] = loss.data
        if extra.get("gate_counts") is not None:  # information selection: [dropped, total] per document
            dropped, tokens = extra["gate_counts"].sum(0).tolist()
            logging_output["gate_dropped"], logging_output["gate_tokens"] = int(dropped), int(tokens)
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = utils.item(n_correct.data)
            logging_output["total"] = utils.item(total.data)
        return loss, sample_size, logging_output

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        # the criterion's coverage loss weight, named apart from the model's coverage attention
        # (Mem2Mem --coverage-attention) and the decoding coverage penalty (--coverage-penalty)
        parser.add_argument("--coverage-loss-weight", dest="coverage_weight", type=float, metavar="W",
                            default=argparse.SUPPRESS, help="weight of the coverage loss (same as --coverage-weight)")

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        names = sorted({k for log in logging_outputs for k in log if k.startswith("aux_")})
        for name in names:
            total = sum(log.get(name, 0) for log in logging_outputs)
            metrics.log_scalar(name, total / max(sample_size, 1), sample_size, round=5)
        gate_tokens = sum(log.get("gate_tokens", 0) for log in logging_outputs)
        if gate_tokens:  # % of source tokens whose gate is <= --gate-threshold (removed in eval mode)
            # summed over workers the counts are tensors: log plain numbers (round() needs them)
            dropped = sum(log.get("gate_dropped", 0) for log in logging_outputs)
            metrics.log_scalar("_gate_dropped", float(utils.item(dropped)))
            metrics.log_scalar("_gate_tokens", float(utils.item(gate_tokens)))
            metrics.log_derived(
                "gate_sparsity", lambda m: round(100 * m["_gate_dropped"].sum / max(m["_gate_tokens"].sum, 1), 2)
            )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
