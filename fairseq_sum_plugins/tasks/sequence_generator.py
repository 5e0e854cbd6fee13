"""Beam search with the GNMT length and coverage penalties (Wu et al., 2016, GNMT eq. 14), as ETADS
decodes (§4.1)::

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)
    lp(Y)   = ((5 + |Y|) / 6) ** alpha                         --lenpen-gnmt ALPHA
    cp      = beta * sum_j log(min(sum_i a_ij, 1.0))           --coverage-penalty BETA

``|Y|`` counts the hypothesis' tokens including its EOS (fairseq's length in ``--lenpen``), ``a_ij``
is the decoder's last-layer cross-attention (head-averaged) of target step ``i`` (EOS step
included) on source token ``j``, summed over the real (non-pad) source tokens only.
``--coverage-penalty-type summary`` uses OpenNMT-py's ``summary`` penalty instead,
``cp = -beta * sum_j (max(sum_i a_ij, 1.0) - 1)``, which penalizes attending a token more than once.

Both rescore a hypothesis when it is finished (OpenNMT-py without ``-stepwise_penalty``): the beam
keeps growing by cumulative log-probability and finished hypotheses are ranked by ``s(Y, X)``.
fairseq stores each finished hypothesis with its raw scores first (so ``positional_scores`` stay
the per-token log-probabilities and sum to ``log P``), then ``score`` is replaced by ``s(Y, X)``;
without ``--lenpen-gnmt``, ``log P`` is normalized by fairseq's ``|Y| ** lenpen`` and ``cp`` is
added after it. The coverage of a source token is floored at ``1e-10`` before the log (a token whose
attention underflowed to exactly 0 would otherwise make the score -inf).

ETADS §4.1 decodes with "beam search ... with coverage technique (Tu et al., 2016) ..., the coverage
weight is set to 1" and "length penalty (Wu et al., 2016) ... alpha 0.9 and beta 5". Tu et al.'s
coverage is part of a model, not of a search: a coverage vector ``C_j = sum_i a_ij / Phi_j`` fed
back into an RNN's attention and trained with it, which ETADS's transformer (ETADS eq. 1-11) does
not have. Its use in beam search with one weight is GNMT's coverage penalty above (Wu et al., 2016,
the paper ETADS cites in the same paragraph; OpenNMT-py's ``-coverage_penalty wu -beta``), whose
``sum_i a_ij`` is Tu et al.'s ``C_j`` with fertility ``Phi_j = 1``. So the paper's setting is read
as ``--coverage-penalty 1 --coverage-penalty-type wu --lenpen-gnmt 0.9``, with "beta 5" the constant
5 of GNMT's ``lp``, which the paper lists with alpha (GNMT writes ``lp`` with it). The other
reading, OpenNMT-py's published CNN/DM decoding (beam 10, min length 35, ``-length_penalty wu -alpha
0.9 -coverage_penalty summary -beta 5``, which matches all of ETADS's decoding numbers but the
coverage weight), is ``--coverage-penalty 5 --coverage-penalty-type summary``. A T-step summary of a
400-token source spreads T units of attention over 400 tokens, so at most T of them reach ``C_j =
1``: with beta 1, ``wu`` adds ``-760`` when 60 steps attend uniformly (``400 log 0.15``), against a
``log P / lp`` of tens, and the coverage term ranks the hypotheses.
"""
import math

import torch
from fairseq.sequence_generator import SequenceGenerator

COVERAGE_FLOOR = 1e-10


def gnmt_length_penalty(length, alpha):
    """``((5 + |Y|) / 6) ** alpha``."""
    return ((5.0 + length) / 6.0) ** alpha


def coverage_penalty(attn, src_mask, beta, kind="wu"):
    """``attn`` ``(N, S, T)`` attention of N hypotheses over their T steps, ``src_mask`` ``(N, S)``
    True at real source tokens -> ``(N,)`` penalty to add to the score."""
    coverage = attn.float().sum(dim=-1)  # sum_i a_ij
    if kind == "wu":
        terms = coverage.clamp(min=COVERAGE_FLOOR, max=1.0).log()
    elif kind == "summary":
        terms = -(coverage.clamp(min=1.0) - 1.0)
    else:
        raise ValueError(f"unknown coverage penalty {kind!r} (wu | summary)")
    return beta * terms.masked_fill(~src_mask, 0.0).sum(dim=-1)


