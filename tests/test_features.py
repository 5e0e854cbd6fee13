"""The feature interface (modules/features.py) and the generic loss (aux_losses.py).

The first test adds a new feature the way a paper's feature is added: its module, its spec with
its flags, and one contract row, all written here (nothing shipped), and runs it on the default
cell, the T5 cell and BART against a hand computation and the contract. It registers inside a
fixture; tests/test_registration.py registers after import and checks what is derived from the
registry when used (BART's fresh parameters, the criterion's config, the HF export's refusals).
"""
import contextlib
import inspect
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import test_model_contract as contract
from helpers import build_model, make_dictionary, random_batch
from tolerances import MODEL_ULPS, OP_ULPS, fp32_close
from fairseq_sum_plugins.modules.encoder_out import EncoderOut
from fairseq_sum_plugins.modules.features import ENCODER_OUT, FEATURES, FeatureSpec, register_feature

torch.set_num_threads(1)


# --- a new toy feature: module + flags (spec) + one contract row --------------------------------


class FirstKeyOnly(nn.Module):
    """Toy score bias: decoder cross-attention sees the first real source position only."""

    def score_bias(self, q, k, inputs):
        pad = inputs["padding_mask"]
        bsz, src_len = k.size(0), k.size(2)
        first = torch.zeros(bsz, dtype=torch.long) if pad is None else (~pad).long().argmax(1)
        bias = torch.full((bsz, 1, 1, src_len), -1e4, dtype=q.dtype)
        return bias.scatter(3, first.view(-1, 1, 1, 1), 0.0)


def _toy_args(parser):
    parser.add_argument("--toy-first-key", type=bool, metavar="BOOL")


def _toy_defaults(args):
    args.toy_first_key = getattr(args, "toy_first_key", False)


TOY = FeatureSpec("toy first-key attention (--toy-first-key)", {"decoder_cross": "toy"},
                  lambda args, site, dims: FirstKeyOnly() if args.toy_first_key else None,
                  add_args=_toy_args, defaults=_toy_defaults)
TOY_CELLS = [  # the contract rows of the toy: default cell, T5 cell, BART
    contract.Cell("t5_transformer_small", dict(toy_first_key=True)),
    contract.Cell("t5_small", dict(toy_first_key=True)),
    contract.Cell("bart_base_gated", dict(gate=False, toy_first_key=True), family="bart"),
]


@pytest.fixture
def toy_feature():
    register_feature(TOY)
    yield TOY
    FEATURES.pop(TOY.name)


def restrict_to_first_key(enc):
    """The encoder output with every source position but the first real one masked as padding."""
    view = EncoderOut.of(enc)
    first = (~view.padding_mask).long().argmax(1)
    keep = torch.zeros_like(view.padding_mask).scatter(1, first[:, None], True)
    view.padding_mask = ~keep
    return view.into_fairseq(dict(enc)) if "encoder_out" in enc else view.to_dict()


@pytest.mark.parametrize("cell", TOY_CELLS, ids=[c.id for c in TOY_CELLS])
def test_a_new_feature_runs_on_every_backbone(cell, toy_feature):
    torch.manual_seed(0)
    model, d = build_model(cell.arch, make_dictionary(), **dict(contract.DIMS[cell.family], **cell.features))
    plain, _ = build_model(cell.arch, d, **dict(contract.DIMS[cell.family], **dict(cell.features, toy_first_key=False)))
    nn.Module.load_state_dict(plain, model.state_dict())  # the toy has no parameters: the same weights
    src, lengths, prev = random_batch(d, bsz=3, src_len=9, left_pad_source=True)
    model.eval(), plain.eval()
    model.decoder.need_attn = plain.decoder.need_attn = True  # sum_transformer: return the attention
    with torch.no_grad():
        enc = model.encoder(src, lengths)
        out, extra = model.decoder(prev, enc)
        # by hand: attending to the first real position alone is masking every other one
        ref, _ = plain.decoder(prev, restrict_to_first_key(plain.encoder(src, lengths)))
        unbiased, _ = plain.decoder(prev, plain.encoder(src, lengths))
    assert fp32_close(out, ref, ulps=MODEL_ULPS)  # the same model, another masking: rounding only
    assert (out - unbiased).abs().max() > 1e-3  # tol: a real change, >= 10x fp32_tol(logits)
    attn = extra["attn"][0]  # the last layer's probabilities: one-hot at the first real source position
    first = src.ne(d.pad()).long().argmax(1)
    # one unmasked key: its softmax is exp(0) / exp(0) = 1 and exp(-inf) = 0, bit for bit
    assert torch.equal(attn, F.one_hot(first, src.size(1)).float()[:, None, :].expand_as(attn))
    # the contract: incremental == full, beam reordering
    for left_pad in (True, False):
        contract.test_incremental_decoding_equals_full_forward(cell, left_pad, None)
    contract.test_beam_reordering_of_incremental_state(cell, [1, 0, 3, 3, 5, 4], None)


