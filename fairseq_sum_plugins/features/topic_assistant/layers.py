"""Topic Assistant (Topic Assistant paper §4): SIA, TEMA and DRM as features of
``sum_transformer``.

The topic model is the PFA of :mod:`fairseq_sum_plugins.features.topic_assistant.topic_model`
(``DATA/bin/topic_model.npz``, fitted by ``python -m preprocess.topic_model fit``) on the
summarizer's own dictionary, so row ``v`` of ``Phi`` (V x K) is token ``v``; ``theta`` (the
document's normalised topic proportions, K) is the task side data ``--side-data theta``.

TA equations and where they live::

    varphi_v = Phi_{v,:} / ||Phi_{v,:}||_1                            (5)
        TopicAssistant.phi_unit (L2-unit rows: cos is scale-free; stop words' rows stay 0 -> cos 0)
    A_{h+1} = softmax(cos(varphi_v1, varphi_v2) / sqrt(d_k))          (6)
        TopicAssistant.sia_probs, once per forward for each block type
    MHA = Concat(head_1..h) W^a_ori + (A_{h+1} X W^v_add) W^a_add     (7)
        SIAHead (added to the block output)
    E_topic = Phi^T E_token                                           (8)
        TopicAssistant.topic_embeddings
    top-n topics of theta as a decoder prefix, Fig. 3(b) masks
        TopicAssistant.decoder_inputs, TopicInputs
    z^(l) = theta^T W_b^(l), added to the cross-attention output      (9)
        DRM

SIA's extra head is one more head of width ``d_k = d_model / h`` in every attention block
(encoder self, decoder self with the causal/TEMA mask, decoder cross); its value projection
``W^v_add`` (d_model x d_k) and output projection ``W^a_add`` (d_k x d_model) are the new
parameters. In the decoder, a topic position of the TEMA prefix is represented for SIA by the
topic itself (the one-hot ``e_k``), so ``cos(varphi_v, e_k) = varphi_v[k] / ||varphi_v||``.

TEMA's masks (Fig. 3(b)): in decoder self-attention the ``n`` topic positions attend to the topic
positions only (all of them: a set, with no position embedding), summary tokens attend to every
topic and causally to the summary; in cross-attention every position attends to the document. So
topic positions never change with the summary tokens, and the prefix is computed once (the first
incremental step) and never emitted (its outputs are removed before the output projection).

With information selection (``--gate``, features/information_selection.py) the cross-attention SIA
head reads the decoder's view of the document: its value rows are scaled by the gates as the other
heads' keys and values are (IS eq. 6; with ``--gate-per-head``, by the mean of the head gates, since
the extra head has no gate of its own), and positions that Algorithm 1 removed at inference are
removed from its topic rows too, so pruning and masking give the same output.

**A document without topic evidence** (theta all zero, e.g. a ``theta.npy`` row of a document with
only stop words) takes the topic model's prior proportions
(:meth:`fairseq_sum_plugins.features.topic_assistant.topic_model.PoissonFactorAnalysis.theta_prior`:
the corpus mean of the fit, or uniform), for TEMA and DRM alike, and TEMA breaks ties by the lower
topic id, so its prefix is deterministic and nothing is NaN.

**Phi in checkpoints.** ``phi_topics`` / ``phi_unit`` are not saved with the weights (they come from
``topic_model.npz``), but ``build_topic_assistant`` records the sha256 of Phi (and the file) in the
model args, ``ta_phi_sha256`` / ``ta_phi_file``, which fairseq saves in the checkpoint's cfg. When a
model is rebuilt from a checkpoint (fairseq-generate, -interactive, the hub) with a topic model
whose Phi differs (refit, another data dir with the same dictionary and K), that is an error naming
both files and checksums; a checkpoint whose args hold no checksum loads with a warning. (Resuming
fairseq-train builds the model from the command line's args: not checked there.)

**theta tied to Phi.** This module registers the side data ``theta`` with the task's neutral
registry (:mod:`fairseq_sum_plugins.side_data`): the raw-text provider (:func:`theta_provider`), the
command that writes ``DATA/{split}.theta.npy`` (named when it is missing), that only a model with
the Topic Assistant reads it (``--side-data theta`` on another model is an error saying so), and a
check of every loaded theta file against the Phi of the model built on the task: its record
(``{split}.theta.json``,
:func:`fairseq_sum_plugins.features.topic_assistant.topic_model.check_theta_file`) must name this
very file and this Phi, at train, generate (also with ``--model-overrides "{'ta_topic_model':
PATH}"``) and validation alike.
"""
import logging
import math
import os
import weakref
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch
import torch.nn as nn
from fairseq import utils
from fairseq.incremental_decoding_utils import with_incremental_state

