"""Mem2Mem (Park et al., "Learning to Summarize Long Texts with Memory Compression and Transfer").

Two presets of one hierarchical GRU encoder-decoder (model ``mem2mem``):

    hred_base      the baseline (§2, App. A.1): HRED + pointer-generator + coverage
    mem2mem_base   + encoder memory compression, memory transfer, decoder memory read/write (§3)

Shapes: B batch, S kept source tokens, L sentences, T target steps, r memory slots,
E embedding (128), d = 2 x ``--encoder-hidden-size`` (bi-GRU output), H decoder hidden (256).

Encoder (M2M eq. 1-2, 4-6). Sentences are the ``<sep>``-delimited spans of ``src_tokens``
(:mod:`..models.mem2mem.sentences`), optionally capped at ``--max-doc-sentences`` sentences of at
most ``--max-sentence-tokens`` pieces (default 0 / 0: all; App. A.2's 4 sections x 500 tokens is
applied to the data by the PubMed / arXiv converter, so the model cuts nothing further). A bi-GRU
runs over every sentence (packed): its outputs are the token states ``h^(w)_i`` and its final states
(forward last, backward first) the sentence embedding ``s_j`` (M2M eq. 1). A bi-GRU over the
sentence embeddings gives ``h^(s)_j`` (M2M eq. 2), i.e. the rows of ``H`` (M2M eq. 4), and its final
states give the decoder's initial state ``tanh(W_init [->h_L; <-h_1])``. With ``--memory-encoder``:
``A = softmax(W_a1 tanh(W_a2 H^T))`` (M2M eq. 5, padding sentences masked), ``M_E = A H`` and
``L_comp = ||A A^T - I||_F^2`` (M2M eq. 6), returned as aux loss ``mem_comp`` (mean over documents).

Decoder, per step t (the target GRU has no input feeding, so it runs over the whole prefix at once;
the rest runs step by step because memory and coverage are recurrent):

* ``h^(d)_t = GRU(x'_t, h^(d)_{t-1})`` with ``x'_t`` the embedding of the previous token;
* gated write (M2M eq. 8-10), at every step but the first, before the read: each slot ``M_D(k)`` is
  updated from ``h^(d)_t`` and the previous read ``m_{t-1}``, i.e. M2M eq. 8-10's ``h^(d)_{t+1}``
  and ``m_t`` one step on, so the memory absorbs the token just produced (``x'_t``, through
  ``h^(d)_t``) before M2M eq. 7 reads it. The first step reads the initial ``M_D``: ``M_E``
  (transfer) or zeros. The incremental state carries ``M_D`` and ``m_{t-1}``. (So the write's
  parameters get no gradient from a batch whose targets are all one token long, i.e. empty
  summaries, which preprocessing rejects; every real batch uses them, as DDP needs.);
* memory read (M2M eq. 7) of the updated memory: ``psi_t = softmax(h_t W_psi M_D^T)``, ``m_t = psi_t
  M_D``, ``h^(m)_t = W_m [h^(d)_t; m_t]``; without any memory ``h^(m)_t = h^(d)_t``;
* token attention with coverage (M2M eq. 16-17, Luong "concat" score): ``alpha_t = softmax(v^T
  tanh(W_e h^(w)_i + W_d h^(m)_t + w_c cov_ti))``, ``cov_t = sum_{t'<t} alpha_t'``;
* sentence attention (Luong "general"): ``beta_t = softmax(h^(m)_t W_beta h^(s)_j)``;
* ``gamma_ti = beta_{t,m(i)} alpha_ti / sum_l beta_{t,m(l)} alpha_tl`` (M2M eq. 3), ``c_t = sum_i
  gamma_ti h^(w)_i``;
* ``P_g = softmax(W_v tanh(W_o [h^(m)_t; c_t]))``, ``z_t = sigma(w_c c_t + w_d h^(m)_t + w_x
  x'_t)``, ``P = z_t P_g + (1 - z_t) P_c`` with ``P_c(w) = sum_{i: x_i = w} gamma_ti``
  (M2M eq. 13-15, over the extended vocabulary of :mod:`..features.copy_mechanism`). The decoder
  returns ``log P`` (floored at ``log 1e-10``) as its scores, so ``get_normalized_probs`` (a
  log-softmax) gives ``P`` back and ``fairseq-generate --temperature T`` samples/searches ``P^(1/T)
  / sum_w P(w)^(1/T)``.

How the steps are run (the equations above either way). The reference
(``Mem2MemDecoder.batched_path = False``, ``_recurrent_steps``) runs each step whole, as listed.
The batched path (the default, ``_batched_steps``) splits them by what they depend on: the write
and the read (M2M eq. 7-10) depend only on the memory, the previous read and ``h^(d)_t``, so they
run in a loop of their own, with ``from_h h^(d)_t`` and ``W_psi h^(d)_t`` one product over all
steps; ``h^(m) = W_m [h^(d); m]`` and ``W_d h^(m)_t`` are then one product each; only the coverage
recurrence (M2M eq. 16-17) runs step by step; sentence attention (M2M eq. 3) and the
pointer-generator (M2M eq. 13-15) were over all steps already. In float32 training on the CPU,
:mod:`.steps` runs the memory loop, the coverage loop and the three GRUs as autograd functions with
their own backward (the same forward operations; weight gradients one product over the steps).
Evaluation and decoding run the modules. Both paths agree within float32 rounding
(tests/test_mem2mem_speed_paths.py).

Auxiliary losses (``net_output[1]["aux_losses"]``, weighted by ``summarization_loss``):
``mem_comp`` (M2M eq. 6, per document), ``mem_read`` (M2M eq. 11 against the initial ``M_E``: per
document, the mean over its target steps of ``||psi_t M_E - beta_t H||_2``), and with
``--coverage-loss`` See et al.'s ``coverage`` = ``sum_i min(alpha_ti, cov_ti)`` per target token.

Sizes (App. A.2: single-layer bi-GRUs, "all GRUs have the hidden size of 256", token embeddings
128, a 50,000-word vocabulary, memory compression with 10 heads and a self-attention hidden size of
128; Table 1: Mem2Mem "14.7M"). The bi-GRUs are read as 256 wide in all (128 per direction): at
vocab 50,000 ``mem2mem_base`` has 14,595,153 parameters (14.60M, 0.1M under the stated 14.7M; 256
per direction gives 17.2M) and ``hred_base`` 13,970,513 (tests/test_mem2mem.py); the paper does not
say where the other 0.1M lie.

Coverage. §2: "the pointer generator and decoder coverage method in See et al. (2017) are used for
the baseline HRED" (and Mem2Mem builds on it); App. A.1.2 describes the coverage vector in the token
attention (M2M eq. 16-17) and says nothing of See et al.'s coverage loss, its weight or when it
starts. See et al. add that loss with weight lambda = 1 for a last phase, after training without it
has converged. Here it is the auxiliary loss ``coverage`` (``--coverage-loss True``; the criterion's
``--coverage-weight``, also ``--coverage-loss-weight``, default 1), off unless asked, so both
schedules are commands: from the first update (the recipes' choice), or See et al.'s last phase
(``--restore-file`` the converged checkpoint with ``--coverage-loss True``: the loss adds no
parameter).

Ablations of Table 2 (PubMed), all on ``--arch mem2mem_base``:

    Baseline HRED      --memory-encoder False --memory-decoder False   (= --arch hred_base)
    + Encoder Mem      --memory-decoder False --mem-comp-weight 0 --mem-read-weight 0
                       (the decoder reads the static M_E; no write)
    + Decoder Mem      --memory-encoder False --memory-transfer False  (M_D from zeros, with writes)
    + Mem Transfer     --mem-comp-weight 0 --mem-read-weight 0
    + Reg L_comp       --mem-read-weight 0                             (lambda_1 = 1e-4)
    + Reg L_read       (defaults: the full model, lambda_2 = 0.01)

``--memory-transfer False`` with both memories keeps ``M_E`` (for ``L_comp`` / ``L_read``) but
starts ``M_D`` from zeros. A memory started from zeros keeps its ``r`` slots identical (M2M eq. 8-10
treat every slot alike), so its read attention is uniform whatever ``W_psi`` is; that reader is
built without ``W_psi`` (same outputs). Modules a setting does not use are not created, so every
parameter gets a gradient in every setting.
"""
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq import utils
from fairseq.models import (
    FairseqEncoder,
    FairseqEncoderDecoderModel,
    FairseqIncrementalDecoder,
    register_model,
    register_model_architecture,
)
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.utils.checkpoint import checkpoint

