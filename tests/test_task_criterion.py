"""The summarization task (side data) and the summarization_loss criterion."""
import os

import numpy as np
import pytest
import torch
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion

from helpers import build_model, load_task
from tolerances import OP_ULPS, fp32_close, printed_tol
from fairseq_sum_plugins.criterions.summarization_loss import SummarizationLoss
from helpers import AuxModel, first_batch  # noqa: F401


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
    # float32 additions of the weighted terms to the loss: ulps of the loss
    assert fp32_close(loss, base + sample_size * (0.3 * 0.5 + 0.01 * 2.0), ulps=OP_ULPS)
    assert float(log["aux_gate_l1"]) == 0.5 * sample_size  # exact: 0.5 times an integer
    # the logged value, reduced over workers, is the unweighted per-unit loss
    from fairseq import metrics

    with metrics.aggregate() as agg:
        SummarizationLoss.reduce_metrics([log, log])
    assert agg.get_smoothed_values()["aux_gate_l1"] == 0.5  # (0.5 n + 0.5 n) / 2n, exact


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


@pytest.mark.parametrize("flags, message", [
    ({"gate_l1_weight": -1.0}, r"--gate-l1-weight must be a finite weight >= 0, got -1.0"),
    ({"gate_l1_weight": float("nan")}, r"--gate-l1-weight must be a finite weight >= 0"),
    ({"aux_weights": "gate_l1=-0.5"}, r"--aux-weights gate_l1= must be a finite weight >= 0"),
    ({"aux_weights": "gate_l1=inf"}, r"--aux-weights gate_l1= must be a finite weight >= 0"),
    ({"aux_weights": "gate_l1=lots"}, r"--aux-weights gate_l1= expects a number, got 'lots'"),
])
def test_a_negative_or_non_finite_aux_loss_weight_is_refused_by_its_flag(toy_data, flags, message):
    """A negative weight would reward the loss its paper minimises (e.g. Mem2Mem's coverage)."""
    task = load_task(toy_data)
    with pytest.raises(ValueError, match=message):
        SummarizationLoss(task, False, 0.1, **flags)


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


# --- multi-worker reduction, fp16 aux losses ---------------------------------------------------------


def test_reduce_metrics_takes_logging_outputs_summed_over_workers(toy_data):
    """With several workers fairseq sums the logging outputs into (double) tensors."""
    from fairseq import metrics

    task = load_task(toy_data, eval_rouge=True)
    log = {"loss": 10.0, "nll_loss": 9.0, "ntokens": 5, "nsentences": 2, "sample_size": 5, "aux_gate_l1": 2.5,
           "gate_dropped": 3, "gate_tokens": 40, "_rouge_1_sum": 1.5, "_rouge_2_sum": 0.1, "_rouge_l_sum": 1.0, "_rouge_n": 3}
    summed = {k: torch.tensor(float(v), dtype=torch.double) for k, v in log.items()}
    values = []
    for logs in ([log], [summed]):
        with metrics.aggregate(new_root=True) as agg:
            task.reduce_metrics(logs, SummarizationLoss(task, False, 0.1))
        values.append({k: v for k, v in agg.get_smoothed_values().items() if "rouge" in k or "gate" in k})
    assert values[0] == values[1]
    # ROUGE-L 1/3 logged rounded to 2 decimals
    assert values[1]["rouge_1"] == 50.0
    assert values[1]["rouge_l"] == pytest.approx(100 / 3, abs=printed_tol(2))
    assert values[1]["gate_sparsity"] == 7.5 and values[1]["aux_gate_l1"] == 0.5


def test_aux_loss_in_half_precision_is_scaled_in_float32(toy_data, tiny_overrides):
    """fp16: mem_comp ~48 x 2000 target tokens is past the half range (65504)."""
    task = load_task(toy_data)
    _, sample = first_batch(task)
    model, _ = build_model("t5_transformer_small", task.source_dictionary, **tiny_overrides)
    model.eval()
    sample = dict(sample, ntokens=2000)
    crit = SummarizationLoss(task, False, 0.1, mem_comp_weight=1e-4)
    loss, sample_size, log = crit(AuxModel(model, {"mem_comp": torch.tensor(48.0, dtype=torch.half)}), sample)
    assert torch.isfinite(loss) and float(log["aux_mem_comp"]) == 48.0 * 2000  # exact in float32


