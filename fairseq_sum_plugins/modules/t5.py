"""The T5 (v1.0) cell's own pieces (Raffel et al., 2020, §2.1; HF ``modeling_t5.py``).

Equations and where they live::

    RMSNorm(x)      = w * x / sqrt(mean_c x_c^2 + 1e-6)        T5LayerNorm (no bias, no mean
                                                               subtraction)
    logits          = Q K^T + b[bucket(j - i)] (+ mask)        RelativePositionBias; no 1/sqrt(d_k)
    bucket(n)       = n                    if n < m/2          (m = buckets per direction; exact)
                    = m/2 + log(n/(m/2)) / log(D/(m/2)) * m/2   (log-spaced up to D = max distance)
    bidirectional:    half of the buckets for j > i, half for j <= i (encoder)
    causal:           n = max(i - j, 0), all buckets for the past (decoder self-attention)

One table per stack (``relative_attention_bias``, ``(buckets, heads)``) is computed once per forward
and shared by every layer of the stack, as in T5, where only block 0 owns it.

Initialisation (HF ``T5PreTrainedModel._init_weights``, factor 1): ``W_q ~ N(0, (d_m d_k)^-1/2)``,
``W_k, W_v ~ N(0, d_m^-1/2)``, ``W_o ~ N(0, (H d_k)^-1/2)``, ``W_i ~ N(0, d_m^-1/2)``, ``W_out ~
N(0, d_ff^-1/2)``, the bias table ``~ N(0, d_m^-1/2)``, the shared embedding ``~ N(0, 1)`` and norm
weights 1. Absent a ``1/sqrt(d_k)`` scaling, the small ``W_q`` keeps the logits at unit scale.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import MultiheadAttention


def rms_norm_reference(x, weight, eps):
    """``w * x / sqrt(mean_c x_c^2 + eps)`` as HF's ``T5LayerNorm`` writes it (the statistic in
    float32)."""
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return weight * (x.float() * torch.rsqrt(variance + eps)).type_as(x)


class RMSNormFunction(torch.autograd.Function):
    """:func:`rms_norm_reference` for float32 with a hand-written backward (CPU has no fused
    RMS-norm kernel): ~6 ops forward and ~8 backward where autograd runs ~20, and only ``x`` and
    ``r`` are kept::

        r = (mean_c x_c^2 + eps)^-1/2,  xh = x r,  y = w xh
        dL/dw = sum_rows g xh,  dL/dx = r (g w - xh mean_c(g w xh))
    """

    @staticmethod
    def forward(ctx, x, weight, eps):
        rstd = torch.linalg.vector_norm(x, dim=-1,
                                        keepdim=True).square_().div_(x.size(-1)).add_(eps).rsqrt_()
        ctx.save_for_backward(x, weight, rstd)
        return (x * rstd).mul_(weight)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        x, weight, rstd = ctx.saved_tensors
        xhat = x * rstd
        grad_xhat = grad * xhat
        grad_weight = grad_xhat.flatten(0, -2).sum(0) if ctx.needs_input_grad[1] else None
        mean_g_w_xhat = (grad_xhat @ (weight / x.size(-1))).unsqueeze(-1)
        grad_x = torch.addcmul(grad * weight, xhat, mean_g_w_xhat, value=-1).mul_(rstd)
        return grad_x, grad_weight, None


class T5LayerNorm(nn.Module):
    """Root-mean-square layer norm with a weight only; the statistic in float32."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        if x.device.type == "cpu" and x.dtype == self.weight.dtype == torch.float32:
            return RMSNormFunction.apply(x, self.weight, self.eps)
        if hasattr(F, "rms_norm"):  # torch >= 2.4: one fused kernel where the device has one
            return self.weight * F.rms_norm(x.float(), (x.size(-1),), eps=self.eps).type_as(x)
        return rms_norm_reference(x, self.weight, self.eps)


def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                             max_distance=128):
    """T5's bucket of ``relative_position = key position - query position`` (see module
    docstring)."""
    buckets = 0
    if bidirectional:
        num_buckets //= 2
        buckets = (relative_position > 0).long() * num_buckets
        n = relative_position.abs()
    else:
        n = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    large = max_exact + (
        torch.log(n.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).long()
    large = large.clamp(max=num_buckets - 1)
    return buckets + torch.where(n < max_exact, n, large)


class RelativePositionBias(nn.Module):
    """A stack's bucketed bias table; ``forward(q_pos, k_pos)`` gives the logit bias ``(B|1, H, T,
    S)``.

    Buckets are constant beyond ``max_distance`` in each direction, so they are looked up in a table
    of the ``2 * max_distance + 1`` buckets of ``k - q`` clamped to ``[-max_distance,
    max_distance]`` (computed once, a non-persistent buffer), not recomputed per forward or decoding
    step.
    """

    def __init__(self, num_heads, num_buckets=32, max_distance=128, bidirectional=True,
                 d_model=512):
        super().__init__()
        self.relative_attention_bias = nn.Embedding(num_buckets, num_heads)
        nn.init.normal_(self.relative_attention_bias.weight, std=d_model**-0.5)
        self.num_buckets, self.max_distance, self.bidirectional = (num_buckets, max_distance,
                                                                   bidirectional)
        distances = torch.arange(-max_distance, max_distance + 1)
        self.register_buffer("bucket_of_distance", relative_position_bucket(
            distances, bidirectional, num_buckets, max_distance), persistent=False)

    def forward(self, q_pos, k_pos):
        """``q_pos`` ``(T,)`` or ``(B, T)``, ``k_pos`` ``(S,)`` or ``(B, S)``: integer positions."""
        rel = k_pos.unsqueeze(-2) - q_pos.unsqueeze(-1)  # (.., T, S)
        bucket = self.bucket_of_distance[
            rel.clamp_(-self.max_distance, self.max_distance) + self.max_distance]
        values = self.relative_attention_bias(bucket)  # (.., T, S, H)
        # (.., H, T, S), read by every layer of the stack
        values = values.movedim(-1, -3).contiguous()
        return values if values.dim() == 4 else values.unsqueeze(0)


def t5_init_attention(attn: MultiheadAttention):
    """T5's init of one attention block (fused projections keep the per-matrix scales)."""
    d, h, dk = attn.embed_dim, attn.num_heads, attn.head_dim
    with torch.no_grad():
        if attn.self_attention:
            q, k, v = attn.in_proj.weight.chunk(3, dim=0)
        else:
            q = attn.q_proj.weight
            k, v = attn.kv_proj.weight.chunk(2, dim=0)
        q.normal_(0, (d * dk) ** -0.5)
        k.normal_(0, d**-0.5)
        v.normal_(0, d**-0.5)
        attn.out_proj.weight.normal_(0, (h * dk) ** -0.5)


def t5_init_feed_forward(ffn, d_model, d_ff):
    nn.init.normal_(ffn.fc1.weight, std=d_model**-0.5)
    nn.init.normal_(ffn.fc2.weight, std=d_ff**-0.5)