from ...aux_losses import AuxLoss, register_aux_loss
from ...flags import bool_flag, parse_bool_options, renamed_flag
from ...modules.checkpointing import add_checkpoint_args
from ...modules.dropout import Drops, add_dropout_mask_arg, check_dropout_mask, set_dropout_mask
from ...modules.features import Inspection
from .memory import (MemoryCompression, MemoryReader, MemoryWriter, compression_loss,
                     masked_softmax, read_loss)
from ...features.copy_mechanism import (MarkerEmbedding, count_position_markers,
                                        mix_copy_distribution)
from .sentences import sentence_layout
from .steps import CoverageAttention, GRURecurrence, MemoryRecurrence

# See et al. (2017): the coverage loss, named apart from the model's coverage attention
# (--coverage-attention) and the decoding coverage penalty (--coverage-penalty)
register_aux_loss(AuxLoss("coverage", 1.0, "coverage loss weight (See et al., 2017); also spelled "
                          "--coverage-loss-weight", aliases=("--coverage-loss-weight",)))

logger = logging.getLogger(__name__)

SEP = "<sep>"
RECOMPUTE_ABOVE = 2**28  # stored M2M eq. 17 activations (elements) beyond which they are recomputed


def sep_index(dictionary):
    idx = dictionary.index(SEP)
    if idx == dictionary.unk():
        raise ValueError(
            f"mem2mem needs sentence boundaries: the source dictionary has no {SEP!r} token "
            "(prepare the data with fairseq-sum-prepare, which keeps sentences as <sep>)"
        )
    return idx


def _bigru_final(h_n):
    """``[->h_last; <-h_first]`` from a single-layer bi-GRU's ``h_n`` (2 x N x h)."""
    return torch.cat([h_n[0], h_n[1]], dim=-1)


def _recurrence_applies(x):
    """Where the autograd functions of .steps run: float32 training on the CPU outside autocast
    (they are measured there; on CUDA, cuDNN's GRU and the reference's steps stay)."""
    return (torch.is_grad_enabled() and x.dtype == torch.float32 and x.device.type == "cpu"
            and not torch.is_autocast_enabled(x.device.type))


