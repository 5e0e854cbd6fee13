"""TP-Transformer: TPR equations, parameter counts, attention paths (the model contract: test_model_contract.py)."""
import contextlib
import math

import pytest
import torch
import torch.nn.functional as F

from helpers import build_model, random_batch
from tolerances import OP_ULPS, bf16_close, fp32_close, fp64_close
from fairseq_sum_plugins.modules.attention import MultiheadAttention
from fairseq_sum_plugins.features.tp_transformer import DiscreteBinding, TPRBinding, shared_role_normalization

# --- TPT eq. 4-6 against a hand computation ------------------------------------------------------


def test_discrete_binding_matches_hand_computation():
    torch.manual_seed(0)
    d_m, heads, n_roles, d_r = 4, 2, 3, 2
    tpr = TPRBinding(d_m, heads, "discrete", n_roles, d_r)
    with torch.no_grad():
        tpr.role_proj.weight.copy_(torch.arange(24.0).view(6, 4) / 10 - 1)
        tpr.role_proj.bias.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0, 0.5, -0.5]))
        tpr.roles.copy_(torch.tensor([[3.0, 4.0], [1.0, 0.0], [0.0, -2.0]]))
    f = torch.tensor([0.5, -1.0, 2.0, 0.25])

    # by hand, element by element
    roles_hat = [[0.6, 0.8], [1.0, 0.0], [0.0, -1.0]]  # r_n / ||r_n|| (TPT eq. 4)
    w, b = tpr.role_proj.weight.tolist(), tpr.role_proj.bias.tolist()
    scores = [sum(w[j][k] * f[k].item() for k in range(4)) + b[j] for j in range(6)]
    expected_r = []
    for h in range(heads):  # R^h = softmax(F W_r^h) r_hat (TPT eq. 5)
        s = scores[h * n_roles : (h + 1) * n_roles]
        z = sum(math.exp(x) for x in s)
        p = [math.exp(x) / z for x in s]
        expected_r += [sum(p[n] * roles_hat[n][c] for n in range(n_roles)) for c in range(d_r)]
    expected = [expected_r[i] * f[i].item() + f[i].item() for i in range(4)]  # R ⊙ F + F (TPT eq. 6)

    assert fp32_close(tpr(f), torch.tensor(expected), ulps=OP_ULPS)  # float64 by hand


def test_continuous_binding_starts_as_identity_and_learns():
    tpr = TPRBinding(6, 2, "continuous")
    f = torch.randn(3, 6, requires_grad=True)
    assert torch.equal(tpr(f), f)  # W = 0, b = 0 at initialisation
    tpr(f).pow(2).sum().backward()
    assert tpr.role_proj.weight.grad.abs().sum() > 0


def test_continuous_base_model_is_finite_at_initialisation():
    """R = F W + b is quadratic in the stream: a random W overflowed 6 layers (see TPRBinding)."""
    torch.manual_seed(0)
    model, d = build_model("tp_transformer_continuous_default_cell_base", dropout=0.0)
    src, lengths, prev = random_batch(d, bsz=2, src_len=64, tgt_len=16)
    with torch.no_grad():
        out, _ = model(src, lengths, prev)
    assert torch.isfinite(out).all() and out.abs().max() < 1e3


def test_continuous_binding_is_affine_roles_times_filler():
    torch.manual_seed(0)
    tpr = TPRBinding(6, 2, "continuous")
    torch.nn.init.normal_(tpr.role_proj.weight)
    torch.nn.init.normal_(tpr.role_proj.bias)
    f = torch.randn(3, 6)
    r = f @ tpr.role_proj.weight.T + tpr.role_proj.bias
    assert fp32_close(tpr(f), r * f + f, ulps=OP_ULPS)


def test_discrete_roles_need_heads_times_role_dim_equal_model_dim():
    with pytest.raises(ValueError, match="heads \\* role_dim == embed_dim"):
        TPRBinding(512, 8, "discrete", 50, 32)


def test_role_dictionary_is_normalised_in_forward_not_in_place():
    tpr = TPRBinding(4, 2, "discrete", 3, 2)
    with torch.no_grad():
        tpr.roles.mul_(10)
    before = tpr.roles.detach().clone()
    tpr(torch.randn(5, 4))
    assert torch.equal(tpr.roles, before)


# --- the fused binding (hand-written backward) and the shared role normalisation ----------------


def test_fused_discrete_binding_gradients_pass_gradcheck():
    torch.manual_seed(0)
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(6, dtype=torch.float64, requires_grad=True)
    unit = F.normalize(torch.randn(3, 2, dtype=torch.float64), dim=-1).requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: DiscreteBinding.apply(*a)[0], (x, weight, bias, unit))


