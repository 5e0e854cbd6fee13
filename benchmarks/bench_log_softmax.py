"""The output layer's log-softmax, fused with its projection or not, in one run (CPU or CUDA).

A training step ends with ``log_softmax(x W^T)`` over the vocabulary and its backward. Three ways,
each timed as forward + backward of a label-smoothed loss over the same ``x`` (``N x d``) and ``W``
(``V x d``), interleaved in rounds:

* ``unfused``: ``F.linear`` then ``torch.log_softmax`` (what the models run; autograd keeps the
  log-probabilities for the softmax backward and ``x``, ``W`` for the projection's);
* ``fused_same_kernels``: one autograd function running the same two kernels forward and
  ``_log_softmax_backward_data`` + two matmuls backward, so the logits are freed as soon as the
  log-probabilities exist (exact: the gradients are bitwise those of ``unfused``, checked);
* ``fused_in_place``: the log-softmax computed in place over the logits (``logits -= logsumexp``:
  no second ``N x V`` tensor) and the backward written into the incoming gradient (exact up to
  float rounding of the different summation).

    python benchmarks/bench_log_softmax.py --threads 1 --json log_softmax.json

Reports words/s ratios against ``unfused``; no vocabulary shortlist anywhere.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


class FusedSameKernels(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        lprobs = torch._log_softmax(F.linear(x, weight), -1, False)
        ctx.save_for_backward(x, weight, lprobs)
        return lprobs

    @staticmethod
    def backward(ctx, grad):
        x, weight, lprobs = ctx.saved_tensors
        grad = torch._log_softmax_backward_data(grad, lprobs, -1, lprobs.dtype)
        return grad @ weight, grad.t() @ x


class FusedInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        logits = F.linear(x, weight)
        lprobs = logits.sub_(torch.logsumexp(logits, -1, keepdim=True))
        ctx.save_for_backward(x, weight, lprobs)
        return lprobs

    @staticmethod
    def backward(ctx, grad):
        x, weight, lprobs = ctx.saved_tensors
        grad = grad - lprobs.exp().mul_(grad.sum(-1, keepdim=True))
        return grad @ weight, grad.t() @ x


WAYS = {
    "unfused": lambda x, w: torch.log_softmax(F.linear(x, w), -1),
    "fused_same_kernels": FusedSameKernels.apply,
    "fused_in_place": FusedInPlace.apply,
}


def loss_of(lprobs, target, eps=0.1):
    """Label-smoothed NLL (fairseq's criterion's form)."""
    nll = -lprobs.gather(-1, target[:, None]).sum()
    return (1 - eps) * nll - eps * lprobs.mean(-1).sum()


def step(way, x, w, target):
    x.grad = w.grad = None
    loss_of(WAYS[way](x, w), target).backward()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=1024, help="rows N (target tokens of a batch)")
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=3, help="timed steps per way and round")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--threads", type=int)
    p.add_argument("--json")
    a = p.parse_args(argv)
    for flag in ("tokens", "dim", "vocab", "rounds", "steps"):
        if getattr(a, flag) < 1:
            p.error(f"--{flag} {getattr(a, flag)}: at least 1")
    if a.threads:
        torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(a.tokens, a.dim, generator=g).to(a.device).requires_grad_()
    w = (torch.randn(a.vocab, a.dim, generator=g) * a.dim**-0.5).to(a.device).requires_grad_()
    target = torch.randint(0, a.vocab, (a.tokens,), generator=g).to(a.device)

    grads = {}
    for way in WAYS:  # exactness against the unfused path (and a warm-up)
        step(way, x, w, target)
        grads[way] = (x.grad.clone(), w.grad.clone())
    exact = {way: {"bitwise": all(torch.equal(a_, b_) for a_, b_ in zip(g_, grads["unfused"])),
                   "max_abs_diff": max(float((a_ - b_).abs().max()) for a_, b_ in zip(g_, grads["unfused"]))}
             for way, g_ in grads.items()}
    seconds = dict.fromkeys(WAYS, 0.0)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    for _ in range(a.rounds):
        for way in WAYS:
            sync()
            start = time.perf_counter()
            for _ in range(a.steps):
                step(way, x, w, target)
            sync()
            seconds[way] += time.perf_counter() - start
    words = a.tokens * a.steps * a.rounds
    rows = {way: dict(words_per_s=words / s, vs_unfused=seconds["unfused"] / s, **exact[way])
            for way, s in seconds.items()}
    print(f"N {a.tokens} x d {a.dim} -> V {a.vocab}, {a.device}, threads {torch.get_num_threads()}, "
          f"{a.rounds} rounds x {a.steps} steps")
    print("| way | words/s | vs unfused | gradients vs unfused |\n|---|---|---|---|")
    for way, r in rows.items():
        same = "bitwise equal" if r["bitwise"] else f"max |diff| {r['max_abs_diff']:.2e}"
        print(f"| {way} | {r['words_per_s']:,.0f} | {r['vs_unfused']:.2f}x | {same} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(args=vars(a), results=rows), f, indent=1)


if __name__ == "__main__":
    main()
