"""Information selection through the real CLIs: fairseq-train (gate loss and sparsity logged in
validation), fairseq-generate with ``--model-overrides "{'gate_threshold': T}"`` (sparsity line), and
BART: a tiny fairseq ``bart_base`` checkpoint fine-tuned as ``bart_base_gated`` with ``--restore-file``."""
import json
import os
import re

import pytest
import torch

from helpers import REPO, save_bart_checkpoint
from helpers import cli, run
from tolerances import approx64, printed_tol

pytestmark = pytest.mark.slow  # trains and decodes through the console scripts

USER_DIR = os.path.join(REPO, "fairseq_sum_plugins")
TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
        "--encoder-attention-heads", "2"]
TRAIN = ["--task", "summarization", "--criterion", "summarization_loss", "--label-smoothing", "0.1",
         "--optimizer", "adam", "--lr", "0.003", "--max-tokens", "2000", "--no-epoch-checkpoints",
         "--log-format", "simple", "--log-interval", "1", "--num-workers", "0", "--seed", "1"]
SPARSITY = re.compile(r"information selection: gate threshold ([0-9.]+), sparsity rate ([0-9.]+)% \(([0-9,]+) of ([0-9,]+)")


def train(data, save, *extra):
    proc = run(cli("fairseq-train"), data, "--user-dir", USER_DIR, *TRAIN, "--save-dir", save, *extra)
    return proc.stderr + proc.stdout


def generate(data, ckpt, *extra):
    return run(cli("fairseq-generate"), data, "--user-dir", USER_DIR, "--task", "summarization", "--path", ckpt,
               "--gen-subset", "test", "--beam", "2", "--batch-size", "6", "--max-len-b", "8", *extra)


@pytest.fixture(scope="module")
def gated_run(toy_data, tmp_path_factory):
    save = str(tmp_path_factory.mktemp("gated"))
    log = train(toy_data, save, "--arch", "transformer_gated_small", *TINY, "--max-update", "6",
                "--gate-threshold", "0.5", "--gate-l1-weight", "0.1")
    return {"log": log, "ckpt": os.path.join(save, "checkpoint_last.pt")}


def test_training_logs_gate_loss_and_validation_sparsity(gated_run):
    lines = gated_run["log"].splitlines()
    assert any("aux_gate_l1" in l for l in lines if "train_inner" in l or "| train |" in l or " train " in l)
    valid = [l for l in lines if "valid on 'valid' subset" in l]
    assert valid and all(re.search(r"gate_sparsity [0-9.]+", l) for l in valid)


def test_generate_with_threshold_override_reports_sparsity(toy_data, gated_run):
    gen = generate(toy_data, gated_run["ckpt"], "--model-overrides", "{'gate_threshold': 0.5}")
    hyps = [l for l in gen.stdout.splitlines() if l.startswith("H-")]
    assert len(hyps) == 12
    m = SPARSITY.search(gen.stderr)
    assert m, gen.stderr[-2000:]
    threshold, rate, dropped, total = float(m[1]), float(m[2]), int(m[3].replace(",", "")), int(m[4].replace(",", ""))
    assert threshold == 0.5 and 0 <= dropped < total
    # logged with 2 decimals
    assert rate == pytest.approx(100 * dropped / total, abs=printed_tol(2))


# --- BART ---------------------------------------------------------------------------------------


BART_TINY = TINY + ["--decoder-attention-heads", "2", "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
                    "--decoder-ffn-embed-dim", "64", "--max-source-positions", "64", "--max-target-positions", "64"]


@pytest.fixture(scope="module")
def bart_checkpoint(toy_data, tmp_path_factory):
    return save_bart_checkpoint(toy_data, str(tmp_path_factory.mktemp("bart") / "model.pt"), BART_TINY)


def test_gated_bart_loads_a_bart_checkpoint_with_a_fresh_gate(toy_data, bart_checkpoint):
    from fairseq import checkpoint_utils, tasks

    state = checkpoint_utils.load_checkpoint_to_cpu(bart_checkpoint)
    args = state["args"]
    args.arch, args.gate_per_head, args.gate_threshold = "bart_base_gated", False, 0.0
    torch.manual_seed(1)
    model = tasks.setup_task(args).build_model(args)
    fresh = model.encoder.info_gate.proj.weight.detach().clone()
    # PyTorch's default Linear init (paper §4.2), not the N(0, 0.02) / zero-bias init BART applies:
    # weight and bias uniform in +-1/sqrt(d), so the bias is non-zero and the weight's std is 1/sqrt(3d)
    d = fresh.shape[1]
    bias = model.encoder.info_gate.proj.bias.detach()
    assert fresh.abs().max() <= d ** -0.5 and bias.abs().max() <= d ** -0.5 and bias.abs().min() > 0
    # the std of n uniform draws has a relative standard error sqrt((kurtosis - 1) / 4n), with
    # kurtosis 1.8: sqrt(0.2 / n); 4 of them (0.35 before, whatever n)
    se = (0.2 / fresh.numel()) ** 0.5  # tol: uniform kurtosis 1.8, derived above
    assert fresh.std().item() == pytest.approx((3 * d) ** -0.5,
                                               rel=4 * se)  # tol: 4 standard errors
    model.load_state_dict(state["model"], strict=True)  # the gate is missing from the checkpoint
    own = model.state_dict()
    assert all(torch.equal(own[k], v) for k, v in state["model"].items())
    assert torch.equal(model.encoder.info_gate.proj.weight, fresh)


