"""Information selection layer (Ishimwe & Grave, "Document Summarization using Transformers with
Information Selection Layer"): a gate per source token on the final encoder states, gated
encoder-decoder attention, an L1 gate loss, and pruning of closed positions at inference.

IS equations and where they live::

    G = sigmoid(H w + b)                          (3)  InformationGate.scores
    alpha_j = softmax_j(q . (g_j K_j))            (6)  MultiheadAttention(kv_scale=g): K rows scaled
    c = sum_j alpha_j g_j V_j                     (6)  ... and V rows scaled, after the projections
    L_gates = sum_i |g_i|                         (8)  gate_l1 (normalised per source token, below)
    L = L_MLE + lambda L_gates                    (9)  summarization_loss --gate-l1-weight lambda
    Algorithm 1 (inference):  T = G > t; G_mask = T * attention mask; G_hat = G_mask * G;
        K_hat, V_hat = K * G_hat, V * G_hat; keys with a closed gate are masked out
                                                       InformationGate.select (eval mode)

Scaling the projected key and value rows by ``g`` (rather than the encoder states, which would
also scale the projection biases) is exactly IS eq. 6 and keeps the fused attention kernel.

**Gate loss normalisation.** ``gate_l1`` is the mean gate over the non-pad source tokens of the
batch (and over heads with ``--gate-per-head``): ``sum_i |g_i| / N_src``. The criterion adds
``lambda * gate_l1`` to the cross-entropy per target token, so the objective is
``CE/target token + lambda * mean gate``. Per token, because it does not depend on document
length or batch size, so one ``lambda`` means the same on 700-token Newsroom documents and on
short ones, and because it is the reading consistent with the paper's sweep: with a sum over a
700-token document, ``lambda = 0.7`` would outweigh the per-token likelihood by two orders of
magnitude and close every gate, whereas the paper still keeps ~20% of the tokens at 0.7 (Table 3).

**Thresholding** (``--gate-threshold t``) applies in eval mode only (validation and generation;
the paper thresholds "during inference and test time"): gates ``<= t`` are closed (set to 0) and
their positions are removed from the encoder output, so the keys/values of every decoder layer
really get shorter. A document never loses all its positions: when every gate of a document is
``<= t``, its highest-gated token stays open (with its own gate value). With shared gates a closed
position contributes nothing to any head, so removing it is exact (it gives the same output as
keeping it masked). With ``--gate-per-head`` (paper Table 2, "different gates") a position is
removed only when it is closed in every head; a position closed in some heads but not others is
kept and masked out in those heads only (an additive ``-inf`` bias per head), which is Algorithm 1
applied per head, and every head keeps at least its highest-gated token. In training mode nothing
is removed; ``gate_counts`` then report what the threshold would remove.

A hard threshold on float32 gates decides by the last bit: the same document's gates in a padded
batch and alone differ by rounding (~1e-7, on either padding side: other blockings of the same
sums), so a gate within that of ``t`` can be kept in one batch and removed in the other, and the
decoder then sees one position more or less. A threshold set *equal to* one of the batch's own
gates (e.g. "the median gate") hits this every time. Set ``t`` between gates (as
tests/test_model_contract.py does): then batched and alone agree to rounding.

**Gate warm-up** (``--gate-warmup-updates N``, off by default; not in the paper): for the first
``N`` training updates every gate is held at 1 (plain attention) and the gate layer gets no gradient
and no gate loss; from update ``N`` on, IS eq. 3-9 exactly. It is for training from scratch: there
the cross-attention is noise to a decoder that is still a language model, the likelihood alone
closes the gates (lambda 0 included: with Adam a small gradient of constant sign moves the gate
logits by the learning rate each update), and a closed source is never learnt to be read. What the
warm-up does on trained models (sparsity, source gain, ROUGE with and without it) is measured in
results/xsum-papers/ and in the table of recipes/newsroom/transformer_gated.sh. While ``N`` is not
reached, a checkpoint's validation and generation see the gates of an untrained gate layer. Eval
mode (validation, generation) always uses the gates themselves.

**The loss** (registered with :mod:`fairseq_sum_plugins.aux_losses`; ``summarization_loss``
``--gate-l1-weight lambda``, default 0.1, the best of the paper's sweep) has two readings of
IS eq. 7-9, ``--gate-l1-norm``::

    token (default)  L = CE / target token + lambda * (sum_i g_i) / source token
    document         L = (1/|D|) sum_docs [ sum_t CE_t + lambda * sum_i g_i ]
                     (IS eq. 7-9 as written)

``document`` sums the gate loss over the batch's source tokens (``gate_counts``); with per-head
gates, ``g_i`` is token ``i``'s gate averaged over the heads.

The sparsity rate (dropped / total non-pad source tokens, EOS included) is returned per document in
the encoder output's ``state["gate_counts"]`` (:mod:`fairseq_sum_plugins.modules.encoder_out`)
(logged by validation as ``gate_sparsity``) and accumulated by the gate module in eval mode
(reported by ``fairseq-generate``; see :func:`report_sparsity_at_exit`).
"""
import atexit
import logging
import os
import sys
import weakref

