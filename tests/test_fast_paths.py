"""The T5 cell's fast paths against their plain references (fp32, forward and backward), and the
benchmark's HF T5 peer built from the same config as the cell it is measured against."""
import json
from argparse import Namespace

import pytest
import torch
from helpers import build_model, load_script, make_dictionary
from tolerances import MODEL_ULPS, OP_ULPS, approx64, fp32_close, fp64_close

from fairseq.models import ARCH_CONFIG_REGISTRY
from fairseq_sum_plugins.modules.t5 import (
    RelativePositionBias, RMSNormFunction, T5LayerNorm, relative_position_bucket, rms_norm_reference,
)

torch.set_num_threads(1)


def test_rms_norm_function_matches_reference_forward_and_backward():
    g = torch.Generator().manual_seed(0)
    x = (3 * torch.randn(2, 5, 64, generator=g)).requires_grad_()
    w = (0.5 + torch.rand(64, generator=g)).requires_grad_()
    grad = torch.randn(2, 5, 64, generator=g)
    fast = RMSNormFunction.apply(x, w, 1e-6)
    ref = rms_norm_reference(x, w, 1e-6)
    # one normalisation in another order: ulps of the largest value (tests/tolerances.py)
    assert fp32_close(fast, ref, x, OP_ULPS)
    for a, b in zip(torch.autograd.grad(fast, (x, w), grad), torch.autograd.grad(ref, (x, w), grad)):
        assert fp32_close(a, b, ulps=OP_ULPS)


def test_rms_norm_function_gradcheck_float64():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, 8, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(8, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: RMSNormFunction.apply(a, b, 1e-6), (x, w))


def test_t5_layer_norm_takes_the_fast_path_on_cpu_fp32_only():
    norm = T5LayerNorm(8)
    x = torch.randn(2, 3, 8, requires_grad=True)
    assert type(norm(x).grad_fn).__name__ == "RMSNormFunctionBackward"
    x64 = x.detach().double()  # other dtypes: torch's rms_norm, the same function
    assert fp64_close(norm(x64), rms_norm_reference(x64, norm.weight, norm.eps), x64, OP_ULPS)
    norm.weight.requires_grad_(False)  # frozen weight: no weight gradient asked for, x's still right
    y = norm(x)
    assert fp32_close(torch.autograd.grad(y.sum(), x)[0],
                      torch.autograd.grad(rms_norm_reference(x, norm.weight, 1e-6).sum(),
                                          x)[0], ulps=OP_ULPS)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("buckets,max_distance", [(32, 128), (8, 5)])
def test_relative_bias_lookup_matches_bucket_function(bidirectional, buckets, max_distance):
    torch.manual_seed(0)
    bias = RelativePositionBias(4, buckets, max_distance, bidirectional, d_model=16)
    q_pos = torch.tensor([[0, 3, 150, 400], [7, 8, 9, 10]])  # distances far beyond max_distance too
    k_pos = torch.tensor([[0, 1, 2, 300, 500], [0, 2, 4, 6, 8]])
    rel = k_pos.unsqueeze(-2) - q_pos.unsqueeze(-1)
    table = bias.relative_attention_bias
    expected = table(relative_position_bucket(rel, bidirectional, buckets, max_distance)).permute(0, 3, 1, 2)
    got = bias(q_pos, k_pos)
    assert torch.equal(got, expected)
    grad = torch.randn_like(got)
    # a bucket's gradient sums the grad entries of every pair in it, in another order
    assert fp32_close(torch.autograd.grad(got, table.weight, grad)[0],
                      torch.autograd.grad(expected, table.weight,
                                          grad)[0], grad.abs().sum(), OP_ULPS)
    one_step = bias(torch.tensor([9]), torch.arange(10))  # an incremental decoding step: the last row
    assert torch.equal(one_step, bias(torch.arange(10), torch.arange(10))[:, :, -1:])  # a lookup
    assert "bucket_of_distance" not in bias.state_dict()  # derived, not a checkpoint entry


def load_bench(name="bench_train"):
    return load_script("benchmarks", name + ".py")


