import argparse
import importlib.util
import os
import sys

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

# The processes the suite starts (recipes, fairseq commands, workers) run tests/fast_start's
# sitecustomize: fairseq's imports of scikit-learn and scipy.stats deferred to their first use, about
# 2 s of each fairseq process's start (its docstring says how; tests/test_fast_start.py checks it).
FAST_START = os.path.join(REPO, "tests", "fast_start")


def fast_start_path(environ, found=None):
    """``environ``'s PYTHONPATH with FAST_START first, or None where another ``sitecustomize`` than
    FAST_START's is found (``found``: its spec; that one is left to run) or it is there already."""
    ours = os.path.join(FAST_START, "sitecustomize.py")
    if found is not None and not (found.origin and os.path.exists(found.origin)
                                  and os.path.samefile(found.origin, ours)):
        return None
    paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return None if FAST_START in paths else os.pathsep.join([FAST_START] + paths)


_path = fast_start_path(os.environ, importlib.util.find_spec("sitecustomize"))
if _path is not None:
    os.environ["PYTHONPATH"] = _path

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