def test_bart_gated_fine_tunes_from_restore_file_and_generates(toy_data, bart_checkpoint, tmp_path):
    from argparse import Namespace

    from fairseq import checkpoint_utils

    save = str(tmp_path / "ft")
    log = train(toy_data, save, "--arch", "bart_base_gated", *BART_TINY, "--max-update", "3", "--disable-validation",
                "--restore-file", bart_checkpoint, "--reset-optimizer", "--reset-dataloader", "--reset-meters",
                "--reset-lr-scheduler", "--gate-per-head", "True")
    assert "initialising encoder.info_gate.proj.weight fresh" in log
    assert re.search(r"aux_gate_l1 [0-9.]+", log)
    # generation from the fine-tuned checkpoint with the threshold overridden at load time
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [os.path.join(save, "checkpoint_last.pt")], arg_overrides={"gate_threshold": 0.5, "data": toy_data})
    model = models[0].eval()
    assert model.encoder.info_gate.threshold == 0.5 and model.encoder.info_gate.num_gates == 2
    task.load_dataset("test")
    ds = task.dataset("test")
    sample = ds.collater([ds[i] for i in range(len(ds))])
    gen = task.build_generator([model], Namespace(beam=2, max_len_b=8))
    with torch.no_grad():
        hypos = task.inference_step(gen, [model], sample)
    assert len(hypos) == len(ds) and all(len(h[0]["tokens"]) > 0 for h in hypos)
    dropped, total = model.encoder.info_gate.sparsity()
    assert total == int(sample["net_input"]["src_lengths"].sum()) and 0 <= dropped < total


def test_gate_sweep_table_and_pngs(toy_data, gated_run, tmp_path):
    from fairseq_sum_plugins.inspection import gate_sweep

    out = tmp_path / "sweep"
    rows = gate_sweep.main([toy_data, "--path", gated_run["ckpt"], "--thresholds", "0", "0.5", "0.99",
                            "--max-documents", "6", "--beam", "1", "--max-len-b", "6", "--bpe-symbol", "none",
                            "--cpu", "--out", str(out)])
    assert [r["threshold"] for r in rows] == [0.0, 0.5, 0.99]
    sparsity = [r["sparsity"] for r in rows]
    assert sparsity[0] == 0.0 and sparsity == sorted(sparsity) and sparsity[-1] > 0
    assert all(r["tokens"] > 0 and r["n"] == 6 and 0 <= r["rouge1"] <= 100 for r in rows)
    assert "| 0.5 |" in (out / "gate_sweep.md").read_text()
    # each row names the ROUGE scorer that made it (the paper tables name it beside the figures)
    saved = json.loads((out / "gate_sweep.json").read_text())
    assert [r["scorer"] for r in saved] == ["rouge155-py"] * 3
    # the source-gain forwards are not counted in the sparsity: tokens = the 6 decoded sources
    model, task, _ = gate_sweep.load(toy_data, gated_run["ckpt"], cuda=False)
    task.load_dataset("test")
    assert all(r["tokens"] == sum(len(task.dataset("test")[i]["source"]) for i in range(6)) for r in rows)
    assert all(1 <= r["distinct"] <= 6 for r in rows)
    from fairseq_sum_plugins.inspection.source_use import source_gain

    model.encoder.info_gate.threshold = 0.5
    # the same function on the same weights and batches (16 examples a batch): bit for bit
    assert rows[1]["source_gain"] == source_gain(model, task, "test", 6)["gain"]
    assert (out / "sparsity_rouge.png").stat().st_size > 1000 and (out / "gate_scores.png").stat().st_size > 1000


def test_gate_sweep_interleaved_timing_rotates_the_order_and_takes_median_ratios(monkeypatch):
    """--timing-rounds: round k starts at threshold k mod n; the speed-up is the median over rounds of
    the same round's ratio (a slow round, e.g. the machine busy, divides out)."""
    from argparse import Namespace

    from fairseq_sum_plugins.inspection import gate_sweep

    class Gate:
        threshold = None
        counts = "on"

    gate = Gate()
    order, round_load = [], {0: 1.0, 1: 3.0, 2: 1.0}  # round 2 (index 1) runs 3x slower for everyone
    speed = {0.0: 100.0, 0.1: 150.0, 0.5: 300.0}  # words/s on an idle machine

    def fake_generate(model, task, gen, args, cuda):
        order.append(gate.threshold)
        k = (len(order) - 1) // 3
        return [], [], 600, 600 / speed[gate.threshold] * round_load[k]

    monkeypatch.setattr(gate_sweep, "generate_all", fake_generate)
    task = Namespace(build_generator=lambda models, args: None)
    args = Namespace(thresholds=[0.0, 0.1, 0.5], beam=1, max_len_b=5, lenpen=1.0)
    out = gate_sweep.interleaved_timing(None, task, [gate], args, False, rounds=3)
    assert order == [0.0, 0.1, 0.5, 0.1, 0.5, 0.0, 0.5, 0.0, 0.1]
    assert [o["speedup"] for o in out] == approx64([1.0, 1.5, 3.0])
    assert out[1]["timing_words_per_s"] == approx64([150.0, 50.0, 150.0])
    assert gate.counts is None


def test_gate_sweep_refuses_negative_timing_rounds(capsys):
    from fairseq_sum_plugins.inspection import gate_sweep

    with pytest.raises(SystemExit) as e:
        gate_sweep.main(["data", "--path", "x.pt", "--out", "o", "--timing-rounds", "-1"])
    assert e.value.code == 2 and "--timing-rounds must be >= 0, got -1" in capsys.readouterr().err
    for extra in (["--thresholds", "0.1"], ["--reference"]):  # nothing to compare the speed with
        with pytest.raises(SystemExit) as e:
            gate_sweep.main(["data", "--path", "x.pt", "--out", "o", "--timing-rounds", "3", *extra])
        assert e.value.code == 2 and "give two or more --thresholds, without --reference" in capsys.readouterr().err
