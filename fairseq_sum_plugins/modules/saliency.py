"""ETADS saliency selection (You et al., 2019, §3.3, eq. 9-10) in decoder cross-attention.

For the queries ``Q`` (decoder side) and keys ``K`` (encoder side) of a cross-attention layer,
per head ``h`` (``W_h Q`` and ``W_s K`` are split into heads like ``Q`` and ``K``)::

    g_ij   = sigmoid((W_h Q_i)(W_s K_j)^T)                     (9)   W_h, W_s: d_m x d_m, trained
    output = (g (.) softmax(Q K^T / sqrt(d_k))) V               (10)  pad keys excluded

The gate multiplies the (dropped-out) attention probabilities, so the attention runs on the
explicit path (:meth:`MultiheadAttention._explicit_attention` with ``gate``); the weights it
returns for alignment / coverage are the plain softmax distribution. In incremental decoding
``W_s K`` is computed once per source and cached like the cross-attention keys.

Initialization: xavier with gain ``d_k ** -0.25`` on ``W_h`` and ``W_s``, so the logit of eq. 9
starts with a variance of about ``var(q) var(k)`` whatever the head size (eq. 9 has no
``1 / sqrt(d_k)``), instead of a saturated sigmoid.
"""
from typing import Dict, Optional

import torch.nn as nn
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor


@with_incremental_state
class SaliencyGate(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.w_h = nn.Linear(embed_dim, embed_dim, bias=False)  # W_h
        self.w_s = nn.Linear(embed_dim, embed_dim, bias=False)  # W_s
        for lin in (self.w_h, self.w_s):
            nn.init.xavier_uniform_(lin.weight, gain=self.head_dim**-0.25)

    def _project(self, lin, x):  # (B, H, T, d_k) -> W x, split into heads again
        merged = x.transpose(1, 2).flatten(2)
        return lin(merged).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

    def forward(self, q: Tensor, k: Tensor, incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None):
        """``q`` ``(B, H, T, d_k)``, ``k`` ``(B, H, S, d_k)`` -> gate ``g`` ``(B, H, T, S)`` (eq. 9)."""
        saved = self._get_input_buffer(incremental_state) if incremental_state is not None else None
        if saved is not None and "gate_key" in saved:
            sk = saved["gate_key"]
        else:
            sk = self._project(self.w_s, k)  # W_s K: static per source
            if saved is not None:
                saved["gate_key"] = sk
                self._set_input_buffer(incremental_state, saved)
        hq = self._project(self.w_h, q)
        return (hq @ sk.transpose(-1, -2)).sigmoid()

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        """Like cross-attention keys: re-indexed only when beam search shrinks the batch."""
        saved = self._get_input_buffer(incremental_state)
        if saved and "gate_key" in saved and saved["gate_key"].size(0) != new_order.size(0):
            saved["gate_key"] = saved["gate_key"].index_select(0, new_order)
            self._set_input_buffer(incremental_state, saved)
        return incremental_state

    def _get_input_buffer(self, incremental_state):
        return self.get_incremental_state(incremental_state, "gate_state") or {}

    def _set_input_buffer(self, incremental_state, buffer):
        return self.set_incremental_state(incremental_state, "gate_state", buffer)
