"""One encoder-decoder transformer whose paper mechanisms are composable features.

Each paper is a named preset (``--arch``) over the same code path, so features also combine::

    t5_transformer_base             TP-Transformer paper's baseline (App. B: T5 cell, 60,506,880)
    tp_transformer_base             TPT-d: discrete role dictionary in every attention sublayer
                                    (App. B: T5 cell, 64,258,080)
    tp_transformer_continuous_base  TPT-c: continuous roles (Schlag et al., 2019; App. B: T5
                                    cell, 65,234,688)
    *_default_cell_base             the same three on this module's default cell (below)
    transformer_gated_base          information selection: encoder gate + gated cross-attention
    tp_transformer_gated_base       information selection composed with TPT-d
    etads_base                      ETADS: focus attention (encoder), saliency selection
                                    (cross-attn), post-LN, output bias b^o (ETADS eq. 4)
    etads_baseline                  ETADS paper's "Basic model": the same 4+4 post-LN cell
                                    without them
    transformer_ta_base             Topic Assistant: SIA + TEMA + DRM
                                    (features/topic_assistant/layers.py) on the T5-style cell

Parameter counts are at vocabulary 32,128 (TP-Transformer's) unless said; each preset's docstring
gives what its paper states, where the paper is silent or ambiguous and what was chosen.

The cell (TP-Transformer §2.2-2.3, TPT eq. 3 and 6-9), pre-LN by default::

    Self(X)       = TPR(X + MHAttn(LN(X), LN(X)))           (3, 6, 8)
    Cross(Y, H)   = TPR(Y + MHAttn(LN(Y), H))               (8)
    FF(X)         = X + W_f ReLU(W_g LN(X) + b_g) + b_f     (7)
    Encode(X)     = FF(Self(X));  Decode(H, Y) = FF(Cross(Self(Y), H))     (9)
    p(y_i)        = softmax(E^T LN(y_{i,L}))                 (10, tied embeddings)

TPT eq. 3 writes the residual as ``X̂ + ...`` (the normalized input) and TPT eq. 7 feeds ``X`` to
the feed-forward layer un-normalized; we follow the T5 cell the paper builds on (Raffel et al.,
2020), whose residual carries the un-normalized stream ``X`` and whose sublayers (feed-forward
included) read ``LN(X)``. With ``--pointer-generator True`` (any preset, either cell) the output is
See et al.'s copy mixture ``z_t softmax(E^T h_t) + (1 - z_t) P_copy`` over the last layer's
head-averaged cross-attention (features/copy_mechanism.py, as fairseq's
examples/pointer_generator; source gain with and without it: results/xsum-read/results.md).
``TPR`` is the identity when ``--tpr none``. With the default cell, positions are fairseq's
sinusoidal embeddings and the norms are LayerNorm with bias. Every parameter takes part in every
forward pass.

The T5 cell (``--cell t5``; presets ``t5_small``, ``t5_base``, ``t5_*_gated`` and App. B's
``t5_transformer_base``, ``tp_transformer_base``, ``tp_transformer_continuous_base``, also
registered under their earlier names ``*_t5_small``) is T5 v1.0 exactly (Raffel et al., 2020;
HF ``modeling_t5.py``)::

    X_0           = dropout(E[x])                    no absolute positions, no sqrt(d) scale
    Self(X)       = X + dropout(W_o Attn(RMS(X)))    Attn logits: Q K^T + B_rel (no 1/sqrt(d_k))
    FF(X)         = X + dropout(W_out dropout(ReLU(W_in RMS(X))))   no biases anywhere
    H             = dropout(RMS(X_L))                (both stacks)
    p(y_i)        = softmax(E (d_m^-1/2 h_i))        tied output scaled by d_m^-1/2

Q, K, V are ``H * d_kv`` wide: ``d_m`` by default, ``--t5-d-kv`` otherwise (t5-3b: 32 heads of 128,
t5-11b: 128 heads of 128, at ``d_m`` 1024); ``W_o`` maps them back to ``d_m``. The output may be an
untied ``W_lm`` (``--share-decoder-input-output-embed False``), unscaled by default there;
``--t5-scale-decoder-output`` sets the ``d_m^-1/2`` either way (T5 checkpoints saved by transformers
>= 5 record it as ``scale_decoder_outputs``).

``B_rel`` (modules/t5.py): one bucketed table per stack, computed once per forward and shared by its
layers, bidirectional in the encoder and causal in the decoder. Attention probabilities are dropped
out too (``--attention-dropout``, 0.1 in the presets), as are the FF hidden units
(``--activation-dropout``). The pad row is the decoder's start token, as in T5: the decoder embeds
fairseq's leading EOS with the pad row (EOS appears nowhere else in ``prev_output_tokens``), and
that row is trained. ``--t5-cross-position-bias`` adds a third causal table in cross-attention
(query step vs. source position): TP-Transformer's code is built on an early HF T5 in which the
first decoder block's cross-attention also owned and used a ``relative_attention_bias`` (buckets x
heads = 32 x 8 = 256 parameters), which makes App. B's counts 256 more than today's T5-small.
"""
import contextlib
import math

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
from fairseq.modules import LayerNorm, PositionalEmbedding

from ..flags import bool_flag, parse_bool_options
from ..data_folder import hub_text_kwargs
from ..modules.attention import MultiheadAttention
from ..modules.checkpointing import add_checkpoint_args, checkpoint_layers
from ..modules.compiled import compile_layers
from ..modules.dropout import (DEFAULT_MASK, Drops, add_dropout_mask_arg, check_dropout_mask,
                               set_dropout_mask)
from ..modules.encoder_out import EncoderOut
from ..modules.features import (
    DECODER_OUT,
    ENCODER_OUT,
    NoCall,
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
    needs_attention,
    prob_gate_fn,
    prefix_length,
    recompute_context,
    score_bias_fn,
    set_model_features,
    stack_context,
    switch_on,
    transform_encoder_output,
    transform_output,
)
from ..modules.t5 import RelativePositionBias, T5LayerNorm, t5_init_attention, t5_init_feed_forward
from ..modules.tied_embedding import TiedProjection, sum_rows_per_token
from .fresh_params import IMPORT_MARKER, check_import_mark, keep_fresh_parameters

DEFAULT_MAX_POSITIONS = 1024


def Embedding(num_embeddings, embedding_dim, padding_idx):
    m = nn.Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx)
    nn.init.normal_(m.weight, mean=0, std=embedding_dim**-0.5)
    nn.init.constant_(m.weight[padding_idx], 0)
    return m


def is_t5_cell(args):
    """``--cell t5``: the exact T5 v1.0 cell (modules/t5.py; see "The T5 cell" above)."""
    return getattr(args, "cell", "default") == "t5"


def build_embedding(args, dictionary, dim):
    """Token embeddings; the T5 cell's are ``N(0, 1)`` with a trainable pad row (T5's decoder
    start)."""
    if not is_t5_cell(args):
        return Embedding(len(dictionary), dim, dictionary.pad())
    m = nn.Embedding(len(dictionary), dim)
    nn.init.normal_(m.weight, mean=0, std=1.0)
    return m


