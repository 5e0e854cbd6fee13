"""fairseq's BART with this plugin's features, for fine-tuning a pre-trained fairseq BART
checkpoint.

One model (``bart_sum``) whose features are the flags of ``sum_transformer``: ``--gate``
(``--gate-per-head``, ``--gate-threshold``; information selection,
:mod:`..features.information_selection`), ``--ta-sia`` / ``--ta-tema`` / ``--ta-drm`` (Topic
Assistant, :mod:`..features.topic_assistant.layers`), ``--tpr`` (TP-Transformer role binding,
:mod:`..features.tp_transformer`; BART's post-LN layers only) and ``--focus-layers`` /
``--saliency-layers`` (ETADS, :mod:`..features.etads_focus`, :mod:`..features.etads_saliency`), in
any combination. Presets::

    bart_base_gated, bart_large_gated   information selection (Ishimwe & Grave)
    bart_base_ta, bart_large_ta         Topic Assistant: SIA + TEMA + DRM (its Table 5, BART+TA)

    fairseq-train DATA --user-dir fairseq_sum_plugins --task summarization --arch bart_large_ta \\
        --side-data theta --restore-file bart.large/model.pt --reset-optimizer --reset-dataloader \\
        --reset-meters [--gate True] ...

Sizes (fairseq's BART dims; vocab 50,265, K = 256 topics as TA App. states). TA's Table 8 gives the
parameters TA adds: BertSUM+SIA 7.09M, BertSUM+DRM 3.16M, BART+TA 38.91M (9.58%). Ours add
7,866,624 to ``bart_large`` (406,291,456; 1.94%): SIA 4,720,896 (36 attention blocks of
``W^v_add`` ``d_m x d_v`` with a bias and ``W^a_add`` ``d_v x d_m``, d_v 64; TA eq. 7) and DRM
3,145,728 (``W_b``, ``K x d_m`` in each of 12 decoder layers; TA eq. 9); ``bart_base_ta`` adds
2,950,272 to 139,420,416 (2.12%). Table 8's figures do not follow from TA eq. 7 and 9 as written:
at BertSUM's dims (24 attention blocks and 6 decoder layers of d_m 768) they give 2,360,832 (SIA)
and 1,179,648 (DRM) against its 7.09M and 3.16M, and the paper gives no other form, so TA eq. 7 and
9 are kept as written (tests/test_paper_sizes.py). Information selection fine-tunes T5-base in its
paper (``t5_base_gated`` in ``sum_transformer``); the BART presets ``bart_*_gated`` are the
project's.

The features are the ones of :mod:`..modules.features`, built and consumed as in
``sum_transformer``, and enter through fairseq's builder hooks, as in fairseq's linformer example:
``build_encoder_layer`` / ``build_decoder_layer`` build layers whose ``build_self_attention`` /
``build_encoder_attention`` build the site's feature modules and return :class:`FeatureAttention`,
fairseq's attention plus

* the features' score biases and probability gates (ETADS eq. 8, 10) on fairseq's explicit path,
  with the same batch-first ``(B, H, T, S)`` layout as ``sum_transformer``;
* the cross-attention's per-forward key/value scale and score bias (IS eq. 6: the gates' row scaling
  of the projected keys and values, and the per-head mask of closed positions in
  ``apply_sparse_mask``); the gate itself transforms the encoder's final states (IS eq. 3,
  Algorithm 1: thresholding and pruning in eval mode);
* the features' heads: SIA's extra head (TA eq. 7) in every attention block, and DRM's ``theta^T
  W_b`` (TA eq. 9) on every cross-attention output (before dropout, residual and LayerNorm);

and the features' bindings (TPT eq. 6) after each attention sublayer's residual and LayerNorm. TEMA:
the first decoder layer prefixes the top-n topic embeddings (scaled and normalised like the token
embeddings, no position) and every decoder layer attends with Fig. 3(b)'s mask; the decoder strips
the prefix from its output.

fairseq's layers pass their attention modules no per-batch data, so the encoder and the decoder hand
the batch's feature inputs (the cross-attention's scale and bias, SIA probabilities, theta, the TEMA
prefix) to the modules they built through one :class:`BatchInputs`, filled for exactly the span of
their own forward, as fairseq's latent-depth and head-selection examples do; a name it does not know
is an error. The encoder output follows :mod:`..modules.encoder_out` in fairseq's time-first layout.

No BART parameter is renamed, so BART checkpoints load as they are; the features' parameters are
initialised fresh (:meth:`SumBARTModel.upgrade_state_dict_named`); earlier names of the Topic
Assistant's parameters are renamed on load (:data:`RENAMED`).
"""
import functools
import re
from contextlib import contextmanager