from ...flags import bool_flag, renamed_flag
from ...side_data import register_side_data
from .topic_model import FIT_COMMAND, PoissonFactorAnalysis, check_theta_file
from ...modules.features import MODEL, FeatureSpec, Inspection, flags_set, register_feature

logger = logging.getLogger(__name__)


def add_topic_args(parser):
    # fmt: off
    parser.add_argument("--ta-topic-model", "--topic-model", dest="ta_topic_model", type=str,
                        metavar="PATH",
                        help="PFA topic model (default DATA/topic_model.npz, written by "
                             f"`{FIT_COMMAND}`)")
    parser.add_argument("--ta-sia", type=bool_flag, metavar="BOOL",
                        help="Topic Assistant SIA: an extra topic-similarity head in every "
                             "attention block (TA eq. 5-7)")
    parser.add_argument("--ta-tema", type=bool_flag, metavar="BOOL",
                        help="Topic Assistant TEMA: top-n topic embeddings as a masked decoder "
                             "prefix (TA eq. 8)")
    parser.add_argument("--ta-drm", type=bool_flag, metavar="BOOL",
                        help="Topic Assistant DRM: theta^T W_b added to every decoder "
                             "cross-attention output (TA eq. 9)")
    parser.add_argument("--ta-topics-n", type=int, metavar="N", help="TEMA: number of top topics "
                                                                     "(paper: 5)")
    # fmt: on


def topic_defaults(args, on=False):
    renamed_flag(args, "ta_topic_model", "topic_model")  # earlier attribute name (old checkpoints)
    args.ta_topic_model = getattr(args, "ta_topic_model", "")
    args.ta_sia = getattr(args, "ta_sia", on)
    args.ta_tema = getattr(args, "ta_tema", on)
    args.ta_drm = getattr(args, "ta_drm", on)
    args.ta_topics_n = getattr(args, "ta_topics_n", 5)


def ta_enabled(args):
    return bool(getattr(args, "ta_sia", False) or getattr(args, "ta_tema", False)
                or getattr(args, "ta_drm", False))


def topic_model_path(args, task):
    path = getattr(args, "ta_topic_model", "") or ""
    if path:
        return path
    data = getattr(getattr(task, "cfg", None), "data", None) or getattr(
        getattr(task, "args", None), "data", None)
    if not data:
        raise ValueError("--ta-* needs --ta-topic-model PATH (no task data directory to look in)")
    return os.path.join(utils.split_paths(data)[0], "topic_model.npz")


def load_topic_model(path, dictionary):
    return PoissonFactorAnalysis.load(path, dictionary)  # checks the dictionary checksum


def flush_subnormal(t):
    """``t`` with its subnormal entries (``0 < |x| <`` the dtype's smallest normal, 1.2e-38 in
    float32) set to 0.

    On x86 CPUs a product with a subnormal operand takes a microcode assist: SIA's ``(B, S, K) x
    (B, K, S)`` product on benchmarks/bench_train.py's random Phi (Dirichlet(0.05) topics; 0.6% of
    the unit rows' entries subnormal) took 28.4 ms instead of 2.6 ms, and TEMA's ``Phi^T E`` and its
    gradient 3x as long (benchmarks/README.md). The PFA fits of ``preprocess.topic_model`` hold
    none (their prior keeps every entry above ~1e-6), but a Phi from elsewhere may. What is dropped
    is below float32's resolution of any sum it enters beside a normal number: on that Phi, SIA's
    products and the topic embeddings came out bit for bit the same (tests/test_topic_assistant.py).
    """
    tiny = torch.finfo(t.dtype).tiny
    return t.masked_fill(t.abs() < tiny, 0.0)