def t5_small_args(**overrides):
    args = Namespace(**overrides)
    ARCH_CONFIG_REGISTRY["t5_small"](args)
    return args


def test_bench_hf_t5_peer_has_the_cells_config():
    pytest.importorskip("transformers")
    from transformers import T5ForConditionalGeneration

    bench = load_bench()
    d = make_dictionary()
    dims = dict(encoder_embed_dim=32, decoder_embed_dim=32, encoder_ffn_embed_dim=48, decoder_ffn_embed_dim=48,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_layers=2, decoder_layers=3,
                t5_relative_buckets=16, t5_relative_max_distance=20)
    ours, _ = build_model("t5_small", d, **dims)
    config, differs = bench.hf_t5_config(t5_small_args(**dims), d)
    assert differs == []
    hf = T5ForConditionalGeneration(config)
    assert sum(p.numel() for p in hf.parameters()) == sum(p.numel() for p in ours.parameters())
    assert (config.vocab_size, config.pad_token_id, config.eos_token_id) == (len(d), d.pad(), d.eos())
    assert config.decoder_start_token_id == d.pad()  # T5's decoder starts from pad, as the cell does
    assert (config.num_layers, config.num_decoder_layers, config.d_kv, config.dropout_rate) == (2, 3, 8, 0.1)
    assert hf.config._attn_implementation == "eager"


def test_bench_hf_t5_config_names_what_hf_lacks():
    pytest.importorskip("transformers")
    bench = load_bench()
    d = make_dictionary()
    _, differs = bench.hf_t5_config(t5_small_args(attention_dropout=0.0, t5_cross_position_bias=True), d)
    assert differs == ["--attention-dropout 0.0", "cross-attention position table"]


def test_bench_rejects_unknown_peer(monkeypatch, capsys):
    bench = load_bench()
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--peers", "transformer,hf_t6"])
    with pytest.raises(SystemExit):
        bench.parse_args()
    assert "--peers: unknown peer(s) ['hf_t6']" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--peers", ","])
    with pytest.raises(SystemExit):
        bench.parse_args()
    assert "--peers: name at least one of transformer, hf_t5" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--profile-steps", "0"])
    with pytest.raises(SystemExit):
        bench.parse_args()
    assert "--profile-steps 0: at least 1" in capsys.readouterr().err


def test_bench_one_transformer_baseline_per_dims(monkeypatch):
    bench = load_bench()
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--archs", "t5_transformer_small", "tp_transformer_small",
                                     "t5_small", "t5_small_gated"])
    a = bench.parse_args()
    groups = bench.baseline_groups(a.archs, a)
    assert list(groups.values()) == ["t5_transformer_small", "t5_small"]
    small, t5 = (dict(zip(bench.SHARED_DIMS, dims)) for dims in groups)
    assert (small["encoder_embed_dim"], small["encoder_layers"], small["attention_dropout"]) == (256, 3, 0.0)
    assert (t5["encoder_embed_dim"], t5["encoder_layers"], t5["attention_dropout"]) == (512, 6, 0.1)
    small, t5 = groups

    def row(arch, peer, dims, wps):
        return dict(arch=arch, peer=peer, dims=dims, train_wps=wps, gen_wps=None, peak_gib=1.0, ops=100)

    rows = [row("t5_transformer_small", "transformer", small, 100.0), row("t5_small", "transformer", t5, 10.0),
            row("t5_transformer_small", None, small, 95.0), row("t5_small", None, t5, 12.0),
            row("t5_small", "hf_t5", t5, 8.0), row("t5_small_gated", None, t5, 9.0)]
    ratios = {arch: {peer: x["train_ratio"] for peer, x in peers.items()}
              for arch, peers in bench.peer_ratios(rows).items()}
    assert ratios == {"t5_transformer_small": {"transformer": approx64(0.95)},
                      "t5_small": {"transformer": approx64(1.2), "hf_t5": approx64(1.5)},
                      "t5_small_gated": {"transformer": approx64(0.9)}}