def run_bigru(rnn, x, lengths, fast):
    """A single-layer bi-GRU (``rnn``, batch first) over ``x`` (N x W x E), each sequence ``n``
    its first ``lengths[n]`` (>= 1) steps. Returns the outputs (N x W x 2h, zeros past each
    length) and ``h_n`` (2 x N x h), as ``rnn`` over the packed sequences.

    ``fast`` (the batched path in training): both directions as one
    :class:`.steps.GRURecurrence`, over the sequences sorted by length as packing sorts them (step
    t runs the sequences longer than t), the backward direction over each sequence reversed within
    its length. Same values within float32 rounding."""
    if not fast:
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return out, h_n
    n, width, _ = x.shape
    lengths, order = lengths.sort(descending=True, stable=True)
    x = x[order]
    pos = torch.arange(width, device=x.device).unsqueeze(0)
    valid = pos < lengths.unsqueeze(1)
    sizes = valid.sum(0).tolist()  # the batch sizes of the packed sequences
    rev = torch.where(valid, lengths.unsqueeze(1) - 1 - pos, pos)  # reversal within each length
    x_rev = x.gather(1, rev.unsqueeze(-1).expand_as(x))
    gi = torch.stack([F.linear(x.transpose(0, 1), rnn.weight_ih_l0, rnn.bias_ih_l0),
                      F.linear(x_rev.transpose(0, 1), rnn.weight_ih_l0_reverse,
                               rnn.bias_ih_l0_reverse)], dim=1)  # W x 2 x N x 3h
    hid = rnn.hidden_size
    states = GRURecurrence.apply(gi, x.new_zeros(2, n, hid),
                                 torch.stack([rnn.weight_hh_l0, rnn.weight_hh_l0_reverse]),
                                 torch.stack([rnn.bias_hh_l0, rnn.bias_hh_l0_reverse]), sizes)
    fwd = states[:, 0].transpose(0, 1)
    bwd = states[:, 1].transpose(0, 1).gather(1, rev.unsqueeze(-1).expand(n, width, hid))
    rows, last = torch.arange(n, device=x.device), lengths - 1
    unsort = torch.empty_like(order)
    unsort[order] = rows
    h_n = torch.stack([fwd[rows, last], states[last, 1, rows]])[:, unsort]
    return torch.cat([fwd, bwd], dim=-1)[unsort], h_n


class HierarchicalEncoder(Drops, FairseqEncoder):
    """Sentence bi-GRU + document bi-GRU (M2M eq. 1-2) and, optionally, memory compression
    (M2M eq. 4-6)."""

    # In float32 CPU training, the sentence and document bi-GRUs as one steps.GRURecurrence each
    # (run_bigru); False: nn.GRU over packed sequences (the reference).
    gru_recurrence = True

    def __init__(self, args, dictionary, embed_tokens):
        super().__init__(dictionary)
        self.sep = sep_index(dictionary)
        self.padding_idx = dictionary.pad()
        self.embed_tokens = embed_tokens
        self.dropout = args.dropout
        self.max_doc_sentences = args.max_doc_sentences
        self.max_sentence_tokens = args.max_sentence_tokens
        self.max_source_positions = args.max_source_positions
        h = args.encoder_hidden_size
        self.sent_rnn = nn.GRU(embed_tokens.embedding_dim, h, batch_first=True, bidirectional=True)
        self.doc_rnn = nn.GRU(2 * h, h, batch_first=True, bidirectional=True)
        self.init_proj = nn.Linear(2 * h, args.decoder_hidden_size)
        self.compression = (MemoryCompression(2 * h, args.memory_attn_dim, args.memory_slots)
                            if args.memory_encoder else None)

    def forward(self, src_tokens, src_lengths=None, **kwargs):
        lay = sentence_layout(src_tokens, self.padding_idx, self.sep, self.max_doc_sentences,
                              self.max_sentence_tokens)
        bsz, slen = lay.tokens.shape
        n_slots = lay.sent_lengths.size(1)
        width = int(lay.sent_lengths.max().clamp(min=1))
        mask = lay.token_mask

        x = self.drop(self.embed_tokens(lay.tokens), self.dropout)
        # M2M eq. 1: one packed bi-GRU pass over every non-empty sentence of the batch
        row = torch.arange(bsz, device=x.device).unsqueeze(1) * n_slots + lay.sent_id  # B x S
        grid = x.new_zeros(bsz * n_slots, width, x.size(-1))
        grid[row[mask], lay.sent_pos[mask]] = x[mask]
        lengths = lay.sent_lengths.view(-1)
        rows = lengths.nonzero().squeeze(1)
        fast = self.gru_recurrence and _recurrence_applies(x)
        out, h_n = run_bigru(self.sent_rnn, grid[rows], lengths[rows], fast)
        d = out.size(-1)
        row_of = torch.full((bsz * n_slots,), -1, dtype=torch.long, device=x.device)
        row_of[rows] = torch.arange(rows.numel(), device=x.device)
        token_states = out.new_zeros(bsz, slen, d)
        token_states[mask] = out[row_of[row[mask]], lay.sent_pos[mask]]
        sents = out.new_zeros(bsz * n_slots, d)
        sents[rows] = _bigru_final(h_n)
        sents = sents.view(bsz, n_slots, d)

        # M2M eq. 2: document bi-GRU over the sentence embeddings; H, B x L x d
        sent_states, h_n = run_bigru(self.doc_rnn, sents, lay.num_sentences.clamp(min=1), fast)
        sent_mask = lay.sent_mask
        init_hidden = torch.tanh(self.init_proj(_bigru_final(h_n)))

        encoder_out = {
            "token_states": token_states,
            "token_mask": mask,
            "token_sent": lay.sent_id,
            "src_ids": lay.tokens,
            "orig_pos": lay.orig_pos,
            "sent_states": sent_states,
            "sent_mask": sent_mask,
            "init_hidden": init_hidden,
            "src_len": src_tokens.size(1),
            "aux_losses": {},
        }
        if self.compression is not None:
            mem, A = self.compression(sent_states, sent_mask)  # M2M eq. 5
            encoder_out["memory"] = mem  # M_E
            encoder_out["write_attn"] = A
            encoder_out["aux_losses"]["mem_comp"] = compression_loss(A).mean()  # M2M eq. 6
        return encoder_out

    def reorder_encoder_out(self, encoder_out, new_order):
        return {
            k: (v.index_select(0, new_order) if torch.is_tensor(v)
                else ({} if k == "aux_losses" else v))
            for k, v in encoder_out.items()
        }

    def max_positions(self):
        return self.max_source_positions


