"""Explicit registration (modules/registry.py): a feature registered after the package is imported,
through the real path (``register_feature``, ``register_aux_loss``), is seen by everything derived
from the registry: BART's fresh parameters, the criterion's config and command line, the HF
export's refusals. And the one helper of renamed flags (flags.renamed_flag): the new name wins."""
import argparse
import logging
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

from helpers import build_model, make_dictionary, save_fresh_checkpoint
from fairseq_sum_plugins.aux_losses import AUX_LOSSES, AuxLoss, register_aux_loss
from fairseq_sum_plugins.flags import bool_flag, renamed_flag
from fairseq_sum_plugins.modules.features import FEATURES, FeatureSpec, flags_set, register_feature

torch.set_num_threads(1)
LAYERS = dict(encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2,
              encoder_attention_heads=4, decoder_layers=2)
BART = dict(LAYERS, decoder_embed_dim=32, decoder_ffn_embed_dim=64, decoder_attention_heads=4,
            dropout=0.0, attention_dropout=0.0, max_source_positions=64, max_target_positions=64)
MEM2MEM = dict(embed_dim=16, encoder_hidden_size=8, decoder_hidden_size=12, attention_dim=10,
               memory_attn_dim=6, memory_slots=4)
T5 = ["--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-layers", "2",
      "--decoder-layers", "2", "--encoder-attention-heads", "4", "--t5-relative-buckets", "8"]


class HeadBias(nn.Module):
    """A learned score bias per head (zeros at start): parameters a plain checkpoint lacks."""

    def __init__(self, heads):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(heads))

    def score_bias(self, q, k, inputs):
        return self.bias.view(1, -1, 1, 1).to(q.dtype)


class NoBias(nn.Module):
    """Parameter-free: adds nothing (a sixth feature the export cannot see by its weights)."""

    def score_bias(self, q, k, inputs):
        return torch.zeros(1, 1, 1, 1, dtype=q.dtype)


def _args(*flags):
    def add_args(parser):
        for flag in flags:
            parser.add_argument(flag, type=bool_flag, metavar="BOOL")
    return add_args


def _defaults(*dests):
    def defaults(args):
        for dest in dests:
            setattr(args, dest, getattr(args, dest, False))
    return defaults


LATE = FeatureSpec("late head bias (--late-bias)", {"decoder_cross": "late"},
                   lambda args, site, dims: HeadBias(dims.heads) if args.late_bias else None,
                   add_args=_args("--late-bias"), defaults=_defaults("late_bias"),
                   on=lambda args: flags_set(args, "late_bias"))
FREE = FeatureSpec("late parameter-free bias (--late-free)", {"decoder_self": "late_free"},
                   lambda args, site, dims: NoBias() if args.late_free else None,
                   add_args=_args("--late-free"), defaults=_defaults("late_free"))  # no on(args)
LATE_LOSS = AuxLoss("late_l2", 0.25, "weight of the late toy loss")


@pytest.fixture
def late_features():
    """Registered after ``import fairseq_sum_plugins`` (at this module's import), then removed."""
    register_feature(LATE), register_feature(FREE), register_aux_loss(LATE_LOSS)
    yield
    FEATURES.pop(LATE.name), FEATURES.pop(FREE.name), AUX_LOSSES.pop(LATE_LOSS.name)


def test_bart_keeps_a_late_features_parameters_fresh_when_loading_a_plain_checkpoint(late_features):
    torch.manual_seed(0)
    model, _ = build_model("bart_base_gated", make_dictionary(), **BART, gate=False, late_bias=True,
                           task="summarization")
    own = {k: v.clone() for k, v in model.state_dict().items()}
    late = sorted(k for k in own if ".late." in k)
    assert late == ["decoder.layers.0.late.bias", "decoder.layers.1.late.bias"]
    plain = {k: v + 1 for k, v in own.items() if ".late." not in k}  # a BART model.pt: no late.*
    model.upgrade_state_dict_named(plain, "")
    model.load_state_dict(plain, strict=True)  # was: missing keys (FRESH made at import)
    assert all(torch.equal(model.state_dict()[k], own[k]) for k in late)  # this model's own, fresh
    assert torch.equal(model.decoder.layers[0].fc1.weight, own["decoder.layers.0.fc1.weight"] + 1)