import torch
import torch.nn as nn

from ..aux_losses import AuxLoss, RatioMetric, register_aux_loss, register_ratio_metric
from ..flags import bool_flag, renamed_flag
from ..side_data import register_generator_hook
from ..modules.features import ENCODER_OUT, FeatureSpec, Inspection, flags_set, register_feature

logger = logging.getLogger(__name__)


def add_gate_args(parser, switch=True):
    """Model flags of the information selection layer, ``--gate-*`` (``switch``: add the switch
    ``--gate``, also spelled ``--info-gate``, too)."""
    # fmt: off
    if switch:
        parser.add_argument("--gate", "--info-gate", dest="gate", type=bool_flag, metavar="BOOL",
                            help="information selection: encoder gate + gated cross-attention "
                                 "(IS eq. 3, 6)")
    parser.add_argument("--gate-per-head", type=bool_flag, metavar="BOOL",
                        help="one gate per cross-attention head (paper Table 2 'different gates') "
                             "instead of one gate shared by all heads")
    parser.add_argument("--gate-threshold", type=float, metavar="T",
                        help="in eval mode, close gates <= T and remove their positions from the "
                             "encoder output (Algorithm 1); at generation: --model-overrides "
                             "\"{'gate_threshold': 0.1}\"")
    parser.add_argument("--gate-warmup-updates", type=int, metavar="N",
                        help="in training, hold every gate at 1 (no gate gradient, no gate loss) "
                             "for the first N updates, then the paper's gate: a decoder trained "
                             "from scratch learns to read the source before the gates can close "
                             "it (0: off, the paper)")
    # fmt: on


def gate_defaults(args, on=False):
    """The ``--gate-*`` defaults (``--gate`` ``on`` unless given: a preset's); ``info_gate``, the
    switch's earlier attribute name, still sets ``gate``."""
    renamed_flag(args, "gate", "info_gate")
    args.gate = getattr(args, "gate", on)
    args.gate_per_head = getattr(args, "gate_per_head", False)
    args.gate_threshold = getattr(args, "gate_threshold", 0.0)
    args.gate_warmup_updates = getattr(args, "gate_warmup_updates", 0)


def check_threshold(threshold):
    """``threshold`` if it is a number in ``[0, 1)`` (a gate is a sigmoid: ``T >= 1`` would close
    every position), else a ValueError naming the flag and the ``--model-overrides`` key."""
    if isinstance(threshold, bool) or not isinstance(threshold,
                                                     (int, float)) or not 0 <= threshold < 1:
        raise ValueError(
            f"gate_threshold {threshold!r}: a number in [0, 1) (--gate-threshold, or at generation "
            "--model-overrides \"{'gate_threshold': 0.1}\")")
    return threshold


