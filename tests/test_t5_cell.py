"""The exact T5 v1.0 cell (``--cell t5``): its pieces against hand computation, App. B's parameter
counts. Every paper feature composed with it keeps the model contract: the T5 rows of
``test_model_contract.CELLS``."""
import math

import pytest
import torch

from helpers import build_model, make_dictionary, random_batch
from tolerances import OP_ULPS, fp32_close

from fairseq.data import Dictionary
from fairseq_sum_plugins.modules.t5 import RelativePositionBias, T5LayerNorm, relative_position_bucket

torch.set_num_threads(1)


def test_rms_norm_is_hand_computation():
    norm = T5LayerNorm(4)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 0.5, -1.0]))
    x = torch.tensor([[3.0, -1.0, 2.0, 0.0]])
    rms = math.sqrt((9 + 1 + 4 + 0) / 4 + 1e-6)  # no mean subtracted
    expected = torch.tensor([[3 / rms, -2 / rms, 1 / rms, 0.0]])
    assert fp32_close(norm(x), expected, x, OP_ULPS)  # float64 by hand against float32
    assert [n for n, _ in norm.named_parameters()] == ["weight"]  # no bias


def test_bucket_values_by_hand():
    rel = torch.tensor([0, -1, 1, -7, -8, -9, -200, 200])
    # bidirectional, 32 buckets: 16 per direction, 8 exact, log-spaced up to 128; keys after the query +16
    bi = relative_position_bucket(rel, True, 32, 128)
    log_bucket = lambda n, m: m + int(math.log(n / m) / math.log(128 / m) * m)  # noqa: E731
    assert bi.tolist() == [0, 1, 17, 7, log_bucket(8, 8), log_bucket(9, 8), 15, 31]
    # causal: all 32 buckets for the past, a future key (masked anyway) in bucket 0
    causal = relative_position_bucket(rel, False, 32, 128)
    assert causal.tolist() == [0, 1, 0, 7, 8, 9, 31, 0]  # 16 exact buckets
    assert log_bucket(20, 16) == causal_at(-20)


def causal_at(r):
    return relative_position_bucket(torch.tensor([r]), False, 32, 128).item()


def test_buckets_equal_hugging_face():
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    rel = torch.arange(-300, 300)[None, :]
    for bidirectional in (True, False):
        ours = relative_position_bucket(rel, bidirectional, 32, 128)
        theirs = t5.T5Attention._relative_position_bucket(rel, bidirectional, 32, 128)
        assert torch.equal(ours, theirs)


def test_position_bias_table_lookup():
    table = RelativePositionBias(num_heads=2, num_buckets=8, max_distance=16, bidirectional=True, d_model=4)
    bias = table(torch.arange(3), torch.arange(3))  # (1, H, T, S)
    w = table.relative_attention_bias.weight
    assert bias.shape == (1, 2, 3, 3)
    assert torch.equal(bias[0, :, 0, 2], w[4 + 2])  # key 2 after query 0: bucket 4 + 2 (a lookup)
    assert torch.equal(bias[0, :, 2, 0], w[2])


def t5_param_count(arch):
    d = Dictionary()
    for i in range(32128 - 4):
        d.add_symbol(f"w{i}")
    with torch.device("meta"):
        model, _ = build_model(arch, d)
    return sum(p.numel() for p in model.parameters())


def test_app_b_parameter_counts_at_vocabulary_32128():
    """TP-Transformer App. B (and T5-small itself): the counts are exact on the T5 cell."""
    assert t5_param_count("t5_small") == 60_506_624
    assert t5_param_count("t5_transformer_t5_small") == 60_506_880  # + 32 x 8 cross-attention table
    assert t5_param_count("tp_transformer_continuous_t5_small") == 65_234_688  # TPT-c
    assert t5_param_count("tp_transformer_t5_small") == 64_258_080  # TPT-d
    assert t5_param_count("t5_base") == 222_903_552  # T5-base v1.0
    assert t5_param_count("t5_base_gated") == 222_903_552 + 768 + 1  # + the gate's Linear(d, 1)


