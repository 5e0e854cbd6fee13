"""ETADS focus attention (You et al., 2019, §3.2, ETADS eq. 5-8): a learned Gaussian focal bias per
head.

For the queries ``Q`` of an encoder self-attention layer (the projected ``Z W^Q``, all heads
concatenated, ``d_m`` wide) and a document of true length ``m``::

    G       = mean of Q_i over the document's real (non-pad) positions
    h_i     = tanh(W_p Q_i + W_g G)                          W_p, W_g: d_m x d_m, shared by heads
    mu_i    = U_c^T h_i,   sigma_i = U_d^T h_i              (5)  one U_c, U_d column per head
    mu~_i   = m sigmoid(mu_i),  sigma~_i = m sigmoid(sigma_i)  (6)
    f_ij    = -(P_j - mu~_i)^2 / (sigma~_i^2 / 2)             (7)
    softmax(Q K^T / sqrt(d_k) + f) V                          (8)  via the attention's ``attn_bias``

``P_j`` counts real tokens, 1-based (``P = 1..m``; the paper writes ``X = (x^1, ..., x^m)``), so
left- and right-padded sources give the same bias for the same document. All of ``W_p, W_g,
U_c, U_d`` are trained parameters (no biases, as in ETADS eq. 5).

Cost: one extra ``d_m x d_m`` projection per token (``W_p``), and the attention with the bias.
The bias needs a gradient, which SDPA's flash CPU kernel does not give (it takes a bias, not its
gradient): SDPA would run its math path. So where the bias needs a gradient on CPU in float32
(training, no attention dropout, no probability gate, no weights asked for), the attention takes
:class:`FocusAttention`: per block of heads that fits in cache, the bias computed in place in the
logits, ``Q K^T`` added into them by one GEMM, the softmax, and in backward the gradients of
``mu~, sigma~`` summed from ``dS`` beside ``dQ, dK, dV``: fewer passes over ``(B, H, T, S)``
tensors than SDPA's math path with :class:`FocalBias` makes (the attention alone, one core:
1.84x its speed at initialisation's broad focus, 3.65x at a narrow one;
``benchmarks/bench_focus_attention.py``). Elsewhere (CUDA, whose
memory-efficient kernel takes the bias and its gradient; inference; dropout or a gate) the bias is
materialised (:class:`FocalBias`, or :func:`focal_bias_reference` with ``fused_bias = False``) and
the attention runs as for any bias; ``MultiheadAttention.fused_bias_path = False`` makes the
training path the same (the reference :class:`FocusAttention` is tested against).

Numerical safety (the only deviations from ETADS eq. 6-7):

* ``sigma~`` is clamped below at ``SIGMA_MIN = 0.1`` position: ``m sigmoid(sigma)`` can underflow
  to 0, which makes ``f`` -inf (or NaN at ``P_j = mu~``) and fully masked rows. At 0.1 a neighbour
  one position away already gets ``f = -200`` (weight ``e^-200``), so nothing of the function
  is lost, and the nearest real position always has ``f >= -2 / 0.01 = -200``.
* ``f`` is clamped below at ``-F_MAX = -1e4``, so the bias stays finite in fp16 as well (it is
  computed in fp32, because ``(P - mu~)^2`` overflows fp16 for documents over ~255 tokens, then
  cast to the query dtype). Clamped entries carry weight ``e^-1e4 = 0`` and a zero gradient.
* ``m`` is at least 1 (a fairseq source always holds its EOS).
* :class:`FocusAttention` sets the attention probabilities below ``FLUSH = 1e-30`` to 0. A narrow
  focus puts many of a row's logits 87 to 104 below its maximum, where ``exp`` gives subnormal
  floats, on which x86 multiplies take microcode assists: at ``sigma~`` 0.1-8 the attention's
  forward and backward took 84-93 ms with them flushed and 161-172 ms without (``(8, 8, 256, 64)``,
  one thread). Each dropped term is below ``1e-30 |V_j|``, and a row's largest probability is at
  least ``1 / S``: far below float32's resolution of any output.
"""
import torch
import torch.nn as nn
from torch.autograd.function import once_differentiable

from ..modules.attention import block_of, masked_softmax
# parse_layers: re-exported here, its old home
from ..modules.features import Inspection, layers_feature, parse_layers  # noqa: F401