class Mem2MemDecoder(Drops, FairseqIncrementalDecoder):
    """GRU decoder with token/sentence attention, pointer-generator, coverage and memory
    read/write."""

    def __init__(self, args, dictionary, embed_tokens, num_markers=0):
        super().__init__(dictionary)
        self.embed_tokens = embed_tokens
        self.num_markers = num_markers
        self.dropout = args.dropout
        self.max_target_positions = args.max_target_positions
        e, hd, d, a = (embed_tokens.embedding_dim, args.decoder_hidden_size,
                       2 * args.encoder_hidden_size, args.attention_dim)
        self.memory_slots, self.mem_dim = args.memory_slots, d
        self.memory_encoder, self.memory_transfer = args.memory_encoder, args.memory_transfer
        self.rnn = nn.GRU(e, hd, batch_first=True)
        from_zeros = args.memory_decoder and not (args.memory_encoder and args.memory_transfer)
        self.reader = (MemoryReader(hd, d, attend=not from_zeros)
                       if (args.memory_encoder or args.memory_decoder) else None)
        self.writer = MemoryWriter(hd, d) if args.memory_decoder else None
        # token attention (M2M eq. 17) and sentence attention
        self.attn_key = nn.Linear(d, a, bias=False)  # W_e
        self.attn_query = nn.Linear(hd, a)  # W_d (+ bias)
        self.attn_cov = nn.Linear(1, a, bias=False) if args.coverage_attention else None  # w_c
        self.attn_v = nn.Linear(a, 1, bias=False)  # v
        self.sent_attn = nn.Linear(hd, d, bias=False)  # W_beta
        self.coverage_loss = args.coverage_attention and args.coverage_loss
        # output
        self.readout = nn.Linear(hd + d, args.decoder_out_embed_dim)
        n_real = len(dictionary) - num_markers
        if args.share_decoder_input_output_embed:
            if args.decoder_out_embed_dim != e:
                raise ValueError("--share-decoder-input-output-embed needs "
                                 "--decoder-out-embed-dim == --embed-dim")
            self.output_projection = None
            self.output_bias = nn.Parameter(torch.zeros(n_real))
        else:
            self.output_projection = nn.Linear(args.decoder_out_embed_dim, n_real)
        # w_c, w_d, w_x (M2M eq. 13)
        self.p_gen = nn.Linear(d + hd + e, 1) if args.pointer_generator else None
        self.need_attn = False

    # The decoder's steps with the parts that do not depend on the recurrences batched over all
    # steps (:meth:`_batched_steps`); False: the reference, step by step (:meth:`_recurrent_steps`).
    # tests/test_mem2mem_speed_paths.py compares the two.
    batched_path = True
    # On the batched path, in float32 CPU training: the memory's loop as one autograd function
    # (steps.MemoryRecurrence, its weight gradients one product over the steps); False: the
    # writer and the reader step by step under autograd.
    memory_recurrence = True
    # Likewise the coverage recurrence of the token attention (steps.CoverageAttention) and the
    # word decoder's GRU (steps.GRURecurrence, the same values as nn.GRU).
    attention_recurrence = True
    gru_recurrence = True

    # --- state -------------------------------------------------------------------------------

    def _initial_state(self, encoder_out):
        h0 = encoder_out["init_hidden"]
        bsz = h0.size(0)
        memory = None
        if self.writer is not None:
            if self.memory_transfer and "memory" in encoder_out:
                memory = encoder_out["memory"]  # M_D <- M_E
            else:
                memory = h0.new_zeros(bsz, self.memory_slots, self.mem_dim)
        elif self.reader is not None:
            memory = encoder_out["memory"]  # static read of M_E
        cov = None
        if self.attn_cov is not None:
            cov = encoder_out["token_states"].new_zeros(encoder_out["token_mask"].shape)
        keys = self.attn_key(encoder_out["token_states"])
        return {"hidden": h0, "memory": memory, "read": None, "coverage": cov, "keys": keys}

    def reorder_incremental_state(self, incremental_state, new_order):
        state = self.get_incremental_state(incremental_state, "state")
        if state is None:
            return
        state = {k: (v.index_select(0, new_order) if v is not None else None)
                 for k, v in state.items()}
        self.set_incremental_state(incremental_state, "state", state)

    # --- forward -----------------------------------------------------------------------------

    def _token_scores(self, keys, query, cov, inplace=False):
        """M2M eq. 17 scores, B x S, for one step (``query`` B x A, ``cov`` B x S or None);
        ``inplace``: the sums and the tanh reuse one buffer (the same values)."""
        pre = keys + query.unsqueeze(1)
        if cov is not None:
            wc = cov.unsqueeze(-1) * self.attn_cov.weight.view(1, 1, -1)
            pre = pre.add_(wc) if inplace else pre + wc
        return self.attn_v(pre.tanh_() if inplace else torch.tanh(pre)).squeeze(-1)

    def forward(self, prev_output_tokens, encoder_out, incremental_state=None, features_only=False,
                **kwargs):
        state = None
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
            state = self.get_incremental_state(incremental_state, "state")
        if state is None:
            state = self._initial_state(encoder_out)

        x = self.drop(self.embed_tokens(prev_output_tokens), self.dropout)
        h0 = state["hidden"].unsqueeze(0).contiguous()
        if self.batched_path and self.gru_recurrence and _recurrence_applies(x):
            hs, h_last = self._gru(x, h0)
        else:
            hs, h_last = self.rnn(x, h0)  # h^(d), B x T x H
        recurrent = self._batched_steps if self.batched_path else self._recurrent_steps
        steps = recurrent(hs, state, encoder_out["token_mask"])
        hm, alpha = steps["hm"], steps["alpha"]
        beta, gamma, ctx = self._sentence_attention(hm, alpha, encoder_out)
        output = self._output_distribution(hm, ctx, gamma, x, encoder_out)

        extra = {"attn": [None], "alpha": alpha, "beta": beta, "gamma": gamma,
                 "read_attn": steps["read_attn"]}
        if self.need_attn and not self.training:
            extra["attn"] = [self._source_attention(gamma, encoder_out)]
        if incremental_state is not None:
            self.set_incremental_state(
                incremental_state, "state", {
                    "hidden": h_last.squeeze(0),
                    "memory": steps["memory"],
                    "read": steps["read"] if self.writer is not None else None,
                    "coverage": steps["coverage"],
                    "keys": state["keys"],
                })
            extra["aux_losses"] = {}
        else:
            extra["aux_losses"] = self._aux_losses(prev_output_tokens, encoder_out, extra, beta,
                                                   steps["cov_losses"])
        return output, extra

    def _gru(self, x, h0):
        """``self.rnn(x, h0)`` (the word decoder's GRU) as a :class:`.steps.GRURecurrence`: the
        input projection of every step in one product, as ATen computes it, then the steps (the
        same values as ``nn.GRU``)."""
        rnn = self.rnn
        gi = F.linear(x.transpose(0, 1), rnn.weight_ih_l0, rnn.bias_ih_l0)  # T x B x 3H
        states = GRURecurrence.apply(gi.unsqueeze(1), h0, rnn.weight_hh_l0.unsqueeze(0),
                                     rnn.bias_hh_l0.unsqueeze(0))  # T x 1 x B x H
        return states[:, 0].transpose(0, 1), states[-1]

    def _recurrent_steps(self, hs, state, token_mask):
        """Per step: gated write (M2M eq. 8-10), read (M2M eq. 7), token attention with coverage
        (M2M eq. 16-17).

        Returns ``hm`` (h^(m), B x T x H), ``alpha`` (B x T x S), ``read_attn`` (Psi, B x T x r, or
        None), the final ``memory``, ``read`` (m_t) and ``coverage``, and the per-step coverage
        losses."""
        memory, cov, keys = state["memory"], state["coverage"], state["keys"]
        m = state["read"]  # m_{t-1}, the previous step's read (None before the first step)
        hms, alphas, psis, cov_losses = [], [], [], []
        # M2M eq. 17 keeps a B x S x A tanh per step for backward; above RECOMPUTE_ABOVE elements in
        # all (long documents and summaries), it is recomputed in backward instead of stored
        large = keys.numel() * hs.size(1) > RECOMPUTE_ABOVE
        recompute = self.training and torch.is_grad_enabled() and large
        for t in range(hs.size(1)):
            h = hs[:, t]
            # M2M eq. 8-10: h^(d)_t with m_{t-1}, before the read
            if self.writer is not None and m is not None:
                memory = self.writer(h, m, memory)
            if self.reader is not None:  # M2M eq. 7
                hm, m, psi = self.reader(h.unsqueeze(1), memory)
                hm, m = hm.squeeze(1), m.squeeze(1)
                psis.append(psi.squeeze(1))
            else:
                hm = h
            query = self.attn_query(hm)
            if recompute:
                scores = checkpoint(self._token_scores, keys, query, cov, use_reentrant=False)
            else:
                scores = self._token_scores(keys, query, cov)
            alpha = masked_softmax(scores, token_mask).to(hs.dtype)
            if cov is not None:
                if self.coverage_loss:
                    cov_losses.append(torch.minimum(alpha, cov).sum(-1))
                cov = cov + alpha  # M2M eq. 16
            hms.append(hm)
            alphas.append(alpha)
        return {
            "hm": torch.stack(hms, dim=1), "alpha": torch.stack(alphas, dim=1),
            "read_attn": torch.stack(psis, dim=1) if psis else None,
            "memory": memory, "read": m, "coverage": cov, "cov_losses": cov_losses,
        }

    def _batched_steps(self, hs, state, token_mask):
        """:meth:`_recurrent_steps` with what does not depend on the recurrences done for all steps
        at once (:attr:`batched_path`): the memory runs its own loop (M2M eq. 7-10 depend on the
        memory and the previous read only), in which ``from_h h^(d)_t`` (M2M eq. 8-9) and ``W_psi
        h^(d)_t`` (M2M eq. 7) come from one matrix product over the steps each; then ``h^(m) = W_m
        [h^(d); m]`` and the token attention's query ``W_d h^(m)_t`` are one product each, and only
        the coverage recurrence (M2M eq. 16-17) runs step by step (without coverage, not even it).
        Same outputs as :meth:`_recurrent_steps` within float32 rounding (a product over all
        steps may round otherwise than one over a step)."""
        memory, cov, keys = state["memory"], state["coverage"], state["keys"]
        m, psis = state["read"], None
        if self.reader is None:
            hm = hs
        elif self.writer is None:  # a static memory (M_E): M2M eq. 7 for every step at once
            hm, ms, psis = self.reader(hs, memory)
            m = ms[:, -1]
        else:
            memory, ms, psis = self._memory_steps(hs, memory, m)
            hm = self.reader.combine(hs, ms)
            m = ms[:, -1]
        alpha, cov, cov_losses = self._attention_steps(keys, self.attn_query(hm), cov, token_mask,
                                                       hs.dtype)
        return {"hm": hm, "alpha": alpha, "read_attn": psis, "memory": memory, "read": m,
                "coverage": cov, "cov_losses": cov_losses}

    def _memory_steps(self, hs, memory, m):
        """The decoder memory's loop (M2M eq. 7-10): at step t, the gated write from ``h^(d)_t``
        and ``m_{t-1}`` (not before the first step, as in :meth:`_recurrent_steps`), then the read
        of the written memory. Returns the last memory, the reads ``m`` (B x T x d) and ``psi`` (B x
        T x r)."""
        h_part = self.writer.from_h(hs)  # [W_z1; W_u1] h^(d)_t + b, every step at once
        query = self.reader.W_psi(hs) if self.reader.W_psi is not None else None  # W_psi h^(d)_t
        if self.memory_recurrence and _recurrence_applies(hs):
            reads, psis, memory = MemoryRecurrence.apply(h_part, query, memory, m,
                                                         self.writer.from_m.weight,
                                                         self.writer.from_slot.weight)
            return memory, reads, psis
        h_parts = h_part.unbind(1)
        queries = [None] * hs.size(1) if query is None else query.unsqueeze(2).unbind(1)
        reads, psis = [], []
        for t, h in enumerate(hs.unbind(1)):
            if m is not None:
                memory = self.writer(h, m, memory, h_part=h_parts[t])
            _, m, psi = self.reader(h.unsqueeze(1), memory, query=queries[t], combine=False)
            m = m.squeeze(1)
            reads.append(m)
            psis.append(psi.squeeze(1))
        return memory, torch.stack(reads, dim=1), torch.stack(psis, dim=1)

    def _attention_steps(self, keys, query, cov, token_mask, dtype):
        """Token attention with coverage (M2M eq. 16-17) of every step, from the queries ``W_d
        h^(m)_t`` (B x T x A): ``alpha`` (B x T x S), the last coverage and the coverage losses (B x
        T, or [] without them). Without coverage the steps do not depend on each other: one
        B x T x S x A pass, unless that is above RECOMPUTE_ABOVE elements."""
        tgt_len = query.size(1)
        fill = torch.finfo(torch.float32).min
        large = keys.numel() * tgt_len > RECOMPUTE_ABOVE
        recompute = self.training and torch.is_grad_enabled() and large
        if cov is None and not large:
            scores = self.attn_v(torch.tanh(keys.unsqueeze(1) + query.unsqueeze(2))).squeeze(-1)
            return masked_softmax(scores, token_mask.unsqueeze(1)).to(dtype), None, []
        # masked_softmax's masks, made once
        pad, keep = ~token_mask, token_mask.to(torch.float32)
        if self.attention_recurrence and cov is not None and _recurrence_applies(keys):
            alpha, cov, losses = CoverageAttention.apply(
                keys, query, cov, self.attn_cov.weight.view(-1), self.attn_v.weight.view(-1), pad,
                keep, self.coverage_loss)
            return alpha, cov, (losses if self.coverage_loss else [])
        alphas, covs = [], []
        for q in query.unbind(1):
            if recompute:
                scores = checkpoint(self._token_scores, keys, q, cov, use_reentrant=False)
            else:
                scores = self._token_scores(keys, q, cov, inplace=True)
            alpha = (F.softmax(scores.float().masked_fill(pad, fill), dim=-1) * keep).to(dtype)
            if cov is not None:
                covs.append(cov)
                cov = cov + alpha  # M2M eq. 16
            alphas.append(alpha)
        alpha = torch.stack(alphas, dim=1)
        cov_losses = []
        if self.coverage_loss:  # sum_i min(alpha_ti, cov_ti), every step at once
            cov_losses = torch.minimum(alpha, torch.stack(covs, dim=1)).sum(-1)
        return alpha, cov, cov_losses

    def _sentence_attention(self, hm, alpha, encoder_out):
        """Sentence attention ``beta``, M2M eq. 3's ``gamma`` and the context ``c_t``."""
        dtype = alpha.dtype
        sent_states, token_states = encoder_out["sent_states"], encoder_out["token_states"]
        beta = masked_softmax(torch.bmm(self.sent_attn(hm), sent_states.transpose(1, 2)),
                              encoder_out["sent_mask"].unsqueeze(1))
        beta = beta.to(dtype)
        bsz, tgt_len, slen = alpha.shape
        beta_tok = beta.gather(2, encoder_out["token_sent"].unsqueeze(1).expand(bsz, tgt_len, slen))
        # M2M eq. 3 (in float32: the renormaliser may be tiny)
        gamma = alpha.float() * beta_tok.float()
        gamma = (gamma / gamma.sum(-1, keepdim=True).clamp(min=1e-30)).to(dtype)
        return beta, gamma, torch.bmm(gamma, token_states)  # c_t

    def _output_distribution(self, hm, ctx, gamma, x, encoder_out):
        """``P_g`` and, with the pointer-generator, ``z_t P_g + (1 - z_t) P_c`` (M2M eq. 13-15)."""
        out = torch.tanh(self.readout(torch.cat([hm, ctx], dim=-1)))
        out = self.drop(out, self.dropout)
        if self.output_projection is None:
            logits = F.linear(out, self.embed_tokens.weight, self.output_bias)
        else:
            logits = self.output_projection(out)
        if self.p_gen is not None:  # M2M eq. 13-15
            z = torch.sigmoid(self.p_gen(torch.cat([ctx, hm, x], dim=-1)))
            # log P as the decoder's scores: log_softmax(log P / T) is P^(1/T) renormalised, so
            # fairseq's --temperature (it divides the scores by T) tempers the mixture; at T = 1 it
            # is P itself
            probs = mix_copy_distribution(logits, z, gamma, encoder_out["src_ids"],
                                          len(self.dictionary))
            return probs.clamp(min=1e-10).log()
        return F.pad(logits, (0, self.num_markers), value=-1e4) if self.num_markers else logits

    @staticmethod
    def _source_attention(gamma, encoder_out):
        """``gamma`` in the layout of ``src_tokens`` (B x T x src_len), for alignment / coverage."""
        bsz, tgt_len, slen = gamma.shape
        token_mask = encoder_out["token_mask"]
        full = gamma.new_zeros(bsz, tgt_len, encoder_out["src_len"])
        full.scatter_add_(2, encoder_out["orig_pos"].unsqueeze(1).expand(bsz, tgt_len, slen),
                          gamma * token_mask.unsqueeze(1))
        return full

    def _aux_losses(self, prev_output_tokens, encoder_out, extra, beta, cov_losses):
        """``mem_comp`` (from the encoder), ``mem_read`` (M2M eq. 11) and See et al.'s
        ``coverage``."""
        aux = dict(encoder_out.get("aux_losses", {}))
        tgt_mask = prev_output_tokens.ne(self.dictionary.pad())
        # M2M eq. 11 against the initial M_E
        if "memory" in encoder_out and extra["read_attn"] is not None:
            aux["mem_read"] = read_loss(extra["read_attn"], encoder_out["memory"], beta,
                                        encoder_out["sent_states"], tgt_mask).mean()
        if torch.is_tensor(cov_losses) or cov_losses:  # a list of steps, or B x T (batched path)
            per_step = (cov_losses if torch.is_tensor(cov_losses)
                        else torch.stack(cov_losses, dim=1)) * tgt_mask
            aux["coverage"] = per_step.sum() / tgt_mask.sum().clamp(min=1)
        return aux

    def max_positions(self):
        return self.max_target_positions


