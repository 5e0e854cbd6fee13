"""Mem2Mem memories (Park et al., §3): encoder compression, decoder read and gated write.

Shapes: B batch, L sentences, r slots, d memory (= document encoder) width, H decoder width.

* :class:`MemoryCompression` (M2M eq. 4-6): ``A = softmax(W_a1 tanh(W_a2 H^T))`` over the valid
  sentences, ``M_E = A H`` and ``L_comp = ||A A^T - I||_F^2`` per document.
* :class:`MemoryReader` (M2M eq. 7): ``psi_t = softmax(h_t W_psi M_D^T)`` (Luong "general" score),
  ``m_t = psi_t M_D`` and ``h^(m)_t = W_m [h_t; m_t]``.
* :class:`MemoryWriter` (M2M eq. 8-10): ``z = sigma(W_z1 h + W_z2 m + W_z3 M_D(k))``,
  ``u = tanh(W_u1 h + W_u2 m + W_u3 M_D(k))``, ``M_D(k) := z * M_D(k) + (1 - z) * u``. The three
  pairs ``(W_z., W_u.)`` are stored as three ``2d``-wide linears (same parameter count).
* :func:`read_loss` (M2M eq. 11): ``(1/T) sum_t ||psi_t M_E - beta_t H||_2`` per document.

The decoder runs the write and the read step by step with these modules, or (in float32 CPU
training, its batched path) through :class:`..steps.MemoryRecurrence`, the same operations in one
autograd function.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from ...aux_losses import AuxLoss, register_aux_loss

# M2M eq. 12: L = L_MLE + lambda_1 L_comp + lambda_2 L_read, with the paper's lambdas
register_aux_loss(AuxLoss("mem_comp", 1e-4, "lambda_1, memory compression loss (M2M eq. 6, 12)"))
register_aux_loss(AuxLoss("mem_read", 0.01, "lambda_2, memory read loss (M2M eq. 11, 12)"))


def masked_softmax(scores, mask, dim=-1):
    """Softmax over ``mask``-ed entries; fully masked rows give zeros (never NaN)."""
    scores = scores.float().masked_fill(~mask, torch.finfo(torch.float32).min)
    probs = F.softmax(scores, dim=dim)
    return probs * mask.to(probs.dtype)


def compression_loss(A):
    """``||A A^T - I||_F^2`` per document (M2M eq. 6); ``A`` is B x r x L. Returns B values."""
    gram = torch.bmm(A, A.transpose(1, 2))
    eye = torch.eye(A.size(1), dtype=gram.dtype, device=gram.device)
    return (gram - eye).pow(2).sum(dim=(1, 2))


def read_loss(psi, mem_enc, beta, sent_states, target_mask):
    """M2M eq. 11 per document. ``psi`` B x T x r, ``mem_enc`` (M_E) B x r x d, ``beta`` B x T x L,
    ``sent_states`` (h^(s)) B x L x d, ``target_mask`` B x T (real target steps). Returns B
    values."""
    c_mem = torch.bmm(psi, mem_enc)  # c^(m)_t = sum_k psi_tk M_E(k)
    c_sent = torch.bmm(beta, sent_states)  # c^(s)_t = sum_j beta_tj h^(s)_j
    dist = torch.linalg.vector_norm(c_mem - c_sent, dim=-1) * target_mask.to(c_mem.dtype)
    return dist.sum(dim=1) / target_mask.sum(dim=1).clamp(min=1).to(dist.dtype)


class MemoryCompression(nn.Module):
    """Multi-head self-attentive compression of the sentence states into ``r`` slots (M2M eq. 5)."""

    def __init__(self, input_dim, hidden_dim=128, num_slots=10):
        super().__init__()
        self.W_a2 = nn.Linear(input_dim, hidden_dim, bias=False)
        self.W_a1 = nn.Linear(hidden_dim, num_slots, bias=False)

    def forward(self, H, sent_mask):
        """``H`` B x L x d, ``sent_mask`` B x L. Returns ``M_E`` (B x r x d), ``A`` (B x r x L)."""
        scores = self.W_a1(torch.tanh(self.W_a2(H))).transpose(1, 2)  # B x r x L
        A = masked_softmax(scores, sent_mask.unsqueeze(1)).to(H.dtype)
        return torch.bmm(A, H), A


class MemoryReader(nn.Module):
    """Reads the memory with the decoder state (M2M eq. 7) and forms ``h^(m) = W_m [h; m]``."""

    def __init__(self, query_dim, mem_dim, attend=True):
        super().__init__()
        # A memory that starts from zeros keeps all its slots equal (the write is the same function
        # of every slot), so psi is uniform whatever W_psi is: such a reader has no W_psi
        # (``attend=False``).
        self.W_psi = nn.Linear(query_dim, mem_dim, bias=False) if attend else None
        self.W_m = nn.Linear(query_dim + mem_dim, query_dim)

    def forward(self, h, memory, query=None, combine=True):
        """``h`` B x T x H, ``memory`` B x r x d -> ``h^(m)`` B x T x H, ``m`` B x T x d, ``psi`` B
        x T x r. ``query``: ``W_psi h`` when computed already (the decoder's batched path computes
        it for all steps at once); ``combine=False``: ``h^(m)`` is not formed (None), the caller
        forms it later with :meth:`combine`."""
        if self.W_psi is None:
            psi = h.new_full((h.size(0), h.size(1), memory.size(1)), 1.0 / memory.size(1))
        else:
            query = self.W_psi(h) if query is None else query
            scores = torch.bmm(query, memory.transpose(1, 2))
            psi = F.softmax(scores.float(), dim=-1).to(h.dtype)
        m = torch.bmm(psi, memory)
        return (self.combine(h, m) if combine else None), m, psi

    def combine(self, h, m):
        """``h^(m) = W_m [h; m]`` (M2M eq. 7's output), any number of steps at once."""
        return self.W_m(torch.cat([h, m], dim=-1))


class MemoryWriter(nn.Module):
    """Gated write of every slot (M2M eq. 8-10). The decoder calls it at step t > 1 with ``h^(d)_t``
    and the previous read ``m_{t-1}`` (M2M eq. 8-10's ``h^(d)_{t+1}``, ``m_t``), before that step's
    read."""

    def __init__(self, query_dim, mem_dim):
        super().__init__()
        self.mem_dim = mem_dim
        self.from_h = nn.Linear(query_dim, 2 * mem_dim)  # [W_z1; W_u1] (+ gate biases)
        self.from_m = nn.Linear(mem_dim, 2 * mem_dim, bias=False)  # [W_z2; W_u2]
        self.from_slot = nn.Linear(mem_dim, 2 * mem_dim, bias=False)  # [W_z3; W_u3]

    def forward(self, h, m, memory, h_part=None):
        """``h`` B x H, ``m`` B x d, ``memory`` B x r x d -> updated memory B x r x d. ``h_part``:
        ``from_h(h)`` when computed already (the decoder's batched path computes it for all steps
        at once)."""
        h_part = self.from_h(h) if h_part is None else h_part
        pre = (h_part + self.from_m(m)).unsqueeze(1) + self.from_slot(memory)
        z_pre, u_pre = pre.split(self.mem_dim, dim=-1)
        z = torch.sigmoid(z_pre)
        return z * memory + (1 - z) * torch.tanh(u_pre)

