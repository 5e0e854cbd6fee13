"""The encoder-output contract of the transformer models (``sum_transformer`` and ``bart_sum``).

An encoder returns a dict (fairseq passes it to the decoder and to ``reorder_encoder_out``); its
fields are declared here once, with their shapes, and read through :class:`EncoderOut`::

    field          key                  shape          written by
    enc            "enc"                (B, S', C)     the encoder (batch-first; S' < S after pruning)
    padding_mask   "enc_padding_mask"   (B, S')        the encoder; True at padding
    src_tokens     "src_tokens"         (B, S)         the encoder (the source, unpruned)
    side           "side"               {name: (B, ...)}  the task's side data (``--side-data``)
    aux_losses     "aux_losses"         {name: scalar}  features (``gate_l1``), never reordered
    gates          "enc_gates"          (B, S', G)     information selection (IS eq. 3), 0 at padding
    gate_bias      "enc_gate_bias"      (B, G, 1, S')  per-head -inf bias of closed positions, or None
    gate_index     "gate_index"         (B, S')        source position of each kept row, or None
    gate_counts    "gate_counts"        (B, 2)         [removed, total] source tokens per document

BART keeps fairseq's time-first layout (``encoder_out["encoder_out"] = [(S', B, C)]``, one-element
lists): :meth:`EncoderOut.of` reads both layouts and :meth:`EncoderOut.into_fairseq` writes the
fields into a fairseq encoder dict.
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
    "gates": "enc_gates",
    "gate_bias": "enc_gate_bias",
    "gate_index": "gate_index",
    "gate_counts": "gate_counts",
}
# fields that fairseq's own encoder dict already carries (time-first or as lists)
FAIRSEQ_KEYS = {"enc": "encoder_out", "padding_mask": "encoder_padding_mask", "src_tokens": "src_tokens"}


@dataclass
class EncoderOut:
    """Named view of an encoder output dict (see the module docstring for the fields)."""

    enc: Tensor
    padding_mask: Tensor
    src_tokens: Tensor
    side: Dict[str, Tensor] = field(default_factory=dict)
    aux_losses: Dict[str, Tensor] = field(default_factory=dict)
    gates: Optional[Tensor] = None
    gate_bias: Optional[Tensor] = None
    gate_index: Optional[Tensor] = None
    gate_counts: Optional[Tensor] = None

    def to_dict(self):
        return {KEYS[f.name]: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def of(cls, encoder_out):
        """The view of a batch-first dict, or of a fairseq (time-first, list-valued) one."""
        if "encoder_out" in encoder_out:
            return cls._of_fairseq(encoder_out)
        return cls(**{name: encoder_out.get(key) for name, key in KEYS.items()})

    @classmethod
    def _of_fairseq(cls, encoder_out):
        def first(key):
            value = encoder_out.get(key)
            return value[0] if isinstance(value, list) and len(value) > 0 else None

        enc = encoder_out["encoder_out"][0].transpose(0, 1)
        padding_mask = first("encoder_padding_mask")
        if padding_mask is None:
            padding_mask = torch.zeros(enc.shape[:2], dtype=torch.bool, device=enc.device)
        extra = {name: first(KEYS[name]) for name in ("gates", "gate_bias", "gate_index", "gate_counts")}
        return cls(enc=enc, padding_mask=padding_mask, src_tokens=first("src_tokens"),
                   side=encoder_out.get("side") or {}, aux_losses=encoder_out.get("aux_losses") or {}, **extra)

    def into_fairseq(self, encoder_out):
        """Writes the fields into fairseq's encoder dict ``encoder_out`` (in place, time-first)."""
        encoder_out["encoder_out"] = [self.enc.transpose(0, 1)]
        encoder_out["encoder_padding_mask"] = [self.padding_mask]
        encoder_out["src_tokens"] = [self.src_tokens]
        if self.gate_index is not None:  # pruned: fairseq's per-position fields do not align with the kept rows
            encoder_out["encoder_embedding"] = []
            encoder_out["encoder_states"] = []
        encoder_out["side"], encoder_out["aux_losses"] = self.side, self.aux_losses
        for name in ("gates", "gate_bias", "gate_index", "gate_counts"):
            value = getattr(self, name)
            encoder_out[KEYS[name]] = [] if value is None else [value]
        return encoder_out

    def reorder(self, new_order):
        """Beam search's reordering: every per-document tensor follows ``new_order``; aux losses stay."""
        pick = lambda t: None if t is None else t.index_select(0, new_order)  # noqa: E731
        changed = {f.name: pick(getattr(self, f.name)) for f in fields(self) if f.name not in ("side", "aux_losses")}
        return replace(self, side={k: pick(v) for k, v in self.side.items()}, **changed)