def test_the_criterion_takes_a_late_loss_weight_from_the_command_line(late_features, toy_data):
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from fairseq_sum_plugins.criterions import summarization_loss

    argv = [toy_data, "--task", "summarization", "--optimizer", "adam", "--arch",
            "t5_transformer_small", "--criterion", "summarization_loss", "--late-l2-weight", "0.7",
            "--gate-l1-weight", "0.3"]
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, argv)  # was: an unrecognized argument
    cfg = convert_namespace_to_omegaconf(args)  # fairseq-train's path: the criterion's hydra config
    assert cfg.criterion.late_l2_weight == 0.7
    crit = tasks.setup_task(cfg.task).build_criterion(cfg.criterion)
    assert crit.aux_weights["late_l2"] == 0.7 and crit.aux_weights["gate_l1"] == 0.3
    assert summarization_loss.SummarizationLossConfig().late_l2_weight == 0.25  # its default


def test_the_criterion_config_drops_an_unregistered_loss():
    from fairseq_sum_plugins.criterions import summarization_loss

    register_aux_loss(LATE_LOSS)
    assert hasattr(summarization_loss.SummarizationLossConfig(), "late_l2_weight")
    AUX_LOSSES.pop(LATE_LOSS.name)
    assert not hasattr(summarization_loss.SummarizationLossConfig(), "late_l2_weight")
    assert summarization_loss.SummarizationLossConfig().gate_l1_weight == 0.1


def t5_small_args(**changes):
    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = argparse.Namespace(arch="t5_small", **LAYERS)
    ARCH_CONFIG_REGISTRY["t5_small"](args)
    vars(args).update(changes)
    return args


@pytest.mark.parametrize("flag,message", [
    ("late_free", r"late parameter-free bias \(--late-free True\)"),  # no on(args): its flag set
    ("late_bias", r"late head bias \(--late-bias True\)"),
])
def test_the_export_refuses_a_late_feature_by_name(late_features, flag, message):
    from fairseq_sum_plugins.convert.t5_export import T5ExportError, check_exportable

    check_exportable(t5_small_args(), "plain.pt")  # the plain T5 cell exports
    with pytest.raises(T5ExportError, match=r"ckpt.pt: " + message):
        check_exportable(t5_small_args(**{flag: "True"}), "ckpt.pt")  # was: exported silently


def test_a_real_checkpoint_with_a_late_parameter_free_feature_is_refused(late_features, toy_data,
                                                                         tmp_path):
    from fairseq_sum_plugins.convert.t5_export import main

    argv = [toy_data, "--task", "summarization", "--arch", "t5_small", *T5, "--late-free", "True",
            "--criterion", "cross_entropy", "--optimizer", "adam", "--lr", "0.001"]
    ckpt = save_fresh_checkpoint(argv, str(tmp_path / "free.pt"), "CrossEntropyCriterion")
    state = torch.load(ckpt, weights_only=False)
    assert not [k for k in state["model"] if "late" in k]  # nothing in the weights shows it
    with pytest.raises(SystemExit) as err:
        main([ckpt, str(tmp_path / "hf")])
    assert "late parameter-free bias (--late-free True)" in str(err.value)
    assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("changes,message", [
    (dict(focus_layers="9"), r"cannot be read: --focus-layers .9.: layers \[9\] are outside"),
    (dict(gate="maybe"), r"options cannot be read: model option gate \(--gate\) 'maybe'"),
    (dict(gate="yes"), r"information selection \(--gate True\)"),  # a --model-overrides string
    (dict(info_gate=True), r"information selection \(--gate True\)"),  # the earlier name alone
    (dict(gate="no"), None),
    (dict(tpr="none", saliency_layers=""), None),
    (dict(gate=False, info_gate=True), None),  # both: the new name, as the model reads them
])
def test_the_export_reads_feature_options_as_the_model_does(changes, message):
    """A checkpoint's args as saved or overridden: strings read as booleans, the earlier name when
    the new one is absent, the new one when both are there, bad values named."""
    from omegaconf import OmegaConf

    from fairseq_sum_plugins.convert.t5_export import T5ExportError, check_exportable

    args = t5_small_args(**changes)
    if "info_gate" in changes and "gate" not in changes:
        del args.gate  # args saved before the rename
    for saved in (args, OmegaConf.create(vars(args))):  # a Namespace, or a hydra model config
        if message is None:
            check_exportable(saved, "c.pt")
        else:
            with pytest.raises(T5ExportError, match="c.pt: .*" + message):
                check_exportable(saved, "c.pt")
    assert vars(args) == dict(vars(args), **changes)  # the export read a copy


