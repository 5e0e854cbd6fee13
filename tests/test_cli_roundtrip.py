"""Real round trip through the CLIs with --user-dir: prepare -> train -> generate -> score,
checkpoint reload with no environment variable, fairseq-interactive and the hub interface on raw text."""
import json
import os
import random
import re
import subprocess
import sys

import pytest

from conftest import REPO

USER_DIR = os.path.join(REPO, "fairseq_sum_plugins")
WORDS = "model data summary paper results method attention role filler network training corpus".split()
N_TEST = 11  # not a multiple of the batch size: the last partial batch must be generated too


def run(*cmd, stdin=None):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, cwd=REPO)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd[:2])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def cli(name):
    """A console script of the running interpreter's environment."""
    return os.path.join(os.path.dirname(sys.executable), name)


def write_jsonl(path, n, rng):
    with open(path, "w") as f:
        for i in range(n):
            sents = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))).capitalize() + "." for _ in range(rng.randint(1, 4))]
            f.write(json.dumps({"id": str(i), "document": sents, "summary": sents[0]}) + "\n")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("roundtrip")
    rng = random.Random(0)
    jsonl = root / "jsonl"
    jsonl.mkdir()
    for split, n in (("train", 60), ("valid", 8), ("test", N_TEST)):
        write_jsonl(jsonl / f"{split}.jsonl", n, rng)
    run(cli("fairseq-sum-prepare"), "--jsonl-dir", str(jsonl), "--out", str(root / "data"), "--vocab-size", "60")
    data = str(root / "data" / "bin")
    save = str(root / "ckpt")
    train = run(
        cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization", "--arch", "tp_transformer_small",
        "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
        "--encoder-attention-heads", "2", "--tpr-roles", "4",
        "--criterion", "summarization_loss", "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "0.003",
        "--max-tokens", "1000", "--max-update", "12", "--save-dir", save, "--no-epoch-checkpoints",
        "--eval-rouge", "--eval-rouge-args", '{"beam": 1, "max_len_b": 8}',
        "--best-checkpoint-metric", "rouge_l", "--maximize-best-checkpoint-metric", "--log-format", "simple",
    )
    return {"data": data, "save": save, "ckpt": os.path.join(save, "checkpoint_best.pt"), "train_log": train.stderr + train.stdout}


def test_training_logs_rouge_and_selects_by_it(trained):
    valid = [l for l in trained["train_log"].splitlines() if "valid on 'valid' subset" in l]
    assert valid and all(re.search(r"rouge_l [0-9.]+", l) for l in valid)
    assert re.search(r"best_rouge_l [0-9.]+", valid[-1])
    assert os.path.exists(trained["ckpt"])


def test_generate_and_score(trained, tmp_path):
    gen = run(
        cli("fairseq-generate"), trained["data"], "--user-dir", USER_DIR, "--task", "summarization",
        "--path", trained["ckpt"], "--gen-subset", "test", "--beam", "2", "--batch-size", "4", "--max-len-b", "10",
        "--tokenizer", "sum_moses", "--bpe", "sentencepiece", "--sentencepiece-model", os.path.join(trained["data"], "spm.model"),
    )
    ids = sorted(int(l.split("\t")[0][2:]) for l in gen.stdout.splitlines() if l.startswith("H-"))
    assert ids == list(range(N_TEST))  # every test document, including the last partial batch
    out = tmp_path / "gen.out"
    out.write_text(gen.stdout)
    score = run(cli("fairseq-sum-score"), "--generate-output", str(out), "--json", str(tmp_path / "r.json"), "--bootstrap-samples", "50")
    assert "ROUGE-1 Average_F" in score.stdout
    result = json.loads((tmp_path / "r.json").read_text())
    assert 0.0 <= result["rouge1"] <= 1.0 and result["num_summaries"] == N_TEST


def test_interactive_summarizes_raw_text(trained):
    out = run(
        cli("fairseq-interactive"), trained["data"], "--user-dir", USER_DIR, "--task", "summarization",
        "--path", trained["ckpt"], "--beam", "2", "--max-len-b", "10",
        "--tokenizer", "sum_moses", "--bpe", "sentencepiece", "--sentencepiece-model", os.path.join(trained["data"], "spm.model"),
        stdin="The model reads the paper. Attention finds the role of each filler.\nData and results.\n",
    )
    hyps = [l for l in out.stdout.splitlines() if l.startswith("H-")]
    assert len(hyps) == 2
    sources = [l for l in out.stdout.splitlines() if l.startswith("S-")]
    assert "<sep>" in sources[0]  # raw text was split into sentences like the training data


def test_hub_interface(trained):
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    hub = SumTransformerModel.from_pretrained(trained["save"], checkpoint_file="checkpoint_best.pt", data_name_or_path=trained["data"])
    summaries = hub.sample(["The network reads the corpus. It writes a summary.", "Role and filler."], beam=2, max_len_b=10)
    assert len(summaries) == 2 and all(isinstance(s, str) for s in summaries)


def test_hub_truncates_a_document_longer_than_the_model_accepts(trained):
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    hub = SumTransformerModel.from_pretrained(trained["save"], checkpoint_file="checkpoint_best.pt", data_name_or_path=trained["data"])
    hub.cfg.dataset.max_tokens = 4000  # the checkpoint's training --max-tokens 1000 is below 1024 positions
    long_doc = " ".join(["The model reads the paper and the network writes a summary."] * 150)
    assert len(hub.encode(long_doc)) > hub.task.max_inference_source_tokens()
    summaries = hub.sample([long_doc], beam=1, max_len_b=5)  # was: "Size of sample #0 is invalid"
    assert len(summaries) == 1 and isinstance(summaries[0], str)


def test_role_analysis_cli(trained, tmp_path):
    png = tmp_path / "roles.png"
    out = run(cli("fairseq-sum-roles"), trained["data"], "--path", trained["ckpt"], "--png", str(png), "--json", str(tmp_path / "r.json"))
    assert png.stat().st_size > 1000
    stats = json.loads((tmp_path / "r.json").read_text())
    assert len(stats["sublayers"]) == 3  # encoder self, decoder self, decoder cross (1 layer each)
    assert all(abs(sum(s["usage"]) - 1) < 1e-6 for s in stats["sublayers"].values())
    assert "overall:" in out.stdout


def test_prepare_rejects_mismatched_parallel_files(tmp_path):
    (tmp_path / "in").mkdir()
    for split in ("train", "valid", "test"):
        (tmp_path / "in" / f"{split}.source").write_text("a b c\nd e f\n")
        (tmp_path / "in" / f"{split}.target").write_text("a\n")
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([cli("fairseq-sum-prepare"), "--parallel-dir", str(tmp_path / "in"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    assert "train" in proc.stderr and ("2" in proc.stderr and "1" in proc.stderr)
