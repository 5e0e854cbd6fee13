"""Topic Assistant: the PFA topic model, SIA (TA eq. 5-7), TEMA (TA eq. 8, Fig. 3(b)), DRM (TA eq. 9)."""
import json
import math
import os

import numpy as np
import pytest
import torch

from helpers import build_model, load_script, load_task, make_dictionary, random_batch, write_topic_model
from tolerances import EPS32, MODEL_ULPS, OP_ULPS, approx32, approx64, fp32_close, fp64_tol
from fairseq_sum_plugins.features.topic_assistant.topic_model import bag_of_words, dictionary_checksum
from preprocess.topic_model import PoissonFactorAnalysis, excluded_symbols  # with the fit

torch.set_num_threads(1)
K = 6


@pytest.fixture
def ta_setup(tmp_path, tiny_overrides):
    d = make_dictionary()
    path = write_topic_model(d, str(tmp_path / "topic_model.npz"))

    def build(arch="transformer_ta_small", **kw):
        over = dict(tiny_overrides, topic_model=path)
        over.update(kw)
        model, _ = build_model(arch, d, **over)
        return model.eval()

    return d, path, build


def subnormal(t):
    """Where ``t`` holds a float32 subnormal number."""
    return (t != 0) & (t.abs() < torch.finfo(torch.float32).tiny)


def theta_for(bsz, k=K, seed=1):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(bsz, k, generator=g) ** 3
    return t / t.sum(1, keepdim=True)


# --- topic model -------------------------------------------------------------------------------------


def planted_corpus(n_docs=300, v=160, k=4, excluded=16, seed=0):
    rng = np.random.default_rng(seed)
    per = (v - excluded) // k
    true = np.zeros((v, k))
    for j in range(k):
        true[excluded + j * per : excluded + (j + 1) * per, j] = 1.0 / per
    docs = []
    for _ in range(n_docs):
        th = rng.gamma(0.2, 1.0, k) + 1e-6
        counts = rng.poisson(true @ th * 60 / th.sum())
        toks = np.concatenate([np.repeat(np.arange(v), counts), rng.integers(0, excluded, 8)])
        docs.append(toks)
    keep = np.ones(v, bool)
    keep[:excluded] = False
    return docs, keep, true


def test_pfa_recovers_planted_topics_and_posterior_never_decreases():
    docs, keep, true = planted_corpus()
    history = []
    model = PoissonFactorAnalysis.fit(bag_of_words(docs, len(keep), keep), keep, num_topics=4, iters=60,
                                      history=history, progress=False, seed=0)
    diffs = np.diff(history)
    # the log posterior is a float32 sum over the corpus: rounding of its own size
    rounding = MODEL_ULPS * EPS32 * np.abs(history[1:])
    assert (diffs >= -rounding).all(), "MAP-EM must not decrease the log posterior"
    assert history[-1] > history[0]
    # each planted topic is matched by a fitted topic (cosine of the columns)
    a = model.phi / np.linalg.norm(model.phi, axis=0)
    b = true / np.linalg.norm(true, axis=0)
    assert (a.T @ b).max(0).min() > 0.9
    assert np.all(model.phi[~keep] == 0), "excluded symbols' rows of Phi must be zero"
    # float32 distribution: rounded terms, summed
    assert fp32_close(model.phi.sum(0), 1.0, 1.0, OP_ULPS)
    theta = model.infer_tokens(docs[:20])
    assert theta.dtype == np.float32 and theta.shape == (20, 4)
    # float32 distribution: rounded terms, summed
    assert fp32_close(theta.sum(1), 1.0, 1.0, OP_ULPS)


def test_excluded_symbols_sentencepiece():
    from fairseq.data import Dictionary

    d = Dictionary()
    for sym in ["\u2581the", "\u2581cat", ",", "\u2581", "<sep>", "\u258112", "s", "\u2581Cats", "\u2581And", "ing"]:
        d.add_symbol(sym)
    ex = dict(zip(d.symbols, excluded_symbols(d)))
    assert all(ex[s] for s in d.symbols[: d.nspecial])
    assert ex["\u2581the"] and ex[","] and ex["\u2581"] and ex["<sep>"] and ex["\u258112"] and ex["s"] and ex["\u2581And"]
    assert not ex["\u2581cat"] and not ex["\u2581Cats"] and not ex["ing"]


def test_infer_degenerate_documents(tmp_path):
    docs, keep, _ = planted_corpus(n_docs=80)
    model = PoissonFactorAnalysis.fit(bag_of_words(docs, len(keep), keep), keep, 4, 10, progress=False)
    theta = model.infer_tokens([np.arange(16), np.array([40]), np.array([], dtype=np.int64)])
    assert np.isfinite(theta).all()
    assert np.all(theta[0] == 0) and np.all(theta[2] == 0)  # only excluded symbols / empty: zero vector
    # float32 distribution: rounded terms, summed
    assert fp32_close(theta[1].sum(), 1.0, 1.0, OP_ULPS)


