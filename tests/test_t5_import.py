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
from helpers import FakeTask
from kernel_paths import kernel_path_available
from t5_fixtures import write_tiny_t5
from tolerances import MODEL_ULPS, fp32_tol

torch.set_num_threads(1)
DOCS = ["the cat sat on the mat with a red ball", "news of the day in the big city"]
SUMMARIES = ["a dog ran", "blue sky over the small river"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    pytest.importorskip("transformers")
    from fairseq_sum_plugins.convert.t5_import import import_t5

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


def assert_log_probs_equal_hugging_face(hf_dir, out, ulps=MODEL_ULPS):
    """Teacher-forced log-probabilities of the import equal those of the installed transformers reading
    ``hf_dir`` itself, to float32 rounding of the logits (tests/tolerances.py): relative to the
    largest logit, since the log-softmax subtracts a log-sum-exp of that size. An unscaled tied head
    makes the logits about sqrt(d_m) times larger (26.5 here against 4.7 scaled) and the rounding
    with them: on an AVX2 kernel path 1.3e-5 = 4.2 ulps of 26.5 (an absolute 1e-5 failed there)."""
    from transformers import T5ForConditionalGeneration

    hf = T5ForConditionalGeneration.from_pretrained(hf_dir).eval()
    model, task = load_imported(out)
    d, sp = task.source_dictionary, spm(hf_dir)
    assert len(d) == hf.config.vocab_size and (d.pad(), d.eos(), d.unk()) == (1, 2, 3)
    for doc, summ in zip(DOCS, SUMMARIES):
        x, y = sp.encode(doc) + [1], sp.encode(summ) + [1]  # T5 appends </s> (id 1)
        with torch.no_grad():
            logits = hf(input_ids=torch.tensor([x]), labels=torch.tensor([y])).logits
            theirs = logits.log_softmax(-1)[0]
            src = torch.tensor([[t + 1 for t in x]])  # fairseq id = T5 id + 1 (mod V)
            prev = torch.tensor([[d.eos()] + [t + 1 for t in y[:-1]]])
            ours = model(src, torch.tensor([len(x)]), prev)[0].log_softmax(-1)[0]
        ours_in_t5_order = torch.roll(ours, -1, dims=-1)  # column t holds fairseq id (t + 1) mod V
        assert (ours_in_t5_order - theirs).abs().max() < fp32_tol(logits, ulps)
    return model


def test_teacher_forced_log_probs_equal_hugging_face(imported):
    _, hf_dir, out = imported
    assert_log_probs_equal_hugging_face(hf_dir, out)


# (what write_tiny_t5 is given, the head transformers >= 5 saves and reads: its config.json, lm_head present)
HEADS = {
    "tied-scaled": (dict(), (True, True), False),  # T5 v1.0
    "tied-unscaled": (dict(tie_word_embeddings=False), (True, False), False),  # a v5 'untied' config
    "untied-unscaled": (dict(tie_word_embeddings=False, untied_head=True), (True, False), True),
    "untied-scaled": (dict(untied_head=True), (True, True), True),
}


@pytest.mark.parametrize("variant", sorted(HEADS))
def test_output_head_as_the_saved_config_says(tmp_path, variant):
    """The installed transformers writes ``tie_word_embeddings`` (always true from v5 on) and
    ``scale_decoder_outputs``; the import honours both and an ``lm_head.weight`` of its own."""
    pytest.importorskip("transformers")
    from fairseq_sum_plugins.convert.t5_import import import_t5

    from fairseq_sum_plugins.convert.t5_import import hf_to_fairseq_names

    given, (tie, scale), has_head = HEADS[variant]
    write_tiny_t5(str(tmp_path / "hf"), seed=3, **given)
    cfg = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert (cfg["tie_word_embeddings"], cfg["scale_decoder_outputs"]) == (tie, scale)
    args, flags = import_t5(str(tmp_path / "hf"), str(tmp_path / "out"))
    assert args.share_decoder_input_output_embed is not has_head and args.t5_scale_decoder_output is scale
    model = assert_log_probs_equal_hugging_face(str(tmp_path / "hf"), str(tmp_path / "out"))
    assert (model.decoder.output_projection is not None) is has_head
    # the name map (shared with an exporter) covers the T5 cell's parameters exactly, from config.json alone
    names = {row.fairseq for row in hf_to_fairseq_names(cfg, untied_head=has_head)}
    assert names == set(model.state_dict())
    assert model.decoder.output_scale == (32**-0.5 if scale else 1.0)


@pytest.mark.parametrize("shape", [dict(d_kv=12),
                                   dict(d_kv=4, num_decoder_layers=3, relative_attention_num_buckets=16)])
def test_attention_dim_other_than_d_model(tmp_path, shape):
    """``num_heads * d_kv != d_model`` (t5-3b, t5-11b): 48 and 16 wide attention at d_model 32."""
    pytest.importorskip("transformers")
    from fairseq_sum_plugins.convert.t5_import import import_t5

    write_tiny_t5(str(tmp_path / "hf"), seed=4, **shape)
    args, flags = import_t5(str(tmp_path / "hf"), str(tmp_path / "out"))
    assert args.t5_d_kv == shape["d_kv"] and " ".join(flags).count(f"--t5-d-kv {shape['d_kv']}") == 1
    model = assert_log_probs_equal_hugging_face(str(tmp_path / "hf"), str(tmp_path / "out"))
    assert model.encoder.layers[0].self_attn.out_proj.weight.shape == (32, 4 * shape["d_kv"])


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
    args.gate, args.tpr = True, "discrete"
    ARCH_CONFIG_REGISTRY["t5_small_gated"](args)
    gated = ARCH_MODEL_REGISTRY["t5_small_gated"].build_model(args, FakeTask(task.source_dictionary))
    fresh_gate = gated.encoder.info_gate.proj.weight.clone()
    with caplog.at_level(logging.INFO):
        gated.load_state_dict(dict(state["model"]), strict=True)
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "encoder.info_gate" in logged and "self_attn_binding" in logged
    # copied
    assert torch.equal(gated.encoder.embed_tokens.weight, model.encoder.embed_tokens.weight)
    assert torch.equal(gated.encoder.info_gate.proj.weight, fresh_gate)  # left as initialised
    # a checkpoint without the import mark still loads strictly: a missing parameter is an error
    plain = {k: v for k, v in state["model"].items() if k != "t5_import_marker"}
    with pytest.raises(RuntimeError, match="Missing key"):
        gated.load_state_dict(plain, strict=True)


def copy_hf(hf_dir, dest, config=None, weights=None):
    """A copy of the tiny HF directory with ``config`` keys changed (None: removed; a function: the new
    config of the old) and ``weights`` changed (a function of the tensor dict)."""
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(hf_dir, dest)
    cfg = json.loads((dest / "config.json").read_text())
    cfg, config = (config(cfg), {}) if callable(config) else (cfg, config)
    for key, value in (config or {}).items():
        cfg.pop(key) if value is None else cfg.__setitem__(key, value)
    (dest / "config.json").write_text(json.dumps(cfg))
    if weights is not None:
        save_file(weights(load_file(str(dest / "model.safetensors"))), str(dest / "model.safetensors"))
    return dest


def run_import(hf_dir, out):
    """``fairseq-sum-import-t5 HF_DIR OUT``: its error message (SystemExit), None when it succeeded."""
    from fairseq_sum_plugins.convert.t5_import import main

    try:
        main([str(hf_dir), str(out)])
    except SystemExit as e:
        assert isinstance(e.code, str) and e.code.startswith("fairseq-sum-import-t5: error: ")
        return e.code
    return None


def extra_layer(w):  # a third encoder block, copied from the second
    w.update({k.replace("encoder.block.1.", "encoder.block.2."): v.clone() for k, v in w.items()
              if k.startswith("encoder.block.1.")})
    return w


def other_lm_head(w):
    w["lm_head.weight"] = torch.randn_like(w["shared.weight"])
    return w


BERT = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 32, "num_attention_heads": 4,
        "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 72, "layer_norm_eps": 1e-12}
# (config.json keys changed, weights changed, the file and the words the message must hold)
HOSTILE = {
    "bert-config": (lambda _: BERT, None, "config.json: model_type 'bert'"),
    "bert-config-no-model-type": (lambda _: {k: v for k, v in BERT.items() if k != "model_type"}, None,
                                  "config.json: d_model missing"),
    "t5-v1.1-config": (dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False), None, "T5 v1.1"),
    "gelu": (dict(feed_forward_proj="gelu"), None, "config.json: feed_forward_proj='gelu'"),
    "is-gated-act": (dict(is_gated_act=True), None, "config.json: is_gated_act = True"),
    "layer-norm-eps": (dict(layer_norm_epsilon=1e-5), None, "config.json: layer_norm_epsilon = 1e-05"),
    "mt5": (dict(model_type="mt5"), None, "model_type 'mt5'"),
    "d-model-string": (dict(d_model="32"), None, "config.json: d_model = '32' is not a positive integer"),
    "tie-string": (dict(tie_word_embeddings="false"), None, "tie_word_embeddings = 'false' is not true or false"),
    "decoder-start": (dict(decoder_start_token_id=1), None, "decoder_start_token_id = 1"),
    "d-kv-not-the-weights": (dict(d_kv=4), None,
                             "SelfAttention.q.weight has shape (32, 32), config.json implies (16, 32)"),
    "fewer-layers-than-config": (dict(num_layers=3), None, "model.safetensors: tensor encoder.block.2.layer.0"),
    "more-layers-than-config": ({}, extra_layer, "model.safetensors: 8 tensor(s) that config.json's T5 does not use, "
                                                "e.g. encoder.block.2.layer.0.SelfAttention.k.weight"),
    "encoder-embeddings-not-shared": ({}, lambda w: {**w, "encoder.embed_tokens.weight": w["shared.weight"] + 1},
                                      "encoder.embed_tokens.weight differs from shared.weight"),
    "v4-tied-config-other-head": (dict(scale_decoder_outputs=None), other_lm_head, "transformers < 5 ties the head"),
    "untied-config-no-head": (dict(tie_word_embeddings=False, scale_decoder_outputs=None), None,
                              "tie_word_embeddings false but the checkpoint has no lm_head.weight"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_configs_and_weights_of_other_models_are_refused_naming_the_file(imported, tmp_path, case):
    """Every config key that changes the function is honoured or refused, and every tensor is used:
    an error message naming the file, nothing written."""
    config, weights, message = HOSTILE[case]
    _, hf_dir, _ = imported
    bad = copy_hf(hf_dir, tmp_path / "bad", config, weights)
    error = run_import(bad, tmp_path / "out")
    assert error is not None and message in error, error
    assert not (tmp_path / "out").exists()


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_unreadable_files_give_messages_naming_them(imported, tmp_path):
    _, hf_dir, _ = imported
    bad = copy_hf(hf_dir, tmp_path / "json")
    (bad / "config.json").write_text('{"d_model": 32,')
    assert "json/config.json: not a readable JSON file" in run_import(bad, tmp_path / "out")
    (bad / "config.json").write_text('[1, 2]')
    assert "config.json: holds a list, not a JSON object" in run_import(bad, tmp_path / "out")
    bad = copy_hf(hf_dir, tmp_path / "st")
    truncate(bad / "model.safetensors")
    assert "st/model.safetensors: cannot be read as a checkpoint" in run_import(bad, tmp_path / "out")
    bad = copy_hf(hf_dir, tmp_path / "bin")
    os.remove(bad / "model.safetensors")
    torch.save({"x": torch.ones(1)}, bad / "pytorch_model.bin")
    truncate(bad / "pytorch_model.bin")
    assert "bin/pytorch_model.bin: cannot be read as a checkpoint" in run_import(bad, tmp_path / "out")
    torch.save([1, 2], bad / "pytorch_model.bin")
    assert "pytorch_model.bin: not a dict of named tensors" in run_import(bad, tmp_path / "out")
    bad = copy_hf(hf_dir, tmp_path / "spm")
    (bad / "spiece.model").write_bytes(b"not a model")
    assert "spm/spiece.model: not a sentencepiece model" in run_import(bad, tmp_path / "out")
    os.remove(bad / "spiece.model")
    assert "spm/spiece.model: not found" in run_import(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    (tmp_path / "a_file").write_text("")
    assert "a_file: cannot write the import there" in run_import(hf_dir, tmp_path / "a_file")


def test_sharded_checkpoint_reads_like_one_file(imported, tmp_path):
    """``save_pretrained(max_shard_size=...)`` (large T5s): the index's shards, names inside HF_DIR only."""
    from transformers import T5ForConditionalGeneration

    hf, hf_dir, out = imported
    sharded = tmp_path / "sharded"
    T5ForConditionalGeneration.from_pretrained(hf_dir).save_pretrained(str(sharded), max_shard_size="20KB")
    import shutil

    shutil.copy(os.path.join(hf_dir, "spiece.model"), sharded / "spiece.model")
    assert (sharded / "model.safetensors.index.json").exists() and not (sharded / "model.safetensors").exists()
    assert run_import(sharded, tmp_path / "out") is None
    new = torch.load(tmp_path / "out" / "model.pt", weights_only=True)["model"]
    ref = torch.load(os.path.join(out, "model.pt"), weights_only=True)["model"]
    assert new.keys() == ref.keys() and all(torch.equal(new[k], ref[k]) for k in ref)
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    first = next(iter(index["weight_map"]))
    index["weight_map"][first] = "../elsewhere.safetensors"
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    assert "shard names must be file names inside" in run_import(sharded, tmp_path / "out2")


def test_imported_checkpoint_records_the_dictionary_checksum(imported, caplog):
    from fairseq_sum_plugins.data_folder import dictionary_checksum

    _, _, out = imported
    args = torch.load(os.path.join(out, "model.pt"), weights_only=True)["args"]
    with caplog.at_level(logging.WARNING):
        _, task = load_imported(out)
    assert "records no dictionary checksum" not in caplog.text
    assert args.src_dict_sha256 == args.tgt_dict_sha256 == dictionary_checksum(task.source_dictionary)


def test_restoring_with_another_output_scale_is_refused(tmp_path):
    """A T5 whose config says not to scale the output, fine-tuned with the T5 v1.0 default (scaled):
    an error naming the flag instead of a silently different model."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    from fairseq_sum_plugins.convert.t5_import import import_t5

    write_tiny_t5(str(tmp_path / "hf"), seed=5, tie_word_embeddings=False)
    args, _ = import_t5(str(tmp_path / "hf"), str(tmp_path / "out"))
    _, task = load_imported(str(tmp_path / "out"))
    state = torch.load(tmp_path / "out" / "model.pt", weights_only=True)
    args.t5_scale_decoder_output = None  # the default: scaled, as the head is tied
    model = ARCH_MODEL_REGISTRY["t5_small"].build_model(args, FakeTask(task.source_dictionary))
    with pytest.raises(ValueError, match="pass --t5-scale-decoder-output False"):
        model.load_state_dict(dict(state["model"]), strict=True)
    args.t5_scale_decoder_output = False  # as the import printed
    model = ARCH_MODEL_REGISTRY["t5_small"].build_model(args, FakeTask(task.source_dictionary))
    model.load_state_dict(dict(state["model"]), strict=True)


def test_an_output_folder_with_files_of_the_same_names_needs_force(imported, tmp_path):
    from fairseq_sum_plugins.convert.t5_import import main

    _, hf_dir, first = imported
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.pt").write_bytes(b"a fine-tuned model")  # was replaced without a word
    message = run_import(hf_dir, out)
    assert message and f"{out}: already holds model.pt (pass --force" in message
    assert (out / "model.pt").read_bytes() == b"a fine-tuned model" and not (out / "dict.txt").exists()
    main([hf_dir, str(out), "--force"])
    model, ref = load_imported(str(out))[0], load_imported(first)[0]
    assert torch.equal(model.encoder.embed_tokens.weight, ref.encoder.embed_tokens.weight)


@pytest.mark.slow
def test_console_script_error_names_the_file(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "fairseq-sum-import-t5")
    (tmp_path / "hf").mkdir()  # an HF folder without config.json; OUT_DIR beside it, not inside
    proc = subprocess.run([script, str(tmp_path / "hf"), str(tmp_path / "out")], capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "config.json: not found" in proc.stderr


def test_pytorch_model_bin_with_an_old_cross_attention_table(imported, tmp_path, caplog):
    """``pytorch_model.bin`` is read like ``model.safetensors``; the cross-attention
    ``relative_attention_bias`` of early HF checkpoints (unused by T5) is dropped, with a log line."""
    import shutil

    from safetensors.torch import load_file

    from fairseq_sum_plugins.convert.t5_import import import_t5

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


@pytest.mark.slow  # three pytest processes
@pytest.mark.parametrize("capability", ["default", "avx2", "avx512"])
def test_output_heads_equal_hugging_face_on_every_kernel_path(capability):
    """The import's log-probabilities against transformers' with ATen's scalar, AVX2 and AVX-512
    kernels (``ATEN_CPU_CAPABILITY``; a path this CPU lacks is skipped, as its flags say:
    tests/kernel_paths.py): rounding differs between the paths, the tolerance holds on each (an
    absolute 1e-5 failed on AVX2, unscaled tied head)."""
    if not kernel_path_available(capability):  # torch reports any path the variable asks for
        pytest.skip(f"this CPU offers no {capability} kernel path")
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability, OMP_NUM_THREADS="1")
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        capture_output=True, text=True, env=env)
    if probe.stdout.strip().lower() != capability:
        pytest.skip(f"this CPU offers no {capability} kernel path ({probe.stdout.strip()})")
    here = os.path.dirname(os.path.abspath(__file__))
    tests = "test_output_head_as_the_saved_config_says or test_teacher_forced_log_probs"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           os.path.join(here, "test_t5_import.py"), "-k", tests],
                          capture_output=True, text=True, env=env, cwd=os.path.dirname(here))
    assert proc.returncode == 0 and "5 passed" in proc.stdout, proc.stdout[-3000:]
