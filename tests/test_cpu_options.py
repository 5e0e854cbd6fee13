"""fairseq's own options on CPU (issue 31, items 9-12): each works or stops naming itself.

- precision: ``--bf16`` / ``--memory-efficient-bf16`` train in bfloat16 (this fairseq made
  ``--bf16`` imply ``--tpu`` and died on ``xm.xla_device()``); ``--fp16``,
  ``--memory-efficient-fp16`` and ``--amp`` are refused, each by its own name (``--amp`` trained
  in float32 silently); ``fairseq-generate --bf16`` is refused (it decoded in float32 silently).
- several processes: torchrun's variables and ``--distributed-world-size N`` start gloo workers
  (the two-worker runs themselves are in test_distributed.py); ``--ddp-backend fully_sharded`` is
  refused; a torchrun process that would train alone (fairseq-hydra-train) is refused.
- a split whose every example is longer than the limits stops with the flags and the counts (was
  ``IndexError`` in ``batch_by_size``); a split where only some are skipped keeps fairseq's
  warning.
- fairseq-hydra-train: a model config key the architecture does not read is refused by name.
"""
import argparse
import os
import subprocess
import sys

import pytest
import torch

from helpers import REPO, FakeTask, load_task, make_dictionary

USER_DIR = os.path.join(REPO, "fairseq_sum_plugins")
TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32",
        "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2", "--tpr-roles", "4"]


def training_cfg(*flags, data="DATA", cpu=True):
    """fairseq-train's whole config for ``flags``, parsed as the command line is."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    argv = [data, "--task", "summarization", "--arch", "tp_transformer_small", "--optimizer",
            "adam", "--lr", "0.001", "--max-tokens", "100", *(["--cpu"] if cpu else []), *flags]
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))


def generation_cfg(*flags):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_generation_parser()
    argv = ["DATA", "--task", "summarization", "--path", "ckpt.pt", *flags]
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))


def tiny_fairseq_model():
    from fairseq.models import BaseFairseqModel

    class Tiny(BaseFairseqModel):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

    return Tiny()


# --- item 9: half precision on CPU -------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--fp16", "--memory-efficient-fp16", "--amp"])
def test_cpu_precision_flags_without_a_cpu_implementation_are_refused_by_their_name(flag):
    from fairseq_sum_plugins.compat import check_cpu_precision

    with pytest.raises(ValueError) as err:
        check_cpu_precision(training_cfg(flag))
    assert str(err.value).startswith(f"{flag} ")  # --memory-efficient-fp16 was named --fp16


@pytest.mark.parametrize("flag", ["--bf16", "--memory-efficient-bf16"])
def test_bf16_on_cpu_drops_the_tpu_it_implies(flag):
    from fairseq_sum_plugins.compat import check_cpu_precision

    cfg = training_cfg(flag)
    assert cfg.common.tpu and cfg.common.bf16  # what this fairseq's option parser makes of --bf16
    check_cpu_precision(cfg)
    assert not cfg.common.tpu and cfg.common.bf16
    assert cfg.common.memory_efficient_bf16 is (flag == "--memory-efficient-bf16")


@pytest.mark.parametrize("flag", ["--bf16", "--memory-efficient-bf16"])
def test_generate_bf16_on_cpu_is_refused_by_name(flag):
    """fairseq-generate converts models for --fp16 only: --bf16 decoded in float32 silently."""
    with pytest.raises(ValueError, match=rf"^{flag}: .*drop {flag}$"):
        tiny_fairseq_model().prepare_for_inference_(generation_cfg(flag))
    tiny_fairseq_model().prepare_for_inference_(generation_cfg())  # float32: untouched


def test_a_saved_bf16_training_config_is_not_refused_by_the_hub():
    """The hub hands a checkpoint's training config to prepare_for_inference_: no --path."""
    cfg = training_cfg("--bf16")
    assert cfg.common.bf16 and cfg.common_eval.path is None
    tiny_fairseq_model().prepare_for_inference_(cfg)


# --- item 10: several CPU processes ------------------------------------------------------------

TORCHRUN = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29512", "WORLD_SIZE": "2", "RANK": "1",
            "LOCAL_RANK": "1"}


