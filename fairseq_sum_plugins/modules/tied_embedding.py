"""The token embeddings tied to the output projection (TPT eq. 10; ETADS eq. 4's ``b^o`` beside
it) in training: how their gradient is summed.

The tied weight ``E`` gets three gradients per step: the output projection's ``G^T X`` and one per
lookup (the encoder's source tokens, the decoder's summary tokens), which autograd sums before
the weight's ``.grad``. It adds into the first to arrive, the projection's, in place only if that
gradient is a tensor of its own; autograd's linear gives it as a view (``(G^T X)^T^T``), so the
first sum is a fresh ``V x d_m`` tensor (64 MB at 32k x 512, on CPU a fresh allocation: page
faults as well as the pass).

* :class:`TiedProjection` (on in training on CPU, ``SumTransformerDecoder.fresh_tied_grad``):
  ``logits = X E^T (+ b)`` whose backward gives ``E``'s gradient as the product ``G^T X`` itself,
  the same values bit for bit; autograd then adds both lookups' gradients into it in place.
* :func:`rows_per_token` (off by default, ``SumTransformerDecoder.sparse_embedding_grad``): a
  lookup's sparse gradient (``nn.Embedding(sparse=True)``: one row per occurrence) as one row per
  token, summed from zero in the order of the token's occurrences, which is how the dense lookup's
  backward (``embedding_dense_backward``) sums them on CPU. Added to the dense gradient it gives
  the dense lookups' sum bit for bit; the occurrences one by one would round differently (2^-24
  twice beside 1.0: 1 + 2^-23 summed first, 1.0 one by one). It saves each lookup's zero-filled
  ``V x d_m`` tensor, but autograd adds a sparse gradient to a dense one only out of place (it
  treats sparse tensors like subclasses), a fresh tensor per lookup: measured slower in a
  training step (benchmarks/README.md), so off.
"""
import torch
import torch.nn.functional as F


class TiedProjection(torch.autograd.Function):
    """``F.linear(features, weight, bias)`` with ``weight``'s gradient ``G^T X`` returned as the
    product itself rather than a view of it (autograd's linear gives ``(G^T X)^T^T``), so that
    autograd adds the lookups' gradients into it in place; the input and bias gradients are
    autograd's (``G E``, ``sum G``). Bit for bit autograd's gradients
    (tests/test_speed_paths.py)."""

    @staticmethod
    def forward(ctx, features, weight, bias):
        ctx.save_for_backward(features, weight)
        ctx.has_bias = bias is not None
        return F.linear(features, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        features, weight = ctx.saved_tensors
        g = grad.reshape(-1, grad.size(-1))
        grad_features = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_features = g.mm(weight).view(features.shape)
        if ctx.needs_input_grad[1]:
            grad_weight = g.t().mm(features.reshape(-1, features.size(-1)))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = g.sum(0)
        return grad_features, grad_weight, grad_bias


def rows_per_token(grad):
    """A lookup's sparse weight gradient, one row per occurrence of a token in their order, as one
    row per token: its rows summed from zero in the order of its occurrences (the dense lookup's
    backward's sums); ``grad`` itself when it is not sparse or already one row per token."""
    if grad is None or not grad.is_sparse or grad.is_coalesced():
        return grad
    rows, inverse = torch.unique(grad._indices()[0], sorted=True, return_inverse=True)
    values = grad._values()
    sums = values.new_zeros(rows.numel(), values.size(1)).index_add_(0, inverse, values)
    return torch.sparse_coo_tensor(rows.unsqueeze(0), sums, grad.shape, is_coalesced=True,
                                   check_invariants=False)


def sum_rows_per_token(module, inputs, out):
    """Forward hook of a sparse lookup (``nn.Embedding(sparse=True)``): its weight gradient summed
    per token (:func:`rows_per_token`)."""
    if out.grad_fn is not None:
        out.grad_fn.register_hook(lambda grads, _: (rows_per_token(grads[0]), *grads[1:]))