# --- a toy encoder-output feature: removes positions, keeps state, adds a decoder output ---------


class DropLast(nn.Module):
    """Removes each document's last real source position from the encoder output (a ``kept_index``),
    keeps the number of rows it kept in ``state`` (reordered with the batch)."""

    def encoder_output(self, view):
        real = ~view.padding_mask
        bsz = real.size(0)
        last = torch.arange(real.size(1)).expand_as(real).masked_fill(~real, -1).max(1).values
        keep = real.clone()
        keep[torch.arange(bsz), last] = False
        n = keep.sum(1)
        order = torch.argsort((~keep).to(torch.uint8), dim=1, stable=True)[:, : int(n.max())]
        pad = torch.arange(order.size(1))[None, :] >= n[:, None]
        view.enc = view.enc.gather(1, order[..., None].expand(-1, -1, view.enc.size(-1)))
        view.padding_mask, view.kept_index = pad, order.masked_fill(pad, 0)
        view.state["toy_kept"] = n
        return view


ENTERED = []


@contextlib.contextmanager
def _count_stack(stack):
    ENTERED.append(len(stack))
    yield


def _drop_args(parser):
    parser.add_argument("--toy-drop-last", type=bool, metavar="BOOL")


def _drop_defaults(args, on=False):
    args.toy_drop_last = getattr(args, "toy_drop_last", on)


DROP = FeatureSpec("toy drop-last (--toy-drop-last)", {ENCODER_OUT: "toy_drop"},
                   lambda args, site, dims: DropLast() if args.toy_drop_last else None, stage="encoder",
                   add_args=_drop_args, defaults=_drop_defaults, stack_context=_count_stack,
                   decoder_outputs=lambda view: {"toy_kept": view.state.get("toy_kept")})
DROP_CELLS = [contract.Cell("t5_transformer_small", dict(toy_drop_last=True)),
              contract.Cell("t5_small", dict(toy_drop_last=True)),
              contract.Cell("bart_base_gated", dict(gate=False, toy_drop_last=True), family="bart")]


def mask_last_real(enc):
    """The encoder output with each document's last real position masked as padding (by hand)."""
    view = EncoderOut.of(enc)
    real = ~view.padding_mask
    last = torch.arange(real.size(1)).expand_as(real).masked_fill(~real, -1).max(1).values
    view.padding_mask = view.padding_mask.scatter(1, last[:, None], True)
    return view.into_fairseq(dict(enc)) if "encoder_out" in enc else view.to_dict()


@pytest.mark.parametrize("cell", DROP_CELLS, ids=[c.id for c in DROP_CELLS])
def test_a_feature_that_removes_positions_needs_nothing_of_the_backbones(cell):
    """Removed positions (``kept_index``), the feature's own state reordered by beam search, a decoder
    output and a stack context, on the default cell, the T5 cell and BART, none of which names it."""
    register_feature(DROP)
    try:
        torch.manual_seed(0)
        dims = dict(contract.DIMS[cell.family], **cell.features)
        model, d = build_model(cell.arch, make_dictionary(), **dims)
        plain, _ = build_model(cell.arch, d, **dict(dims, toy_drop_last=False))
        nn.Module.load_state_dict(plain, model.state_dict())  # no parameters of its own
        src, lengths, prev = random_batch(d, bsz=3, src_len=9, left_pad_source=False)
        model.eval(), plain.eval()
        model.decoder.need_attn = True
        ENTERED.clear()
        with torch.no_grad():
            enc = model.encoder(src, lengths)
            out, extra = model.decoder(prev, enc)
            assert ENTERED == [len(model.encoder.layers), len(model.decoder.layers)]  # once per stack
            ref, _ = plain.decoder(prev, mask_last_real(plain.encoder(src, lengths)))
        assert extra["toy_kept"].tolist() == (lengths - 1).tolist()
        assert fp32_close(out, ref, ulps=MODEL_ULPS)  # removing a position = masking it: rounding only
        attn = extra["attn"][0]  # back on source positions: nothing on the removed last real token
        assert attn.size(-1) == src.size(1)
        assert (attn.gather(2, (lengths - 1).view(-1, 1, 1).expand(-1, attn.size(1), 1)) == 0).all()
        order = torch.tensor([2, 0, 2])
        view = EncoderOut.of(model.encoder.reorder_encoder_out(enc, order))
        assert view.state["toy_kept"].tolist() == (lengths - 1)[order].tolist()
        assert torch.equal(view.kept_index, EncoderOut.of(enc).kept_index[order])
    finally:
        FEATURES.pop(DROP.name)


