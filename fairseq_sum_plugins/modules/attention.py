"""Multi-head attention on ``torch.nn.functional.scaled_dot_product_attention``.

Batch-first (``B x T x C``) throughout, so no transposes are needed around the fused kernel.
The paper features hook in where their equations sit:

* ``attn_bias``: an additive logit bias ``(B, H, T, S)`` added to ``QK^T / sqrt(d_k)`` before the
  softmax (e.g. a focal bias);
* incremental decoding keeps keys/values in fairseq's incremental state and reorders them for beam
  search; cross-attention keys/values are computed once per source (``static_kv``).

``need_weights=True`` runs the explicit (non-fused) path and returns the head-averaged attention
probabilities; both paths compute the same function (tested).
"""
import math
from typing import Callable, Dict, Optional, Protocol, runtime_checkable

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor

from .dropout import Drops, dropout



@runtime_checkable
class FactoredGate(Protocol):
    """A probability gate that ``prob_gate_fn`` returns in factored form.

    ``gate()`` gives the ``(B, H, T, S)`` gate; ``attend(q, k, v, mask, dropout_p, training)``
    gives ``(gate * softmax(q k^T / sqrt(d_k) + mask)) v`` ``(B, H, T, d_k)`` directly.
    A gate that can also be applied to a source's beams as one block of queries (cross-attention
    keys shared by the beams, :meth:`MultiheadAttention._beam_shared_attention`) gives
    ``per_source(blocks)``: the same gate with its per-query factors passed through ``blocks``;
    the ``prob_gate_fn`` of such gates says so with an attribute ``per_source = True``.
    """

    def gate(self) -> Tensor: ...

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], dropout_p: float,
               training: bool, scale: Optional[float] = None) -> Tensor:        ...


@runtime_checkable
class FactoredBias(Protocol):
    """An additive logit bias that ``attn_bias_fn`` returns in factored form (ETADS's focal bias,
    :class:`~fairseq_sum_plugins.features.etads_focus.FocalScores`).

    ``bias()`` gives the ``(B, H, T, S)`` bias; ``attend(q, k, v, mask, scale)`` gives
    ``softmax(q k^T * scale + mask + bias) v`` ``(B, H, T, d_k)`` directly, for float32 on CPU
    where the bias needs a gradient (:attr:`MultiheadAttention.fused_bias_path`)."""

    def bias(self) -> Tensor: ...

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor],
               scale: float) -> Tensor: ...


def materialised(bias):
    """A score bias as a tensor: a :class:`FactoredBias`'s ``bias()``, else ``bias`` itself."""
    return bias.bias() if isinstance(bias, FactoredBias) else bias


def block_of(t: Optional[Tensor], rows: slice, heads: slice = slice(None)) -> Optional[Tensor]:
    """``t`` ``(B|1, H|1, ...)`` (a mask, positions) for a block of batch rows and heads of
    ``(B, H, T, S)`` scores: a size-1 dimension broadcasts, so it is kept whole; no mask (None)
    stays None."""
    if t is None:
        return None
    return t[rows if t.size(0) > 1 else slice(None), heads if t.size(1) > 1 else slice(None)]


class InputBuffer:
    """The module's dict in fairseq's incremental state, under the key ``buffer_name``
    (for modules decorated with ``with_incremental_state``)."""

    buffer_name = "attn_state"

    def _get_input_buffer(self, incremental_state):
        return self.get_incremental_state(incremental_state, self.buffer_name) or {}

    def _set_input_buffer(self, incremental_state, buffer):
        return self.set_incremental_state(incremental_state, self.buffer_name, buffer)


def masked_softmax(logits: Tensor, masked: bool) -> Tensor:
    """``softmax(logits, -1)``, with 0 (and a 0 gradient) for a row whose every key is masked
    (``-inf``), as SDPA gives; ``masked``: whether any can be. Plain softmax first, and only when a
    row's first probability is NaN, ``_safe_softmax`` for all (the same values elsewhere): SDPA's
    check of every row costs an equality test, a reduction and a select over the logits. (A
    ``nan_to_num`` after softmax gives the zeros but not their gradient: the softmax backward of a
    NaN row is NaN.)"""
    probs = torch.softmax(logits, -1)
    if masked and bool(probs[..., 0].isnan().any()):
        probs = torch.ops.aten._safe_softmax(logits, -1)
    return probs


