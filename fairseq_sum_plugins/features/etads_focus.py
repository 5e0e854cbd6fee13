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

Cost: one extra ``d_m x d_m`` projection per token (``W_p``), and the bias itself, whose backward
(:class:`FocalBias`) recomputes the distances instead of storing ``(B, H, T, S)`` intermediates;
forward and backward work in place on one or two such tensors (at ``(8, 8, 256, 256)``, forward and
backward together took 27-30 ms, the same operations out of place 46-49 ms).
The bias needs a gradient, so on CPU PyTorch runs SDPA's math path for these layers (its flash
CPU kernel takes a bias but not its gradient); on CUDA the memory-efficient kernel takes both.

Numerical safety (the only deviations from ETADS eq. 6-7):

* ``sigma~`` is clamped below at ``SIGMA_MIN = 0.1`` position: ``m sigmoid(sigma)`` can underflow
  to 0, which makes ``f`` -inf (or NaN at ``P_j = mu~``) and fully masked rows. At 0.1 a neighbour
  one position away already gets ``f = -200`` (weight ``e^-200``), so nothing of the function
  is lost, and the nearest real position always has ``f >= -2 / 0.01 = -200``.
* ``f`` is clamped below at ``-F_MAX = -1e4``, so the bias stays finite in fp16 as well (it is
  computed in fp32, because ``(P - mu~)^2`` overflows fp16 for documents over ~255 tokens, then
  cast to the query dtype). Clamped entries carry weight ``e^-1e4 = 0`` and a zero gradient.
* ``m`` is at least 1 (a fairseq source always holds its EOS).
"""
import torch
import torch.nn as nn

# parse_layers: re-exported here, its old home
from ..modules.features import Inspection, layers_feature, parse_layers  # noqa: F401

SIGMA_MIN = 0.1
F_MAX = 1e4


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
        return self(q, inputs["padding_mask"])

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

    def forward(self, q, padding_mask=None):
        """Returns the additive logit bias ``(B, H, T, S)`` in ``q``'s dtype (ETADS eq. 7)."""
        mu_t, sigma_t, m, pos = self.centres_and_scopes(q, padding_mask)
        if self.keep_focus:
            self.last_focus = (mu_t.detach(), sigma_t.detach(), m.detach())
        if not self.fused_bias:  # the reference: plain autograd, four (B, H, T, S) tensors kept
            return focal_bias_reference(mu_t, sigma_t, pos).to(q.dtype)
        return FocalBias.apply(mu_t, sigma_t, pos).to(q.dtype)


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
