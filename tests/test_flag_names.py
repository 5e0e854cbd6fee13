"""Flag families: each feature's flags share one prefix (``--tpr-*``, ``--gate-*``, ``--ta-*``,
``--focus-*``, ``--saliency-*``), the three coverages are named apart (Mem2Mem's
``--coverage-attention``, the criterion's ``--coverage-loss-weight``, decoding's
``--coverage-penalty``), and the earlier spellings stay accepted with the same destination."""
import pytest
from fairseq import options

from conftest import REPO  # noqa: F401  (puts the plugin on the path)


def parse(data, *argv):
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, [data, "--task", "summarization", "--optimizer", "adam", *argv])


@pytest.mark.parametrize("arch,new,old,dest,value", [
    ("transformer_ta_small", ["--gate", "True"], ["--info-gate", "True"], "info_gate", True),
    ("bart_base_ta", ["--gate", "True"], ["--info-gate", "True"], "info_gate", True),
    ("transformer_ta_small", ["--ta-topic-model", "tm.npz"], ["--topic-model", "tm.npz"], "topic_model", "tm.npz"),
    ("bart_base_gated", ["--ta-topic-model", "tm.npz"], ["--topic-model", "tm.npz"], "topic_model", "tm.npz"),
    ("hred_base", ["--coverage-attention", "False"], ["--coverage", "False"], "coverage", False),
])
def test_new_and_old_spellings_set_the_same_flag(toy_data, arch, new, old, dest, value):
    for argv in (new, old):
        args = parse(toy_data, "--arch", arch, *argv)
        assert getattr(args, dest) == value, argv


def test_criterion_coverage_loss_weight(toy_data):
    base = ["--arch", "hred_base", "--criterion", "summarization_loss"]
    assert parse(toy_data, *base).coverage_weight == 1.0
    assert parse(toy_data, *base, "--coverage-loss-weight", "0.5").coverage_weight == 0.5
    assert parse(toy_data, *base, "--coverage-weight", "0.25").coverage_weight == 0.25


def test_feature_flags_follow_their_family_prefix():
    """Every model flag of a feature starts with its family's prefix (old spellings aside)."""
    import argparse

    from fairseq_sum_plugins.models.bart import SumBARTModel
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    families = {"tpr": "--tpr", "info_gate": "--gate", "gate_": "--gate-", "ta_": "--ta-", "topic_model": "--ta-",
                "focus_": "--focus-", "saliency_": "--saliency-"}
    for model in (SumTransformerModel, SumBARTModel):
        parser = argparse.ArgumentParser()
        model.add_args(parser)
        for action in parser._actions:
            for key, prefix in families.items():
                if action.dest.startswith(key):
                    assert action.option_strings[0].startswith(prefix), (model.__name__, action.option_strings)
