"""Checkpoints trained before a preset changed meaning still load and decode the same.

``tests/old_checkpoints/`` holds two tiny checkpoints trained (2 updates, 1+1 layers, d_m 16) by
the code of commit 12ecffd, with that code's log-probabilities on a fixed batch and its beam search
(``make_old_checkpoints.py``, run from a worktree of that commit, wrote them):

* ``tp_transformer_base.pt``: the name then built the default cell; it now builds App. B's model on
  the T5 cell, and the checkpoint loads as ``tp_transformer_default_cell_base``;
* ``etads_base.pt``: saved before ``--output-bias`` (ETADS eq. 4's b^o, now on in the etads
  presets); it loads without the bias, as trained.
"""
import argparse
import json
import os

import pytest
import torch

from helpers import build_model
from tolerances import MODEL_ULPS, fp32_close

OLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "old_checkpoints")
EXPECTED = json.load(open(os.path.join(OLD, "expected.json")))


def load(path):
    from fairseq import checkpoint_utils

    import fairseq_sum_plugins  # noqa: F401  (registers the models)

    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [path], arg_overrides={"data": OLD, "source_lang": "src", "target_lang": "tgt"})
    return models[0].eval(), cfg, task


def outputs(model, task, expected):
    src = torch.tensor(expected["src_tokens"])
    lengths = src.ne(task.source_dictionary.pad()).sum(1)
    prev = torch.tensor(expected["prev_output_tokens"])
    with torch.no_grad():
        lprobs = model.get_normalized_probs(model(src, lengths, prev), log_probs=True)
        gen = task.build_generator([model], argparse.Namespace(beam=2, max_len_b=6))
        hypos = gen.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
    return lprobs, hypos


def assert_same_outputs(model, task, expected):
    lprobs, hypos = outputs(model, task, expected)
    # the same code path on the same weights (written as decimal floats in the JSON)
    assert fp32_close(lprobs, torch.tensor(expected["lprobs"]), ulps=MODEL_ULPS)
    for beam, old in zip(hypos, expected["beam"]):
        assert [h["tokens"].tolist() for h in beam] == [h["tokens"] for h in old]
        for h, o in zip(beam, old):
            assert h["score"].item() == pytest.approx(o["score"], rel=1e-5, abs=1e-6)  # tol: beam scores of another code path in float32


def test_default_cell_checkpoint_of_the_old_name_loads_and_decodes_the_same():
    expected = EXPECTED["tp_transformer_base"]
    assert expected["saved_args"] == {"arch": "tp_transformer_base", "cell": "default"}
    model, cfg, task = load(os.path.join(OLD, "tp_transformer_base.pt"))
    assert cfg.model.arch == "tp_transformer_default_cell_base"  # its saved args say what it is
    assert not model.encoder.t5 and model.encoder.layers[0].binding_features[0].mode == "discrete"
    assert_same_outputs(model, task, expected)


def test_checkpoint_saved_before_the_cell_flag_loads_as_the_default_cell(tmp_path):
    """Saved args without ``cell`` at all (checkpoints older than the T5 cell): the default cell,
    which ``tp_transformer_base``'s preset (now T5) would otherwise have set."""
    state = torch.load(os.path.join(OLD, "tp_transformer_base.pt"), weights_only=True)
    del state["cfg"]["model"].cell
    path = str(tmp_path / "pre_cell.pt")
    torch.save(state, path)
    model, cfg, task = load(path)
    assert cfg.model.arch == "tp_transformer_default_cell_base" and not model.encoder.t5
    assert_same_outputs(model, task, EXPECTED["tp_transformer_base"])


def test_etads_checkpoint_without_the_output_bias_flag_loads_without_it():
    expected = EXPECTED["etads_base"]
    assert "output_bias" not in expected["saved_args"]
    model, cfg, task = load(os.path.join(OLD, "etads_base.pt"))
    assert model.decoder.output_bias is None and cfg.model.output_bias is False
    assert_same_outputs(model, task, expected)


def test_restoring_an_old_default_cell_checkpoint_into_the_new_name_names_the_fix():
    """``--restore-file`` with the old command (``--arch tp_transformer_base``) builds the T5 cell
    from the command line: the error names the preset that holds the checkpoint's model."""
    from fairseq.data import Dictionary

    state = torch.load(os.path.join(OLD, "tp_transformer_base.pt"), weights_only=True)
    d = Dictionary.load(os.path.join(OLD, "dict.src.txt"))
    model, _ = build_model("tp_transformer_base", d, encoder_embed_dim=16, encoder_ffn_embed_dim=32,
                           encoder_layers=1, encoder_attention_heads=2, tpr_roles=3, tpr_role_dim=8)
    with pytest.raises(ValueError, match="tp_transformer_default_cell_base"):
        model.load_state_dict(state["model"], strict=True)