class TopicAssistant(nn.Module):
    """Fixed topic buffers (from the PFA, not trained) and what every layer shares per forward."""

    def __init__(self, phi, n_topics=5, path="", prior=None, sia=True, tema=True, drm=True,
                 head_dims=(64, 64)):
        super().__init__()
        self.sia, self.tema, self.drm = sia, tema, drm  # which of the three modules the model has
        # SIA's d_k (TA eq. 6) in the encoder and the decoder: d_m / H of each stack
        self.encoder_head_dim, self.decoder_head_dim = head_dims
        phi = torch.as_tensor(np.asarray(phi, dtype=np.float32))
        self.num_topics = phi.size(1)
        self.n = min(n_topics, self.num_topics)
        self.path = path
        # theta of a document without topic evidence (the topic model's theta_prior; default
        # uniform)
        prior = torch.full((self.num_topics,), 1.0 / self.num_topics) if prior is None else \
            torch.as_tensor(np.asarray(prior, dtype=np.float32))
        if prior.shape != (self.num_topics, ) or not bool(
                torch.isfinite(prior).all()) or not prior.sum() > 0:
            raise ValueError(f"the prior topic proportions must be {self.num_topics} finite values "
                             "with a positive sum")
        self.register_buffer("theta_prior", prior / prior.sum(), persistent=False)
        self.set_phi(phi)

    def set_phi(self, phi, flush=True):
        """Phi's two buffers from ``phi`` ``(V, K)``; ``flush``: without subnormal entries
        (:func:`flush_subnormal`; False only to measure what that saves, bench_train.py
        ``--ablate flush_phi``)."""
        keep = flush_subnormal if flush else (lambda t: t)
        phi = torch.as_tensor(np.asarray(phi, dtype=np.float32)).to(self.theta_prior.device)
        # TA eq. 8: topics (columns) as distributions over tokens, kept as rows (K, V) so that the
        # selected topics are a gather of contiguous rows (a column gather of (V, K) reads across
        # every row: 17.8 vs 0.4 ms for 40 topics of a 32k dictionary)
        topics = (phi / phi.sum(0, keepdim=True).clamp_min(1e-30)).t().contiguous()
        self.register_buffer("phi_topics", keep(topics), persistent=False)
        # TA eq. 5: rows as distributions over topics; L2-normalised for the cosine, zero rows stay
        # zero
        rows = phi / phi.sum(1, keepdim=True).clamp_min(1e-30)
        unit = rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-30)
        self.register_buffer("phi_unit", keep(unit), persistent=False)

    # --- the model-level feature interface (modules/features.py) ---

    def encoder_inputs(self, src_tokens, padding_mask):
        """SIA's probabilities of the encoder blocks (TA eq. 6), shared by the layers."""
        if not self.sia:
            return {}
        rows = self.rows(src_tokens)
        return {"sia_probs": self.sia_probs(rows, rows, self.encoder_head_dim, None, padding_mask)}

    def decoder_call(self, prev_tokens, new_len, view, incremental):
        """:meth:`decoder_inputs` for an
        :class:`~fairseq_sum_plugins.modules.encoder_out.EncoderOut` ``view``."""
        return self.decoder_inputs(prev_tokens, new_len, view.src_tokens, view.padding_mask,
                                   self.decoder_head_dim, theta=view.side.get("theta"),
                                   kept_index=view.kept_index, incremental=incremental)

    def prefix_length(self):
        """TEMA's prefix: the top ``n`` topics."""
        return self.n if self.tema else 0

    # --- SIA (TA eq. 6) ---

    @property
    def phi(self):
        """Phi with topics as distributions over tokens, ``(V, K)`` (a view of ``phi_topics``)."""
        return self.phi_topics.t()

    def rows(self, tokens):
        """``varphi_v`` (TA eq. 5, L2-unit) of each token: ``(..., K)`` (an embedding lookup, the
        same values as ``phi_unit[tokens]`` without advanced indexing's cost)."""
        return nn.functional.embedding(tokens, self.phi_unit)

    @staticmethod
    def sia_probs(q_rows, k_rows, d_k, bias=None, key_padding_mask=None):
        """``softmax(cos / sqrt(d_k))`` ``(B, T, S)``; ``bias`` (T, S) additive mask, masked rows ->
        0."""
        logits = (q_rows @ k_rows.transpose(1, 2)) / math.sqrt(d_k)
        if bias is not None:
            logits = logits + bias
        if key_padding_mask is not None:
            logits = logits.masked_fill(key_padding_mask[:, None, :].bool(), float("-inf"))
        return logits.softmax(-1).nan_to_num(0.0)

    # --- TEMA ---

    def top_topics(self, theta):
        """The ``n`` largest proportions ``(B, n)``, ties broken by the lower topic id
        (deterministic)."""
        return theta.sort(dim=-1, descending=True, stable=True).indices[:, : self.n]

    def topic_embeddings(self, topic_ids, embed_weight):
        """``E_topic[k] = Phi[:, k]^T E_token`` for the selected topics ``(B, n) -> (B, n, C)``
        (TA eq. 8)."""
        cols = nn.functional.embedding(topic_ids, self.phi_topics)  # (B, n, V)
        return cols.to(embed_weight.dtype) @ embed_weight

    @staticmethod
    def prefix_mask(n, new_len, past_len, device, dtype=torch.float):
        """Additive self-attention mask (Fig. 3(b), left) for ``new_len`` queries at positions
        ``past_len..`` over keys ``0..past_len+new_len`` (positions < n are topics)."""
        total = past_len + new_len
        q = torch.arange(past_len, total, device=device)[:, None]
        k = torch.arange(total, device=device)[None, :]
        allowed = torch.where(q < n, k < n, (k < n) | (k <= q))
        return torch.zeros(new_len, total, device=device,
                           dtype=dtype).masked_fill(~allowed, float("-inf"))

    def theta(self, theta):
        """The document proportions ``(B, K)`` of side data ``theta`` (checked); the prior where a
        document has no topic evidence."""
        if theta is None:
            raise ValueError(
                "Topic Assistant TEMA/DRM need the document's topic proportions: run with "
                f"--side-data theta (DATA/{{split}}.theta.npy, written by `{FIT_COMMAND}`)")
        if theta.dim() != 2 or theta.size(1) != self.num_topics:
            raise ValueError(f"side data theta has shape {tuple(theta.shape)}, the topic model has "
                             f"{self.num_topics} topics: (B, {self.num_topics}) expected")
        theta = theta.float()
        # no topic evidence (all zero; or not finite): the prior proportions
        empty = ~(theta.sum(-1, keepdim=True) > 0) | ~torch.isfinite(theta).all(-1, keepdim=True)
        if bool(empty.any()):
            theta = torch.where(empty, self.theta_prior.to(theta.device), theta)
        return theta

    def decoder_inputs(self, prev_tokens, new_len, src_tokens, src_padding_mask, head_dim,
                       theta=None, kept_index=None, incremental=False):
        """What the decoder layers share for one decoder call.

        Args:
            prev_tokens: every summary token so far ``(B, T)``; new_len: the positions this call
                embeds (``T``, or 1 in incremental decoding); src_tokens: the source ``(B, S)``;
            src_padding_mask: of the encoder output ``(B, S')``; head_dim: ``d_k`` of SIA
            (TA eq. 6); theta: side data ``(B, K)`` (TEMA, DRM); kept_index: the source position of
            each
                encoder-output row after information selection removed some (``(B, S')``), or None.
        Returns :class:`TopicInputs`. In incremental decoding the prefix goes in with the first step
        (cached like any position); the top topics come from ``theta``, which beam search reorders.
        """
        first_step = not incremental or prev_tokens.size(1) == new_len
        theta = self.theta(theta) if (self.tema or self.drm) else None
        ids = self.top_topics(theta) if self.tema else None
        n = ids.size(1) if ids is not None and first_step else 0
        out = TopicInputs(topic_ids=ids if n else None, theta=theta if self.drm else None,
                          embed=self.topic_embeddings)
        if self.tema and first_step:  # Fig. 3(b); later incremental steps see every cached position
            out.self_mask = self.prefix_mask(n, new_len + n, 0, prev_tokens.device)
        if self.sia:
            k_rows = self.rows(prev_tokens)
            if self.tema:  # a topic position is represented by its topic, e_k
                k_rows = torch.cat(
                    [nn.functional.one_hot(ids, self.num_topics).to(k_rows.dtype), k_rows], dim=1)
            q_rows = k_rows[:, -(new_len + n):]
            bias = out.self_mask
            if bias is None and not incremental:  # causal
                t = k_rows.size(1)
                future = torch.ones(t, t, dtype=torch.bool, device=k_rows.device).triu(1)
                bias = torch.zeros(t, t, device=k_rows.device).masked_fill(future, float("-inf"))
            out.self_probs = self.sia_probs(q_rows, k_rows, head_dim, bias)
            src_rows = self.rows(src_tokens)
            if kept_index is not None:  # a feature removed positions (e.g. IS Algorithm 1)
                src_rows = src_rows.gather(
                    1, kept_index.unsqueeze(-1).expand(-1, -1, src_rows.size(-1)))
            out.cross_probs = self.sia_probs(q_rows, src_rows, head_dim, None, src_padding_mask)
        return out


