"""Why the suite's float comparisons allow what they allow.

float32 keeps 24 significant bits: one rounding of ``x`` moves it by at most
``EPS32 / 2 * |x|`` (``EPS32 = 2**-23``). Two float32 computations of the same function that sum
in another order differ by rounding only: another kernel path of ATen
(``ATEN_CPU_CAPABILITY=default|avx2|avx512`` picks its scalar, AVX2 or AVX-512 code; the vector
width changes how sums are split and reassociated), another library (Hugging Face's eager T5
against this plugin's SDPA), a fused against an unfused kernel, a batch against one row (other
blockings). That rounding is a few units of the last place (ulps) **of the largest magnitude the
computation passes through**, not of its result: a log-softmax of logits of size 25 loses the
digits of 25 (it subtracts the log-sum-exp, of that size), however small the log-probability it
returns. So a tolerance between two float32 computations is relative:

    fp32_tol(magnitude, ulps) = ulps * EPS32 * max(1, magnitude)

``ulps`` covers the depth of the computation (rounding errors add up through layers) with headroom
over what was measured on the three kernel paths of an AVX-512 CPU; a real error (a wrong scale, a
missing bias, a dropped position) moves the results by 1e-3 or more, far above it.

The other comparisons of the suite, and the rule for each (tests/test_tolerances.py fails on a
numeric tolerance literal with neither a name from here nor an inline ``# tol: why``):

* bit-equal by construction (the same kernels on the same inputs: a lookup, a copy, a
  recomputation, a causal prefix): ``==`` / ``torch.equal``, no tolerance;
* float64 against a hand computation in another order: ``fp64_tol`` / ``approx64`` (F64_ULPS);
* a float32 result against float64 by hand: ``fp32_tol`` / ``approx32`` / ``fp32_close``;
* bfloat16 autocast: ``bf16_tol`` / ``bf16_close``;
* a printed or logged figure (ROUGE-1.5.5's 5 decimals, fairseq's rounded stats): ``printed_tol``;
* statistical checks (bootstrap, randomization, an initialisation's std): a number of standard
  errors, derived where it is used, with ``# tol:``.

``FAIRSEQ_SUM_TOL_LOG=path`` makes ``fp32_close`` and its kind append each measured deviation and
its tolerance to ``path``: run a file under ``ATEN_CPU_CAPABILITY=default``, ``avx2`` and ``avx512``
to see how close each path comes.
"""
import inspect
import os

import torch

EPS32 = torch.finfo(torch.float32).eps  # 2**-23 = 1.19e-7

# The tiny models of the suite (2+2 layers, d_m <= 64, logits <= ~30): two float32
# implementations of one model agree to <= 4.4 ulps of the largest logit on the default, AVX2 and
# AVX-512 kernel paths (tests/test_t5_import.py against transformers, all four output heads);
# 32 ulps leave 7x headroom.
MODEL_ULPS = 32


def fp32_tol(magnitude, ulps=MODEL_ULPS):
    """Absolute tolerance between two float32 computations whose largest intermediate value is
    about ``magnitude`` (a tensor or a number: its largest absolute value is used), ``ulps`` units
    of the last place of it (at least of 1.0)."""
    if torch.is_tensor(magnitude):
        magnitude = float(magnitude.detach().abs().max()) if magnitude.numel() else 0.0
    return ulps * EPS32 * max(1.0, float(magnitude))


# One layer or operation computed two ways (a fused kernel against its explicit formula, one
# decoding step against the whole sequence, a left- against a right-padded copy, float32 against a
# float64 hand computation): a dot product of <= 64 terms summed in another order and a softmax,
# a few ulps of the largest value passed through; 8 ulps (9.5e-7 at magnitude 1, the bare 1e-6
# these tests had) hold on the default, AVX2 and AVX-512 kernel paths.
OP_ULPS = 8

EPS64 = torch.finfo(torch.float64).eps  # 2**-52 = 2.2e-16
# float64 sums of the suite (<= a few hundred terms: ROUGE/METEOR means, count matrices) in another
# order than the reference: each addition rounds by <= EPS64 / 2 of the running sum; 64 ulps of
# the largest term (1.4e-14 at magnitude 1) cover a few hundred reassociated additions, with
# headroom.
# Exact-by-construction float64 values (ratios of the same integers, in the same order) use ``==``.
F64_ULPS = 64

