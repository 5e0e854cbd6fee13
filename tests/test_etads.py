"""ETADS (You et al., 2019): focus attention (ETADS eq. 5-8), saliency selection (ETADS eq. 9-10), placement
flags, presets, GNMT length / coverage penalties in beam search (§4.1) and a CLI round trip."""
import math
import re
import os
import subprocess
import sys

import pytest
import torch

from helpers import REPO, build_model, load_script, make_dictionary, random_batch
from tolerances import MODEL_ULPS, OP_ULPS, approx64, fp32_close, fp32_tol
from fairseq_sum_plugins.modules.attention import MultiheadAttention
from fairseq_sum_plugins.features.etads_focus import F_MAX, SIGMA_MIN, FocusBias, parse_layers
from fairseq_sum_plugins.features.etads_saliency import SaliencyGate

ETADS = dict(encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
             decoder_layers=2, dropout=0.0)


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


# --- focus attention (ETADS eq. 5-8) ----------------------------------------------------------------


def test_focal_bias_matches_hand_computation():
    """ETADS eq. 5-7 element by element, on a left-padded document (true length m = 3 of 4 slots)."""
    torch.manual_seed(0)
    d, heads = 4, 2
    focus = FocusBias(d, heads)
    with torch.no_grad():
        focus.w_p.weight.copy_(torch.arange(16.0).view(4, 4) / 20 - 0.3)
        focus.w_g.weight.copy_(torch.arange(16.0).flip(0).view(4, 4) / 25 - 0.2)
        focus.u.weight.copy_(torch.tensor([[1.0, -0.5, 0.3, 0.2], [0.4, 0.1, -1.0, 0.6],  # U_c (head 0, 1)
                                           [-0.7, 0.2, 0.5, 1.1], [0.3, -0.9, 0.2, -0.4]]))  # U_d (head 0, 1)
    pad = torch.tensor([[True, False, False, False]])
    q_flat = torch.tensor([[[9.0, 9.0, 9.0, 9.0], [0.5, -1.0, 0.2, 0.3], [1.0, 0.4, -0.6, 0.0], [-0.2, 0.8, 0.1, -1.2]]])
    q = q_flat.unflatten(-1, (heads, 2)).transpose(1, 2)  # (B, H, T, d_k)
    f = focus(q, pad)

    Wp, Wg, U = focus.w_p.weight.tolist(), focus.w_g.weight.tolist(), focus.u.weight.tolist()
    rows = q_flat[0].tolist()
    m = 3  # the pad query (all 9s) must not enter G
    G = [sum(rows[t][c] for t in (1, 2, 3)) / m for c in range(d)]
    WgG = [sum(Wg[r][c] * G[c] for c in range(d)) for r in range(d)]
    P = [None, 1, 2, 3]  # positions count real tokens
    for i in (1, 2, 3):
        hidden = [math.tanh(sum(Wp[r][c] * rows[i][c] for c in range(d)) + WgG[r]) for r in range(d)]
        for h in range(heads):
            mu = sum(U[h][c] * hidden[c] for c in range(d))
            sigma = sum(U[heads + h][c] * hidden[c] for c in range(d))
            mu_t, sigma_t = m * sigmoid(mu), m * sigmoid(sigma)
            for j in (1, 2, 3):
                expected = -((P[j] - mu_t) ** 2) / (sigma_t**2 / 2)
                # float64 by hand from the float32 weights: float32 rounding of the bias's size
                assert abs(f[0, h, i, j].item() - expected) <= fp32_tol(expected, OP_ULPS)


def test_focal_bias_is_added_to_the_scaled_logits():
    """ETADS eq. 8: softmax(QK^T / sqrt(d_k) + f) V through the fused kernel equals the hand formula."""
    torch.manual_seed(0)
    d, heads = 8, 2
    attn, focus = MultiheadAttention(d, heads, self_attention=True).eval(), FocusBias(d, heads)
    x = torch.randn(2, 5, d)
    pad = torch.tensor([[True, True, False, False, False], [False] * 5])
    out, _ = attn(x, key_padding_mask=pad, attn_bias_fn=lambda q, k: focus(q, pad))
    q, k, v = (t.unflatten(-1, (heads, 4)).transpose(1, 2) for t in attn.in_proj(x).chunk(3, -1))
    logits = q @ k.transpose(-1, -2) / 2.0 + focus(q, pad)
    logits = logits.masked_fill(pad[:, None, None, :], float("-inf"))
    expected = attn.out_proj((logits.softmax(-1) @ v).transpose(1, 2).flatten(2))
    # the softmax rounds logits of the focal bias's size (tests/tolerances.py)
    assert fp32_close(out, expected, logits.nan_to_num(neginf=0.0), OP_ULPS)


