"""The one place that loads the papers' features, in a fixed order.

Each feature module registers its :class:`~.features.FeatureSpec` (and its auxiliary losses,
:mod:`fairseq_sum_plugins.aux_losses`) when imported; :func:`load_features` imports them in the
order of :data:`FEATURE_MODULES`, which is the order the features are built, applied and listed
(every backbone, the contract cells, the parameter names). The package's ``__init__`` calls it
before the model families and the criterion, so no backbone imports a feature for its side effect.

What is derived from the registered features is computed when it is used, never at import: the
backbones' flags and defaults (:func:`~.features.add_feature_args`,
:func:`~.features.feature_defaults`), BART's fresh parameters
(:func:`fairseq_sum_plugins.models.fresh_params.fresh_pattern`), the criterion's config
(:func:`fairseq_sum_plugins.criterions.summarization_loss.criterion_config`) and the export's
refusals (:func:`~.features.features_on`). A feature registered later with
:func:`~.features.register_feature` (tests/test_registration.py) is seen by all of them.
"""
import importlib

from .features import FEATURES

# fairseq_sum_plugins/features/: the order in which the contract cells were recorded (parameter
# names, initialisation, the order features are applied)
FEATURE_MODULES = ("tp_transformer", "information_selection", "etads_focus", "etads_saliency",
                   "topic_assistant.layers", "copy_mechanism")


def load_features():
    """Imports every feature module of :data:`FEATURE_MODULES`, in that order; returns the registry
    (:data:`~.features.FEATURES`). Loading twice changes nothing."""
    for name in FEATURE_MODULES:
        importlib.import_module(f"fairseq_sum_plugins.features.{name}")
    return FEATURES
