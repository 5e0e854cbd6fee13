"""benchmarks/: bench_log_softmax.py's fused variants compute the unfused gradients; bench_train.py's
--ablate compile builds a compiled peer per arch (and of HF's T5) in the same run; profile_breakdown.py
charges each profiled op to its kind of work and --profile names each pair's GEMM ceiling."""
import pytest
import torch
from helpers import load_script


def load(name):
    """A benchmark script of benchmarks/ as a module."""
    return load_script("benchmarks", f"{name}.py")


def test_fused_variants_give_the_unfused_log_probs_and_gradients():
    """Same kernels: bitwise; in place: the log-sum-exp subtracted by hand, within float32 rounding of
    the largest logit (tests/tolerances.py)."""
    from tolerances import fp32_tol

    bench = load("bench_log_softmax")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 8, generator=g, requires_grad=True)
    w = torch.randn(50, 8, generator=g, requires_grad=True)
    target = torch.randint(0, 50, (6,), generator=g)
    out = {}
    for way in bench.WAYS:
        bench.step(way, x, w, target)
        out[way] = (bench.WAYS[way](x, w).detach(), x.grad.clone(), w.grad.clone())
    logits = x.detach() @ w.detach().t()
    by_hand = logits - logits.exp().sum(-1, keepdim=True).log()
    tol = fp32_tol(logits)
    for way, (lp, gx, gw) in out.items():
        assert torch.allclose(lp, by_hand, rtol=0, atol=tol), way
    for a, b in zip(out["fused_same_kernels"], out["unfused"]):
        assert torch.equal(a, b)
    for a, b in zip(out["fused_in_place"][1:], out["unfused"][1:]):
        assert torch.allclose(a, b, rtol=0, atol=fp32_tol(b))


def test_bad_sizes_are_refused_by_flag(capsys):
    bench = load("bench_log_softmax")
    with pytest.raises(SystemExit):
        bench.main(["--vocab", "0"])
    assert "--vocab 0: at least 1" in capsys.readouterr().err


def test_ablate_compile_needs_a_warm_up_step_to_compile_in(monkeypatch, capsys):
    bench = load("bench_train")
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--ablate", "compile", "--warmup-steps", "0"])
    with pytest.raises(SystemExit):
        bench.parse_args()
    assert "--ablate compile --warmup-steps 0: at least 1" in capsys.readouterr().err
    argv = ["bench_train.py", "--ablate", "compile,packed_mask", "--warmup-steps", "1"]
    monkeypatch.setattr("sys.argv", argv)
    assert bench.parse_args().ablate == ["compile", "packed_mask"]


def test_the_compile_switch_compiles_every_layer_in_place():
    """The switch is off by default and compiles each encoder and decoder layer of the model it is given
    (the model's own --compile path: modules/compiled.py), leaving names and parameters unchanged."""
    from helpers import build_model

    bench = load("bench_train")
    model, _ = build_model("t5_small", encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2,
                           encoder_attention_heads=4, decoder_layers=2)
    names = [n for n, _ in model.named_parameters()]
    assert bench.FAST_PATHS["compile"]() is False
    bench.FAST_PATHS["compile"](model)
    layers = list(model.encoder.layers) + list(model.decoder.layers)
    assert all(layer._compiled_call_impl is not None for layer in layers)
    assert [n for n, _ in model.named_parameters()] == names


