"""fairseq's ``--checkpoint-activations`` / ``--offload-activations`` on every transformer family
(``sum_transformer``, ``bart_sum``), refused by name on Mem2Mem; the gradients equal those without
it in tests/test_model_contract.py (every cell)."""
import copy
import os

import pytest
import torch
from fairseq import options, tasks

from helpers import REPO, build_model, make_dictionary, random_batch
from helpers import DIMS
from tolerances import MODEL_ULPS, fp32_close


def parse(data, *argv):
    parser = options.get_training_parser()
    argv = [data, "--task", "summarization", "--optimizer", "adam", *argv]
    return options.parse_args_and_arch(parser, argv)


def layers(model):
    return list(model.encoder.layers) + list(model.decoder.layers)


@pytest.mark.parametrize("arch,flag", [
    ("tp_transformer_small", "--checkpoint-activations"),
    ("transformer_gated_small", "--offload-activations"),
    ("bart_base_ta", "--checkpoint-activations"),
    ("bart_base_gated", "--offload-activations"),
])
def test_the_flag_is_accepted_and_checkpoints_every_layer(toy_data, arch, flag):
    args = parse(toy_data, "--arch", arch, "--encoder-layers", "1", "--decoder-layers", "1", flag)
    # --offload-activations implies checkpointing, as in fairseq (BART: set when its model is built)
    assert getattr(args, "checkpoint_activations", False) or args.offload_activations
    task = tasks.setup_task(args)
    if arch.endswith("_ta"):
        pytest.importorskip("numpy")
        from helpers import write_topic_model

        path = os.path.join(toy_data, "tm_ckpt.npz")
        args.ta_topic_model = write_topic_model(task.source_dictionary, path, k=3)
    model = task.build_model(args)
    assert layers(model) and all(hasattr(layer, "precheckpoint_forward") for layer in layers(model))
    plain = parse(toy_data, "--arch", arch, "--encoder-layers", "1", "--decoder-layers", "1")
    assert not getattr(plain, "checkpoint_activations", False)


@pytest.mark.parametrize("flag", ["--checkpoint-activations", "--offload-activations"])
@pytest.mark.parametrize("arch", ["hred_base", "mem2mem_base"])
def test_mem2mem_refuses_the_flag_by_name_before_building(toy_data, arch, flag):
    message = rf"^{flag}: Mem2Mem has no transformer layers to checkpoint"
    with pytest.raises(ValueError, match=message):
        parse(toy_data, "--arch", arch, flag)


def test_mem2mem_refuses_it_from_overrides_too():
    with pytest.raises(ValueError, match="--checkpoint-activations: Mem2Mem"):
        build_model("hred_base", **DIMS["mem2mem"], checkpoint_activations="True")
    build_model("hred_base", **DIMS["mem2mem"], checkpoint_activations="False")  # read as False


def test_a_deep_copy_of_a_checkpointed_model_runs_its_own_layers():
    """fairseq's ``--ema`` deep-copies the model: the copy's checkpointed layers must compute with
    the copy's parameters (a closure would keep calling the original's)."""
    model, d = build_model("tp_transformer_small", **DIMS["transformer"],
                           checkpoint_activations=True)
    twin = copy.deepcopy(model)
    with torch.no_grad():
        for p in twin.parameters():
            p.mul_(0.5)
    src, lengths, prev = random_batch(d)
    model.train(), twin.train()
    twin(src, lengths, prev)[0].sum().backward()
    assert all(p.grad is None for p in model.parameters())
    assert any(p.grad is not None for p in twin.parameters())
    with torch.no_grad():
        model.eval(), twin.eval()
        assert not fp32_close(model(src, lengths, prev)[0], twin(src, lengths, prev)[0],
                              ulps=MODEL_ULPS)


def test_fairseq_unwrap_checkpoint_restores_the_plain_layers():
    from fairseq.modules.checkpoint_activations import unwrap_checkpoint

    model, d = build_model("tp_transformer_small", **DIMS["transformer"],
                           checkpoint_activations=True)
    unwrap_checkpoint(model)
    assert not any(hasattr(layer, "precheckpoint_forward") for layer in layers(model))
    src, lengths, prev = random_batch(d)
    model(src, lengths, prev)[0].sum().backward()


@pytest.mark.slow  # three short trainings through the console script
@pytest.mark.parametrize("arch,extra,ok", [
    ("tp_transformer_small", ["--checkpoint-activations"], True),
    ("bart_base_gated", ["--checkpoint-activations", "--dropout", "0.1"], True),
    ("mem2mem_base", ["--checkpoint-activations"], False),
])
def test_fairseq_train_with_checkpoint_activations(toy_data, tmp_path, arch, extra, ok):
    import subprocess

    from helpers import cli, repo_env

    tiny = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
            "--encoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
            "--decoder-embed-dim", "16", "--decoder-ffn-embed-dim", "32",
            "--decoder-attention-heads", "2"]
    if arch.startswith("mem2mem"):
        tiny = ["--embed-dim", "8", "--encoder-hidden-size", "4", "--decoder-hidden-size", "8"]
    env = repo_env()
    proc = subprocess.run(
        [cli("fairseq-train"), toy_data, "--user-dir", os.path.join(REPO, "fairseq_sum_plugins"),
         "--task", "summarization", "--arch", arch, *tiny, *extra, "--criterion",
         "summarization_loss", "--optimizer", "adam",
         "--lr", "0.001", "--max-tokens", "2000", "--max-update", "2", "--save-dir", str(tmp_path),
         "--no-save", "--num-workers", "0", "--disable-validation"],
        capture_output=True, text=True, env=env, cwd=REPO)
    if ok:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "num_updates 2" in proc.stderr + proc.stdout
    else:
        assert proc.returncode != 0
        assert "--checkpoint-activations: Mem2Mem has no transformer layers" in proc.stderr


@pytest.mark.parametrize("arch,family", [("tp_transformer_small", "transformer"),
                                         ("bart_base_ta", "bart")])
def test_incremental_decoding_with_gradients_on_runs_the_layers_once(arch, family, tmp_path):
    """In eval mode the layers run as they are, gradients on or off: a recomputation would update
    the incremental state (cached keys and values) a second time."""
    from helpers import K, theta_for
    from helpers import write_topic_model

    extra = {}
    if family == "bart":
        tm = write_topic_model(make_dictionary(), str(tmp_path / "tm.npz"), k=K)
        extra = {"ta_topic_model": tm}
    outs = []
    for on in (False, True):
        torch.manual_seed(0)
        model, d = build_model(arch, **DIMS[family], **extra, checkpoint_activations=on)
        src, lengths, prev = random_batch(d)
        side = {"theta": theta_for(src.size(0))} if family == "bart" else {}
        model.eval()
        with torch.enable_grad():  # e.g. a gradient analysis of the decoder, step by step
            enc, state, steps = model.encoder(src, lengths, **side), {}, []
            for t in range(prev.size(1)):
                step = model.decoder(prev[:, : t + 1], enc, incremental_state=state)[0]
                step.sum().backward(retain_graph=True)  # a recomputation would run here
                steps.append(step.detach())
        outs.append(torch.cat(steps, dim=1))
    assert torch.equal(outs[0], outs[1])
