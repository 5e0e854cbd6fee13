"""Boolean model options read through one parser (``flags.bool_flag``) wherever they come from: the
command line, a checkpoint's args with ``--model-overrides``, a hydra config. A string such as
``'False'`` or ``'no'`` is truthy in Python: read by truthiness it switched the copy or the gate on.
"""
import argparse
import os

import pytest
import torch

from helpers import REPO, FakeTask, make_dictionary, save_fresh_checkpoint
from helpers import DIMS

FALSE = ["False", "false", "0", "no", 0, False]
TRUE = ["True", "true", "1", "yes", 1, True]


def build(arch, family, **options):
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    torch.manual_seed(0)
    args = argparse.Namespace(**DIMS[family], **options)
    ARCH_CONFIG_REGISTRY[arch](args)
    return ARCH_MODEL_REGISTRY[arch].build_model(args, FakeTask(make_dictionary())), args


def names(model):
    return [n for n, _ in model.named_parameters()]


# (arch, family, option, the parameter-name fragment that the option switches on)
SWITCHES = [
    ("t5_transformer_small", "transformer", "pointer_generator", "copy."),
    ("transformer_gated_small", "transformer", "gate", "info_gate"),
    # the earlier attribute name
    ("transformer_gated_small", "transformer", "info_gate", "info_gate"),
    ("t5_transformer_small", "transformer", "ta_drm", ".drm."),
    ("bart_base_gated", "bart", "gate", "info_gate"),
    ("hred_base", "mem2mem", "pointer_generator", "p_gen"),
    ("mem2mem_base", "mem2mem", "memory_decoder", "writer"),
    ("mem2mem_base", "mem2mem", "decoder_memory", "writer"),  # the earlier attribute name
]


@pytest.mark.parametrize("arch,family,option,fragment", SWITCHES)
def test_a_string_false_switches_the_option_off_and_a_string_true_on(arch, family, option, fragment,
                                                                     tmp_path):
    extra = {}
    if option.startswith("ta_"):
        from helpers import K
        from helpers import write_topic_model

        tm = write_topic_model(make_dictionary(), str(tmp_path / "tm.npz"), k=K)
        extra = {"ta_topic_model": tm}
    expected = {}
    for value in (False, True):
        model, _ = build(arch, family, **extra, **{option: value})
        expected[value] = names(model)
    assert any(fragment in n for n in expected[True])
    assert not any(fragment in n for n in expected[False])
    for value in FALSE + TRUE:
        model, args = build(arch, family, **extra, **{option: value})
        assert names(model) == expected[value in TRUE], (option, value)
        dest = {"info_gate": "gate", "decoder_memory": "memory_decoder"}.get(option, option)
        assert getattr(args, dest) is (value in TRUE)  # a bool in the args the checkpoint saves


@pytest.mark.parametrize("arch,family,option", [
    ("t5_transformer_small", "transformer", "pointer_generator"),
    ("transformer_gated_small", "transformer", "gate"),
    ("transformer_gated_small", "transformer", "info_gate"),
    ("tp_transformer_small", "transformer", "encoder_normalize_before"),
    ("t5_small", "transformer", "t5_scale_decoder_output"),
    ("bart_base_gated", "bart", "gate_per_head"),
    ("bart_base_gated", "bart", "checkpoint_activations"),
    ("hred_base", "mem2mem", "coverage_attention"),
    ("hred_base", "mem2mem", "coverage"),
])
@pytest.mark.parametrize("value", ["maybe", "", 2, 0.5])
def test_a_value_that_is_not_a_boolean_is_an_error_naming_the_option(arch, family, option, value):
    dest = {"info_gate": "gate", "coverage": "coverage_attention"}.get(option, option)
    flag = "--" + dest.replace("_", "-")
    message = rf"model option {dest} \({flag}\) {value!r}: expected True or False"
    with pytest.raises(ValueError, match=message):
        build(arch, family, **{option: value})


def test_every_boolean_option_of_each_family_is_found():
    """The parser's list: type=bool_flag and fairseq's store_true/store_false switches."""
    from fairseq_sum_plugins.flags import bool_options
    from fairseq_sum_plugins.models.bart import SumBARTModel
    from fairseq_sum_plugins.models.mem2mem.model import Mem2MemModel
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    ours = bool_options(SumTransformerModel.add_args)
    assert {"pointer_generator", "gate", "gate_per_head", "ta_sia", "ta_tema", "ta_drm",
            "share_all_embeddings", "encoder_normalize_before", "t5_cross_position_bias",
            "no_scale_embedding"} <= set(ours)
    assert ours["gate"] == "--gate" and "tpr" not in ours and "gate_threshold" not in ours
    assert {"gate", "checkpoint_activations", "layernorm_embedding", "share_all_embeddings"} <= set(
        bool_options(SumBARTModel.add_args))
    assert set(bool_options(Mem2MemModel.add_args)) == {
        "share_embeddings", "share_decoder_input_output_embed", "pointer_generator",
        "coverage_attention", "coverage_loss", "memory_encoder", "memory_decoder",
        "memory_transfer", "checkpoint_activations", "offload_activations"}


