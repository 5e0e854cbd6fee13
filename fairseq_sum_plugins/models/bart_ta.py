"""fairseq's BART with the Topic Assistant (SIA, TEMA, DRM; Topic Assistant paper §4, Table 5), for
fine-tuning a pre-trained fairseq BART checkpoint::

    fairseq-train DATA --user-dir fairseq_sum_plugins --task summarization --arch bart_large_ta \\
        --side-data theta --restore-file bart.large/model.pt --reset-optimizer --reset-dataloader \\
        --reset-meters ...

The topic model must be fitted on the BART dictionary of DATA (``python -m preprocess.topic_model
fit DATA``). The mechanisms are those of :mod:`fairseq_sum_plugins.modules.topic`, plugged into
fairseq's modules without renaming any BART parameter (so BART checkpoints load as they are, the TA
parameters initialised fresh by :meth:`TopicBARTModel.upgrade_state_dict_named`):

* SIA: forward hooks on every ``self_attn`` / ``encoder_attn`` add the extra head's output (eq. 7);
* DRM: a forward hook on every ``encoder_attn`` adds ``theta^T W_b`` (before dropout, residual and
  LayerNorm, eq. 9);
* TEMA: the decoder prefixes the top-n topic embeddings (after the token embeddings, before
  ``layernorm_embedding``) with the masks of Fig. 3(b), and strips them from the output.
"""
from functools import partial

import torch.nn as nn
from fairseq.models import register_model, register_model_architecture
from fairseq.models.bart.model import BARTModel, bart_base_architecture, bart_large_architecture
from fairseq.models.transformer import TransformerDecoder, TransformerEncoder

from ..modules.topic import DRM, SIAHead, add_topic_args, build_topic_assistant, topic_defaults
from .fresh_params import keep_fresh_parameters


def _time_first_add(output, extra_btc):
    attn, weights = output
    return attn + extra_btc.transpose(0, 1).type_as(attn), weights


class TopicBARTEncoder(TransformerEncoder):
    def __init__(self, args, dictionary, embed_tokens):
        super().__init__(args, dictionary, embed_tokens)
        self.topic = None  # set by TopicBARTModel.build_model
        self._sia_probs = None
        self.sia_head_dim = args.encoder_embed_dim // args.encoder_attention_heads
        self.sia = None
        if getattr(args, "ta_sia", False):
            self.sia = nn.ModuleList([SIAHead(args.encoder_embed_dim, self.sia_head_dim) for _ in self.layers])
            for layer, head in zip(self.layers, self.sia):
                layer.self_attn.register_forward_hook(partial(self._add_sia, head), with_kwargs=True)

    def _add_sia(self, head, module, args, kwargs, output):
        if self._sia_probs is None:
            return output
        h = kwargs["query"] if "query" in kwargs else args[0]
        return _time_first_add(output, head(h.transpose(0, 1), self._sia_probs))

    def forward(self, src_tokens, src_lengths=None, return_all_hiddens: bool = False, token_embeddings=None, theta=None):
        if self.sia is not None:
            rows = self.topic.rows(src_tokens)
            self._sia_probs = self.topic.sia_probs(rows, rows, self.sia_head_dim, None, src_tokens.eq(self.padding_idx))
        try:
            out = super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        finally:
            self._sia_probs = None
        out["src_tokens"] = [src_tokens]
        out["theta"] = [theta] if theta is not None else []
        return out

    def reorder_encoder_out(self, encoder_out, new_order):
        new = super().reorder_encoder_out(encoder_out, new_order)
        new["theta"] = [t.index_select(0, new_order) for t in encoder_out.get("theta", [])]
        return new


