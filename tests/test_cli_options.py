"""Command-line options either work or stop early with a message naming the flag (or the file)."""
import os
import subprocess
import sys

import pytest
import torch

from helpers import REPO, cli, run

USER_DIR = os.path.join(REPO, "fairseq_sum_plugins")
TINY = ["--encoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--encoder-layers", "1", "--decoder-layers", "1",
        "--encoder-attention-heads", "2"]


def train_args(data, save, *extra, arch="transformer_gated_small"):
    return [cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization", "--arch", arch,
            "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "16",
            "--max-update", "2", "--save-dir", save, "--no-epoch-checkpoints", "--num-workers", "0",
            "--log-format", "simple", *extra]


def fails(*cmd):
    """Runs the console script ``cmd[0]``'s ``cli_main`` in this process (the same code path, without
    a second interpreter start), expecting it to stop with an error; returns the error's text."""
    from fairseq_cli import generate, train

    main = {"fairseq-train": train.cli_main, "fairseq-generate": generate.cli_main}[os.path.basename(cmd[0])]
    argv = sys.argv
    sys.argv = [os.path.basename(cmd[0]), *cmd[1:]]
    try:
        with pytest.raises((ValueError, SystemExit)) as err:
            main()
    finally:
        sys.argv = argv
    return f"{type(err.value).__name__}: {err.value}"


@pytest.fixture(scope="module")
def untied(toy_data, tmp_path_factory):
    """2 updates with an untied output projection and --eval-rouge-args in Python-dict style."""
    save = str(tmp_path_factory.mktemp("untied"))
    proc = run(*train_args(toy_data, save, *TINY, "--share-decoder-input-output-embed", "False",
                           "--eval-rouge", "--eval-rouge-args", "{'beam': 1, 'max_len_b': 4}"))
    return {"data": toy_data, "ckpt": os.path.join(save, "checkpoint_last.pt"), "log": proc.stdout + proc.stderr}


@pytest.mark.slow
def test_share_decoder_input_output_embed_false_unties_the_output_projection(untied):
    state = torch.load(untied["ckpt"], weights_only=True)
    assert state["cfg"]["model"].share_all_embeddings is True  # the preset's
    assert state["cfg"]["model"].share_decoder_input_output_embed is False
    out = state["model"]["decoder.output_projection.weight"]
    assert out.shape == state["model"]["encoder.embed_tokens.weight"].shape
    assert not torch.equal(out, state["model"]["encoder.embed_tokens.weight"])


@pytest.mark.slow
def test_eval_rouge_args_accepts_python_dict_style(untied, toy_data, tmp_path):
    assert "rouge_l" in untied["log"]  # validation decoded with {'beam': 1, 'max_len_b': 4}
    err = fails(*train_args(toy_data, str(tmp_path), *TINY, "--eval-rouge", "--eval-rouge-args", "{'beam': 1"))
    assert "--eval-rouge-args" in err and "JSONDecodeError" not in err
    marker = tmp_path / "marker"
    code = f"__import__('os').system('touch {marker}')"  # read as a literal, never run
    err = fails(*train_args(toy_data, str(tmp_path), *TINY, "--eval-rouge", "--eval-rouge-args", code))
    assert "--eval-rouge-args" in err and not marker.exists()


@pytest.mark.slow
def test_fp16_on_cpu_is_refused_first(untied, toy_data, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU runs --fp16")
    err = fails(*train_args(toy_data, str(tmp_path), *TINY, "--fp16"))
    assert "--fp16 needs a CUDA GPU" in err and "not compiled with CUDA" not in err
    assert not os.listdir(tmp_path)  # nothing trained or saved
    err = fails(cli("fairseq-generate"), untied["data"], "--user-dir", USER_DIR, "--task", "summarization",
                "--path", untied["ckpt"], "--gen-subset", "test", "--beam", "1", "--max-len-b", "4", "--fp16")
    assert "--fp16 needs a CUDA GPU" in err


@pytest.mark.slow
def test_empty_checkpoint_names_the_file(untied, tmp_path):
    empty = tmp_path / "checkpoint_best.pt"
    empty.write_bytes(b"")
    err = fails(cli("fairseq-generate"), untied["data"], "--user-dir", USER_DIR, "--task", "summarization",
                "--path", str(empty), "--gen-subset", "test")
    assert f"checkpoint {empty} is empty (0 bytes)" in err
    cut = tmp_path / "cut.pt"
    cut.write_bytes(open(untied["ckpt"], "rb").read()[:2000])
    err = fails(cli("fairseq-generate"), untied["data"], "--user-dir", USER_DIR, "--task", "summarization",
                "--path", str(cut), "--gen-subset", "test")
    assert f"checkpoint {cut} cannot be read" in err


def test_misspelt_aux_weight_names_the_valid_names(toy_data, tmp_path):
    err = fails(*train_args(toy_data, str(tmp_path), *TINY, "--aux-weights", "gatel1=5"))
    assert "'gatel1'" in err and "did you mean 'gate_l1'" in err and "mem_comp" in err
    err = fails(*train_args(toy_data, str(tmp_path), *TINY, "--aux-weights", "sparsity=5"))
    assert "reports no auxiliary loss ['sparsity']" in err and "gate_l1" in err


def test_coverage_loss_without_coverage_is_refused(toy_data, tmp_path):
    err = fails(*train_args(toy_data, str(tmp_path), "--embed-dim", "16", "--encoder-hidden-size", "8",
                            "--decoder-hidden-size", "16", "--coverage", "False", "--coverage-loss", "True",
                            arch="hred_base"))
    assert "--coverage-loss True needs --coverage-attention True" in err


def test_byte_order_mark_in_parallel_dir_is_dropped_like_in_jsonl(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    docs = ["The cat sat on the mat. It was red.", "Dogs bark loudly. Birds sing at dawn.", "A big ball rolled away."]
    for split in ("train", "valid", "test"):
        (raw / f"{split}.source").write_text("\ufeff" + "\n".join(docs) + "\n", encoding="utf-8")
        (raw / f"{split}.target").write_text("\ufeff" + "\n".join(d.split(".")[0] + "." for d in docs) + "\n",
                                             encoding="utf-8")
    out = tmp_path / "out"
    from preprocess.prepare import main as prepare  # fairseq-sum-prepare's entry point, in this process

    prepare(["--parallel-dir", str(raw), "--out", str(out), "--vocab-size", "40", "--workers", "1", "--num-threads", "1"])
    src = (out / "tok" / "train.src").read_text(encoding="utf-8").splitlines()
    tgt = (out / "tok" / "train.tgt").read_text(encoding="utf-8").splitlines()
    assert src[0] == "The cat sat on the mat . <sep> It was red ." and tgt[0] == "The cat sat on the mat ."
    assert "\ufeff" not in (out / "bin" / "dict.src.txt").read_text(encoding="utf-8")


def test_quickstart_refuses_a_non_numeric_update_count(tmp_path):
    marker = tmp_path / "marker"
    env = {**os.environ, "MAX_UPDATE": f"1); __import__('os').system('touch {marker}'"}
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", "aclsum", "quickstart.sh"), str(tmp_path / "work")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    assert proc.returncode == 2 and "MAX_UPDATE must be an integer >= 1" in proc.stderr
    assert not marker.exists() and not (tmp_path / "work").exists()