def test_bench_gate_ratios_and_sparsity_range(monkeypatch, capsys):
    gate = load_bench("bench_gate")
    rows = [dict(sparsity=0.0, gen_wps=10.0, round_wps=[10.0, 5.0, 20.0]),
            dict(sparsity=50.0, gen_wps=8.0, round_wps=[8.0, 8.0, 8.0]),
            dict(sparsity=50.0, gen_wps=15.0, round_wps=[15.0, 12.0, 16.0])]
    assert gate.generation_ratios(rows) == dict(sparsity=50.0, pruned_vs_unpruned=1.5, pruned_vs_masked=1.875,
                                                masked_vs_unpruned=0.8, pruned_vs_unpruned_median=1.5,
                                                pruned_vs_masked_median=1.875)
    for bad in ("0", "1", "1.5", "-0.2"):
        monkeypatch.setattr("sys.argv", ["bench_gate.py", "--target-sparsity", bad])
        with pytest.raises(SystemExit):
            gate.parse_args()
        assert f"--target-sparsity {float(bad)}: a fraction of the source positions, in (0, 1)" in capsys.readouterr().err


def test_bench_etads_runs_at_small_dims(tmp_path, monkeypatch):
    etads = load_bench("bench_etads")
    monkeypatch.setattr(etads, "cpu_peak", lambda name, argv: 0.5)  # the fresh-process RSS probe, not tested here
    out = tmp_path / "etads.json"
    etads.main(["--threads", "1", "--src-len", "12", "--tgt-len", "6", "--batch-size", "2", "--dict-size", "200",
                "--steps", "2", "--rounds", "1", "--warmup-steps", "1", "--json", str(out), "--model-args",
                "--encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --encoder-layers 1 --encoder-attention-heads 2"])
    result = json.loads(out.read_text())
    assert set(result["ratios"]) == {"etads_baseline", "etads_base"}
    for arch, peers in result["ratios"].items():
        assert list(peers) == ["transformer"] and peers["transformer"]["train_ratio"] > 0
        assert peers["transformer"]["mem_ratio"] == 1.0
    assert [r["model"] for r in result["results"]] == ["transformer", "etads_baseline", "etads_base"]


@pytest.mark.parametrize("mask_kind", ["none", "padding", "bias", "bias+padding", "all_masked"])
@pytest.mark.parametrize("self_attention", [True, False])
def test_one_query_attention_equals_sdpa(mask_kind, self_attention):
    """An incremental step (one query) through the one-query path equals SDPA's output (fp32)."""
    from fairseq_sum_plugins.modules.attention import MultiheadAttention

    torch.manual_seed(0)
    attn = MultiheadAttention(16, 4, dropout=0.1, self_attention=self_attention).eval()
    x, mem = torch.randn(3, 1, 16), torch.randn(3, 7, 16)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[0, :2] = True
    if mask_kind == "all_masked":
        pad[1] = True  # a source of padding only: SDPA gives 0, so must the path
    bias = torch.randn(1, 4, 1, 7) if "bias" in mask_kind else None
    kpm = pad if mask_kind in ("padding", "bias+padding", "all_masked") else None
    if self_attention:  # attend over the 7 tokens + the step itself through the cache
        state = {}
        attn(mem, key_padding_mask=None, incremental_state=state, causal=True)
        kpm = None if kpm is None else torch.cat([kpm, torch.zeros(3, 1, dtype=torch.bool)], 1)
        bias = None if bias is None else torch.cat([bias, torch.zeros(1, 4, 1, 1)], -1)
        cache = {k: {n: t.clone() for n, t in v.items()} for k, v in state.items()}
    outs = []
    for fast in (True, False):
        attn.one_query_path = fast
        st = {k: dict(v) for k, v in cache.items()} if self_attention else None
        outs.append(attn(x, mem, key_padding_mask=kpm, attn_bias=bias, incremental_state=st)[0])
    assert torch.isfinite(outs[0]).all()
    assert fp32_close(outs[0], outs[1], (bias.abs().max() + 1) if bias is not None else 1.0,
                      OP_ULPS)


