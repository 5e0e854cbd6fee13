"""Topic Assistant through the CLIs: binarized data -> topic_model fit -> fairseq-train --side-data theta ->
fairseq-generate."""
import os

import numpy as np
import pytest

from conftest import binarize, write_toy_parallel
from test_cli_roundtrip import USER_DIR, cli, run

K = 8


@pytest.fixture(scope="module")
def ta_trained(tmp_path_factory):
    from preprocess.topic_model import main as topic_model_main

    root = tmp_path_factory.mktemp("ta_roundtrip")
    write_toy_parallel(str(root / "raw"), n_train=40, n_valid=6, n_test=9, seed=3)
    data = binarize(str(root / "raw"), str(root / "bin"))
    topic_model_main(["fit", data, "--topics", str(K), "--iters", "10"])
    save = str(root / "ckpt")
    run(
        cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization", "--arch", "transformer_ta_small",
        "--side-data", "theta", "--ta-topics-n", "3",
        "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
        "--encoder-attention-heads", "2", "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "0.003",
        "--max-tokens", "1000", "--max-update", "3", "--save-dir", save, "--no-epoch-checkpoints", "--log-format", "simple",
        "--disable-validation",
    )
    return {"data": data, "ckpt": os.path.join(save, "checkpoint_last.pt")}


def test_fit_writes_topic_model_and_aligned_theta(ta_trained):
    data = ta_trained["data"]
    with np.load(os.path.join(data, "topic_model.npz")) as f:
        assert f["phi"].shape[1] == K and str(f["checksum"])
    for split, n in (("train", 40), ("valid", 6), ("test", 9)):
        theta = np.load(os.path.join(data, f"{split}.theta.npy"))
        assert theta.shape == (n, K) and theta.dtype == np.float32
        assert np.all((np.abs(theta.sum(1) - 1) < 1e-4) | (theta.sum(1) == 0))


def test_generate(ta_trained):
    common = ["--user-dir", USER_DIR, "--task", "summarization", "--path", ta_trained["ckpt"], "--side-data", "theta",
              "--beam", "2", "--max-len-b", "8"]
    gen = run(cli("fairseq-generate"), ta_trained["data"], "--gen-subset", "test", "--batch-size", "4", *common)
    assert sorted(int(l.split("\t")[0][2:]) for l in gen.stdout.splitlines() if l.startswith("H-")) == list(range(9))
    # raw text through fairseq-interactive (which passes no side data: the task infers theta) is
    # tested in-process in test_topic_assistant.py::test_inference_step_infers_missing_theta