class InformationGate(nn.Module):
    """``G = sigmoid(H w + b)`` on the final encoder states, and Algorithm 1's selection.

    ``num_gates`` is 1 (shared by all heads) or the number of cross-attention heads. The linear
    layer keeps PyTorch's default initialisation, as in the paper (§4.2), also on BART
    (``feature_init``: reset after BART's own initialisation).
    """

    feature_init = True

    def __init__(self, embed_dim, num_gates=1, threshold=0.0, warmup_updates=0):
        super().__init__()
        self.proj = nn.Linear(embed_dim, num_gates)
        self.num_gates = num_gates
        self.threshold = check_threshold(threshold)
        self.warmup_updates = warmup_updates or 0
        self.num_updates = 0
        # False: keep closed positions in the encoder output, masked (same output)
        self.prune = True
        self.reset_counts()

    def reset_parameters(self):
        self.proj.reset_parameters()

    def encoder_output(self, view):
        """The feature interface (:mod:`fairseq_sum_plugins.modules.features`):
        :func:`apply_information_selection`."""
        return apply_information_selection(self, view)

    def set_num_updates(self, num_updates):
        """Called by fairseq's ``train_step`` (through the model) before every update."""
        self.num_updates = num_updates

    def in_warmup(self):
        """True in the first ``--gate-warmup-updates`` training updates."""
        return self.num_updates < self.warmup_updates

    def reset_counts(self):
        self.counts = None  # [dropped, total] source tokens seen in eval mode

    def sparsity(self):
        """``(dropped, total)`` source tokens over the eval-mode forwards since ``reset_counts``."""
        if self.counts is None:
            return 0, 0
        dropped, total = (int(x) for x in self.counts.tolist())
        return dropped, total

    def scores(self, h, padding_mask=None):
        """IS eq. 3 for batch-first ``h`` ``(B, S, C)`` -> ``(B, S, G)``, 0 at padding."""
        g = torch.sigmoid(self.proj(h))
        if padding_mask is not None:
            g = g.masked_fill(padding_mask.unsqueeze(-1), 0.0)
        return g

    def select(self, h, padding_mask):
        """Gate, threshold and prune batch-first encoder states.

        Args:
            h: ``(B, S, C)``; padding_mask: ``(B, S)``, True at padding.
        Returns a dict: ``h`` and ``padding_mask`` (shorter after pruning), ``gates`` ``(B, S', G)``
        (thresholded in eval mode, 0 at padding), ``bias`` (per-head ``-inf`` bias ``(B, G, 1, S')``
        or None), ``index`` (source position of each kept row ``(B, S')`` or None when nothing was
        removed), ``counts`` ``(B, 2)`` [dropped, total] and ``l1`` (the per-token gate loss).
        """
        if padding_mask is None:
            padding_mask = torch.zeros(h.shape[:2], dtype=torch.bool, device=h.device)
        g = self.scores(h, padding_mask)
        real = ~padding_mask
        n_real = real.sum()
        # IS eq. 8, per token (module doc)
        l1 = g.float().sum() / (n_real * g.size(-1)).clamp(min=1)

        # Algorithm 1 (a): T = G > t, times the attention mask; keep >= 1 token per document/head
        open_ = (g > self.threshold) & real.unsqueeze(-1)
        best = g.masked_fill(padding_mask.unsqueeze(-1), -1.0).argmax(1, keepdim=True)  # (B, 1, G)
        open_ = open_.scatter(1, best, True)
        kept = open_.any(-1)  # (B, S): open in at least one head
        counts = torch.stack([(real & ~kept).sum(1), real.sum(1)], dim=1)
        out = dict(h=h, padding_mask=padding_mask, gates=g, bias=None, index=None, counts=counts,
                   l1=l1)
        if self.training:
            # --gate-warmup-updates: gates held open, no gate loss (zero gradients)
            if self.in_warmup():
                out["gates"] = (1.0 + 0.0 * g).masked_fill(padding_mask.unsqueeze(-1), 0.0)
                out["l1"] = 0.0 * l1
            return out

        c = counts.detach().sum(0)
        self.counts = c if self.counts is None else self.counts + c.to(self.counts.device)
        g = g * open_.to(g.dtype)  # G_hat = G_mask * G
        if self.num_gates > 1 and bool((kept.unsqueeze(-1) & ~open_).any()):
            # kept position, closed in this head: mask it there
            closed = kept.unsqueeze(-1) & ~open_
            out["bias"] = (torch.zeros_like(g).masked_fill(closed, float("-inf"))
                           .transpose(1, 2).unsqueeze(2))
        drop = real & ~kept
        if bool(drop.any()):
            if self.prune:
                out.update(prune(h, g, out["bias"], kept))
                return out
            padding_mask = padding_mask | drop  # closed in every head: masked like padding
        out.update(gates=g, padding_mask=padding_mask)
        return out


