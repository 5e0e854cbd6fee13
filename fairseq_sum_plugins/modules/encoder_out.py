"""The encoder-output contract of the transformer models (``sum_transformer`` and ``bart_sum``).

An encoder returns a dict (fairseq passes it to the decoder and to ``reorder_encoder_out``); its
fields are declared here once, with their shapes, and read through :class:`EncoderOut`::

    field          key                  shape             written by
    enc            "enc"                (B, S', C)        the encoder (batch-first; S' <= S)
    padding_mask   "enc_padding_mask"   (B, S')           the encoder; True at padding
    src_tokens     "src_tokens"         (B, S)            the encoder (the source, all positions)
    side           "side"               {name: (B, ...)}  the task's side data (``--side-data``)
    aux_losses     "aux_losses"         {name: scalar}    features (e.g. ``gate_l1``), never
                                                          reordered
    kept_index     "kept_index"         (B, S')           source position of each row of ``enc``
                                                          when a feature removed positions (e.g.
                                                          IS Algorithm 1), else None
    state          "feature_state"      {name: (B, ...)}  what features keep for the decoder (e.g.
                                                          the information gates), reordered like
                                                          ``enc``
    rows           "source_rows"        (B,)              after a reorder: the row of the encoder's
                                                          own output that each row copies (beam
                                                          search's copies of a document), else None

The backbones know no feature's fields: a feature writes its per-document tensors into ``state``
(the information gate's ``gates``, ``gate_bias`` and ``gate_counts``:
features/information_selection.py), every one of them follows beam search's reordering, and
:meth:`EncoderOut.restore_attention` maps attention over the kept rows back to source positions.

BART keeps fairseq's time-first layout (``encoder_out["encoder_out"] = [(S', B, C)]``, one-element
lists): :meth:`EncoderOut.of` reads both layouts and :meth:`EncoderOut.into_fairseq` writes the
fields into a fairseq encoder dict.

**Reordering.** Every field is per document, so two rows that copy the same row of the encoder's
output are equal. ``rows`` records which row each one copies; a reorder that gives every row a
copy of the row it already copies (beam search picking hypotheses among a document's beams: every
decoding step until a document finishes) returns the same tensors instead of gathering them again
(``B x S x C`` per step), which is decided from the indices alone. :meth:`EncoderOut.reorder_copy`
is the reference that always gathers; tests/test_speed_paths.py compares the two.
"""
from dataclasses import dataclass, field, fields, replace
from typing import Dict, Optional

import torch
from torch import Tensor

KEYS = {
    "enc": "enc",
    "padding_mask": "enc_padding_mask",
    "src_tokens": "src_tokens",
    "side": "side",
    "aux_losses": "aux_losses",
    "kept_index": "kept_index",
    "state": "feature_state",
    "rows": "source_rows",
}
# fields that fairseq's own encoder dict already carries (time-first or as lists)
FAIRSEQ_KEYS = {"enc": "encoder_out", "padding_mask": "encoder_padding_mask",
                "src_tokens": "src_tokens"}
_DICTS = ("side", "aux_losses", "state")


@dataclass
class EncoderOut:
    """Named view of an encoder output dict (see the module docstring for the fields)."""

    enc: Tensor
    padding_mask: Tensor
    src_tokens: Tensor
    side: Dict[str, Tensor] = field(default_factory=dict)
    aux_losses: Dict[str, Tensor] = field(default_factory=dict)
    kept_index: Optional[Tensor] = None
    state: Dict[str, Optional[Tensor]] = field(default_factory=dict)
    rows: Optional[Tensor] = None

    def to_dict(self):
        return {KEYS[f.name]: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def of(cls, encoder_out):
        """The view of a batch-first dict, or of a fairseq (time-first, list-valued) one."""
        if "encoder_out" in encoder_out:
            return cls._of_fairseq(encoder_out)
        view = {name: encoder_out.get(key) for name, key in KEYS.items()}
        return cls(**{**view, **{name: view[name] or {} for name in _DICTS}})

    @classmethod
    def _of_fairseq(cls, encoder_out):
        def first(key):
            value = encoder_out.get(key)
            return value[0] if isinstance(value, list) and len(value) > 0 else None

        enc = encoder_out["encoder_out"][0].transpose(0, 1)
        padding_mask = first("encoder_padding_mask")
        if padding_mask is None:
            padding_mask = torch.zeros(enc.shape[:2], dtype=torch.bool, device=enc.device)
        return cls(enc=enc, padding_mask=padding_mask, src_tokens=first("src_tokens"),
                   side=encoder_out.get("side") or {},
                   aux_losses=encoder_out.get("aux_losses") or {},
                   kept_index=first(KEYS["kept_index"]), state=encoder_out.get(KEYS["state"]) or {},
                   rows=first(KEYS["rows"]))

    def into_fairseq(self, encoder_out):
        """Writes the fields into fairseq's encoder dict ``encoder_out`` (in place, time-first)."""
        encoder_out["encoder_out"] = [self.enc.transpose(0, 1)]
        encoder_out["encoder_padding_mask"] = [self.padding_mask]
        encoder_out["src_tokens"] = [self.src_tokens]
        # fairseq's per-position fields do not align with the kept rows
        if self.kept_index is not None:
            encoder_out["encoder_embedding"] = []
            encoder_out["encoder_states"] = []
        encoder_out["side"], encoder_out["aux_losses"] = self.side, self.aux_losses
        encoder_out[KEYS["kept_index"]] = [] if self.kept_index is None else [self.kept_index]
        encoder_out[KEYS["state"]] = self.state
        encoder_out[KEYS["rows"]] = [] if self.rows is None else [self.rows]
        return encoder_out

    def reorder(self, new_order):
        """Beam search's reordering: every per-document tensor follows ``new_order``; aux losses
        stay. Where every row would get a copy of the row it already copies, the same view (see
        the module docstring)."""
        rows = self._rows_after(new_order)
        if self.rows is not None and rows.shape == self.rows.shape and torch.equal(rows, self.rows):
            return self
        return self.reorder_copy(new_order, rows)

    def _rows_after(self, new_order):
        """The encoder row each row copies after ``new_order``."""
        return new_order if self.rows is None else self.rows.index_select(0, new_order)

    def reorder_copy(self, new_order, rows=None):
        """:meth:`reorder` gathering every tensor (the reference); ``rows``: its
        ``_rows_after(new_order)`` when already computed."""
        pick = lambda t: None if t is None else t.index_select(0, new_order)  # noqa: E731
        changed = {f.name: pick(getattr(self, f.name))
                   for f in fields(self) if f.name not in _DICTS + ("rows",)}
        rows = self._rows_after(new_order) if rows is None else rows
        return replace(self, side={k: pick(v) for k, v in self.side.items()},
                       state={k: pick(v) for k, v in self.state.items()}, rows=rows, **changed)

    def restore_attention(self, attn):
        """Attention over the kept rows ``(B, T, S')`` as attention over source positions ``(B, T,
        S)`` (the identity when no position was removed)."""
        if attn is None or self.kept_index is None:
            return attn
        full = attn.new_zeros(attn.size(0), attn.size(1), self.src_tokens.size(1))
        return full.scatter_add_(2, self.kept_index.unsqueeze(1).expand(-1, attn.size(1), -1), attn)