def build_norm(args, dim):
    return T5LayerNorm(dim) if is_t5_cell(args) else LayerNorm(dim)


def attention_dim(args, dim, heads):
    """``H * d_k``: ``d_m``, or with ``--t5-d-kv`` (T5 cell) ``heads * d_kv``."""
    return heads * args.t5_d_kv if is_t5_cell(args) and getattr(args, "t5_d_kv", None) else dim


def build_attention(args, dim, heads, self_attention):
    """Fairseq-style attention, or T5's: no biases, no ``1/sqrt(d_k)``, T5's init, ``H * d_kv``
    wide."""
    if not is_t5_cell(args):
        return MultiheadAttention(dim, heads, args.attention_dropout, self_attention=self_attention)
    attn = MultiheadAttention(dim, heads, args.attention_dropout, self_attention=self_attention,
                              bias=False, scaling=1.0, inner_dim=attention_dim(args, dim, heads))
    t5_init_attention(attn)
    return attn


def build_feed_forward(args, dim, ffn_dim):
    if not is_t5_cell(args):
        return FeedForward(dim, ffn_dim, args.activation_fn, args.activation_dropout)
    ffn = FeedForward(dim, ffn_dim, args.activation_fn, args.activation_dropout, bias=False)
    t5_init_feed_forward(ffn, dim, ffn_dim)
    return ffn


def t5_scale_decoder_output(args):
    """T5 cell: ``d_m^-1/2`` on the decoder's output states: ``--t5-scale-decoder-output``, by
    default with a tied output projection (T5 v1.0), not with an untied one."""
    scale = getattr(args, "t5_scale_decoder_output", None)
    return args.share_decoder_input_output_embed if scale is None else scale


def t5_positions(length, end, device):
    """Positions ``end - length .. end - 1`` (the new query rows of a stack of ``end``
    positions)."""
    return torch.arange(end - length, end, device=device)


def site_dims(args, side, layer_idx):
    """:class:`~..modules.features.SiteDims` of layer ``layer_idx`` of the ``side`` stack."""
    d, heads = getattr(args, f"{side}_embed_dim"), getattr(args, f"{side}_attention_heads")
    return SiteDims(layer_idx, getattr(args, f"{side}_layers"), d, attention_dim(args, d, heads),
                    heads)


class FeedForward(Drops, nn.Module):
    """``W_f ReLU(W_g x + b_g) + b_f`` (TPT eq. 7, without the residual)."""

    def __init__(self, embed_dim, ffn_dim, activation_fn="relu", activation_dropout=0.0, bias=True):
        super().__init__()
        self.fc1 = nn.Linear(embed_dim, ffn_dim, bias=bias)
        self.fc2 = nn.Linear(ffn_dim, embed_dim, bias=bias)
        self.activation_fn = utils.get_activation_fn(activation_fn)
        self.activation_dropout = activation_dropout
        for fc in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(fc.weight)
            if fc.bias is not None:
                nn.init.zeros_(fc.bias)

    def forward(self, x):
        x = self.drop(self.activation_fn(self.fc1(x)), self.activation_dropout)
        return self.fc2(x)


class Sublayer(Drops, nn.Module):
    """Residual wrapper: ``x + dropout(f(LN(x)))`` (pre-LN) or ``LN(x + dropout(f(x)))``
    (post-LN)."""

    def __init__(self, embed_dim, dropout, normalize_before, norm=None):
        super().__init__()
        self.layer_norm = LayerNorm(embed_dim) if norm is None else norm
        self.dropout = dropout
        self.normalize_before = normalize_before

    def forward(self, x, fn):
        y = fn(self.layer_norm(x) if self.normalize_before else x)
        if isinstance(y, tuple):
            y, extra = y
        else:
            extra = None
        x = x + self.drop(y, self.dropout)
        return (x if self.normalize_before else self.layer_norm(x)), extra


class EncoderLayer(nn.Module):
    """``Encode(X) = FF(Self(X))`` (TPT eq. 9)."""

    def __init__(self, args, layer_idx=0):
        super().__init__()
        d, heads = args.encoder_embed_dim, args.encoder_attention_heads
        dims = site_dims(args, "encoder", layer_idx)
        # e.g. ETADS focus (ETADS eq. 5-8, on Q)
        self.attention_features = attach(self, args, "encoder_self", "attention", dims)
        pre = args.encoder_normalize_before
        self.self_attn = build_attention(args, d, heads, self_attention=True)
        # e.g. TA's SIA head (TA eq. 7)
        self.head_features = attach(self, args, "encoder_self", "head", dims)
        self.self_attn_sublayer = Sublayer(d, args.dropout, pre, build_norm(args, d))
        # e.g. TPT eq. 6
        self.binding_features = attach(self, args, "encoder_self", "binding", dims)
        self.ffn = build_feed_forward(args, d, args.encoder_ffn_embed_dim)
        self.ffn_sublayer = Sublayer(d, args.dropout, pre, build_norm(args, d))

    def forward(self, x, padding_mask, values=None, position_bias=None):
        """``values``: the model-level features' inputs of the encoder blocks (e.g. TA's SIA
        probabilities)."""
        inputs = layer_inputs("encoder_self", padding_mask, **(values or {}))

        def attend(h):  # position_bias: the T5 cell's relative position bias (B|1, H, S, S)
            out, attn = self.self_attn(h, key_padding_mask=padding_mask, attn_bias=position_bias,
                                       attn_bias_fn=score_bias_fn(self.attention_features, inputs),
                                       prob_gate_fn=prob_gate_fn(self.attention_features, inputs))
            return add_heads(self.head_features, out, h, h, inputs), attn

        x, _ = self.self_attn_sublayer(x, attend)
        x = bind(self.binding_features, x)
        x, _ = self.ffn_sublayer(x, self.ffn)
        return x