def test_topic_model_dictionary_mismatch(tmp_path, tiny_overrides):
    d = make_dictionary()
    path = write_topic_model(d, str(tmp_path / "tm.npz"))
    other = make_dictionary(41)
    with pytest.raises(ValueError, match="does not match the dictionary"):
        PoissonFactorAnalysis.load(path, other)
    with pytest.raises(ValueError, match="does not match the dictionary"):
        build_model("transformer_ta_small", other, **dict(tiny_overrides, topic_model=path))
    with pytest.raises(FileNotFoundError, match="preprocess.topic_model fit"):
        build_model("transformer_ta_small", d, **dict(tiny_overrides, topic_model=str(tmp_path / "none.npz")))


# --- SIA ---------------------------------------------------------------------------------------------


def test_sia_attention_equals_hand_computation(ta_setup):
    d, path, build = ta_setup
    model = build(ta_tema=False, ta_drm=False)
    phi = np.load(path)["phi"]
    src, lengths, prev = random_batch(d, bsz=2, src_len=7)
    src[0, -3] = 5  # an excluded symbol: zero row
    captured = {}
    layer = model.encoder.layers[0]
    layer.sia.register_forward_hook(lambda m, inp, out: captured.update(probs=inp[1], kv=inp[0], out=out))
    model(src, lengths, prev)
    d_k = 32 // 4
    for b in range(2):
        toks = src[b].tolist()
        for i, vi in enumerate(toks):
            if vi == d.pad():
                continue
            logits = []
            for j, vj in enumerate(toks):
                r1 = phi[vi] / max(phi[vi].sum(), 1e-30)
                r2 = phi[vj] / max(phi[vj].sum(), 1e-30)
                n1, n2 = np.linalg.norm(r1), np.linalg.norm(r2)
                cos = 0.0 if n1 == 0 or n2 == 0 else float(r1 @ r2 / (n1 * n2))
                logits.append(-math.inf if vj == d.pad() else cos / math.sqrt(d_k))
            expected = torch.tensor(logits).softmax(-1)
            assert fp32_close(captured["probs"][b, i], expected, 1.0, OP_ULPS)  # |logits| <= 1
    # TA eq. 7: head_{h+1} W_add with head_{h+1} = A V_add
    v = layer.sia.v_add(captured["kv"])
    assert fp32_close(captured["out"], layer.sia.w_add(captured["probs"] @ v), ulps=OP_ULPS)
    assert torch.isfinite(captured["probs"]).all()


# --- TEMA --------------------------------------------------------------------------------------------


def prefix_outputs(model):
    """Capture the last decoder layer's output rows (prefix included)."""
    store = {}
    model.decoder.layers[-1].register_forward_hook(lambda m, inp, out: store.update(x=out[0]))
    return store


def test_tema_topic_positions_unchanged_by_summary_tokens(ta_setup):
    d, _, build = ta_setup
    model = build()
    store = prefix_outputs(model)
    src, lengths, prev = random_batch(d, bsz=2)
    theta = theta_for(2)
    out1, _ = model(src, lengths, prev, theta=theta)
    x1 = store["x"]
    prev2 = prev.clone()
    prev2[:, 2:] = (prev2[:, 2:] + 3) % (len(d) - d.nspecial) + d.nspecial
    out2, _ = model(src, lengths, prev2, theta=theta)
    x2 = store["x"]
    n = model.decoder.topic.n
    assert x1.size(1) == prev.size(1) + n and out1.size(1) == prev.size(1)  # prefix never emitted
    # the same rows through the same kernels: bit for bit
    assert torch.equal(x1[:, :n], x2[:, :n])  # topics are not changed by summary tokens
    assert torch.equal(out1[:, :2], out2[:, :2])  # causal among summary tokens
    assert not fp32_close(out1[:, 2:], out2[:, 2:], ulps=MODEL_ULPS)  # more than rounding
    # summary tokens see the topics: other top topics -> other outputs
    out3, _ = model(src, lengths, prev, theta=theta.flip(-1))
    assert not fp32_close(out1, out3, ulps=MODEL_ULPS)


def test_tema_topic_embeddings_are_phi_t_e(ta_setup):
    d, path, build = ta_setup
    model = build()
    phi = torch.from_numpy(np.load(path)["phi"])
    ids = torch.tensor([[0, 3], [5, 1]])
    emb = model.decoder.topic.topic_embeddings(ids, model.decoder.embed_tokens.weight)
    full = (phi / phi.sum(0)).t() @ model.decoder.embed_tokens.weight  # E_topic = Phi^T E_token
    assert fp32_close(emb, full[ids], ulps=OP_ULPS)  # one matmul, other rows
    mask = model.decoder.topic.prefix_mask(2, 4, 0, "cpu")
    allowed = (mask == 0).int().tolist()
    assert allowed == [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]