def test_a_feature_reading_an_unknown_input_fails(toy_feature):
    class Misspelt(FirstKeyOnly):
        def score_bias(self, q, k, inputs):
            return super().score_bias(q, k, {"padding_mask": inputs["padding_msk"]})

    model, d = build_model("t5_transformer_small", make_dictionary(), **contract.DIMS["transformer"],
                           toy_first_key=True)
    model.decoder.layers[0].toy.__class__ = Misspelt
    src, lengths, prev = random_batch(d)
    with pytest.raises(KeyError, match="padding_msk"):
        model(src, lengths, prev)


def test_bart_batch_inputs_refuse_unknown_names():
    from fairseq_sum_plugins.models.bart import BatchInputs

    inputs = BatchInputs()
    with pytest.raises(KeyError, match="kv_scal"):
        with inputs.given(kv_scal=torch.ones(1)):
            pass
    with inputs.given(kv_scale=torch.ones(1)):
        assert inputs.get("score_bias") is None  # a known input this batch lacks
        with pytest.raises(KeyError, match="cross_prob"):
            inputs.get("cross_prob")


# --- the layer features on BART, by hand ---------------------------------------------------------

BART = dict(contract.DIMS["bart"], gate=False)


def bart_attention_by_hand(attn, x, pad, bias=None, gate=None):
    """softmax(Q K^T / sqrt(d_k) + bias) (* gate) V, then W_o, from ``attn``'s own projections."""
    T, B, C = x.shape
    H, dk = attn.num_heads, attn.head_dim
    heads = lambda t: t.view(T, B, H, dk).permute(1, 2, 0, 3)  # noqa: E731
    q, k, v = heads(attn.q_proj(x)), heads(attn.k_proj(x)), heads(attn.v_proj(x))
    logits = (q / math.sqrt(dk)) @ k.transpose(-1, -2)
    if bias is not None:
        logits = logits + bias(q, k)
    probs = logits.masked_fill(pad[:, None, None, :], float("-inf")).softmax(-1)
    if gate is not None:
        probs = probs * gate(q, k)
    return attn.out_proj((probs @ v).permute(2, 0, 1, 3).reshape(T, B, C)), q, k


def test_etads_focus_and_saliency_on_bart_equal_eq_8_and_10():
    torch.manual_seed(0)
    model, _ = build_model("bart_base_gated", make_dictionary(), **BART, focus_layers="1", saliency_layers="1")
    model.eval()
    x = torch.randn(7, 2, 32)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, :2] = True
    layer = model.encoder.layers[0]
    focus = layer.focus
    with torch.no_grad():
        out, _ = layer.self_attn(x, x, x, key_padding_mask=pad, need_weights=False)
        ref, _, _ = bart_attention_by_hand(layer.self_attn, x, pad, bias=lambda q, k: focus(q, pad))  # ETADS eq. 8
    assert fp32_close(out, ref, ulps=OP_ULPS)
    cross, sal = model.decoder.layers[0].encoder_attn, model.decoder.layers[0].saliency
    with torch.no_grad():
        out, _ = cross(x, x, x, key_padding_mask=pad, static_kv=True, need_weights=False)
        ref, _, _ = bart_attention_by_hand(cross, x, pad, gate=lambda q, k: sal(q, k).gate())  # ETADS eq. 9-10
    assert fp32_close(out, ref, ulps=OP_ULPS)
    assert model.decoder.layers[1].saliency is None and model.encoder.layers[1].focus is None


@pytest.mark.parametrize("tpr", ["discrete", "continuous"])
def test_tpr_on_bart_binds_after_each_post_ln_attention_sublayer(tpr):
    torch.manual_seed(0)
    model, _ = build_model("bart_base_gated", make_dictionary(), **BART, tpr=tpr)
    bindings = [n for n, m in model.named_modules() if type(m).__name__ == "TPRBinding"]
    assert len(bindings) == 2 + 2 * 2  # an encoder self-attn sublayer and a decoder self + cross one per layer
    layer = model.decoder.layers[1]
    y = torch.randn(5, 2, 32)
    with torch.no_grad():
        nn.init.normal_(layer.cross_attn_binding.role_proj.weight, std=0.1)  # TPT-c's W starts at 0
        norm = layer.encoder_attn_layer_norm
        expected = layer.cross_attn_binding.reference(F.layer_norm(y, (32,), norm.weight, norm.bias, norm.eps))
        assert fp32_close(norm(y), expected, ulps=OP_ULPS)  # TPT eq. 6 on LN(x + attention)


def test_a_feature_is_refused_by_name_where_it_means_nothing():
    with pytest.raises(ValueError, match=r"--tpr \(TP-Transformer role binding\) on bart_sum"):
        build_model("bart_base_gated", make_dictionary(), **BART, tpr="discrete", encoder_normalize_before=True)
    with pytest.raises(ValueError, match=r"--pointer-generator: the copy mechanism is a feature of sum_transformer"):
        build_model("bart_base_gated", make_dictionary(), **BART, pointer_generator=True)