def test_new_etads_presets_have_the_output_bias_and_it_shifts_the_logits():
    """ETADS eq. 4: softmax(W^o S + b^o); b^o starts at 0 and is added to every step's logits."""
    model, d = build_model("etads_base", encoder_embed_dim=16, encoder_ffn_embed_dim=32,
                           encoder_layers=1, encoder_attention_heads=2)
    assert model.decoder.output_bias.shape == (len(d),)
    assert build_model("etads_baseline", d, encoder_embed_dim=16, encoder_layers=1,
                       encoder_attention_heads=2)[0].decoder.output_bias is not None
    assert build_model("etads_base", d, output_bias=False, encoder_embed_dim=16, encoder_layers=1,
                       encoder_attention_heads=2)[0].decoder.output_bias is None
    assert build_model("tp_transformer_small", d)[0].decoder.output_bias is None
    model.eval()
    features = torch.randn(2, 3, 16)
    with torch.no_grad():
        before = model.decoder.output_layer(features)
        model.decoder.output_bias.copy_(torch.arange(len(d), dtype=torch.float) / 10)
        after = model.decoder.output_layer(features)
    assert fp32_close(after - before, (torch.arange(len(d)) / 10).expand_as(after), 1.0 + before.abs().max())


def test_app_b_presets_on_the_default_cell_are_refused_by_name():
    """``--arch tp_transformer_base --cell default`` would build the default cell with T5's dropouts
    and ignore TPT's cross-attention table: refused, naming the default-cell presets."""
    with pytest.raises(ValueError, match="_default_cell_base"):
        build_model("tp_transformer_base", cell="default")
    with pytest.raises(ValueError, match="--t5-cross-position-bias"):
        build_model("t5_transformer_small", t5_cross_position_bias=True)
    model, _ = build_model("t5_transformer_base", cell="t5", encoder_embed_dim=16, encoder_layers=1,
                           encoder_attention_heads=2)
    assert model.encoder.t5 and model.decoder.cross_position is not None


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["tp_transformer_base", "etads_base"])
def test_fairseq_generate_decodes_the_old_checkpoints_as_their_code_did(toy_data, arch):
    """fairseq-generate (this code) on the toy test split against the H- lines the old code's
    fairseq-generate wrote with the same flags (make_old_checkpoints.py): same summaries, same
    scores."""
    import subprocess
    import sys

    from helpers import REPO

    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "fairseq-generate"), toy_data, "--user-dir",
         os.path.join(REPO, "fairseq_sum_plugins"), "--task", "summarization", "--path",
         os.path.join(OLD, f"{arch}.pt"), "--gen-subset", "test", "--beam", "2", "--max-len-b", "6",
         "--batch-size", "4", "--cpu"], capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = sorted((l.split("\t") for l in proc.stdout.splitlines() if l.startswith("H-")),
                 key=lambda h: int(h[0][2:]))
    with open(os.path.join(OLD, f"{arch}.generate.txt")) as f:
        old = [l.rstrip("\n").split("\t") for l in f]
    assert len(got) == len(old) == 12
    assert [(h[0], h[2]) for h in got] == [(h[0], h[2]) for h in old]
    assert [float(h[1]) for h in got] == pytest.approx([float(h[1]) for h in old], rel=1e-5, abs=1e-6)  # tol: printed beam scores of another code path in float32


def test_restoring_an_old_etads_checkpoint_into_the_preset_with_b_o_names_the_flag():
    """``--restore-file`` of a checkpoint saved before ``--output-bias`` with today's etads_base
    (b^o on): an error naming ``--output-bias False`` (was fairseq's bare missing-key error)."""
    from fairseq.data import Dictionary

    state = torch.load(os.path.join(OLD, "etads_base.pt"), weights_only=True)
    d = Dictionary.load(os.path.join(OLD, "dict.src.txt"))
    tiny = dict(encoder_embed_dim=16, encoder_ffn_embed_dim=32, encoder_layers=1, encoder_attention_heads=2)
    model, _ = build_model("etads_base", d, **tiny)
    with pytest.raises(ValueError, match="--output-bias False"):
        model.load_state_dict(state["model"], strict=True)
    build_model("etads_base", d, output_bias=False, **tiny)[0].load_state_dict(state["model"], strict=True)


@pytest.mark.parametrize("arch", ["tp_transformer_base", "etads_base"])
def test_hydra_saved_configs_are_upgraded_too(tmp_path, arch):
    """fairseq-hydra-train saves the model config as a dict with ``_name`` (a DictConfig on load)."""
    state = torch.load(os.path.join(OLD, f"{arch}.pt"), weights_only=True)
    saved = {k: v for k, v in vars(state["cfg"]["model"]).items()
             if isinstance(v, (str, int, float, bool, type(None)))}
    saved["_name"] = saved.pop("arch")
    state["cfg"]["model"] = saved
    path = str(tmp_path / "hydra.pt")
    torch.save(state, path)
    model, cfg, task = load(path)
    assert cfg.model._name == {"tp_transformer_base": "tp_transformer_default_cell_base"}.get(arch, arch)
    assert model.decoder.output_bias is None and not model.encoder.t5
    assert_same_outputs(model, task, EXPECTED[arch])