# --- DRM ---------------------------------------------------------------------------------------------


def test_drm_adds_theta_wb_to_cross_attention_output(ta_setup):
    d, _, build = ta_setup
    model = build(ta_sia=False, ta_tema=False)
    src, lengths, prev = random_batch(d, bsz=2)
    theta = theta_for(2)
    layer = model.decoder.layers[0]
    outs = []
    hook = layer.cross_attn_sublayer.register_forward_hook(lambda m, inp, out: outs.append(out[0] - inp[0]))
    model(src, lengths, prev, theta=theta)
    w_b = layer.drm.w_b.weight.detach().clone()
    with torch.no_grad():
        layer.drm.w_b.weight.zero_()
    model(src, lengths, prev, theta=theta)
    hook.remove()
    z = theta @ w_b.t()  # z = theta^T W_b, the same for every position
    # two float32 sublayer outputs subtracted: ulps of their size
    assert fp32_close(outs[0] - outs[1], z[:, None, :].expand_as(outs[0]), torch.stack(outs),
                      OP_ULPS)


# --- decoding, gradients, degenerate inputs, errors ----------------------------------------------------


def test_generation_with_side_theta(ta_setup):
    from fairseq.sequence_generator import SequenceGenerator

    d, _, build = ta_setup
    model = build()
    src, lengths, _ = random_batch(d, bsz=2)
    gen = SequenceGenerator([model], d, beam_size=3, max_len_b=6)
    hypos = gen.forward({"net_input": {"src_tokens": src, "src_lengths": lengths, "theta": theta_for(2)}})
    assert len(hypos) == 2 and all(len(h) == 3 for h in hypos)
    assert all(torch.isfinite(h[0]["positional_scores"]).all() for h in hypos)


def test_degenerate_documents_no_nan(ta_setup):
    d, _, build = ta_setup
    model = build().train()
    src = torch.tensor([[5, 6, 5, 6, d.eos()], [d.pad(), d.pad(), d.pad(), 9, d.eos()]])  # stop words only / one token
    lengths = torch.tensor([5, 2])
    prev = torch.tensor([[d.eos(), 5, 6], [d.eos(), 9, 9]])
    theta = torch.zeros(2, K)  # no topic evidence
    out, _ = model(src, lengths, prev, theta=theta)
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_missing_or_misshapen_theta_errors(ta_setup):
    d, _, build = ta_setup
    model = build()
    src, lengths, prev = random_batch(d, bsz=2)
    with pytest.raises(ValueError, match="--side-data theta"):
        model(src, lengths, prev)
    with pytest.raises(ValueError, match="topics"):
        model(src, lengths, prev, theta=torch.rand(2, K + 1))
    build(ta_tema=False, ta_drm=False)(src, lengths, prev)  # SIA alone needs no theta


def test_side_data_misaligned_and_provider(toy_data, tmp_path):
    from fairseq_sum_plugins.tasks.summarization import SIDE_DATA_PROVIDERS

    task = load_task(toy_data, side_data="theta")
    np.save(os.path.join(toy_data, "valid.theta.npy"), np.zeros((3, K), np.float32))
    try:
        with pytest.raises(ValueError, match="rows but the dataset has"):
            task.load_dataset("valid")
        os.remove(os.path.join(toy_data, "valid.theta.npy"))
        with pytest.raises(FileNotFoundError, match="theta"):
            task.load_dataset("valid")
        # raw text: the provider infers theta with the data directory's topic model
        write_topic_model(task.source_dictionary, os.path.join(toy_data, "topic_model.npz"), zero_rows=())
        toks = [task.source_dictionary.encode_line("the cat sat on mat", add_if_not_exist=False), torch.tensor([2])]
        theta = SIDE_DATA_PROVIDERS["theta"](task, toks)
        assert theta.shape == (2, K) and np.isfinite(theta).all()
        # float32 distribution: rounded terms, summed
        assert fp32_close(theta[0].sum(), 1.0, 1.0, OP_ULPS)
        ds = task.build_dataset_for_inference(toks, [len(t) for t in toks])
        batch = ds.collater([ds[0], ds[1]])
        assert batch["net_input"]["theta"].shape == (2, K)
    finally:
        for name in ("valid.theta.npy", "topic_model.npz"):
            if os.path.exists(os.path.join(toy_data, name)):
                os.remove(os.path.join(toy_data, name))