def watch_memory(model, probe):
    """Inspection: ``memory``, slots x sentences, the memory write attention ``A`` (M2M eq. 5) over
    the document's sentences as the model sees them (capped by ``--max-doc-sentences``), read from
    the encoder output, and ``memory_read``, output tokens x slots, the read attention ``Psi`` of
    the decoder memory where the model has one; with the pointer-generator, ``p_gen``, the switch
    ``z_t`` of every output token (M2M eq. 13: the share of generating from the vocabulary, from
    its layer's output at its forward), and ``copy_source``, the source position (of
    ``src_tokens``) that the copy distribution ``gamma`` (M2M eq. 3) weighs most."""
    kept = {}

    def read(run):
        out = {}
        if model.encoder.compression is not None:
            n = int(run.encoder_out["sent_mask"][0].sum())
            out["memory"] = run.encoder_out["write_attn"][0, :, :n].tolist()
            if run.extra.get("read_attn") is not None:
                out["memory_read"] = run.extra["read_attn"][0].tolist()
        if "z" in kept:
            best = run.extra["gamma"][0].argmax(-1)
            out["p_gen"] = kept["z"][0, :, 0].tolist()
            out["copy_source"] = run.encoder_out["orig_pos"][0][best].tolist()
        return out

    if model.decoder.p_gen is not None:
        probe.hook(model.decoder.p_gen,
                   lambda mod, inputs, out: kept.__setitem__("z", torch.sigmoid(out)))
    if model.encoder.compression is not None or model.decoder.p_gen is not None:
        probe.read(read)


