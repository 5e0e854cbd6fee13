"""Fine-tuning a fairseq checkpoint that lacks a paper's new parameters (gates, topic heads), and
the mark of an imported checkpoint that a model reads on loading (a converter writes it; the model
defines it)."""
import logging
import re

import torch

from ..modules.features import fresh_names

logger = logging.getLogger(__name__)

IMPORT_MARKER = "t5_import_marker"  # state_dict key: missing parameters are initialised fresh


def fresh_pattern():
    """The parameter names a plain (BART) checkpoint lacks: those of every feature registered now
    (``.attr.`` of :func:`~..modules.features.fresh_names`), computed when a checkpoint is loaded,
    so a feature registered after import is included; with no feature registered, no name."""
    names = fresh_names()
    return re.compile("|".join(re.escape(n) for n in names) if names else r"(?!)")


def keep_fresh_parameters(state_dict, fresh, prefix=""):
    """Adds to ``state_dict`` every ``fresh`` (name -> tensor) entry it lacks, so that strict
    loading of e.g. a plain BART ``model.pt`` keeps those parameters as this model initialised
    them."""
    for key, value in fresh.items():
        if prefix + key not in state_dict:
            logger.info(f"initialising {prefix + key} fresh (not in the checkpoint)")
            state_dict[prefix + key] = value


def import_mark(scaled):
    """The import mark (``state_dict[IMPORT_MARKER]``): ``[1, scaled]``."""
    return torch.tensor([1.0, float(scaled)])


def check_import_mark(mark, model_scaled):
    """A model restoring an imported checkpoint scales its output as the import did (a mark of the
    first imports, a 0-d tensor, stands for T5 v1.0's scaled head); else a ``ValueError`` naming the
    flag."""
    scaled = bool(mark[1]) if mark.dim() == 1 and mark.numel() == 2 else True
    if scaled != model_scaled:
        raise ValueError(f"the imported T5 checkpoint {'scales' if scaled else 'does not scale'} "
                         "the decoder output by d_m^-1/2 (its config.json) and this model "
                         f"{'does' if model_scaled else 'does not'}: pass "
                         f"--t5-scale-decoder-output {scaled}")