@dataclass
class TopicInputs:
    """One decoder call's Topic Assistant inputs (:meth:`TopicAssistant.decoder_inputs`).

    ``topic_ids`` ``(B, n)``: the TEMA prefix to embed (TA eq. 8) before the new positions, or None;
    ``self_mask``: the additive self-attention mask of Fig. 3(b) over the prefix and the new
    positions, replacing the causal mask (None: causal, or a later incremental step); ``self_probs``
    / ``cross_probs``: SIA's attention (TA eq. 6) of the decoder self and cross blocks; ``theta``:
    DRM's proportions (TA eq. 9).
    """

    topic_ids: Optional[torch.Tensor] = None
    self_mask: Optional[torch.Tensor] = None
    self_probs: Optional[torch.Tensor] = None
    cross_probs: Optional[torch.Tensor] = None
    theta: Optional[torch.Tensor] = None
    embed: Optional[Callable] = None  # TopicAssistant.topic_embeddings

    @property
    def n_prefix(self):
        return 0 if self.topic_ids is None else self.topic_ids.size(1)

    def prefix(self, embed_weight):
        """TEMA's prefix ``(B, n, C)``: the topic embeddings (TA eq. 8) of ``topic_ids``."""
        return self.embed(self.topic_ids, embed_weight)

    def site_inputs(self, site):
        """The per-forward inputs of the decoder's ``site``
        (:mod:`fairseq_sum_plugins.modules.features`): SIA's probabilities, DRM's theta."""
        if site == "decoder_self":
            return {"self_probs": self.self_probs}
        return {"cross_probs": self.cross_probs, "theta": self.theta}


