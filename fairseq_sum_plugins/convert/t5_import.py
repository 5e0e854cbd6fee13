"""``fairseq-sum-import-t5 HF_DIR OUT_DIR``: a Hugging Face T5 (v1.0) directory as a fairseq
checkpoint.

Reads ``HF_DIR/config.json``, ``HF_DIR/model.safetensors`` (or ``pytorch_model.bin``, or the shards
their ``.index.json`` names) and ``HF_DIR/spiece.model``; writes into ``OUT_DIR``:

* ``model.pt``: a fairseq checkpoint of ``sum_transformer`` with ``--cell t5`` (arch ``t5_small`` /
  ``t5_base`` or T5 dims given explicitly), loadable with ``torch.load(weights_only=True)``;
* ``dict.txt`` (and ``dict.src.txt`` / ``dict.tgt.txt``): the fairseq dictionary of T5's vocabulary;
* ``spm.model`` (a copy of ``spiece.model``) and ``prepare_args.json`` (sentencepiece on raw text,
  no Moses), so the hub interface reads raw text with T5's sentencepiece::

      SumTransformerModel.from_pretrained(OUT_DIR, "model.pt", data_name_or_path=".")

Binarize a corpus with T5's own vocabulary: ``fairseq-sum-prepare ... --spm-model OUT_DIR/spm.model
--dict OUT_DIR/dict.txt``; fine-tune with ``fairseq-train DATA/bin --restore-file OUT_DIR/model.pt
--reset-optimizer --reset-dataloader --reset-meters --reset-lr-scheduler --arch t5_base_gated ...``:
parameters the checkpoint lacks (gate, TPR bindings, focus, saliency, Topic Assistant) are
initialised fresh and each is named in the log
(:meth:`SumTransformerModel.upgrade_state_dict_named`). The command prints the model flags of the
import (dims, ``--t5-d-kv``, the output head): repeat them when fine-tuning a model whose dims or
head are not those of the ``--arch`` preset.

**Ids.** T5: ``<pad>`` 0 (also the decoder's start token), ``</s>`` 1, ``<unk>`` 2, sentencepiece
pieces 3..n-1, ``<extra_id_{E-1}>`` .. ``<extra_id_0>`` at n..n+E-1 (E = 100 or the rows left),
unused rows up to ``vocab_size - 1``. fairseq's Dictionary: ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2,
``<unk>`` 3, then the file's symbols. The map is one rotation, ``fairseq = (t5 + 1) mod V``: pad,
eos, unk and every piece keep their meaning, and fairseq's ``<s>`` (unused in summarization) takes
T5's last row, an unused padding row (unused rows appear as ``madeupwordNNNN``). The embedding rows
are rotated likewise, so the softmax runs over the same V rows as T5's. fairseq starts decoding from
``</s>``; the T5 cell embeds that first token with the pad row, T5's decoder start.

**config.json**: every key that changes the function is honoured or refused, with a message naming
the file and the key. Honoured: ``vocab_size``, ``d_model``, ``d_ff``, ``num_layers``,
``num_decoder_layers``, ``num_heads``, ``d_kv`` (``num_heads * d_kv`` may differ from ``d_model``,
as in t5-3b / t5-11b: ``--t5-d-kv``), ``relative_attention_num_buckets``,
``relative_attention_max_distance``, ``dropout_rate`` and the output head: ``lm_head.weight`` when
the checkpoint holds one that differs from ``shared.weight`` (an untied head,
``--share-decoder-input-output-embed False``), the ``d_model^-1/2`` scale as
``scale_decoder_outputs`` says (transformers >= 5 writes it, and always ``tie_word_embeddings:
true``), else as ``tie_word_embeddings`` does (``--t5-scale-decoder-output``). Refused unless T5
v1.0's value: ``model_type`` (``t5``), ``feed_forward_proj`` (``relu``; v1.1 / flan / mT5 are
``gated-gelu``), ``is_gated_act`` (false), ``dense_act_fn`` (``relu``), ``layer_norm_epsilon``
(1e-6), ``is_encoder_decoder`` (true), ``is_decoder`` (false), ``pad_token_id`` /
``decoder_start_token_id`` (0), ``eos_token_id`` (1). Also refused: a head that the two transformers
generations would read differently (``tie_word_embeddings`` true, no ``scale_decoder_outputs``, and
a distinct ``lm_head.weight``, which transformers < 5 ignores and >= 5 uses; or
``tie_word_embeddings`` false and no ``lm_head.weight``), a sentencepiece model whose pad/eos/unk
ids are not 0/1/2 and a vocabulary with no spare row for fairseq's ``<s>``.

**Weights**: every tensor of the checkpoint is used, with the shape the config implies, or the
import stops naming it (e.g. a checkpoint with more layers than its config); copies of
``shared.weight`` (``encoder/decoder.embed_tokens.weight``, a tied ``lm_head.weight``) must equal
it. The cross-attention ``relative_attention_bias`` of old T5 checkpoints is unused by T5 (and by
today's HF) and is dropped. The name map is :func:`hf_to_fairseq_names`. ``model.pt`` records the
dictionary checksum in its args (``src_dict_sha256``,
:func:`~fairseq_sum_plugins.data_folder.dictionary_checksum`) and the output scale in its import
mark (:func:`~fairseq_sum_plugins.models.fresh_params.check_import_mark`).
"""
import argparse
import json
import logging
import os
import shutil
import sys
from typing import NamedTuple