class GNMTSequenceGenerator(SequenceGenerator):
    """fairseq's beam search whose finished hypotheses are scored by ``s(Y, X)`` above.

    ``lenpen_gnmt=None`` keeps fairseq's own normalization (``--lenpen``); ``coverage_penalty=0``
    adds nothing. The coverage penalty needs the decoder's attention: the task sets
    ``decoder.need_attn = True`` when it builds this generator. Real source tokens are read from
    ``src_tokens`` (not padding), so left and right padded batches are scored alike.
    """

    def __init__(self, models, tgt_dict, lenpen_gnmt=None, coverage_penalty=0.0,
                 coverage_penalty_type="wu", **kwargs):
        if coverage_penalty_type not in ("wu", "summary"):
            raise ValueError(
                f"--coverage-penalty-type {coverage_penalty_type!r}: expected wu or summary")
        if not (math.isfinite(coverage_penalty) and coverage_penalty >= 0):
            raise ValueError(f"--coverage-penalty {coverage_penalty}: a weight >= 0 (GNMT's beta; "
                             "a negative one rewards leaving the source uncovered)")
        if lenpen_gnmt is not None and not math.isfinite(lenpen_gnmt):
            raise ValueError(f"--lenpen-gnmt {lenpen_gnmt}: a finite alpha (GNMT's lp exponent)")
        super().__init__(models, tgt_dict, **kwargs)
        self.lenpen_gnmt = lenpen_gnmt
        self.coverage_beta = coverage_penalty
        self.coverage_kind = coverage_penalty_type
        # fairseq's |Y| ** lenpen, applied in rescore()
        self.normalize_length = self.normalize_scores
        self.normalize_scores = False  # fairseq stores raw scores; finalize_hypos rescores them
        self._src_real = None

    def _generate(self, sample, *args, **kwargs):
        self._src_real = sample["net_input"]["src_tokens"].ne(self.pad)  # (B, S) of the whole batch
        try:
            return super()._generate(sample, *args, **kwargs)
        finally:
            self._src_real = None

    def rescore(self, log_p, attn, src_real, length):
        """``s(Y, X)`` of N hypotheses of ``length`` tokens: ``log_p`` (N,), ``attn`` (N, S,
        |Y|)."""
        if self.lenpen_gnmt is not None:
            log_p = log_p / gnmt_length_penalty(length, self.lenpen_gnmt)
        elif self.normalize_length:
            log_p = log_p / length**self.len_penalty
        if self.coverage_beta:
            log_p = log_p + coverage_penalty(attn, src_real, self.coverage_beta,
                                             self.coverage_kind).to(log_p)
        return log_p

    def finalize_hypos(self, step, bbsz_idx, eos_scores, tokens, scores, finalized, finished,
                       beam_size, attn, src_lengths, max_len):
        if self.coverage_beta and attn is None:
            raise RuntimeError(
                "--coverage-penalty needs the decoder's cross-attention (decoder.need_attn = True)")
        stored = [len(hypos) for hypos in finalized]
        newly_finished = super().finalize_hypos(step, bbsz_idx, eos_scores, tokens, scores,
                                                finalized, finished, beam_size, attn, src_lengths,
                                                max_len)
        new = [(sent, hypo) for sent, hypos in enumerate(finalized)
               for hypo in hypos[stored[sent]:]]
        if new:  # hypotheses finished at this step, all of |Y| = step + 1 tokens
            sents = torch.tensor([sent for sent, _ in new], device=self._src_real.device)
            src_real = self._src_real.index_select(0, sents)
            hyp_attn = torch.stack([hypo["attention"]
                                    for _, hypo in new]) if self.coverage_beta else None
            if hyp_attn is not None and hyp_attn.size(1) != src_real.size(1):
                raise RuntimeError(
                    f"--coverage-penalty: the decoder's attention covers {hyp_attn.size(1)} source "
                    f"positions, the batch has {src_real.size(1)}")
            log_p = torch.stack([hypo["score"] for _, hypo in new])
            for (_, hypo), score in zip(new, self.rescore(log_p, hyp_attn, src_real, step + 1)):
                hypo["score"] = score
        return newly_finished