@with_incremental_state
class SIAHead(nn.Module):
    """The (h+1)-th head of TA eq. 7: ``(A_{h+1} X W^v_add) W^a_add``, added to the block's
    output."""

    def __init__(self, embed_dim, head_dim, static_kv=False, probs="sia_probs"):
        super().__init__()
        self.v_add = nn.Linear(embed_dim, head_dim)
        self.w_add = nn.Linear(head_dim, embed_dim, bias=False)
        self.static_kv = static_kv
        self.probs = probs  # the per-forward input holding A_{h+1} of this block (TA eq. 6)
        nn.init.xavier_uniform_(self.v_add.weight, gain=1 / math.sqrt(2))
        nn.init.zeros_(self.v_add.bias)
        nn.init.xavier_uniform_(self.w_add.weight)

    def forward(self, kv, probs, incremental_state=None, v_scale=None):
        """``v_scale`` ``(B, S, 1)``: information-selection gates of the encoder rows (cross
        head)."""
        saved = (self.get_incremental_state(incremental_state, "sia")
                 if incremental_state is not None else None)
        if saved and self.static_kv:
            v = saved["v"]
        else:
            v = self.v_add(kv)
            if v_scale is not None:
                v = v * v_scale.to(v.dtype)
            if saved and "v" in saved:
                v = torch.cat([saved["v"], v], dim=1)
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "sia", {"v": v})
        return self.w_add(probs.type_as(v) @ v)

    def head(self, query, kv, inputs):
        """The feature interface (:mod:`fairseq_sum_plugins.modules.features`): TA eq. 7's extra
        head over ``kv``; the cross head's value rows scaled by ``sia_v_scale``
        (:func:`_sia_cross_inputs`)."""
        v_scale = inputs["sia_v_scale"] if self.static_kv else None
        return self(kv, inputs[self.probs], inputs["incremental_state"], v_scale=v_scale)

    def reorder_incremental_state(self, incremental_state, new_order):
        """The cached value rows follow beam search's ``new_order``; the cross head's depend on
        the source only and are left as they are while the batch keeps its size (beam search
        reorders among a source's beams, whose rows are equal), as the attention's keys are."""
        saved = self.get_incremental_state(incremental_state, "sia")
        if saved and self.static_kv and saved["v"].size(0) == new_order.size(0):
            return incremental_state
        if saved:
            self.set_incremental_state(incremental_state, "sia",
                                       {"v": saved["v"].index_select(0, new_order)})
        return incremental_state


