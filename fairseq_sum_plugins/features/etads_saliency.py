"""ETADS saliency selection (You et al., 2019, §3.3, ETADS eq. 9-10) in decoder cross-attention.

For the queries ``Q`` (decoder side) and keys ``K`` (encoder side) of a cross-attention layer,
per head ``h`` (``W_h Q`` and ``W_s K`` are split into heads like ``Q`` and ``K``)::

    g_ij   = sigmoid((W_h Q_i)(W_s K_j)^T)                     (9)   W_h, W_s: d_m x d_m, trained
    output = (g (.) softmax(Q K^T / sqrt(d_k))) V               (10)  pad keys excluded

The gate multiplies the (dropped-out) attention probabilities, so the attention runs on the
explicit path (:meth:`MultiheadAttention._explicit_attention` with ``gate``); the weights it
returns for alignment / coverage are the plain softmax distribution. In incremental decoding
``W_s K`` is computed once per source and cached like the cross-attention keys; where beam search
shares those keys among a source's beams (modules/attention.py), so is ``W_s K``, and the gate of
the beams' queries is formed against it as one block (:meth:`GateFactors.per_source`).

Memory: :func:`gated_attention` keeps no ``(B, H, T, S)`` tensor for backward (it saves ``Q, K, V,
W_h Q, W_s K`` and recomputes the probabilities and the gate, as fused attention kernels do), so a
saliency layer costs about as much activation memory as plain cross-attention. Speed: it works in
blocks of batch rows (:data:`BLOCK_BYTES`), so a block's probabilities, gate and gradients stay in
cache between its passes, each pass in place (``benchmarks/bench_focus_attention.py``, the
``saliency gate`` rows, times it against the same equations under plain autograd).

Initialization: xavier with gain ``d_k ** -0.25`` on ``W_h`` and ``W_s``, so the logit of
ETADS eq. 9 starts with a variance of about ``var(q) var(k)`` whatever the head size (ETADS eq. 9
has no ``1 / sqrt(d_k)``), instead of a saturated sigmoid.
"""
import math
from typing import Dict, NamedTuple, Optional

import torch
import torch.nn as nn
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor
from torch.autograd.function import once_differentiable

from ..modules.attention import InputBuffer, beam_sources, block_of, reorder_shared
from ..modules.dropout import dropout
from ..modules.features import Inspection, layers_feature


@with_incremental_state
class SaliencyGate(InputBuffer, nn.Module):
    buffer_name = "gate_state"
    feature_init = True  # its own initialisation, also under BART's (models/bart.py)
    per_source = True  # applies to cross-attention keys shared by a source's beams

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.w_h = nn.Linear(embed_dim, embed_dim, bias=False)  # W_h
        self.w_s = nn.Linear(embed_dim, embed_dim, bias=False)  # W_s
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.w_h, self.w_s):
            nn.init.xavier_uniform_(lin.weight, gain=self.head_dim**-0.25)

    def prob_gate(self, q, k, inputs):
        """The feature interface (:mod:`fairseq_sum_plugins.modules.features`): ETADS eq. 9's gate
        of this step's queries."""
        return self(q, k, inputs["incremental_state"])

    def _project(self, lin, x):  # (B, H, T, d_k) -> W x, split into heads again
        merged = x.transpose(1, 2).flatten(2)
        return lin(merged).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

    def forward(self, q: Tensor, k: Tensor,
                incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None):
        """``q`` ``(B, H, T, d_k)``, ``k`` ``(B, H, S, d_k)`` -> :class:`GateFactors` ``(W_h Q, W_s
        K)`` per head; ``g = sigmoid(hq sk^T)`` ``(B, H, T, S)`` (ETADS eq. 9) is formed inside the
        attention (see :func:`gated_attention`)."""
        saved = self._get_input_buffer(incremental_state) if incremental_state is not None else None
        if saved is not None and "gate_key" in saved:
            sk = saved["gate_key"]
        else:
            sk = self._project(self.w_s, k)  # W_s K: static per source
            if saved is not None:  # contiguous, as the cached keys (modules/attention.py)
                sk = sk.contiguous()
                saved["gate_key"] = sk
                if k.size(0) < q.size(0):  # one row per source, shared by blocks of its beams
                    saved["beam_source"] = beam_sources(k.size(0), q.size(0) // k.size(0),
                                                        k.device)
                self._set_input_buffer(incremental_state, saved)
        # g = sigmoid(hq sk^T), formed by the attention
        return GateFactors(self._project(self.w_h, q), sk)

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        """Like cross-attention keys: re-indexed only when beam search shrinks the batch (or, when
        shared by a source's beams, as the attention's shared keys are)."""
        saved = self._get_input_buffer(incremental_state)
        if saved and "beam_source" in saved:
            reorder_shared(saved, new_order, keys=("gate_key",))
            self._set_input_buffer(incremental_state, saved)
        elif saved and "gate_key" in saved and saved["gate_key"].size(0) != new_order.size(0):
            saved["gate_key"] = saved["gate_key"].index_select(0, new_order)
            self._set_input_buffer(incremental_state, saved)
        return incremental_state


