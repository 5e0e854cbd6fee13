"""fairseq-sum-plugins: load with ``--user-dir fairseq_sum_plugins`` (or ``import fairseq_sum_plugins``).

Importing the package registers the task ``summarization``, the criterion ``summarization_loss``,
the transformer family (``tp_transformer_base`` & co.), the ``sum_moses`` tokenizer, and makes
fairseq checkpoints loadable under torch >= 2.6 (see :mod:`fairseq_sum_plugins.compat`) and quietens
fairseq's start-up banner (:mod:`fairseq_sum_plugins.quiet`).
"""
from . import compat  # noqa: F401  (first: checkpoint loading under torch >= 2.6)
from . import quiet  # noqa: F401  (hydra deprecation warnings, configuration dumps)
from . import criterions, models, tasks, text  # noqa: F401
