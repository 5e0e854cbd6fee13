"""What a fairseq checkpoint may hold besides tensors and plain containers, allow-listed for
``torch.load(weights_only=True)``: ``argparse.Namespace`` (the ``args`` of checkpoints saved from
the command line) and nothing else, so a pickle that would run code is still refused.

Importing this module imports torch only, not fairseq: a tool that reads no more than a
checkpoint's tensors (``ledger.paper_tables params``) starts in torch's import time instead of
fairseq's. :mod:`fairseq_sum_plugins.compat` re-exports both names and allow-lists them when the
plugin loads.
"""
import argparse

import torch

SAFE_CHECKPOINT_GLOBALS = [argparse.Namespace]


def allow_fairseq_checkpoints():
    """Idempotently allow-list the classes fairseq checkpoints contain (no-op on torch < 2.4)."""
    add = getattr(torch.serialization, "add_safe_globals", None)
    if add is not None:
        add(SAFE_CHECKPOINT_GLOBALS)
