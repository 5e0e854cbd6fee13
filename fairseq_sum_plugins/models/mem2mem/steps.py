"""Mem2Mem's recurrences as autograd functions (the decoder's batched path, in training).

Autograd runs a recurrence of ``T`` small steps as ``T`` times a dozen small operations forward
and as many nodes backward, each with its own gradient buffers, and it makes the gradient of a
weight used at every step (``W_z3``, ``v``, ``W_hh``, ...) a matrix product per step. The
functions here run the same forward operations as the modules they stand for (the same values),
keep what the backward needs, and go through the steps in reverse themselves: per step only what
the recurrence carries, the rest over all steps at once.

* :class:`MemoryRecurrence`: the decoder memory (M2M eq. 7-10), the gated write of
  :class:`..memory.MemoryWriter` then the read of :class:`..memory.MemoryReader` at each step;
  the weight gradients of ``from_m`` / ``from_slot`` (``[W_z2; W_u2]``, ``[W_z3; W_u3]``) are one
  product each over all the steps.
* :class:`CoverageAttention`: the token attention with coverage (M2M eq. 16-17) of
  :meth:`..model.Mem2MemDecoder._token_scores`, ``alpha_t = softmax(v^T tanh(W_e h^(w)_i + W_d
  h^(m)_t + w_c cov_ti))``, ``cov_{t+1} = cov_t + alpha_t``, and See et al.'s coverage loss
  ``sum_i min(alpha_ti, cov_ti)``.
* :class:`GRURecurrence`: a GRU from its input projections (the word decoder's, and both
  directions of the sentence and document bi-GRUs at once, M2M eq. 1-2).

The model uses them in float32 training on the CPU outside autocast only, where the reference's
casts to float32 (the softmaxes' ``.float()``) change nothing; here they are left out, so that in
float64 (the test of their gradients) they compute in float64 throughout. Their gradients equal
autograd's through the modules within float32 rounding (tests/test_mem2mem_speed_paths.py).
"""
import torch
import torch.nn.functional as F

FILL = torch.finfo(torch.float32).min  # masked_softmax's fill