def test_bench_refuses_half_precision_on_cpu_and_compile_without_warmup(monkeypatch, capsys):
    bench = load_bench()
    for argv, message in ((["--device", "cpu", "--bf16"], "--bf16 needs --device cuda"),
                          (["--device", "cpu", "--fp16"], "--fp16 needs --device cuda"),
                          (["--fp16", "--bf16"], "--fp16 and --bf16: choose one"),
                          (["--compile", "--warmup-steps", "1"],
                           "--compile --warmup-steps 1: at least 2"),
                          (["--steps", "0"], "--steps 0: at least 1"),
                          (["--gen-batches", "-1"], "--gen-batches -1: at least 0")):
        monkeypatch.setattr("sys.argv", ["bench_train.py", *argv])
        with pytest.raises(SystemExit):
            bench.parse_args()
        assert message in capsys.readouterr().err, argv


def _beam_search(model, d, src, lengths, beam=3):
    from fairseq.sequence_generator import SequenceGenerator

    gen = SequenceGenerator([model], d, beam_size=beam, max_len_b=7, min_len=2)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths},
              "id": torch.arange(src.size(0))}
    with torch.no_grad():
        return gen.generate([model], sample)


@pytest.mark.parametrize("arch,extra", [("t5_small", {}), ("transformer_gated_small", {}),
                                        ("t5_transformer_small", {"pointer_generator": True}),
                                        ("etads_base", {})])
def test_beam_shared_cross_attention_keys_give_the_same_search(arch, extra):
    """Beam search with cross-attention keys/values computed once per source (shared by its beams)
    finds the hypotheses, scores and attention of the per-row cache; the cache holds one row per
    source (not with the pointer-generator, whose attention weights need the per-row path)."""
    from helpers import random_batch
    from fairseq_sum_plugins.modules.attention import MultiheadAttention

    torch.manual_seed(0)
    d = make_dictionary()
    model, _ = build_model(arch, d, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                           encoder_layers=2, encoder_attention_heads=4, decoder_layers=2,
                           dropout=0.0, **extra)
    model.eval()
    src, lengths, _ = random_batch(d, bsz=3, src_len=10)
    results = []
    for share in (True, False):
        for m in model.modules():
            if isinstance(m, MultiheadAttention):
                m.share_beam_keys = share
        results.append(_beam_search(model, d, src, lengths))
    for shared, per_row in zip(*results):
        for a, b in zip(shared, per_row):
            assert torch.equal(a["tokens"], b["tokens"])
            # other batch layouts of one model: log-probs within ulps of their size
            assert fp32_close(a["positional_scores"], b["positional_scores"], ulps=MODEL_ULPS)
    # the cache itself: one key row per source after the first step (the copy mechanism reads the
    # last layer's attention weights: that layer keeps a row per hypothesis)
    for m in model.modules():
        if isinstance(m, MultiheadAttention):
            m.share_beam_keys = True
    state = {}
    with torch.no_grad():
        enc = model.encoder(src.repeat_interleave(3, 0), lengths.repeat_interleave(3, 0))
        model.decoder(torch.full((9, 1), d.eos()), enc, incremental_state=state)
    rows = [layer.cross_attn._get_input_buffer(state)["prev_key"].size(0)
            for layer in model.decoder.layers]
    assert rows == ([3, 9] if extra else [3, 3])
    # ETADS's saliency gate (ETADS eq. 9): W_s K shared like the keys
    gates = [m._get_input_buffer(state)["gate_key"].size(0) for m in model.decoder.modules()
             if type(m).__name__ == "SaliencyGate"]
    assert gates == ([3, 3] if arch == "etads_base" else [])


def test_bench_flop_count_of_a_matmul_step_by_hand():
    """One forward + backward of ``x @ W`` (M x K times K x N) is 2MKN FLOPs forward and 4MKN backward
    (the gradients of ``x`` and ``W``): count_flops reports 6MKN / 1e9."""
    bench = load_bench()
    x, w = torch.randn(8, 16, requires_grad=True), torch.randn(16, 32, requires_grad=True)
    m = dict(cuda=False, forward_backward=lambda batch: (x @ w).sum().backward(), zero_grad=lambda: None)
    assert bench.count_flops(m, {}) == approx64(6 * 8 * 16 * 32 / 1e9)