@register_model("mem2mem")
class Mem2MemModel(FairseqEncoderDecoderModel):
    """Hierarchical GRU encoder-decoder with Mem2Mem memories; see the module docstring."""

    # fairseq-sum-inspect
    inspection = Inspection({"memory": "sentence", "memory_read": "output", "p_gen": "output",
                             "copy_source": "output"}, watch_memory)

    @staticmethod
    def add_args(parser):
        # fmt: off
        b = bool_flag
        parser.add_argument("--dropout", type=float, metavar="D",
                            help="on embeddings and the readout")
        parser.add_argument("--embed-dim", type=int, metavar="N", help="token embeddings (128)")
        parser.add_argument("--encoder-hidden-size", type=int, metavar="N",
                            help="hidden size per direction of the sentence and document bi-GRUs")
        parser.add_argument("--decoder-hidden-size", type=int, metavar="N",
                            help="decoder GRU (256)")
        parser.add_argument("--attention-dim", type=int, metavar="N",
                            help="token attention width (M2M eq. 17)")
        parser.add_argument("--decoder-out-embed-dim", type=int, metavar="N",
                            help="readout before the softmax")
        parser.add_argument("--share-embeddings", type=b, metavar="BOOL",
                            help="one embedding table for source and target (joined dictionary)")
        parser.add_argument("--share-decoder-input-output-embed", type=b, metavar="BOOL",
                            help="the output projection is the target embedding matrix (tied, "
                                 "with its own bias; needs --decoder-out-embed-dim == "
                                 "--embed-dim); default False: a separate Linear")
        parser.add_argument("--max-doc-sentences", type=int, metavar="N",
                            help="keep at most N sentences per document (0: all, the default)")
        parser.add_argument("--max-sentence-tokens", type=int, metavar="M",
                            help="keep at most M tokens per sentence (0: all, the default)")
        parser.add_argument("--max-source-positions", type=int, metavar="N",
                            help="longest source the model accepts, in tokens with the EOS: "
                                 "fairseq's size filter uses it, and raw text is cut to its "
                                 "first N - 1 tokens and the EOS (default: 100000)")
        parser.add_argument("--max-target-positions", type=int, metavar="N",
                            help="longest summary the model accepts, in tokens with the EOS: "
                                 "fairseq's size filter uses it, and decoding is capped at N - 1 "
                                 "tokens (default: 1024)")
        parser.add_argument("--pointer-generator", type=b, metavar="BOOL",
                            help="copy mechanism (M2M eq. 13-15)")
        parser.add_argument("--source-position-markers", type=int, metavar="K",
                            help="trailing <unk-N> entries of the dictionary (-1: count them)")
        parser.add_argument("--coverage-attention", "--coverage", dest="coverage_attention",
                            type=b, metavar="BOOL",
                            help="model coverage: the coverage vector in token attention "
                                 "(M2M eq. 16-17)")
        parser.add_argument("--coverage-loss", type=b, metavar="BOOL",
                            help="return See et al.'s coverage loss (aux loss 'coverage', "
                                 "weighted by the criterion's --coverage-loss-weight)")
        # the memory flags share the --memory- prefix; --encoder-memory / --decoder-memory are the
        # earlier spellings
        parser.add_argument("--memory-encoder", "--encoder-memory", dest="memory_encoder",
                            type=b, metavar="BOOL",
                            help="memory compression M_E (M2M eq. 5-6)")
        parser.add_argument("--memory-decoder", "--decoder-memory", dest="memory_decoder",
                            type=b, metavar="BOOL",
                            help="decoder memory with writes (M2M eq. 8-10)")
        parser.add_argument("--memory-transfer", type=b, metavar="BOOL",
                            help="M_D starts from M_E (else zeros)")
        parser.add_argument("--memory-slots", type=int, metavar="R",
                            help="r, memory heads/slots (10)")
        parser.add_argument("--memory-attn-dim", type=int, metavar="N",
                            help="d_a of M2M eq. 5 (128)")
        # fairseq's transformer options: refused here by name (base_architecture)
        add_checkpoint_args(parser)
        add_dropout_mask_arg(parser)
        # fmt: on

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        if args.coverage_loss and not args.coverage_attention:
            raise ValueError("--coverage-loss True needs --coverage-attention True (the loss is "
                             "computed from the coverage vector of M2M eq. 16); set both, or drop "
                             "--coverage-loss")
        src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
        sep_index(src_dict)
        joined = len(src_dict) == len(tgt_dict) and src_dict.symbols == tgt_dict.symbols
        if args.pointer_generator and not joined:
            raise ValueError("the pointer-generator copies source ids into the target vocabulary: "
                             "use a joined dictionary")
        markers = args.source_position_markers
        if markers is None or markers < 0:
            markers = count_position_markers(tgt_dict)
        if markers:
            logger.info(f"{markers} source-position markers <unk-N> share the <unk> embedding")
        enc_emb = MarkerEmbedding(
            len(src_dict) - markers, args.embed_dim, src_dict.pad(), src_dict.unk())
        if args.share_embeddings and joined:
            dec_emb = enc_emb
        else:
            dec_emb = MarkerEmbedding(
                len(tgt_dict) - markers, args.embed_dim, tgt_dict.pad(), tgt_dict.unk())
        encoder = HierarchicalEncoder(args, src_dict, enc_emb)
        decoder = Mem2MemDecoder(args, tgt_dict, dec_emb, num_markers=markers)
        model = cls(encoder, decoder)
        set_dropout_mask(model, check_dropout_mask(args))  # --dropout-mask (modules/dropout.py)
        return model

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="checkpoint_best.pt",
                        data_name_or_path=".", **kwargs):
        """Hub interface summarizing raw text, with the tokenizer and BPE recorded in
        ``DATA/prepare_args.json`` (validated keys only, given ones win), as
        ``SumTransformerModel``'s."""
        from ...data_folder import hub_text_kwargs

        kwargs = hub_text_kwargs(model_name_or_path, data_name_or_path, kwargs)
        return super().from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path,
                                       **kwargs)

    def forward(self, src_tokens, src_lengths, prev_output_tokens, **kwargs):
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, **kwargs)
        return self.decoder(prev_output_tokens, encoder_out=encoder_out)