def test_fully_sharded_on_cpu_is_refused_by_name():
    from fairseq_sum_plugins.compat import check_cpu_distributed

    with pytest.raises(ValueError, match=r"^--ddp-backend fully_sharded .* needs CUDA GPUs"):
        check_cpu_distributed(training_cfg("--ddp-backend", "fully_sharded"))


def test_torchrun_variables_make_the_process_one_gloo_worker_of_the_launch(monkeypatch):
    """Without --distributed-world-size fairseq's world size on CPU is 1: each torchrun process
    trained alone."""
    from fairseq_sum_plugins.compat import check_cpu_distributed

    for k, v in TORCHRUN.items():
        monkeypatch.setenv(k, v)
    cfg = training_cfg()
    assert cfg.distributed_training.distributed_world_size == 1  # fairseq's default: alone
    assert check_cpu_distributed(cfg) == 0  # torchrun started the processes: nothing to spawn
    dt = cfg.distributed_training
    assert (dt.distributed_world_size, dt.distributed_rank, dt.device_id) == (2, 1, 1)
    assert dt.distributed_init_method == "env://" and dt.distributed_no_spawn
    assert dt.distributed_backend == "gloo"
    cfg = training_cfg("--distributed-world-size", "2")  # given and equal: the same
    assert check_cpu_distributed(cfg) == 0
    assert cfg.distributed_training.distributed_world_size == 2
    message = r"--distributed-world-size 3, but torchrun started WORLD_SIZE=2"
    with pytest.raises(ValueError, match=message):
        check_cpu_distributed(training_cfg("--distributed-world-size", "3"))


def test_a_world_size_without_a_launcher_spawns_gloo_workers(monkeypatch):
    from fairseq_sum_plugins.compat import TORCHRUN_VARS, check_cpu_distributed

    for k in TORCHRUN_VARS:
        monkeypatch.delenv(k, raising=False)
    cfg = training_cfg("--distributed-world-size", "2")
    assert check_cpu_distributed(cfg) == 2
    dt = cfg.distributed_training
    assert dt.distributed_init_method.startswith("tcp://localhost:")
    assert dt.distributed_backend == "gloo"
    message = r"--distributed-no-spawn on CPU: nothing starts the other processes"
    with pytest.raises(ValueError, match=message):
        check_cpu_distributed(training_cfg("--distributed-world-size", "2",
                                           "--distributed-no-spawn"))
    cfg = training_cfg()  # one process: nothing to do
    assert check_cpu_distributed(cfg) == 0
    assert cfg.distributed_training.distributed_init_method is None


def test_a_world_size_below_one_is_refused():
    """fairseq spawned min(GPUs, 0) = 0 processes and exited 0 without training."""
    from fairseq.distributed import utils as distributed_utils

    ran = []
    with pytest.raises(ValueError, match=r"^--distributed-world-size 0: the number of training"):
        distributed_utils.call_main(training_cfg("--distributed-world-size", "0"),
                                    lambda cfg, **kw: ran.append(1))
    assert not ran


@pytest.mark.parametrize("flag,message", [
    ("--fp16", "--fp16 needs a CUDA GPU"), ("--amp", "--amp is CUDA float16 autocast"),
    ("--ddp-backend=fully_sharded", "--ddp-backend fully_sharded"),
])
def test_the_trainer_refuses_what_fairseq_hydra_train_passes_unchecked(flag, message):
    """fairseq-hydra-train imports the plugin after call_main: the trainer checks its config."""
    from fairseq.trainer import Trainer

    with pytest.raises(ValueError, match=rf"^{message}"):
        Trainer(training_cfg(flag), None, None, None)


@pytest.mark.parametrize("flag", ["--fp16", "--amp", "--ddp-backend=fully_sharded"])
def test_on_a_gpu_the_options_go_to_fairseq_unchecked(monkeypatch, flag):
    """Only CPU trainings are checked: with a CUDA GPU (and no --cpu) fairseq's own code runs."""
    from fairseq.trainer import Trainer
    from fairseq_sum_plugins.compat import training_on_cpu

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    cfg = training_cfg(flag, cpu=False)
    assert not training_on_cpu(cfg) and training_on_cpu(training_cfg(flag))
    with pytest.raises(AttributeError):  # past the checks, fairseq reads the (absent) model
        Trainer(cfg, None, None, None)


