"""Pointer-generator output (See et al., 2017; Mem2Mem App. A.1.1, M2M eq. 13-15): the copy
mechanism of ``sum_transformer`` (``--pointer-generator``, a feature on the decoder's output:
:class:`TransformerCopy`) and the copy distribution that Mem2Mem's decoder mixes
(:func:`mix_copy_distribution`).

Extended vocabulary. Like fairseq's ``examples/pointer_generator``, out-of-vocabulary source words
are copied through *source-position markers*: the dictionary may end with ``<unk-0> ...
<unk-{K-1}>``, and a source word outside the vocabulary at (word) position ``i`` is written as
``<unk-i>`` by the preprocessing. The markers all share the ``<unk>`` embedding and get no
generation probability (``P_g`` covers the ``V - K`` real entries), but they can be copied, so
the output distribution lives on the ``V`` entries of the dictionary -- which is what fairseq's
beam search expects -- and a copied ``<unk-i>`` is replaced by the ``i``-th source word after
decoding (``examples/pointer_generator/postprocess.py``). Without markers (``K = 0``, e.g. with
the sentencepiece data of ``fairseq-sum-prepare``, which has no out-of-vocabulary words: a rare
word is copied piece by piece) the extended vocabulary is the dictionary itself.

``P(w) = z P_g(w) + (1 - z) sum_{i: x_i = w} gamma_i`` with ``z = sigma(w_c c + w_d h + w_x x')``.
"""
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..flags import bool_flag
from ..modules.features import DECODER_OUT, FeatureSpec, Inspection, flags_set, register_feature

MARKER_RE = re.compile(r"^<unk-(\d+)>$")


def count_position_markers(dictionary):
    """Number of ``<unk-N>`` source-position markers at the end of ``dictionary``."""
    k = 0
    while k < len(dictionary) - dictionary.nspecial and MARKER_RE.match(
            dictionary[len(dictionary) - 1 - k]):
        k += 1
    return k


class MarkerEmbedding(nn.Embedding):
    """An embedding of the ``V - K`` real entries; indices ``>= V - K`` (markers) read ``<unk>``."""

    def __init__(self, num_real, embed_dim, padding_idx, unk_idx):
        super().__init__(num_real, embed_dim, padding_idx=padding_idx)
        self.unk_idx = unk_idx
        nn.init.normal_(self.weight, mean=0, std=embed_dim**-0.5)
        nn.init.constant_(self.weight[padding_idx], 0)

    def forward(self, tokens):
        tokens = tokens.masked_fill(tokens >= self.num_embeddings, self.unk_idx)
        return super().forward(tokens)


def mix_copy_distribution(logits, p_gen, gamma, src_ids, vocab_size):
    """M2M eq. 15 over the extended vocabulary.

    ``logits`` B x T x (V - K) generator scores, ``p_gen`` B x T x 1 (``z_t``), ``gamma`` B x T x S
    copy attention (rows sum to one over the real source tokens), ``src_ids`` B x S token ids
    (``< vocab_size``). Returns probabilities B x T x V (float32) that sum to one.
    """
    p_vocab = F.softmax(logits.float(), dim=-1) * p_gen.float()
    if p_vocab.size(-1) < vocab_size:
        p_vocab = F.pad(p_vocab, (0, vocab_size - p_vocab.size(-1)))
    bsz, tgt_len, src_len = gamma.shape
    index = src_ids.unsqueeze(1).expand(bsz, tgt_len, src_len)
    return p_vocab.scatter_add(2, index, gamma.float() * (1 - p_gen.float()))


class TransformerCopy(nn.Module):
    """The pointer-generator on a transformer decoder (``--pointer-generator`` of
    ``sum_transformer``).

    As fairseq's ``examples/pointer_generator`` (Enarvi et al., 2020): the copy distribution
    ``gamma`` is the last decoder layer's cross-attention averaged over its heads, and the switch
    reads the decoder's output state and the embedding of its input token::

        z_t = sigma(w^T [h_t; e(y_{t-1})] + b)
        P(w) = z_t softmax(E h_t)_w + (1 - z_t) sum_{i: x_i = w} gamma_ti
                                                               (See et al., PG eq. 9)

    The dictionary is joined (sentencepiece pieces, no out-of-vocabulary word), so the copy adds to
    the source token's own entry. ``forward`` returns ``log P`` floored at ``log 1e-10``, as
    Mem2Mem's decoder does: fairseq's log-softmax in ``get_normalized_probs`` then gives ``log P``
    back.
    """

    needs_attention = True  # the last layer's head-averaged cross-attention is gamma

    def __init__(self, embed_dim):
        super().__init__()
        self.p_gen = nn.Linear(2 * embed_dim, 1)

    def forward(self, logits, features, prev_embed, gamma, src_tokens):
        z = torch.sigmoid(self.p_gen(torch.cat([features, prev_embed.type_as(features)], dim=-1)))
        probs = mix_copy_distribution(logits, z, gamma, src_tokens, logits.size(-1))
        return probs.clamp(min=1e-10).log()


# --- the feature (modules/features.py) ---------------------------------------------------------


def _copy_args(parser):
    parser.add_argument(
        "--pointer-generator", type=bool_flag, metavar="BOOL",
        help="copy source tokens through the last layer's cross-attention "
        "(See et al., 2017; fairseq's examples/pointer_generator); needs a joined dictionary")


def _copy_defaults(args, on=False):
    args.pointer_generator = getattr(args, "pointer_generator", on)


def _copy_refuse(args, backbone):
    if backbone == "bart" and getattr(args, "pointer_generator", False):
        return ("--pointer-generator: the copy mechanism is a feature of sum_transformer's cells, "
                "not of bart_sum")
    return None


def _copy_check(args, task, src_dict, tgt_dict):
    """The copy adds to the source token's own entry: source and target ids must be one
    dictionary."""
    if getattr(args, "pointer_generator", False) and src_dict != tgt_dict:
        raise ValueError("--pointer-generator copies source ids into the target vocabulary: "
                         "use a joined dictionary (fairseq-sum-prepare writes one)")
    return None  # no model-level module: the check only


def watch_copy(model, probe):
    """Inspection: ``p_gen``, the switch ``z_t`` of every output token (PG eq. 9: the share of
    generating from the vocabulary), and ``copy_source``, the source position its copy
    distribution ``gamma`` weighs most; recomputed from the module's inputs at its forward."""
    found = [m for m in model.decoder.modules() if isinstance(m, TransformerCopy)]
    if not found:
        return
    kept = {}

    def hook(mod, inputs, out):
        logits, features, prev_embed, gamma, _src = inputs
        kept["z"] = torch.sigmoid(mod.p_gen(torch.cat([features, prev_embed.type_as(features)],
                                                      dim=-1)))
        kept["gamma"] = gamma

    probe.hook(found[0], hook)
    probe.read(lambda run: {"p_gen": kept["z"][0, :, 0].tolist(),
                            "copy_source": kept["gamma"][0].argmax(-1).tolist()})


register_feature(
    FeatureSpec(
        "copy mechanism (--pointer-generator)", {DECODER_OUT: "copy"},
        lambda args, site, dims: TransformerCopy(dims.embed_dim)
        if getattr(args, "pointer_generator", False) else None, stage="output", add_args=_copy_args,
        defaults=_copy_defaults, refuse=_copy_refuse, build_model_feature=_copy_check,
        on=lambda args: flags_set(args, "pointer_generator"),
        inspect=Inspection({"p_gen": "output", "copy_source": "output"}, watch_copy)))