def test_bench_flop_count_of_sdpas_cpu_flash_kernel_equals_its_matmuls():
    """SDPA on CPU without dropout or a bias takes its flash kernel, which torch's FlopCounterMode
    did not count (0 FLOPs, where the same attention by matmuls counts its GEMMs): count_flops
    counts it by torch's formula for the CUDA flash kernels, 4BHS^2D forward and 10BHS^2D backward
    (the kernel recomputes Q K^T, then dV, dP, dQ, dK), against 4 + 8 for the matmuls."""
    bench = load_bench()
    b, h, s, d = 2, 3, 5, 4
    q, k, v = (torch.randn(b, h, s, d, requires_grad=True) for _ in range(3))

    def by_matmuls(batch):
        (torch.softmax(q @ k.transpose(-1, -2), -1) @ v).sum().backward()

    def by_sdpa(batch):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=1.0).sum().backward()

    with torch.profiler.profile() as prof:  # the kernel this test is about ran
        by_sdpa(None)
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in {e.name for e in prof.events()}
    flops = [bench.count_flops(dict(cuda=False, forward_backward=f, zero_grad=lambda: None), {})
             for f in (by_matmuls, by_sdpa)]
    assert flops == [approx64(12 * b * h * s * s * d / 1e9), approx64(14 * b * h * s * s * d / 1e9)]


def test_bench_packed_mask_ablation_switches_every_dropping_module():
    """--ablate packed_mask: the packed mask is the default (every Drops module draws it), and the
    peer's every Drops module draws torch's mask instead (modules/dropout.py)."""
    from helpers import build_model
    from fairseq_sum_plugins.modules.dropout import Drops

    bench = load_bench()
    model, _ = build_model("t5_small", encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=1,
                           encoder_attention_heads=4, decoder_layers=1)
    drops = [m for m in model.modules() if isinstance(m, Drops)]
    assert drops and all(m.packed_mask for m in drops) and bench.FAST_PATHS["packed_mask"]() is True
    bench.FAST_PATHS["packed_mask"](model)
    assert not any(m.packed_mask for m in drops)


def test_bench_ablations_switch_the_encoder_copies_and_the_criterions_loss_gradient():
    """--ablate encoder_copies: the peer's encoder gathers at every reorder; --ablate fused_loss:
    the peer's criterion (not its model) takes fairseq's loss gradient."""
    from argparse import Namespace

    from helpers import build_model
    from fairseq_sum_plugins.criterions.summarization_loss import SummarizationLoss

    bench = load_bench()
    model, d = build_model("t5_transformer_small", encoder_layers=1, decoder_layers=1)
    assert bench.FAST_PATHS["encoder_copies"]() is True and model.encoder.keep_beam_copies
    bench.ablated({"model": model}, "encoder_copies")
    assert not model.encoder.keep_beam_copies
    crit = SummarizationLoss(Namespace(target_dictionary=d), False, 0.1)
    assert bench.FAST_PATHS["fused_loss"]() is True and crit.fused_backward
    bench.ablated({"model": model, "criterion": crit}, "fused_loss")
    assert not crit.fused_backward


@pytest.mark.parametrize("arch", ["etads_base", "t5_small"])
def test_incremental_steps_copy_no_cached_key_or_value(arch):
    """Cross-attention keys/values (and ETADS's gate keys W_s K) are cached contiguous, so a later
    decoding step reads them in place: no copy of a source-sized tensor in the step (a head-split
    view of the fused projection made every step's batched matmul copy them, half of ETADS's
    decoding time). The step's output is the full forward's last position, as before."""
    d = make_dictionary()
    model, _ = build_model(arch, d, encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=1,
                           decoder_layers=2, encoder_attention_heads=4)
    model.eval()
    n, s = 4, 13  # a source length no other dimension has
    src = torch.randint(4, len(d), (n, s))
    prev = torch.randint(4, len(d), (n, 3))
    enc = model.encoder(src, torch.full((n,), s))
    state = {}
    with torch.no_grad():
        for t in range(2):
            model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    record_shapes=True) as prof:
            step, _ = model.decoder(prev, encoder_out=enc, incremental_state=state)
        full, _ = model.decoder(prev, encoder_out=enc)
    copies = [e.input_shapes for e in prof.events() if e.name == "aten::copy_"
              and e.input_shapes and s in e.input_shapes[0]]
    assert copies == []
    assert fp32_close(step[:, -1], full[:, -1], full, MODEL_ULPS)