class MemoryRecurrence(torch.autograd.Function):
    """The decoder memory over ``T`` steps (M2M eq. 7-10), as the decoder runs it: at step t, the
    gated write (M2M eq. 8-10) from ``h^(d)_t`` (through ``h_part``) and the previous read
    ``m_{t-1}`` (no write at the first step when ``read`` is None), then the read (M2M eq. 7) of
    the written memory.

    ``apply(h_part, query, memory, read, w_m, w_slot)``: ``h_part`` B x T x 2d is ``from_h
    h^(d)_t`` (with the gate biases), ``query`` B x T x d is ``W_psi h^(d)_t`` (None: a uniform
    read, the reader without ``W_psi``), ``memory`` B x r x d the memory before the first step,
    ``read`` (B x d) the read before it or None, ``w_m`` / ``w_slot`` the writer's ``from_m`` /
    ``from_slot`` weights (2d x d). Returns the reads ``m`` (B x T x d), ``psi`` (B x T x r) and
    the last memory."""

    @staticmethod
    def forward(ctx, h_part, query, memory, read, w_m, w_slot):
        bsz, steps, _ = h_part.shape
        slots, d = memory.shape[1:]
        mem, m = memory, read
        prevs, prev_reads, zs, us, mems, psis, reads = [], [], [], [], [], [], []
        for t in range(steps):
            if m is not None:  # M2M eq. 8-10, as MemoryWriter.forward (addmm: the same sum)
                pre = torch.addmm(h_part[:, t], m, w_m.t()).unsqueeze(1) + F.linear(mem, w_slot)
                z_pre, u_pre = pre.split(d, dim=-1)
                z = torch.sigmoid(z_pre)
                u = torch.tanh(u_pre)
                prevs.append(mem)
                prev_reads.append(m)
                zs.append(z)
                us.append(u)
                mem = z * mem + (1 - z) * u
            if query is None:  # M2M eq. 7, as MemoryReader.forward
                psi = mem.new_full((bsz, 1, slots), 1.0 / slots)
            else:
                psi = F.softmax(torch.bmm(query[:, t:t + 1], mem.transpose(1, 2)), dim=-1)
            m = torch.bmm(psi, mem).squeeze(1)
            mems.append(mem)
            psis.append(psi)
            reads.append(m)
        psis = torch.cat(psis, dim=1)
        # the writes are the steps from the first (with a previous read) or the second one on
        writes = [torch.stack(x) if x else None for x in (prevs, prev_reads, zs, us)]
        ctx.save_for_backward(query, w_m, w_slot, torch.stack(mems), psis, *writes)
        ctx.first_write = 0 if read is not None else 1
        return torch.stack(reads, dim=1), psis, mem

    @staticmethod
    def backward(ctx, g_reads, g_psis, g_memory):
        query, w_m, w_slot, mems, psis, prevs, prev_reads, zs, us = ctx.saved_tensors
        steps, bsz, slots, d = mems.shape
        first = ctx.first_write
        g_mem = torch.zeros_like(mems[0]) if g_memory is None else g_memory.clone()
        g_m = None  # the gradient of m_t from the write of step t + 1
        g_h = mems.new_zeros(bsz, steps, 2 * d)
        g_q = mems.new_zeros(bsz, steps, d) if query is not None else None
        g_pre = mems.new_empty(max(steps - first, 0), bsz, slots, 2 * d)  # the gates' gradients
        for t in reversed(range(steps)):
            mem, psi = mems[t], psis[:, t:t + 1]
            if g_reads is None:
                g = torch.zeros_like(mem[:, :1]) if g_m is None else g_m.unsqueeze(1)
            else:
                g = g_reads[:, t:t + 1] if g_m is None else (g_reads[:, t] + g_m).unsqueeze(1)
            g_mem = torch.baddbmm(g_mem, psi.transpose(1, 2), g)  # m_t = psi_t M_t
            if query is not None:  # psi_t = softmax(q_t M_t^T)
                g_psi = torch.bmm(g, mem.transpose(1, 2))
                if g_psis is not None:
                    g_psi += g_psis[:, t:t + 1]
                g_s = torch._softmax_backward_data(g_psi, psi, -1, psi.dtype)
                torch.bmm(g_s, mem, out=g_q[:, t:t + 1])
                g_mem = torch.baddbmm(g_mem, g_s.transpose(1, 2), query[:, t:t + 1])
            g_m = None
            if t >= first:  # M_t = z * M_{t-1} + (1 - z) * u
                w = t - first
                z, u, gates = zs[w], us[w], g_pre[w]
                torch.ops.aten.sigmoid_backward(g_mem * (prevs[w] - u), z,
                                                grad_input=gates[..., :d])
                torch.ops.aten.tanh_backward(g_mem - g_mem * z, u, grad_input=gates[..., d:])
                g_x = torch.sum(gates, 1, out=g_h[:, t])  # the gradient of from_h h + from_m m
                g_mem = torch.matmul(gates, w_slot).addcmul_(g_mem, z)
                g_m = torch.mm(g_x, w_m)
        g_w_m = g_w_slot = None
        if prevs is not None:  # the weight gradients: one product over all the writes
            g_w_slot = torch.mm(g_pre.view(-1, 2 * d).t(), prevs.view(-1, d))
            g_x = g_h[:, first:].transpose(0, 1).reshape(-1, 2 * d)
            g_w_m = torch.mm(g_x.t(), prev_reads.view(-1, d))
        return g_h, g_q, g_mem, (g_m if first == 0 else None), g_w_m, g_w_slot


