"""Tensor-product role/filler binding (TP-Transformer, Jiang et al. 2021, §2.2.2).

The filler ``F`` is an attention sublayer's output after its residual connection. A role vector
``R`` is computed per token and bound to the filler with a Hadamard product (TPT eq. 6)::

    TPR(F) = R ⊙ F + F

Discrete roles (TPT-d, TPT eq. 4-5): every sublayer owns a dictionary ``r`` of ``N_r`` role
embeddings of size ``d_r`` and a projection ``W_r: d_m -> H * N_r`` (with bias)::

    r̂_n = r_n / ||r_n||_2                    (4)
    R^h = softmax(F W_r^h) r̂,  R = [R^1 .. R^H]   (5)   with  H * d_r = d_m

Continuous roles (TPT-c, Schlag et al. 2019): ``R = F W + b`` with ``W`` of size ``d_m x d_m``,
projected from the filler as this project's specification asks. (The paper describes Schlag et
al.'s roles as projected "from layer inputs"; from ``F`` the binding is quadratic in the residual
stream, hence ``W`` starts at zero: see :class:`TPRBinding`.)

Speed: there are 18 bindings in the base model (6 encoder + 12 decoder sublayers), each a handful of
small kernels, and a GPU training step at the paper's shape is bound by kernel launches, not by
arithmetic. The discrete binding therefore runs as one autograd function (:class:`DiscreteBinding`)
whose backward is written out (TPT eq. 5-6 differentiated by hand), and the encoder and decoder
normalise all their role dictionaries in one stacked op (:func:`shared_role_normalization`):
about 15 ops per binding and step instead of the 34 that autograd records for the plain
expression. :meth:`TPRBinding.reference` keeps the equations as plain tensor code; the tests check
that both agree, gradients included.
"""
import contextlib
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..modules.features import FeatureSpec, Inspection, flags_set, register_feature


