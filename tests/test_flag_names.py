"""Flag families: each feature's flags share one prefix (``--tpr-*``, ``--gate-*``, ``--ta-*``,
``--focus-*``, ``--saliency-*``), the three coverages are named apart (Mem2Mem's
``--coverage-attention``, the criterion's ``--coverage-loss-weight``, decoding's
``--coverage-penalty``), and the earlier spellings stay accepted with the same destination."""
import pytest
from fairseq import options

from helpers import REPO  # noqa: F401  (puts the plugin on the path)
from helpers import parse  # noqa: F401


@pytest.mark.parametrize("arch,new,old,dest,value", [
    ("transformer_ta_small", ["--gate", "True"], ["--info-gate", "True"], "gate", True),
    ("bart_base_ta", ["--gate", "True"], ["--info-gate", "True"], "gate", True),
    ("transformer_ta_small", ["--ta-topic-model", "tm.npz"], ["--topic-model", "tm.npz"], "ta_topic_model", "tm.npz"),
    ("bart_base_gated", ["--ta-topic-model", "tm.npz"], ["--topic-model", "tm.npz"], "ta_topic_model", "tm.npz"),
    ("hred_base", ["--coverage-attention", "False"], ["--coverage", "False"], "coverage_attention", False),
    ("mem2mem_base", ["--memory-encoder", "False"], ["--encoder-memory", "False"], "memory_encoder", False),
    ("mem2mem_base", ["--memory-decoder", "False"], ["--decoder-memory", "False"], "memory_decoder", False),
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

    from fairseq_sum_plugins.models.mem2mem.model import Mem2MemModel

    families = {"tpr": "--tpr", "gate": "--gate", "ta_": "--ta-", "focus_": "--focus-", "saliency_": "--saliency-"}
    for model in (SumTransformerModel, SumBARTModel, Mem2MemModel):
        parser = argparse.ArgumentParser()
        model.add_args(parser)
        for action in parser._actions:
            for key, prefix in families.items():
                if action.dest.startswith(key) and model is not Mem2MemModel:
                    assert action.option_strings[0].startswith(prefix), (model.__name__, action.option_strings)
            if action.option_strings and action.dest != "help":  # the attribute is the flag's name
                assert action.option_strings[0] == "--" + action.dest.replace("_", "-"), action.option_strings


@pytest.mark.parametrize("arch,family,old,new,value", [
    ("transformer_ta_small", "transformer", "info_gate", "gate", True),
    ("bart_base_ta", "bart", "info_gate", "gate", True),
    ("transformer_gated_small", "transformer", "info_gate", "gate", False),
    ("transformer_ta_small", "transformer", "topic_model", "ta_topic_model", "TM"),
    ("hred_base", "mem2mem", "coverage", "coverage_attention", False),
])
def test_earlier_attribute_names_still_set_the_feature(arch, family, old, new, value, tmp_path):
    """Older checkpoints' args and ``--model-overrides`` may hold the earlier attribute names (``info_gate``,
    ``topic_model``, ``coverage``): they set the feature, and the args keep one name, the flag's."""
    import argparse

    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY
    from helpers import DIMS, K
    from helpers import write_topic_model

    from helpers import FakeTask, make_dictionary

    d = make_dictionary()
    tm = write_topic_model(d, str(tmp_path / "tm.npz"), k=K)
    value = tm if value == "TM" else value
    built = []
    for name in (old, new):
        topic = {"ta_topic_model": tm} if "_ta" in arch and name not in ("topic_model", "ta_topic_model") else {}
        args = argparse.Namespace(**DIMS[family], **topic, **{name: value})
        ARCH_CONFIG_REGISTRY[arch](args)
        built.append(ARCH_MODEL_REGISTRY[arch].build_model(args, FakeTask(d)))
        assert getattr(args, new) == value and not hasattr(args, old)
    assert [n for n, _ in built[0].named_parameters()] == [n for n, _ in built[1].named_parameters()]
    if new == "gate":
        assert (built[0].encoder.info_gate is not None) == value


def test_mem2mem_memory_flags_share_one_prefix_and_their_attribute_names():
    """Every Mem2Mem memory flag is ``--memory-*`` and its attribute is the flag's name."""
    import argparse

    from fairseq_sum_plugins.models.mem2mem.model import Mem2MemModel

    parser = argparse.ArgumentParser()
    Mem2MemModel.add_args(parser)
    memory = [a for a in parser._actions if "memory" in a.dest]
    assert sorted(a.dest for a in memory) == ["memory_attn_dim", "memory_decoder", "memory_encoder",
                                               "memory_slots", "memory_transfer"]
    for action in memory:
        assert action.option_strings[0] == "--" + action.dest.replace("_", "-"), action.option_strings


@pytest.mark.parametrize("saved,compression,writer", [
    (dict(encoder_memory=False, memory_transfer=False), False, True),
    (dict(decoder_memory=False), True, False),
    (dict(), True, True),
])
def test_args_saved_before_the_memory_rename_keep_their_setting(saved, compression, writer):
    """A checkpoint's args from before the rename (``encoder_memory``, ``decoder_memory``) build the same model."""
    from helpers import build_model

    model, _ = build_model("mem2mem_base", embed_dim=8, encoder_hidden_size=4, decoder_hidden_size=8,
                           attention_dim=6, memory_attn_dim=4, memory_slots=2, **saved)
    assert (model.encoder.compression is not None) == compression
    assert (model.decoder.writer is not None) == writer