def test_t5_cell_has_no_biases_no_positions_and_scaled_output(tiny_overrides):
    model, d = build_model("t5_small", **tiny_overrides)
    names = [n for n, _ in model.named_parameters()]
    assert not [n for n in names if n.endswith(".bias") and "relative" not in n]
    assert model.encoder.embed_positions is None and model.decoder.embed_positions is None
    tables = [n for n in names if "relative_attention_bias" in n]
    assert tables == ["encoder.relative_position.relative_attention_bias.weight",
                      "decoder.relative_position.relative_attention_bias.weight"]
    assert model.decoder.layers[0].self_attn.scaling == 1.0
    x = torch.randn(1, 2, 32)
    expected = x @ model.decoder.embed_tokens.weight.t() / math.sqrt(32)
    # one matmul
    assert fp32_close(model.decoder.output_layer(x), expected, expected * math.sqrt(32), OP_ULPS)


def test_output_scale_and_untied_projection(tiny_overrides):
    """``--t5-scale-decoder-output`` sets the ``d_m^-1/2`` whatever the tying; by default only a tied
    projection is scaled (T5 v1.0), an untied one is not (transformers >= 5 configs say which)."""
    x = torch.randn(1, 2, 32)
    for share, flag, scaled in ((True, False, False), (False, None, False), (False, True, True)):
        kwargs = {} if flag is None else dict(t5_scale_decoder_output=flag)
        model, _ = build_model("t5_small", share_decoder_input_output_embed=share, **kwargs, **tiny_overrides)
        dec = model.decoder
        weight = dec.embed_tokens.weight if share else dec.output_projection.weight
        assert (dec.output_projection is None) is share
        logits = x @ weight.t()
        expected = logits / (math.sqrt(32) if scaled else 1.0)
        # one matmul, scaled or not
        assert fp32_close(dec.output_layer(x), expected, logits, OP_ULPS)


def test_attention_inner_dim_other_than_d_model_is_hand_computation():
    """``inner_dim`` = H * d_kv != d_model: Q, K, V project d_m -> H d_kv, W_o maps back; softmax(Q K^T) V
    per head (T5: no 1/sqrt(d_k)), fused and explicit paths alike."""
    from fairseq_sum_plugins.modules.attention import MultiheadAttention

    torch.manual_seed(0)
    heads, d_kv, d = 4, 6, 8
    for self_attention in (True, False):
        attn = MultiheadAttention(d, heads, self_attention=self_attention, bias=False, scaling=1.0,
                                  inner_dim=heads * d_kv).eval()
        x, mem = torch.randn(2, 3, d), torch.randn(2, 5, d)
        if self_attention:
            wq, wk, wv = attn.in_proj.weight.chunk(3)
            keys = x
        else:
            wq, (wk, wv), keys = attn.q_proj.weight, attn.kv_proj.weight.chunk(2), mem
        assert wq.shape == wk.shape == (heads * d_kv, d) and attn.out_proj.weight.shape == (d, heads * d_kv)
        split = lambda t: t.view(2, -1, heads, d_kv).transpose(1, 2)  # noqa: E731
        q, k, v = split(x @ wq.t()), split(keys @ wk.t()), split(keys @ wv.t())
        expected = ((q @ k.transpose(-1, -2)).softmax(-1) @ v).transpose(1, 2).reshape(2, 3, heads * d_kv)
        expected = expected @ attn.out_proj.weight.t()
        for need_weights in (False, True):
            out, _ = attn(x, None if self_attention else mem, need_weights=need_weights)
            assert fp32_close(out, expected, ulps=OP_ULPS)


def test_t5_d_kv_builds_that_width_and_bad_values_are_refused(tiny_overrides):
    model, _ = build_model("t5_small", t5_d_kv=12, **tiny_overrides)
    assert model.encoder.layers[0].self_attn.in_proj.weight.shape == (3 * 4 * 12, 32)
    assert model.decoder.layers[0].cross_attn.out_proj.weight.shape == (32, 4 * 12)
    with pytest.raises(ValueError, match="--t5-d-kv 0: a per-head dim is a positive integer"):
        build_model("t5_small", t5_d_kv=0, **tiny_overrides)
    with pytest.raises(ValueError, match="flags of the T5 cell"):
        build_model("t5_transformer_small", t5_d_kv=4, **tiny_overrides)


def test_pre_norm_is_required():
    with pytest.raises(ValueError, match="pre-norm"):
        build_model("t5_small", encoder_normalize_before=False)


# --- compositions -------------------------------------------------------------------------------------
