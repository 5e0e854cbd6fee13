"""``fairseq-sum-import-t5``: a tiny random Hugging Face T5 (built here, no download) imported into the
T5 cell gives HF's log-probabilities and greedy tokens; the hub reads raw text with T5's sentencepiece;
unsupported variants are refused; paper parameters missing from the checkpoint start fresh."""
import argparse
import json
import logging
import os
import subprocess
import sys

import pytest
import torch
from conftest import FakeTask
from t5_fixtures import write_tiny_t5

torch.set_num_threads(1)
DOCS = ["the cat sat on the mat with a red ball", "news of the day in the big city"]
SUMMARIES = ["a dog ran", "blue sky over the small river"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    pytest.importorskip("transformers")
    from fairseq_sum_plugins.models.t5_import import import_t5

    root = tmp_path_factory.mktemp("t5")
    hf = write_tiny_t5(str(root / "hf"))
    import_t5(str(root / "hf"), str(root / "out"))
    return hf, str(root / "hf"), str(root / "out")


def load_imported(out):
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [os.path.join(out, "model.pt")], arg_overrides={"data": out})
    return models[0].eval(), task


def spm(hf_dir):
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_file=os.path.join(hf_dir, "spiece.model"))


def test_teacher_forced_log_probs_equal_hugging_face(imported):
    hf, hf_dir, out = imported
    model, task = load_imported(out)
    d, sp = task.source_dictionary, spm(hf_dir)
    assert len(d) == hf.config.vocab_size and (d.pad(), d.eos(), d.unk()) == (1, 2, 3)
    for doc, summ in zip(DOCS, SUMMARIES):
        x, y = sp.encode(doc) + [1], sp.encode(summ) + [1]  # T5 appends </s> (id 1)
        with torch.no_grad():
            theirs = hf(input_ids=torch.tensor([x]), labels=torch.tensor([y])).logits.log_softmax(-1)[0]
            src = torch.tensor([[t + 1 for t in x]])  # fairseq id = T5 id + 1 (mod V)
            prev = torch.tensor([[d.eos()] + [t + 1 for t in y[:-1]]])
            ours = model(src, torch.tensor([len(x)]), prev)[0].log_softmax(-1)[0]
        ours_in_t5_order = torch.roll(ours, -1, dims=-1)  # column t holds fairseq id (t + 1) mod V
        assert (ours_in_t5_order - theirs).abs().max() < 1e-4


def test_greedy_decoding_and_hub_raw_text_use_t5_sentencepiece(imported):
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    hf, hf_dir, out = imported
    hub = SumTransformerModel.from_pretrained(out, checkpoint_file="model.pt", data_name_or_path=".")
    hub.eval()
    sp = spm(hf_dir)
    for doc in DOCS:
        ids = hub.encode(doc)
        assert ids.tolist() == [t + 1 for t in sp.encode(doc)] + [hub.task.source_dictionary.eos()]
        hyp = hub.generate([ids], beam=1, max_len_a=0, max_len_b=8)[0][0]["tokens"]
        with torch.no_grad():  # fairseq never emits pad (T5's 0) nor EOS first: the same for HF
            ref = hf.generate(torch.tensor([sp.encode(doc) + [1]]), max_new_tokens=8, num_beams=1, do_sample=False,
                              min_new_tokens=1, suppress_tokens=[0])[0, 1:]
        ours = [t - 1 for t in hyp.tolist()]
        n = min(len(ours), len(ref))
        assert n >= 3 and ours[:n] == ref[:n].tolist()
        assert hub.decode(hyp) == sp.decode([t for t in ours if t > 2])  # sentencepiece detokenization


def test_checkpoint_loads_with_only_namespace_allow_listed(imported):
    _, _, out = imported
    from fairseq_sum_plugins.compat import SAFE_CHECKPOINT_GLOBALS

    assert SAFE_CHECKPOINT_GLOBALS == [argparse.Namespace]  # what the plugin allow-lists
    state = torch.load(os.path.join(out, "model.pt"), weights_only=True)
    assert state["args"].arch == "t5_small" and state["args"].cell == "t5"


