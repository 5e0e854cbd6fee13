"""fairseq's BART with the information selection layer (Ishimwe & Grave), for fine-tuning a pre-trained
fairseq BART checkpoint the way the paper fine-tunes T5::

    fairseq-train DATA --user-dir fairseq_sum_plugins --task summarization --arch bart_large_gated \\
        --restore-file bart.large/model.pt --reset-optimizer --reset-dataloader --reset-meters \\
        --criterion summarization_loss --gate-l1-weight 0.1 ...

The model is fairseq's ``BARTModel`` with, minimally:

* the encoder computes the gates on its final states (eq. 3) and, in eval mode, thresholds them and
  removes the closed positions from ``encoder_out`` (Algorithm 1), exactly as
  :class:`~fairseq_sum_plugins.modules.gates.InformationGate` does for ``sum_transformer``;
* every decoder layer's encoder-decoder attention is fairseq's ``MultiheadAttention`` whose key and
  value projections scale their output rows by the gates (eq. 6, forward hooks: parameter names
  are unchanged, so BART checkpoints load as they are) and which masks per-head closed positions
  (``--gate-per-head``) through ``apply_sparse_mask``.

Loading a BART checkpoint (``--restore-file``) keeps the pre-trained weights and initialises the gate
fresh (:meth:`GatedBARTModel.upgrade_state_dict_named` adds the missing gate parameters).
"""

from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models.bart.model import BARTModel, bart_base_architecture, bart_large_architecture
from fairseq.models.transformer import TransformerConfig, TransformerDecoder, TransformerEncoder
from fairseq.modules import MultiheadAttention
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase

from ..modules.gates import InformationGate, add_gate_args, gate_defaults, restore_attention
from .fresh_params import keep_fresh_parameters


GATE_KEYS = ("enc_gates", "enc_gate_bias", "gate_index", "gate_counts")


class GatedCrossAttention(MultiheadAttention):
    """Encoder-decoder attention with ``g_j K_j`` and ``g_j V_j`` (eq. 6) and a per-head bias.

    ``kv_scale`` ``(S, B, G, 1)`` and ``head_bias`` ``(B, G, 1, S)`` are set by the decoder before
    each call (from ``encoder_out``); the static key/value cache holds the scaled rows.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kv_scale = None
        self.head_bias = None
        self.k_proj.register_forward_hook(self._scale_rows)
        self.v_proj.register_forward_hook(self._scale_rows)

    def _scale_rows(self, module, inputs, out):
        if self.kv_scale is None:
            return None
        src_len, bsz, dim = out.shape
        return (out.view(src_len, bsz, self.num_heads, self.head_dim) * self.kv_scale.type_as(out)).view(src_len, bsz, dim)

    def apply_sparse_mask(self, attn_weights, tgt_len: int, src_len: int, bsz: int):
        if self.head_bias is not None:  # (B, H, 1, S) -> (B * H, 1, S)
            bias = self.head_bias.expand(bsz, self.num_heads, 1, src_len).reshape(bsz * self.num_heads, 1, src_len)
            attn_weights = attn_weights + bias.type_as(attn_weights)
        return attn_weights


class GatedDecoderLayer(TransformerDecoderLayerBase):
    def build_encoder_attention(self, embed_dim, cfg):
        return GatedCrossAttention(
            embed_dim,
            cfg.decoder.attention_heads,
            kdim=cfg.encoder.embed_dim,
            vdim=cfg.encoder.embed_dim,
            dropout=cfg.attention_dropout,
            encoder_decoder_attention=True,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
            xformers_att_config=cfg.encoder.xformers_att_config,
        )


class GatedBARTEncoder(TransformerEncoder):
    """BART's encoder followed by the gate layer (time-first ``encoder_out`` as in fairseq)."""

    def __init__(self, args, dictionary, embed_tokens):
        super().__init__(args, dictionary, embed_tokens)
        gates = args.decoder_attention_heads if args.gate_per_head else 1
        self.info_gate = InformationGate(args.encoder_embed_dim, gates, args.gate_threshold, getattr(args, "gate_warmup_updates", 0))

    def forward(self, src_tokens, src_lengths=None, return_all_hiddens: bool = False, token_embeddings=None):
        out = super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        pad = out["encoder_padding_mask"][0] if len(out["encoder_padding_mask"]) > 0 else None
        sel = self.info_gate.select(out["encoder_out"][0].transpose(0, 1), pad)
        out["encoder_out"] = [sel["h"].transpose(0, 1)]
        out["encoder_padding_mask"] = [sel["padding_mask"]]
        if sel["index"] is not None:  # pruned: per-position extras no longer align with encoder_out
            out["encoder_embedding"] = []
            out["src_tokens"] = [src_tokens]  # to map attention back to source positions
        for key, value in (("enc_gates", sel["gates"]), ("enc_gate_bias", sel["bias"]),
                           ("gate_index", sel["index"]), ("gate_counts", sel["counts"])):
            out[key] = [] if value is None else [value]
        out["aux_losses"] = {"gate_l1": sel["l1"]}
        return out

    def reorder_encoder_out(self, encoder_out, new_order):
        new = super().reorder_encoder_out(encoder_out, new_order)
        for key in GATE_KEYS:
            new[key] = [x.index_select(0, new_order) for x in encoder_out.get(key, [])]
        new["aux_losses"] = encoder_out.get("aux_losses", {})
        return new