class CoverageAttention(torch.autograd.Function):
    """Token attention with coverage over ``T`` steps (M2M eq. 16-17), as
    :meth:`..model.Mem2MemDecoder._attention_steps` runs it step by step.

    ``apply(keys, query, cov, w_c, v, pad, keep, coverage_loss)``: ``keys`` B x S x A (``W_e
    h^(w)_i``), ``query`` B x T x A (``W_d h^(m)_t`` with its bias), ``cov`` B x S the coverage
    before the first step, ``w_c`` / ``v`` (A) the coverage weight and the score vector, ``pad`` /
    ``keep`` the padded (bool) and kept (float) source positions, ``coverage_loss``: also See et
    al.'s loss. Returns ``alpha`` (B x T x S), the last coverage and the losses (B x T; empty
    without them).

    The B x S x A ``tanh`` of a step is made in one buffer, used for the scores and not kept: the
    backward makes it again, by the same operations (the same values), when it reaches that step.
    So no B x T x S x A activation is stored (what :data:`..model.RECOMPUTE_ABOVE` is for on the
    reference path), and each step's work stays in the cache. Backward, per step in reverse: the
    softmax's gradient, then the score gradient through ``tanh`` into the keys, the query, ``w_c``,
    ``v`` and the coverage that the next steps carry back."""

    @staticmethod
    def _tanh(keys, q, cov, wc, out, tmp):
        """``tanh(keys + q + cov w_c)`` into ``out`` (``tmp``: a buffer for ``cov w_c``), the
        operations of ``_token_scores(..., inplace=True)``."""
        torch.add(keys, q.unsqueeze(1), out=out)
        torch.mul(cov.unsqueeze(-1), wc, out=tmp)
        return out.add_(tmp).tanh_()

    @staticmethod
    def forward(ctx, keys, query, cov, w_c, v, pad, keep, coverage_loss):
        wc, vw = w_c.view(1, 1, -1), v.view(1, -1)
        buf, tmp = torch.empty_like(keys), torch.empty_like(keys)
        probs, covs, alphas = [], [], []
        for q in query.unbind(1):
            th = CoverageAttention._tanh(keys, q, cov, wc, buf, tmp)
            scores = F.linear(th, vw).squeeze(-1)
            p = F.softmax(scores.masked_fill(pad, FILL), dim=-1)
            alpha = p * keep
            probs.append(p)
            covs.append(cov)
            cov = cov + alpha  # M2M eq. 16
            alphas.append(alpha)
        alpha, covs = torch.stack(alphas, dim=1), torch.stack(covs, dim=1)
        losses = torch.minimum(alpha, covs).sum(-1) if coverage_loss else alpha.new_zeros(0)
        ctx.save_for_backward(keys, query, w_c, v, pad, keep, alpha, covs, torch.stack(probs, 1))
        ctx.coverage_loss = coverage_loss
        return alpha, cov, losses

    @staticmethod
    def backward(ctx, g_alpha, g_cov, g_losses):
        keys, query, w_c, v, pad, keep, alpha, covs, probs = ctx.saved_tensors
        bsz, steps, slen = alpha.shape
        wc = w_c.view(1, 1, -1)
        buf, tmp = torch.empty_like(keys), torch.empty_like(keys)
        g_keys = torch.zeros_like(keys)
        g_query = torch.empty_like(query)
        g_w, g_v = torch.zeros_like(w_c), torch.zeros_like(v)
        g_cov = torch.zeros_like(covs[:, 0]) if g_cov is None else g_cov.clone()
        g_alpha = torch.zeros_like(alpha) if g_alpha is None else g_alpha
        g_from_loss = None
        if ctx.coverage_loss and g_losses is not None:  # torch.minimum's gradient (ties: half)
            g = g_losses.unsqueeze(-1).expand_as(alpha)
            g_min = torch.where(alpha == covs, g / 2, g)
            g_alpha = g_alpha + g_min.masked_fill(alpha > covs, 0)
            g_from_loss = g_min.masked_fill(alpha < covs, 0)  # to cov_t
        ones = keys.new_ones(bsz, slen, 1)
        for t in reversed(range(steps)):
            cov = covs[:, t]
            g_p = (g_alpha[:, t] + g_cov) * keep  # alpha_t also makes cov_{t+1}
            g_s = torch._softmax_backward_data(g_p, probs[:, t], -1, probs.dtype)
            g_s = g_s.masked_fill(pad, 0)
            th = CoverageAttention._tanh(keys, query[:, t], cov, wc, buf, tmp)
            g_v += torch.mv(th.view(-1, th.size(-1)).t(), g_s.reshape(-1))
            torch.mul(g_s.unsqueeze(-1), v, out=tmp)
            g_pre = torch.ops.aten.tanh_backward(tmp, th)
            g_keys += g_pre
            # the query's gradient (sum over the source) and w_c's (weighted by the coverage)
            sums = torch.bmm(torch.cat([ones, cov.unsqueeze(-1)], dim=-1).transpose(1, 2), g_pre)
            g_query[:, t] = sums[:, 0]
            g_w += sums[:, 1].sum(0)
            g_cov = g_cov + torch.matmul(g_pre, w_c)  # cov_t's share of the scores
            if g_from_loss is not None:
                g_cov = g_cov + g_from_loss[:, t]
        return g_keys, g_query, g_cov, g_w, g_v, None, None, None