@register_model_architecture("mem2mem", "mem2mem")
def base_architecture(args):
    args.dropout = getattr(args, "dropout", 0.0)
    args.embed_dim = getattr(args, "embed_dim", 128)
    # App. A.2 "all GRUs have the hidden size of 256": the bi-GRUs are read as 256 wide in all (2 x
    # 128), which gives the paper's 14.7M parameters at a 50k vocabulary (14.60M; 2 x 256 would give
    # 17.2M).
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 128)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 256)
    args.attention_dim = getattr(args, "attention_dim", args.decoder_hidden_size)
    args.decoder_out_embed_dim = getattr(args, "decoder_out_embed_dim", args.embed_dim)
    args.share_embeddings = getattr(args, "share_embeddings", True)
    args.share_decoder_input_output_embed = getattr(args, "share_decoder_input_output_embed", False)
    # no cut by default: App. A.2's 4 sections x 500 tokens is a cut by section, applied to the data
    # (preprocess/arxiv_pubmed_to_jsonl.py --paper-truncation mem2mem), which sentence caps cannot
    # reproduce (a section of 500 words may hold any number of sentences of any length)
    args.max_doc_sentences = getattr(args, "max_doc_sentences", 0)
    args.max_sentence_tokens = getattr(args, "max_sentence_tokens", 0)
    args.max_source_positions = getattr(args, "max_source_positions", 100000)
    args.max_target_positions = getattr(args, "max_target_positions", 1024)
    args.pointer_generator = getattr(args, "pointer_generator", True)
    args.source_position_markers = getattr(args, "source_position_markers", -1)
    renamed_flag(args, "coverage_attention", "coverage")  # earlier attribute name (old checkpoints)
    args.coverage_attention = getattr(args, "coverage_attention", True)
    args.coverage_loss = getattr(args, "coverage_loss", False)
    renamed_flag(args, "memory_encoder", "encoder_memory", True)
    renamed_flag(args, "memory_decoder", "decoder_memory", True)
    args.memory_transfer = getattr(args, "memory_transfer", True)
    args.memory_slots = getattr(args, "memory_slots", 10)
    args.memory_attn_dim = getattr(args, "memory_attn_dim", 128)
    # after the earlier names: every boolean option read as one ('False' from --model-overrides is
    # False)
    parse_bool_options(args, Mem2MemModel.add_args)
    for flag in ("checkpoint_activations", "offload_activations"):
        if getattr(args, flag, False):
            raise ValueError(
                f"--{flag.replace('_', '-')}: Mem2Mem has no transformer layers to checkpoint (GRU "
                "encoders and decoder; the token-attention scores of long documents are recomputed "
                "in backward already); the option is sum_transformer's and bart_sum's")


@register_model_architecture("mem2mem", "hred_base")
def hred_base(args):
    """Baseline HRED (§2, App. A.1): hierarchical encoder, pointer-generator, coverage; no
    memory."""
    renamed_flag(args, "memory_encoder", "encoder_memory", False)
    renamed_flag(args, "memory_decoder", "decoder_memory", False)
    args.memory_transfer = getattr(args, "memory_transfer", False)
    base_architecture(args)


@register_model_architecture("mem2mem", "mem2mem_base")
def mem2mem_base(args):
    """Full Mem2Mem (§3, App. A.2): r = 10 slots, d_a = 128, transfer M_E -> M_D, read/write."""
    base_architecture(args)