def prune(h, g, bias, kept):
    """Remove the positions not in ``kept`` ``(B, S)``; kept rows stay in order, right-padded."""
    n = kept.sum(1)
    length = int(n.max())
    order = torch.argsort((~kept).to(torch.uint8), dim=1, stable=True)[:, :length]  # (B, S')
    pad = torch.arange(length, device=h.device).unsqueeze(0) >= n.unsqueeze(1)
    h = h.gather(1, order.unsqueeze(-1).expand(-1, -1, h.size(-1)))
    g = (g.gather(1, order.unsqueeze(-1).expand(-1, -1, g.size(-1)))
         .masked_fill(pad.unsqueeze(-1), 0.0))
    if bias is not None:
        bias = (bias.gather(3, order[:, None, None, :].expand(-1, bias.size(1), 1, -1))
                .masked_fill(pad[:, None, None, :], 0.0))
    return dict(h=h, gates=g, bias=bias, padding_mask=pad, index=order.masked_fill(pad, 0))


def apply_information_selection(gate, view):
    """Applies ``gate`` to an :class:`~fairseq_sum_plugins.modules.encoder_out.EncoderOut` ``view``
    in place: gated, thresholded and (eval mode) pruned states with their ``kept_index``, the gate's
    state (``gates``, ``gate_bias``, ``gate_counts``) and the ``gate_l1`` aux loss."""
    sel = gate.select(view.enc, view.padding_mask)
    view.enc, view.padding_mask, view.kept_index = sel["h"], sel["padding_mask"], sel["index"]
    view.state.update(gates=sel["gates"], gate_bias=sel["bias"], gate_counts=sel["counts"])
    view.aux_losses["gate_l1"] = sel["l1"]
    return view


def gated_cross_attention_kwargs(view):
    """Extra keyword arguments of every decoder cross-attention (IS eq. 6) for an
    :class:`~fairseq_sum_plugins.modules.encoder_out.EncoderOut`: ``kv_scale`` ``(B, G, S, 1)``
    scales the projected key/value rows, ``attn_bias`` masks per-head closed positions."""
    gates = view.state.get("gates")
    if gates is None:
        return {}
    kwargs = {"kv_scale": gates.transpose(1, 2).unsqueeze(-1)}
    if view.state.get("gate_bias") is not None:
        kwargs["attn_bias"] = view.state["gate_bias"]
    return kwargs


def _source_tokens(extra):
    counts = extra.get("gate_counts")
    return None if counts is None else counts[:, 1].sum()


def _removed_and_total(extra):
    counts = extra.get("gate_counts")
    return None if counts is None else counts.sum(0).tolist()


def _build_gate(args, site, dims):
    """IS eq. 3 on the encoder's final states: one gate, or one per decoder cross-attention head."""
    if not getattr(args, "gate", False):
        return None
    return InformationGate(dims.embed_dim, dims.heads if args.gate_per_head else 1,
                           args.gate_threshold, getattr(args, "gate_warmup_updates", 0))