class TopicBARTDecoder(TransformerDecoder):
    def __init__(self, args, dictionary, embed_tokens, no_encoder_attn=False):
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn)
        self.topic = None  # set by TopicBARTModel.build_model
        self.ta_args, self.ta_heads = args, args.decoder_attention_heads
        self.dropout = 0.0  # topic embeddings get dropout_module with the tokens (after layernorm_embedding)
        self._ctx = None
        d, d_k = args.decoder_embed_dim, args.decoder_embed_dim // args.decoder_attention_heads
        self.self_sia = self.cross_sia = self.drm = None
        if getattr(args, "ta_sia", False):
            self.self_sia = nn.ModuleList([SIAHead(d, d_k) for _ in self.layers])
            self.cross_sia = nn.ModuleList([SIAHead(d, d_k, static_kv=True) for _ in self.layers])
        if getattr(args, "ta_drm", False):
            self.drm = nn.ModuleList([DRM(args.ta_num_topics, d) for _ in self.layers])
        for i, layer in enumerate(self.layers):
            layer.self_attn.register_forward_hook(partial(self._self_hook, i), with_kwargs=True)
            if layer.encoder_attn is not None:
                layer.encoder_attn.register_forward_hook(partial(self._cross_hook, i), with_kwargs=True)

    def _self_hook(self, i, module, args, kwargs, output):
        if self._ctx is None or self.self_sia is None:
            return output
        h = kwargs["query"] if "query" in kwargs else args[0]
        return _time_first_add(output, self.self_sia[i](h.transpose(0, 1), self._ctx["ta"]["self_probs"], self._ctx["state"]))

    def _cross_hook(self, i, module, args, kwargs, output):
        if self._ctx is None:
            return output
        if self.cross_sia is not None:
            kv = kwargs["key"] if "key" in kwargs else args[1]
            output = _time_first_add(output, self.cross_sia[i](kv.transpose(0, 1), self._ctx["ta"]["cross_probs"], self._ctx["state"]))
        if self.drm is not None:
            output = _time_first_add(output, self.drm[i](self._ctx["ta"]["theta"]))
        return output

    def extract_features_scriptable(self, prev_output_tokens, encoder_out, incremental_state=None,
                                    full_context_alignment: bool = False, alignment_layer=None, alignment_heads=None):
        """fairseq's decoder with the TEMA prefix, the SIA/DRM context for the hooks, and the prefix
        stripped from the output."""
        if self.topic is None:
            return super().extract_features_scriptable(prev_output_tokens, encoder_out, incremental_state,
                                                       full_context_alignment, alignment_layer, alignment_heads)
        if alignment_layer is None:
            alignment_layer = self.num_layers - 1
        enc = encoder_out["encoder_out"][0]
        padding_mask = encoder_out["encoder_padding_mask"][0] if len(encoder_out["encoder_padding_mask"]) > 0 else None
        positions = self.embed_positions(prev_output_tokens, incremental_state=incremental_state) \
            if self.embed_positions is not None else None
        all_prev = prev_output_tokens
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
            positions = positions[:, -1:] if positions is not None else None
        x = self.embed_scale * self.embed_tokens(prev_output_tokens.contiguous())
        if self.project_in_dim is not None:
            x = self.project_in_dim(x)
        if positions is not None:
            x = x + positions
        view = {"side": {"theta": encoder_out["theta"][0]} if encoder_out.get("theta") else {},
                "src_tokens": encoder_out["src_tokens"][0], "enc": enc.transpose(0, 1), "enc_padding_mask": padding_mask}
        x, ta, n_prefix = self.topic.decoder_inputs(self, x, all_prev, view, incremental_state)
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout_module(x).transpose(0, 1)
        if self.ta_args.ta_tema:
            self_attn_mask = ta["self_bias"]  # Fig. 3(b); None at later incremental steps
        else:
            self_attn_mask = self.buffered_future_mask(x) if incremental_state is None else None
        attn = None
        inner_states = [x]
        self._ctx = {"ta": ta, "state": incremental_state}
        try:
            for idx, layer in enumerate(self.layers):
                x, layer_attn, _ = layer(x, enc, padding_mask, incremental_state, self_attn_mask=self_attn_mask,
                                         self_attn_padding_mask=None,  # right padding: the causal mask covers it
                                         need_attn=bool(idx == alignment_layer), need_head_weights=bool(idx == alignment_layer))
                inner_states.append(x)
                if layer_attn is not None and idx == alignment_layer:
                    attn = layer_attn.float().to(x)
        finally:
            self._ctx = None
        if attn is not None:
            if alignment_heads is not None:
                attn = attn[:alignment_heads]
            attn = attn.mean(dim=0)[:, n_prefix:]
        x = x[n_prefix:]
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = x.transpose(0, 1)
        if self.project_out_dim is not None:
            x = self.project_out_dim(x)
        return x, {"attn": [attn], "inner_states": inner_states}


@register_model("bart_ta")
class TopicBARTModel(BARTModel):
    @staticmethod
    def add_args(parser):
        BARTModel.add_args(parser)
        add_topic_args(parser)

    @classmethod
    def build_model(cls, args, task):
        topic = build_topic_assistant(args, task, task.source_dictionary, task.target_dictionary)
        model = super().build_model(args, task)
        model.encoder.topic = model.decoder.topic = topic
        return model

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return TopicBARTEncoder(args, src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return TopicBARTDecoder(args, tgt_dict, embed_tokens, no_encoder_attn=getattr(args, "no_cross_attention", False))

    def forward(self, src_tokens, src_lengths, prev_output_tokens, features_only: bool = False,
                classification_head_name=None, token_embeddings=None, return_all_hiddens: bool = True,
                alignment_layer=None, alignment_heads=None, theta=None):
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, token_embeddings=token_embeddings,
                                   return_all_hiddens=return_all_hiddens, theta=theta)
        return self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                            alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                            src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)

    def set_beam_size(self, beam):
        """No beamable encoder-decoder attention (as in ``bart_gated``): keys/values per hypothesis."""

    def upgrade_state_dict_named(self, state_dict, name):
        """A plain BART checkpoint has no TA parameters: keep this model's fresh ones."""
        super().upgrade_state_dict_named(state_dict, name)
        fresh = {k: v for k, v in self.state_dict().items() if ".sia." in k or "_sia." in k or ".drm." in k}
        keep_fresh_parameters(state_dict, fresh, name + "." if name else "")


@register_model_architecture("bart_ta", "bart_base_ta")
def bart_base_ta(args):
    topic_defaults(args, on=True)
    bart_base_architecture(args)


@register_model_architecture("bart_ta", "bart_large_ta")
def bart_large_ta(args):
    topic_defaults(args, on=True)
    bart_large_architecture(args)
