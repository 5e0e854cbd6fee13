"""benchmarks/bench_log_softmax.py: the fused output-layer variants compute the unfused gradients."""
import importlib.util
import os

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load():
    spec = importlib.util.spec_from_file_location("bench_log_softmax",
                                                  os.path.join(ROOT, "benchmarks", "bench_log_softmax.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fused_variants_give_the_unfused_log_probs_and_gradients():
    """Same kernels: bitwise; in place: the log-sum-exp subtracted by hand, within float32 rounding of
    the largest logit (tests/tolerances.py)."""
    from tolerances import fp32_tol

    bench = load()
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(6, 8, generator=g, requires_grad=True), torch.randn(50, 8, generator=g, requires_grad=True)
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
    bench = load()
    with pytest.raises(SystemExit):
        bench.main(["--vocab", "0"])
    assert "--vocab 0: at least 1" in capsys.readouterr().err