@pytest.mark.parametrize("zero_role", [False, True])
def test_fused_binding_equals_the_plain_equations_with_gradients(zero_role):
    torch.manual_seed(0)
    tpr = TPRBinding(8, 2, "discrete", 5, 4).double()
    if zero_role:  # r / max(||r||, eps) for a zero row: the path F.normalize takes
        with torch.no_grad():
            tpr.roles[1].zero_()
    f = torch.randn(3, 4, 8, dtype=torch.float64, requires_grad=True)
    g = torch.randn(3, 4, 8, dtype=torch.float64)
    wrt = [f, *tpr.parameters()]
    fused, plain = tpr(f), tpr.reference(f)
    assert fp64_close(fused, plain)
    for a, b in zip(torch.autograd.grad(fused, wrt, g), torch.autograd.grad(plain, wrt, g)):
        assert fp64_close(a, b)


def test_fused_binding_under_autocast_matches_the_plain_equations():
    """--amp: the scores run in half precision while fillers and parameters stay fp32."""
    torch.manual_seed(0)
    tpr = TPRBinding(8, 2, "discrete", 5, 4)
    f = torch.randn(6, 8, requires_grad=True)
    wrt = [f, *tpr.parameters()]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fused, plain = tpr(f), tpr.reference(f)
        grads = [torch.autograd.grad(y.float().pow(2).sum(), wrt) for y in (fused, plain)]
    assert fused.dtype == plain.dtype
    assert bf16_close(fused, plain)
    for a, b in zip(*grads):
        assert a.dtype == b.dtype and torch.isfinite(a).all()
        assert bf16_close(a, b)


def test_shared_role_normalisation_changes_nothing_but_the_op_count(tiny_overrides):
    torch.manual_seed(0)
    model, d = build_model("tp_transformer_small", **tiny_overrides)
    model.double()
    src, lengths, prev = random_batch(d, bsz=2, src_len=9, tgt_len=5)

    def run():
        model.zero_grad()
        out, _ = model(src, lengths, prev)
        out.sum().backward()
        return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    shared = run()
    from dataclasses import replace

    from fairseq_sum_plugins.modules.features import FEATURES

    name = "TP-Transformer role binding (--tpr)"
    original = FEATURES[name]
    FEATURES[name] = replace(original, stack_context=None)  # the backbones enter no shared normalisation
    try:
        own = run()  # every binding normalises its own dictionary
    finally:
        FEATURES[name] = original
    # the same normalisation of the same roles, computed once or per binding: bit for bit
    assert torch.equal(shared[0], own[0])
    assert all(torch.equal(shared[1][n], own[1][n]) for n in own[1])
    assert all(m.unit_roles is None for m in model.modules() if isinstance(m, TPRBinding))  # context closed

    # the stacked normalisation is what the bindings read inside the context
    with shared_role_normalization(model.encoder.layers):
        b = model.encoder.layers[0].self_attn_binding
        assert torch.equal(b.unit_roles, F.normalize(b.roles, dim=-1))


# --- parameter counts ------------------------------------------------------------------------


def expected_params(vocab, d, f, layers, heads, tpr, n_roles=50, d_r=64):
    attn = 4 * d * d + 4 * d
    ffn = 2 * d * f + f + d
    ln = 2 * d
    if tpr == "none":
        bind = 0
    elif tpr == "discrete":
        bind = d * heads * n_roles + heads * n_roles + n_roles * d_r  # W_r, b_r, role dictionary
    else:
        bind = d * d + d
    enc_layer = attn + ffn + 2 * ln + bind
    dec_layer = 2 * attn + ffn + 3 * ln + 2 * bind
    return vocab * d + layers * (enc_layer + dec_layer) + 2 * ln  # shared embeddings + final LNs


@pytest.mark.parametrize(
    "arch,tpr",
    [("t5_transformer_default_cell_base", "none"), ("tp_transformer_default_cell_base", "discrete"),
     ("tp_transformer_continuous_default_cell_base", "continuous")],
)
def test_parameter_count_formula(arch, tpr):
    from helpers import make_dictionary

    dictionary = make_dictionary(1000)
    model, _ = build_model(arch, dictionary)
    got = sum(p.numel() for p in model.parameters())
    assert got == expected_params(len(dictionary), 512, 2048, 6, 8, tpr)


def param_count_at_32128(arch):
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(32128 - 4):
        d.add_symbol(f"w{i}")
    with torch.device("meta"):  # shapes only
        model, _ = build_model(arch, d)
    return sum(p.numel() for p in model.parameters()), model


