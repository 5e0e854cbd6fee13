"""Tensor-product role/filler binding (TP-Transformer, Jiang et al. 2021, §2.2.2).

The filler ``F`` is an attention sublayer's output after its residual connection. A role vector
``R`` is computed per token and bound to the filler with a Hadamard product (eq. 6)::

    TPR(F) = R ⊙ F + F

Discrete roles (TPT-d, eq. 4-5): every sublayer owns a dictionary ``r`` of ``N_r`` role embeddings
of size ``d_r`` and a projection ``W_r: d_m -> H * N_r`` (with bias)::

    r̂_n = r_n / ||r_n||_2                    (4)
    R^h = softmax(F W_r^h) r̂,  R = [R^1 .. R^H]   (5)   with  H * d_r = d_m

Continuous roles (TPT-c, Schlag et al. 2019): ``R = F W + b`` with ``W`` of size ``d_m x d_m``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TPRBinding(nn.Module):
    """Binds role vectors to fillers: ``R ⊙ F + F`` (eq. 6).

    Args:
        embed_dim: ``d_m``.
        num_heads: ``H`` (role heads; ``H * d_r`` must equal ``d_m`` for discrete roles).
        mode: ``"discrete"`` (TPT-d) or ``"continuous"`` (TPT-c).
        num_roles: ``N_r``, size of the role dictionary (discrete only).
        role_dim: ``d_r`` (discrete only).
    """

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
        if mode == "discrete":
            if num_heads * role_dim != embed_dim:
                raise ValueError(
                    f"discrete TPR needs heads * role_dim == embed_dim (paper footnote 2), "
                    f"got {num_heads} * {role_dim} != {embed_dim}; set --tpr-role-dim {embed_dim // num_heads}"
                )
            self.role_proj = nn.Linear(embed_dim, num_heads * num_roles)  # W_r
            self.roles = nn.Parameter(torch.empty(num_roles, role_dim))  # r
            nn.init.normal_(self.roles)
            nn.init.xavier_uniform_(self.role_proj.weight)
        else:
            # R = F W + b makes the binding quadratic in the residual stream: with a random W the
            # activations grow by orders of magnitude per layer at initialisation (NaN by layer 4-6 of
            # the base model, in fp32 too). W starts at zero, so TPT-c starts as the baseline
            # (TPR(F) = F) and learns its roles from there (dL/dW = F^T (dL/dR) is non-zero).
            self.role_proj = nn.Linear(embed_dim, embed_dim)  # W, b
            nn.init.zeros_(self.role_proj.weight)
        nn.init.zeros_(self.role_proj.bias)

    def role_vectors(self, filler):
        """``R`` for fillers of shape ``(..., d_m)``."""
        if self.mode == "continuous":
            return self.role_proj(filler)
        scores = self.role_proj(filler).unflatten(-1, (self.num_heads, self.num_roles))
        attn = F.softmax(scores, dim=-1)  # softmax(F W_r^h), (..., H, N_r); accumulates in fp32 for fp16
        if self.keep_role_attn:
            self.role_attn = attn.detach()
        return (attn @ F.normalize(self.roles, dim=-1)).flatten(-2)  # r̂ (eq. 4), [R^1 .. R^H] (eq. 5)

    def forward(self, filler):
        return torch.addcmul(filler, self.role_vectors(filler), filler)  # R ⊙ F + F (eq. 6)

    def extra_repr(self):
        if self.mode == "continuous":
            return "mode=continuous"
        return f"mode=discrete, heads={self.num_heads}, roles={self.num_roles}, role_dim={self.role_dim}"