class DiscreteBinding(torch.autograd.Function):
    """``TPR(F) = R ⊙ F + F`` with ``R^h = softmax(F W_r^h + b^h) r̂`` (TPT eq. 5-6), fused.

    Inputs: fillers ``x`` (N, d_m), ``W_r`` (H*N_r, d_m), ``b`` (H*N_r), unit roles ``r̂`` (N_r,
    d_r); returns the bound fillers (N, d_m) and the role attention (N, H, N_r; not differentiable).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, unit):
        num_roles = unit.shape[0]
        # (N*H, N_r)
        attn = torch.softmax(torch.addmm(bias, x, weight.t()).view(-1, num_roles), dim=-1)
        role = (attn @ unit).view_as(x)  # [R^1 .. R^H] (TPT eq. 5)
        ctx.save_for_backward(x, weight, unit, attn, role)
        ctx.mark_non_differentiable(attn)
        # R ⊙ F + F (TPT eq. 6)
        return torch.addcmul(x, role, x), attn.view(x.shape[0], -1, num_roles)

    @staticmethod
    def backward(ctx, grad, _grad_attn):
        x, weight, unit, attn, role = ctx.saved_tensors
        grad = grad.contiguous()
        # under autocast the scores (and attn) are half while x and the parameters are fp32: the
        # .to() calls align them and are no-ops otherwise
        grad_role = (grad * x).view(-1, unit.shape[1])  # dL/dR as per-head rows (N*H, d_r)
        grad_x = torch.addcmul(grad, grad, role)  # through both F's of R ⊙ F + F: g ⊙ (R + 1)
        grad_unit = attn.t().to(grad_role.dtype) @ grad_role
        grad_attn = (grad_role @ unit.t().to(grad_role.dtype)).to(attn.dtype)
        grad_scores = torch._softmax_backward_data(grad_attn, attn, -1, attn.dtype)
        grad_scores = grad_scores.view(x.shape[0], -1).to(weight.dtype)  # (N, H*N_r)
        grad_x.addmm_(grad_scores.to(grad_x.dtype), weight.to(grad_x.dtype))  # ... + through F W_r
        return (grad_x, grad_scores.t() @ x.to(weight.dtype), grad_scores.sum(0),
                grad_unit.to(unit.dtype))


_BINDINGS = weakref.WeakKeyDictionary()


def _discrete_bindings(module):
    """The discrete bindings under ``module``, found once (not by a walk of the decoder's modules at
    every decoding step)."""
    found = _BINDINGS.get(module)
    if found is None:
        found = _BINDINGS[module] = [
            m for m in module.modules() if isinstance(m, TPRBinding) and m.mode == "discrete"
        ]
    return found


@contextlib.contextmanager
def shared_role_normalization(module):
    """Normalise the role dictionaries of every discrete binding under ``module`` at once
    (TPT eq. 4).

    One stacked ``normalize`` replaces one per sublayer, in forward and backward; the bindings read
    their rows while the context is open. The result is the same as each binding normalising its
    own.
    """
    bindings = _discrete_bindings(module)
    shapes = {b.roles.shape for b in bindings}
    if len(shapes) != 1:  # nothing to share (or dictionaries of different sizes)
        yield
        return
    units = F.normalize(torch.stack([b.roles for b in bindings]), dim=-1)
    for b, unit in zip(bindings, units.unbind(0)):
        b.unit_roles = unit
    try:
        yield
    finally:
        for b in bindings:
            b.unit_roles = None


def role_units_context(module):
    """For activation checkpointing (:mod:`.checkpointing`): the unit roles that
    :func:`shared_role_normalization` has set on the discrete bindings under ``module``, captured
    now, and a factory of context managers that sets them again (the recomputation in backward runs
    after the normalisation's context has closed)."""
    bindings = _discrete_bindings(module)
    units = [b.unit_roles for b in bindings]

    @contextlib.contextmanager
    def restore():
        before = [b.unit_roles for b in bindings]
        for b, unit in zip(bindings, units):
            b.unit_roles = unit
        try:
            yield
        finally:
            for b, unit in zip(bindings, before):
                b.unit_roles = unit

    return restore


class TPRBinding(nn.Module):
    """Binds role vectors to fillers: ``R ⊙ F + F`` (TPT eq. 6).

    Args:
        embed_dim: ``d_m``.
        num_heads: ``H`` (role heads; ``H * d_r`` must equal ``d_m`` for discrete roles).
        mode: ``"discrete"`` (TPT-d) or ``"continuous"`` (TPT-c).
        num_roles: ``N_r``, size of the role dictionary (discrete only).
        role_dim: ``d_r`` (discrete only).
    """

    # its own initialisation (TPT-c's W = 0), also under BART's (models/bart.py)
    feature_init = True

    def __init__(self, embed_dim, num_heads, mode="discrete", num_roles=50, role_dim=64):
        super().__init__()
        if mode not in ("discrete", "continuous"):
            raise ValueError(f"TPR mode must be 'discrete' or 'continuous', got {mode!r}")
        self.mode = mode
        self.num_heads = num_heads
        self.num_roles = num_roles
        self.role_dim = role_dim
        # When True, the last role attention (..., H, N_r) is kept for analysis (role usage, §4.4).
        self.keep_role_attn = False
        self.role_attn = None
        self.unit_roles = None  # r̂, set by shared_role_normalization

        if mode == "discrete":
            if num_heads * role_dim != embed_dim:
                raise ValueError(
                    "discrete TPR needs heads * role_dim == embed_dim (paper footnote 2), got "
                    f"{num_heads} * {role_dim} != {embed_dim}; set --tpr-role-dim "
                    f"{embed_dim // num_heads}"
                )
            self.role_proj = nn.Linear(embed_dim, num_heads * num_roles)  # W_r
            self.roles = nn.Parameter(torch.empty(num_roles, role_dim))  # r
        else:
            self.role_proj = nn.Linear(embed_dim, embed_dim)  # W, b
        self.reset_parameters()

    def reset_parameters(self):
        if self.mode == "discrete":
            nn.init.normal_(self.roles)
            nn.init.xavier_uniform_(self.role_proj.weight)
        else:
            # R = F W + b makes the binding quadratic in the residual stream: with a random W the
            # activations grow by orders of magnitude per layer at initialisation (NaN by layer 4-6
            # of the base model, in fp32 too). W starts at zero, so TPT-c starts as the baseline
            # (TPR(F) = F) and learns its roles from there (dL/dW = F^T (dL/dR) is non-zero).
            nn.init.zeros_(self.role_proj.weight)
        nn.init.zeros_(self.role_proj.bias)

    def bind(self, x):
        """The feature interface (:mod:`fairseq_sum_plugins.modules.features`): TPT eq. 6 after the
        sublayer's residual."""
        return self(x)

    def reference(self, filler):
        """TPT eq. 4-6 as plain tensor code (what :meth:`forward` computes)."""
        if self.mode == "continuous":
            role = self.role_proj(filler)  # R = F W + b
        else:
            scores = self.role_proj(filler).unflatten(-1, (self.num_heads, self.num_roles))
            attn = F.softmax(scores, dim=-1)  # softmax(F W_r^h), (..., H, N_r)
            # r̂ (TPT eq. 4), [R^1 .. R^H] (TPT eq. 5)
            role = (attn @ F.normalize(self.roles, dim=-1)).flatten(-2)
        return torch.addcmul(filler, role, filler)  # R ⊙ F + F (TPT eq. 6)

    def forward(self, filler):
        if self.mode == "continuous":
            return torch.addcmul(filler, self.role_proj(filler), filler)
        # r̂ (TPT eq. 4)
        unit = self.unit_roles if self.unit_roles is not None else F.normalize(self.roles, dim=-1)
        out, attn = DiscreteBinding.apply(
            filler.reshape(-1, filler.shape[-1]), self.role_proj.weight, self.role_proj.bias, unit)
        if self.keep_role_attn:
            self.role_attn = attn.view(*filler.shape[:-1], self.num_heads, self.num_roles)
        return out.view_as(filler)

    def extra_repr(self):
        if self.mode == "continuous":
            return "mode=continuous"
        return (f"mode=discrete, heads={self.num_heads}, roles={self.num_roles}, "
                f"role_dim={self.role_dim}")


class NoBinding(nn.Identity):
    """``TPR(F) = F`` without ``--tpr``: the binding's place stays a module, so analysis hooks find
    the filler there (:mod:`fairseq_sum_plugins.inspection.probe`)."""

    binds = False

    def bind(self, x):
        return self(x)


def _build_binding(args, site, dims):
    """TPT eq. 4-6 after every attention sublayer (``--tpr discrete|continuous``)."""
    if args.tpr == "none":
        return NoBinding()
    return TPRBinding(dims.embed_dim, dims.heads, args.tpr, args.tpr_roles, args.tpr_role_dim)


def _tpr_args(parser):
    parser.add_argument("--tpr", choices=["none", "discrete", "continuous"],
                        help="role/filler binding after every attention sublayer (TPT eq. 4-6)")
    parser.add_argument("--tpr-roles", type=int, metavar="N", help="N_r, roles per dictionary")
    parser.add_argument("--tpr-role-dim", type=int, metavar="N", help="d_r (heads * d_r = d_m)")


def _tpr_defaults(args):
    args.tpr = getattr(args, "tpr", "none")
    args.tpr_roles = getattr(args, "tpr_roles", 50)
    args.tpr_role_dim = getattr(args, "tpr_role_dim",
                                args.encoder_embed_dim // args.encoder_attention_heads)


def _tpr_refuse(args, backbone):
    pre = getattr(args, "encoder_normalize_before", False) or getattr(
        args, "decoder_normalize_before", False)
    if backbone == "bart" and args.tpr != "none" and pre:
        return ("--tpr (TP-Transformer role binding) on bart_sum binds after the post-LN norm of "
                "each attention sublayer: it needs --encoder-normalize-before False "
                "--decoder-normalize-before False (BART's)")
    return None


def watch_roles(model, probe):
    """Inspection: ``roles`` ``{sublayer name: positions x H x N_r}``, the role attention
    ``softmax(F W_r^h)`` (TPT eq. 5) of every position of every sublayer with discrete roles
    (``--tpr discrete``; the one the forward computes, kept by :attr:`TPRBinding.keep_role_attn`;
    encoder sublayers over source positions, decoder ones over output positions), and ``role``, per
    output token the argmax of the last decoder sublayer's role attention averaged over the heads (a
    choice of this page: the paper reads roles per head, §4.4)."""
    found = [(n, m) for n, m in model.named_modules()
             if isinstance(m, TPRBinding) and m.mode == "discrete"]
    for _, m in found:
        probe.switch(m, "keep_role_attn")

    def read(run):
        # one document: (1, P, H, N_r) batch-first or (P, 1, H, N_r) on BART's time-first layers
        roles = {n: m.role_attn.reshape(-1, m.num_heads, m.num_roles) for n, m in found}
        last = [a for n, a in roles.items() if n.startswith("decoder.")][-1]
        return {"roles": {n: a.tolist() for n, a in roles.items()},
                "role": last.mean(1).argmax(-1).tolist()}

    if found:
        probe.read(read)


register_feature(
    FeatureSpec(
        "TP-Transformer role binding (--tpr)", {
            "encoder_self": "self_attn_binding",
            "decoder_self": "self_attn_binding",
            "decoder_cross": "cross_attn_binding"
        }, _build_binding, stage="binding", add_args=_tpr_args, defaults=_tpr_defaults,
        refuse=_tpr_refuse, on=lambda args: flags_set(args, "tpr"),
        stack_context=shared_role_normalization, recompute_context=role_units_context,
        inspect=Inspection({"roles": "output", "role": "output"}, watch_roles)))