SIGMA_MIN = 0.1
F_MAX = 1e4
FLUSH = 1e-30


def real_positions(padding_mask, seq_len, device):
    """``(P, m)``: 1-based positions of real tokens ``(B, S)`` (pads get a value but are masked
    anyway) and true lengths ``(B,)``, for left or right padding."""
    if padding_mask is None:
        pos = torch.arange(1, seq_len + 1, device=device, dtype=torch.float32).unsqueeze(0)
        return pos, torch.full((1,), float(seq_len), device=device)
    real = (~padding_mask).to(torch.float32)
    return real.cumsum(dim=1), real.sum(dim=1).clamp(min=1.0)


class FocusBias(nn.Module):
    """Focal bias ``f`` (ETADS eq. 5-7) of one encoder self-attention layer, one per head."""

    feature_init = True  # its own initialisation, also under BART's (models/bart.py)
    # the bias by FocalBias (True) or by focal_bias_reference under autograd (bench_train.py
    # --ablate focal_bias measures the difference)
    fused_bias = True

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.w_p = nn.Linear(embed_dim, embed_dim, bias=False)  # W_p
        self.w_g = nn.Linear(embed_dim, embed_dim, bias=False)  # W_g
        self.u = nn.Linear(embed_dim, 2 * num_heads, bias=False)  # [U_c | U_d], a column per head
        self.reset_parameters()
        self.keep_focus = False  # when True, the last (mu~, sigma~, m) are kept for analysis
        self.last_focus = None

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.w_p.weight)
        nn.init.xavier_uniform_(self.w_g.weight)
        nn.init.xavier_uniform_(self.u.weight)

    def score_bias(self, q, k, inputs):
        """The feature interface (:mod:`fairseq_sum_plugins.modules.features`): ETADS eq. 7's bias
        for the projected queries."""
        return self(q, inputs["padding_mask"], factored=True)

    def centres_and_scopes(self, q, padding_mask=None):
        """``q``: ``(B, H, T, d_k)`` queries of a self-attention layer -> ``mu~, sigma~`` ``(B, H,
        T)`` (fp32, ETADS eq. 5-6) and the true lengths ``m`` ``(B,)`` and 1-based positions ``P``
        ``(B|1, S)``."""
        bsz, heads, tgt_len, _ = q.shape
        q = q.transpose(1, 2).flatten(2)  # (B, T, d_m): concat heads
        pos, m = real_positions(padding_mask, tgt_len, q.device)
        if padding_mask is None:
            g = q.mean(dim=1)
        else:
            g = (q.masked_fill(padding_mask.unsqueeze(-1), 0.0).sum(dim=1)
                 / m.to(q.dtype).unsqueeze(-1))
        h = torch.tanh(self.w_p(q) + self.w_g(g).unsqueeze(1))  # (B, T, d_m)
        # (B, H, T) each: U_c^T h, U_d^T h
        mu, sigma = self.u(h).float().transpose(1, 2).chunk(2, dim=1)
        m_ = m.view(-1, 1, 1)
        mu_t = m_ * torch.sigmoid(mu)  # (6)
        sigma_t = (m_ * torch.sigmoid(sigma)).clamp(min=SIGMA_MIN)  # (6), floored (see module doc)
        return mu_t, sigma_t, m, pos

    def forward(self, q, padding_mask=None, factored=False):
        """Returns the additive logit bias ``(B, H, T, S)`` in ``q``'s dtype (ETADS eq. 7), or with
        ``factored`` the same bias as :class:`FocalScores` (the attention decides whether to
        materialise it)."""
        mu_t, sigma_t, m, pos = self.centres_and_scopes(q, padding_mask)
        if self.keep_focus:
            self.last_focus = (mu_t.detach(), sigma_t.detach(), m.detach())
        scores = FocalScores(mu_t, sigma_t, pos, q.dtype, self.fused_bias)
        return scores if factored else scores.bias()


