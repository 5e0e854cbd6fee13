"""fairseq-sum-plugins: load with ``--user-dir fairseq_sum_plugins`` (or ``import
fairseq_sum_plugins``).

Importing the package registers the task ``summarization``, the criterion ``summarization_loss``,
the transformer family (``tp_transformer_base`` & co.), the ``sum_moses`` tokenizer, the
``--scoring rouge`` scorer of ``fairseq-generate``, makes fairseq checkpoints loadable under
torch >= 2.6 (see :mod:`fairseq_sum_plugins.compat`) and quietens fairseq's start-up banner
(:mod:`fairseq_sum_plugins.quiet`). Without fairseq (not installed, or blocked with
``sys.modules["fairseq"] = None``) nothing is registered and the fairseq-free modules (the scorer
:mod:`~fairseq_sum_plugins.scoring.rouge`, :mod:`~fairseq_sum_plugins.text`, ...) import alone.
"""
import importlib.util
import sys

__version__ = "0.1.0"  # the package's one version: pyproject.toml reads it from here


def _fairseq_available():
    if "fairseq" in sys.modules:
        return sys.modules["fairseq"] is not None
    return importlib.util.find_spec("fairseq") is not None


if _fairseq_available():
    # quiet first, before fairseq's import logs (hydra warnings, configuration dumps); then compat
    # (checkpoint loading under torch >= 2.6), before any model code
    from . import quiet  # noqa: F401
    from . import compat  # noqa: F401
    from .modules.registry import load_features

    load_features()  # every paper's feature, in one fixed order, before the models that host them
    from . import models, criterions, tasks, text  # noqa: F401
    from .scoring import fairseq_scoring  # noqa: F401