def _cross_inputs(view, values):
    """IS eq. 6 in every decoder cross-attention: the gates scale the key and value rows, a per-head
    bias masks the positions closed in some heads."""
    kwargs = gated_cross_attention_kwargs(view)
    if not kwargs:
        return {}
    return {"kv_scale": kwargs["kv_scale"], "score_bias": kwargs.get("attn_bias")}


def _decoder_outputs(view):
    """The decoder's ``extra["gate_counts"]``: ``[removed, total]`` source tokens per document, for
    the criterion's ``gate_sparsity`` and the ``document`` reading of the gate loss."""
    return {"gate_counts": view.state.get("gate_counts")}


def watch_gate(model, probe):
    """Inspection: ``gate``, each source token's ``G`` (IS eq. 3, before the threshold; with a
    gate per head, the largest: a token stays while one head keeps it open), and ``removed``, 1
    where Algorithm 1 took the token out of the encoder output (closed in every head), read from the
    encoder output's kept rows or its mask."""
    found = [m for m in model.encoder.modules() if isinstance(m, InformationGate)]
    if not found:
        return
    scores = []
    probe.hook(found[0].proj, lambda mod, inputs, out: scores.append(torch.sigmoid(out)))

    def read(run):
        from ..modules.encoder_out import EncoderOut

        view = EncoderOut.of(run.encoder_out)
        n = run.src.numel()
        removed = torch.ones(n, dtype=torch.bool)
        if view.kept_index is not None:
            removed[view.kept_index[0][~view.padding_mask[0]].cpu()] = False
        elif view.padding_mask is not None:
            removed = view.padding_mask[0].cpu()
        else:
            removed[:] = False
        return {"gate": scores[-1][0].max(-1).values.tolist(), "removed": removed.int().tolist()}

    probe.read(read)


register_feature(
    FeatureSpec("information selection (--gate)", {ENCODER_OUT: "info_gate"}, _build_gate,
                stage="encoder", add_args=add_gate_args, defaults=gate_defaults,
                cross_inputs=_cross_inputs, decoder_outputs=_decoder_outputs,
                on=lambda args: flags_set(args, "gate"),
                inspect=Inspection({"gate": "token", "removed": "token"}, watch_gate)))
register_aux_loss(AuxLoss(
    "gate_l1", 0.1, "weight of the gate L1 loss (IS eq. 9)", norms=("token", "document"),
    units=_source_tokens,
    norm_help="gate loss reading (features/information_selection.py): 'token': CE per target "
              "token + lambda x mean gate per source token; 'document': IS eq. 7-9 as written, "
              "summary NLL summed + lambda x sum of the document's gates, averaged over documents"))
# % of source tokens whose gate is <= --gate-threshold (removed from the encoder output in eval
# mode)
register_ratio_metric(
    RatioMetric("gate_sparsity", "gate_dropped", "gate_tokens", _removed_and_total))


def information_gates(models):
    return [m for model in models for m in model.modules() if isinstance(m, InformationGate)]


_REPORTED = weakref.WeakSet()


@register_generator_hook
def report_sparsity_at_exit(models):
    """Resets the models' gate counters and logs their sparsity rate when the process ends
    (``fairseq-generate`` / ``fairseq-interactive`` give the task no hook after the last batch);
    only in the fairseq command-line tools (in Python, read ``gate.sparsity()``). The exit handler
    holds the gate modules (a ``d_model x G`` linear layer each), not the models."""
    cli = "fairseq" in os.path.basename(sys.argv[0] if sys.argv else "")  # fairseq-generate & co.
    for gate in information_gates(models):
        gate.reset_counts()
        if cli and gate not in _REPORTED:
            _REPORTED.add(gate)
            atexit.register(_log_sparsity, gate)


def _log_sparsity(gate):
    dropped, total = gate.sparsity()
    if total:
        logger.info(
            f"information selection: gate threshold {gate.threshold:g}, sparsity rate "
            f"{100.0 * dropped / total:.2f}% ({dropped:,} of {total:,} source tokens removed)"
        )