def test_a_hydra_model_config_reads_its_booleans_through_the_parser():
    """fairseq-hydra-train builds a model without a dataclass from a DictConfig (``model: {_name:
    ..., pointer_generator: 'no'}``): the arch function and build_model read it as the command line
    would."""
    from fairseq.models import build_model
    from omegaconf import OmegaConf

    for value, copy in (("no", False), ("False", False), ("yes", True), (True, True)):
        cfg = OmegaConf.create({"_name": "t5_transformer_small", **DIMS["transformer"],
                                "pointer_generator": value})
        model = build_model(cfg, FakeTask(make_dictionary()))
        assert (model.decoder.copy is not None) is copy, value
    cfg = OmegaConf.create({"_name": "transformer_gated_small", **DIMS["transformer"],
                            "gate": "maybe"})
    with pytest.raises(ValueError, match=r"model option gate \(--gate\) 'maybe'"):
        build_model(cfg, FakeTask(make_dictionary()))


# --- checkpoints: --model-overrides (fairseq-generate, fairseq-interactive, the hub) -----------


TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--encoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2"]


def checkpoint(data, path, arch, *flags):
    return save_fresh_checkpoint([data, "--task", "summarization", "--arch", arch, *TINY, *flags,
                                  "--criterion", "summarization_loss", "--optimizer", "adam",
                                  "--lr", "0.001"], path, "SummarizationLoss")


def load(data, path, **overrides):
    from fairseq import checkpoint_utils

    overrides = {"data": data, **overrides}
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides)
    return models[0]


def test_an_override_string_false_reads_as_false_on_a_checkpoint(toy_data, tmp_path):
    """The load path of fairseq-generate and the hub: ``{'pointer_generator': 'False'}`` is
    ``{'pointer_generator': False}``: on a checkpoint with the copy, the copy's parameters are not
    the model's, which strict loading reports by name (it decoded with the copy, silently); on one
    without it, the override loads (it asked for a copy the checkpoint lacks)."""
    arch = "t5_transformer_small"
    on = checkpoint(toy_data, str(tmp_path / "on.pt"), arch, "--pointer-generator", "True")
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\).*copy\.p_gen"):
        load(toy_data, on, pointer_generator="False")
    off = checkpoint(toy_data, str(tmp_path / "off.pt"), arch)
    assert load(toy_data, off, pointer_generator="no").decoder.copy is None


@pytest.mark.slow  # eight checkpoint loads (hydra's config composition: seconds each)
@pytest.mark.parametrize("option,arch,flags,fragment", [
    ("pointer_generator", "t5_transformer_small", ["--pointer-generator", "True"], "copy.p_gen"),
    ("gate", "transformer_gated_small", [], "info_gate"),
])
def test_override_strings_read_as_their_booleans_on_a_checkpoint(toy_data, tmp_path, option, arch,
                                                                  flags, fragment):
    flag = "--" + option.replace("_", "-")
    on = checkpoint(toy_data, str(tmp_path / "on.pt"), arch, *flags)
    for value in ("False", "0"):
        with pytest.raises(RuntimeError, match=rf"Unexpected key\(s\).*{fragment}"):
            load(toy_data, on, **{option: value})
    assert any(fragment in n for n in names(load(toy_data, on, **{option: "yes"})))
    off = checkpoint(toy_data, str(tmp_path / "off.pt"), arch, flag, "False")
    assert not any(fragment in n for n in names(load(toy_data, off, **{option: "no"})))
    with pytest.raises(ValueError, match=rf"model option {option} \({flag}\) 'maybe'"):
        load(toy_data, on, **{option: "maybe"})


@pytest.mark.slow  # two fairseq-generate runs
def test_fairseq_generate_model_overrides_with_a_string_false(toy_data, tmp_path):
    """Through the real fairseq-generate: ``--model-overrides "{'pointer_generator': 'False'}"`` on
    a checkpoint without the copy decodes as without the override; on one with the copy it stops,
    naming the copy's parameters (it decoded with the copy, exit status 0)."""
    from helpers import cli, repo_env

    import subprocess
    import sys

    def generate(ckpt, *extra):
        env = repo_env()
        return subprocess.run(
            [cli("fairseq-generate"), toy_data, "--user-dir",
             os.path.join(REPO, "fairseq_sum_plugins"), "--task", "summarization", "--path", ckpt,
             "--gen-subset", "test", "--beam", "2",
             "--batch-size", "6", "--max-len-b", "5", *extra],
            capture_output=True, text=True, env=env, cwd=REPO)

    assert sys.executable
    off = checkpoint(toy_data, str(tmp_path / "off.pt"), "t5_transformer_small")
    plain = generate(off)
    overridden = generate(off, "--model-overrides", "{'pointer_generator': 'False'}")
    assert plain.returncode == 0 and overridden.returncode == 0, overridden.stderr[-2000:]
    def hyps(p):
        return sorted(line for line in p.stdout.splitlines() if line.startswith(("H-", "P-")))

    assert hyps(plain) and hyps(overridden) == hyps(plain)
    on = checkpoint(toy_data, str(tmp_path / "on.pt"), "t5_transformer_small",
                    "--pointer-generator", "True")
    refused = generate(on, "--model-overrides", "{'pointer_generator': 'False'}")
    assert refused.returncode != 0 and "copy.p_gen" in refused.stderr
    bad = generate(on, "--model-overrides", "{'pointer_generator': 'maybe'}")
    assert bad.returncode != 0
    assert "model option pointer_generator (--pointer-generator) 'maybe'" in bad.stderr