class DecoderLayer(nn.Module):
    """``Decode(H, Y) = FF(Cross(Self(Y), H))`` (TPT eq. 9)."""

    def __init__(self, args, layer_idx=0):
        super().__init__()
        d, heads = args.decoder_embed_dim, args.decoder_attention_heads
        dims = site_dims(args, "decoder", layer_idx)
        self.self_attention_features = attach(self, args, "decoder_self", "attention", dims)
        # e.g. ETADS saliency (ETADS eq. 9-10)
        self.cross_attention_features = attach(self, args, "decoder_cross", "attention", dims)
        pre = args.decoder_normalize_before
        self.self_attn = build_attention(args, d, heads, self_attention=True)
        self.self_attn_sublayer = Sublayer(d, args.dropout, pre, build_norm(args, d))
        # e.g. TPT eq. 6
        self.self_binding_features = attach(self, args, "decoder_self", "binding", dims)
        self.cross_attn = build_attention(args, d, heads, self_attention=False)
        # e.g. the Topic Assistant: SIA's extra head in both attention blocks (TA eq. 7), DRM's bias
        # (TA eq. 9)
        self.self_head_features = attach(self, args, "decoder_self", "head", dims)
        self.cross_head_features = attach(self, args, "decoder_cross", "head", dims)
        self.cross_attn_sublayer = Sublayer(d, args.dropout, pre, build_norm(args, d))
        self.cross_binding_features = attach(self, args, "decoder_cross", "binding", dims)
        self.ffn = build_feed_forward(args, d, args.decoder_ffn_embed_dim)
        self.ffn_sublayer = Sublayer(d, args.dropout, pre, build_norm(args, d))

    def forward(self, x, enc, enc_padding_mask, incremental_state=None, need_attn=False,
                cross_values=None, call=None, position_bias=None):
        """``cross_values``: the features' per-forward values of the cross-attention
        (:func:`~..modules.features.cross_attention_values`, e.g. IS eq. 6's ``kv_scale`` and
        per-head ``score_bias``); ``call``: the model-level feature's inputs of this decoder call
        (:func:`~..modules.features.decoder_call`, e.g. the Topic Assistant's), or None;
        ``position_bias``: the T5 cell's ``{"self": (1, H, T, T'), "cross": (B, H, T, S) or
        None}``."""
        call = call or NoCall()
        # e.g. TEMA's prefix mask (TA Fig. 3(b)) replaces the causal mask
        self_bias = call.self_mask
        causal = self_bias is None
        cross_values = dict(cross_values or {})
        cross_bias = cross_values.get("score_bias")
        if position_bias is not None:
            self_bias = _add_bias(self_bias, position_bias["self"])
            if position_bias.get("cross") is not None:
                cross_bias = _add_bias(cross_bias, position_bias["cross"])

        self_inputs = layer_inputs("decoder_self", None, incremental_state,
                                   **call.site_inputs("decoder_self"))

        def self_attend(h):
            out, attn = self.self_attn(
                h, causal=causal, attn_bias=self_bias, incremental_state=incremental_state,
                attn_bias_fn=score_bias_fn(self.self_attention_features, self_inputs),
                prob_gate_fn=prob_gate_fn(self.self_attention_features, self_inputs))
            return add_heads(self.self_head_features, out, h, h, self_inputs), attn

        x, _ = self.self_attn_sublayer(x, self_attend)
        x = bind(self.self_binding_features, x)
        cross_inputs = layer_inputs("decoder_cross", enc_padding_mask, incremental_state,
                                    **call.site_inputs("decoder_cross"), **cross_values)

        def cross_attend(h):
            out, attn = self.cross_attn(
                h, enc, key_padding_mask=enc_padding_mask, incremental_state=incremental_state,
                need_weights=need_attn,
                attn_bias=cross_bias, kv_scale=cross_inputs["kv_scale"],  # e.g. IS eq. 6
                attn_bias_fn=score_bias_fn(self.cross_attention_features, cross_inputs),
                prob_gate_fn=prob_gate_fn(self.cross_attention_features, cross_inputs),
            )
            # before add & norm
            return add_heads(self.cross_head_features, out, h, enc, cross_inputs), attn

        x, attn = self.cross_attn_sublayer(x, cross_attend)
        x = bind(self.cross_binding_features, x)
        x, _ = self.ffn_sublayer(x, self.ffn)
        return x, attn


def _add_bias(a, b):
    return b if a is None else a + b


class SumTransformerEncoder(Drops, FairseqEncoder):
    """Token + sinusoidal position embeddings, ``L`` encoder cells, final LayerNorm (pre-LN).

    The output is the batch-first dict of :mod:`..modules.encoder_out` (``enc`` is ``(B, S, C)``).
    Extra ``net_input`` fields (task side data) are passed through under ``side`` so that
    decoder-side features can use them after beam-search reordering.
    """

    # reorders that give every row a copy of the row it already copies keep the tensors
    # (EncoderOut.reorder); False: every reorder gathers (EncoderOut.reorder_copy, the reference)
    keep_beam_copies = True

    def __init__(self, args, dictionary, embed_tokens):
        super().__init__(dictionary)
        d = embed_tokens.embedding_dim
        self.padding_idx = dictionary.pad()
        self.max_source_positions = args.max_source_positions
        self.embed_tokens = embed_tokens
        self.t5 = is_t5_cell(args)
        self.embed_scale = 1.0 if args.no_scale_embedding or self.t5 else math.sqrt(d)
        self.embed_positions = None if self.t5 else PositionalEmbedding(
            args.max_source_positions, d, self.padding_idx, learned=args.encoder_learned_pos
        )
        # T5 cell: one bidirectional bucketed table for the stack (modules/t5.py), no absolute
        # positions
        self.relative_position = RelativePositionBias(
            args.encoder_attention_heads, args.t5_relative_buckets, args.t5_relative_max_distance,
            True, d) if self.t5 else None
        self.dropout = args.dropout
        self.layers = nn.ModuleList([EncoderLayer(args, i) for i in range(args.encoder_layers)])
        checkpoint_layers(self.layers, args, recompute_context)  # --checkpoint-activations
        self.layer_norm = build_norm(args, d) if args.encoder_normalize_before else None
        # e.g. information selection (IS eq. 3, Algorithm 1): a gate per source token on the final
        # states
        dims = SiteDims(0, 1, d, d, args.decoder_attention_heads)
        self.output_features = attach(self, args, ENCODER_OUT, "encoder", dims)
        self.model_features = []  # e.g. the Topic Assistant's topic model, set by build_model

    def forward(self, src_tokens, src_lengths=None, **side):
        padding_mask = src_tokens.eq(self.padding_idx)
        x = self.embed_scale * self.embed_tokens(src_tokens)
        position_bias = None
        # relative positions only (left padding shifts no difference between real tokens)
        if self.t5:
            pos = torch.arange(src_tokens.size(1), device=src_tokens.device)
            position_bias = self.relative_position(pos, pos)
        else:
            x = x + self.embed_positions(src_tokens)
        x = self.drop(x, self.dropout)
        attn_mask = padding_mask if padding_mask.any() else None
        values = encoder_inputs(self.model_features, src_tokens, padding_mask)  # e.g. TA eq. 6
        with stack_context(self.layers):  # e.g. TPT eq. 4 for every sublayer at once
            for layer in self.layers:
                x = layer(x, attn_mask, values, position_bias)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        if self.t5:  # T5 drops out the final normalized states too
            x = self.drop(x, self.dropout)
        out = EncoderOut(enc=x, padding_mask=padding_mask, src_tokens=src_tokens, side=side)
        transform_encoder_output(self.output_features, out)  # e.g. gates, gate_l1, (eval) pruning
        return out.to_dict()

    @torch.jit.export
    def reorder_encoder_out(self, encoder_out, new_order):
        view = EncoderOut.of(encoder_out)
        # beam search's reorders among a document's beams keep the tensors (EncoderOut.reorder)
        return (view.reorder(new_order) if self.keep_beam_copies
                else view.reorder_copy(new_order)).to_dict()

    def max_positions(self):
        return self.max_source_positions