class GateFactors(NamedTuple):
    """``g = sigmoid(hq @ sk^T)``: ``hq`` ``(B, H, T, d_k)`` = W_h Q, ``sk`` ``(B, H, S, d_k)`` =
    W_s K."""

    hq: Tensor
    sk: Tensor

    def gate(self):
        return (self.hq @ self.sk.transpose(-1, -2)).sigmoid()

    def per_source(self, blocks):
        """The gate of a source's beams as one block of queries (``W_h Q`` through ``blocks``,
        ``W_s K`` one row per source): :class:`~.attention.FactoredGate`."""
        return GateFactors(blocks(self.hq), self.sk)

    def attend(self, q, k, v, mask=None, dropout_p=0.0, training=False, scale=None):
        """ETADS eq. 10 with this gate (:func:`gated_attention`): the attention module's
        :class:`~.attention.FactoredGate` interface."""
        return gated_attention(q, k, v, self, mask, dropout_p, training, scale)


def probs_and_gate(q, k, hq, sk, mask, scale):
    """``softmax(q k^T * scale + mask)`` (0 rows where every key is masked) and the gate
    ``sigmoid(hq sk^T)`` of ETADS eq. 9, ``(B, H, T, S)`` each: under autograd (the reference
    :class:`GatedAttention` is tested against, and the path with attention dropout) and in its
    blocks. Each pass in place, but for the softmax's output under autograd (saved for its
    backward)."""
    logits = q @ k.transpose(-1, -2)
    logits = (logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits)
    logits.mul_(scale)
    if mask is not None:
        logits = (logits.masked_fill_(~mask, float("-inf")) if mask.dtype == torch.bool
                  else logits.add_(mask))
    probs = logits.softmax(-1)
    probs = (probs.nan_to_num(0.0) if torch.is_grad_enabled() else probs.nan_to_num_(0.0))
    return probs.type_as(q), (hq @ sk.transpose(-1, -2)).sigmoid_()


# the gated attention's (B, H, T, S) work runs in blocks of batch rows of about this many bytes
# per tensor, so a block's probabilities, gate and gradients stay in cache between passes
BLOCK_BYTES = 512 * 1024