# --- side data with several data folders, raw text longer than the model accepts ------------------


def test_side_data_is_read_from_the_folder_of_the_epoch(toy_data, tmp_path):
    """``--data d1:d2`` (sharded training data): epoch e reads d[(e - 1) % 2], side data too."""
    import shutil

    shard = str(tmp_path / "shard2")
    shutil.copytree(toy_data, shard)
    for folder, tag in ((toy_data, 1000.0), (shard, 2000.0)):
        np.save(os.path.join(folder, "train.theta.npy"), (tag + np.arange(64, dtype=np.float32))[:, None])
    np.save(os.path.join(toy_data, "valid.theta.npy"), np.zeros((12, 1), np.float32))
    try:
        task = load_task(f"{toy_data}:{shard}", side_data="theta")
        for epoch, tag in ((1, 1000.0), (2, 2000.0), (3, 1000.0)):
            task.load_dataset("train", epoch=epoch)
            assert float(task.dataset("train")[5]["theta"][0]) == tag + 5
        task.load_dataset("valid", epoch=2)  # other splits: the first folder, as the translation task
        assert len(task.dataset("valid")) == 12
    finally:
        for name in ("train.theta.npy", "valid.theta.npy"):
            os.remove(os.path.join(toy_data, name))


def test_raw_text_longer_than_the_model_accepts_is_truncated(toy_data, tiny_overrides):
    from fairseq_sum_plugins.tasks.summarization import SIDE_DATA_PROVIDERS

    task = load_task(toy_data, max_source_positions=64)
    assert task.max_inference_source_tokens() == 64
    d = task.source_dictionary
    long_doc = torch.cat([torch.arange(d.nspecial, d.nspecial + 10).repeat(10), torch.tensor([d.eos()])])  # 101
    short = torch.tensor([7, 8, d.eos()])
    ds = task.build_dataset_for_inference([long_doc, short], [101, 3])
    assert len(ds[0]["source"]) == 64 and ds[0]["source"][-1] == d.eos()
    assert torch.equal(ds[0]["source"][:63], long_doc[:63]) and torch.equal(ds[1]["source"], short)
    itr = task.get_batch_iterator(ds, max_tokens=1000, max_positions=task.max_positions())
    assert sum(len(b["id"]) for b in itr.next_epoch_itr(shuffle=False)) == 2  # no "invalid size" error
    # the models' own limit counts too (recorded by build_model, as fairseq-interactive and the hub load them)
    task._model_max_source_positions = [32]
    assert len(task.build_dataset_for_inference([long_doc], [101])[0]["source"]) == 32
    # side data sees the whole document, also when fairseq-interactive rebuilds net_input
    SIDE_DATA_PROVIDERS["_length"] = lambda task, toks: np.array([[float(len(t))] for t in toks])
    try:
        task = load_task(toy_data, max_source_positions=64, side_data="_length")
        ds = task.build_dataset_for_inference([long_doc], [101])
        assert float(ds[0]["_length"][0]) == 101
        batch = ds.collater([ds[0]])
        seen = {}
        task.inference_step = type(task).inference_step.__get__(task)
        sample = {"net_input": {k: batch["net_input"][k] for k in ("src_tokens", "src_lengths")}}
        from fairseq.tasks.translation import TranslationTask

        orig = TranslationTask.inference_step
        TranslationTask.inference_step = lambda self, g, m, s, **kw: seen.update(s["net_input"])
        try:
            task.inference_step(None, [], sample)
        finally:
            TranslationTask.inference_step = orig
        assert float(seen["_length"][0, 0]) == 101
    finally:
        del SIDE_DATA_PROVIDERS["_length"]


# --- --eval-rouge decoding ------------------------------------------------------------------------


