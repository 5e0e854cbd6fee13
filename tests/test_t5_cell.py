"""The exact T5 v1.0 cell (``--cell t5``): its pieces against hand computation, App. B's parameter
counts, and every paper feature composed with it (incremental == full, beam reordering, padding
invariance, gradients)."""
import math

import pytest
import torch
from conftest import build_model, make_dictionary, random_batch
from test_topic_assistant import theta_for, write_topic_model

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
    torch.testing.assert_close(norm(x), expected)
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
    torch.testing.assert_close(bias[0, :, 0, 2], w[4 + 2])  # key 2 after query 0: bucket 4 + 2
    torch.testing.assert_close(bias[0, :, 2, 0], w[2])


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
    torch.testing.assert_close(model.decoder.output_layer(x), x @ model.decoder.embed_tokens.weight.t() / math.sqrt(32))


def test_pre_norm_is_required():
    with pytest.raises(ValueError, match="pre-norm"):
        build_model("t5_small", encoder_normalize_before=False)


# --- compositions -------------------------------------------------------------------------------------

COMPOSITIONS = {
    "plain": ("t5_small", {}),
    "tpt_d": ("tp_transformer_t5_small", {}),  # + TPT's cross-attention position table
    "tpt_c": ("tp_transformer_continuous_t5_small", {}),
    "gate_pruned": ("t5_small_gated", dict(gate_threshold=0.5)),
    "gate_per_head_cross_bias": ("t5_transformer_t5_small", dict(info_gate=True, gate_per_head=True, gate_threshold=0.5)),
    "focus_saliency": ("t5_small", dict(focus_layers="all", saliency_layers="all")),
    "topic_assistant": ("t5_small", dict(ta_sia=True, ta_tema=True, ta_drm=True)),
}


@pytest.fixture
def build(tmp_path, tiny_overrides):
    d = make_dictionary()
    path = write_topic_model(d, str(tmp_path / "topic_model.npz"))

    def make(name):
        arch, extra = COMPOSITIONS[name]
        torch.manual_seed(0)
        model, _ = build_model(arch, d, **dict(tiny_overrides, topic_model=path, **extra))
        side = (lambda b: {"theta": theta_for(b)}) if extra.get("ta_sia") else (lambda b: {})
        return model.eval(), d, side

    return make


@pytest.mark.parametrize("name", COMPOSITIONS)
def test_incremental_equals_full_forward(build, name):
    model, d, side = build(name)
    src, lengths, prev = random_batch(d, bsz=3, src_len=9, tgt_len=6)
    with torch.no_grad():
        full, _ = model(src, lengths, prev, **side(3))
        enc = model.encoder(src, lengths, **side(3))
        state = {}
        steps = [model.decoder(prev[:, : t + 1], enc, incremental_state=state)[0] for t in range(prev.size(1))]
    assert (torch.cat(steps, 1) - full).abs().max() < 1e-5


def check_reordering(model, src, lengths, prev, order, side, steps=3):
    """``conftest.check_beam_reordering`` with side data (the Topic Assistant's theta) in ``net_input``."""
    order = torch.tensor(order)
    with torch.no_grad():
        enc = model.encoder(src, lengths, **side)
        state = {}
        for t in range(steps):
            model.decoder(prev[:, : t + 1], enc, incremental_state=state)
        model.decoder.reorder_incremental_state_scripting(state, order)
        enc_r = model.encoder.reorder_encoder_out(enc, order)
        prev_r = prev.index_select(0, order)
        step, _ = model.decoder(prev_r[:, : steps + 1], enc_r, incremental_state=state)
        side_r = {k: v.index_select(0, order) for k, v in side.items()}
        full, _ = model(src.index_select(0, order), lengths.index_select(0, order), prev_r[:, : steps + 1], **side_r)
    assert (step[:, -1] - full[:, -1]).abs().max() < 1e-5


@pytest.mark.parametrize("name", COMPOSITIONS)
@pytest.mark.parametrize("order", [[1, 0, 3, 3, 5, 4], [5, 4, 1]])  # within beams; batch shrinking
def test_beam_reordering(build, name, order):
    model, d, side = build(name)
    src, lengths, prev = random_batch(d, bsz=3)
    beam = torch.arange(3).repeat_interleave(2)  # 3 sentences x 2 hypotheses, like SequenceGenerator
    src, lengths = src[beam], lengths[beam]
    prev = prev[beam] + torch.arange(6)[:, None] % 2
    check_reordering(model, src, lengths, prev, order, {k: v[beam] for k, v in side(3).items()})


@pytest.mark.parametrize("name", COMPOSITIONS)
def test_padding_does_not_change_outputs(build, name):
    model, d, side = build(name)
    src, lengths, prev = random_batch(d)
    with torch.no_grad():
        batched, _ = model(src, lengths, prev, **side(3))
        theta = side(3).get("theta")
        for b in range(src.size(0)):
            alone = src[b : b + 1, src.size(1) - lengths[b] :]
            extra = {"theta": theta[b : b + 1]} if theta is not None else {}
            single, _ = model(alone, lengths[b : b + 1], prev[b : b + 1], **extra)
            assert (single - batched[b : b + 1]).abs().max() < 1e-5


@pytest.mark.parametrize("name", COMPOSITIONS)
def test_every_parameter_gets_a_gradient(build, name):
    model, d, side = build(name)
    model.train()
    src, lengths, prev = random_batch(d)
    logits, _ = model(src, lengths, prev, **side(3))
    logits.float().log_softmax(-1).mean().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()
               or p.grad.abs().sum() == 0]
    assert not missing, missing