import torch
from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models.bart.model import BARTModel, bart_base_architecture, bart_large_architecture
from fairseq.models.transformer import TransformerConfig, TransformerDecoder, TransformerEncoder
from fairseq.modules import MultiheadAttention
from fairseq.modules.transformer_layer import (TransformerDecoderLayerBase,
                                               TransformerEncoderLayerBase)

from fairseq import utils

from ..flags import parse_bool_options
from ..modules.attention import FactoredGate, materialised
from ..modules.checkpointing import checkpoint_layer
from ..modules.encoder_out import EncoderOut
from ..modules.features import (
    ENCODER_OUT,
    SITE_INPUTS,
    SiteDims,
    add_feature_args,
    add_heads,
    attach,
    bind,
    build_model_features,
    cross_attention_values,
    decoder_call,
    decoder_outputs,
    encoder_inputs,
    feature_defaults,
    layer_inputs,
    prob_gate_fn,
    recompute_context,
    score_bias_fn,
    set_model_features,
    site_input_names,
    stack_context,
    switch_on,
    transform_encoder_output,
)
from .fresh_params import fresh_pattern, keep_fresh_parameters

# earlier TA parameter names -> their names here: the per-decoder ModuleList layout (encoder.sia.N,
# decoder.drm.N, ...) and one SIA attribute name for every attention (self_attn.sia,
# encoder_attn.sia)
RENAMED = [
    (re.compile(r"^(.*\.)?decoder\.layers\.(\d+)\.self_attn\.sia\."),
     r"\1decoder.layers.\2.self_attn.self_sia."),
    (re.compile(r"^(.*\.)?decoder\.layers\.(\d+)\.encoder_attn\.sia\."),
     r"\1decoder.layers.\2.encoder_attn.cross_sia."),
    (re.compile(r"^(.*\.)?encoder\.sia\.(\d+)\."), r"\1encoder.layers.\2.self_attn.sia."),
    (re.compile(r"^(.*\.)?decoder\.self_sia\.(\d+)\."), r"\1decoder.layers.\2.self_attn.self_sia."),
    (re.compile(r"^(.*\.)?decoder\.cross_sia\.(\d+)\."),
     r"\1decoder.layers.\2.encoder_attn.cross_sia."),
    (re.compile(r"^(.*\.)?decoder\.drm\.(\d+)\."), r"\1decoder.layers.\2.encoder_attn.drm."),
]
BART_FORWARD_ARGS = {
    "features_only", "classification_head_name", "token_embeddings", "return_all_hiddens",
    "alignment_layer", "alignment_heads"
}
_NONE = object()
# every per-batch input name (FeatureAttention's docstring): another name is a KeyError, never a
# silent None
BATCH_INPUTS = ("side", "kv_scale", "score_bias", "self_mask", "prefix")


def batch_input_names():
    """:data:`BATCH_INPUTS` and the per-forward inputs the layer features declare
    (modules/features.py)."""
    return BATCH_INPUTS + tuple(n for site in ("encoder_self", "decoder_self", "decoder_cross")
                                for n in site_input_names(site) if n not in SITE_INPUTS)


class BatchInputs:
    """The per-batch inputs of the feature modules inside fairseq's layers.

    The owner (encoder or decoder) provides them for the span of its forward with
    ``with inputs.given(name=value, ...)``; the modules it built read ``inputs.get(name)``. Reading
    outside any span is an error (unless a default is given), so nothing is read from another batch;
    a name not in :data:`BATCH_INPUTS`, given or read, is a ``KeyError``.
    """

    def __init__(self):
        self._stack = []

    @staticmethod
    def _check(names):
        allowed = batch_input_names()
        unknown = sorted(set(names) - set(allowed))
        if unknown:
            raise KeyError(f"unknown feature inputs {unknown}: the inputs are "
                           f"{', '.join(dict.fromkeys(allowed))}")

    @contextmanager
    def given(self, **values):
        self._check(values)
        outer = self._stack[-1] if self._stack else {}
        self._stack.append({**outer, **values})
        try:
            yield
        finally:
            self._stack.pop()

    def captured(self):
        """The inputs given now, and a factory of contexts that gives them again (for the
        recomputation of a checkpointed layer in backward, after the owner's span has closed)."""
        values = dict(self._stack[-1]) if self._stack else {}
        return lambda: self.given(**values)

    def get(self, name, default=_NONE):
        self._check([name])
        if not self._stack:
            if default is _NONE:
                raise RuntimeError(
                    f"feature input {name!r} read outside the forward that provides it")
            return default
        value = self._stack[-1].get(name)
        return default if value is None and default is not _NONE else value


