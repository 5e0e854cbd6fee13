"""``--focus-layers`` / ``--saliency-layers`` (ETADS) from a hydra config: YAML's natural
``focus_layers: 1`` (an int) and ``[1, 2]`` (a list) build the model as the strings ``"1"`` and
``"1,2"`` do and are saved in that string form; a bool, a float or a nested list is refused naming
the flag (was: ``AttributeError: 'int' object has no attribute 'strip'`` from fairseq-hydra-train)."""
import argparse

import pytest
import torch

from helpers import FakeTask, cli, make_dictionary, run
from fairseq_sum_plugins.flags import layers_flag

DIMS = {"encoder_layers": 3, "decoder_layers": 3, "encoder_embed_dim": 16,
        "encoder_ffn_embed_dim": 32, "encoder_attention_heads": 2, "tpr_roles": 3}


def build(**flags):
    from fairseq.models import build_model
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"_name": "tp_transformer_small", **DIMS, **flags})
    return cfg, build_model(cfg, FakeTask(make_dictionary()))


def layers_with(model, attr, stack):
    return [i + 1 for i, layer in enumerate(stack(model).layers)
            if any(getattr(m, attr, None) is not None for m in layer.modules())]


def focus_layers(model):
    return layers_with(model, "focus", lambda m: m.encoder)


def saliency_layers(model):
    return layers_with(model, "saliency", lambda m: m.decoder)


@pytest.mark.parametrize("value,text", [
    ("2", "2"), (2, "2"), ([1, 3], "1,3"), ((1, 3), "1,3"), (["1-2", 3], "1-2,3"), ([], "none"),
    (None, None), ("all", "all"),
])
def test_a_layers_value_in_the_string_form_of_its_flag(value, text):
    assert layers_flag(value, "--focus-layers") == text


@pytest.mark.parametrize("value", [True, False, 1.0, {"a": 1}, [[1]], [True]])
def test_a_layers_value_of_another_type_is_refused_by_name(value):
    with pytest.raises(ValueError, match=r"--focus-layers: expected 'all', 'none', 1-based layers"):
        layers_flag(value, "--focus-layers")


@pytest.mark.parametrize("value,layers", [(2, [2]), ([1, 3], [1, 3]), ("1,3", [1, 3]),
                                          ([], [])])
def test_a_hydra_model_config_takes_layers_as_an_int_or_a_list(value, layers):
    cfg, model = build(focus_layers=value, saliency_layers=value)
    assert focus_layers(model) == layers and saliency_layers(model) == layers
    assert cfg.focus_layers == layers_flag(value)  # saved in the flag's string form


@pytest.mark.parametrize("value,message", [
    (True, r"--focus-layers: expected .* got True"),
    (0, r"--focus-layers '0': layers \[0\] are outside 1..3"),
    (-1, r"--focus-layers '-1': expected"),
    ([4], r"--focus-layers '4': layers \[4\] are outside 1..3"),
    ("2-1", r"--focus-layers '2-1': the range '2-1' runs backwards"),  # was: no layer, silently
    ("1-99", r"--focus-layers '1-99': layers \[99\] are outside 1..3"),  # not 4, 5, ..., 99
    ("2-1000000000000", r"layers \[1000000000000\] are outside 1..3"),  # not built, then refused
])
def test_a_bad_layers_value_in_a_hydra_config_is_refused_by_name(value, message):
    with pytest.raises(ValueError, match=message):
        build(focus_layers=value)


def test_the_command_line_still_takes_strings_only():
    from fairseq_sum_plugins.modules.features import add_feature_args

    parser = argparse.ArgumentParser()
    add_feature_args(parser)
    assert parser.parse_args(["--focus-layers", "1,2"]).focus_layers == "1,2"


@pytest.mark.slow
def test_fairseq_hydra_train_trains_with_yaml_int_and_list_layers(toy_data, tmp_path):
    from test_cpu_options import hydra_config

    for name, extra in (("int", "\n  focus_layers: 1\n  saliency_layers: 1"),
                        ("list", "\n  focus_layers: [1]\n  saliency_layers: [1]")):
        proc = run(cli("fairseq-hydra-train"), *hydra_config(tmp_path, name, toy_data, extra))
        assert proc.returncode == 0, (proc.stderr + proc.stdout)[-3000:]
        state = torch.load(tmp_path / name / "checkpoint_last.pt", map_location="cpu")
        assert state["cfg"]["model"]["focus_layers"] == "1"
        assert any(".focus." in k for k in state["model"]), list(state["model"])[:20]
