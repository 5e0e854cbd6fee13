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
"""
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
