"""Fine-tuning a fairseq checkpoint that lacks a paper's new parameters (gates, topic heads)."""
import logging

logger = logging.getLogger(__name__)


def keep_fresh_parameters(state_dict, fresh, prefix=""):
    """Adds to ``state_dict`` every ``fresh`` (name -> tensor) entry it lacks, so that strict loading
    of e.g. a plain BART ``model.pt`` keeps those parameters as this model initialised them."""
    for key, value in fresh.items():
        if prefix + key not in state_dict:
            logger.info(f"initialising {prefix + key} fresh (not in the checkpoint)")
            state_dict[prefix + key] = value
