"""``--compile`` through the real commands: fairseq-train trains with compiled layers and saves a
checkpoint that fairseq-generate (incremental decoding) and the hub rebuild compiled, decoding what
the same checkpoint decodes eagerly.

Compiles a 1+1-layer model's graphs (training, validation, the first decoding steps): about two
minutes on a 2-core CPU, so it runs with ``FAIRSEQ_SUM_TEST_COMPILE=1`` like the compiled contract
cells (tests/test_model_contract.py)."""
import os
import random

import pytest

from helpers import USER_DIR, WORDS, cli, run
from test_cli_roundtrip import write_jsonl

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("FAIRSEQ_SUM_TEST_COMPILE") != "1",
                       reason="compiles a model's graphs (~2 min on a 2-core CPU); "
                              "FAIRSEQ_SUM_TEST_COMPILE=1 runs it"),
]


def hypotheses(stdout):
    return {int(l.split("\t")[0][2:]): l.split("\t")[2] for l in stdout.splitlines()
            if l.startswith("H-")}


def test_train_generate_and_hub_run_the_compiled_layers(tmp_path):
    rng = random.Random(0)
    (tmp_path / "jsonl").mkdir()
    for split, n in (("train", 40), ("valid", 4), ("test", 5)):
        write_jsonl(tmp_path / "jsonl" / f"{split}.jsonl", n, rng)
    run(cli("fairseq-sum-prepare"), "--jsonl-dir", str(tmp_path / "jsonl"), "--out",
        str(tmp_path / "data"), "--vocab-size", "60")
    data, save = str(tmp_path / "data" / "bin"), str(tmp_path / "ckpt")
    train = run(
        cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization",
        "--arch", "t5_small", "--compile", "true", "--encoder-layers", "1", "--decoder-layers", "1",
        "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
        "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "0.003",
        "--max-tokens", "1000", "--max-update", "4", "--save-dir", save, "--no-epoch-checkpoints",
        "--log-format", "simple", "--log-interval", "1")
    assert "runs eagerly" not in train.stderr + train.stdout  # no layer fell back
    assert "num_updates 4" in train.stderr + train.stdout
    ckpt = os.path.join(save, "checkpoint_last.pt")

    def generate(*extra):
        out = run(cli("fairseq-generate"), data, "--user-dir", USER_DIR, "--task", "summarization",
                  "--path", ckpt, "--gen-subset", "test", "--beam", "3", "--batch-size", "2",
                  "--max-len-b", "8", *extra)
        assert "runs eagerly" not in out.stderr
        return hypotheses(out.stdout)

    compiled = generate()
    eager = generate("--model-overrides", "{'compile': False}")
    assert sorted(compiled) == list(range(5)) and compiled == eager

    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    hub = SumTransformerModel.from_pretrained(save, checkpoint_file="checkpoint_last.pt",
                                              data_name_or_path=data)
    layers = [*hub.models[0].encoder.layers, *hub.models[0].decoder.layers]
    assert all(layer._compiled_call_impl is not None for layer in layers)
    text = " ".join(WORDS[:6]).capitalize() + "."
    summaries = hub.sample([text], beam=2, max_len_b=6)
    assert len(summaries) == 1 and isinstance(summaries[0], str)
    assert all(layer._compiled_call_impl is not None for layer in layers)  # ran compiled