class SumTransformerDecoder(Drops, FairseqIncrementalDecoder):
    """Decoder cells with causal self-attention and cross-attention, tied output projection
    (TPT eq. 10)."""

    # Training on CPU with the output projection tied to the token embeddings: the projection's
    # weight gradient as a tensor of its own, which autograd adds the lookups' gradients into in
    # place (modules/tied_embedding.py, TiedProjection; bit for bit autograd's).
    fresh_tied_grad = True
    # Training on CPU (fp32), tied as above: the lookups' gradients as sparse rows, summed per
    # token in the dense backward's order (bit for bit the dense lookups'; rows_per_token). Off:
    # autograd adds sparse to dense out of place, a fresh vocabulary x d_m tensor per lookup,
    # measured slower than the dense lookups' zero-filled ones (benchmarks/README.md).
    # benchmarks/bench_train.py --ablate sparse_embed / tied_grad measure both.
    sparse_embedding_grad = False

    def __init__(self, args, dictionary, embed_tokens):
        super().__init__(dictionary)
        d = embed_tokens.embedding_dim
        self.padding_idx = dictionary.pad()
        self.max_target_positions = args.max_target_positions
        self.embed_tokens = embed_tokens
        self.t5 = is_t5_cell(args)
        self.embed_scale = 1.0 if args.no_scale_embedding or self.t5 else math.sqrt(d)
        self.embed_positions = None if self.t5 else PositionalEmbedding(
            args.max_target_positions, d, self.padding_idx, learned=args.decoder_learned_pos
        )
        self.relative_position = self.cross_position = None
        # T5 cell: causal table for self-attention; TPT's cross-attention table (App. B)
        if self.t5:
            heads, buckets, dist = (args.decoder_attention_heads, args.t5_relative_buckets,
                                    args.t5_relative_max_distance)
            self.relative_position = RelativePositionBias(heads, buckets, dist, False, d)
            if args.t5_cross_position_bias:
                self.cross_position = RelativePositionBias(heads, buckets, dist, False, d)
        self.output_scale = d**-0.5 if self.t5 and t5_scale_decoder_output(args) else 1.0
        self.dropout = args.dropout
        self.layers = nn.ModuleList([DecoderLayer(args, i) for i in range(args.decoder_layers)])
        checkpoint_layers(self.layers, args, recompute_context)  # --checkpoint-activations
        self.layer_norm = build_norm(args, d) if args.decoder_normalize_before else None
        if args.share_decoder_input_output_embed:
            self.output_projection = None
        else:
            self.output_projection = nn.Linear(d, len(dictionary), bias=False)
            nn.init.normal_(self.output_projection.weight, mean=0, std=d**-0.5)
        # ETADS eq. 4's b^o (--output-bias), tied or untied projection alike
        self.output_bias = (nn.Parameter(torch.zeros(len(dictionary)))
                            if getattr(args, "output_bias", False) else None)
        # When True (and not training), the last layer's head-averaged cross-attention is returned
        # in ``extra["attn"]`` (for alignment printing / coverage); it disables the fused kernel
        # there.
        self.need_attn = False
        self.model_features = []  # e.g. the Topic Assistant's topic model, set by build_model
        # e.g. the copy mechanism over the last layer's cross-attention (features/copy_mechanism.py)
        dims = SiteDims(0, 1, d, d, args.decoder_attention_heads)
        self.output_features = attach(self, args, DECODER_OUT, "output", dims)

    def forward(self, prev_output_tokens, encoder_out, incremental_state=None, features_only=False,
                **kwargs):
        x, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        if features_only:
            return x, extra
        logits = self.output_layer(x)
        if not self.output_features:
            return logits, extra
        # e.g. the copy mixture's log P (get_normalized_probs gives it back)
        tokens = prev_output_tokens[:, -1:] if incremental_state is not None else prev_output_tokens
        src_tokens = EncoderOut.of(encoder_out).src_tokens
        return transform_output(self.output_features, logits, x, self.embed_tokens(tokens),
                                extra["attn"][0], src_tokens), extra

    def extract_features(self, prev_output_tokens, encoder_out, incremental_state=None, **kwargs):
        all_prev_tokens = prev_output_tokens
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
        if self.t5:  # the decoder starts from the pad row, as T5 (fairseq feeds EOS first)
            tokens = prev_output_tokens.masked_fill(prev_output_tokens.eq(self.dictionary.eos()),
                                                    self.padding_idx)
            x = self.embed_tokens(tokens)
        else:
            positions = self.embed_positions(all_prev_tokens, incremental_state=incremental_state)
            x = (self.embed_scale * self.embed_tokens(prev_output_tokens)
                 + positions[:, -prev_output_tokens.size(1):])
        x = self.drop(x, self.dropout)
        view = EncoderOut.of(encoder_out)
        enc, enc_mask = view.enc, view.padding_mask
        if not enc_mask.any():
            enc_mask = None
        attn = None
        cross_values = cross_attention_values(view)  # e.g. IS eq. 6: {} without --gate
        # e.g. the Topic Assistant: TEMA's prefix and mask, SIA's probabilities, DRM's theta
        call = decoder_call(self.model_features, all_prev_tokens, x.size(1), view,
                            incremental_state is not None)
        n_prefix = call.n_prefix
        if n_prefix:  # the prefix before the new positions (TEMA: the topic embeddings, TA eq. 8)
            prefix = self.embed_scale * call.prefix(self.embed_tokens.weight)
            x = torch.cat([self.drop(prefix.type_as(x), self.dropout), x], dim=1)
        position_bias = self.t5_position_bias(x, all_prev_tokens, view) if self.t5 else None
        need_attn = needs_attention(self.output_features) or self.need_attn and not self.training
        with stack_context(self.layers):  # e.g. TPT eq. 4 for every sublayer at once
            for i, layer in enumerate(self.layers):
                last = i == len(self.layers) - 1
                x, layer_attn = layer(x, enc, enc_mask, incremental_state,
                                      cross_values=cross_values, call=call,
                                      need_attn=last and need_attn, position_bias=position_bias)
                if last:
                    attn = view.restore_attention(layer_attn)  # kept rows -> source positions
        if n_prefix:  # the prefix positions are never emitted
            x = x[:, n_prefix:]
            attn = attn[:, n_prefix:] if attn is not None else None
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        if self.t5:
            x = self.drop(x, self.dropout)
        return x, {"attn": [attn], "inner_states": None, "aux_losses": dict(view.aux_losses),
                   **decoder_outputs(view)}  # e.g. IS: gate_counts

    def t5_position_bias(self, x, all_prev_tokens, view):
        """The T5 cell's biases for the new rows ``x``: causal self-attention over every position so
        far (TEMA's topic prefix included) and, with ``--t5-cross-position-bias``, cross-attention
        to the source positions (counted over real tokens, so left padding and gate pruning keep
        them)."""
        n_prefix = prefix_length(self.model_features)
        total = n_prefix + all_prev_tokens.size(1)
        q_pos = t5_positions(x.size(1), total, x.device)
        bias = {"self": self.relative_position(q_pos, torch.arange(total, device=x.device)),
                "cross": None}
        if self.cross_position is not None:
            k_pos = view.src_tokens.ne(self.padding_idx).long().cumsum(1) - 1
            if view.kept_index is not None:  # a feature removed positions (e.g. IS Algorithm 1)
                k_pos = k_pos.gather(1, view.kept_index)
            bias["cross"] = self.cross_position(q_pos, k_pos)
        return bias

    def output_layer(self, features):
        # T5: d_m^-0.5
        features = features * self.output_scale if self.output_scale != 1.0 else features
        if self.output_projection is None:
            weight = self.embed_tokens.weight
            if (self.fresh_tied_grad and self.training and torch.is_grad_enabled()
                    and weight.device.type == "cpu"):  # modules/tied_embedding.py
                return TiedProjection.apply(features, weight, self.output_bias)
            return F.linear(features, weight, self.output_bias)
        logits = self.output_projection(features)
        return logits if self.output_bias is None else logits + self.output_bias

    def max_positions(self):
        return self.max_target_positions