def add_head(result, head_out):
    """``(out, attn) -> (out + head_out, attn)`` (TA eq. 7: the extra head's contribution)."""
    out, attn = result
    return out + head_out, attn


class DRM(nn.Module):
    """``z^(l) = theta^T W_b^(l)`` (TA eq. 9), broadcast over positions."""

    def __init__(self, num_topics, embed_dim):
        super().__init__()
        self.w_b = nn.Linear(num_topics, embed_dim, bias=False)
        nn.init.normal_(self.w_b.weight, std=0.02)

    def forward(self, theta):
        return self.w_b(theta.to(self.w_b.weight.dtype))[:, None, :]

    def head(self, query, kv, inputs):
        """The feature interface (:mod:`fairseq_sum_plugins.modules.features`): TA eq. 9's bias on
        the cross-attention output."""
        return self(inputs["theta"])


# SIA's extra head in every attention block (TA eq. 5-7), DRM on every cross-attention output
# (TA eq. 9); TEMA's prefix and the per-forward inputs come from TopicAssistant (built by the
# models)
_SIA_PROBS = {"encoder_self": "sia_probs", "decoder_self": "self_probs",
              "decoder_cross": "cross_probs"}


def _sia_cross_inputs(view, values):
    """The cross head has no gate of its own: where the features before it scale the
    cross-attention's key and value rows (``kv_scale`` ``(B, G, S, 1)``, e.g. the information gates,
    IS eq. 6), its value rows are scaled by their mean over the ``G`` heads, ``sia_v_scale`` ``(B,
    S, 1)``; computed once per forward from the standard input."""
    kv_scale = values.get("kv_scale")
    return {} if kv_scale is None else {"sia_v_scale": kv_scale.mean(1)}


def _build_sia(args, site, dims):
    if not getattr(args, "ta_sia", False):
        return None
    return SIAHead(dims.embed_dim, dims.embed_dim // dims.heads, static_kv=site == "decoder_cross",
                   probs=_SIA_PROBS[site])


