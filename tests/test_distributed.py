"""Distributed training through the real fairseq-train on CPU: two gloo workers give the parameters and
logged metrics of one worker with ``--update-freq 2`` on the same batches.

fairseq hands worker r the batches r, r + 2, ... of the epoch's batch list; one worker with
``--update-freq 2`` accumulates batches 2u and 2u + 1 for update u. Both sum the gradients of the same
examples and divide by the same sample size, so after a few updates the parameters agree up to the
order of floating-point sums. Logged metrics (loss, the auxiliary losses, ``gate_sparsity``, and the
``--eval-rouge`` validation ROUGE whose sums come from both validation shards) must agree too.
Each family (the composable transformer with TPR + gate + focus + saliency + Topic Assistant on,
Mem2Mem, the tiny BART presets) runs with one of fairseq's two DDP wrappers (``pytorch_ddp``, which
``compat.ddp_on_cpu`` lets wrap a CPU model, and ``legacy_ddp``).
"""
import json
import os
import socket
import subprocess

import pytest
import torch

from helpers import binarize, write_toy_parallel
from helpers import USER_DIR, cli
from tolerances import MODEL_ULPS, fp32_tol, printed_tol

pytestmark = pytest.mark.slow  # trains and decodes through the console scripts

TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
        "--encoder-attention-heads", "2"]
BART_TINY = TINY + ["--decoder-attention-heads", "2", "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim", "64",
                    "--max-source-positions", "64", "--max-target-positions", "64"]
FAMILIES = {
    "transformer_all": ["--arch", "transformer_ta_small", *TINY, "--tpr", "discrete", "--tpr-roles", "4",
                        "--info-gate", "True", "--gate-threshold", "0.3", "--focus-layers", "all",
                        "--saliency-layers", "all", "--side-data", "theta", "--ta-topics-n", "2"],
    "mem2mem": ["--arch", "mem2mem_base", "--embed-dim", "16", "--encoder-hidden-size", "16",
                "--decoder-hidden-size", "32", "--memory-slots", "3", "--memory-attn-dim", "8"],
    "bart_gated": ["--arch", "bart_base_gated", *BART_TINY, "--gate-threshold", "0.3"],
    "bart_ta": ["--arch", "bart_base_ta", *BART_TINY, "--side-data", "theta", "--ta-topics-n", "2"],
}
AUX = {"transformer_all": {"aux_gate_l1", "gate_sparsity"}, "mem2mem": {"aux_mem_comp", "aux_mem_read"},
       "bart_gated": {"aux_gate_l1", "gate_sparsity"}, "bart_ta": set()}