# bfloat16 keeps 8 significant bits (eps 2**-7 = 7.8e-3). A bfloat16 computation of a layer
# against another order of the same bfloat16 ops rounds every intermediate: a few eps of the
# largest value passed through (tests/test_tp_transformer.py: fused against plain TPR in bf16).
EPS_BF16 = torch.finfo(torch.bfloat16).eps
BF16_ULPS = 4


def fp64_tol(magnitude, ulps=F64_ULPS):
    """Absolute tolerance between two float64 computations (reordered sums) whose largest
    intermediate value is about ``magnitude``: ``ulps`` units of the last place of it."""
    if torch.is_tensor(magnitude):
        magnitude = float(magnitude.detach().abs().max()) if magnitude.numel() else 0.0
    return ulps * EPS64 * max(1.0, abs(float(magnitude)))


def bf16_tol(magnitude, ulps=BF16_ULPS):
    """Absolute tolerance between two bfloat16 computations whose largest intermediate value is
    about ``magnitude``: ``ulps`` bfloat16 units of the last place of it (at least of 1.0)."""
    if torch.is_tensor(magnitude):
        magnitude = float(magnitude.detach().float().abs().max()) if magnitude.numel() else 0.0
    return ulps * EPS_BF16 * max(1.0, abs(float(magnitude)))


def printed_tol(decimals, sides=1):
    """A figure printed or stored with ``decimals`` digits after the point (ROUGE-1.5.5's 5
    decimals, a logged percentage rounded to 2) is within half its last digit of the exact value:
    ``sides`` such roundings (2 where both compared figures are printed) plus float64 noise."""
    return sides * 0.5 * 10.0 ** -decimals + F64_ULPS * EPS64


def _log_deviation(deviation, tol):
    """With FAIRSEQ_SUM_TOL_LOG=path, appends ``file:line deviation tol`` of the calling test,
    so that the largest measured deviation per kernel path can be reported."""
    path = os.environ.get("FAIRSEQ_SUM_TOL_LOG")
    if not path:
        return
    frame = inspect.currentframe().f_back.f_back.f_back
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} "
                f"{deviation:.3e} {tol:.3e}\n")


def fp32_close(actual, expected, magnitude=None, ulps=MODEL_ULPS):
    """``|actual - expected| <= fp32_tol(magnitude, ulps)`` everywhere (no relative term:
    ``magnitude`` is the largest value the computation passes through, ``expected`` itself when
    not given). Same shapes are required, as torch.allclose does by broadcasting."""
    actual, expected = torch.as_tensor(actual), torch.as_tensor(expected)
    return _within(actual, expected, fp32_tol(expected if magnitude is None else magnitude, ulps))


def fp64_close(actual, expected, magnitude=None, ulps=F64_ULPS):
    """``fp32_close`` for two float64 computations (fp64_tol)."""
    actual, expected = torch.as_tensor(actual), torch.as_tensor(expected)
    return _within(actual, expected, fp64_tol(expected if magnitude is None else magnitude, ulps))


def bf16_close(actual, expected, magnitude=None, ulps=BF16_ULPS):
    """``fp32_close`` for two bfloat16 computations (bf16_tol)."""
    actual, expected = torch.as_tensor(actual), torch.as_tensor(expected)
    return _within(actual, expected, bf16_tol(expected if magnitude is None else magnitude, ulps))


def _within(actual, expected, tol):
    if actual.numel() == 0 and expected.numel() == 0:
        return True
    deviation = float((actual.double() - expected.double()).abs().max())
    _log_deviation(deviation, tol)
    return deviation <= tol


def approx64(expected, ulps=F64_ULPS):
    """``pytest.approx`` for float64 figures (a ROUGE/METEOR score, a mean, a ratio) against a hand
    computation of the same value in another order (5 / 6 against 2PR / (P + R)): ``ulps`` units
    of the last place, relative, and absolute near 0 (of 1). pytest's default (rel 1e-6) would let
    through an error 10^9 times larger than float64's rounding."""
    import pytest

    return pytest.approx(expected, rel=ulps * EPS64, abs=ulps * EPS64)


def approx32(expected, magnitude=None, ulps=OP_ULPS):
    """``pytest.approx`` for a float32 result (``.item()``, ``.tolist()``) against a float64 hand
    computation: absolute ``fp32_tol`` of ``magnitude`` (the largest expected value if not
    given)."""
    import pytest

    if magnitude is None:
        values = expected if isinstance(expected, (list, tuple)) else [expected]
        magnitude = max((abs(v) for v in values), default=0.0)
    return pytest.approx(expected, rel=0, abs=fp32_tol(magnitude, ulps))