def as_config(cfg):
    return cfg if isinstance(cfg, TransformerConfig) else TransformerConfig.from_namespace(cfg)


def wrap_layer(layer, cfg, inputs):
    """Activation checkpointing (``--checkpoint-activations``, ``--offload-activations``) and FSDP
    wrapping of a layer, as fairseq's own builders do; the recomputation in backward gets the batch
    inputs that the forward read (:mod:`..modules.checkpointing`: fairseq's wrapper recomputed the
    layer outside the span that provides them)."""
    checkpointed = cfg.checkpoint_activations or cfg.offload_activations
    if checkpointed:
        checkpoint_layer(layer, cfg.offload_activations,
                         functools.partial(_captured, layer, inputs))
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpointed else 0)


def _captured(layer, inputs):
    """What a recomputed layer needs again: the batch inputs and the features' stack context
    (:func:`~fairseq_sum_plugins.modules.features.recompute_context`)."""
    batch, features = inputs.captured(), recompute_context(layer)

    @contextmanager
    def again():
        with batch(), features():
            yield

    return again


class FeatureAttention(MultiheadAttention):
    """fairseq's attention with the features of its block (time-first, as fairseq's).

    The cross-attention's keys and values are scaled by the batch input ``kv_scale`` ``(B, G, S,
    1)`` and its logits biased by ``score_bias`` ``(B, G, 1, S)`` (the features' ``cross_inputs``,
    e.g. IS eq. 6 and Algorithm 1's per-head closed positions); ``attention_features``: the feature
    modules of this attention's site ``site_name`` (:mod:`..modules.features`, batch-first as
    everywhere: score biases, probability gates, and heads added to the output, e.g. TA's SIA
    (TA eq. 7) and DRM (TA eq. 9), which this module hosts since fairseq's layers hand their
    attention no per-batch inputs).
    """

    def __init__(self, *args, inputs, site_name, **kwargs):
        super().__init__(*args, **kwargs)
        self.inputs, self.site_name, self.attention_features = inputs, site_name, []
        if self.encoder_decoder_attention:
            self.k_proj.register_forward_hook(self._scale_rows)
            self.v_proj.register_forward_hook(self._scale_rows)

    # g_j K_j, g_j V_j: computed once per source, then cached
    def _scale_rows(self, module, args, out):
        scale = self.inputs.get("kv_scale", None)
        if scale is None:
            return None
        # fairseq's projections are time-first: (B, G, S, 1) -> (S, B, G, 1)
        src_len, bsz, dim = out.shape
        scale = scale.permute(2, 0, 1, 3).type_as(out)
        return (out.view(src_len, bsz, self.num_heads, self.head_dim) * scale).view(
            src_len, bsz, dim)

    def apply_sparse_mask(self, attn_weights, tgt_len: int, src_len: int, bsz: int):
        bias = self.inputs.get("score_bias", None) if self.encoder_decoder_attention else None
        if bias is not None:  # (B, G, 1, S) -> (B * H, 1, S)
            bias = (bias.expand(bsz, self.num_heads, 1, src_len)
                    .reshape(bsz * self.num_heads, 1, src_len))
            attn_weights = attn_weights + bias.type_as(attn_weights)
        return attn_weights

    def host(self, modules):
        """The site's feature modules (the layer's, or with heads this module's own children)."""
        self.attention_features = list(modules)
        if any(hasattr(m, "score_bias") or hasattr(m, "prob_gate")
               for m in self.attention_features):
            # fairseq's fused path has no place for them: its explicit path
            self.skip_embed_dim_check = True
        return self

    def site_inputs(self, key_padding_mask, incremental_state):
        """This forward's inputs of the site (:func:`..modules.features.layer_inputs`), from the
        batch inputs."""
        extra = {n: self.inputs.get(n, None)
                 for n in site_input_names(self.site_name) if n not in SITE_INPUTS}
        return layer_inputs(self.site_name, key_padding_mask, incremental_state, **extra)

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None,
                need_weights=True, static_kv=False, attn_mask=None, before_softmax=False,
                need_head_weights=False):
        if self.skip_embed_dim_check and not before_softmax:
            out, weights = self._site_forward(query, key, value, key_padding_mask,
                                              incremental_state, need_weights, static_kv, attn_mask,
                                              need_head_weights)
        else:
            out, weights = super().forward(query, key, value, key_padding_mask, incremental_state,
                                           need_weights, static_kv, attn_mask, before_softmax,
                                           need_head_weights)
        # e.g. TA eq. 7, 9
        if not before_softmax and any(hasattr(m, "head") for m in self.attention_features):
            kv = (key if self.encoder_decoder_attention else query).transpose(0, 1)
            inputs = self.site_inputs(key_padding_mask, incremental_state)
            out = add_heads(self.attention_features, out.transpose(0, 1), query.transpose(0, 1), kv,
                            inputs).transpose(0, 1)
        return out, weights

    def _site_forward(self, query, key, value, key_padding_mask, incremental_state, need_weights,
                      static_kv, attn_mask, need_head_weights):
        """fairseq's explicit path up to the masked logits, then the site features (one layout with
        ``sum_transformer``: ``(B, H, T, S)`` biases and gates of ``(B, H, *, d_k)`` queries and
        keys)."""
        tgt_len, bsz, _ = query.shape
        logits, v = super().forward(query, key, value, key_padding_mask, incremental_state, False,
                                    static_kv, attn_mask, before_softmax=True)
        heads, src_len = self.num_heads, logits.size(-1)
        inputs = self.site_inputs(key_padding_mask, incremental_state)
        # unscaled
        q = self.q_proj(query).view(tgt_len, bsz, heads, self.head_dim).permute(1, 2, 0, 3)
        saved = self._get_input_buffer(incremental_state) if incremental_state is not None else {}
        # this step's keys (B * H, S, d_k), as fairseq cached them
        if saved.get("prev_key") is not None:
            k = saved["prev_key"].view(bsz, heads, src_len, self.head_dim)
        else:
            k = (self.k_proj(query if key is None else key)
                 .view(src_len, bsz, heads, self.head_dim).permute(1, 2, 0, 3))
        bias_fn, gate_fn = (score_bias_fn(self.attention_features, inputs),
                            prob_gate_fn(self.attention_features, inputs))
        if bias_fn is not None:
            logits = (logits.view(bsz, heads, tgt_len, src_len)
                      + materialised(bias_fn(q, k)).to(logits.dtype)).flatten(0, 1)
        probs_float = utils.softmax(logits, dim=-1)
        probs = self.dropout_module(probs_float.type_as(logits))
        if gate_fn is not None:
            gate = gate_fn(q, k)
            gate = gate.gate() if isinstance(gate, FactoredGate) else gate
            probs = (probs.view(bsz, heads, tgt_len, src_len) * gate.type_as(probs)).flatten(0, 1)
        out = self.out_proj(torch.bmm(probs, v).transpose(0, 1).reshape(tgt_len, bsz, -1))
        weights = None
        if need_weights:
            weights = probs_float.view(bsz, heads, tgt_len, src_len).transpose(1, 0)
            weights = weights if need_head_weights else weights.mean(dim=0)
        return out, weights