def test_a_torchrun_process_without_a_process_group_is_refused(monkeypatch):
    """fairseq-hydra-train under torchrun on CPU: each process reached the trainer alone."""
    from fairseq.trainer import Trainer

    for k, v in TORCHRUN.items():
        monkeypatch.setenv(k, v)
    assert not torch.distributed.is_initialized()
    message = r"^torchrun started WORLD_SIZE=2 processes, but this one would train alone"
    with pytest.raises(ValueError, match=message):
        Trainer(training_cfg(), None, None, None)


# --- item 11: every example longer than the limits ---------------------------------------------


@pytest.mark.parametrize("flag", ["max_source_positions", "max_target_positions"])
@pytest.mark.parametrize("value", [0, -5])
def test_a_position_limit_below_one_is_refused_by_name(toy_data, flag, value):
    """-5 crashed in the sinusoidal embedding (torch.arange), 0 skipped every example."""
    task = load_task(toy_data, **{flag: value})
    message = rf"^--{flag.replace('_', '-')} {value}: a number of tokens, at least 1"
    with pytest.raises(ValueError, match=message):
        task.build_model(argparse.Namespace(arch="tp_transformer_small", **{flag: value}))


def _batches(task, split, max_positions):
    task.load_dataset(split)
    itr = task.get_batch_iterator(task.dataset(split), max_tokens=400, max_positions=max_positions,
                                  ignore_invalid_inputs=True)
    return itr.next_epoch_itr(shuffle=False)


def test_a_split_with_every_source_too_long_stops_naming_the_flags_and_the_count(toy_data):
    task = load_task(toy_data, max_source_positions=3)
    task.load_dataset("train")
    n = len(task.dataset("train"))
    with pytest.raises(ValueError) as err:
        _batches(task, "train", (3, 400))  # was IndexError: list index out of range
    message = str(err.value)
    assert f"all {n} examples of the train split are skipped" in message
    assert f"{n} sources are longer than --max-source-positions 3" in message
    assert "--truncate-source" in message and "--max-target-positions" not in message


def test_a_split_with_some_sources_too_long_skips_them_with_fairseqs_warning(toy_data, caplog):
    task = load_task(toy_data, max_source_positions=20)
    task.load_dataset("train")
    sizes = task.dataset("train").src_sizes
    too_long = int((sizes > 20).sum())
    assert 0 < too_long < len(sizes)
    batches = list(_batches(task, "train", (20, 400)))
    assert sum(len(b["id"]) for b in batches) == len(sizes) - too_long
    assert f"{too_long} samples have invalid sizes and will be skipped" in caplog.text


def test_targets_too_long_name_max_target_positions(toy_data):
    task = load_task(toy_data, max_target_positions=1)
    message = r"targets are longer than --max-target-positions 1: raise it"
    with pytest.raises(ValueError, match=message) as err:
        _batches(task, "train", (1024, 1))
    assert "--max-source-positions" not in str(err.value)


# --- item 12: hydra model configs --------------------------------------------------------------

TRANSFORMER = {"encoder_layers": 1, "decoder_layers": 1, "encoder_embed_dim": 16,
               "encoder_ffn_embed_dim": 32, "encoder_attention_heads": 2, "tpr_roles": 3}
MEM2MEM = {"embed_dim": 8, "encoder_hidden_size": 8, "decoder_hidden_size": 16, "memory_slots": 2,
           "memory_attn_dim": 4}
BART = {"encoder_layers": 1, "decoder_layers": 1, "encoder_embed_dim": 16, "decoder_embed_dim": 16,
        "encoder_ffn_embed_dim": 32, "decoder_ffn_embed_dim": 32, "encoder_attention_heads": 2,
        "decoder_attention_heads": 2, "max_source_positions": 32, "max_target_positions": 32}


@pytest.mark.parametrize("arch,dims", [
    ("tp_transformer_small", TRANSFORMER), ("mem2mem_base", MEM2MEM), ("bart_base_gated", BART),
])
def test_a_misspelt_model_key_in_a_hydra_config_is_refused_by_name(arch, dims):
    from fairseq.models import build_model
    from omegaconf import OmegaConf

    task = FakeTask(make_dictionary())
    build_model(OmegaConf.create({"_name": arch, **dims}), task)  # every key known: builds
    bad = OmegaConf.create({"_name": arch, **dims, "encoder_layerz": 7})
    message = rf"model {arch}: unknown key in the model config: 'encoder_layerz'"
    with pytest.raises(ValueError, match=message):
        build_model(bad, task)
    build_model(bad, task, from_checkpoint=True)  # saved args are not checked (older keys)