def row_blocks(q, k):
    """Slices of batch rows, each holding about :data:`BLOCK_BYTES` of ``(H, T, S)`` scores."""
    bsz, heads, tgt_len, _ = q.shape
    per_row = heads * tgt_len * k.size(2) * max(4, q.element_size())
    rows = max(1, BLOCK_BYTES // per_row)
    return [slice(b, min(b + rows, bsz)) for b in range(0, bsz, rows)]


class GatedAttention(torch.autograd.Function):
    """``(sigmoid(hq sk^T) * softmax(q k^T * scale + mask)) v`` (ETADS eq. 9-10), recomputing the
    ``(B, H, T, S)`` probabilities and gate in backward instead of storing them. ``mask`` is
    None, boolean (True = attend) or an additive bias without gradient. Forward and backward run
    in blocks of batch rows (:data:`BLOCK_BYTES`); with ``z = hq sk^T``, ``g = sigmoid(z)``,
    ``W = g (.) P`` and ``dW = dO V^T``::

        dV = W^T dO,   dS = P (.) (g dW - rowsum(P (.) g dW))   (softmax backward, one pass)
        dz = dW (.) W (.) (1 - g),   dQ = dS K * scale,  dK = dS^T Q * scale,
        d(hq) = dz sk,   d(sk) = dz^T hq
    """

    @staticmethod
    def forward(ctx, q, k, v, hq, sk, mask, scale):
        with torch.no_grad():
            outs = []
            for b in row_blocks(q, k):
                probs, gate = probs_and_gate(q[b], k[b], hq[b], sk[b], block_of(mask, b), scale)
                outs.append(probs.mul_(gate) @ v[b])
            out = outs[0] if len(outs) == 1 else torch.cat(outs)
        ctx.save_for_backward(q, k, v, hq, sk, mask)
        ctx.scale = scale
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        q, k, v, hq, sk, mask = ctx.saved_tensors
        grads = [t.new_empty(t.shape) for t in (q, k, v, hq, sk)]  # contiguous
        grad_q, grad_k, grad_v, grad_hq, grad_sk = grads
        for b in row_blocks(q, k):
            qb, kb, vb, hqb, skb, dout = q[b], k[b], v[b], hq[b], sk[b], grad_out[b]
            probs, gate = probs_and_gate(qb, kb, hqb, skb, block_of(mask, b), ctx.scale)
            grad_weights = dout @ vb.transpose(-1, -2)  # d(g (.) p)
            weights = probs * gate
            torch.matmul(weights.transpose(-1, -2), dout, out=grad_v[b])
            grad_logits = torch._softmax_backward_data(grad_weights * gate, probs, -1,
                                                       probs.dtype)
            grad_z = grad_weights.mul_(weights).mul_(gate.neg_().add_(1.0))  # sigmoid backward
            torch.matmul(grad_logits, kb, out=grad_q[b]).mul_(ctx.scale)
            torch.matmul(grad_logits.transpose(-1, -2), qb, out=grad_k[b]).mul_(ctx.scale)
            torch.matmul(grad_z, skb, out=grad_hq[b])
            torch.matmul(grad_z.transpose(-1, -2), hqb, out=grad_sk[b])
        return (*grads, None, None)


def gated_attention(q, k, v, factors: GateFactors, mask=None, dropout_p=0.0, training=False,
                    scale=None):
    """Saliency-gated attention (ETADS eq. 10) on ``(B, H, *, d_k)`` heads; returns ``(B, H, T,
    d_k)``. With attention dropout (or a bias needing a gradient) it runs the same math under
    autograd. ``scale``: the logit scale (default ``1/sqrt(d_k)``; 1 for the T5 cell)."""
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    if (dropout_p > 0 and training) or (mask is not None and mask.requires_grad):
        probs, gate = probs_and_gate(q, k, factors.hq, factors.sk, mask, scale)
        probs = dropout(probs, dropout_p, training)  # modules/dropout.py
        return (probs * gate) @ v
    return GatedAttention.apply(q, k, v, factors.hq, factors.sk, mask, scale)


def watch_saliency(model, probe):
    """Inspection: ``saliency``, per source token the gate ``g_ij`` (ETADS eq. 9) averaged over the
    heads, the target positions and the saliency layers (read from each layer's :class:`GateFactors`
    at its forward; the mean is a choice of this page, the paper plots none)."""
    gates, found = [], [m for m in model.decoder.modules() if isinstance(m, SaliencyGate)]
    for m in found:
        probe.hook(m, lambda mod, inputs, out: gates.append(out.gate()[0].mean((0, 1))))
    if found:
        probe.read(lambda run: {"saliency": torch.stack(gates).mean(0).tolist()})


# ETADS eq. 9-10 in the decoder cross-attention of the --saliency-layers
layers_feature("ETADS saliency selection", "--saliency-layers", "decoder_cross", "saliency",
               SaliencyGate,
               "decoder layers with saliency selection in cross-attention (ETADS eq. 9-10)",
               inspect=Inspection({"saliency": "token"}, watch_saliency))