@register_model("sum_transformer")
class SumTransformerModel(FairseqEncoderDecoderModel):
    """The transformer family of fairseq-sum-plugins; see the module docstring for the presets."""

    @staticmethod
    def add_args(parser):
        # fmt: off
        parser.add_argument("--activation-fn", choices=utils.get_available_activation_fns(),
                            help="activation of the feed-forward hidden layer (default: relu)")
        parser.add_argument("--dropout", type=float, metavar="D",
                            help="dropout probability of the embeddings and of each sublayer's "
                                 "output before its residual; T5 cell: also of the final states "
                                 "(default: 0.1)")
        parser.add_argument("--attention-dropout", type=float, metavar="D",
                            help="dropout probability of the attention weights (default: 0.0; "
                                 "0.1 in the T5-cell presets)")
        parser.add_argument("--activation-dropout", type=float, metavar="D",
                            help="dropout probability of the feed-forward hidden units (default: "
                                 "0.0; 0.1 in the T5-cell presets)")
        for side in ("encoder", "decoder"):
            # base_architecture: the decoder's dims follow the encoder's
            dflt = "the preset's; sum_transformer: {}" if side == "encoder" else \
                "default: the encoder's"
            parser.add_argument(f"--{side}-embed-dim", type=int, metavar="N",
                                help=f"the {side}'s model width d_m, its embeddings' too "
                                     f"({dflt.format(512)}); the two must be equal")
            parser.add_argument(f"--{side}-ffn-embed-dim", type=int, metavar="N",
                                help=f"hidden units d_f of the {side}'s feed-forward layers "
                                     f"({dflt.format(2048)})")
            parser.add_argument(f"--{side}-layers", type=int, metavar="N",
                                help=f"layers of the {side} ({dflt.format(6)})")
            parser.add_argument(f"--{side}-attention-heads", type=int, metavar="N",
                                help=f"attention heads of each {side} layer ({dflt.format(8)})")
            parser.add_argument(f"--{side}-normalize-before", type=bool_flag, metavar="BOOL",
                                help="pre-LN cell (T5, TP-Transformer) if True, post-LN if False")
            parser.add_argument(f"--{side}-learned-pos", action="store_true",
                                help=f"default cell: learned {side} positions (a table sized by "
                                     f"--max-{'source' if side == 'encoder' else 'target'}"
                                     "-positions) instead of sinusoidal ones; the T5 cell has no "
                                     "absolute positions")
        parser.add_argument("--share-decoder-input-output-embed", type=bool_flag, metavar="BOOL",
                            help="the output projection is the decoder's embedding matrix "
                                 "(tied); False: a separate matrix (default: True)")
        parser.add_argument("--share-all-embeddings", type=bool_flag, metavar="BOOL",
                            help="one embedding matrix for the encoder and the decoder (needs a "
                                 "joined dictionary; default: True)")
        parser.add_argument("--no-scale-embedding", action="store_true",
                            help="default cell: token embeddings not multiplied by sqrt(d_m) "
                                 "(the T5 cell never scales them)")
        # the cell (module docstring, "The T5 cell")
        parser.add_argument("--cell", choices=["default", "t5"],
                            help="default: this module's cell; t5: the exact T5 v1.0 cell "
                                 "(modules/t5.py)")
        parser.add_argument("--t5-relative-buckets", type=int, metavar="N", help="T5 cell: "
                                                                                 "buckets per "
                                                                                 "table (32)")
        parser.add_argument("--t5-relative-max-distance", type=int, metavar="N",
                            help="T5 cell: distance from which all positions share a bucket (128)")
        parser.add_argument("--t5-cross-position-bias", type=bool_flag, metavar="BOOL",
                            help="T5 cell: a causal bucketed table in cross-attention too (TPT's "
                                 "code, App. B)")
        parser.add_argument("--t5-d-kv", type=int, metavar="N",
                            help="T5 cell: attention dim per head (default d_m / heads); heads * "
                                 "N may differ from d_m (t5-3b, t5-11b)")
        parser.add_argument("--t5-scale-decoder-output", type=bool_flag, metavar="BOOL",
                            help="T5 cell: multiply the decoder's output by d_m^-1/2 before the "
                                 "output projection (default: True with a tied projection, as T5 "
                                 "v1.0; False with an untied one)")
        parser.add_argument("--output-bias", type=bool_flag, metavar="BOOL",
                            help="a bias b^o on the output logits, softmax(W^o S + b^o) (ETADS eq. "
                                 "4; on in the etads presets, off elsewhere and in checkpoints "
                                 "saved without it)")
        parser.add_argument("--max-source-positions", type=int, metavar="N",
                            help="longest source the model accepts, in tokens with the EOS: "
                                 "fairseq's size filter uses it, and raw text is cut to its "
                                 "first N - 1 tokens and the EOS (default: 1024)")
        parser.add_argument("--max-target-positions", type=int, metavar="N",
                            help="longest summary the model accepts, in tokens with the EOS: "
                                 "fairseq's size filter uses it, and decoding is capped at N - 1 "
                                 "tokens (default: 1024)")
        add_checkpoint_args(parser)  # fairseq's --checkpoint-activations, --offload-activations
        # the features (modules/features.py): information selection --gate*, TP-Transformer
        # --tpr*, ETADS --focus/--saliency-layers
        add_feature_args(parser)
        parser.add_argument("--compile", type=bool_flag, metavar="BOOL",
                            help="torch.compile each layer, dynamic lengths (modules/compiled.py)")
        add_dropout_mask_arg(parser)
        # fmt: on

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
        if args.encoder_embed_dim != args.decoder_embed_dim:
            raise ValueError("encoder and decoder embedding dims must match for cross-attention")
        enc_emb = build_embedding(args, src_dict, args.encoder_embed_dim)
        if args.share_all_embeddings:
            if src_dict != tgt_dict:
                raise ValueError("--share-all-embeddings requires a joined dictionary (preprocess "
                                 "with --joined-dictionary)")
            # the output projection stays separate with --share-decoder-input-output-embed False
            dec_emb = enc_emb
        else:
            dec_emb = build_embedding(args, tgt_dict, args.decoder_embed_dim)
        # e.g. the Topic Assistant's topic model (none without --ta-*; it sets args.ta_num_topics)
        model_features = build_model_features(args, task, src_dict, tgt_dict)
        encoder = SumTransformerEncoder(args, src_dict, enc_emb)
        decoder = SumTransformerDecoder(args, tgt_dict, dec_emb)
        set_model_features(encoder, model_features)
        set_model_features(decoder, model_features)
        model = cls(encoder, decoder)
        set_dropout_mask(model, check_dropout_mask(args))  # --dropout-mask (modules/dropout.py)
        if getattr(args, "compile", False):  # --compile (modules/compiled.py)
            compile_layers(encoder.layers, "encoder")
            compile_layers(decoder.layers, "decoder")
        return model

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="checkpoint_best.pt",
                        data_name_or_path=".", **kwargs):
        """Hub interface summarizing raw text::

            model = SumTransformerModel.from_pretrained("checkpoints", data_name_or_path="data/bin")
            model.sample(["A document. Its second sentence."], beam=4)

        The tokenizer and sentencepiece model default to the ones ``fairseq-sum-prepare`` recorded
        in ``DATA/prepare_args.json`` (``sum_moses`` + ``DATA/spm.model``), so raw text is processed
        exactly like the training data; only those validated keys are read
        (:func:`fairseq_sum_plugins.data_folder.hub_text_kwargs`).
        """
        kwargs = hub_text_kwargs(model_name_or_path, data_name_or_path, kwargs)
        return super().from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path,
                                       **kwargs)

    def upgrade_state_dict_named(self, state_dict, name):
        """A checkpoint of ``fairseq-sum-import-t5`` (marked) lacks this model's paper parameters
        (gate, bindings, focus, saliency, Topic Assistant): they keep their fresh initialisation,
        each logged; the model must scale its output as the import did
        (``--t5-scale-decoder-output``)."""
        super().upgrade_state_dict_named(state_dict, name)
        prefix = name + "." if name else ""
        refuse_default_cell_weights(self, state_dict, prefix)
        bias = prefix + "decoder.output_bias"
        if (self.decoder.output_bias is not None and bias not in state_dict
                and prefix + IMPORT_MARKER not in state_dict):
            raise ValueError(
                "this checkpoint has no output bias b^o (ETADS eq. 4; saved before --output-bias "
                "existed, or trained with --output-bias False) and this model has one (the etads "
                "presets switch it on): load it with --output-bias False")
        mark = state_dict.pop(prefix + IMPORT_MARKER, None)
        if mark is not None:
            # T5's output scale, as imported
            check_import_mark(mark, self.decoder.output_scale != 1.0)
            keep_fresh_parameters(state_dict, self.state_dict(), prefix)

    def forward(self, src_tokens, src_lengths, prev_output_tokens, **side):
        with self._embedding_grads():
            encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, **side)
            return self.decoder(prev_output_tokens, encoder_out=encoder_out)

    @contextlib.contextmanager
    def _embedding_grads(self):
        """The decoder's token embeddings (the encoder's too when shared) give sparse gradients,
        their rows summed per token (:mod:`..modules.tied_embedding`), during this forward when
        the output layer, which this forward always runs, reads the same weight densely (so the
        weight's gradient comes out dense, whatever the order of arrival)."""
        emb = self.decoder.embed_tokens
        on = (self.decoder.sparse_embedding_grad and self.training and torch.is_grad_enabled()
              and type(emb) is nn.Embedding and not emb.sparse and emb.weight.requires_grad
              and emb.weight.device.type == "cpu" and emb.weight.dtype == torch.float32
              and self.decoder.output_projection is None)
        if not on:
            yield
            return
        emb.sparse = True
        hook = emb.register_forward_hook(sum_rows_per_token)
        try:
            yield
        finally:
            emb.sparse = False
            hook.remove()


