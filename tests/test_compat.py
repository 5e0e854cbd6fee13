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
