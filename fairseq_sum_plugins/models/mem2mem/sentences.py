"""Sentence spans of a padded source batch, from the ``<sep>`` tokens kept by preprocessing.

Every non-pad token belongs to one sentence: a sentence runs up to and including its ``<sep>``
(the last one ends at ``</s>``). Optional caps (at most ``max_sentences`` sentences of at most
``max_sentence_tokens`` tokens each; 0: none) drop the tokens beyond either. Mem2Mem App. A.2's
4 sections x 500 tokens is a cut by section, applied to the data by the PubMed / arXiv converter.
Everything is vectorised over the batch and works with left- or right-padded sources.
"""
from dataclasses import dataclass

import torch


@dataclass
class SentenceLayout:
    """Where the kept tokens of a batch go.

    ``tokens`` (B x S') are the kept source tokens, compacted to the left and right-padded;
    ``token_mask`` marks the real ones, ``orig_pos`` is their column in the input ``src_tokens``,
    ``sent_id`` / ``sent_pos`` their sentence index and position inside it (0 for padding).
    ``sent_lengths`` (B x L') counts the kept tokens of each sentence (0 for a padding slot),
    ``num_sentences`` (B) the sentences of each document (>= 1 for a non-empty source).
    """

    tokens: torch.Tensor
    token_mask: torch.Tensor
    orig_pos: torch.Tensor
    sent_id: torch.Tensor
    sent_pos: torch.Tensor
    sent_lengths: torch.Tensor
    num_sentences: torch.Tensor

    @property
    def sent_mask(self):
        return self.sent_lengths > 0


def sentence_layout(src_tokens, pad, sep, max_sentences=0, max_sentence_tokens=0):
    """Computes the :class:`SentenceLayout` of ``src_tokens`` (B x S); caps <= 0 mean no cap."""
    bsz, _ = src_tokens.shape
    nonpad = src_tokens.ne(pad)
    is_sep = src_tokens.eq(sep) & nonpad
    # sentence index: separators strictly before the token (a <sep> closes its own sentence)
    sent_id = torch.cumsum(is_sep.long(), dim=1) - is_sep.long()
    rank = torch.cumsum(nonpad.long(), dim=1) - 1  # index among the non-pad tokens
    prev_sep = torch.cat([torch.ones_like(is_sep[:, :1]), is_sep[:, :-1]], dim=1)
    first = nonpad & (rank == 0)
    start = nonpad & (prev_sep | first)
    start_rank = torch.where(start, rank, torch.zeros_like(rank))
    sent_pos = rank - torch.cummax(start_rank, dim=1).values
    keep = nonpad
    if max_sentences and max_sentences > 0:
        keep = keep & (sent_id < max_sentences)
    if max_sentence_tokens and max_sentence_tokens > 0:
        keep = keep & (sent_pos < max_sentence_tokens)

    kept_len = keep.long().sum(dim=1)
    width = max(int(kept_len.max()), 1)
    kpos = torch.cumsum(keep.long(), dim=1) - 1
    b_idx = torch.arange(bsz, device=src_tokens.device).unsqueeze(1).expand_as(src_tokens)
    cols = torch.arange(src_tokens.size(1),
                        device=src_tokens.device).unsqueeze(0).expand_as(src_tokens)

    def compact(values, fill):
        out = values.new_full((bsz, width), fill)
        out[b_idx[keep], kpos[keep]] = values[keep]
        return out

    tokens = compact(src_tokens, pad)
    token_mask = compact(keep, False)
    orig_pos = compact(cols, 0)
    c_sent_id = compact(sent_id, 0)
    c_sent_pos = compact(sent_pos, 0)

    num_sentences = torch.where(token_mask, c_sent_id + 1,
                                torch.zeros_like(c_sent_id)).max(dim=1).values
    n_slots = max(int(num_sentences.max()), 1)
    sent_lengths = torch.zeros(bsz, n_slots, dtype=torch.long, device=src_tokens.device)
    sent_lengths.scatter_add_(1, c_sent_id, token_mask.long())
    return SentenceLayout(tokens, token_mask, orig_pos, c_sent_id, c_sent_pos, sent_lengths,
                          num_sentences)
