"""Beam search with the GNMT length and coverage penalties (Wu et al., 2016, eq. 14), as ETADS
decodes (§4.1)::

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)
    lp(Y)   = ((5 + |Y|) / 6) ** alpha                         --lenpen-gnmt ALPHA
    cp      = beta * sum_j log(min(sum_i a_ij, 1.0))           --coverage-penalty BETA

``|Y|`` counts the hypothesis' tokens including its EOS (fairseq's length in ``--lenpen``), ``a_ij``
is the decoder's last-layer cross-attention (head-averaged) of target step ``i`` (EOS step
included) on source token ``j``, summed over the real source tokens only (padding is excluded).
``--coverage-penalty-type summary`` uses OpenNMT-py's ``summary`` penalty instead,
``cp = -beta * sum_j (max(sum_i a_ij, 1.0) - 1)``, which penalizes attending a token more than once.

Both rescore a hypothesis when it is finished (OpenNMT-py's default, without ``-stepwise_penalty``):
the beam keeps growing by cumulative log-probability and finished hypotheses are ranked by
``s(Y, X)``. The coverage of a source token is floored at ``1e-10`` before the log (a token whose
attention underflowed to exactly 0 would otherwise make the score -inf).
"""
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
    ``decoder.need_attn = True`` when it builds this generator.
    """

    def __init__(self, models, tgt_dict, lenpen_gnmt=None, coverage_penalty=0.0, coverage_penalty_type="wu",
                 left_pad_source=True, **kwargs):
        if coverage_penalty_type not in ("wu", "summary"):
            raise ValueError(f"--coverage-penalty-type {coverage_penalty_type!r}: expected wu or summary")
        super().__init__(models, tgt_dict, **kwargs)
        self.lenpen_gnmt = lenpen_gnmt
        self.coverage_beta = coverage_penalty
        self.coverage_kind = coverage_penalty_type
        self.left_pad_source = left_pad_source
        self._normalize = self.normalize_scores
        if lenpen_gnmt is not None:
            self.normalize_scores = False  # finalize_hypos below normalizes instead

    def finalize_hypos(self, step, bbsz_idx, eos_scores, tokens, scores, finalized, finished, beam_size, attn,
                       src_lengths, max_len):
        length = step + 1  # tokens of the hypothesis, EOS included
        if self.lenpen_gnmt is not None and self._normalize:
            eos_scores = eos_scores / gnmt_length_penalty(length, self.lenpen_gnmt)
        if self.coverage_beta:
            if attn is None:
                raise RuntimeError("--coverage-penalty needs the decoder's cross-attention (decoder.need_attn = True)")
            a = attn.index_select(0, bbsz_idx)[:, :, 1 : step + 2]  # (N, S, |Y|): steps 0..step
            sent_len = src_lengths.index_select(0, torch.div(bbsz_idx, beam_size, rounding_mode="trunc"))
            src_len = a.size(1)
            pos = torch.arange(src_len, device=a.device).unsqueeze(0)
            lens = sent_len.to(a.device).unsqueeze(1)
            real = pos >= src_len - lens if self.left_pad_source else pos < lens
            eos_scores = eos_scores + coverage_penalty(a, real, self.coverage_beta, self.coverage_kind).to(eos_scores)
        return super().finalize_hypos(step, bbsz_idx, eos_scores, tokens, scores, finalized, finished, beam_size,
                                      attn, src_lengths, max_len)

