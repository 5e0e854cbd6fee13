"""Checkpoint loading under torch >= 2.6 stays safe: only fairseq's config class is allow-listed."""
import argparse
import os
import pickle

import pytest
import torch

import fairseq_sum_plugins  # noqa: F401  (applies compat)


class Payload:
    def __reduce__(self):
        return (os.system, ("echo should-not-run",))


def test_checkpoint_with_namespace_loads_with_weights_only(tmp_path):
    path = tmp_path / "ckpt.pt"
    torch.save({"args": argparse.Namespace(arch="tp_transformer_small"), "model": {"w": torch.ones(2)}}, path)
    state = torch.load(path)  # weights_only=True by default on torch >= 2.6
    assert state["args"].arch == "tp_transformer_small" and torch.equal(state["model"]["w"], torch.ones(2))


def test_arbitrary_pickled_code_is_still_rejected(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"x": Payload()}, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)


# --- --no-repeat-ngram-size -------------------------------------------------------------------


def test_ngram_blocker_bans_the_token_that_would_repeat_an_ngram():
    """Step 3 generated "7 8 7" after BOS, rest of the buffer padding: "7 8" must not come again."""
    from fairseq.ngram_repeat_block import NGramRepeatBlock

    tokens = torch.tensor([[2, 7, 8, 7, 1, 1, 1], [2, 7, 8, 9, 1, 1, 1]])
    lprobs = torch.zeros(2, 10)
    NGramRepeatBlock(2, use_extension=False)(tokens, lprobs, 2, 1, 3)
    assert lprobs[0, 8] == float("-inf") and (lprobs[0, :8] == 0).all() and (lprobs[0, 9:] == 0).all()
    assert (lprobs[1] == 0).all()  # "8 9" ends with 9, never seen before it


def repeated_ngrams(tokens, n):
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) - len(set(grams))


def test_generation_with_no_repeat_ngram_size_has_no_repeated_ngram():
    from argparse import Namespace

    from helpers import build_model, make_dictionary, random_batch
    from fairseq_sum_plugins.tasks.summarization import SummarizationConfig, SummarizationTask

    torch.manual_seed(0)
    d = make_dictionary(12)
    model, _ = build_model("t5_transformer_small", d, encoder_embed_dim=16, encoder_ffn_embed_dim=32,
                           encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, dropout=0.0)
    model.eval()
    src, lengths, _ = random_batch(d, bsz=3, src_len=9)
    sample = {"id": torch.arange(3), "net_input": {"src_tokens": src, "src_lengths": lengths}}
    task = SummarizationTask(SummarizationConfig(), d, d)

    def decode(n):
        gen = task.build_generator([model], Namespace(beam=2, min_len=20, max_len_a=0, max_len_b=20,
                                                      no_repeat_ngram_size=n))
        with torch.no_grad():
            return [h[0]["tokens"][:-1].tolist() for h in task.inference_step(gen, [model], sample)]

    assert sum(repeated_ngrams(t, 2) for t in decode(0)) > 0  # 20 tokens over 12 symbols repeat
    blocked = decode(2)
    assert all(len(t) == 20 for t in blocked)
    assert all(repeated_ngrams(t, 2) == 0 for t in blocked)


DDP_ON_CPU = """
import argparse, os, sys
import torch
import torch.distributed as dist
import fairseq_sum_plugins  # applies compat
from fairseq.models import DistributedFairseqModel

dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
args = argparse.Namespace(tpu=False, ddp_backend="pytorch_ddp", device_id=0, broadcast_buffers=False,
                          bucket_cap_mb=25, find_unused_parameters=False, gradient_as_bucket_view=False,
                          ddp_comm_hook="none", heartbeat_timeout=-1)
linear = torch.nn.Linear(3, 2)
model = DistributedFairseqModel(args, linear, dist.group.WORLD, torch.device("cpu"))
model(torch.ones(4, 3)).sum().backward()
print("grad", linear.weight.grad.tolist(), flush=True)
os._exit(0)  # no teardown: freeing a DDP reducer after its gloo group can deadlock inside torch
"""


@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_pytorch_ddp_wraps_a_cpu_model(tmp_path):
    """fairseq's pytorch_ddp wrapper passes device_ids=[device_id]; on a CPU model compat.ddp_on_cpu drops
    them (torch refuses device_ids for a CPU module), so --ddp-backend pytorch_ddp trains with gloo. In a
    child process: torch's gloo teardown after a DDP model has hung a test process once in the full suite."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", DDP_ON_CPU, str(tmp_path / "rendezvous")], capture_output=True,
                          text=True, timeout=300, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "grad [[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]]" in proc.stdout  # d sum(W x + b) / dW = 4 ones(1, 3) per row