def test_a_bart_model_builds_from_a_hydra_config_with_its_feature_flags():
    """fairseq's TransformerConfig kept only its own fields of a DictConfig: the BART family's
    layers failed on focus_layers (AttributeError: invalid argument focus_layers)."""
    from fairseq.models import build_model
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"_name": "bart_base_gated", **BART, "gate_threshold": 0.3})
    model = build_model(cfg, FakeTask(make_dictionary()))
    assert model.args.gate and model.args.gate_threshold == 0.3 and model.args.task is None
    assert cfg.gate is True and cfg.dropout == 0.1  # the preset's values, saved in the checkpoint


def test_earlier_attribute_names_that_an_architecture_still_reads_are_known():
    from fairseq_sum_plugins.compat import model_config_keys

    gated = model_config_keys("transformer_gated_small")
    assert {"gate", "info_gate", "max_source_positions", "pointer_generator"} <= gated
    memory = model_config_keys("mem2mem_base")
    assert {"memory_encoder", "encoder_memory", "memory_decoder", "decoder_memory"} <= memory
    assert "encoder_layerz" not in model_config_keys("tp_transformer_small")


# --- the real commands -------------------------------------------------------------------------


def cli(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def run(*cmd):
    launch = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    env = {k: v for k, v in os.environ.items() if k not in launch}
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)


def train(data, save, *flags):
    return run(cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization",
               "--arch", "tp_transformer_small", *TINY, "--criterion", "summarization_loss",
               "--optimizer", "adam", "--lr", "0.003", "--max-tokens", "400", "--max-update", "1",
               "--save-dir", save, "--no-epoch-checkpoints", "--no-save-optimizer-state",
               "--log-format", "simple", "--num-workers", "0", "--cpu", "--disable-validation",
               "--seed", "1", *flags)


def last_line(proc):
    return [line for line in proc.stderr.splitlines() if line.strip()][-1]


def fits_bfloat16(state):
    floats = [v for v in state["model"].values() if v.is_floating_point()]
    return bool(floats) and all(torch.equal(v, v.bfloat16().float()) for v in floats)


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--fp16", "--memory-efficient-fp16", "--amp",
                                  "--ddp-backend=fully_sharded"])
def test_fairseq_train_on_cpu_refuses_with_one_line_naming_the_flag(toy_data, tmp_path, flag):
    proc = train(toy_data, str(tmp_path / "save"), flag)
    assert proc.returncode != 0
    assert last_line(proc).startswith(f"ValueError: {flag.replace('=', ' ')} "), last_line(proc)


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--bf16", "--memory-efficient-bf16"])
def test_fairseq_train_bf16_on_cpu_trains_in_bfloat16_and_generate_reads_it(toy_data, tmp_path,
                                                                            flag):
    save = str(tmp_path / "save")
    proc = train(toy_data, save, flag)  # was AttributeError: ... no attribute 'xla_device'
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = torch.load(os.path.join(save, "checkpoint_last.pt"), map_location="cpu")
    # fairseq saves bfloat16 parameters as float32: after an update in bfloat16 every value
    # fits bfloat16's 8 mantissa bits
    assert fits_bfloat16(state)
    assert state["cfg"]["common"]["bf16"] and not state["cfg"]["common"]["tpu"]
    gen = [cli("fairseq-generate"), toy_data, "--user-dir", USER_DIR, "--task", "summarization",
           "--path", os.path.join(save, "checkpoint_last.pt"), "--gen-subset", "test",
           "--beam", "1", "--max-len-b", "4", "--batch-size", "4", "--cpu"]
    out = run(*gen)
    assert out.returncode == 0 and "H-0\t" in out.stdout, out.stderr[-3000:]
    refused = run(*gen, flag)  # was accepted and decoded in float32
    assert refused.returncode != 0
    assert last_line(refused).startswith(f"ValueError: {flag}: "), last_line(refused)


@pytest.mark.slow
def test_fairseq_train_float32_parameters_do_not_all_fit_bfloat16(toy_data, tmp_path):
    """The check above means something: a float32 update leaves values bfloat16 cannot hold."""
    save = str(tmp_path / "save")
    assert train(toy_data, save).returncode == 0
    state = torch.load(os.path.join(save, "checkpoint_last.pt"), map_location="cpu")
    assert not fits_bfloat16(state)