def watch_topics(model, probe):
    """Inspection: ``topics``, the document's largest topic proportions ``[[topic (0-based),
    theta_k]]`` (the ``n`` TEMA reads, TA eq. 8; 5 without TEMA), from its side data ``theta``
    as the model reads it (the prior where the document has no topic evidence); with TEMA,
    ``topic_share``: per decoder layer and output token, the share of the layer's self-attention
    (head-averaged) on the topic positions (inspection/topics.py's measure)."""
    topic = getattr(model.decoder, "topic", None)
    if topic is None or not (topic.tema or topic.drm):
        return
    kept = {}
    for i, layer in enumerate(model.decoder.layers if topic.tema else []):
        probe.pre_hook(layer.self_attn,
                       lambda mod, args, kwargs: (args, dict(kwargs, need_weights=True)))
        probe.hook(layer.self_attn, lambda mod, inputs, out, i=i: kept.__setitem__(i, out[1]))

    def read(run):
        from ...modules.encoder_out import EncoderOut

        theta = topic.theta(EncoderOut.of(run.encoder_out).side.get("theta"))[0]
        top = theta.sort(descending=True, stable=True)
        n = topic.n if topic.tema else min(5, theta.numel())
        out = {"topics": [[int(k), float(v)] for k, v in zip(top.indices[:n], top.values[:n])]}
        if kept:
            out["topic_share"] = [kept[i][0, topic.n:, :topic.n].sum(-1).tolist()
                                  for i in sorted(kept)]
        return out

    probe.read(read)


register_feature(
    FeatureSpec(
        "Topic Assistant (--ta-sia, --ta-tema, --ta-drm)", {MODEL: "topic"}, stage="model",
        add_args=add_topic_args, defaults=topic_defaults,
        on=lambda args: flags_set(args, "ta_sia", "ta_tema", "ta_drm"),
        build_model_feature=lambda args, task, src_dict, tgt_dict: build_topic_assistant(
            args, task, src_dict, tgt_dict),
        inspect=Inspection({"topics": "document", "topic_share": "output"}, watch_topics)))
register_feature(
    FeatureSpec(
        "Topic Assistant SIA (--ta-sia)", {
            "encoder_self": "sia",
            "decoder_self": "self_sia",
            "decoder_cross": "cross_sia"
        }, _build_sia, stage="head", on=lambda args: flags_set(args, "ta_sia"),
        cross_inputs=_sia_cross_inputs, inputs={
            "encoder_self": ("sia_probs", ),
            "decoder_self": ("self_probs", ),
            "decoder_cross": ("cross_probs", "sia_v_scale")
        }))
register_feature(
    FeatureSpec(
        "Topic Assistant DRM (--ta-drm)", {"decoder_cross": "drm"},
        lambda args, site, dims: DRM(args.ta_num_topics, dims.embed_dim)
        if getattr(args, "ta_drm", False) else None, stage="head",
        inputs={"decoder_cross": ("theta", )}, on=lambda args: flags_set(args, "ta_drm")))


def check_phi(args, model, path):
    """Records Phi's sha256 (and the file) in ``args`` (so in the checkpoint's cfg); when ``args``
    already hold one (a model rebuilt from a checkpoint), ``path`` must have that Phi."""
    sha = model.phi_sha256
    stored = getattr(args, "ta_phi_sha256", None)
    if stored:
        if stored != sha:
            trained = getattr(args, "ta_phi_file", None) or "?"
            raise ValueError(
                f"Topic Assistant: the checkpoint was trained with the topic model {trained} "
                f"(Phi sha256 {stored[:16]}), but {path} has a different Phi "
                f"(sha256 {sha[:16]}): a refit topic model (same dictionary and K) does not fit "
                "the trained weights. Use the topic model of training (--model-overrides "
                "\"{'ta_topic_model': 'PATH'}\" or DATA/topic_model.npz of the training data)"
            )
        return
    if getattr(args, "ta_num_topics", None) is not None:  # set at build time: args of a checkpoint
        logger.warning(f"Topic Assistant: the checkpoint records no Phi checksum: "
                       f"cannot check that {path} is the topic model it was trained with")
    args.ta_phi_sha256 = sha
    args.ta_phi_file = os.path.abspath(path)


# task -> (path, Phi sha256) of the topic model of the last Topic Assistant model built on it (the
# raw-text theta provider and the theta file check read it); kept here: no feature state on the task
_TOPIC_MODEL_OF_TASK = weakref.WeakKeyDictionary()