@with_incremental_state
class MultiheadAttention(Drops, InputBuffer, nn.Module):
    """Self-attention (fused QKV projection) or encoder-decoder attention (fused KV projection)."""

    # one-query steps through _one_query_attention instead of SDPA: off, slower than SDPA in
    # generation (measured: benchmarks/results/HISTORY.md)
    one_query_path = False
    share_beam_keys = True  # cross-attention keys/values once per source in a beam search
    # training with attention dropout on CPU (fp32), where SDPA has no fused kernel and runs its
    # math path: the same products, softmax and dropout mask without that path's extra passes
    # (_matmul_attention; SDPA stays the reference, tests/test_speed_paths.py)
    matmul_train_path = True
    # a FactoredBias (ETADS's focal bias) attends by its own attend() where the bias needs a
    # gradient on CPU in float32, without dropout, gate or weights; off: the bias is materialised
    # and the attention runs as for any bias (the reference; tests/test_etads.py)
    fused_bias_path = True
    # methods left out of compiled graphs under --compile (modules/compiled.py): data-dependent,
    # an int read from the rows' values (inductor's code for it named an undefined size)
    untraced = ("_beam_group_size",)

    def __init__(self, embed_dim, num_heads, dropout=0.0, self_attention=True, bias=True,
                 scaling=None, inner_dim=None):
        """``inner_dim``: ``H * d_k``, the width of the projected queries/keys/values (``embed_dim``
        by default; T5's ``num_heads * d_kv`` may differ from ``d_model``, e.g. t5-3b)."""
        super().__init__()
        inner_dim = embed_dim if inner_dim is None else inner_dim
        if inner_dim % num_heads != 0:
            raise ValueError(f"attention dim {inner_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = inner_dim // num_heads
        # logit scale: 1/sqrt(d_k), or 1.0 for the T5 cell (its init absorbs the scaling)
        self.scaling = 1 / math.sqrt(self.head_dim) if scaling is None else scaling
        self.dropout = dropout
        self.self_attention = self_attention
        if self_attention:
            # W_q, W_k, W_v (TPT eq. 1)
            self.in_proj = nn.Linear(embed_dim, 3 * inner_dim, bias=bias)
        else:
            self.q_proj = nn.Linear(embed_dim, inner_dim, bias=bias)
            self.kv_proj = nn.Linear(embed_dim, 2 * inner_dim, bias=bias)
        self.out_proj = nn.Linear(inner_dim, embed_dim, bias=bias)  # W_o (TPT eq. 3)
        self.reset_parameters()

    def reset_parameters(self):
        # Same scheme as fairseq's MultiheadAttention: xavier with gain 1/sqrt(2) on the fused
        # projections (equivalent to separate q/k/v matrices), plain xavier on the output.
        for lin in (self.in_proj,) if self.self_attention else (self.q_proj, self.kv_proj):
            nn.init.xavier_uniform_(lin.weight, gain=1 / math.sqrt(2))
        nn.init.xavier_uniform_(self.out_proj.weight)
        for lin in self.modules():
            if isinstance(lin, nn.Linear) and lin.bias is not None:
                nn.init.zeros_(lin.bias)

    def _heads(self, x):  # (B, T, C) -> (B, H, T, d_k)
        return x.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

    def forward(
        self,
        query: Tensor,
        key_value: Optional[Tensor] = None,
        key_padding_mask: Optional[Tensor] = None,
        causal: bool = False,
        attn_bias: Optional[Tensor] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        need_weights: bool = False,
        attn_bias_fn: Optional[Callable[[Tensor, Tensor], Tensor]] = None,
        prob_gate_fn: Optional[Callable[[Tensor, Tensor], Tensor]] = None,
        kv_scale: Optional[Tensor] = None,
    ):
        """
        Args:
            query: ``(B, T, C)``. key_value: ``(B, S, C)`` for encoder-decoder attention (ignored
            for self-attention). key_padding_mask: ``(B, S)``, True at padding keys. causal: mask
            future keys (decoder self-attention, full-sequence mode). attn_bias: additive logit
            bias, broadcastable to ``(B, H, T, S)``. incremental_state: fairseq incremental state;
            ``query`` then holds the new step(s). attn_bias_fn: ``f(q, k) -> bias`` computed from
            the projected queries ``(B, H, T, d_k)`` and
                keys ``(B, H, S, d_k)``, added to ``attn_bias`` (the features' score biases,
                :func:`.features.score_bias_fn`, e.g. ETADS's focal bias,
                :mod:`fairseq_sum_plugins.features.etads_focus`); it may return a
                :class:`FactoredBias`, whose ``attend`` then computes the attention where
                :attr:`fused_bias_path` allows.
            prob_gate_fn: ``g(q, k) -> gate (B, H, T, S)`` multiplying the attention probabilities
                (e.g. ETADS saliency, :mod:`fairseq_sum_plugins.features.etads_saliency`); runs the
                explicit path. It may instead return a :class:`FactoredGate`: then, unless weights
                are requested or the attention is causal, its ``attend`` computes the gated
                attention (e.g. without keeping ``(B, H, T, S)`` tensors for backward), else its
                ``gate()`` is materialised.
            kv_scale: encoder-decoder attention only, broadcastable to ``(B, H, S, 1)``: scales the
                projected key and value rows (IS eq. 6,
                :mod:`fairseq_sum_plugins.features.information_selection`); cached scaled, like the
                keys/values themselves.
        Returns:
            ``(output (B, T, C), attention (B, T, S) averaged over heads or None)``.
        """
        # a gate applies to shared keys where its prob_gate_fn says so (ETADS's saliency gate)
        share = not (attn_bias_fn or need_weights or self.training) and (
            prob_gate_fn is None or getattr(prob_gate_fn, "per_source", False))
        q, k, v = self._project(query, key_value, incremental_state, kv_scale, key_padding_mask,
                                share)
        if incremental_state is not None and self.self_attention:
            causal = False  # the new step may attend to everything cached so far
        if k.size(0) != q.size(0):  # cross-attention keys/values shared by each source's beams
            if share:
                gate = prob_gate_fn(q, k) if prob_gate_fn is not None else None
                return self._beam_shared_attention(q, k, v, attn_bias, key_padding_mask,
                                                   gate), None
            g = q.size(0) // k.size(0)
            k, v = (t.repeat_interleave(g, dim=0) for t in (k, v))  # one key/value row per row
        gate = prob_gate_fn(q, k) if prob_gate_fn is not None else None
        dropout_p = self.dropout if self.training else 0.0
        factored = None
        if attn_bias_fn is not None:
            extra_bias = attn_bias_fn(q, k)
            if isinstance(extra_bias, FactoredBias) and (
                    self.fused_bias_path and not (need_weights or causal) and gate is None
                    and dropout_p == 0.0 and torch.is_grad_enabled()
                    and q.device.type == "cpu" and q.dtype == torch.float32):
                factored = extra_bias
            else:
                extra_bias = materialised(extra_bias)
                attn_bias = extra_bias if attn_bias is None else attn_bias + extra_bias
        mask, causal = self._mask(attn_bias, key_padding_mask, causal, q.size(2), k.size(2),
                                  q.device)

        one_query = q.size(2) == 1 and dropout_p == 0.0 and self.one_query_path and not need_weights
        # --dropout-mask packed: SDPA draws its own mask, so dropped attention takes the matmul
        # or the explicit path
        own_mask = self.packed_mask and dropout_p > 0.0 and q.device.type == "cpu"
        if factored is not None:
            out, weights = factored.attend(q, k, v, mask, self.scaling), None
        elif one_query and gate is None and q.device.type == "cpu" and q.dtype == torch.float32:
            out, weights = self._one_query_attention(q, k, v, mask), None  # CUDA: SDPA's kernels
        elif (not need_weights and gate is None and dropout_p > 0.0
              and self.matmul_train_path and q.device.type == "cpu" and q.dtype == torch.float32):
            out, weights = self._matmul_attention(q, k, v, mask, causal, dropout_p), None
        elif not need_weights and gate is None and not own_mask:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p,
                                                 is_causal=causal, scale=self.scaling)
            weights = None
        elif not need_weights and not causal and isinstance(gate, FactoredGate) and not own_mask:
            out, weights = gate.attend(q, k, v, mask, dropout_p, self.training, self.scaling), None
        else:
            gate = gate.gate() if isinstance(gate, FactoredGate) else gate
            out, weights = self._explicit_attention(q, k, v, mask, causal, dropout_p, gate)
            weights = weights if need_weights else None
        out = out.transpose(1, 2).flatten(2)  # concat heads (TPT eq. 3)
        return self.out_proj(out), weights

    def _one_query_attention(self, q, k, v, mask):
        """``softmax(q k^T * scaling + mask) v`` for one query per head (an incremental decoding
        step on CPU, fp32): two batched matrix-vector products and a softmax over ``S`` keys, where
        SDPA's CPU kernel tiles for many queries. Same function as SDPA (TPT eq. 2, tested); a row
        with every key masked gives 0, as SDPA does."""
        logits = torch.matmul(q, k.transpose(-1, -2)).mul_(self.scaling)
        if mask is not None:
            bool_mask = mask.dtype == torch.bool
            logits = torch.where(mask, logits, float("-inf")) if bool_mask else logits + mask
            return torch.matmul(logits.softmax(-1).nan_to_num(0.0), v)
        return torch.matmul(logits.softmax(-1), v)

    def _matmul_attention(self, q, k, v, mask, causal, dropout_p):
        """``dropout(softmax(q k^T * scaling + mask)) v`` with dropout on (TPT eq. 2), as SDPA's CPU
        math path computes it when dropout rules out its fused kernel, less that path's extra
        passes over the ``(B, H, T, S)`` logits: SDPA scales ``q`` and ``k`` by ``sqrt(scaling)``
        each (here ``q`` once by ``scaling``, nothing for the T5 cell's 1.0) and checks every row
        for being fully masked (``_safe_softmax``: an equality test, a reduction and a select over
        the logits); here only the first column of the probabilities is read for NaN, and a
        fully masked row, if any, takes ``_safe_softmax`` (0 for that row, as SDPA). With
        ``--dropout-mask bernoulli`` the mask is drawn by ``F.dropout`` on the probabilities as in
        SDPA's math path, so the random stream and (at ``scaling`` 1.0) the result are SDPA's bit
        for bit (tests/test_speed_paths.py); with ``packed`` (the default), by
        :func:`.dropout.dropout`, which SDPA cannot draw."""
        q = q if self.scaling == 1.0 else q * self.scaling
        logits = torch.matmul(q, k.transpose(-1, -2))
        if causal:  # no mask given (_mask folds the causal mask into one when there is one)
            future = torch.ones(logits.shape[-2:], dtype=torch.bool, device=q.device).triu(1)
            logits = logits.masked_fill_(future, float("-inf"))
        elif mask is not None:
            logits = (logits.masked_fill_(~mask, float("-inf")) if mask.dtype == torch.bool
                      else logits.add_(mask))
        probs = masked_softmax(logits, mask is not None)
        return torch.matmul(dropout(probs, dropout_p, True, self.packed_mask), v)

    def _beam_shared_attention(self, q, k, v, attn_bias, key_padding_mask, gate=None):
        """Cross-attention of ``N = G * g`` hypotheses whose keys/values ``(G, H, S, d_k)`` are
        shared by blocks of ``g`` consecutive rows (a source's beams): the ``g * T`` queries of a
        block attend as one sequence of queries to their source's keys (same function, 1/g of the
        key and value reads, and a matrix product where a per-row step had a matrix-vector one).
        ``gate``: a :class:`FactoredGate` with ``per_source`` (its per-query factors in blocks
        like the queries, its per-key ones shared)."""
        n, heads, t, dk = q.shape
        groups = k.size(0)
        g = n // groups

        def blocks(x):  # (N|1, h, T|1, S) -> (G|1, h, g*T, S), each row's entries at its queries
            x = x.expand(x.size(0), x.size(1), t, x.size(3))
            if x.size(0) == 1:
                return x.repeat(1, 1, g, 1)
            return x.unflatten(0, (groups, g)).transpose(1, 2).flatten(2, 3)

        mask, _ = self._mask(attn_bias, key_padding_mask, False, t, k.size(2), q.device)
        mask = None if mask is None else blocks(mask)
        def query_blocks(x):  # (N, H, T, d) -> (G, H, g*T, d)
            return x.unflatten(0, (groups, g)).transpose(1, 2).flatten(2, 3)

        qb = query_blocks(q)
        if gate is not None:
            out = gate.per_source(query_blocks).attend(qb, k, v, mask, 0.0, False, self.scaling)
        elif q.device.type == "cpu" and q.dtype == torch.float32 and self.one_query_path:
            out = self._one_query_attention(qb, k, v, mask)  # a source of padding only gives 0 rows
        else:
            out = F.scaled_dot_product_attention(qb, k, v, attn_mask=mask, scale=self.scaling)
        out = out.unflatten(2, (g, t)).transpose(1, 2).flatten(0, 1)  # (N, H, T, d_k)
        return self.out_proj(out.transpose(1, 2).flatten(2))

    @staticmethod
    def _beam_group_size(key_value, *per_row):
        """The number ``g`` of consecutive rows that carry the same source in ``key_value`` (and in
        every tensor of ``per_row`` with ``N`` rows): fairseq's beam search repeats each source
        ``beam`` times. Checked exactly (equal rows), so ``g = 1`` where rows differ."""
        n = key_value.size(0)
        same = (key_value == key_value[:1]).flatten(1).all(1)
        g = int(same.long().cumprod(0).sum())
        if g < 2 or n % g:
            return 1
        for x in (key_value, *(t for t in per_row if t is not None and t.size(0) == n)):
            blocks = x.unflatten(0, (n // g, g))
            if not bool((blocks == blocks[:, :1]).all()):
                return 1
        return g

    def _project(self, query, key_value, incremental_state, kv_scale, key_padding_mask=None,
                 share=False):
        """Queries, keys and values ``(B, H, *, d_k)`` (TPT eq. 1), with the cached keys/values of
        earlier steps (self-attention) or of the source (cross-attention, ``kv_scale`` applied).

        Incremental cross-attention with ``share``: keys/values are computed once per source, for
        the first of each block of rows that repeat it (a source's beams), ``(G, H, S, d_k)``."""
        saved = self._get_input_buffer(incremental_state) if incremental_state is not None else None
        if self.self_attention:
            q, k, v = (self._heads(t) for t in self.in_proj(query).chunk(3, dim=-1))
            if saved is not None:
                if "prev_key" in saved:
                    k = torch.cat([saved["prev_key"], k], dim=2)
                    v = torch.cat([saved["prev_value"], v], dim=2)
                saved["prev_key"], saved["prev_value"] = k, v
                self._set_input_buffer(incremental_state, saved)
            return q, k, v
        q = self._heads(self.q_proj(query))
        if saved is not None and "prev_key" in saved:
            return q, saved["prev_key"], saved["prev_value"]  # static: computed once per source
        g = 1
        if saved is not None and share and self.share_beam_keys and key_value.size(0) > 1:
            g = self._beam_group_size(key_value, key_padding_mask, kv_scale)
            if g > 1:
                key_value = key_value[::g]
                kv_scale = kv_scale if kv_scale is None or kv_scale.size(0) == 1 else kv_scale[::g]
        k, v = (self._heads(t) for t in self.kv_proj(key_value).chunk(2, dim=-1))
        if kv_scale is not None:  # g_j K_j, g_j V_j
            k, v = k * kv_scale, v * kv_scale
        if saved is not None:  # cached contiguous: every later step's matmul reads them without
            # a copy (a head-split view of the fused projection cannot be batched as one N*H batch)
            k, v = k.contiguous(), v.contiguous()
            saved["prev_key"], saved["prev_value"] = k, v
            if g > 1:  # the source (block) of each row; reordered with the rows
                saved["beam_source"] = beam_sources(k.size(0), g, k.device)
            self._set_input_buffer(incremental_state, saved)
        return q, k, v

    @staticmethod
    def _mask(attn_bias, key_padding_mask, causal, tgt_len, src_len, device):
        """One mask for the kernel: boolean (True = attend) or additive; ``(mask, causal)`` with
        ``causal`` folded into the mask when there is one."""
        mask = attn_bias
        if key_padding_mask is not None:
            pad = key_padding_mask[:, None, None, :].to(torch.bool)
            mask = ~pad if mask is None else torch.where(pad, float("-inf"), mask)
        if causal and mask is not None:
            future = torch.ones(tgt_len, src_len, dtype=torch.bool, device=device).triu(1)
            mask = mask.masked_fill(future,
                                    float("-inf")) if mask.dtype != torch.bool else mask & ~future
            causal = False
        return mask, causal

    def _explicit_attention(self, q, k, v, mask, causal, dropout_p, gate=None):
        """softmax(QK^T * scaling + bias) V (TPT eq. 2; scaling 1/sqrt(d_k), or 1 for the T5 cell),
        also returning head-averaged probabilities.

        With ``gate`` (B, H, T, S): ``(gate * softmax(...)) V`` (ETADS eq. 10); the returned
        probabilities stay the ungated softmax.
        """
        logits = (q @ k.transpose(-1, -2)).float() * self.scaling
        if causal:
            future = torch.ones(logits.shape[-2:], dtype=torch.bool, device=q.device).triu(1)
            logits = logits.masked_fill(future, float("-inf"))
        if mask is not None:
            logits = logits.masked_fill(
                ~mask, float("-inf")) if mask.dtype == torch.bool else logits + mask
        probs = masked_softmax(logits, mask is not None).type_as(q)  # as SDPA: masked rows 0
        dropped = dropout(probs, dropout_p, dropout_p > 0, self.packed_mask)  # modules/dropout.py
        out = (dropped if gate is None else dropped * gate.type_as(dropped)) @ v
        return out, probs.mean(dim=1)

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        """Reorder cached keys/values for beam search.

        Cross-attention keys/values depend only on the source, and beam search reorders hypotheses
        within each sentence's beams, whose sources are identical: as in fairseq, those caches are
        only re-indexed when the batch shrinks (finished sentences removed). This avoids copying
        ``B x S x C`` per layer at every decoding step.
        """
        saved = self._get_input_buffer(incremental_state)
        if saved and "beam_source" in saved:  # keys/values shared by blocks of rows
            reorder_shared(saved, new_order)
            self._set_input_buffer(incremental_state, saved)
            return incremental_state
        if saved and not self.self_attention and saved["prev_key"].size(0) == new_order.size(0):
            return incremental_state
        if saved:
            for key, value in saved.items():
                if value is not None:
                    saved[key] = value.index_select(0, new_order)
            self._set_input_buffer(incremental_state, saved)
        return incremental_state


def beam_sources(sources, g, device):
    """The source of each row when ``sources`` sources' keys are shared by blocks of ``g`` rows
    (their beams): ``[0]*g + [1]*g + ...``, kept as ``saved["beam_source"]``."""
    return torch.arange(sources, device=device).repeat_interleave(g)


def reorder_shared(saved, new_order, keys=("prev_key", "prev_value")):
    """Shared keys/values (the tensors ``keys`` of ``saved``) after beam search picks rows
    ``new_order``: the rows' sources, kept shared where the new rows still come in blocks of
    one source each (within-beam reordering, finished sentences removed), else one key/value
    row per hypothesis."""
    source = saved["beam_source"].index_select(0, new_order)
    g = int((saved["beam_source"] == 0).sum())
    n = source.size(0)
    blocks = source.view(-1, g) if n % g == 0 else None
    if blocks is not None and bool((blocks == blocks[:, :1]).all()):
        kept = blocks[:, 0]
        if not torch.equal(kept, torch.arange(saved[keys[0]].size(0), device=kept.device)):
            for key in keys:
                saved[key] = saved[key].index_select(0, kept)
        saved["beam_source"] = beam_sources(len(kept), g, kept.device)
    else:
        for key in keys:
            saved[key] = saved[key].index_select(0, source)
        del saved["beam_source"]