@pytest.mark.slow
def test_fairseq_train_with_every_source_too_long_names_the_flags(toy_data, tmp_path):
    proc = train(toy_data, str(tmp_path / "save"), "--max-source-positions", "3")
    assert proc.returncode != 0
    line = last_line(proc)
    assert line.startswith("ValueError: all 64 examples of the train split are skipped"), line
    assert "64 sources are longer than --max-source-positions 3" in line
    assert "--truncate-source" in line
    cut = train(toy_data, str(tmp_path / "cut"), "--max-source-positions", "3", "--truncate-source")
    assert cut.returncode == 0, cut.stderr[-3000:]


HYDRA = """
common: {{user_dir: {user_dir}, cpu: true, log_format: simple, seed: 1}}
task: {{_name: summarization, data: {data}}}
criterion: {{_name: summarization_loss}}
model:
  _name: tp_transformer_small
  encoder_layers: 1
  decoder_layers: 1
  encoder_embed_dim: 32
  encoder_ffn_embed_dim: 64
  encoder_attention_heads: 2
  tpr_roles: 4{extra}
optimizer: {{_name: adam}}
lr_scheduler: {{_name: fixed}}
optimization: {{lr: [0.003], max_update: 1}}
dataset: {{max_tokens: 400, num_workers: 0, disable_validation: true}}
checkpoint: {{save_dir: {save}, no_epoch_checkpoints: true}}
"""


def hydra_config(folder, name, data, extra=""):
    text = HYDRA.format(user_dir=USER_DIR, data=data, save=folder / name, extra=extra)
    (folder / f"{name}.yaml").write_text(text)
    # hydra's own run folder (default ./outputs/DATE/TIME under the repository) goes to tmp too
    return ["--config-dir", str(folder), "--config-name", name, f"hydra.run.dir={folder / name}-hydra"]


@pytest.mark.slow
def test_fairseq_hydra_train_refuses_a_misspelt_model_key_and_trains_without_it(toy_data,
                                                                                tmp_path):
    bad = run(cli("fairseq-hydra-train"),
              *hydra_config(tmp_path, "bad", toy_data, "\n  encoder_layerz: 7"))  # was: trained
    output = bad.stderr + bad.stdout
    assert bad.returncode != 0
    assert ("ValueError: model tp_transformer_small: unknown key in the model config: "
            "'encoder_layerz' (did you mean 'encoder_layers'") in output, output[-3000:]
    assert not (tmp_path / "bad" / "checkpoint_last.pt").exists()
    good = run(cli("fairseq-hydra-train"), *hydra_config(tmp_path, "good", toy_data))
    assert good.returncode == 0, (good.stderr + good.stdout)[-3000:]
    state = torch.load(tmp_path / "good" / "checkpoint_last.pt", map_location="cpu")
    assert state["cfg"]["model"]["encoder_layers"] == 1
    assert state["optimizer_history"][-1]["num_updates"] == 1


@pytest.mark.slow
def test_fairseq_hydra_train_trains_a_bart_model_and_generate_reads_it(toy_data, tmp_path):
    bart = ("\n  decoder_attention_heads: 2\n  decoder_embed_dim: 32\n  decoder_ffn_embed_dim: 64"
            "\n  max_source_positions: 64\n  max_target_positions: 64\n  gate_threshold: 0.3")
    argv = hydra_config(tmp_path, "bart", toy_data, bart)
    (tmp_path / "bart.yaml").write_text((tmp_path / "bart.yaml").read_text().replace(
        "_name: tp_transformer_small", "_name: bart_base_gated").replace("  tpr_roles: 4\n", ""))
    trained = run(cli("fairseq-hydra-train"), *argv)  # was AttributeError: invalid argument ...
    assert trained.returncode == 0, (trained.stderr + trained.stdout)[-3000:]
    gen = run(cli("fairseq-generate"), toy_data, "--user-dir", USER_DIR, "--task", "summarization",
              "--path", str(tmp_path / "bart" / "checkpoint_last.pt"), "--gen-subset", "test",
              "--beam", "1", "--max-len-b", "4", "--batch-size", "4", "--cpu")
    assert gen.returncode == 0 and "H-0\t" in gen.stdout, gen.stderr[-3000:]


