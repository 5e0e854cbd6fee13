"""The summarization task (side data) and the summarization_loss criterion."""
import os

import numpy as np
import pytest
import torch
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion

from conftest import build_model, load_task
from fairseq_sum_plugins.criterions.summarization_loss import SummarizationLoss


def first_batch(task, split="train", bsz=8):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds, ds.collater([ds[i] for i in range(bsz)])


class AuxModel(torch.nn.Module):
    """Wraps a model and adds fixed auxiliary losses to its output."""

    def __init__(self, model, aux):
        super().__init__()
        self.model, self.aux = model, aux

    def forward(self, **net_input):
        logits, extra = self.model(**net_input)
        extra["aux_losses"] = dict(self.aux)
        return logits, extra

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.model, name)


def test_criterion_without_aux_equals_label_smoothed_cross_entropy(toy_data, tiny_overrides):
    task = load_task(toy_data)
    _, sample = first_batch(task)
    model, _ = build_model("tp_transformer_small", task.source_dictionary, **tiny_overrides)
    ours = SummarizationLoss(task, sentence_avg=False, label_smoothing=0.1, report_accuracy=True)
    ref = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1, report_accuracy=True)
    torch.manual_seed(0)
    a = ours(model, sample)
    torch.manual_seed(0)
    b = ref(model, sample)
    assert torch.equal(a[0], b[0]) and a[1] == b[1]
    assert {k: float(v) for k, v in a[2].items()} == {k: float(v) for k, v in b[2].items()}


def test_aux_losses_are_weighted_and_logged(toy_data, tiny_overrides):
    task = load_task(toy_data)
    _, sample = first_batch(task)
    model, _ = build_model("t5_transformer_small", task.source_dictionary, **tiny_overrides)
    model.eval()
    base = SummarizationLoss(task, False, 0.1)(model, sample)[0]
    aux = {"gate_l1": torch.tensor(0.5), "mem_read": torch.tensor(2.0)}
    crit = SummarizationLoss(task, False, 0.1, gate_l1_weight=0.3, mem_read_weight=0.01)
    loss, sample_size, log = crit(AuxModel(model, aux), sample)
    assert torch.allclose(loss, base + sample_size * (0.3 * 0.5 + 0.01 * 2.0))
    assert float(log["aux_gate_l1"]) == pytest.approx(0.5 * sample_size)
    # the logged value, reduced over workers, is the unweighted per-unit loss
    from fairseq import metrics

    with metrics.aggregate() as agg:
        SummarizationLoss.reduce_metrics([log, log])
    assert agg.get_smoothed_values()["aux_gate_l1"] == pytest.approx(0.5)


def test_aux_weights_flag_and_unknown_aux_loss(toy_data, tiny_overrides):
    task = load_task(toy_data)
    _, sample = first_batch(task)
    model, _ = build_model("t5_transformer_small", task.source_dictionary, **tiny_overrides)
    with pytest.raises(ValueError, match="--aux-weights 'mystery=W'"):
        SummarizationLoss(task, False, 0.1)(AuxModel(model, {"mystery": torch.tensor(1.0)}), sample)
    crit = SummarizationLoss(task, False, 0.1, aux_weights="mystery=2.5,gate_l1=0")
    assert crit.aux_weights["mystery"] == 2.5 and crit.aux_weights["gate_l1"] == 0
    with pytest.raises(ValueError, match="name=weight"):
        SummarizationLoss(task, False, 0.1, aux_weights="oops")


# --- side data ---------------------------------------------------------------------------------


def write_side(data, split, n, name="theta"):
    arr = np.arange(n * 3, dtype=np.float32).reshape(n, 3)  # row i encodes i
    np.save(os.path.join(data, f"{split}.{name}.npy"), arr)
    return arr


def test_side_data_follows_examples_through_sorting_and_batching(toy_data):
    task = load_task(toy_data, side_data="theta")
    n = 64
    write_side(toy_data, "train", n)
    try:
        task.load_dataset("train")
        ds = task.dataset("train")
        itr = task.get_batch_iterator(ds, max_tokens=200, seed=1).next_epoch_itr(shuffle=True)
        seen = 0
        for batch in itr:
            theta = batch["net_input"]["theta"]
            assert torch.equal(theta[:, 0], batch["id"].float() * 3)  # row matches its example
            seen += len(batch["id"])
        assert seen == n
    finally:
        os.remove(os.path.join(toy_data, "train.theta.npy"))


def test_misaligned_or_missing_side_data_is_a_clear_error(toy_data):
    task = load_task(toy_data, side_data="theta")
    with pytest.raises(FileNotFoundError, match="train.theta.npy"):
        task.load_dataset("train")
    write_side(toy_data, "train", 63)
    try:
        with pytest.raises(ValueError, match="63 rows but the dataset has 64"):
            task.load_dataset("train")
    finally:
        os.remove(os.path.join(toy_data, "train.theta.npy"))


def test_raw_text_inference_without_side_data_provider_is_a_clear_error(toy_data):
    task = load_task(toy_data, side_data="nonexistent")
    with pytest.raises(ValueError, match="no provider is registered"):
        task.build_dataset_for_inference([torch.tensor([5, 2])], [2])


def test_side_data_reaches_the_encoder_and_is_reordered(toy_data, tiny_overrides):
    model, d = build_model("t5_transformer_small", load_task(toy_data).source_dictionary, **tiny_overrides)
    src = torch.tensor([[5, 6, 2], [7, 8, 2]])
    theta = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    enc = model.encoder(src, torch.tensor([3, 3]), theta=theta)
    reordered = model.encoder.reorder_encoder_out(enc, torch.tensor([1, 1, 0]))
    assert torch.equal(reordered["side"]["theta"], theta[[1, 1, 0]])


def test_generation_keeps_the_last_partial_batch(toy_data):
    """The fork's batch_by_size drops the last < 8 examples; the plugin restores them."""
    task = load_task(toy_data)
    task.load_dataset("test")
    itr = task.get_batch_iterator(task.dataset("test"), max_sentences=8, required_batch_size_multiple=8)
    ids = sorted(i for b in itr.next_epoch_itr(shuffle=False) for i in b["id"].tolist())
    assert ids == list(range(12))