def test_inference_step_infers_missing_theta(toy_data, tiny_overrides):
    """fairseq-interactive's sample holds only src_tokens/src_lengths: the task fills theta in."""
    from fairseq.sequence_generator import SequenceGenerator

    task = load_task(toy_data, side_data="theta")
    path = write_topic_model(task.source_dictionary, os.path.join(toy_data, "topic_model.npz"), zero_rows=())
    try:
        model, d = build_model("transformer_ta_small", task.source_dictionary, **dict(tiny_overrides, topic_model=path))
        toks = [task.source_dictionary.encode_line(line, add_if_not_exist=False) for line in ("the cat sat", "blue sky")]
        src = torch.full((2, 4), d.pad())
        src[0], src[1, 1:] = toks[0], toks[1]
        sample = {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([4, 3])}}
        hypos = task.inference_step(SequenceGenerator([model.eval()], d, beam_size=2, max_len_b=4), [model], sample)
        assert len(hypos) == 2 and sample["net_input"]["theta"].shape == (2, K)
    finally:
        os.remove(path)


def test_parameter_overhead_per_module(ta_setup):
    """Table 8: TEMA adds nothing; SIA adds 2 d d_k + d_k per attention block; DRM K d per decoder layer."""
    d, _, build = ta_setup
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    base = count(build("t5_transformer_small"))
    off = dict(ta_sia=False, ta_tema=False, ta_drm=False)
    assert count(build(**off)) == base
    assert count(build(**dict(off, ta_tema=True))) == base
    dm, d_k, layers = 32, 8, 2
    assert count(build(**dict(off, ta_sia=True))) - base == (layers + 2 * layers) * (2 * dm * d_k + d_k)
    assert count(build(**dict(off, ta_drm=True))) - base == layers * K * dm


def test_semantic_similarity_eq10():
    from fairseq_sum_plugins.features.topic_assistant.similarity import semantic_similarity

    a = np.array([[1.0, 0.0, 1.0], [0.2, 0.3, 0.5], [0.0, 0.0, 0.0]])
    b = np.array([[1.0, 1.0, 0.0], [0.4, 0.6, 1.0], [0.1, 0.2, 0.7]])
    np.testing.assert_allclose(semantic_similarity(a, b), [0.5, 1.0, 0.0], rtol=0,
                               atol=fp64_tol(1.0))