# --- the generic loss ----------------------------------------------------------------------------


def test_the_criterion_names_no_feature():
    from fairseq_sum_plugins.criterions import summarization_loss

    code = inspect.getsource(summarization_loss).split('"""', 2)[2]  # past the module docstring
    assert not [w for w in ("gate", "mem_", "coverage", "topic", "theta") if w in code]
    cfg = summarization_loss.SummarizationLossConfig()  # the flags the features registered, paper defaults
    assert (cfg.gate_l1_weight, cfg.gate_l1_norm, cfg.mem_comp_weight, cfg.mem_read_weight, cfg.coverage_weight) == \
        (0.1, "token", 1e-4, 0.01, 1.0)


def test_a_registered_aux_loss_is_weighted_without_touching_the_criterion(toy_data, tiny_overrides):
    from helpers import AuxModel, first_batch, load_task

    from fairseq_sum_plugins.aux_losses import AUX_LOSSES, AuxLoss, register_aux_loss
    from fairseq_sum_plugins.criterions.summarization_loss import SummarizationLoss

    task = load_task(toy_data)
    _, sample = first_batch(task)
    model, _ = build_model("t5_transformer_small", task.source_dictionary, **tiny_overrides)
    model.eval()
    base = SummarizationLoss(task, False, 0.1)(model, sample)[0]
    register_aux_loss(AuxLoss("toy_aux", 0.5, "a toy loss"))
    try:
        aux = AuxModel(model, {"toy_aux": torch.tensor(3.0)})
        loss, n, log = SummarizationLoss(task, False, 0.1)(aux, sample)
        # one float32 addition to the loss; 3.0 * n is exact in float32
        assert fp32_close(loss, base + n * 0.5 * 3.0,
                          ulps=OP_ULPS) and float(log["aux_toy_aux"]) == 3.0 * n
        loss, n, _ = SummarizationLoss(task, False, 0.1, toy_aux_weight=2.0)(aux, sample)
        assert fp32_close(loss, base + n * 2.0 * 3.0, ulps=OP_ULPS)
        with pytest.raises(TypeError, match="toy_aux_wieght"):
            SummarizationLoss(task, False, 0.1, toy_aux_wieght=2.0)
    finally:
        AUX_LOSSES.pop("toy_aux")


def test_building_a_topic_assistant_model_writes_nothing_onto_the_task(toy_data, tmp_path, tiny_overrides):
    import argparse

    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY
    from helpers import load_task
    from helpers import write_topic_model

    from fairseq_sum_plugins.features.topic_assistant.layers import theta_provider

    task = load_task(toy_data)
    path = write_topic_model(task.source_dictionary, str(tmp_path / "topic_model.npz"), k=contract.K)
    before = dict(vars(task))
    args = argparse.Namespace(**tiny_overrides, ta_topic_model=path)
    ARCH_CONFIG_REGISTRY["transformer_ta_small"](args)
    ARCH_MODEL_REGISTRY["transformer_ta_small"].build_model(args, task)
    assert set(vars(task)) == set(before) and all(vars(task)[k] is v for k, v in before.items())
    theta = theta_provider(task, [torch.tensor([5, 6, task.source_dictionary.eos()])])  # the model's topic model
    assert theta.shape == (1, contract.K)


def test_the_registered_loss_flags_reach_the_criterion_from_the_command_line(toy_data):
    from fairseq import tasks
    from helpers import parse

    args = parse(toy_data, "--arch", "transformer_gated_small", "--criterion", "summarization_loss",
                 "--gate-l1-weight", "0.3", "--gate-l1-norm", "document", "--coverage-loss-weight", "0.5")
    crit = tasks.setup_task(args).build_criterion(args)
    assert crit.aux_weights["gate_l1"] == 0.3 and crit.aux_weights["coverage"] == 0.5
    assert crit.norms == {"gate_l1": "document"} and crit.aux_weights["mem_comp"] == 1e-4
    with pytest.raises(SystemExit):  # argparse: not a choice
        parse(toy_data, "--arch", "transformer_gated_small", "--criterion", "summarization_loss",
              "--gate-l1-norm", "sentence")


def test_malformed_declarations_are_refused():
    from fairseq_sum_plugins.aux_losses import AuxLoss, register_aux_loss

    with pytest.raises(ValueError, match="unknown sites \\['decoder_crosss'\\]"):
        register_feature(FeatureSpec("misplaced", {"decoder_crosss": "x"}))
    with pytest.raises(ValueError, match="normalisations need units"):
        register_aux_loss(AuxLoss("no_units", 1.0, "a loss", norms=("token", "document")))
    assert "misplaced" not in FEATURES
