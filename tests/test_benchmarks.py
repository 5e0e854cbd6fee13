"""benchmarks/: bench_log_softmax.py's fused variants compute the unfused gradients; bench_train.py's
--ablate compile builds a compiled peer per arch (and of HF's T5) in the same run."""
import importlib.util
import os

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name):
    """A benchmark script of benchmarks/ as a module."""
    path = os.path.join(ROOT, "benchmarks", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