class GRURecurrence(torch.autograd.Function):
    """A single-layer GRU over ``T`` steps from its input projections, ``D`` directions (or
    separate GRUs) at once, as ATen's GRU cell computes it on the CPU::

        r = sigmoid(W_hr h + b_hr + gi_r), z = sigmoid(W_hz h + b_hz + gi_z),
        n = tanh(gi_n + r * (W_hn h + b_hn)), h' = (h - n) * z + n

    ``apply(gi, h0, w_hh, b_hh, sizes)``: ``gi`` T x D x N x 3H (``W_i x_t + b_i``, every step at
    once), ``h0`` D x N x H, ``w_hh`` D x 3H x H, ``b_hh`` D x 3H; ``sizes`` (None: N at every
    step) the rows that run at each step, as the batch sizes of a packed sequence: the sequences
    sorted by length, longest first, step t runs the first ``sizes[t]``. Returns the states, T x D
    x N x H (zeros where a row does not run). With ``D = 1`` the hidden product is ATen's own
    ``addmm`` (the values of ``nn.GRU``); with two, one batched product for both. Backward: per
    step the gates' gradients and the state's through ``W_hh``; ``W_hh``'s and ``b_hh``'s
    gradients one product over all the steps."""

    @staticmethod
    def _hidden(h, w_hh, b_hh, out):
        """``W_hh h + b_hh`` into ``out`` (D x n x 3H)."""
        if h.size(0) == 1:
            torch.addmm(b_hh[0], h[0], w_hh[0].t(), out=out[0])
        else:
            torch.baddbmm(b_hh.unsqueeze(1), h, w_hh.transpose(1, 2), out=out)

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_hh, sizes=None):
        steps, hid, rows = gi.size(0), h0.size(-1), h0.size(1)
        sizes = [rows] * steps if sizes is None else sizes
        gates = gi.new_zeros(gi.shape)  # per step: r, z and W_hn h + b_hn
        news = gi.new_zeros(steps, *h0.shape)
        out = gi.new_zeros(steps, *h0.shape)
        h = h0
        for t, n in enumerate(sizes):  # ATen's operations, gate by gate (the same values)
            if n == 0:
                continue
            g, x = gates[t, :, :n], gi[t, :, :n]
            GRURecurrence._hidden(h[:, :n], w_hh, b_hh, g)
            r = g[..., :hid].add_(x[..., :hid]).sigmoid_()
            z = g[..., hid:2 * hid].add_(x[..., hid:2 * hid]).sigmoid_()
            new = torch.tanh(x[..., 2 * hid:] + g[..., 2 * hid:] * r, out=news[t, :, :n])
            torch.add(torch.sub(h[:, :n], new).mul_(z), new, out=out[t, :, :n])
            h = out[t]
        ctx.save_for_backward(h0, w_hh, gates, news, out)
        ctx.sizes = sizes
        return out

    @staticmethod
    def backward(ctx, g_out):
        h0, w_hh, gates, news, out = ctx.saved_tensors
        hid = h0.size(-1)
        g_gi = torch.zeros_like(gates)
        g_gh = torch.zeros_like(gates)
        g_h = torch.zeros_like(h0)  # a row's state after its last step gets no gradient here
        for t in reversed(range(len(ctx.sizes))):
            n = ctx.sizes[t]
            if n == 0:
                continue
            g = g_out[t, :, :n] + g_h[:, :n]
            h_prev = (out[t - 1] if t else h0)[:, :n]
            gate = gates[t, :, :n]
            r, z, gh_n = gate[..., :hid], gate[..., hid:2 * hid], gate[..., 2 * hid:]
            g_n = torch.ops.aten.tanh_backward(g - g * z, news[t, :, :n])  # through n's tanh
            gi_t, gh_t = g_gi[t, :, :n], g_gh[t, :, :n]
            torch.ops.aten.sigmoid_backward(g_n * gh_n, r, grad_input=gi_t[..., :hid])
            torch.ops.aten.sigmoid_backward(g * (h_prev - news[t, :, :n]), z,
                                            grad_input=gi_t[..., hid:2 * hid])
            gi_t[..., 2 * hid:] = g_n
            gh_t[..., :2 * hid] = gi_t[..., :2 * hid]
            torch.mul(g_n, r, out=gh_t[..., 2 * hid:])
            g_h[:, :n] = g * z + (torch.mm(gh_t[0], w_hh[0]).unsqueeze(0) if h0.size(0) == 1
                                  else torch.bmm(gh_t, w_hh))
        # W_hh and b_hh: one product over the steps (per direction); rows not run add zeros
        d = h0.size(0)
        flat_g = g_gh.transpose(0, 1).reshape(d, -1, 3 * hid)  # D x T N x 3H
        prev = torch.cat([h0.unsqueeze(0), out[:-1]]).transpose(0, 1).reshape(d, -1, hid)
        g_w = torch.bmm(flat_g.transpose(1, 2), prev)
        return g_gi, g_h, g_w, flat_g.sum(1), None