def bart_site_dims(cfg, side, layer_idx):
    stack = getattr(cfg, side)
    return SiteDims(layer_idx, stack.layers, stack.embed_dim, stack.embed_dim,
                    stack.attention_heads)


class SumBARTEncoderLayer(TransformerEncoderLayerBase):
    """fairseq's encoder layer with the layer features (:mod:`..modules.features`) of
    ``encoder_self``."""

    def __init__(self, cfg, inputs, features, index=0):
        self.inputs, self.features, self.index = inputs, features, index
        super().__init__(cfg)
        self.binding_features = attach(self, features, "encoder_self", "binding",
                                       bart_site_dims(cfg, "encoder", index))
        # post-LN (else refused): after the norm
        if any(getattr(m, "binds", True) for m in self.binding_features):
            self.self_attn_layer_norm.register_forward_hook(self._bind)

    def _bind(self, module, args, out):
        return bind(self.binding_features, out)

    def build_self_attention(self, embed_dim, cfg):
        dims = bart_site_dims(cfg, "encoder", self.index)
        site = attach(self, self.features, "encoder_self", "attention", dims)
        attn = FeatureAttention(
            embed_dim, cfg.encoder.attention_heads, dropout=cfg.attention_dropout,
            self_attention=True,
            q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
            xformers_att_config=cfg.encoder.xformers_att_config,
            inputs=self.inputs, site_name="encoder_self",
        )
        return attn.host(site + attach(attn, self.features, "encoder_self", "head", dims))