def test_topic_map_png(tmp_path):
    from fairseq_sum_plugins.inspection.topics import main as topics_main

    d = make_dictionary()
    for i in range(len(d)):
        d.count[i] = i  # w39 is the most frequent symbol
    data = tmp_path / "data"  # an output inside the data folder it reads is refused
    data.mkdir()
    d.save(str(data / "dict.src.txt"))
    write_topic_model(d, str(data / "topic_model.npz"))
    png = tmp_path / "map.png"
    ids, coords = topics_main(["map", str(data), "--tokens", "10", "--png", str(png)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [d[i] for i in ids] == [f"w{n}" for n in range(39, 29, -1)]
    assert coords.shape == (10, 2) and np.isfinite(coords).all() and coords.std(0).min() > 0


# --- BART + TA ---------------------------------------------------------------------------------------

BART_TINY = dict(encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
                 decoder_embed_dim=32, decoder_ffn_embed_dim=64, decoder_layers=2, decoder_attention_heads=4,
                 dropout=0.0, attention_dropout=0.0, max_source_positions=64, max_target_positions=64)


def test_bart_ta_loads_a_bart_checkpoint_with_fresh_ta_parameters(ta_setup):
    from fairseq.sequence_generator import SequenceGenerator

    d, path, _ = ta_setup
    torch.manual_seed(0)
    bart, _ = build_model("bart_base", d, **dict(BART_TINY, task="summarization"))
    model, _ = build_model("bart_base_ta", d, **dict(BART_TINY, topic_model=path, task="summarization"))
    fresh = {k: v.clone() for k, v in model.state_dict().items() if k not in bart.state_dict()}
    assert fresh and all(("sia" in k or "drm" in k) for k in fresh)
    model.load_state_dict(bart.state_dict(), strict=True)  # TA parameters missing from the checkpoint
    own = model.state_dict()
    assert all(torch.equal(own[k], v) for k, v in bart.state_dict().items())
    assert all(torch.equal(own[k], v) for k, v in fresh.items())
    n_bart = sum(p.numel() for p in bart.parameters())
    assert sum(p.numel() for p in model.parameters()) - n_bart == 6 * (2 * 32 * 8 + 8) + 2 * K * 32
    src, lengths, _ = random_batch(d, bsz=2, left_pad_source=False)
    hypos = SequenceGenerator([model.eval()], d, beam_size=2, max_len_b=5).forward(
        {"net_input": {"src_tokens": src, "src_lengths": lengths, "theta": theta_for(2)}})
    assert len(hypos) == 2


@pytest.mark.parametrize("layout", [
    # per-decoder module lists: encoder.sia.N, decoder.{self_sia,cross_sia,drm}.N
    [(r"^encoder\.layers\.(\d+)\.self_attn\.sia\.", r"encoder.sia.\1."),
     (r"^decoder\.layers\.(\d+)\.self_attn\.self_sia\.", r"decoder.self_sia.\1."),
     (r"^decoder\.layers\.(\d+)\.encoder_attn\.cross_sia\.", r"decoder.cross_sia.\1."),
     (r"^decoder\.layers\.(\d+)\.encoder_attn\.drm\.", r"decoder.drm.\1.")],
    # one attribute name, sia, in every attention module
    [(r"\.self_attn\.self_sia\.", r".self_attn.sia."), (r"\.encoder_attn\.cross_sia\.", r".encoder_attn.sia.")],
], ids=["module-lists", "attention-sia"])
def test_bart_ta_reads_checkpoints_of_earlier_layouts(ta_setup, layout):
    """TA parameters saved under earlier names load into the attention modules (``upgrade_state_dict_named``)."""
    import re

    d, path, _ = ta_setup
    model, _ = build_model("bart_base_ta", d, **dict(BART_TINY, topic_model=path, task="summarization"))
    saved = {}
    for key, value in model.state_dict().items():
        for pattern, target in layout:
            key = re.sub(pattern, target, key)
        saved[key] = value + 1.0  # other values than the model's own
    assert set(saved) != set(model.state_dict())
    model.upgrade_state_dict(saved)
    model.load_state_dict(saved, strict=True)
    assert torch.equal(model.decoder.layers[1].encoder_attn.drm.w_b.weight, saved["decoder.layers.1.encoder_attn.drm.w_b.weight"])
    assert torch.equal(model.decoder.layers[0].self_attn.self_sia.v_add.weight,
                       saved["decoder.layers.0.self_attn.self_sia.v_add.weight"])


def test_bench_train_topic_model_and_theta_batches(tmp_path):
    bench = load_script("benchmarks", "bench_train.py")
    d = bench.make_dictionary(200)
    path = bench.write_topic_model(d, 7, str(tmp_path))
    model = PoissonFactorAnalysis.load(path, d)  # the format (and dictionary checksum) of topic_model fit
    # float32 distribution: rounded terms, summed
    assert fp32_close(model.phi.sum(0), 1.0, 1.0, OP_ULPS)
    assert not model.phi[~model.keep].any()
    from types import SimpleNamespace

    a = SimpleNamespace(ragged=False, src_len=10, tgt_len=4, batch_size=3, topics=7)
    batches = bench.make_batches(d, a, n=2)
    theta = batches[0]["net_input"]["theta"]
    assert theta.shape == (3, 7) and fp32_close(theta.sum(1), torch.ones(3), 1.0, OP_ULPS)
    assert "theta" not in bench.without_theta(batches)[0]["net_input"]
    assert "theta" in batches[0]["net_input"]  # the originals are left alone
    # --ablate flush_phi: the peer's Phi buffers are rebuilt from the file with its subnormals
    from fairseq_sum_plugins.features.topic_assistant.layers import TopicAssistant

    raw = np.load(path)["phi"]
    flushed = TopicAssistant(raw, path=path)
    peer = TopicAssistant(raw, path=path)
    assert bench.FAST_PATHS["flush_phi"]() is True
    bench.ablated({"model": peer}, "flush_phi")
    kept = subnormal(peer.phi_topics)
    assert kept.any(), "the benchmark's random Phi holds subnormals (what the path measures)"
    assert torch.equal(peer.phi_topics.masked_fill(kept, 0.0), flushed.phi_topics)


@pytest.mark.parametrize("per_head", [False, True])
def test_sia_composes_with_information_selection_pruning(ta_setup, per_head):
    """--info-gate with SIA: pruned == masked, incremental == full, and the gates reach the SIA head."""
    d, _, build = ta_setup
    torch.manual_seed(0)
    model = build(info_gate=True, gate_per_head=per_head)
    src, lengths, prev = random_batch(d, bsz=3, src_len=12)
    theta = theta_for(3)
    gate = model.encoder.info_gate
    gate.threshold = -1.0
    with torch.no_grad():
        raw = model.encoder(src, lengths, theta=theta)
        g = raw["feature_state"]["gates"][~raw["enc_padding_mask"]].max(-1).values
        gate.threshold = float(g.median())
        gate.prune = False
        masked, _ = model(src, lengths, prev, theta=theta)
        gate.prune = True
        pruned, _ = model(src, lengths, prev, theta=theta)
        enc = model.encoder(src, lengths, theta=theta)
        assert enc["enc"].size(1) < src.size(1)  # positions were removed
        state, steps = {}, []
        for t in range(prev.size(1)):
            steps.append(model.decoder(prev[:, : t + 1], enc, incremental_state=state)[0])
    assert fp32_close(pruned, masked, ulps=MODEL_ULPS)  # shorter keys: other blockings only
    assert fp32_close(torch.cat(steps, 1), pruned, ulps=MODEL_ULPS)

    # the cross SIA head reads the gated rows: its values are W^v_add rows times the gates
    seen = {}

    def keep(module, args, kwargs, out):
        seen["v_scale"] = kwargs["v_scale"]

    model.decoder.layers[0].cross_sia.register_forward_hook(keep, with_kwargs=True)
    with torch.no_grad():
        model(src, lengths, prev, theta=theta)
        expected = enc["feature_state"]["gates"].mean(-1, keepdim=True)  # one gate, or the mean of the head gates
    assert torch.equal(seen["v_scale"], expected)  # the same mean of the same gates


# --- audit fixes: no-evidence fallback, Phi checksum in the args, the provider's topic model -------------


def test_documents_without_topic_evidence_get_the_corpus_mean_prior(tmp_path):
    docs, keep, _ = planted_corpus(n_docs=80)
    bow = bag_of_words(docs, len(keep), keep)
    model = PoissonFactorAnalysis.fit(bow, keep, 4, 10, progress=False)
    counted = np.asarray(bow.sum(1)).ravel() > 0
    props = model.train_theta[counted] / model.train_theta[counted].sum(1, keepdims=True)
    assert fp32_close(model.theta_mean, props.mean(0), 1.0, OP_ULPS)  # stored at fit time (float32)
    path = str(tmp_path / "tm.npz")
    model.save(path)
    loaded = PoissonFactorAnalysis.load(path)
    prior = loaded.theta_prior()
    assert fp32_close(prior, model.theta_mean / model.theta_mean.sum(), 1.0, OP_ULPS)
    empty_docs = [np.arange(16), np.array([40]), np.array([], dtype=np.int64)]  # stop words / one token / empty
    theta = loaded.infer_tokens(empty_docs, empty="prior")
    assert np.isfinite(theta).all()
    assert np.array_equal(theta[[0, 2]], np.stack([prior, prior]))  # the prior itself, copied
    assert np.array_equal(theta[1], loaded.infer_tokens(empty_docs)[1])  # evidence: unchanged
    # a topic model file without the corpus mean (fitted before it was stored): uniform 1/K
    old = PoissonFactorAnalysis(model.phi, keep)
    assert np.array_equal(old.infer_tokens(empty_docs, empty="prior")[2], np.full(4, 0.25))  # exact


def test_zero_theta_uses_the_prior_deterministically(ta_setup, tmp_path):
    """TEMA's top topics and DRM of a document without topic evidence (theta = 0): the topic model's
    prior proportions, ties by the lower topic id; never NaN."""
    d, path, build = ta_setup
    src, lengths, prev = random_batch(d, bsz=2)
    zeros = torch.zeros(2, K)
    # no corpus mean in the file: uniform, top topics 0..n-1
    model = build()
    topic = model.decoder.topic
    assert topic.top_topics(topic.theta(zeros)).tolist() == [[0, 1, 2, 3, 4]] * 2
    out, _ = model(src, lengths, prev, theta=zeros)
    assert torch.isfinite(out).all()
    # the same theta
    assert torch.equal(out, model(src, lengths, prev, theta=torch.full((2, K), 1.0 / K))[0])
    # with the corpus mean of the fit
    tm = PoissonFactorAnalysis.load(path)
    tm.theta_mean = np.array([0.05, 0.3, 0.1, 0.25, 0.2, 0.1], np.float32)
    with_mean = str(tmp_path / "with_mean.npz")
    tm.save(with_mean)
    model = build(topic_model=with_mean)
    topic = model.decoder.topic
    assert topic.top_topics(topic.theta(zeros)).tolist() == [[1, 3, 4, 2, 5]] * 2
    mixed = torch.stack([torch.zeros(K), theta_for(1)[0]])
    expected = torch.stack([torch.from_numpy(tm.theta_mean), theta_for(1)[0]])
    assert torch.equal(model(src, lengths, prev, theta=mixed)[0],
                       model(src, lengths, prev, theta=expected)[0])


def _build_with_args(arch, args, task):
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    ARCH_CONFIG_REGISTRY[arch](args)
    return ARCH_MODEL_REGISTRY[arch].build_model(args, task)


def test_phi_checksum_recorded_in_args_and_checked_on_rebuild(ta_setup, tmp_path, tiny_overrides, caplog):
    import argparse
    import copy
    import logging

    from helpers import FakeTask

    d, path, _ = ta_setup
    other = write_topic_model(d, str(tmp_path / "refit.npz"), seed=1)  # same dictionary and K, other Phi
    sha, sha_other = (PoissonFactorAnalysis.load(p).phi_sha256 for p in (path, other))
    assert sha != sha_other
    args = argparse.Namespace(**dict(tiny_overrides, topic_model=path))
    model = _build_with_args("transformer_ta_small", args, FakeTask(d))
    assert args.ta_phi_sha256 == sha and args.ta_phi_file == os.path.abspath(path)
    assert not [k for k in model.state_dict() if "phi" in k]  # Phi itself is not saved
    # rebuilt from the checkpoint's args: the same Phi loads, a refit one is an error naming both
    _build_with_args("transformer_ta_small", copy.deepcopy(args), FakeTask(d))
    ckpt_args = copy.deepcopy(args)
    ckpt_args.ta_topic_model = other
    with pytest.raises(ValueError, match="different Phi") as err:
        _build_with_args("transformer_ta_small", ckpt_args, FakeTask(d))
    assert all(s in str(err.value) for s in (os.path.abspath(path), other, sha[:16], sha_other[:16]))
    # a checkpoint saved before the checksum was recorded: a warning, then it loads
    old_args = copy.deepcopy(args)
    del old_args.ta_phi_sha256, old_args.ta_phi_file, old_args.ta_topic_model
    old_args.topic_model = other  # its flag's earlier attribute name
    with caplog.at_level(logging.WARNING, logger="fairseq_sum_plugins.features.topic_assistant.layers"):
        _build_with_args("transformer_ta_small", old_args, FakeTask(d))
    assert "no Phi checksum" in caplog.text and old_args.ta_phi_sha256 == sha_other


def test_raw_text_provider_uses_the_models_topic_model(toy_data, tmp_path, tiny_overrides):
    """The raw-text theta provider infers with the topic model the model was built with (its
    --topic-model), not DATA/topic_model.npz."""
    import argparse

    task = load_task(toy_data, side_data="theta")
    assert not os.path.exists(os.path.join(toy_data, "topic_model.npz"))
    path = write_topic_model(task.source_dictionary, str(tmp_path / "elsewhere.npz"), zero_rows=())
    _build_with_args("transformer_ta_small", argparse.Namespace(**dict(tiny_overrides, topic_model=path)), task)
    toks = [task.source_dictionary.encode_line(line, add_if_not_exist=False) for line in ("the cat sat", "the on a")]
    theta = task.provide_side_data("theta", toks)
    tm = PoissonFactorAnalysis.load(path)
    assert np.array_equal(theta[0], tm.infer_tokens([toks[0].numpy()])[0])  # the same inference
    # stop words only: the prior (float32)
    assert fp32_close(theta[1], np.full(K, 1.0 / K), 1.0, OP_ULPS)


def test_side_data_theta_messages_name_the_feature_and_the_command(toy_data):
    """Issue 12.10: a missing theta file names the command that writes it; --side-data theta on a
    model without the Topic Assistant says so."""
    from fairseq import options

    task = load_task(toy_data, side_data="theta")
    with pytest.raises(FileNotFoundError, match=r"valid.theta.npy not found .*python -m preprocess.topic_model fit"):
        task.load_dataset("valid")
    args = options.parse_args_and_arch(options.get_training_parser(), [
        toy_data, "--task", "summarization", "--side-data", "theta", "--arch", "t5_transformer_small",
        "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
        "--encoder-attention-heads", "2"])
    with pytest.raises(ValueError, match="--side-data theta: this model .* does not read it; theta feeds the Topic Assistant"):
        task.build_model(args)


def test_theta_of_another_split_or_other_documents_is_refused(tmp_path):
    """A theta file (with its record) copied from another split of the same size was accepted: the
    record names the split and the sha256 of its binarized source, and loading the split checks
    both, naming the infer command; the file that command writes is accepted."""
    import shutil

    from helpers import binarize, write_toy_parallel
    from preprocess.topic_model import main as topic_model_main

    write_toy_parallel(str(tmp_path / "raw"), n_train=30, n_valid=6, n_test=6, seed=4)
    data = binarize(str(tmp_path / "raw"), str(tmp_path / "bin"))
    topic_model_main(["fit", data, "--topics", str(K), "--iters", "3"])
    path = os.path.join(data, "topic_model.npz")
    from fairseq import options

    task = load_task(data, side_data="theta")
    task.build_model(options.parse_args_and_arch(options.get_training_parser(), [  # as fairseq-train does
        data, "--task", "summarization", "--side-data", "theta", "--arch", "transformer_ta_small", "--ta-topic-model",
        path, "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32",
        "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2"]))
    task.load_dataset("test")  # as written by the fit
    for ext in ("npy", "json"):
        shutil.copyfile(os.path.join(data, f"valid.theta.{ext}"), os.path.join(data, f"test.theta.{ext}"))
    with pytest.raises(ValueError, match=r"test.theta.npy was inferred for the 'valid' split, not 'test' .*"
                                         r"python -m preprocess.topic_model infer .* --splits test"):
        task.load_dataset("test")
    topic_model_main(["infer", data, "--splits", "test"])
    task.load_dataset("test")
    # the test split binarized again with other documents (here valid's): its theta no longer fits
    for ext in ("bin", "idx"):
        shutil.copyfile(os.path.join(data, f"valid.src-tgt.src.{ext}"), os.path.join(data, f"test.src-tgt.src.{ext}"))
    with pytest.raises(ValueError, match=r"test.theta.npy was inferred for other documents than the binarized test "
                                         r"source .*--splits test"):
        task.load_dataset("test")
    # a record of an older version (no split, no documents): refused, naming the command
    record = os.path.join(data, "valid.theta.json")
    with open(record) as f:
        old = {k: v for k, v in json.load(f).items() if k not in ("split", "source_sha256")}
    with open(record, "w") as f:
        json.dump(old, f)
    with pytest.raises(ValueError, match=r"valid.theta.json names no split and documents .*--splits valid"):
        task.load_dataset("valid")


def test_topic_attention_share_is_n_over_n_plus_t_under_uniform_attention(ta_setup):
    """inspection/topics.py ``attention``: with every decoder self-attention query projection zeroed, each
    summary position t (1-based) attends uniformly to the n topics and its t visible summary positions
    (Fig. 3(b)), so its share on the prefix is n / (n + t) in every layer; the mean over positions is the
    reported ``uniform`` figure. Random weights give another share, and the model is left as it was."""
    from fairseq_sum_plugins.inspection.topics import topic_attention

    d, _, build = ta_setup
    model = build()
    src, lengths, prev = random_batch(d, bsz=2, tgt_len=5)
    target = torch.cat([prev[:, 1:], prev.new_full((2, 1), d.eos())], 1)
    target[1, 3:] = d.pad()  # a shorter summary: its padded positions are not counted
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev,
                            "theta": theta_for(2)}, "target": target}
    n = model.decoder.topic.n
    random_weights = topic_attention(model, [sample], pad=d.pad())
    hand = (sum(n / (n + t) for t in range(1, 6)) + sum(n / (n + t) for t in range(1, 4))) / 8
    # float32 mean
    assert random_weights["tokens"] == 8 and random_weights["uniform"] == approx32(hand, 1.0)
    with torch.no_grad():
        for layer in model.decoder.layers:
            inner = layer.self_attn.in_proj.out_features // 3
            layer.self_attn.in_proj.weight[:inner] = 0
            layer.self_attn.in_proj.bias[:inner] = 0
    uniform = topic_attention(model, [sample], pad=d.pad())
    # float32 softmax shares (<= 1) averaged: ulps of 1; random weights differ by more than that
    assert uniform["share"] == approx32([hand] * len(model.decoder.layers), 1.0)
    assert random_weights["share"] != approx32(uniform["share"], 1.0, MODEL_ULPS)
    assert "forward" not in vars(model.decoder.layers[0].self_attn)  # the wrapper is removed


