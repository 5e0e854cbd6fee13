"""The transformer's pointer-generator (``--pointer-generator``, features/copy_mechanism.py):
See et al.'s mixture by hand, a distribution that sums to one, copying that reaches the source's own
tokens, and a clear error without a joined dictionary. Incremental == full forward, beam reordering,
padding invariance and gradients are rows of tests/test_model_contract.py."""
import math

import pytest
import torch

from helpers import FakeTask, build_model, make_dictionary, random_batch
from tolerances import OP_ULPS, fp32_close
from fairseq_sum_plugins.features.copy_mechanism import TransformerCopy

torch.set_num_threads(1)
DIMS = dict(encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
            decoder_layers=2, dropout=0.0)


def test_copy_mixture_is_see_et_al_eq_9_by_hand():
    copy = TransformerCopy(2)
    with torch.no_grad():  # z = sigma(0 . [h; e] + logit(0.25)) = 0.25 for every input
        copy.p_gen.weight.zero_()
        copy.p_gen.bias.fill_(math.log(0.25 / 0.75))
    logits = torch.tensor([[[1.0, 2.0, 0.0, -1.0, 0.5]]])
    gamma = torch.tensor([[[0.5, 0.3, 0.2]]])  # over source tokens 2, 3, 2
    src = torch.tensor([[2, 3, 2]])
    out = copy(logits, torch.randn(1, 1, 2), torch.randn(1, 1, 2), gamma, src)
    p_vocab = torch.softmax(logits, -1)[0, 0]
    expected = 0.25 * p_vocab + 0.75 * torch.tensor([0.0, 0.0, 0.7, 0.3, 0.0])
    assert fp32_close(out.exp()[0, 0], expected, logits, OP_ULPS)  # softmax of logits: their ulps


def test_decoder_returns_log_probabilities_that_sum_to_one_and_stay_after_log_softmax():
    model, d = build_model("t5_transformer_small", pointer_generator=True, **DIMS)
    model.eval()
    src, lengths, prev = random_batch(d)
    out, _ = model(src, lengths, prev)
    # exp of log-probs rounded to ulps of their own size (the log-sum-exp), then summed
    assert fp32_close(out.exp().sum(-1), torch.ones(out.shape[:2]), out, OP_ULPS)
    lprobs = model.get_normalized_probs((out, {}), log_probs=True)
    # the criterion and beam search see log P itself (a log_softmax of it: the log-sum-exp is 0
    # up to rounding of the log-probs' size)
    assert fp32_close(lprobs, out, out, OP_ULPS)


def test_a_closed_switch_puts_all_mass_on_the_source_tokens():
    model, d = build_model("t5_transformer_small", pointer_generator=True, **DIMS)
    model.eval()
    with torch.no_grad():  # z -> 0: copy only
        model.decoder.copy.p_gen.weight.zero_()
        model.decoder.copy.p_gen.bias.fill_(-50.0)
    src, lengths, prev = random_batch(d)
    lprobs = model(src, lengths, prev)[0]
    probs = lprobs.exp()
    for b in range(src.size(0)):
        own = torch.zeros(len(d), dtype=torch.bool)
        own[src[b][src[b].ne(d.pad())]] = True
        assert fp32_close(probs[b][:, own].sum(-1), torch.ones(prev.size(1)), lprobs[b][:, own],
                          OP_ULPS)


def test_without_a_joined_dictionary_the_copy_is_refused():
    class TwoDicts(FakeTask):
        def __init__(self):
            super().__init__(make_dictionary())
            self.target_dictionary = make_dictionary(30)

    import argparse

    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    args = argparse.Namespace(pointer_generator=True, share_all_embeddings=False, **DIMS)
    ARCH_CONFIG_REGISTRY["t5_transformer_small"](args)
    with pytest.raises(ValueError, match="--pointer-generator .*joined dictionary"):
        ARCH_MODEL_REGISTRY["t5_transformer_small"].build_model(args, TwoDicts())


def _parse(data, *argv):
    from fairseq import options

    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, [data, "--task", "summarization", "--optimizer", "adam", *argv])


@pytest.mark.parametrize("arch,flag,dest", [("t5_small", "--pointer-generator", "pointer_generator"),
                                            ("transformer_gated_small", "--gate", "gate"),
                                            ("mem2mem_base", "--pointer-generator", "pointer_generator")])
def test_boolean_flags_are_read_as_data_never_run(toy_data, tmp_path, capsys, arch, flag, dest):
    assert getattr(_parse(toy_data, "--arch", arch, flag, "true"), dest) is True
    assert getattr(_parse(toy_data, "--arch", arch, flag, "0"), dest) is False
    with pytest.raises(SystemExit):  # was a NameError traceback from fairseq's eval_bool
        _parse(toy_data, "--arch", arch, flag, "maybe")
    error = capsys.readouterr().err.split("error: ")[-1]
    assert error.startswith(f"argument {flag}") and "expected True or False, got 'maybe'" in error
    marker = tmp_path / "ran"
    with pytest.raises(SystemExit):  # was executed by eval
        _parse(toy_data, "--arch", arch, flag, f"open({str(marker)!r}, 'w') is not None")
    assert not marker.exists()


@pytest.mark.parametrize("threshold", ["x", 1.0, float("nan"), True])
def test_a_gated_copy_model_refuses_a_threshold_that_is_no_gate_value(threshold):
    # as --model-overrides "{'gate_threshold': ...}" reaches it: 'x' was a TypeError in the first
    # forward, 1.0 closed every source position and decoded without reading the document
    with pytest.raises(ValueError, match=r"gate_threshold .*: a number in \[0, 1\)"):
        build_model("transformer_gated_small", pointer_generator=True, gate_threshold=threshold, **DIMS)
    model, _ = build_model("transformer_gated_small", pointer_generator=True, gate_threshold=0.5, **DIMS)
    assert model.encoder.info_gate.threshold == 0.5