class SumBARTDecoderLayer(TransformerDecoderLayerBase):
    """fairseq's decoder layer; with TEMA the first layer prefixes the topic rows and every layer
    attends with Fig. 3(b)'s mask instead of the causal one."""

    def __init__(self, cfg, inputs, features, index, no_encoder_attn=False):
        self.inputs, self.features, self.index, self.first = inputs, features, index, index == 0
        super().__init__(cfg, no_encoder_attn)
        dims = bart_site_dims(cfg, "decoder", index)
        self.self_binding_features = attach(self, features, "decoder_self", "binding", dims)
        self.cross_binding_features = attach(self, features, "decoder_cross", "binding", dims)
        # post-LN (else refused): after the norm
        if any(getattr(m, "binds", True) for m in self.self_binding_features):
            self.self_attn_layer_norm.register_forward_hook(self._bind_self)
        if any(getattr(m, "binds", True)
               for m in self.cross_binding_features) and self.encoder_attn_layer_norm is not None:
            self.encoder_attn_layer_norm.register_forward_hook(self._bind_cross)

    def _bind_self(self, module, args, out):
        return bind(self.self_binding_features, out)

    def _bind_cross(self, module, args, out):
        return bind(self.cross_binding_features, out)

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        dims = bart_site_dims(cfg, "decoder", self.index)
        site = attach(self, self.features, "decoder_self", "attention", dims)
        attn = FeatureAttention(
            embed_dim, cfg.decoder.attention_heads, dropout=cfg.attention_dropout,
            add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
            self_attention=not cfg.cross_self_attention,
            q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
            xformers_att_config=cfg.decoder.xformers_att_config,
            inputs=self.inputs, site_name="decoder_self",
        )
        return attn.host(site + attach(attn, self.features, "decoder_self", "head", dims))

    def build_encoder_attention(self, embed_dim, cfg):
        f, dims = self.features, bart_site_dims(cfg, "decoder", self.index)
        site = attach(self, f, "decoder_cross", "attention", dims)
        attn = FeatureAttention(
            embed_dim, cfg.decoder.attention_heads,
            kdim=cfg.encoder.embed_dim, vdim=cfg.encoder.embed_dim,
            dropout=cfg.attention_dropout, encoder_decoder_attention=True,
            q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
            xformers_att_config=cfg.encoder.xformers_att_config,
            inputs=self.inputs, site_name="decoder_cross",
        )
        return attn.host(site + attach(attn, f, "decoder_cross", "head", dims))

    def forward(self, x, encoder_out=None, encoder_padding_mask=None, incremental_state=None,
                prev_self_attn_state=None, prev_attn_state=None, self_attn_mask=None,
                self_attn_padding_mask=None, need_attn=False, need_head_weights=False):
        prefix = self.inputs.get("prefix")  # (n, B, C): TEMA, in full mode and at the first step
        if prefix is not None:
            if self.first:
                x = torch.cat([prefix.type_as(x), x], dim=0)
            self_attn_mask = self.inputs.get("self_mask")  # Fig. 3(b)
            if self_attn_padding_mask is not None:  # topic positions are never padding
                self_attn_padding_mask = torch.cat([
                    self_attn_padding_mask.new_zeros(x.size(1), prefix.size(0)),
                    self_attn_padding_mask
                ], dim=1)
        return super().forward(x, encoder_out, encoder_padding_mask, incremental_state,
                               prev_self_attn_state, prev_attn_state, self_attn_mask,
                               self_attn_padding_mask, need_attn, need_head_weights)