def test_missing_paper_parameters_start_fresh_and_are_logged(imported, caplog):
    """A gated T5 restored from the import: the checkpoint's weights, a fresh gate, each fresh name logged."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    _, _, out = imported
    model, task = load_imported(out)
    state = torch.load(os.path.join(out, "model.pt"), weights_only=True)
    args = state["args"]
    args.info_gate, args.tpr = True, "discrete"
    ARCH_CONFIG_REGISTRY["t5_small_gated"](args)
    gated = ARCH_MODEL_REGISTRY["t5_small_gated"].build_model(args, FakeTask(task.source_dictionary))
    fresh_gate = gated.encoder.info_gate.proj.weight.clone()
    with caplog.at_level(logging.INFO):
        gated.load_state_dict(dict(state["model"]), strict=True)
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "encoder.info_gate" in logged and "self_attn_binding" in logged
    torch.testing.assert_close(gated.encoder.embed_tokens.weight, model.encoder.embed_tokens.weight)
    torch.testing.assert_close(gated.encoder.info_gate.proj.weight, fresh_gate)
    # a checkpoint without the import mark still loads strictly: a missing parameter is an error
    plain = {k: v for k, v in state["model"].items() if k != "t5_import_marker"}
    with pytest.raises(RuntimeError, match="Missing key"):
        gated.load_state_dict(plain, strict=True)


@pytest.mark.parametrize("change, message", [
    (dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False), "T5 v1.1"),
    (dict(d_kv=4), "num_heads \\* d_kv"),
])
def test_unsupported_variants_are_refused(imported, tmp_path, change, message):
    from fairseq_sum_plugins.models.t5_import import T5ImportError, import_t5

    _, hf_dir, _ = imported
    bad = tmp_path / "bad"
    bad.mkdir()
    with open(os.path.join(hf_dir, "config.json")) as f:
        cfg = json.load(f)
    cfg.update(change)
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(T5ImportError, match=message):
        import_t5(str(bad), str(tmp_path / "out"))


def test_console_script_error_names_the_file(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "fairseq-sum-import-t5")
    proc = subprocess.run([script, str(tmp_path), str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode != 0 and "config.json: not found" in proc.stderr


def test_pytorch_model_bin_with_an_old_cross_attention_table(imported, tmp_path, caplog):
    """``pytorch_model.bin`` is read like ``model.safetensors``; the cross-attention
    ``relative_attention_bias`` of early HF checkpoints (unused by T5) is dropped, with a log line."""
    import shutil

    from safetensors.torch import load_file

    from fairseq_sum_plugins.models.t5_import import import_t5

    _, hf_dir, out = imported
    old = tmp_path / "old"
    old.mkdir()
    for name in ("config.json", "spiece.model"):
        shutil.copy(os.path.join(hf_dir, name), old / name)
    weights = load_file(os.path.join(hf_dir, "model.safetensors"))
    weights["decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"] = torch.randn(8, 4)
    torch.save(weights, old / "pytorch_model.bin")
    with caplog.at_level(logging.INFO):
        import_t5(str(old), str(tmp_path / "out"))
    assert "EncDecAttention.relative_attention_bias" in caplog.text
    new = torch.load(tmp_path / "out" / "model.pt", weights_only=True)["model"]
    ref = torch.load(os.path.join(out, "model.pt"), weights_only=True)["model"]
    assert new.keys() == ref.keys() and all(torch.equal(new[k], ref[k]) for k in ref)


def test_prepare_spm_model_and_dict_go_together(tmp_path):
    from preprocess.prepare import PrepareError, main

    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "valid", "test"):
        (raw / f"{split}.jsonl").write_text('{"document": "a b c", "summary": "a"}\n')
    with pytest.raises(PrepareError, match="--spm-model and --dict go together"):
        main(["--jsonl-dir", str(raw), "--out", str(tmp_path / "out"), "--spm-model", str(raw / "train.jsonl")])
    missing = str(tmp_path / "none.model")
    with pytest.raises(PrepareError, match="none.model: no such file"):
        main(["--jsonl-dir", str(raw), "--out", str(tmp_path / "out"), "--spm-model", missing,
              "--dict", str(raw / "train.jsonl")])
