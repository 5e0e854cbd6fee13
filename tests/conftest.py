import argparse
import os
import sys

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import fairseq_sum_plugins  # noqa: E402,F401  (registers everything)
from fairseq.data import Dictionary  # noqa: E402
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY  # noqa: E402,F401
from helpers import FakeTask, binarize, build_model, doc_batch, load_task, make_dictionary, random_batch, save_bart_checkpoint, save_fresh_checkpoint, write_topic_model, write_toy_parallel  # noqa: E402,F401  (the fixtures' helpers)


@pytest.fixture
def tiny_overrides():
    """Small dims so that every arch builds and runs in milliseconds."""
    return dict(
        encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
        decoder_layers=2, tpr_roles=5, dropout=0.0,
    )


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory):
    """A small binarized src/tgt data dir with a joined dictionary."""
    root = tmp_path_factory.mktemp("toy")
    write_toy_parallel(str(root / "raw"))
    return binarize(str(root / "raw"), str(root / "bin"))


# --- helpers shared by several test files ------------------------------------------------------




# recipes/papers.sh at smoke scale (tests/test_paper_table_*.py; tests/paper_smoke.py)
@pytest.fixture(scope="session")
def raw_corpora(tmp_path_factory):
    """The same real pairs (ACLSum papers) in each dataset's raw format: {dataset: path}."""
    from paper_smoke import write_raw_corpora

    return write_raw_corpora(tmp_path_factory.mktemp("paper_corpora"))


@pytest.fixture(scope="session")
def papers_out(tmp_path_factory):
    """One output folder per paper, shared by its tables (as papers.sh's default OUT)."""
    root = tmp_path_factory.mktemp("papers")
    return lambda paper: str(root / paper)


# The suite's longest files first, longest first (minutes each, measured with --durations):
# pytest-xdist's --dist loadfile hands files out in collection order once its own reordering (by
# number of tests: these files have one to three) is off (pytest_configure), and long files left to
# the end keep one process busy while the other idles. A stable sort: each file's tests stay
# together and in their order.
LONG_FILES = ("test_paper_table_etads.py", "test_paper_table_is.py", "test_paper_table_ta.py",
              "test_results_index.py", "test_paper_table_tpt.py", "test_recipes.py",
              "test_fingerprint.py", "test_cpu_options.py", "test_paper_table_mem2mem.py",
              "test_bart_ta_recipe.py", "test_t5_recipe.py", "test_distributed.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        name = os.path.basename(str(item.fspath))
        return LONG_FILES.index(name) if name in LONG_FILES else len(LONG_FILES)

    items.sort(key=rank)


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the collection order
        config.option.loadscopereorder = False