def build_topic_assistant(args, task, dictionary, tgt_dictionary=None):
    """Loads the topic model for ``--ta-*`` (dictionary and, for a checkpoint, Phi checksum
    checked), records K and Phi's checksum in ``args`` and, for the raw-text theta provider, the
    path used for ``task`` (:data:`_TOPIC_MODEL_OF_TASK`)."""
    if not ta_enabled(args):
        return None
    path = topic_model_path(args, task)
    model = load_topic_model(path, dictionary)
    if (tgt_dictionary is not None and tgt_dictionary is not dictionary
            and tgt_dictionary != dictionary):
        raise ValueError("the Topic Assistant needs a joined dictionary (one Phi row per source "
                         "and target token)")
    check_phi(args, model, path)
    args.ta_num_topics = model.num_topics
    if task is not None:
        previous = _TOPIC_MODEL_OF_TASK.get(task, (None, None))[0]
        if previous and os.path.abspath(previous) != os.path.abspath(path):
            logger.warning(
                f"Topic Assistant: models with different topic models ({previous}, {path}); "
                f"raw-text theta uses {path}")
        _TOPIC_MODEL_OF_TASK[task] = (path, model.phi_sha256)
    head_dims = (args.encoder_embed_dim // args.encoder_attention_heads,
                 args.decoder_embed_dim // args.decoder_attention_heads)
    return TopicAssistant(model.phi, args.ta_topics_n, path, prior=model.theta_prior(),
                          sia=bool(args.ta_sia), tema=bool(args.ta_tema), drm=bool(args.ta_drm),
                          head_dims=head_dims)


# --- side data for raw text (fairseq-interactive, hub) -------------------------------------------

_CACHE = {}


def theta_provider(task, src_tokens):
    """theta of raw-text documents: PFA inference with the model's topic model.

    That is the topic model the Topic Assistant model was built with (its ``--ta-topic-model``,
    checked against the checkpoint's Phi checksum, recorded for the task by
    :func:`build_topic_assistant`), else ``DATA/topic_model.npz``. ``src_tokens`` are dictionary
    ids, whatever the BPE (sentencepiece pieces, or GPT-2 ids for BART with ``--bpe gpt2``), and the
    counted symbols are the ``keep`` mask stored at fit time (decided on the decoded GPT-2 text for
    a BART dictionary), so raw text gets the bag of words the binarized splits got (specials such as
    BART's ``<s>`` are never counted). fairseq-interactive encodes the whole text (no truncation),
    so its theta counts the whole document, as ``topic_model --full-src`` does for the binarized
    splits; a document with no countable token gets the prior proportions. (BART's hub ``encode``
    cuts the text at ``max_positions - 2`` tokens before the task sees it: for theta over a longer
    document call ``task.provide_side_data("theta", tokens)`` with its whole token ids.)"""
    path = _TOPIC_MODEL_OF_TASK.get(task, (None, None))[0]
    if not path:
        path = os.path.join(utils.split_paths(task.cfg.data)[0], "topic_model.npz")
    key = (path, os.path.getmtime(path) if os.path.exists(path) else None)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load_topic_model(path, task.source_dictionary)
    return _CACHE[key].infer_tokens(
        [t.numpy() if torch.is_tensor(t) else np.asarray(t) for t in src_tokens], empty="prior")


def check_theta(task, split, path):
    """A loaded ``DATA/{split}.theta.npy`` must have been inferred with the Phi of the Topic
    Assistant model built on ``task`` (its record says so); nothing to check without such a
    model."""
    topic_model, sha = _TOPIC_MODEL_OF_TASK.get(task, (None, None))
    if sha:
        check_theta_file(path, sha, topic_model, split)


def reads_theta(model):
    return any(isinstance(m, TopicAssistant) for m in model.modules())


register_side_data(
    "theta", provider=theta_provider, check=check_theta, used_by=reads_theta,
    feature="the Topic Assistant (--ta-sia/--ta-tema/--ta-drm, e.g. --arch transformer_ta_base or "
            "bart_base_ta)",
    hint=f"written with its record {{split}}.theta.json by `{FIT_COMMAND}` (or `python -m "
         "preprocess.topic_model infer DATA --splits SPLIT` for a fitted topic model)",
)