import torch

from ..cli.outputs import refuse_clobber
from ..models.fresh_params import IMPORT_MARKER, import_mark

logger = logging.getLogger(__name__)



class T5ImportError(Exception):
    """Bad HF directory or an unsupported T5 variant; the message names the file."""


_REQUIRED = object()
# honoured integer keys: default (_REQUIRED: the key must be there; a str: that key's value)
_INT_KEYS = {"vocab_size": _REQUIRED, "d_model": _REQUIRED, "d_kv": _REQUIRED, "d_ff": _REQUIRED,
             "num_layers": _REQUIRED, "num_heads": _REQUIRED, "num_decoder_layers": "num_layers",
             "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128}
# keys refused unless absent or T5 v1.0's value (the T5 cell computes only that)
_FIXED_KEYS = {"model_type": "t5", "feed_forward_proj": "relu", "is_gated_act": False,
               "dense_act_fn": "relu", "layer_norm_epsilon": 1e-6, "is_encoder_decoder": True,
               "is_decoder": False, "pad_token_id": 0, "decoder_start_token_id": 0,
               "eos_token_id": 1}


def _same(value, expected):
    if isinstance(expected, bool) or isinstance(value, bool):
        return value is expected
    if isinstance(expected, float):
        return isinstance(value, (int, float)) and abs(value - expected) <= 1e-12
    if expected == 1 and isinstance(value, list):  # eos_token_id may be a list
        return value == [1]
    return value == expected


def read_config(hf_dir):
    """``config.json`` checked key by key (module docstring): a dict with every honoured value
    filled in, ``tie_word_embeddings`` / ``scale_decoder_outputs`` as written (None when absent)."""
    path = os.path.join(hf_dir, "config.json")
    if not os.path.exists(path):
        raise T5ImportError(f"{path}: not found (a Hugging Face T5 directory holds config.json)")
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (ValueError, OSError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise T5ImportError(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(raw, dict):
        raise T5ImportError(f"{path}: holds a {type(raw).__name__}, not a JSON object")
    if raw.get("model_type", "t5") != "t5":
        raise T5ImportError(
            f"{path}: model_type {raw['model_type']!r}: not a T5 model (model_type 't5')")
    act = raw.get("feed_forward_proj", "relu")
    if act != "relu":
        kind = "a T5 v1.1 / flan / mT5 model (gated feed-forward)" if str(act).startswith(
            "gated") else "not ReLU"
        raise T5ImportError(
            f"{path}: feed_forward_proj={act!r}: {kind}; the T5 cell of --cell t5 is T5 v1.0's "
            "ReLU feed-forward: only v1.0-shaped checkpoints (t5-small ... t5-11b) can be imported")
    for key, expected in _FIXED_KEYS.items():
        if key in raw and not (key == "decoder_start_token_id" and raw[key] is None) and not _same(
                raw[key], expected):
            raise T5ImportError(
                f"{path}: {key} = {raw[key]!r}; the T5 cell computes only T5 v1.0's {expected!r}")
    cfg = {}
    for key, default in _INT_KEYS.items():
        value = raw.get(key)
        if value is None:
            if default is _REQUIRED:
                raise T5ImportError(f"{path}: {key} missing (not a T5 config?)")
            value = cfg[default] if isinstance(default, str) else default
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise T5ImportError(f"{path}: {key} = {value!r} is not a positive integer")
        cfg[key] = value
    if cfg["relative_attention_num_buckets"] < 4 or \
            cfg["relative_attention_max_distance"] <= cfg["relative_attention_num_buckets"] // 2:
        raise T5ImportError(
            f"{path}: relative_attention_num_buckets {cfg['relative_attention_num_buckets']} / "
            f"relative_attention_max_distance {cfg['relative_attention_max_distance']}: T5's "
            "buckets need at least 4 buckets and a max distance above half of them")
    drop = raw.get("dropout_rate", 0.1)
    if isinstance(drop, bool) or not isinstance(drop, (int, float)) or not 0 <= drop < 1:
        raise T5ImportError(f"{path}: dropout_rate = {drop!r} is not a number in [0, 1)")
    cfg["dropout_rate"] = drop
    for key in ("tie_word_embeddings", "scale_decoder_outputs"):
        if raw.get(key) is not None and not isinstance(raw[key], bool):
            raise T5ImportError(f"{path}: {key} = {raw[key]!r} is not true or false")
        cfg[key] = raw.get(key)
    cfg["path"] = path
    return cfg


def output_head(cfg, weights):
    """``(untied, scaled)``: the checkpoint's own ``lm_head.weight`` when it differs from
    ``shared.weight``; ``d_model^-1/2`` as ``scale_decoder_outputs``, else ``tie_word_embeddings``,
    says."""
    tie, scale = cfg["tie_word_embeddings"], cfg["scale_decoder_outputs"]
    head, shared = weights.get("lm_head.weight"), weights.get("shared.weight")
    untied = (head is not None and shared is not None
              and not (head.shape == shared.shape and torch.equal(head, shared)))
    if untied and tie is not False and scale is None:
        raise T5ImportError(f"{cfg['path']}: tie_word_embeddings true, no scale_decoder_outputs, "
                           "and the checkpoint's lm_head.weight differs from shared.weight: "
                           "transformers < 5 ties the head (shared.weight, scaled), >= 5 uses "
                           "lm_head.weight; set tie_word_embeddings (and scale_decoder_outputs) "
                           "to what the model was trained with")
    if head is None and tie is False:
        raise T5ImportError(
            f"{cfg['path']}: tie_word_embeddings false but the checkpoint has no lm_head.weight: "
            "the untied output head is missing")
    return untied, (tie is not False) if scale is None else scale


def _load_safetensors(path):
    try:
        from safetensors.torch import load_file
    except ImportError:
        raise T5ImportError(
            f"{path}: reading it needs the safetensors package (pip install safetensors)") from None
    return load_file(path)


def _load_bin(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def weight_files(hf_dir):
    """The checkpoint's files: ``model.safetensors`` / ``pytorch_model.bin``, or the shards that
    ``model.safetensors.index.json`` / ``pytorch_model.bin.index.json`` name (file names inside
    HF_DIR)."""
    formats = (("model.safetensors", _load_safetensors), ("pytorch_model.bin", _load_bin))
    for single, load in formats:
        if os.path.exists(os.path.join(hf_dir, single)):
            return [os.path.join(hf_dir, single)], load
        index = os.path.join(hf_dir, single + ".index.json")
        if os.path.exists(index):
            try:
                with open(index, encoding="utf-8") as f:
                    shards = json.load(f)["weight_map"].values()
            except (ValueError, OSError, KeyError, TypeError, AttributeError) as e:
                raise T5ImportError(
                    f"{index}: not a shard index with a weight_map ({type(e).__name__}: {e})"
                ) from None
            if not all(isinstance(n, str) and n == os.path.basename(n) and n not in ("", ".", "..")
                       for n in shards):
                raise T5ImportError(f"{index}: shard names must be file names inside {hf_dir}")
            return [os.path.join(hf_dir, n) for n in sorted(set(shards))], load
    raise T5ImportError(
        f"{hf_dir}: neither model.safetensors nor pytorch_model.bin (nor their .index.json)")


def read_weights(hf_dir):
    """``{name: tensor}`` of the checkpoint (:func:`weight_files`); an unreadable file is an error
    naming it."""
    paths, load = weight_files(hf_dir)
    weights = {}
    for path in paths:
        if not os.path.exists(path):
            raise T5ImportError(f"{path}: not found (a shard named by the index)")
        try:
            part = load(path)
        except T5ImportError:
            raise
        except Exception as e:  # truncated or corrupt file, or pickled objects other than tensors
            first = str(e).splitlines()[0] if str(e) else ""
            raise T5ImportError(
                f"{path}: cannot be read as a checkpoint ({type(e).__name__}: {first}); "
                "truncated, or not a weights file?") from None
        if not isinstance(part, dict) or not all(
                isinstance(v, torch.Tensor) for v in part.values()):
            raise T5ImportError(f"{path}: not a dict of named tensors")
        weights.update(part)
    return weights, paths[0] if len(paths) == 1 else os.path.dirname(paths[0])


def dictionary_symbols(spm_path, vocab_size):
    """fairseq dictionary symbols after the 4 specials: T5 ids 3 .. V-2 (see "Ids" above)."""
    import sentencepiece as spm

    if not os.path.exists(spm_path):
        raise T5ImportError(f"{spm_path}: not found (T5's sentencepiece model)")
    try:
        sp = spm.SentencePieceProcessor(model_file=spm_path)
    except (RuntimeError, OSError) as e:
        raise T5ImportError(f"{spm_path}: not a sentencepiece model ({e})") from None
    n = sp.get_piece_size()
    if (sp.pad_id(), sp.eos_id(), sp.unk_id()) != (0, 1, 2):
        raise T5ImportError(f"{spm_path}: pad/eos/unk ids "
                            f"{(sp.pad_id(), sp.eos_id(), sp.unk_id())}, T5 uses (0, 1, 2)")
    if vocab_size <= n:
        raise T5ImportError(
            f"{spm_path}: {n} pieces but vocab_size {vocab_size}: no spare row for fairseq's <s>")
    extra = min(100, vocab_size - 1 - n)
    symbols = []
    for t in range(3, vocab_size - 1):
        if t < n:
            symbols.append(sp.id_to_piece(t))
        elif t < n + extra:
            symbols.append(f"<extra_id_{extra - 1 - (t - n)}>")
        else:
            symbols.append(f"madeupword{t - n - extra:04d}")
    return symbols


class TensorMap(NamedTuple):
    """One parameter of the T5 cell: ``fairseq`` is ``torch.cat`` of the ``hf`` tensors (dim 0, in
    this order), each of ``shape``; ``rotate``: embedding rows, fairseq row ``(t + 1) mod V`` = T5
    row ``t`` (:func:`t5_rows_to_fairseq`, inverse :func:`fairseq_rows_to_t5`)."""

    fairseq: str
    hf: tuple
    shape: tuple
    rotate: bool = False


def t5_rows_to_fairseq(t):
    return torch.roll(t, 1, dims=0)


def fairseq_rows_to_t5(t):
    return torch.roll(t, -1, dims=0)


# HF names that are copies of shared.weight (must equal it), and the one that T5 never reads
TIED_COPIES = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")
UNUSED_CROSS_BIAS = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"


def hf_to_fairseq_names(cfg, untied_head=False):
    """The T5 cell's parameters from HF T5 tensors, as :class:`TensorMap` rows, for a config of
    :func:`read_config` (``d_model``, ``d_kv``, ``d_ff``, ``num_heads``, ``num_layers``,
    ``num_decoder_layers``, ``vocab_size``, ``relative_attention_num_buckets``); ``untied_head``:
    the decoder's ``output_projection`` from ``lm_head.weight``. A raw ``config.json`` dict works
    too (``num_decoder_layers`` and the bucket count default as in HF)."""
    d, ff, heads, vocab = cfg["d_model"], cfg["d_ff"], cfg["num_heads"], cfg["vocab_size"]
    inner = heads * cfg["d_kv"]
    n_dec, buckets = cfg.get("num_decoder_layers") or cfg["num_layers"], cfg.get(
        "relative_attention_num_buckets", 32)
    rows = [TensorMap("encoder.embed_tokens.weight", ("shared.weight",), (vocab, d), True),
            TensorMap("decoder.embed_tokens.weight", ("shared.weight",), (vocab, d), True)]
    if untied_head:
        rows.append(
            TensorMap("decoder.output_projection.weight", ("lm_head.weight", ), (vocab, d), True))
    for side, n_layers in (("encoder", cfg["num_layers"]), ("decoder", n_dec)):
        for i in range(n_layers):
            hf, fs = f"{side}.block.{i}.layer.", f"{side}.layers.{i}."
            att = hf + "0.SelfAttention."
            rows += [TensorMap(fs + "self_attn.in_proj.weight",
                               (att + "q.weight", att + "k.weight", att + "v.weight"), (inner, d)),
                     TensorMap(fs + "self_attn.out_proj.weight", (att + "o.weight",), (d, inner)),
                     TensorMap(fs + "self_attn_sublayer.layer_norm.weight",
                               (hf + "0.layer_norm.weight",), (d,))]
            ff_block = 1
            if side == "decoder":
                att = hf + "1.EncDecAttention."
                rows += [
                    TensorMap(fs + "cross_attn.q_proj.weight", (att + "q.weight",), (inner, d)),
                    TensorMap(fs + "cross_attn.kv_proj.weight",
                              (att + "k.weight", att + "v.weight"), (inner, d)),
                    TensorMap(fs + "cross_attn.out_proj.weight", (att + "o.weight",), (d, inner)),
                    TensorMap(fs + "cross_attn_sublayer.layer_norm.weight",
                              (hf + "1.layer_norm.weight",), (d,))]
                ff_block = 2
            dense = f"{hf}{ff_block}.DenseReluDense."
            rows += [TensorMap(fs + "ffn.fc1.weight", (dense + "wi.weight",), (ff, d)),
                     TensorMap(fs + "ffn.fc2.weight", (dense + "wo.weight",), (d, ff)),
                     TensorMap(fs + "ffn_sublayer.layer_norm.weight",
                               (f"{hf}{ff_block}.layer_norm.weight",), (d,))]
        rows += [
            TensorMap(f"{side}.relative_position.relative_attention_bias.weight",
                      (f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",),
                      (buckets, heads)),
            TensorMap(f"{side}.layer_norm.weight", (f"{side}.final_layer_norm.weight",), (d,))]
    return rows


def convert_state_dict(weights, cfg, where, untied_head=False):
    """HF T5 tensors -> the T5 cell's state dict (:func:`hf_to_fairseq_names`); every tensor of
    ``weights`` is used, with its shape, or a :class:`T5ImportError` names it (``where``: the
    file)."""
    out, used, done = {}, set(), {}
    for row in hf_to_fairseq_names(cfg, untied_head):
        if row.hf not in done:
            parts = []
            for name in row.hf:
                if name not in weights:
                    raise T5ImportError(
                        f"{where}: tensor {name} missing (config.json: {cfg['num_layers']} encoder "
                        f"+ {cfg['num_decoder_layers']} decoder layers; not a T5 checkpoint?)")
                if tuple(weights[name].shape) != row.shape:
                    raise T5ImportError(
                        f"{where}: {name} has shape {tuple(weights[name].shape)}, config.json "
                        f"implies {row.shape}")
                parts.append(weights[name].float())
                used.add(name)
            value = torch.cat(parts) if len(parts) > 1 else parts[0]
            done[row.hf] = t5_rows_to_fairseq(value) if row.rotate else value
        out[row.fairseq] = done[row.hf]
    copies = TIED_COPIES + (() if untied_head else ("lm_head.weight",))
    for name in copies:
        if name in weights and not (weights[name].shape == weights["shared.weight"].shape
                                    and torch.equal(weights[name], weights["shared.weight"])):
            raise T5ImportError(
                f"{where}: {name} differs from shared.weight: the T5 cell has one embedding matrix")
    unused = sorted(n for n in weights
                    if n not in used and n not in copies and n != UNUSED_CROSS_BIAS)
    if unused:
        raise T5ImportError(
            f"{where}: {len(unused)} tensor(s) that config.json's T5 does not use, e.g. "
            f"{', '.join(unused[:4])} (more layers than num_layers / num_decoder_layers, or "
            "another architecture?); nothing written")
    if UNUSED_CROSS_BIAS in weights:
        logger.info(
            f"dropping {UNUSED_CROSS_BIAS}: T5 does not use a cross-attention position bias")
    return out


def arch_flags(cfg, untied_head=False, scaled=True):
    """``--arch`` and the model flags of the import (dims, ``--t5-d-kv``, the output head)."""
    dims = (cfg["d_model"], cfg["d_ff"], cfg["num_layers"], cfg["num_decoder_layers"],
            cfg["num_heads"])
    arch = {(512, 2048, 6, 6, 8): "t5_small",
            (768, 3072, 12, 12, 12): "t5_base"}.get(dims, "t5_small")
    drop = str(cfg["dropout_rate"])
    return [
        "--arch", arch, "--encoder-embed-dim",
        str(dims[0]), "--encoder-ffn-embed-dim",
        str(dims[1]), "--encoder-layers",
        str(dims[2]), "--decoder-layers",
        str(dims[3]), "--encoder-attention-heads",
        str(dims[4]), "--decoder-embed-dim",
        str(dims[0]), "--decoder-ffn-embed-dim",
        str(dims[1]), "--decoder-attention-heads",
        str(dims[4]), "--t5-d-kv",
        str(cfg["d_kv"]), "--share-decoder-input-output-embed",
        str(not untied_head), "--t5-scale-decoder-output",
        str(scaled), "--t5-relative-buckets",
        str(cfg["relative_attention_num_buckets"]), "--t5-relative-max-distance",
        str(cfg["relative_attention_max_distance"]), "--t5-cross-position-bias", "False",
        "--dropout", drop, "--attention-dropout", drop, "--activation-dropout", drop
    ]


def training_args(out_dir, flags):
    from fairseq import options

    import fairseq_sum_plugins  # noqa: F401  (registers the task and the model)

    argv = [out_dir, "--task", "summarization", *flags, "--criterion", "cross_entropy",
            "--optimizer", "adam", "--lr", "0.0001", "--source-lang", "src", "--target-lang", "tgt"]
    return options.parse_args_and_arch(options.get_training_parser(), argv)


def write_dictionary(out_dir, symbols):
    lines = "".join(f"{s} {len(symbols) - i}\n" for i, s in enumerate(symbols))
    for name in ("dict.txt", "dict.src.txt", "dict.tgt.txt"):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(lines)


def write_prepare_args(out_dir):
    info = dict(tokenizer={}, bpe=dict(bpe="sentencepiece", sentencepiece_model="spm.model"),
                interactive_args="--bpe sentencepiece --sentencepiece-model "
                + os.path.join(out_dir, "spm.model"),
                imported_from="t5")
    with open(os.path.join(out_dir, "prepare_args.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")


OUTPUTS = ("model.pt", "dict.txt", "spm.model", "prepare_args.json")


def import_t5(hf_dir, out_dir, force=False):
    """Writes ``OUT_DIR/model.pt`` and the dictionaries; returns ``(args, model flags)`` of the
    checkpoint. Everything is checked before anything is written; files of an earlier import (or of
    anything else) of the same names are replaced only with ``force``."""
    from fairseq.data import Dictionary

    from ..data_folder import dictionary_checksum

    cfg = read_config(hf_dir)
    symbols = dictionary_symbols(os.path.join(hf_dir, "spiece.model"), cfg["vocab_size"])
    weights, where = read_weights(hf_dir)
    if "shared.weight" not in weights:
        raise T5ImportError(f"{where}: no shared.weight (not a T5 checkpoint?)")
    untied, scaled = output_head(cfg, weights)
    state = convert_state_dict(weights, cfg, where, untied)
    state[IMPORT_MARKER] = import_mark(scaled)
    flags = arch_flags(cfg, untied, scaled)
    there = [name for name in OUTPUTS if os.path.exists(os.path.join(out_dir, name))]
    if there and not force:
        raise T5ImportError(
            f"{out_dir}: already holds {', '.join(there)} (pass --force to replace them)")
    try:
        os.makedirs(out_dir, exist_ok=True)
        write_dictionary(out_dir, symbols)
        shutil.copyfile(os.path.join(hf_dir, "spiece.model"), os.path.join(out_dir, "spm.model"))
        write_prepare_args(out_dir)
    except OSError as e:
        raise T5ImportError(f"{out_dir}: cannot write the import there ({e})") from None
    args = training_args(out_dir, flags)
    # the task's check of the data's dictionaries (tasks/summarization.py, check_model_data)
    checksum = dictionary_checksum(Dictionary.load(os.path.join(out_dir, "dict.txt")))
    args.src_dict_sha256 = args.tgt_dict_sha256 = checksum
    torch.save({
        "args": args, "model": state, "last_optimizer_state": None,
        "optimizer_history": [{"criterion_name": "CrossEntropyCriterion",
                               "optimizer_name": "FairseqAdam",
                               "lr_scheduler_state": {"best": None}, "num_updates": 0}],
        "extra_state": {"epoch": 1, "train_iterator": {"epoch": 1, "iterations_in_epoch": 0},
                        "val_loss": None},
    }, os.path.join(out_dir, "model.pt"))
    return args, flags


def main(argv=None):
    parser = argparse.ArgumentParser(prog="fairseq-sum-import-t5",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "hf_dir", help="Hugging Face T5 directory: config.json, model.safetensors or "
        "pytorch_model.bin (or their shards and .index.json), spiece.model")
    parser.add_argument("out_dir", help="output: model.pt, dict.txt, spm.model, prepare_args.json")
    parser.add_argument("--force", action="store_true",
                        help="replace those files where OUT_DIR holds them")
    args = parser.parse_args(argv)
    refuse_clobber(parser, reads=[("HF_DIR", args.hf_dir)], writes=[
        ("OUT_DIR", os.path.join(args.out_dir, name))
        for name in ("model.pt", "dict.txt", "spm.model", "prepare_args.json")])
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        saved, flags = import_t5(args.hf_dir, args.out_dir, force=args.force)
    except T5ImportError as e:
        sys.exit(f"fairseq-sum-import-t5: error: {e}")
    print(f"| wrote {os.path.join(args.out_dir, 'model.pt')} (d_model {saved.encoder_embed_dim}, "
          f"{saved.encoder_layers}+{saved.decoder_layers} layers) and "
          f"{os.path.join(args.out_dir, 'dict.txt')}\n| its model flags (repeat them when "
          f"fine-tuning, with the --arch of your choice): {' '.join(flags[2:])}")


cli_main = main