class FocalScores:
    """ETADS eq. 7's bias of one layer's queries, factored (a
    :class:`~..modules.attention.FactoredBias`): ``bias()`` materialises it; ``attend`` computes
    ETADS eq. 8 with it by :class:`FocusAttention`."""

    def __init__(self, mu_t, sigma_t, pos, dtype, fused_bias=True):
        self.mu_t, self.sigma_t, self.pos = mu_t, sigma_t, pos
        self.dtype, self.fused_bias = dtype, fused_bias

    def bias(self):
        if not self.fused_bias:  # the reference: plain autograd, four (B, H, T, S) tensors kept
            return focal_bias_reference(self.mu_t, self.sigma_t, self.pos).to(self.dtype)
        return FocalBias.apply(self.mu_t, self.sigma_t, self.pos).to(self.dtype)

    def attend(self, q, k, v, mask, scale):
        """``softmax(q k^T * scale + mask + f) v`` (ETADS eq. 8) for float32 ``q, k, v``."""
        return FocusAttention.apply(q, k, v, self.mu_t, self.sigma_t, self.pos, mask, scale)


def focal_bias_reference(mu_t, sigma_t, pos):
    """ETADS eq. 7 with plain autograd (keeps three ``(B, H, T, S)`` tensors for backward;
    tests)."""
    dist = pos[:, None, None, :] - mu_t.unsqueeze(-1)  # (B, H, T, S): P_j - mu~_i
    return (dist.square() * (-2.0 / sigma_t.square()).unsqueeze(-1)).clamp(min=-F_MAX)


class FocalBias(torch.autograd.Function):
    """``f_ij = max(-(P_j - mu~_i)^2 / (sigma~_i^2 / 2), -F_MAX)`` (ETADS eq. 7) from ``mu~,
    sigma~`` ``(B, H, T)`` and positions ``(B|1, S)``. Saves only those small inputs and recomputes
    the distances in backward, instead of keeping three ``(B, H, T, S)`` intermediates per layer::

        df/dmu~ = 4 (P_j - mu~_i) / sigma~_i^2,   df/dsigma~ = 4 (P_j - mu~_i)^2 / sigma~_i^3
    """

    @staticmethod
    def forward(ctx, mu_t, sigma_t, pos):
        ctx.save_for_backward(mu_t, sigma_t, pos)
        with torch.no_grad():  # focal_bias_reference's operations in its order, in place on one
            # (B, H, T, S) tensor where it allocates four (the same values bit for bit, tested)
            dist = pos[:, None, None, :] - mu_t.unsqueeze(-1)
            coef = (-2.0 / sigma_t.square()).unsqueeze(-1)
            return dist.square_().mul_(coef).clamp_(min=-F_MAX)

    @staticmethod
    def backward(ctx, grad):
        mu_t, sigma_t, pos = ctx.saved_tensors
        dist = pos[:, None, None, :] - mu_t.unsqueeze(-1)
        inv_var = sigma_t.square().reciprocal().unsqueeze(-1)  # 1 / sigma~^2
        g_dist = (grad * dist).mul_(inv_var)  # grad * (P - mu~) / sigma~^2
        # not clamped: 2 (P - mu~)^2 / sigma~^2 < F_MAX
        live = dist.square().mul_(inv_var) < F_MAX / 2
        g_dist = g_dist.masked_fill_(~live, 0.0)
        grad_mu = 4.0 * g_dist.sum(-1)
        grad_sigma = 4.0 * g_dist.mul_(dist).sum(-1) / sigma_t  # g_dist is not read again
        return grad_mu, grad_sigma, None


# FocusAttention runs its (B, H, T, S) passes in blocks of (batch row, heads) of about this many
# bytes, so a block's logits, dP and dS stay in cache between passes (1 to 4 MB measured alike on
# one core, benchmarks/bench_focus_attention.py; a block of one head's scores is the least)
BLOCK_BYTES = 2 * 1024 * 1024