def rouge_of_near_copies(task, model):
    """--eval-rouge of "summaries" that are the references minus their first token."""
    from fairseq import metrics, utils

    task.sequence_generator = None
    pad = task.tgt_dict.pad()
    task.inference_step = lambda g, m, s, **kw: [[{"tokens": utils.strip_pad(t, pad)[1:]}] for t in s["target"]]
    _, sample = first_batch(task, "valid", bsz=8)
    crit = SummarizationLoss(task, False, 0.1)
    with metrics.aggregate(new_root=True) as agg, torch.no_grad():
        _, _, log = task.valid_step(sample, model, crit)
        task.reduce_metrics([log], crit)
    return agg.get_smoothed_values()["rouge_1"]


def test_eval_rouge_on_word_level_data_keeps_the_spaces(toy_data, tiny_overrides):
    task = load_task(toy_data, eval_rouge=True)
    model, _ = build_model("t5_transformer_small", task.source_dictionary, **tiny_overrides)
    assert task.resolve_rouge_bpe() == (None, {})  # no prepare_args.json, word symbols
    decode = task.build_rouge_decoder()
    assert decode(task.tgt_dict.encode_line("the cat sat <sep> on mat", add_if_not_exist=False)) == ["the cat sat", "on mat"]
    assert rouge_of_near_copies(task, model) > 50  # was ~0: "thecatsat" vs "catsat"


def test_eval_rouge_on_sentencepiece_data_as_recorded_by_prepare(toy_data, tmp_path):
    """fairseq-sum-prepare data: decoded exactly as before (``Dictionary.string(.., "sentencepiece")``)."""
    import json

    from fairseq_sum_plugins.scoring.rouge import clean_summary

    (tmp_path / "prepare_args.json").write_text(json.dumps({"bpe": {"bpe": "sentencepiece", "sentencepiece_model": "spm.model"}}))
    task = load_task(toy_data, eval_rouge=True)
    task.cfg.data = str(tmp_path)
    assert task.resolve_rouge_bpe() == ("sentencepiece", {"sentencepiece_model": str(tmp_path / "spm.model")})
    for s in ("\u2581the \u2581c at <sep> \u2581sat", "\u2581on\u2581mat", "at"):
        for w in s.split():
            task.tgt_dict.add_symbol(w)
        toks = task.tgt_dict.encode_line(s, add_if_not_exist=False)
        assert task.build_rouge_decoder()(toks) == clean_summary(task.tgt_dict.string(toks, "sentencepiece"))
    assert task.build_rouge_decoder()(task.tgt_dict.encode_line("\u2581the \u2581c at <sep> \u2581sat")) == ["the cat", "sat"]


def test_eval_rouge_on_gpt2_bpe_data_scores_decoded_text(toy_data, tmp_path):
    """BART: dictionary symbols are GPT-2 BPE ids, decoded with fairseq's GPT-2 BPE."""
    import json

    from fairseq.data import Dictionary

    words = ["\u0120The", "\u0120cat", "\u0120sat", ".", "\u0120It", "\u0120ran", "\u0120far"]
    (tmp_path / "encoder.json").write_text(json.dumps({w: i for i, w in enumerate(words)}))
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\n")
    task = load_task(toy_data, eval_rouge=True, eval_rouge_bpe_args=json.dumps(
        {"gpt2_encoder_json": str(tmp_path / "encoder.json"), "gpt2_vocab_bpe": str(tmp_path / "vocab.bpe")}))
    d = Dictionary()
    for i in range(len(words)):
        d.add_symbol(str(i))
    d.add_symbol("madeupword0000")
    task.tgt_dict = task.src_dict = d
    assert task.resolve_rouge_bpe()[0] == "gpt2"
    decode = task.build_rouge_decoder()
    ids = [d.index(str(i)) for i in (4, 5, 6, 3, 0, 1, 2, 3)]  # " It ran far. The cat sat."
    toks = torch.tensor([d.bos(), *ids, d.index("madeupword0000"), d.eos()])
    assert decode(toks) == ["It ran far.", "The cat sat."]  # sentences, as fairseq-sum-score --split-sentences