def refuse_default_cell_weights(model, state_dict, prefix):
    """A T5-cell model given a default-cell checkpoint (LayerNorm biases, which the T5 cell has
    not): e.g. ``--restore-file`` of a model trained as ``tp_transformer_base`` before that name
    meant App. B's T5-cell model. The error names the preset that builds the checkpoint's model
    (loading the checkpoint on its own renames it: compat.upgrade_renamed_arch)."""
    if not model.encoder.t5:
        return
    norm_bias = prefix + "encoder.layers.0.self_attn_sublayer.layer_norm.bias"
    if norm_bias in state_dict:
        from ..compat import RENAMED_ARCHS

        presets = ", ".join(f"{new} (trained as {old})" for old, new in RENAMED_ARCHS.items())
        raise ValueError(
            "this checkpoint holds a default-cell model (LayerNorm biases, sinusoidal positions) "
            "and this model is the T5 cell; t5_transformer_base, tp_transformer_base and "
            "tp_transformer_continuous_base are TP-Transformer App. B's T5-cell models, their "
            f"earlier default-cell models are: {presets}; pass that --arch")


@register_model_architecture("sum_transformer", "sum_transformer")
def base_architecture(args):
    # every boolean option through one parser, also from --model-overrides and hydra ('False' is
    # truthy)
    parse_bool_options(args, SumTransformerModel.add_args)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 512)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 2048)
    args.encoder_layers = getattr(args, "encoder_layers", 6)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 8)
    args.encoder_normalize_before = getattr(args, "encoder_normalize_before", True)
    args.encoder_learned_pos = getattr(args, "encoder_learned_pos", False)
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", args.encoder_embed_dim)
    args.decoder_ffn_embed_dim = getattr(args, "decoder_ffn_embed_dim", args.encoder_ffn_embed_dim)
    args.decoder_layers = getattr(args, "decoder_layers", args.encoder_layers)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads",
                                           args.encoder_attention_heads)
    args.decoder_normalize_before = getattr(args, "decoder_normalize_before",
                                            args.encoder_normalize_before)
    args.decoder_learned_pos = getattr(args, "decoder_learned_pos", False)
    args.activation_fn = getattr(args, "activation_fn", "relu")
    # "dropout 0.1" in fairseq's sense (embeddings and every sublayer's output before its residual),
    # as fairseq's `transformer`; T5 also drops attention weights and the FF hidden layer:
    # --attention-dropout 0.1 --activation-dropout 0.1
    args.dropout = getattr(args, "dropout", 0.1)
    args.attention_dropout = getattr(args, "attention_dropout", 0.0)
    args.activation_dropout = getattr(args, "activation_dropout", 0.0)
    args.share_all_embeddings = getattr(args, "share_all_embeddings", True)
    args.share_decoder_input_output_embed = getattr(args, "share_decoder_input_output_embed", True)
    args.no_scale_embedding = getattr(args, "no_scale_embedding", False)
    args.max_source_positions = getattr(args, "max_source_positions", DEFAULT_MAX_POSITIONS)
    args.max_target_positions = getattr(args, "max_target_positions", DEFAULT_MAX_POSITIONS)
    args.offload_activations = getattr(args, "offload_activations", False)
    args.checkpoint_activations = (getattr(args, "checkpoint_activations", False)
                                   or args.offload_activations)
    args.dropout_mask = getattr(args, "dropout_mask", None) or DEFAULT_MASK
    args.cell = getattr(args, "cell", "default")
    args.t5_relative_buckets = getattr(args, "t5_relative_buckets", 32)
    args.t5_relative_max_distance = getattr(args, "t5_relative_max_distance", 128)
    args.t5_cross_position_bias = getattr(args, "t5_cross_position_bias", False)
    args.t5_d_kv = getattr(args, "t5_d_kv", None)
    args.t5_scale_decoder_output = getattr(args, "t5_scale_decoder_output", None)
    # ETADS eq. 4's b^o: off unless a preset (etads_*) or the flag sets it, so a checkpoint saved
    # before the flag existed (its args lack it) builds without it, as it was trained
    args.output_bias = getattr(args, "output_bias", False)
    if args.cell == "t5" and not (args.encoder_normalize_before and args.decoder_normalize_before):
        raise ValueError(
            "--cell t5 is a pre-norm cell: --encoder/decoder-normalize-before must be True")
    if args.cell != "t5" and (args.t5_d_kv is not None or args.t5_scale_decoder_output is not None):
        raise ValueError(
            "--t5-d-kv and --t5-scale-decoder-output are flags of the T5 cell (--cell t5)")
    if args.cell != "t5" and args.t5_cross_position_bias:
        raise ValueError(
            "--t5-cross-position-bias is a flag of the T5 cell (--cell t5), and App. B's presets "
            "(t5_transformer_base, tp_transformer_base, tp_transformer_continuous_base) set it: "
            "for these models on the default cell use --arch *_default_cell_base (a checkpoint: "
            "--model-overrides \"{'t5_cross_position_bias': False}\")")
    if args.t5_d_kv is not None and args.t5_d_kv < 1:
        raise ValueError(f"--t5-d-kv {args.t5_d_kv}: a per-head dim is a positive integer")
    # the features' flags (--gate*, --tpr*, --focus/--saliency-layers, ...)
    feature_defaults(args, args.cell)