def score_blocks(bsz, heads, tgt_len, src_len, itemsize):
    """``(batch slice, head slice)`` blocks of about :data:`BLOCK_BYTES` of ``(T, S)`` scores:
    whole batch rows where one row's heads fit, else heads of one row."""
    per = max(1, BLOCK_BYTES // (tgt_len * src_len * itemsize))
    if per >= heads:
        rows = per // heads
        return [(slice(b, min(b + rows, bsz)), slice(None)) for b in range(0, bsz, rows)]
    return [(slice(b, b + 1), slice(h, min(h + per, heads)))
            for b in range(bsz) for h in range(0, heads, per)]


class FocusAttention(torch.autograd.Function):
    """ETADS eq. 8 with the focal bias of ETADS eq. 7 inside,
    ``O = softmax(q k^T * scale + mask + f) v``, from ``q`` ``(B, H, T, d_k)``, ``k, v``
    ``(B, H, S, d_k)``, ``mu~, sigma~`` ``(B, H, T)``, positions ``(B|1, S)`` and ``mask`` (None;
    boolean ``(B|1, H|1, T|1, S)``, True where a key is attended; or additive float, which may
    need a gradient: the T5 cell's relative position bias), all float32.

    Per block of batch rows and heads (:data:`BLOCK_BYTES`), forward fills the block's logits with
    ``f`` (:class:`FocalBias`'s operations), the mask, and ``q k^T * scale`` by one GEMM into
    them; the softmax makes ``P``, written into the ``(B, H, T, S)`` tensor kept for backward (as
    SDPA's math path keeps it) with probabilities below ``FLUSH`` set to 0 (module doc; a row
    whose every key is masked is 0, as SDPA gives). Backward, per block, with
    ``dS = P (.) (dP - rowsum(P (.) dP))`` (one fused pass)::

        dV = P^T dO,  dP = dO V^T,  dQ = dS K * scale,  dK = dS^T Q * scale,  dmask = dS
        dmu~_i    = 4 / sigma~_i^2 * sum_j dS_ij (P_j - mu~_i)
        dsigma~_i = 4 / sigma~_i^3 * sum_j dS_ij (P_j - mu~_i)^2

    The clamp at ``-F_MAX`` needs no mask in these sums: a clamped entry's bias lies at least
    ``1e4 - 200`` below that of its row's nearest position (ETADS eq. 7 at ``|P_j - mu~_i| <= 1``,
    ``sigma~ >= 0.1``), so unless the row's ``q k^T * scale`` spans over 9,700 its probability is
    below ``FLUSH``, set to 0, and so is its ``dS``. Tested against SDPA with :class:`FocalBias`
    (values and every gradient), by finite differences, and in blocks of every kind."""

    @staticmethod
    def forward(ctx, q, k, v, mu_t, sigma_t, pos, mask, scale):
        bsz, heads, tgt_len, head_dim = q.shape
        src_len = k.size(2)
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        blocks = score_blocks(bsz, heads, tgt_len, src_len, q.element_size())
        pos = pos[:, None, None, :]  # (B|1, 1, 1, S)
        mask_shape = None if mask is None else mask.shape
        if mask is not None and mask.dim() < 4:  # as broadcasting reads it
            mask = mask.view((1,) * (4 - mask.dim()) + tuple(mask.shape))
        with torch.no_grad():
            probs = q.new_empty(bsz, heads, tgt_len, src_len)
            out = q.new_empty(bsz, heads, tgt_len, head_dim)
            work = None
            for rows, hs in blocks:
                qb, kb, vb = q[rows, hs], k[rows, hs], v[rows, hs]
                n = qb.size(0) * qb.size(1)
                if work is None or work.size(0) != n:  # the logits of a block, reused
                    work = q.new_empty(n, tgt_len, src_len)
                logits = work.view(*qb.shape[:2], tgt_len, src_len)
                torch.sub(block_of(pos, rows, hs), mu_t[rows, hs].unsqueeze(-1), out=logits)
                logits.square_().mul_((-2.0 / sigma_t[rows, hs].square()).unsqueeze(-1))
                logits.clamp_(min=-F_MAX)  # ETADS eq. 7 (P_j - mu~_i written in place above)
                if mask is not None:
                    m = block_of(mask, rows, hs)
                    logits = (logits.masked_fill_(~m, float("-inf")) if m.dtype == torch.bool
                              else logits.add_(m))
                work.baddbmm_(qb.reshape(n, tgt_len, head_dim),
                              kb.reshape(n, src_len, head_dim).transpose(1, 2), alpha=scale)
                kept = probs[rows, hs].view(n, tgt_len, src_len)
                torch.threshold(masked_softmax(work, mask is not None), FLUSH, 0.0, out=kept)
                torch.bmm(kept, vb.reshape(n, src_len, head_dim),
                          out=out[rows, hs].view(n, tgt_len, head_dim))
        mask_grad = mask is not None and mask.dtype != torch.bool and ctx.needs_input_grad[6]
        ctx.save_for_backward(q, k, v, probs, mu_t, sigma_t, pos)
        ctx.scale, ctx.blocks = scale, blocks
        ctx.mask_shapes = (mask.shape, mask_shape) if mask_grad else None  # 4-d, as given
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        q, k, v, probs, mu_t, sigma_t, pos = ctx.saved_tensors
        tgt_len, head_dim, src_len = q.size(2), q.size(3), k.size(2)
        grad_out = grad_out.contiguous()
        grads = [torch.empty_like(t) for t in (q, k, v)]  # contiguous, as q, k, v here
        grad_q, grad_k, grad_v = grads
        grad_mu, grad_sigma = (mu_t.new_empty(mu_t.shape) for _ in range(2))
        grad_mask = probs.new_zeros(ctx.mask_shapes[0]) if ctx.mask_shapes else None
        inv_var = sigma_t.square().reciprocal()
        work = ds = None
        for rows, hs in ctx.blocks:
            kept = probs[rows, hs]
            n = kept.size(0) * kept.size(1)
            if work is None or work.size(0) != n:  # dP, then the distances; dS: reused
                work, ds = (probs.new_empty(n, tgt_len, src_len) for _ in range(2))
            p = kept.view(n, tgt_len, src_len)
            dout = grad_out[rows, hs].view(n, tgt_len, head_dim)
            qb, kb = q[rows, hs].view(n, tgt_len, head_dim), k[rows, hs].view(n, src_len, head_dim)
            vb = v[rows, hs].view(n, src_len, head_dim)
            torch.bmm(p.transpose(1, 2), dout, out=grad_v[rows, hs].view(n, src_len, head_dim))
            torch.bmm(dout, vb.transpose(1, 2), out=work)
            torch.ops.aten._softmax_backward_data.out(work, p, -1, p.dtype, grad_input=ds)
            torch.bmm(ds, kb, out=grad_q[rows, hs].view(n, tgt_len, head_dim)).mul_(ctx.scale)
            torch.bmm(ds.transpose(1, 2), qb,
                      out=grad_k[rows, hs].view(n, src_len, head_dim)).mul_(ctx.scale)
            ds4 = ds.view(kept.shape)
            if grad_mask is not None:  # summed over the dimensions the mask broadcasts
                target = block_of(grad_mask, rows, hs)
                target.add_(ds4.sum_to_size(target.shape))
            dist = torch.sub(block_of(pos, rows, hs), mu_t[rows, hs].unsqueeze(-1),
                             out=work.view(kept.shape))  # P_j - mu~_i
            weighted = ds4.mul_(dist)  # dS (.) (P - mu~); dS is not read again
            torch.mul(weighted.sum(-1), inv_var[rows, hs], out=grad_mu[rows, hs]).mul_(4.0)
            torch.mul(weighted.mul_(dist).sum(-1), inv_var[rows, hs],
                      out=grad_sigma[rows, hs]).mul_(4.0).div_(sigma_t[rows, hs])
        if grad_mask is not None:
            grad_mask = grad_mask.view(ctx.mask_shapes[1])
        return (*grads, grad_mu, grad_sigma, None, grad_mask, None)


def watch_focus(model, probe):
    """Inspection: ``focus`` ``{layer name: {"mu": H x m, "sigma": H x m, "m": m}}``, the centre
    ``mu~_i`` and scope ``sigma~_i`` (ETADS eq. 6, 1-based positions) of every query position of
    every focus layer of the encoder, recomputed from the layer's queries by
    :meth:`FocusBias.centres_and_scopes` at its forward."""
    kept = {}
    found = [(n, m) for n, m in model.encoder.named_modules() if isinstance(m, FocusBias)]
    for name, m in found:
        probe.hook(m, lambda mod, inputs, out, name=name: kept.__setitem__(
            name, mod.centres_and_scopes(*inputs)[:3]))

    def read(run):
        return {"focus": {name: {"mu": mu[0].tolist(), "sigma": sigma[0].tolist(), "m": int(m[0])}
                          for name, (mu, sigma, m) in kept.items()}}

    if found:
        probe.read(read)


# ETADS eq. 5-8 in the encoder self-attention of the --focus-layers
layers_feature("ETADS focus attention", "--focus-layers", "encoder_self", "focus", FocusBias,
               "encoder layers with focus attention (ETADS eq. 5-8)",
               inspect=Inspection({"focus": "band"}, watch_focus))