def test_with_no_feature_registered_no_parameter_is_fresh():
    from fairseq_sum_plugins.models.fresh_params import fresh_pattern

    saved = dict(FEATURES)
    FEATURES.clear()
    try:
        assert not fresh_pattern().search("encoder.layers.0.fc1.weight")  # "" would match any
    finally:
        FEATURES.update(saved)
    assert fresh_pattern().search("encoder.info_gate.proj.weight")


ORDER = ["TP-Transformer role binding (--tpr)", "information selection (--gate)",
         "ETADS focus attention (--focus-layers)", "ETADS saliency selection (--saliency-layers)",
         "Topic Assistant (--ta-sia, --ta-tema, --ta-drm)", "Topic Assistant SIA (--ta-sia)",
         "Topic Assistant DRM (--ta-drm)", "copy mechanism (--pointer-generator)"]  # registry.FEATURE_MODULES


@pytest.mark.parametrize("first", ["fairseq_sum_plugins.features.topic_assistant.layers",
                                   "fairseq_sum_plugins.models.bart"])
@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_the_features_register_in_the_registry_order_whichever_module_is_imported_first(first):
    code = (f"import {first}; from fairseq_sum_plugins.modules.features import FEATURES; "
            "print(list(FEATURES))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(ORDER)
    assert list(FEATURES) == ORDER  # this process (conftest imported the package)


# --- one renamed-flag helper: the new name wins -------------------------------------------------


@pytest.mark.parametrize("given,default,expected", [
    (dict(gate=True), False, True),  # the new name alone
    (dict(info_gate=True), False, True),  # an old checkpoint's args: the old name alone
    (dict(), False, False),  # neither: the default
    (dict(gate=None, info_gate=True), False, True),  # argparse's None is no value
    (dict(gate=True, info_gate=True), False, True),  # both, equal: no warning
])
def test_a_renamed_flag_reads_the_new_name_else_the_old_one(given, default, expected, caplog):
    args = argparse.Namespace(**given)
    with caplog.at_level(logging.WARNING, logger="fairseq_sum_plugins.flags"):
        renamed_flag(args, "gate", "info_gate", default)
    assert vars(args) == {"gate": expected} and not caplog.records


@pytest.mark.parametrize("new,old", [(True, False), (False, True)])
def test_both_names_given_differently_the_new_one_wins_with_a_warning(new, old, caplog):
    args = argparse.Namespace(info_gate=old, gate=new)
    with caplog.at_level(logging.WARNING, logger="fairseq_sum_plugins.flags"):
        renamed_flag(args, "gate", "info_gate")
    assert vars(args) == {"gate": new}
    assert f"gate = {new!r}" in caplog.text and f"info_gate = {old!r}" in caplog.text


def test_without_a_default_a_renamed_flag_sets_nothing():
    args = argparse.Namespace()
    renamed_flag(args, "gate", "info_gate")
    assert vars(args) == {}


@pytest.mark.parametrize("arch,dims", [("transformer_gated_small", dict(LAYERS, dropout=0.0)),
                                       ("bart_base_gated", BART), ("mem2mem_base", MEM2MEM)])
@pytest.mark.parametrize("new,old", [(True, False), (False, True)])
def test_a_model_built_from_both_names_follows_the_new_one(arch, dims, new, old, caplog):
    """Old checkpoints load as saved (tests/test_flag_names.py: the old name alone); given both, as
    ``--model-overrides`` on an old checkpoint does, the new name decides, in either order."""
    mem2mem = arch == "mem2mem_base"
    name, earlier = ("memory_encoder", "encoder_memory") if mem2mem else ("gate", "info_gate")
    with caplog.at_level(logging.WARNING, logger="fairseq_sum_plugins.flags"):
        model, _ = build_model(arch, make_dictionary(), **dims, **{earlier: old, name: new})
    built = model.encoder.compression if mem2mem else model.encoder.info_gate
    assert (built is not None) == new and f"its earlier name {earlier}" in caplog.text