# --- TP-Transformer's dims on this module's default cell (paper §3.2 / App. B: 6 layers, 8 heads,
# d_k 64, d_m 512, d_f 2048). The paper's own models, on the T5 cell, are ``t5_transformer_base``,
# ``tp_transformer_base`` and ``tp_transformer_continuous_base`` below. ---


@register_model_architecture("sum_transformer", "t5_transformer_default_cell_base")
def t5_transformer_default_cell_base(args):
    """TP-Transformer's Transformer baseline dims on the default cell (pre-LN LayerNorm with bias,
    sinusoidal positions, feed-forward biases): 60,590,080 parameters at vocab 32,128, where App. B
    states 60,506,880 for the paper's model on the T5 cell (``t5_transformer_base``). Checkpoints
    trained as ``t5_transformer_base`` before that name meant the T5 cell load as this preset
    (compat.py)."""
    args.tpr = getattr(args, "tpr", "none")
    base_architecture(args)


@register_model_architecture("sum_transformer", "tp_transformer_default_cell_base")
def tp_transformer_default_cell_base(args):
    """TPT-d (N_r = 50 roles of d_r = 64 in every attention sublayer) on the default cell:
    64,341,280 at vocab 32,128 (App. B's 64,258,080 is ``tp_transformer_base``, T5 cell)."""
    args.tpr = getattr(args, "tpr", "discrete")
    base_architecture(args)


@register_model_architecture("sum_transformer", "tp_transformer_continuous_default_cell_base")
def tp_transformer_continuous_default_cell_base(args):
    """TPT-c (Schlag et al., 2019: R = F W + b) on the default cell: 65,317,888 at vocab 32,128
    (App. B's 65,234,688 is ``tp_transformer_continuous_base``, T5 cell)."""
    args.tpr = getattr(args, "tpr", "continuous")
    base_architecture(args)


def _dims(args, embed_dim, ffn_dim, layers, heads):
    """Encoder dims (the decoder's follow them in ``base_architecture``) unless set on the command
    line."""
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", embed_dim)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", ffn_dim)
    args.encoder_layers = getattr(args, "encoder_layers", layers)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", heads)


def _small(args):
    """The project's small models (not a paper's): the default cell at CPU-sized dims, 3+3 layers,
    d_m 256, 4 heads, d_f 1024, for the quickstart and tests (the quickstart's expected figures
    depend on them).

    The quickstart and ``recipes/compare.sh`` (``COPY=1``) run them with ``--pointer-generator
    True`` (source gain with and without it: results/xsum-read/results.md)."""
    _dims(args, 256, 1024, 3, 4)


@register_model_architecture("sum_transformer", "t5_transformer_small")
def t5_transformer_small(args):
    """The project's small Transformer (default cell, :func:`_small`'s dims)."""
    _small(args)
    t5_transformer_default_cell_base(args)


@register_model_architecture("sum_transformer", "tp_transformer_small")
def tp_transformer_small(args):
    """The project's small TPT-d (default cell, :func:`_small`'s dims, 50 roles of d_r 64)."""
    _small(args)
    tp_transformer_default_cell_base(args)


@register_model_architecture("sum_transformer", "tp_transformer_continuous_small")
def tp_transformer_continuous_small(args):
    """The project's small TPT-c (default cell, :func:`_small`'s dims)."""
    _small(args)
    tp_transformer_continuous_default_cell_base(args)


# --- T5 cell presets (Raffel et al., 2020: v1.0 small / base; App. B of TP-Transformer) ---


def _t5(args):
    """T5's cell with T5's dropout placement (0.1 on embeddings, sublayers, attention, FF
    hidden)."""
    args.cell = getattr(args, "cell", "t5")
    args.dropout = getattr(args, "dropout", 0.1)
    args.attention_dropout = getattr(args, "attention_dropout", 0.1)
    args.activation_dropout = getattr(args, "activation_dropout", 0.1)
    args.share_all_embeddings = getattr(args, "share_all_embeddings", True)


def _t5_small_dims(args):
    _dims(args, 512, 2048, 6, 8)


def _t5_base_dims(args):
    _dims(args, 768, 3072, 12, 12)


@register_model_architecture("sum_transformer", "t5_small")
def t5_small(args):
    """T5-small v1.0: 6+6 layers, d_m 512, 8 heads, d_ff 2048 (60,506,624 parameters at vocab
    32,128)."""
    _t5(args)
    _t5_small_dims(args)
    base_architecture(args)


@register_model_architecture("sum_transformer", "t5_base")
def t5_base(args):
    """T5-base v1.0: 12+12 layers, d_m 768, 12 heads, d_ff 3072."""
    _t5(args)
    _t5_base_dims(args)
    base_architecture(args)


@register_model_architecture("sum_transformer", "t5_small_gated")
def t5_small_gated(args):
    """Information selection on T5-small: encoder gate + gated cross-attention."""
    switch_on(args, "information selection")  # unless given (also as an old checkpoint's info_gate)
    t5_small(args)


@register_model_architecture("sum_transformer", "t5_base_gated")
def t5_base_gated(args):
    """Information selection as the paper ran it (§4.2): T5-base fine-tuned with the gate (PyTorch's
    default Linear init). The paper states T5-base's settings (12 blocks, 12 heads, d_kv 64, d_ff
    3072, dropout 0.1) and no parameter count: 222,904,321 at vocab 32,128 (T5-base's 222,903,552
    and the gate's ``Linear(d_m, 1)``); its weights come from ``fairseq-sum-import-t5``."""
    switch_on(args, "information selection")  # unless given (also as an old checkpoint's info_gate)
    t5_base(args)


# --- TP-Transformer's models (App. B), on the T5 cell the paper builds on ("the Transformer
# architecture used in Raffel et al. (2020)"); their earlier names ``*_t5_small`` stay registered
# (old commands and checkpoints) ---