@pytest.mark.parametrize("arch,alias,tpr,count", [
    ("t5_transformer_base", "t5_transformer_t5_small", "none", 60_506_880),  # Transformer
    ("tp_transformer_continuous_base", "tp_transformer_continuous_t5_small", "continuous", 65_234_688),  # TPT-c
    ("tp_transformer_base", "tp_transformer_t5_small", "discrete", 64_258_080),  # TPT-d
])
def test_the_papers_names_build_app_b_models_exactly(arch, alias, tpr, count):
    """App. B: "The total number of parameter of the Transformer, TP-TRANSFORMER with continuous
    roles, and our TP-TRANSFORMER with discrete roles are 60506880, 65234688, and 64258080": the
    names the design card uses are those models, on the T5 cell; the earlier names build the same."""
    for name in (arch, alias):
        got, model = param_count_at_32128(name)
        assert got == count, name
        assert model.encoder.t5 and model.decoder.cross_position is not None
        binding = model.encoder.layers[0].binding_features
        assert getattr(binding[0], "mode", "none") == tpr


@pytest.mark.parametrize("arch,count", [
    ("t5_transformer_default_cell_base", 60_590_080),
    ("tp_transformer_continuous_default_cell_base", 65_317_888),
    ("tp_transformer_default_cell_base", 64_341_280),
])
def test_default_cell_variants_keep_their_models(arch, count):
    """The default cell (LayerNorm with bias, sinusoidal positions, feed-forward biases) at App. B's
    dims: the models the names above built before they meant App. B's."""
    got, model = param_count_at_32128(arch)
    assert got == count and not model.encoder.t5 and model.encoder.embed_positions is not None


def test_role_binding_parameter_overhead_equals_the_papers():
    """App. B: Transformer 60,506,880; TPT-c 65,234,688; TPT-d 64,258,080 parameters. Our cell
    differs from T5's (biases, LayerNorm, positions), but the binding overhead must be identical."""
    base = expected_params(32128, 512, 2048, 6, 8, "none")
    assert expected_params(32128, 512, 2048, 6, 8, "continuous") - base == 65234688 - 60506880
    assert expected_params(32128, 512, 2048, 6, 8, "discrete") - base == 64258080 - 60506880


# --- forward behaviour -----------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_fused_and_explicit_attention_agree(causal):
    torch.manual_seed(0)
    attn = MultiheadAttention(16, 4, self_attention=True).eval()
    x = torch.randn(2, 5, 16)
    pad = torch.tensor([[True, False, False, False, False], [False] * 5])
    bias = torch.randn(2, 4, 5, 5)
    for mask_kwargs in ({}, {"key_padding_mask": pad}, {"attn_bias": bias}, {"key_padding_mask": pad, "attn_bias": bias}):
        fused, _ = attn(x, causal=causal, **mask_kwargs)
        explicit, weights = attn(x, causal=causal, need_weights=True, **mask_kwargs)
        # the softmax rounds logits of the bias's size (tests/tolerances.py)
        assert fp32_close(fused, explicit, bias.abs().max() + 1, OP_ULPS), mask_kwargs
        live = weights.sum(-1) > 0  # a causal row whose only key is padding attends to nothing
        assert fp32_close(weights.sum(-1)[live], torch.ones_like(weights.sum(-1)[live]), 1.0,
                          OP_ULPS)


def test_attention_matches_equation_2():
    """softmax(QK^T / sqrt(d_k)) V with W_q, W_k, W_v, W_o (TPT eq. 1-3), computed by hand."""
    torch.manual_seed(0)
    d, h = 8, 2
    attn = MultiheadAttention(d, h, self_attention=False).eval()
    x, y = torch.randn(1, 3, d), torch.randn(1, 4, d)
    out, _ = attn(x, y)
    q = attn.q_proj(x)
    k, v = attn.kv_proj(y).chunk(2, -1)
    heads = []
    for i in range(h):
        s = slice(i * 4, (i + 1) * 4)
        p = F.softmax(q[..., s] @ k[..., s].transpose(1, 2) / math.sqrt(4), -1)
        heads.append(p @ v[..., s])
    assert fp32_close(out, attn.out_proj(torch.cat(heads, -1)), ulps=OP_ULPS)


def test_post_ln_variant_has_no_final_layer_norm(tiny_overrides):
    """(incremental decoding of the post-LN cell: tests/test_model_contract.py)"""
    model, d = build_model("tp_transformer_small", encoder_normalize_before=False, **tiny_overrides)
    assert model.encoder.layer_norm is None and model.decoder.layer_norm is None
