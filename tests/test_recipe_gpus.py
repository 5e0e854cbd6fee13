"""recipes/common.sh gpu_setup: the world size and --update-freq that give the paper's global batch,
and a clear stop when NGPU and the visible GPUs disagree (VISIBLE_GPUS fakes the visible count)."""
import os
import subprocess

import pytest

from helpers import REPO

COMMON = os.path.join(REPO, "recipes", "common.sh")


def gpu_setup(args, **env):
    script = f'source "{COMMON}"; gpu_setup {args}; echo "WORLD=$WORLD FREQ=$UPDATE_FREQ FLAGS=${{DIST_FLAGS[*]}}"'
    full = {k: v for k, v in os.environ.items() if k not in ("NGPU", "NNODES", "UPDATE_FREQ", "NODE_RANK", "SLURM_JOB_ID")}
    full.update(env)
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=full)


@pytest.mark.parametrize("args,env,expect", [
    ("4", dict(VISIBLE_GPUS="0"), "WORLD=1 FREQ=4 FLAGS="),                     # CPU: one worker, 4 batches
    ("4", dict(VISIBLE_GPUS="1"), "WORLD=1 FREQ=4 FLAGS=--distributed-world-size 1"),
    ("4", dict(VISIBLE_GPUS="4", NGPU="4"), "WORLD=4 FREQ=1 FLAGS=--distributed-world-size 4"),
    ("4 6", dict(VISIBLE_GPUS="2", NGPU="2"), "WORLD=2 FREQ=12 FLAGS=--distributed-world-size 2"),  # TA: 4 GPUs x 6
    ("4", dict(VISIBLE_GPUS="2", NGPU="2", UPDATE_FREQ="3"), "WORLD=2 FREQ=3 FLAGS=--distributed-world-size 2"),
    ("8 2", dict(VISIBLE_GPUS="4", NGPU="4", NNODES="2", MASTER_ADDR="node0", NODE_RANK="1"),
     "WORLD=8 FREQ=2 FLAGS=--distributed-world-size 8 --distributed-init-method tcp://node0:12355 --distributed-rank 4"),
    ("4", dict(VISIBLE_GPUS="2", NGPU="2", NNODES="2", SLURM_JOB_ID="7", DIST_PORT="9000"),
     "WORLD=4 FREQ=1 FLAGS=--distributed-world-size 4 --distributed-port 9000"),
])
def test_world_size_and_update_freq_give_the_papers_batch(args, env, expect):
    proc = gpu_setup(args, **env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == expect


def test_ngpu_disagreeing_with_visible_gpus_stops():
    proc = gpu_setup("4", VISIBLE_GPUS="4")  # NGPU defaults to 1: fairseq would take all 4
    assert proc.returncode == 2 and "NGPU=1 but this node shows 4 GPU(s)" in proc.stderr
    proc = gpu_setup("4", VISIBLE_GPUS="0", NGPU="2")
    assert proc.returncode == 2 and "no GPU is visible" in proc.stderr
    proc = gpu_setup("4", VISIBLE_GPUS="2", NGPU="2", NNODES="2")  # several nodes, no rendezvous given
    assert proc.returncode != 0 and "MASTER_ADDR" in proc.stderr


def test_batches_not_divisible_by_workers_warn():
    proc = gpu_setup("4", VISIBLE_GPUS="3", NGPU="3")
    assert proc.returncode == 0 and "WORLD=3 FREQ=2" in proc.stdout
    assert "3 workers x --update-freq 2 = 6 batches per update, the paper's 4" in proc.stderr


def test_recipe_stops_before_any_work_when_gpus_disagree(tmp_path):
    """A real recipe with the default NGPU=1 on a (faked) 4-GPU node stops with the message."""
    env = {k: v for k, v in os.environ.items() if k not in ("NGPU", "UPDATE_FREQ")}
    env.update(VISIBLE_GPUS="4", WORK=str(tmp_path / "w"))
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", "xsum", "tp_transformer.sh"), str(tmp_path / "none.jsonl")],
                          capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 2 and "NGPU=1 but this node shows 4 GPU(s)" in proc.stderr
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("env,message", [
    (dict(VISIBLE_GPUS="0", NGPU="abc"), "NGPU must be an integer >= 1, got 'abc'"),  # was a CPU run
    (dict(VISIBLE_GPUS="0", NGPU="1.5"), "NGPU must be an integer >= 1, got '1.5'"),
    (dict(VISIBLE_GPUS="0", NNODES="abc"), "NNODES must be an integer >= 1, got 'abc'"),
    (dict(VISIBLE_GPUS="2", NGPU="2", NNODES="-1"), "NNODES must be an integer >= 1, got -1"),  # was world size -4
    (dict(VISIBLE_GPUS="2", NGPU="2", NNODES="0"), "NNODES must be an integer >= 1, got 0"),  # was a division error
    (dict(VISIBLE_GPUS="2", NGPU="2", NNODES="2", MASTER_ADDR="n0", NODE_RANK="2"),
     "NODE_RANK must be an integer in 0..1, got 2"),
    (dict(VISIBLE_GPUS="2", NGPU="2", NNODES="2", MASTER_ADDR="n0", NODE_RANK="-1"),
     "NODE_RANK must be an integer in 0..1, got -1"),
    (dict(VISIBLE_GPUS="0", NODE_RANK="1"), "NODE_RANK must be an integer in 0..0, got 1"),
    (dict(VISIBLE_GPUS="2", NGPU="2", UPDATE_FREQ="0"), "UPDATE_FREQ must be an integer >= 1, got 0"),
    (dict(VISIBLE_GPUS="2", NGPU="2", NNODES="2", MASTER_ADDR="n0", NODE_RANK="0", MASTER_PORT="99999"),
     "MASTER_PORT must be an integer in 1..65535, got 99999"),
    (dict(VISIBLE_GPUS="two"), "VISIBLE_GPUS must be an integer >= 0, got 'two'"),
    (dict(VISIBLE_GPUS="0", NGPU="a[$(echo RAN >&2)]"), "NGPU must be an integer >= 1, got 'a[$(echo RAN >&2)]'"),
    (dict(VISIBLE_GPUS="0", NGPU="1234567890123456789"), "NGPU must be an integer >= 1, got '1234567890123456789'"),
])
def test_bad_worker_numbers_are_refused_naming_the_variable(env, message):
    proc = gpu_setup("4", **env)
    assert proc.returncode == 2 and f"{message}\n" in proc.stderr, proc.stderr
    assert "WORLD=" not in proc.stdout and "RAN" not in proc.stderr.replace(message, "")


def test_numbers_are_read_in_base_10():
    """'08' is 8 (bash arithmetic reads a leading 0 as octal, and 08 as an error); '+2' is 2."""
    proc = gpu_setup("8", VISIBLE_GPUS="08", NGPU="08", UPDATE_FREQ="+2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "WORLD=8 FREQ=2 FLAGS=--distributed-world-size 8"