@register_model_architecture("sum_transformer", "t5_transformer_base")
def t5_transformer_base(args):
    """App. B's Transformer: T5-small plus TPT's cross-attention position table, 60,506,880
    parameters at vocab 32,128 as App. B states (6+6 layers, 8 heads, d_k 64, d_m 512, d_f 2048,
    dropout 0.1). The paper names the cell only through Raffel et al. (2020); the 256 parameters of
    the cross-attention table are what makes App. B's count (module docstring, "The T5 cell")."""
    args.t5_cross_position_bias = getattr(args, "t5_cross_position_bias", True)
    t5_small(args)


@register_model_architecture("sum_transformer", "tp_transformer_base")
def tp_transformer_base(args):
    """App. B's TPT-d on the T5 cell: N_r = 50 roles of d_r = 64 in every attention sublayer,
    64,258,080 parameters at vocab 32,128 as App. B states."""
    args.tpr = getattr(args, "tpr", "discrete")
    t5_transformer_base(args)


@register_model_architecture("sum_transformer", "tp_transformer_continuous_base")
def tp_transformer_continuous_base(args):
    """App. B's TPT-c (Schlag et al., 2019: R = F W + b) on the T5 cell, 65,234,688 parameters at
    vocab 32,128 as App. B states."""
    args.tpr = getattr(args, "tpr", "continuous")
    t5_transformer_base(args)


for _name, _preset in (("t5_transformer_t5_small", t5_transformer_base),
                       ("tp_transformer_t5_small", tp_transformer_base),
                       ("tp_transformer_continuous_t5_small", tp_transformer_continuous_base)):
    register_model_architecture("sum_transformer", _name)(_preset)


# --- ETADS presets (You et al., 2019, §4.1: 4+4 layers, 8 heads, d_e = d_m 512, d_f 2048,
# post-LN §3.1, one 50,000-word vocabulary shared by documents and summaries, output bias b^o of
# ETADS eq. 4) ---


def _etads(args):
    """What ETADS states: §3.1 (post-LN ``LayerNorm(t + SubLayer(t))``, feed-forward biases b^1,
    b^2, output layer ``softmax(W^o S + b^o)``, ETADS eq. 4), §4.1 (N = 4, h = 8, d_m 512, d_f 2048,
    a dictionary of 50,000 shared by documents and summaries). Silent or ambiguous, and chosen here:
    positions (not described: fairseq's sinusoidal ones), whether ``W^o`` is tied to the embeddings
    (not said: tied, as the one shared dictionary allows), the dropout "0.8" (read in the recipe as
    a keep probability). Table 4's "# of paras" (3,190K / 3,821K / 4,451K with 2 / 4 / 6 encoder
    layers, 3,406K / 4,246K / 5,087K with 2 / 4 / 6 decoder layers, the other side 4) cannot be
    whole models at these dims (two layers of d_m 512, d_f 2048 alone hold 6.3M) and the paper does
    not say what they count; they are of the order of the two extensions'
    parameters (ours: 4,227,072 at 4+4 layers; 3,162,112 / 5,292,032 with 2 / 6 encoder layers).
    Whole models at vocab 50,000: ``etads_base`` 59,302,736, ``etads_baseline`` 55,075,664 (b^o
    included; tests/test_etads.py)."""
    args.output_bias = getattr(args, "output_bias", True)  # b^o (ETADS eq. 4)
    args.encoder_layers = getattr(args, "encoder_layers", 4)
    args.decoder_layers = getattr(args, "decoder_layers", args.encoder_layers)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 512)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 8)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 2048)
    # LayerNorm(t + SubLayer(t))
    args.encoder_normalize_before = getattr(args, "encoder_normalize_before", False)
    args.share_all_embeddings = getattr(args, "share_all_embeddings", True)
    base_architecture(args)


@register_model_architecture("sum_transformer", "etads_base")
def etads_base(args):
    """ETADS: focus attention in every encoder layer, saliency selection in every decoder layer
    (the paper's best placements, [1-4] in Tables 5-6)."""
    args.focus_layers = getattr(args, "focus_layers", "all")
    args.saliency_layers = getattr(args, "saliency_layers", "all")
    _etads(args)


@register_model_architecture("sum_transformer", "etads_baseline")
def etads_baseline(args):
    """The paper's "Basic model" (Table 2): the same transformer without the two extensions."""
    args.focus_layers = getattr(args, "focus_layers", "none")
    args.saliency_layers = getattr(args, "saliency_layers", "none")
    _etads(args)


# --- Information selection presets (Ishimwe & Grave: gate layer between encoder and decoder,
# gated cross-attention in every decoder layer). The paper fine-tunes T5-base (§4.2: 12 blocks,
# 12 heads, d_kv 64, d_ff 3072, dropout 0.1, the gate with PyTorch's default Linear init): that is
# ``t5_base_gated`` (T5 cell, ``fairseq-sum-import-t5``), or ``bart_*_gated``. The presets below
# are the project's from-scratch variants (the paper trains none): TP-Transformer's dims on the
# default cell, 6+6 layers, d_m 512, 8 heads, d_f 2048, pre-LN, tied embeddings ---


@register_model_architecture("sum_transformer", "transformer_gated_base")
def transformer_gated_base(args):
    """Information selection on ``t5_transformer_default_cell_base`` (no role binding); the
    project's from-scratch variant, not the paper's T5-base (``t5_base_gated``)."""
    switch_on(args, "information selection")  # unless given (also as an old checkpoint's info_gate)
    t5_transformer_default_cell_base(args)


@register_model_architecture("sum_transformer", "tp_transformer_gated_base")
def tp_transformer_gated_base(args):
    """Information selection composed with TPT-d role binding on the default cell (the project's
    composition; neither paper trains it)."""
    switch_on(args, "information selection")  # unless given (also as an old checkpoint's info_gate)
    tp_transformer_default_cell_base(args)


@register_model_architecture("sum_transformer", "transformer_gated_small")
def transformer_gated_small(args):
    _small(args)
    transformer_gated_base(args)


@register_model_architecture("sum_transformer", "tp_transformer_gated_small")
def tp_transformer_gated_small(args):
    _small(args)
    tp_transformer_gated_base(args)


# --- Topic Assistant presets (SIA + TEMA + DRM; each module switchable with --ta-sia / --ta-tema
# / --ta-drm for the ablation). The paper plugs TA into pre-trained models (BertSUM, MASS, UNILM,
# BART: ``bart_*_ta``; Table 8 gives the parameters TA adds to each) and reports no Transformer+TA
# figure: its "Transformer" rows are Liu and Lapata's (2019) TransformerAbs without TA, whose dims
# it does not restate ---


@register_model_architecture("sum_transformer", "transformer_ta_base")
def transformer_ta_base(args):
    """Transformer + TA, the project's from-scratch variant: TP-Transformer's dims on the default
    cell (6+6 layers, d_m 512, 8 heads, d_f 2048), K from the topic model (the paper's 256), top-5
    topics (TA App.: "we choose top-5 topics")."""
    switch_on(args, "Topic Assistant")
    t5_transformer_default_cell_base(args)


@register_model_architecture("sum_transformer", "transformer_ta_small")
def transformer_ta_small(args):
    _small(args)
    transformer_ta_base(args)