def test_topic_attention_of_a_model_without_tema_is_refused_by_name(ta_setup):
    """A model without the Topic Assistant (no ``decoder.topic``) or without TEMA: a ValueError naming
    the flag, not an AttributeError."""
    from fairseq_sum_plugins.inspection.topics import topic_attention

    d, _, build = ta_setup
    for model in (build("t5_transformer_small"), build(ta_tema=False)):
        with pytest.raises(ValueError, match="--ta-tema"):
            topic_attention(model, [], pad=d.pad())


def test_phi_buffers_hold_no_subnormals_and_flushing_them_keeps_sia_and_tema():
    """A Phi with subnormal entries (slow products on x86) is kept without them; SIA's
    probabilities and TEMA's topic embeddings are the same as from the unflushed buffers."""
    from fairseq_sum_plugins.features.topic_assistant.layers import TopicAssistant

    g = torch.Generator().manual_seed(0)
    phi = torch.rand(40, K, generator=g)
    phi[torch.rand(40, K, generator=g) < 0.3] = 1e-40  # subnormal in float32
    phi[3] = 0.0  # an excluded symbol
    ta = TopicAssistant(phi.numpy(), n_topics=2)
    for name in ("phi_topics", "phi_unit"):
        assert not subnormal(getattr(ta, name)).any(), f"{name} holds subnormals"
    # the unflushed buffers, as TA eq. 5 and 8 define them
    rows = phi / phi.sum(1, keepdim=True).clamp_min(1e-30)
    unit = rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-30)
    cols = (phi / phi.sum(0, keepdim=True)).t()
    assert subnormal(unit).any(), "the test's Phi must hold subnormals"
    tokens = torch.randint(0, 40, (2, 9), generator=g)
    ref = TopicAssistant.sia_probs(unit[tokens], unit[tokens], 8)
    assert torch.equal(ta.sia_probs(ta.rows(tokens), ta.rows(tokens), 8), ref)
    embed = torch.randn(40, 16, generator=g)
    ids = torch.tensor([[0, 1], [5, 2]])
    assert torch.equal(ta.topic_embeddings(ids, embed), cols[ids] @ embed)