class SumBARTEncoder(TransformerEncoder):
    """BART's encoder with the features in its layers (e.g. SIA) and on its final states (e.g. the
    gate)."""

    def __init__(self, args, dictionary, embed_tokens):
        self.inputs, self.n_built = BatchInputs(), 0
        super().__init__(args, dictionary, embed_tokens)
        # e.g. information selection (IS eq. 3, Algorithm 1) on the final states
        d = args.encoder_embed_dim
        self.output_features = attach(self, args, ENCODER_OUT, "encoder",
                                      SiteDims(0, 1, d, d, args.decoder_attention_heads))
        # e.g. the Topic Assistant's topic model, set by SumBARTModel.build_model
        self.model_features = []

    def build_encoder_layer(self, cfg):
        cfg = as_config(cfg)
        layer = SumBARTEncoderLayer(cfg, self.inputs, self.args, index=self.n_built)
        self.n_built += 1
        return wrap_layer(layer, cfg, self.inputs)

    def forward(self, src_tokens, src_lengths=None, return_all_hiddens: bool = False,
                token_embeddings=None, **side):
        # side data: net_input fields, or from the model's forward
        side = {**self.inputs.get("side", {}), **side}
        # e.g. TA eq. 6's probabilities, shared by the layers
        values = encoder_inputs(self.model_features, src_tokens, src_tokens.eq(self.padding_idx))
        # e.g. TPT eq. 4 once per stack
        with self.inputs.given(**values), stack_context(self.layers):
            out = super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        view = EncoderOut.of(out)
        view.src_tokens, view.side, view.aux_losses = src_tokens, side, {}
        transform_encoder_output(self.output_features, view)  # e.g. gates, gate_l1, (eval) pruning
        return view.into_fairseq(out)

    def reorder_encoder_out(self, encoder_out, new_order):
        new = super().reorder_encoder_out(encoder_out, new_order)
        return EncoderOut.of(encoder_out).reorder(new_order).into_fairseq(new)


class SumBARTDecoder(TransformerDecoder):
    """BART's decoder with the features' batch inputs provided around fairseq's own forward."""

    def __init__(self, args, dictionary, embed_tokens, no_encoder_attn=False):
        self.inputs, self.n_built = BatchInputs(), 0
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn)
        # e.g. the Topic Assistant's topic model, set by SumBARTModel.build_model
        self.model_features = []

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        cfg = as_config(cfg)
        layer = SumBARTDecoderLayer(cfg, self.inputs, self.args, index=self.n_built,
                                    no_encoder_attn=no_encoder_attn)
        self.n_built += 1
        return wrap_layer(layer, cfg, self.inputs)

    def batch_inputs(self, prev_output_tokens, view, incremental_state):
        """The decoder layers' feature inputs for this call (see :class:`FeatureAttention`)."""
        inputs = {}
        # e.g. IS eq. 6, as sum_transformer's: {} without --gate
        inputs.update(cross_attention_values(view))
        # e.g. TEMA's prefix and mask, SIA's probabilities, DRM's theta
        incremental = incremental_state is not None
        call = decoder_call(self.model_features, prev_output_tokens,
                            1 if incremental else prev_output_tokens.size(1), view, incremental)
        inputs.update(**call.site_inputs("decoder_self"), **call.site_inputs("decoder_cross"),
                      self_mask=call.self_mask)
        if call.n_prefix:  # e.g. TEMA (TA eq. 8), embedded like the tokens (without a position)
            x = self.embed_scale * call.prefix(self.embed_tokens.weight)
            if self.project_in_dim is not None:
                x = self.project_in_dim(x)
            if self.layernorm_embedding is not None:
                x = self.layernorm_embedding(x)
            inputs["prefix"] = self.dropout_module(x).transpose(0, 1)
        return inputs, call.n_prefix

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None,
                         full_context_alignment: bool = False, alignment_layer=None,
                         alignment_heads=None):
        view = EncoderOut.of(encoder_out)
        inputs, n_prefix = self.batch_inputs(prev_output_tokens, view, incremental_state)
        # e.g. TPT eq. 4 once per stack
        with self.inputs.given(**inputs), stack_context(self.layers):
            x, extra = super().extract_features(prev_output_tokens, encoder_out, incremental_state,
                                                full_context_alignment, alignment_layer,
                                                alignment_heads)
        attn = extra["attn"][0] if extra.get("attn") else None
        if n_prefix:  # TEMA's topic positions are never emitted
            x, attn = x[:, n_prefix:], (attn[:, n_prefix:] if attn is not None else None)
        extra["attn"] = [view.restore_attention(attn)]  # kept rows -> source positions
        extra["aux_losses"] = dict(view.aux_losses)
        extra.update(decoder_outputs(view))  # e.g. IS: gate_counts
        return x, extra