def test_breakdown_charges_each_op_to_its_kind_of_work():
    """A profiled matmul, softmax, mask draw, backward and Adam step: each op's self time lands in its
    kind (the optimizer's by the range torch's optimizers record), and the kinds sum to every ATen
    op's self time, the rest of the wall time being 'other'."""
    pb = load("profile_breakdown")
    w = torch.nn.Parameter(torch.randn(64, 64))
    opt = torch.optim.Adam([w])
    x = torch.randn(32, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            probs = (x @ w).softmax(-1)
            mask = torch.empty_like(probs).bernoulli_(0.5)
            (probs * mask).sum().backward()
            opt.step()
    aten = [e for e in prof.events() if e.name.startswith("aten::")]
    names = {}
    for e in aten:
        names.setdefault(pb.kind_of(e), set()).add(e.name)
    assert "aten::mm" in names["GEMM"]
    assert {"aten::_softmax", "aten::_softmax_backward_data"} <= names["softmax"]
    assert "aten::bernoulli_" in names["dropout masks"]
    assert "aten::addcdiv_" in names["optimizer"]  # Adam's update, inside Optimizer.step
    assert not any("aten::addcdiv_" in v for k, v in names.items() if k != "optimizer")
    wall = 1e6
    ms = pb.breakdown(prof.events(), 2, wall_ms=wall)
    by_hand = sum(e.self_cpu_time_total for e in aten) / 1e3 / 2
    assert sum(ms[k] for k in pb.KINDS) == pytest.approx(by_hand)
    assert ms[pb.OTHER] == pytest.approx(wall - by_hand)
    with pytest.raises(ValueError, match="steps 0: at least 1"):
        pb.breakdown(prof.events(), 0)


def test_gemm_ceiling_is_the_peer_wall_over_the_models_gemm_time():
    pb = load("profile_breakdown")
    assert pb.gemm_ceiling({"GEMM": 80.0, "memory": 5.0}, 100.0) == 1.25
    assert pb.gemm_ceiling({"GEMM": 0.0}, 100.0) is None
    assert pb.gemm_ceiling(None, 100.0) is None


def test_bench_train_profile_tables_name_each_pairs_ceiling():
    """--profile's section: one table per arch (its column and its peers'), shares of the profiled
    pass's wall time, the timed rounds' wall beside it, and per peer the measured ratio beside the
    GEMM ceiling (peer's profiled wall / arch's GEMM), also written into the ratios."""
    bench = load("bench_train")

    def row(model, arch, peer, gemm, wall):
        bd = dict.fromkeys(("optimizer", "memory"), 1.0) | {"GEMM": gemm}
        return dict(model=model, arch=arch, peer=peer, dims=(1,), breakdown_ms=bd, profiled_ms=wall,
                    wall_ms=wall + 10, gen_breakdown_ms=None, gen_profiled_ms=None, gen_wall_ms=None)

    rows = [row("transformer", "t5_small", "transformer", 70.0, 100.0),
            row("t5_small", "t5_small", None, 80.0, 96.0),
            row("hf_t5 (t5_small)", "t5_small", "hf_t5", 80.0, 104.0)]
    ratios = {"t5_small": {"transformer": dict(train_ratio=1.04), "hf_t5": dict(train_ratio=0.92)}}
    text = "\n".join(bench.where_the_time_goes(rows, ratios, generate=False))
    assert "| kind of work | t5_small | transformer | hf_t5 (t5_small) |" in text
    assert "| GEMM | 80.0 (83%) | 70.0 (70%) | 80.0 (77%) |" in text  # of the profiled pass
    assert "| other (outside ATen ops) |" not in text  # no wall given to the breakdown by hand
    assert "| wall, profiled pass | 96.0 | 100.0 | 104.0 |" in text
    assert "| wall, timed rounds | 106.0 | 110.0 | 114.0 |" in text
    assert "t5_small over hf_t5 (t5_small): measured 0.92x, GEMM ceiling 1.30x" in text
    assert ratios["t5_small"]["transformer"]["gemm_ceiling"] == pytest.approx(100 / 80)
    assert ratios["t5_small"]["hf_t5"]["gemm_ceiling"] == pytest.approx(104 / 80)
    # a beam search that failed for the arch (fp16, no EOS by max_len) but not for a peer: the
    # peer's column is shown, and no ceiling is claimed for the pair
    rows[0].update(gen_breakdown_ms={"GEMM": 5.0}, gen_profiled_ms=9.0, gen_wall_ms=9.0)
    ratios["t5_small"]["transformer"]["gen_ratio"] = None
    text = "\n".join(bench.where_the_time_goes(rows, ratios, generate=True))
    assert "| kind of work | transformer |" in text and "gen_gemm_ceiling" not in ratios["t5_small"]["transformer"]


def test_generation_ratios_carry_an_interval_over_the_timed_batches():
    """Each generation ratio has its paired interval over the batches every model decoded in turn
    (as training's over the rounds); a model that timed no batch has none."""
    bench = load("bench_train")

    def row(arch, peer, gen_rounds):
        words = sum(w for _, w in gen_rounds)
        return dict(arch=arch, peer=peer, dims=[256], train_wps=100.0, rounds=[], peak_gib=1.0,
                    ops=10, gflops=1.0, gen_rounds=gen_rounds,
                    gen_wps=words / sum(s for s, _ in gen_rounds) if gen_rounds else None)

    peer = [(2.0, 100), (4.0, 100), (3.0, 100)]
    rows = [row("transformer", "transformer", peer),
            row("cell", None, [(s / 1.5, w) for s, w in peer]),
            row("lazy", None, [(2.0, 100), (2.0, 100), (6.0, 100)]),
            row("failed", None, [])]
    ratios = bench.peer_ratios(rows)
    assert ratios["cell"]["transformer"]["gen_ratio"] == pytest.approx(1.5)
    assert ratios["cell"]["transformer"]["gen_interval"] == pytest.approx((1.5, 1.5))
    lo, hi = ratios["lazy"]["transformer"]["gen_interval"]
    assert lo < ratios["lazy"]["transformer"]["gen_ratio"] < hi
    assert ratios["failed"]["transformer"]["gen_interval"] is None
    assert bench.fmt_interval(None, None) == "-"


def test_round_interval_is_a_paired_bootstrap_of_the_ratio_of_summed_rates():
    """Rounds where the arch runs at exactly 1.5x its peer's rate give [1.5, 1.5] whatever each
    round's load; a round's load is shared by both (paired), so a slow round moves neither alone.
    Unequal per-round ratios give an interval around the summed ratio, inside their extremes."""
    bench = load("bench_train")
    peer = [(2.0, 100), (4.0, 100), (3.0, 100)]  # 50, 25, 33 words/s: the load moves
    arch = [(s / 1.5, w) for s, w in peer]
    lo, hi = bench.round_interval(arch, peer)
    assert lo == pytest.approx(1.5) and hi == pytest.approx(1.5)
    arch = [(2.0, 100), (4.0, 100), (2.0, 100)]  # per round 1.0, 1.0, 1.5 of the peer's rate
    lo, hi = bench.round_interval(arch, peer)
    summed = (300 / 8.0) / (300 / 9.0)  # the table's ratio: 1.125
    assert 1.0 <= lo < summed < hi <= 1.5
    assert bench.round_interval(arch[:1], peer[:1]) is None  # one round: no spread to measure
    assert bench.round_interval(arch[:2], peer) is None  # a model that stopped part way
    assert bench.fmt_interval(1.125, (1.0, 1.5)) == "1.12x [1.00, 1.50]"


def test_over_gives_each_arch_over_the_named_one_with_its_flop_ceiling(monkeypatch, capsys):
    """--over ARCH: every other arch of ARCH's dims (not the peers, not an arch of other dims in
    the same run) over ARCH, measured in the same rounds, with the FLOP ceiling 1 / (FLOPs ratio)
    and the rate per FLOP; an ARCH not in --archs is refused."""
    bench = load("bench_train")

    def row(arch, peer, seconds, gflops, dims=(256, 4)):
        return dict(arch=arch, peer=peer, train_wps=200 / sum(seconds), gflops=gflops,
                    rounds=[(s, 100) for s in seconds], dims=list(dims))

    rows = [row("cell", None, [1.0, 1.0], 50.0), row("cell", "transformer", [0.5, 0.5], 40.0),
            row("tpt", None, [1.25, 1.25], 52.0), row("etads", None, [3.0, 3.0], 300.0, (512, 4))]
    over = bench.over_ratios(rows, "cell")
    assert list(over) == ["tpt"]
    x = over["tpt"]
    assert x["train_ratio"] == pytest.approx(0.8) and x["train_interval"] == pytest.approx((0.8, 0.8))
    assert x["flops_ratio"] == pytest.approx(1.04) and x["flop_ceiling"] == pytest.approx(1 / 1.04)
    assert x["per_flop"] == pytest.approx(0.8 * 1.04)
    assert bench.over_ratios(rows, None) == {}
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--archs", "t5_small", "--over", "t5_base"])
    with pytest.raises(SystemExit):
        bench.parse_args()
    # an ARCH with no other arch of its dims in the run stops before any work, naming the flag
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--archs", "t5_small", "etads_base",
                                     "--over", "t5_small"])
    with pytest.raises(SystemExit, match="--over t5_small: no other arch of --archs has its dims"):
        bench.check_over(bench.parse_args())
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--archs", "t5_transformer_small",
                                     "tp_transformer_small", "--over", "t5_transformer_small"])
    bench.check_over(bench.parse_args())  # TPT-d has the cell's dims
    assert "--over t5_base: not one of --archs (t5_small)" in capsys.readouterr().err