COMMON = ["--task", "summarization", "--criterion", "summarization_loss", "--label-smoothing", "0.1",
          "--optimizer", "adam", "--lr", "0.003", "--max-tokens", "300", "--max-update", "3", "--dropout", "0",
          "--seed", "3", "--no-epoch-checkpoints", "--no-save-optimizer-state", "--log-format", "json",
          "--log-interval", "1", "--num-workers", "0", "--cpu", "--validate-interval-updates", "3",
          "--eval-rouge", "--eval-rouge-args", '{"beam": 1, "max_len_b": 6}', "--required-batch-size-multiple", "1"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["OMP_NUM_THREADS"] = "1"
    return env


def launch(data, save, family, workers, ddp_backend="legacy_ddp"):
    """Start fairseq-train with ``workers`` gloo processes (``--update-freq 2`` when 1)."""
    base = [cli("fairseq-train"), data, "--user-dir", USER_DIR, *COMMON, *FAMILIES[family], "--save-dir", save]
    if workers == 1:
        cmds = [base + ["--update-freq", "2"]]
    else:
        dist = ["--distributed-world-size", str(workers), "--distributed-init-method", f"tcp://127.0.0.1:{free_port()}",
                "--distributed-no-spawn", "--distributed-backend", "gloo", "--ddp-backend", ddp_backend]
        cmds = [base + dist + ["--distributed-rank", str(r)] for r in range(workers)]
    os.makedirs(save, exist_ok=True)
    # each worker logs to a file: a worker blocked on a full pipe would stall the other in all-reduce
    logs = [open(os.path.join(save, f"rank{r}.log"), "w+") for r in range(len(cmds))]
    return [(subprocess.Popen(c, stdout=f, stderr=subprocess.STDOUT, text=True, env=_env()), f) for c, f in zip(cmds, logs)]


def finish(procs, what):
    """Wait for the processes of one run -> the log of rank 0."""
    outs = []
    for p, f in procs:
        p.wait(timeout=600)
        f.seek(0)
        outs.append(f.read())
        f.close()
        assert p.returncode == 0, f"fairseq-train ({what}) failed:\n{outs[-1][-3000:]}"
    return outs[0]


def logged(log, kind):
    """The JSON stats of fairseq's ``train_inner`` / ``valid`` log lines, in order (``valid_`` prefix dropped)."""
    rows = []
    for line in log.splitlines():
        if f"| INFO | {kind} |" in line:
            stats = json.loads(line.split(f"| {kind} | ", 1)[1])
            rows.append({k[len(kind) + 1:] if k.startswith(kind + "_") else k: v for k, v in stats.items()})
    return rows


def _params_tol(state):
    """Parameters after 3 Adam updates, gradients summed in another order: the updates are
    lr * m / sqrt(v) (relative rounding of a ratio near 1 each) and the parameters keep their own
    float32 rounding, so ulps of the largest parameter (at least of 1)."""
    largest = max(v.float().abs().max().item() for v in state.values() if v.is_floating_point())
    return fp32_tol(largest, MODEL_ULPS)


def params(save):
    state = torch.load(os.path.join(save, "checkpoint_last.pt"), map_location="cpu")
    return state["model"]


@pytest.fixture(scope="module")
def dist_data(tmp_path_factory):
    from preprocess.topic_model import main as topic_model_main

    root = tmp_path_factory.mktemp("dist")
    write_toy_parallel(str(root / "raw"), n_train=48, n_valid=7, n_test=4, seed=5)
    data = binarize(str(root / "raw"), str(root / "bin"))
    topic_model_main(["fit", data, "--topics", "4", "--iters", "5"])
    return data


def _compared(stats):
    return [k for k in stats if k in ("loss", "nll_loss", "gate_sparsity", "wpb", "bsz") or k.startswith(("aux_", "rouge"))]


def _compare_stats(one, two, what):
    assert len(one) == len(two) and one, what
    for a, b in zip(one, two):
        keys = _compared(a)
        assert "loss" in keys and keys == _compared(b), what
        for k in keys:
            # fairseq logs each figure rounded (loss to 3 decimals, ...): two roundings of values
            # that differ by float32 reassociation (other gradient sums) are a last digit apart
            decimals = max(len(str(v).partition(".")[2]) for v in (a[k], b[k]))
            tol = printed_tol(decimals, sides=2) + fp32_tol(float(b[k]), MODEL_ULPS)
            assert float(a[k]) == pytest.approx(float(b[k]),
                                                abs=tol), f"{what}: {k} {a[k]} != {b[k]}"


@pytest.mark.parametrize("family,backend", [
    ("transformer_all", "pytorch_ddp"), ("mem2mem", "legacy_ddp"), ("bart_gated", "legacy_ddp"), ("bart_ta", "pytorch_ddp"),
])
def test_two_workers_equal_one_worker_with_update_freq_2(dist_data, tmp_path, family, backend):
    one, two = launch(dist_data, str(tmp_path / "one"), family, 1), launch(dist_data, str(tmp_path / "two"), family, 2, backend)
    single, double = finish(one, f"{family}, 1 worker"), finish(two, f"{family}, 2 workers, {backend}")
    p1, p2 = params(str(tmp_path / "one")), params(str(tmp_path / "two"))
    assert p1.keys() == p2.keys()
    worst = max((p1[k].float() - p2[k].float()).abs().max().item() for k in p1)
    assert worst <= _params_tol(p1), f"{family}/{backend}: parameters differ by {worst}"
    train_one, train_two = logged(single, "train_inner"), logged(double, "train_inner")
    assert [r["num_updates"] for r in train_two] == ["1", "2", "3"]
    _compare_stats(train_one, train_two, f"{family} train")
    _compare_stats(logged(single, "valid"), logged(double, "valid"), f"{family} valid")
    # the auxiliary terms each family logs (the Topic Assistant adds none), all compared above
    aux = {k for k in train_two[0] if k.startswith("aux_") or k == "gate_sparsity"}
    assert aux >= AUX[family] and (AUX[family] or not aux), f"{family}: logged {sorted(aux)}"
    assert "rouge_l" in logged(double, "valid")[0]


# --- how users launch on CPU: torchrun, --distributed-world-size N alone (issue 31, item 10) ---

SMALL = ["--arch", "tp_transformer_small", *TINY, "--tpr-roles", "4"]


def launch_as(data, save, how):
    """``how``: "one" (1 worker, --update-freq 2), "torchrun" (torchrun --nproc_per_node 2, no
    fairseq distributed flag) or "spawn" (--distributed-world-size 2 alone)."""
    import sys

    args = [data, "--user-dir", USER_DIR, *COMMON, *SMALL, "--save-dir", save]
    if how == "one":
        cmd = [cli("fairseq-train"), *args, "--update-freq", "2"]
    elif how == "torchrun":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
               "-m", "fairseq_cli.train", *args]
    else:
        cmd = [cli("fairseq-train"), *args, "--distributed-world-size", "2"]
    os.makedirs(save, exist_ok=True)
    log = open(os.path.join(save, "train.log"), "w+")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env=_env())
    return [(proc, log)]


@pytest.mark.parametrize("how", ["torchrun", "spawn"])
def test_two_cpu_workers_started_as_users_do_equal_one_worker_with_update_freq_2(dist_data,
                                                                                 tmp_path, how):
    """torchrun without --distributed-world-size let each process train alone on the whole data
    (fairseq's world size is 1 on CPU); with it fairseq divided by torch.cuda.device_count();
    --distributed-world-size 2 alone failed with "0 available devices". Equal parameters and
    logged batch sizes to one worker with --update-freq 2 mean that the two workers read
    different halves of each update's batches (each training alone on the whole data, the first
    update would count the batch of one worker only), and fairseq's per-update check that the
    workers' gradient norms agree held on every update."""
    one = launch_as(dist_data, str(tmp_path / "one"), "one")
    single = finish(one, "1 worker")
    two = launch_as(dist_data, str(tmp_path / how), how)
    double = finish(two, f"2 workers, {how}")
    assert "distributed init (rank 1)" in double and "gloo" in double
    p1, p2 = params(str(tmp_path / "one")), params(str(tmp_path / how))
    worst = max((p1[k].float() - p2[k].float()).abs().max().item() for k in p1)
    assert worst <= _params_tol(p1), f"{how}: parameters differ by {worst}"
    train_one, train_two = logged(single, "train_inner"), logged(double, "train_inner")
    assert [r["num_updates"] for r in train_two] == ["1", "2", "3"]
    _compare_stats(train_one, train_two, f"{how} train")