class GatedBARTDecoder(TransformerDecoder):
    """BART's decoder with gated encoder-decoder attention in every layer."""

    def build_decoder_layer(self, args, no_encoder_attn=False):
        cfg = TransformerConfig.from_namespace(args)
        layer = GatedDecoderLayer(cfg, no_encoder_attn)
        if cfg.checkpoint_activations:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)

    def _cross_attentions(self):
        return [m for m in self.modules() if isinstance(m, GatedCrossAttention)]

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None,
                         full_context_alignment: bool = False, alignment_layer=None, alignment_heads=None):
        gates = encoder_out.get("enc_gates") if encoder_out is not None else None
        scale = gates[0].transpose(0, 1).unsqueeze(-1) if gates else None  # (S, B, G, 1)
        bias = encoder_out.get("enc_gate_bias") if encoder_out is not None else None
        for attn in self._cross_attentions():
            attn.kv_scale, attn.head_bias = scale, (bias[0] if bias else None)
        try:
            x, extra = super().extract_features(prev_output_tokens, encoder_out, incremental_state,
                                                full_context_alignment, alignment_layer, alignment_heads)
        finally:
            for attn in self._cross_attentions():
                attn.kv_scale = attn.head_bias = None
        if encoder_out is not None and gates:
            extra["aux_losses"] = dict(encoder_out.get("aux_losses", {}))
            extra["gate_counts"] = encoder_out["gate_counts"][0]
            index = encoder_out.get("gate_index")
            if index and extra.get("attn") and extra["attn"][0] is not None:
                view = {"gate_index": index[0], "src_tokens": encoder_out["src_tokens"][0]}
                extra["attn"] = [restore_attention(extra["attn"][0], view)]
        return x, extra


@register_model("bart_gated")
class GatedBARTModel(BARTModel):
    def __init__(self, args, encoder, decoder):
        super().__init__(args, encoder, decoder)
        # BARTModel applies BERT-style init (N(0, 0.02), zero bias) to every linear layer; the paper
        # initialises the gate layer "with the default initialization in the linear layer" (§4.2)
        self.encoder.info_gate.proj.reset_parameters()

    @staticmethod
    def add_args(parser):
        BARTModel.add_args(parser)
        add_gate_args(parser, switch=False)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return GatedBARTEncoder(args, src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return GatedBARTDecoder(args, tgt_dict, embed_tokens, no_encoder_attn=getattr(args, "no_cross_attention", False))

    def set_beam_size(self, beam):
        """No beamable encoder-decoder attention: it would keep ``encoder_out`` (and the gates and
        per-head masks in it) un-expanded and skip its reordering; keys/values are computed per
        hypothesis instead, as in ``sum_transformer``."""

    def upgrade_state_dict_named(self, state_dict, name):
        """A plain BART checkpoint has no gate: keep this model's freshly initialised one."""
        super().upgrade_state_dict_named(state_dict, name)
        prefix = (name + "." if name else "") + "encoder.info_gate."
        keep_fresh_parameters(state_dict, self.encoder.info_gate.state_dict(), prefix)


@register_model_architecture("bart_gated", "bart_base_gated")
def bart_base_gated(args):
    gate_defaults(args, info_gate=True)
    bart_base_architecture(args)


@register_model_architecture("bart_gated", "bart_large_gated")
def bart_large_gated(args):
    gate_defaults(args, info_gate=True)
    bart_large_architecture(args)