def test_focus_attention_bench_times_three_ways_that_agree(tmp_path, capsys):
    """bench_focus_attention.py: at each focus, FocusAttention's output and gradients within
    float32 rounding of the reference (relative to each tensor's largest entry), and the saliency
    gate's GatedAttention likewise; a ratio and an interval per way, the JSON written; bad sizes
    and a JSON path in a missing folder refused by flag before any work."""
    import json

    from tolerances import EPS32, OP_ULPS

    bench = load("bench_focus_attention")
    out = tmp_path / "f.json"
    results = bench.main(["--batch-size", "2", "--heads", "2", "--src-len", "12", "--head-dim", "4",
                          "--tgt-len", "5", "--rounds", "2", "--steps", "1", "--json", str(out)])
    assert set(results) == {"broad", "narrow", "saliency"}
    for case, rows in results.items():
        fast = "gated_attention" if case == "saliency" else "focus_attention"
        assert rows[fast]["max_rel_diff"] <= OP_ULPS * EPS32
        assert rows["reference"]["vs_reference"] == 1.0
        assert all(r["ms"] > 0 and r["interval"] is not None for r in rows.values())
    written = json.loads(out.read_text())["results"]
    assert written["narrow"]["no_bias"]["max_rel_diff"] is None
    assert written["saliency"]["no_gate"]["max_rel_diff"] is None
    capsys.readouterr()
    for argv, message in ((["--heads", "0"], "--heads 0: at least 1"),
                          (["--tgt-len", "0"], "--tgt-len 0: at least 1"),
                          (["--rounds", "-1"], "--rounds -1: at least 1"),
                          (["--json", str(tmp_path / "no" / "f.json")], "its folder does not exist"),
                          (["--json", str(tmp_path)], "is a folder")):
        with pytest.raises(SystemExit):
            bench.main(argv)
        assert message in capsys.readouterr().err