def test_encoder_out_reorder_within_copies_keeps_the_tensors_and_gathers_otherwise():
    """A reorder giving every row a copy of the row it already copies (beam search among a
    document's beams) returns the same view; one that moves another document's copy into a row,
    or removes rows, gathers (the reference's values, checked by hand)."""
    from fairseq_sum_plugins.modules.encoder_out import EncoderOut

    enc = torch.arange(2 * 3 * 4, dtype=torch.float).view(2, 3, 4)
    view = EncoderOut(enc=enc, padding_mask=torch.zeros(2, 3, dtype=torch.bool),
                      src_tokens=torch.tensor([[5, 6, 2], [7, 8, 2]]),
                      state={"gates": torch.tensor([[0.5], [0.25]])})
    beams = view.reorder(torch.tensor([0, 0, 1, 1]))  # the expansion: beam 2
    assert beams.rows.tolist() == [0, 0, 1, 1] and torch.equal(beams.enc[1], enc[0])
    same = beams.reorder(torch.tensor([1, 0, 3, 3]))  # hypotheses among each document's beams
    assert same is beams
    moved = beams.reorder(torch.tensor([2, 0, 3, 1]))  # row 0 now copies document 1
    assert moved is not beams and moved.rows.tolist() == [1, 0, 1, 0]
    assert torch.equal(moved.enc, enc[[1, 0, 1, 0]])
    assert moved.state["gates"].flatten().tolist() == [0.25, 0.5, 0.25, 0.5]
    shrunk = beams.reorder(torch.tensor([2, 3]))  # document 0 finished
    assert shrunk.rows.tolist() == [1, 1] and torch.equal(shrunk.src_tokens[0], view.src_tokens[1])
    for new_order in ([1, 0, 3, 3], [2, 0, 3, 1], [2, 3]):
        ref = beams.reorder_copy(torch.tensor(new_order))
        fast = beams.reorder(torch.tensor(new_order))
        assert torch.equal(ref.enc, fast.enc) and torch.equal(ref.rows, fast.rows)
    # fairseq's dict layout (BART) carries the rows too
    back = EncoderOut.of(beams.into_fairseq({}))
    assert back.rows.tolist() == [0, 0, 1, 1] and back.reorder(torch.tensor([1, 1, 2, 3])) is not None


@pytest.mark.parametrize("arch,extra", [("t5_small", {}), ("transformer_gated_small", {}),
                                        ("t5_transformer_small", {"pointer_generator": True})])
def test_beam_search_without_encoder_out_copies_finds_the_same_hypotheses(arch, extra, monkeypatch):
    """Beam search whose encoder-output reorders within a document's beams keep the tensors finds
    the hypotheses and scores, bit for bit, of the reorder that gathers every step (documents of
    several lengths, so the batch also shrinks)."""
    from helpers import random_batch
    from fairseq_sum_plugins.modules.encoder_out import EncoderOut

    torch.manual_seed(0)
    d = make_dictionary()
    model, _ = build_model(arch, d, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                           encoder_layers=2, encoder_attention_heads=4, decoder_layers=2,
                           dropout=0.0, **extra)
    model.eval()
    src, lengths, _ = random_batch(d, bsz=4, src_len=10)
    kept = []
    fast = EncoderOut.reorder
    monkeypatch.setattr(EncoderOut, "reorder",
                        lambda self, o: kept.append(fast(self, o) is self) or fast(self, o))
    results = [_beam_search(model, d, src, lengths)]
    monkeypatch.setattr(EncoderOut, "reorder", EncoderOut.reorder_copy)
    results.append(_beam_search(model, d, src, lengths))
    assert any(kept) and not all(kept)  # some steps kept the tensors, the expansion gathered
    for a_hyps, b_hyps in zip(*results):
        for a, b in zip(a_hyps, b_hyps):
            assert torch.equal(a["tokens"], b["tokens"])
            assert torch.equal(a["positional_scores"], b["positional_scores"])