@register_model("bart_sum")
class SumBARTModel(BARTModel):
    """fairseq's BART with information selection and the Topic Assistant; see the module
    docstring."""

    def __init__(self, args, encoder, decoder):
        super().__init__(args, encoder, decoder)
        # BARTModel applies BERT-style init (N(0, 0.02), zero bias) to every linear layer; the paper
        # initialises the gate layer "with the default initialization in the linear layer" (§4.2)
        # the features that keep their own initialisation (feature_init)
        for module in self.modules():
            if getattr(module, "feature_init", False):
                module.reset_parameters()

    @staticmethod
    def add_args(parser):
        BARTModel.add_args(parser)
        # the features (modules/features.py): --gate*, --ta-*, --tpr*, --focus/--saliency-layers
        add_feature_args(parser)

    @classmethod
    def build_model(cls, args, task):
        # every boolean option through one parser, also from --model-overrides and hydra ('False' is
        # truthy)
        parse_bool_options(args, cls.add_args)
        feature_defaults(args, "bart")
        # e.g. the Topic Assistant's topic model (none without --ta-*; it sets args.ta_num_topics
        # for DRM)
        model_features = build_model_features(args, task, task.source_dictionary,
                                              task.target_dictionary)
        model = super().build_model(args, task)
        set_model_features(model.encoder, model_features)
        set_model_features(model.decoder, model_features)
        return model

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return SumBARTEncoder(args, src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return SumBARTDecoder(args, tgt_dict, embed_tokens,
                              no_encoder_attn=getattr(args, "no_cross_attention", False))

    def forward(self, src_tokens, src_lengths, prev_output_tokens, **kwargs):
        """BART's forward; keyword arguments other than BART's are side data for the encoder."""
        side = {k: kwargs.pop(k) for k in list(kwargs) if k not in BART_FORWARD_ARGS}
        with self.encoder.inputs.given(side=side):
            return super().forward(src_tokens, src_lengths, prev_output_tokens, **kwargs)

    def set_beam_size(self, beam):
        """No beamable encoder-decoder attention: it would keep the encoder output (and the gates
        and per-head masks in it) un-expanded and skip its reordering; keys/values are computed per
        hypothesis instead, as in ``sum_transformer``."""

    def upgrade_state_dict_named(self, state_dict, name):
        """A plain BART checkpoint has none of the features' parameters: keep this model's fresh
        ones."""
        super().upgrade_state_dict_named(state_dict, name)
        for key in list(state_dict):
            for pattern, target in RENAMED:
                if pattern.match(key):
                    state_dict[pattern.sub(target, key)] = state_dict.pop(key)
                    break
        fresh = fresh_pattern()  # the features' parameters (modules/features.py), registered now
        fresh = {k: v for k, v in self.state_dict().items() if fresh.search(k)}
        keep_fresh_parameters(state_dict, fresh, name + "." if name else "")


def register_preset(name, size_architecture, gate=False, topic_assistant=False):
    """Registers ``name``: ``size_architecture`` (fairseq's BART dims) with the features switched
    on."""

    def preset(args):
        parse_bool_options(args, SumBARTModel.add_args)
        for name, on in (("information selection", gate), ("Topic Assistant", topic_assistant)):
            if on:
                switch_on(args, name)
        size_architecture(args)

    preset.__name__ = name
    register_model_architecture("bart_sum", name)(preset)


for size, architecture in (("base", bart_base_architecture), ("large", bart_large_architecture)):
    register_preset(f"bart_{size}_gated", architecture, gate=True)  # information selection
    register_preset(f"bart_{size}_ta", architecture, topic_assistant=True)  # SIA + TEMA + DRM