def test_focus_is_the_same_for_left_and_right_padding():
    torch.manual_seed(0)
    focus = FocusBias(8, 2)
    q = torch.randn(1, 2, 4, 4)
    left = torch.cat([torch.zeros(1, 2, 2, 4), q], dim=2)
    right = torch.cat([q, torch.zeros(1, 2, 2, 4)], dim=2)
    f_left = focus(left, torch.tensor([[True, True, False, False, False, False]]))
    f_right = focus(right, torch.tensor([[False, False, False, False, True, True]]))
    assert fp32_close(f_left[..., 2:, 2:], f_right[..., :4, :4], ulps=OP_ULPS)
    assert fp32_close(f_left[..., 2:, 2:], focus(q, None), ulps=OP_ULPS)  # unpadded: m = S


@pytest.mark.parametrize("m", [1, 7])
def test_collapsed_scope_and_one_token_document_are_finite(m):
    """sigma~ -> 0 (sigmoid underflow) and m = 1: finite bias, outputs and gradients."""
    torch.manual_seed(0)
    d, heads = 8, 2
    focus = FocusBias(d, heads)
    with torch.no_grad():
        focus.u.weight[heads:] = -1e4  # sigma = U_d^T h hugely negative: m * sigmoid(sigma) == 0 in fp32
        focus.w_p.weight.fill_(0.5)
    attn = MultiheadAttention(d, heads, self_attention=True)
    x = torch.ones(1, m, d, requires_grad=True)
    mu_t, sigma_t, _, _ = focus.centres_and_scopes(attn.in_proj(x)[..., :d].unflatten(-1, (heads, 4)).transpose(1, 2))
    assert (sigma_t == SIGMA_MIN).all()  # the floor is what keeps ETADS eq. 7 finite
    out, _ = attn(x, attn_bias_fn=lambda q, k: focus(q))
    out.sum().backward()
    assert torch.isfinite(out).all()
    grads = [p.grad for p in list(attn.parameters()) + list(focus.parameters()) + [x] if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    f = focus(torch.randn(1, heads, m, 4))
    assert torch.isfinite(f).all() and f.min() >= -F_MAX
    if m > 1:  # the nearest real position is never clamped: rows keep a mode
        assert (f.max(-1).values > -F_MAX).all()


@pytest.mark.parametrize("narrow", [False, True])
def test_focus_bias_in_fp16_stays_finite_for_long_documents(narrow):
    """(P - mu~)^2 reaches 400^2 > fp16 max: the bias is computed in fp32, clamped, then cast."""
    torch.manual_seed(0)
    focus = FocusBias(8, 2)
    if narrow:
        with torch.no_grad():
            focus.u.weight[2:] = -1e4  # sigma~ at its floor: f would be -2 * 400^2 / 0.01
    q = torch.randn(1, 2, 400, 4)
    f = focus.half()(q.half())
    assert f.dtype == torch.float16 and torch.isfinite(f).all() and f.min() >= -F_MAX
    if narrow:
        assert f.min() == -F_MAX


# --- saliency selection (ETADS eq. 9-10) ------------------------------------------------------------


def test_saliency_with_unit_gate_equals_plain_attention():
    torch.manual_seed(0)
    attn = MultiheadAttention(8, 2, self_attention=False).eval()
    x, y = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    pad = torch.tensor([[True, False, False, False, False], [False] * 5])
    plain, plain_w = attn(x, y, key_padding_mask=pad, need_weights=True)
    gated, gated_w = attn(x, y, key_padding_mask=pad, need_weights=True,
                          prob_gate_fn=lambda q, k: torch.ones(q.size(0), q.size(1), q.size(2), k.size(2)))
    assert fp32_close(plain, gated, ulps=OP_ULPS) and fp32_close(plain_w, gated_w, 1.0, OP_ULPS)


def test_saliency_matches_hand_computation():
    """g = sigmoid((W_h Q)(W_s K)^T) per head; (g * softmax(QK^T / sqrt(d_k))) V; pad keys excluded."""
    torch.manual_seed(0)
    d, heads, dk = 8, 2, 4
    attn, gate = MultiheadAttention(d, heads, self_attention=False).eval(), SaliencyGate(d, heads)
    x, y = torch.randn(2, 3, d), torch.randn(2, 5, d)
    pad = torch.tensor([[True, True, False, False, False], [False] * 5])
    out, _ = attn(x, y, key_padding_mask=pad, prob_gate_fn=lambda q, k: gate(q, k))
    q = attn.q_proj(x)
    k, v = attn.kv_proj(y).chunk(2, -1)
    hq, sk = gate.w_h(q), gate.w_s(k)
    heads_out = []
    for h in range(heads):
        s = slice(h * dk, (h + 1) * dk)
        logits = (q[..., s] @ k[..., s].transpose(1, 2) / math.sqrt(dk)).masked_fill(pad[:, None, :], float("-inf"))
        g = torch.sigmoid(hq[..., s] @ sk[..., s].transpose(1, 2))
        heads_out.append((g * logits.softmax(-1)) @ v[..., s])
    assert fp32_close(out, attn.out_proj(torch.cat(heads_out, -1)), ulps=OP_ULPS)



def test_memory_saving_autograd_functions_match_autograd():
    """The focal bias and the gated attention recompute their (B, H, T, S) tensors in backward;
    their gradients equal finite differences (float64)."""
    from fairseq_sum_plugins.features.etads_focus import FocalBias
    from fairseq_sum_plugins.features.etads_saliency import GatedAttention

    torch.manual_seed(0)
    dbl = dict(dtype=torch.double, requires_grad=True)
    mu, sigma = torch.rand(2, 3, 5, **dbl), torch.rand(2, 3, 5, dtype=torch.double) * 3 + 0.05
    sigma.requires_grad_()
    with torch.no_grad():
        mu.mul_(6)
    pos = torch.arange(1.0, 7.0, dtype=torch.double).expand(2, 6).contiguous()
    assert torch.autograd.gradcheck(FocalBias.apply, (mu, sigma, pos))  # includes clamped entries
    q, hq = torch.randn(2, 2, 3, 4, **dbl), torch.randn(2, 2, 3, 4, **dbl)
    k, v, sk = (torch.randn(2, 2, 5, 4, **dbl) for _ in range(3))
    pad = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    pad[0, ..., :2] = False
    empty = pad.clone()
    empty[1] = False  # a source of padding only: its rows 0, as SDPA gives
    for mask in (pad, None, empty):
        assert torch.autograd.gradcheck(lambda *a: GatedAttention.apply(*a, mask, 0.5), (q, k, v, hq, sk))


@pytest.mark.parametrize("block_rows", [1, 2, 5])
def test_gated_attention_in_blocks_of_rows_equals_autograd(block_rows, monkeypatch):
    """GatedAttention's blocks of batch rows (1, 2 with a shorter last block, all 5) give plain
    autograd's output and gradients of ETADS eq. 9-10, with padding, a source of padding only and
    an additive mask."""
    from fairseq_sum_plugins.features import etads_saliency as sal

    bsz, heads, tgt_len, src_len, dim = 5, 2, 3, 7, 4
    monkeypatch.setattr(sal, "BLOCK_BYTES", block_rows * heads * tgt_len * src_len * 4)
    assert len(sal.row_blocks(torch.empty(bsz, heads, tgt_len, dim),
                               torch.empty(bsz, heads, src_len, dim))) == -(-bsz // block_rows)
    torch.manual_seed(0)
    q, hq = (torch.randn(bsz, tgt_len, heads, dim).transpose(1, 2).requires_grad_()
             for _ in range(2))
    k, v, sk = (torch.randn(bsz, src_len, heads, dim).transpose(1, 2).requires_grad_()
                for _ in range(3))
    pad = torch.ones(bsz, 1, 1, src_len, dtype=torch.bool)
    pad[0, ..., :3] = False
    pad[3] = False
    for mask in (pad, None, torch.randn(1, heads, tgt_len, src_len)):
        out = sal.GatedAttention.apply(q, k, v, hq, sk, mask, 0.5)
        probs, gate = sal.probs_and_gate(q, k, hq, sk, mask, 0.5)  # under autograd
        ref = (probs * gate) @ v
        grad = torch.randn_like(out)
        got = torch.autograd.grad(out, (q, k, v, hq, sk), grad)
        want = torch.autograd.grad(ref, (q, k, v, hq, sk), grad)
        assert fp32_close(out, ref, ulps=OP_ULPS)
        assert all(fp32_close(a, b, ulps=OP_ULPS) for a, b in zip(got, want))
        if mask is pad:
            assert out[3].abs().max() == 0 and got[0][3].abs().max() == 0


def test_focal_bias_in_place_equals_the_reference_in_float32():
    """FocalBias's in-place forward gives focal_bias_reference's values bit for bit, clamped
    entries included; its backward gives plain autograd's gradients of the reference."""
    from fairseq_sum_plugins.features.etads_focus import F_MAX, FocalBias, focal_bias_reference

    g = torch.Generator().manual_seed(0)
    mu = (torch.rand(2, 3, 7, generator=g) * 40).requires_grad_()
    sigma = (torch.rand(2, 3, 7, generator=g) * 4 + 0.1).requires_grad_()
    pos = torch.arange(1.0, 41.0).expand(2, 40).contiguous()
    ref = focal_bias_reference(mu, sigma, pos)
    out = FocalBias.apply(mu, sigma, pos)
    assert (ref == -F_MAX).any() and (ref > -F_MAX).any()  # both sides of the clamp
    assert torch.equal(out, ref)
    grad = torch.randn(ref.shape, generator=g)
    g_ref = torch.autograd.grad(ref, (mu, sigma), grad)
    g_out = torch.autograd.grad(out, (mu, sigma), grad)
    # the same sums of the same products, grouped as 4 (P - mu) / sigma^2 against autograd's chain
    # of 2 and -2 / sigma^2: a few roundings of the summed terms
    assert all(fp32_close(a, b, ulps=OP_ULPS) for a, b in zip(g_out, g_ref))


def _focus_inputs(dtype, narrow=False, bsz=2, heads=2, length=6, head_dim=3, seed=0):
    """Queries, keys, values ``(B, H, T, d_k)`` (transposed views, as the attention gives them),
    ``mu~``, ``sigma~`` (0.1-0.6 position when ``narrow``, else 0.5-2.5) and the 1-based positions
    of a batch whose first row is left-padded by 2."""
    g = torch.Generator().manual_seed(seed)
    qkv = [torch.randn(bsz, length, heads, head_dim, generator=g, dtype=dtype).transpose(1, 2)
           .requires_grad_() for _ in range(3)]
    mu = (torch.rand(bsz, heads, length, generator=g, dtype=dtype) * length).requires_grad_()
    low, width = (0.1, 0.5) if narrow else (0.5, 2.0)
    sigma = (torch.rand(bsz, heads, length, generator=g, dtype=dtype) * width + low).requires_grad_()
    pad = torch.zeros(bsz, length, dtype=torch.bool)
    pad[0, :2] = True
    return qkv, mu, sigma, pad, (~pad).to(dtype).cumsum(1)


def test_focus_attention_backward_passes_gradcheck():
    """FocusAttention's hand-written backward (dQ, dK, dV, the gradients of mu~ and sigma~, and of
    an additive mask) against finite differences in float64: no mask, a padding mask, and a float
    mask with a gradient (the T5 cell's relative position bias) with the padding in it."""
    from fairseq_sum_plugins.features.etads_focus import FocusAttention

    (q, k, v), mu, sigma, pad, pos = _focus_inputs(torch.float64, length=5)
    keys = pad[:, None, None, :]
    for mask in (None, ~keys):
        assert torch.autograd.gradcheck(
            lambda *a: FocusAttention.apply(*a, pos, mask, 0.5), (q, k, v, mu, sigma))
    bias = torch.randn(1, 2, 5, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda q, k, v, mu, sigma, b: FocusAttention.apply(
            q, k, v, mu, sigma, pos, torch.where(keys, float("-inf"), b), 0.5),
        (q, k, v, mu, sigma, bias))


@pytest.mark.parametrize("block", ["one head", "a row's heads", "all"])
@pytest.mark.parametrize("mask_kind", ["none", "padding", "float", "2-d float", "no key"])
def test_focus_attention_equals_sdpa_with_the_focal_bias(mask_kind, block, monkeypatch):
    """ETADS eq. 8 by FocusAttention against SDPA with FocalBias's materialised bias (the path it
    replaces), float32, narrow focus (sigma~ 0.1-0.6), in blocks of one head, of a batch row's
    three heads and of the whole batch (BLOCK_BYTES): the output and every gradient within a few
    roundings (a source of padding only: 0, as SDPA gives); the probabilities it keeps hold no
    value in (0, FLUSH), where the reference's softmax has subnormal ones."""
    import torch.nn.functional as F

    from fairseq_sum_plugins.features import etads_focus
    from fairseq_sum_plugins.features.etads_focus import FLUSH, FocalBias, FocusAttention

    score_bytes = 40 * 40 * 4
    monkeypatch.setattr(etads_focus, "BLOCK_BYTES",
                        {"one head": score_bytes, "a row's heads": 3 * score_bytes,
                         "all": 6 * score_bytes}[block])
    assert len(etads_focus.score_blocks(2, 3, 40, 40, 4)) == {"one head": 6, "a row's heads": 2,
                                                            "all": 1}[block]
    (q, k, v), mu, sigma, pad, pos = _focus_inputs(torch.float32, narrow=True, heads=3, length=40)
    bias = torch.randn(1, 3, 40, 40, requires_grad=True)
    plane = torch.randn(40, 40, requires_grad=True)
    keys = pad[:, None, None, :]
    empty = keys.clone()
    empty[1] = True  # the second source: padding only

    def mask():
        return {"none": None, "padding": ~keys, "no key": ~empty,
                "float": torch.where(keys, float("-inf"), bias), "2-d float": plane}[mask_kind]

    inputs = [q, k, v, mu, sigma] + {"float": [bias], "2-d float": [plane]}.get(mask_kind, [])
    out = FocusAttention.apply(q, k, v, mu, sigma, pos, mask(), 0.5)
    kept = out.grad_fn.saved_tensors[3]  # the probabilities
    focal = FocalBias.apply(mu, sigma, pos)
    m = mask()
    logits = focal if m is None else (focal.masked_fill(~m, float("-inf")) if m.dtype == torch.bool
                                      else focal + m)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=logits, scale=0.5)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    got, want = (torch.autograd.grad(o, inputs, grad) for o in (out, ref))
    # the same products and sums in another order (one GEMM into the bias, SDPA's scaled q and k,
    # the bias gradients summed from dS here, by FocalBias's backward there): a few roundings of
    # the largest value passed through (the output; for a gradient, 4x its largest entry, as in
    # 4 (P - mu~) / sigma~^2)
    assert fp32_close(out, ref, ulps=OP_ULPS)
    for a, b in zip(got, want):
        assert fp32_close(a, b, magnitude=b.abs().max() * 4, ulps=OP_ULPS)
    assert kept.shape == (2, 3, 40, 40) and not ((kept > 0) & (kept < FLUSH)).any()
    if mask_kind == "no key":
        assert out[1].abs().max() == 0 and got[0][1].abs().max() == 0
    probs = torch.softmax(logits.detach() + 0.5 * q.detach() @ k.detach().transpose(-1, -2), -1)
    assert ((probs > 0) & (probs < torch.finfo(torch.float32).tiny)).any()  # subnormals there


@pytest.mark.parametrize("arch", ["etads_base", "t5_transformer_small"])
def test_focus_attention_is_the_training_path_and_equals_the_materialised_bias(monkeypatch, arch):
    """In training (float32, CPU, no attention dropout) every focus layer attends by
    FocusAttention, and the loss and every parameter gradient equal those of the materialised bias
    through SDPA (MultiheadAttention.fused_bias_path False: the reference), on the default cell and
    on the T5 cell (whose relative position bias takes its gradient through the fused path).
    Without gradients (inference) the bias is materialised."""
    from fairseq_sum_plugins.features.etads_focus import FocusAttention

    calls = []
    apply = FocusAttention.apply
    monkeypatch.setattr(FocusAttention, "apply",
                        staticmethod(lambda *a: calls.append(1) or apply(*a)))
    torch.manual_seed(0)
    model, d = build_model(arch, focus_layers="all", saliency_layers="none", **ETADS)
    model.train()
    src, lengths, prev = random_batch(d, bsz=3, src_len=9)

    def loss_and_grads(fused):
        for m in model.modules():
            if isinstance(m, MultiheadAttention):
                m.fused_bias_path = fused
        model.zero_grad()
        loss = model(src, lengths, prev)[0].float().log_softmax(-1).mean()
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    loss, grads = loss_and_grads(True)
    assert len(calls) == 2  # one per encoder layer
    ref_loss, ref_grads = loss_and_grads(False)
    assert len(calls) == 2
    assert fp32_close(loss, ref_loss) and len(grads) == len(ref_grads)
    assert all(fp32_close(a, b) for a, b in zip(grads, ref_grads))
    with torch.no_grad():
        model(src, lengths, prev)
    assert len(calls) == 2


def test_gated_training_path_equals_explicit_path():
    torch.manual_seed(0)
    attn, gate = MultiheadAttention(8, 2, self_attention=False).train(), SaliencyGate(8, 2)
    x, y = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    pad = torch.tensor([[True, False, False, False, False], [False] * 5])
    fast, _ = attn(x, y, key_padding_mask=pad, prob_gate_fn=lambda q, k: gate(q, k))  # GatedAttention
    slow, _ = attn(x, y, key_padding_mask=pad, prob_gate_fn=lambda q, k: gate(q, k).gate())  # autograd
    assert fp32_close(fast, slow, ulps=OP_ULPS)
    g_fast = torch.autograd.grad(fast.sum(), list(attn.parameters()) + list(gate.parameters()))
    g_slow = torch.autograd.grad(slow.sum(), list(attn.parameters()) + list(gate.parameters()))
    assert all(fp32_close(a, b, ulps=OP_ULPS) for a, b in zip(g_fast, g_slow))

# --- placement flags and presets --------------------------------------------------------------


def test_parse_layers():
    assert parse_layers("all", 4) == {0, 1, 2, 3}
    assert parse_layers("none", 4) == set() == parse_layers("", 4) == parse_layers(None, 4)
    assert parse_layers("1,2", 4) == {0, 1} == parse_layers("[1-2]", 4)
    assert parse_layers("3-4", 4) == {2, 3}
    with pytest.raises(ValueError, match="outside 1..4"):
        parse_layers("5", 4, "--focus-layers")
    with pytest.raises(ValueError, match="--saliency-layers"):
        parse_layers("first", 4, "--saliency-layers")


def test_presets_and_placement():
    model, _ = build_model("etads_base", make_dictionary(100))
    enc, dec = model.encoder.layers, model.decoder.layers
    assert len(enc) == len(dec) == 4 and model.encoder.layer_norm is None  # post-LN (§3.1)
    assert all(l.focus is not None for l in enc) and all(l.saliency is not None for l in dec)
    assert model.encoder.embed_tokens is model.decoder.embed_tokens  # shared vocabulary
    base, _ = build_model("etads_baseline", make_dictionary(100))
    assert all(l.focus is None for l in base.encoder.layers) and all(l.saliency is None for l in base.decoder.layers)
    d, h = 512, 8  # overhead: W_p, W_g, U_c, U_d per focus layer; W_h, W_s per saliency layer
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert n(model) - n(base) == 4 * (2 * d * d + 2 * h * d) + 4 * (2 * d * d)
    tiny, _ = build_model("etads_base", **ETADS)  # W_p, W_g, U per focus layer; W_h, W_s per saliency layer
    assert len([n for n, _ in tiny.named_parameters() if ".focus." in n or ".saliency." in n]) == 2 * 3 + 2 * 2
    placed, _ = build_model("etads_base", focus_layers="1,2", saliency_layers="none", **ETADS)
    assert [l.focus is not None for l in placed.encoder.layers] == [True, True]
    assert all(l.saliency is None for l in placed.decoder.layers)
    other, _ = build_model("tp_transformer_small", focus_layers="1", saliency_layers="2", **ETADS, tpr_roles=5)
    assert other.encoder.layers[0].focus is not None and other.encoder.layers[1].focus is None
    assert other.decoder.layers[1].saliency is not None and other.decoder.layers[0].saliency is None


# --- GNMT length / coverage penalties (§4.1) --------------------------------------------------


def test_penalty_functions_match_hand_computation():
    from fairseq_sum_plugins.tasks.sequence_generator import coverage_penalty, gnmt_length_penalty

    assert gnmt_length_penalty(3, 0.9) == approx64((8 / 6) ** 0.9)
    attn = torch.tensor([[[0.5, 0.7], [0.2, 0.1], [0.3, 0.2], [0.0, 0.0]]])  # (N, S, T); last source slot is pad
    real = torch.tensor([[True, True, True, False]])
    wu = coverage_penalty(attn, real, 5.0)  # 5 * (log min(1.2, 1) + log 0.3 + log 0.5)
    expected = 5 * (math.log(0.3) + math.log(0.5))  # float64 by hand against float32
    assert wu.item() == pytest.approx(expected, abs=fp32_tol(expected, OP_ULPS))
    summary = coverage_penalty(attn, real, 5.0, "summary")  # -5 * (0.2 + 0 + 0)
    # 1.2 - 1 in float32
    assert summary.item() == pytest.approx(-1.0, abs=fp32_tol(5 * 1.2, OP_ULPS))


def _hand_score(model, src, hyp, alpha, beta, kind="wu", lenpen=None):
    """(s(Y, X), log P(Y | X)) for one unpadded source and hypothesis, from a teacher-forced forward.
    ``alpha=None``: fairseq's normalization log P / |Y| ** lenpen instead of the GNMT length penalty."""
    prev = torch.cat([hyp.new_tensor([model.decoder.dictionary.eos()]), hyp[:-1]])[None]
    with torch.no_grad():
        logits, extra = model(src[None], torch.tensor([src.numel()]), prev)
    lprobs = logits.log_softmax(-1)[0]
    log_p = sum(lprobs[i, int(t)].item() for i, t in enumerate(hyp))
    attn = extra["attn"][0][0]  # (|Y|, S): last layer, averaged over heads
    coverage = [sum(attn[i, j].item() for i in range(attn.size(0))) for j in range(attn.size(1))]
    lp = ((5 + len(hyp)) / 6) ** alpha if alpha is not None else len(hyp) ** lenpen
    if kind == "wu":
        cp = beta * sum(math.log(min(c, 1.0)) for c in coverage)
    else:
        cp = -beta * sum(max(c, 1.0) - 1.0 for c in coverage)
    return log_p / lp + cp, log_p


@pytest.mark.parametrize("left_pad_source,kind,alpha,beta,max_len", [
    (False, "wu", 0.9, 5.0, 5), (True, "summary", 0.9, 5.0, 5), (False, "summary", None, 5.0, 5),
    (True, "wu", 0.9, 1.0, 3),  # ETADS §4.1 read as GNMT's penalty, coverage weight 1 (2-3 steps)
])
def test_beam_scores_equal_hand_computed_gnmt_scores(left_pad_source, kind, alpha, beta, max_len):
    """Every finished hypothesis of a tiny beam (ragged, padded batch) is scored by
    log P / lp + cp, recomputed by hand on the unpadded source; hypotheses come best first, and the
    positional scores stay the per-token log-probabilities (they sum to log P, EOS included).
    Without --lenpen-gnmt, lp is fairseq's |Y| ** lenpen and cp is added after the division."""
    from fairseq_sum_plugins.tasks.sequence_generator import GNMTSequenceGenerator

    torch.manual_seed(0)
    model, d = build_model("etads_base", **ETADS)
    model.eval()
    model.decoder.need_attn = True
    src, lengths, _ = random_batch(d, bsz=3, src_len=7, left_pad_source=left_pad_source)
    gen = GNMTSequenceGenerator([model], d, beam_size=3, max_len_a=0, max_len_b=max_len, min_len=2, len_penalty=1.5,
                                lenpen_gnmt=alpha, coverage_penalty=beta, coverage_penalty_type=kind)
    with torch.no_grad():
        hypos = gen.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
    for b, beam in enumerate(hypos):
        n = int(lengths[b])
        alone = src[b, src.size(1) - n :] if left_pad_source else src[b, :n]
        assert len(beam) == 3
        scores = [h["score"].item() for h in beam]
        assert scores == sorted(scores, reverse=True)
        for h in beam:
            assert len(h["tokens"]) >= 3  # min_len 2 + EOS
            assert 3 <= len(h["tokens"]) <= max_len + 1
            score, log_p = _hand_score(model, alone, h["tokens"], alpha, beta, kind, lenpen=1.5)
            # per-token log-probs of another batch (padded, incremental) add their rounding
            tol = fp32_tol(abs(score) + abs(log_p), MODEL_ULPS)
            assert h["score"].item() == pytest.approx(score, abs=tol)
            assert h["positional_scores"].sum().item() == pytest.approx(log_p, abs=tol)
            assert (h["positional_scores"] <= 0).all()


def test_etads_coverage_weight_1_from_the_command_line_flags():
    """The flags ETADS's decoding is read as (sequence_generator.py): --coverage-penalty 1
    --coverage-penalty-type wu --lenpen-gnmt 0.9, through fairseq-generate's parser."""
    from fairseq import options

    from fairseq_sum_plugins.tasks.sequence_generator import GNMTSequenceGenerator
    from fairseq_sum_plugins.tasks.summarization import SummarizationConfig, SummarizationTask

    parser = options.get_generation_parser(default_task="summarization")
    args = options.parse_args_and_arch(parser, [
        "data", "--user-dir", os.path.join(REPO, "fairseq_sum_plugins"), "--task", "summarization",
        "--beam", "10", "--min-len", "35", "--lenpen-gnmt", "0.9", "--coverage-penalty", "1",
        "--coverage-penalty-type", "wu"])
    assert (args.coverage_penalty, args.coverage_penalty_type, args.lenpen_gnmt) == (1.0, "wu", 0.9)
    d = make_dictionary()
    model, _ = build_model("etads_base", d, **ETADS)
    task = SummarizationTask(SummarizationConfig(), d, d)
    gen = task.build_generator([model], args)
    assert isinstance(gen, GNMTSequenceGenerator)
    assert (gen.coverage_beta, gen.coverage_kind, gen.lenpen_gnmt, gen.beam_size) == (1.0, "wu", 0.9, 10)


def test_parameter_counts_at_the_papers_vocabulary():
    """ETADS §4.1 at its 50,000-word vocabulary (the counts its presets' docstring states), b^o
    (eq. 4) included; the two extensions at 4+4 layers hold 4,227,072 (Table 4's "4246K" is of that
    order; the paper does not say what it counts)."""
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(50000 - 4):
        d.add_symbol(f"w{i}")
    with torch.device("meta"):
        full, _ = build_model("etads_base", d)
        basic, _ = build_model("etads_baseline", d)
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert (n(full), n(basic)) == (59_302_736, 55_075_664)
    assert full.decoder.output_bias.numel() == basic.decoder.output_bias.numel() == 50000
    assert n(full) - n(basic) == 4_227_072


def test_task_builds_the_gnmt_generator_from_its_flags():
    from argparse import Namespace

    from fairseq_sum_plugins.tasks.sequence_generator import GNMTSequenceGenerator
    from fairseq_sum_plugins.tasks.summarization import SummarizationConfig, SummarizationTask

    d = make_dictionary()
    model, _ = build_model("etads_base", d, **ETADS)
    plain = SummarizationTask(SummarizationConfig(), d, d).build_generator([model], Namespace(beam=2))
    assert type(plain).__name__ == "SequenceGenerator" and not model.decoder.need_attn
    task = SummarizationTask(SummarizationConfig(lenpen_gnmt=0.9, coverage_penalty=5.0), d, d)
    gen = task.build_generator([model], Namespace(beam=10, min_len=35))
    assert isinstance(gen, GNMTSequenceGenerator) and gen.lenpen_gnmt == 0.9 and gen.coverage_beta == 5.0
    assert gen.beam_size == 10 and gen.min_len == 35 and model.decoder.need_attn


# --- CLI round trip ---------------------------------------------------------------------------


def _run(*cmd):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 0, f"{' '.join(cmd[:2])} failed:\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
def test_cli_train_and_generate_with_gnmt_penalties(toy_data, tmp_path):
    bindir = os.path.dirname(sys.executable)
    user_dir = os.path.join(REPO, "fairseq_sum_plugins")
    _run(os.path.join(bindir, "fairseq-train"), toy_data, "--user-dir", user_dir, "--task", "summarization",
         "--arch", "etads_base", "--encoder-layers", "2", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
         "--encoder-attention-heads", "4", "--focus-layers", "1", "--criterion", "summarization_loss",
         "--label-smoothing", "0.1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.998)", "--clip-norm", "2",
         "--lr", "0.003", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "4", "--max-tokens", "1000",
         "--max-update", "6", "--save-dir", str(tmp_path), "--no-epoch-checkpoints", "--log-format", "simple")
    ckpt = str(tmp_path / "checkpoint_last.pt")
    gen = _run(os.path.join(bindir, "fairseq-generate"), toy_data, "--user-dir", user_dir, "--task", "summarization",
               "--path", ckpt, "--gen-subset", "test", "--beam", "3", "--batch-size", "5", "--max-len-b", "8",
               "--lenpen-gnmt", "0.9", "--coverage-penalty", "5", "--min-len", "3")
    hyps = [l.split("\t") for l in gen.stdout.splitlines() if l.startswith("H-")]
    assert sorted(int(h[0][2:]) for h in hyps) == list(range(12))
    assert all(len(h[2].split()) >= 3 for h in hyps)  # --min-len 3
    assert all(math.isfinite(float(h[1])) for h in hyps)
    # the focus-centre plot of the same checkpoint
    png, js = tmp_path / "focus.png", tmp_path / "focus.json"
    from fairseq_sum_plugins.inspection import focus_plot  # in-process: what `python -m ...focus_plot` runs

    every = tmp_path / "focus_all.json"
    focus_plot.main([toy_data, "--path", ckpt, "--split", "test", "--document", "0", "--png", str(png), "--json", str(js),
                     "--all-json", str(every)])
    import json

    focus = json.loads(js.read_text())
    stats = json.loads(every.read_text())  # every test document; document 0 as the plotted one
    assert stats["documents"] == 12 and [d["index"] for d in stats["per_document"]] == list(range(12))
    assert (stats["per_document"][0]["distance"], stats["per_document"][0]["scope"]) == focus_plot.focus_stats(focus)
    distances = [d["distance"] for d in stats["per_document"]]
    assert stats["distance_mean"] == approx64(sum(distances) / 12)
    assert list(focus) == ["layers.0.focus"] and png.stat().st_size > 5000  # --focus-layers 1
    layer = focus["layers.0.focus"]
    assert len(layer["mu"]) == 4 and all(len(row) == layer["m"] for row in layer["mu"])
    assert all(0 <= v <= layer["m"] for row in layer["mu"] for v in row)
    assert all(SIGMA_MIN <= v <= layer["m"] for row in layer["sigma"] for v in row)


def test_focus_stats_and_their_spread_by_hand():
    """One layer, one head, m = 2: centres (1, 3) against positions (1, 2) are 0 and 1 away, mean 0.5,
    a quarter of m; scopes (1, 1) are half of m. Mean and sample s.d. of (0.2, 0.4): 0.3, 0.1414."""
    from fairseq_sum_plugins.inspection.focus_plot import focus_stats, mean_sd

    assert focus_stats({"layers.0.focus": {"mu": [[1.0, 3.0]], "sigma": [[1.0, 1.0]], "m": 2}}) == (0.25, 0.5)
    mean, sd = mean_sd([0.2, 0.4])
    assert mean == approx64(0.3) and sd == approx64(0.02 ** 0.5)
    assert mean_sd([0.7]) == (0.7, 0.0)


@pytest.mark.parametrize("kwargs,message", [
    (dict(coverage_penalty=-1.0), "--coverage-penalty -1.0"),
    (dict(coverage_penalty=float("nan")), "--coverage-penalty nan"),
    (dict(coverage_penalty=float("inf")), "--coverage-penalty inf"),
    (dict(lenpen_gnmt=float("nan")), "--lenpen-gnmt nan"),
])
def test_gnmt_generator_refuses_a_negative_or_non_finite_weight(kwargs, message):
    """A negative beta rewarded leaving the source uncovered (fairseq-generate --coverage-penalty -1
    scored hypotheses +49); NaN made every score NaN."""
    from fairseq_sum_plugins.tasks.sequence_generator import GNMTSequenceGenerator

    model, d = build_model("etads_base", **ETADS)
    with pytest.raises(ValueError, match=re.escape(message)):
        GNMTSequenceGenerator([model], d, beam_size=2, **kwargs)


def test_focus_bias_reference_switch_gives_the_same_bias():
    """FocusBias.fused_bias False (bench_train --ablate focal_bias) runs the reference under
    autograd: the same bias, and the same parameter gradients within rounding."""
    from fairseq_sum_plugins.features.etads_focus import FocusBias

    torch.manual_seed(0)
    fused = FocusBias(16, 4)
    q = torch.randn(2, 4, 9, 4)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[0, :3] = True
    bench = load_script("benchmarks", "bench_train.py")
    ref = FocusBias(16, 4)
    ref.load_state_dict(fused.state_dict())
    assert bench.FAST_PATHS["focal_bias"]() is True
    bench.ablated({"model": ref}, "focal_bias")
    assert ref.fused_bias is False and fused.fused_bias is True
    a, b = fused(q, pad), ref(q, pad)
    assert torch.equal(a, b)
    grad = torch.randn(a.shape)
    ga = torch.autograd.grad(a, list(fused.parameters()), grad)
    gb = torch.autograd.grad(b, list(ref.parameters()), grad)
    assert all(fp32_close(x, y, ulps=MODEL_ULPS) for x, y in zip(ga, gb))
