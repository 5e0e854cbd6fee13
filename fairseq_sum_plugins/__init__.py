"""fairseq-sum-plugins: load with ``--user-dir fairseq_sum_plugins`` (or ``import
fairseq_sum_plugins``).

Registration makes known to fairseq the task ``summarization``, the criterion
``summarization_loss``, the transformer family (``tp_transformer_base`` & co.), the ``sum_moses``
tokenizer and the ``--scoring rouge`` scorer of ``fairseq-generate``, makes fairseq checkpoints
loadable under torch >= 2.6 (see :mod:`fairseq_sum_plugins.compat`) and quietens fairseq's start-up
banner (:mod:`fairseq_sum_plugins.quiet`). It runs whenever fairseq is used, never before
(:mod:`fairseq_sum_plugins.registration`): at once when fairseq is already imported
(``--user-dir``), else when fairseq is imported or a plugin module that needs it is, so that the
fairseq-free modules (the scorer :mod:`~fairseq_sum_plugins.scoring.rouge`,
:mod:`~fairseq_sum_plugins.text`, the ``fairseq-sum-score``, ``-compare`` and ``-baselines``
commands, ...) import without torch or fairseq. Without fairseq (not installed, or blocked with
``sys.modules["fairseq"] = None``) nothing is registered.
"""
__version__ = "0.1.0"  # the package's one version: pyproject.toml reads it from here

from .registration import arrange as _arrange  # noqa: E402

_arrange()