@pytest.mark.slow
def test_fairseq_hydra_train_on_cpu_refuses_amp_and_a_torchrun_launch(toy_data, tmp_path):
    """fairseq-hydra-train trained in float32 with common.amp=true, and under torchrun each
    process trained alone."""
    hydra = ["-m", "fairseq_cli.hydra_train", *hydra_config(tmp_path, "run", toy_data)]
    amp = run(sys.executable, *hydra, "common.amp=true")
    assert amp.returncode != 0, amp.stderr[-3000:]
    assert "ValueError: --amp is CUDA float16 autocast" in amp.stderr, amp.stderr[-3000:]
    launch = run(sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                 "2", *hydra)
    assert launch.returncode != 0
    alone = "ValueError: torchrun started WORLD_SIZE=2 processes, but this one would train alone"
    # each rank refuses on its own (test_a_torchrun_process_without_a_process_group_is_refused);
    # torchrun stops the other rank with SIGTERM once the first one exits, so that one may be
    # stopped before it prints: one refusal or two, never an update
    assert 1 <= launch.stderr.count(alone) <= 2, launch.stderr[-3000:]
    assert "num_updates" not in launch.stdout + launch.stderr
    assert not (tmp_path / "run" / "checkpoint_last.pt").exists()


def test_validate_bf16_on_cpu_is_refused_by_name():
    """fairseq-validate converts models for --fp16 only: --bf16 computed the loss in float32."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.distributed import utils as distributed_utils
    from fairseq_cli import validate

    for flag in ("--bf16", "--memory-efficient-bf16"):
        parser = options.get_validation_parser()
        args = options.parse_args_and_arch(parser, ["DATA", "--task", "summarization", "--path",
                                                    "ckpt.pt", "--cpu", flag])
        with pytest.raises(ValueError, match=rf"^{flag}: fairseq-validate evaluates in bfloat16"):
            distributed_utils.call_main(convert_namespace_to_omegaconf(args), validate.main)


@pytest.mark.parametrize("arch,dims", [("transformer_ta_small", TRANSFORMER),
                                       ("bart_base_ta", BART)])
def test_a_topic_assistant_builds_from_a_struct_hydra_config_and_records_its_phi(arch, dims,
                                                                                 tmp_path):
    """fairseq-hydra-train's config is a struct: the Topic Assistant's build-time record of its
    topic model (ta_phi_sha256, ta_num_topics, saved for checkpoint checks) was refused with
    ConfigAttributeError."""
    from fairseq.models import build_model
    from omegaconf import OmegaConf
    from helpers import write_topic_model

    d = make_dictionary()
    path = write_topic_model(d, str(tmp_path / "tm.npz"), k=3)
    dims = {k: v for k, v in dims.items() if k != "tpr_roles"}
    cfg = OmegaConf.create({"_name": arch, **dims, "ta_topic_model": path})
    OmegaConf.set_struct(cfg, True)
    build_model(cfg, FakeTask(d))
    assert len(cfg.ta_phi_sha256) == 64 and cfg.ta_num_topics == 3


@pytest.mark.parametrize("key,value,message", [
    ("encoder_layers", "two", r"encoder_layers='two' is not a whole number \(--encoder-layers\)"),
    ("encoder_layers", 1.5, r"encoder_layers=1.5 is not a whole number"),
    ("encoder_layers", True, r"encoder_layers=True is not a whole number"),
    ("dropout", "lots", r"dropout='lots' is not a number \(--dropout\)"),
    ("dropout_mask", "fast", r"dropout_mask='fast': choose one of bernoulli, packed \(--dropout-mask\)"),
])
def test_a_wrongly_typed_model_value_in_a_hydra_config_is_refused_by_name(key, value, message):
    """Was a TypeError traceback from the model's constructor (encoder_layers=two)."""
    from fairseq.models import build_model
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"_name": "tp_transformer_small", **TRANSFORMER, key: value})
    with pytest.raises(ValueError, match=rf"model tp_transformer_small: {message}"):
        build_model(cfg, FakeTask(make_dictionary()))
    ok = OmegaConf.create({"_name": "tp_transformer_small", **TRANSFORMER, "dropout": 0})  # an int is a number
    build_model(ok, FakeTask(make_dictionary()))
