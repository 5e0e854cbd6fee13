"""ETADS's focus attention (ETADS eq. 7-8) and saliency-gated attention (ETADS eq. 9-10) three ways
each, forward + backward, in one run (CPU).

An encoder self-attention of ``B x H`` heads over ``S`` positions, with the focal bias of
``mu~, sigma~`` that need gradients (training). Timed in interleaved rounds:

* ``reference``: :class:`FocalBias`'s materialised bias through SDPA (its math path: the flash
  CPU kernel gives no bias gradient) -- the training path before :class:`FocusAttention`;
* ``focus_attention``: :class:`FocusAttention` (what a focus layer trains with on CPU);
* ``no_bias``: SDPA without the bias (its flash kernel; ``mu~, sigma~`` get no gradient): the floor,
  what the attention costs without ETADS.

At two kinds of focus: ``broad`` (``mu~, sigma~ = m sigmoid(N(0, 1))``, as at initialisation) and
``narrow`` (``sigma~`` uniform in 0.1-8 positions, as a trained focus may be: most of a row's
probabilities then fall to subnormal floats unless flushed, module doc of
``fairseq_sum_plugins/features/etads_focus.py``).

    python benchmarks/bench_focus_attention.py --threads 1 --json focus_attention.json

And the saliency gate of a decoder cross-attention (``--tgt-len`` queries over ``S`` keys, the
gate's factors ``W_h Q, W_s K`` needing gradients): ``reference`` (ETADS eq. 9-10 under plain
autograd, :func:`probs_and_gate`: the path taken with attention dropout), ``gated_attention``
(:class:`GatedAttention`, what a saliency layer trains with) and ``no_gate`` (SDPA without the gate:
the floor).

Reports milliseconds per forward + backward and each way's speed over ``reference`` with a paired
bootstrap interval over the rounds (``bench_train.round_interval``), and beside them the largest
difference from ``reference`` of the output and of each gradient, relative to that tensor's largest
entry.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import cpu_name, fmt_interval, round_interval  # noqa: E402

from fairseq_sum_plugins.cli.outputs import refuse_unwritable  # noqa: E402
from fairseq_sum_plugins.features.etads_focus import FocalBias, FocusAttention  # noqa: E402
from fairseq_sum_plugins.features.etads_saliency import GatedAttention, probs_and_gate  # noqa: E402


def reference(q, k, v, mu, sigma, pos, scale):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=FocalBias.apply(mu, sigma, pos),
                                          scale=scale)


def no_bias(q, k, v, mu, sigma, pos, scale):
    return F.scaled_dot_product_attention(q, k, v, scale=scale)


def focus_attention(q, k, v, mu, sigma, pos, scale):
    return FocusAttention.apply(q, k, v, mu, sigma, pos, None, scale)


def gate_reference(q, k, v, hq, sk, scale):
    probs, gate = probs_and_gate(q, k, hq, sk, None, scale)
    return (probs * gate) @ v


def gated_attention(q, k, v, hq, sk, scale):
    return GatedAttention.apply(q, k, v, hq, sk, None, scale)


def no_gate(q, k, v, hq, sk, scale):
    return F.scaled_dot_product_attention(q, k, v, scale=scale)


WAYS = {"reference": reference, "focus_attention": focus_attention, "no_bias": no_bias}
GATED_WAYS = {"reference": gate_reference, "gated_attention": gated_attention, "no_gate": no_gate}
FOCUS = ("broad", "narrow")
CASES = FOCUS + ("saliency",)


def inputs(focus, bsz, heads, src_len, head_dim, seed=0):
    """``q, k, v`` ``(B, H, S, d_k)`` (transposed views of ``(B, S, H, d_k)``, as the attention's
    projections give them), ``mu~, sigma~`` ``(B, H, S)`` needing gradients, positions ``(1, S)``."""
    g = torch.Generator().manual_seed(seed)
    qkv = [torch.randn(bsz, src_len, heads, head_dim, generator=g).transpose(1, 2).requires_grad_()
           for _ in range(3)]
    mu = src_len * torch.sigmoid(torch.randn(bsz, heads, src_len, generator=g))
    if focus == "broad":
        sigma = src_len * torch.sigmoid(torch.randn(bsz, heads, src_len, generator=g))
    else:
        sigma = torch.rand(bsz, heads, src_len, generator=g) * 7.9 + 0.1
    pos = torch.arange(1.0, src_len + 1).unsqueeze(0)
    return qkv + [mu.requires_grad_(), sigma.requires_grad_(), pos]


def gated_inputs(bsz, heads, tgt_len, src_len, head_dim, seed=0):
    """``q, W_h Q`` ``(B, H, T, d_k)`` and ``k, v, W_s K`` ``(B, H, S, d_k)`` (transposed views),
    all needing gradients; the gate's factors at ``d_k ** -0.25``, as SaliencyGate's
    initialisation gives them."""
    g = torch.Generator().manual_seed(seed)

    def heads_of(length, gain=1.0):
        x = torch.randn(bsz, length, heads, head_dim, generator=g) * gain
        return x.transpose(1, 2).requires_grad_()

    gain = head_dim ** -0.25
    q, hq = heads_of(tgt_len), heads_of(tgt_len, gain)
    k, v, sk = heads_of(src_len), heads_of(src_len), heads_of(src_len, gain)
    return [q, k, v, hq, sk]


def step(way, args, scale, grad, ways=WAYS):
    """Forward + backward of ``way``; the output and the gradients of the five inputs that need
    them (``q, k, v, mu~, sigma~``; for the gate ``q, k, v, W_h Q, W_s K``)."""
    for t in args[:5]:
        t.grad = None
    out = ways[way](*args, scale)
    out.backward(grad)
    return [out.detach()] + [t.grad for t in args[:5]]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--src-len", type=int, default=256)
    p.add_argument("--tgt-len", type=int, default=64, help="the saliency gate's decoder queries")
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=2, help="timed steps per way and round")
    p.add_argument("--threads", type=int)
    p.add_argument("--json", metavar="FILE", help="write the results here")
    a = p.parse_args(argv)
    for flag in ("batch_size", "heads", "src_len", "tgt_len", "head_dim", "rounds", "steps",
                 "threads"):
        value = getattr(a, flag)
        if value is not None and value < 1:
            p.error(f"--{flag.replace('_', '-')} {value}: at least 1")
    refuse_unwritable(p, [("--json", a.json)])  # the package's output guard, before any work
    if a.threads:
        torch.set_num_threads(a.threads)
    scale = a.head_dim ** -0.5
    results = {}
    for case in CASES:
        gated = case == "saliency"
        tgt_len, ways = (a.tgt_len, GATED_WAYS) if gated else (a.src_len, WAYS)
        grad = torch.randn(a.batch_size, a.heads, tgt_len, a.head_dim,
                           generator=torch.Generator().manual_seed(1))
        args = (gated_inputs(a.batch_size, a.heads, tgt_len, a.src_len, a.head_dim) if gated
                else inputs(case, a.batch_size, a.heads, a.src_len, a.head_dim))
        ref = step("reference", args, scale, grad, ways)
        diffs = {}
        for way in ways:  # warm-up, and each way's largest difference from the reference
            got = step(way, args, scale, grad, ways)
            diffs[way] = max(float((x - y).abs().max() / y.abs().max()) for x, y in zip(got, ref)
                             if x is not None and y is not None)
        rounds = {way: [] for way in ways}
        for _ in range(a.rounds):
            for way in ways:
                start = time.perf_counter()
                for _ in range(a.steps):
                    step(way, args, scale, grad, ways)
                rounds[way].append((time.perf_counter() - start, a.steps))
        results[case] = {}
        for way, rows in rounds.items():
            seconds = sum(s for s, _ in rows)
            results[case][way] = dict(
                ms=1000 * seconds / (a.steps * a.rounds),
                vs_reference=sum(s for s, _ in rounds["reference"]) / seconds,
                interval=round_interval(rows, rounds["reference"]),
                max_rel_diff=diffs[way] if way not in ("no_bias", "no_gate") else None)
    print(f"B {a.batch_size} x H {a.heads} x S {a.src_len} x d_k {a.head_dim} (saliency: T "
          f"{a.tgt_len}), {cpu_name()}, threads {torch.get_num_threads()}, {a.rounds} rounds x "
          f"{a.steps} steps, forward + backward")
    print("| attention | way | ms | vs reference [95%] | largest difference from reference |\n"
          "|---|---|---|---|---|")
    labels = {"broad": "focus, broad", "narrow": "focus, narrow", "saliency": "saliency gate"}
    for case, rows in results.items():
        for way, r in rows.items():
            diff = "-" if r["max_rel_diff"] is None else f"{r['max_rel_diff']:.1e}"
            print(f"| {labels[case]} | {way} | {r['ms']:.1f} | "
                  f"{fmt_interval(r['vs_reference'], r['interval'])} | {diff} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(args=vars(a), device=cpu_name(), torch=torch.__version__,
                           results=results), f, indent=1)
    return results


if __name__ == "__main__":
    main()
