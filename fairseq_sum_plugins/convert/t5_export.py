"""``fairseq-sum-export-hf CKPT OUT_DIR``: a checkpoint of the plain T5 cell as a Hugging Face T5
directory.

For ``--cell t5`` checkpoints with no paper feature (presets ``t5_small``, ``t5_base``, imports of
``fairseq-sum-import-t5`` fine-tuned here). ``OUT_DIR`` is read by ``transformers`` alone, offline::

    T5ForConditionalGeneration.from_pretrained(OUT_DIR)   config.json, generation_config.json,
                                                          model.safetensors
    AutoTokenizer.from_pretrained(OUT_DIR)                tokenizer.json, tokenizer_config.json

plus ``README.md`` (model card: data, updates, ROUGE of ``--scores``; a header with ``license``,
``language``, ``datasets``: ``--license``, ``--language``, ``--dataset`` or what the data records,
see :func:`card_metadata`), and, for the record, the data's ``dict.txt``, ``spm.model`` and
``prepare_args.json``. Nothing written holds a local path (the folder is meant to be shared), and
every file gets the mode of a new file (0o644 under umask 022; safetensors writes 0o600).

**Ids.** HF id ``t`` is fairseq id ``order[t]``: the embedding rows (``shared.weight``), the
tokenizer's vocabulary and the log-probability columns follow one permutation.

* Data of ``fairseq-sum-prepare`` (its own sentencepiece): ``order`` is the identity, the fairseq
  dictionary's order (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3, ``<sep>``, the pieces).
* T5's vocabulary (``fairseq-sum-import-t5``: fairseq = (T5 + 1) mod V, see ``t5_import``):
  ``order[t] = (t + 1) mod V``, T5's own ids again (``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2); an
  import exported untouched gives back the original tensors.

``pad_token_id`` and ``decoder_start_token_id`` are the pad row (the T5 cell embeds fairseq's
leading ``</s>`` with it), ``eos_token_id`` is ``</s>``. ``generation_config.json`` decodes as
fairseq's generator does by default: pad never emitted (``suppress_tokens``), no ``</s>`` as the
first token (``--min-len 1``: ``begin_suppress_tokens``), at most as many tokens as fairseq-generate
writes by default: ``min(--max-len-b 200, max_target_positions - 1)`` of the checkpoint
(``SequenceGenerator``: ``max_len = min(a * src_len + b, model.max_decoder_positions() - 1)``, then
its forced ``</s>``), so ``max_length`` is that + 1 (HF counts the decoder start token and writes no
``</s>`` at the limit).

**Weights.** ``t5_import.hf_to_fairseq_names`` read backwards: ``in_proj`` splits into ``q, k, v``,
``kv_proj`` into ``k, v``, embedding rows (and an untied ``lm_head``) follow ``order``; the per-head
dim ``d_kv`` is read from the tensors (``--t5-d-kv``). Every tensor of the model is used, or the
export stops naming the ones left. The output head is T5 v1.0's (tied, scaled by ``d_model^-1/2``:
``tie_word_embeddings`` and ``scale_decoder_outputs`` true) or v1.1's (``lm_head.weight``, unscaled:
both false), the two that transformers reads alike before and after version 5.

**Tokenizer.** A ``tokenizers`` Unigram model over the vocabulary above with the sentencepiece
model's scores and normalizer (its precompiled NFKC map, whitespace rules, ``▁`` prefix;
user-defined pieces such as ``<sep>`` kept whole), read from the ``.model`` file itself, so
``tokenizer(text).input_ids`` is ``spm.encode(text)`` mapped through the fairseq dictionary, plus
``</s>``. It does not run the ``sum_moses`` step: data of ``fairseq-sum-prepare`` was
Moses-tokenized with ``<sep>`` between sentences before sentencepiece, and the model card shows that
step (``fairseq_sum_plugins.text.tokenize_document``); T5-vocabulary data read raw text, as the
tokenizer does. ``<s>``, ``</s>``, ``<pad>``, ``<unk>`` (and any symbol sentencepiece never emits)
inside the text are ordinary pieces, as in fairseq's sentencepiece step
(:func:`unmatchable_splits`).

**Refused** with a message naming the feature: another model family or cell, every feature of the
registry switched on in the checkpoint's args (:func:`..modules.features.features_on`: TPR, the
information gate, the Topic Assistant, focus, saliency, and any feature registered later), the
pointer-generator, TPT's cross-attention position table, a tied unscaled or untied scaled output,
encoder and decoder of other widths, a sentencepiece model other than unigram or with pieces the
dictionary lacks (fairseq reads them as ``<unk>``), data binarized with another dictionary than the
checkpoint's; an ``OUT_DIR`` that exists and is not empty (unless ``--force``).
"""
import argparse
import json
import os
import re
import shutil
import struct
import sys

import torch

from ..cli.outputs import refuse_clobber
from ..data_folder import PREPARE_ARGS, read_prepare_args
from ..scoring.rouge import DEFAULT_BACKEND, backend_name

MAX_LEN_B = 200  # fairseq-generate's default --max-len-b


def fairseq_max_len(model, ckpt):
    """The most tokens ``fairseq-generate`` writes (before its forced ``</s>``) with its defaults
    ``--max-len-a 0 --max-len-b 200``: ``min(200, max_decoder_positions - 1)``
    (``fairseq.sequence_generator.SequenceGenerator._generate``)."""
    positions = model.max_decoder_positions()
    if positions - 1 < 1:  # fairseq asserts --min-len 1 <= max_len
        raise T5ExportError(f"{ckpt}: max_target_positions {positions}: fairseq-generate writes no "
                            "token with it (at most max_target_positions - 1); train with "
                            "--max-target-positions >= 2")
    return min(MAX_LEN_B, positions - 1)


class T5ExportError(Exception):
    """A checkpoint, data folder or output the export cannot use; the message names it."""


# ----------------------------------------------------------------------------- checks


# options of the sum_transformer cell (not features of the registry) that HF's T5 has no place for
CELL_OPTIONS = (("TPT's cross-attention position table", "t5_cross_position_bias"),
                ("ETADS's output bias b^o", "output_bias"))


def _features(args):
    """``(feature, settings)`` of every registered feature switched on in the model args (the
    registry's :func:`~..modules.features.features_on`; a feature registered later included), then
    of the cell's own options above."""
    from ..modules.features import features_on

    found = [(spec.name.split(" (--")[0], ", ".join(on)) for spec, on in features_on(args)]
    for name, dest in CELL_OPTIONS:
        if getattr(args, dest, False):
            found.append((name, f"--{dest.replace('_', '-')} True"))
    return found


def check_exportable(args, ckpt):
    """Raises :class:`T5ExportError` unless ``args`` (the checkpoint's model args) is the plain T5
    cell."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    from ..models.sum_transformer import SumTransformerModel

    arch = getattr(args, "arch", None) or getattr(args, "_name", None)
    if ARCH_MODEL_REGISTRY.get(arch) is not SumTransformerModel:
        raise T5ExportError(
            f"{ckpt}: --arch {arch} is not a sum_transformer with the T5 cell; only T5-cell "
            "checkpoints (t5_small, t5_base, imports of fairseq-sum-import-t5) can be exported")
    if getattr(args, "cell", "default") != "t5":
        raise T5ExportError(f"{ckpt}: --arch {arch} uses --cell "
                            f"{getattr(args, 'cell', 'default')}, not the T5 cell (--cell t5), "
                            "which is the only one HF's T5 computes")
    try:
        found = _features(args)
    except (ValueError, AttributeError) as e:  # e.g. --focus-layers 9 with 2 layers
        raise T5ExportError(f"{ckpt}: its feature options cannot be read: {e}") from None
    if found:
        raise T5ExportError(f"{ckpt}: " + "; ".join(f"{name} ({flag})" for name, flag in found)
                            + ": HF's T5ForConditionalGeneration has no place for it; only the "
                              "plain T5 cell exports")
    if not getattr(args, "share_all_embeddings", True):
        raise T5ExportError(
            f"{ckpt}: --share-all-embeddings False: T5 has one embedding matrix for the encoder "
            "and the decoder")
    for what in ("embed_dim", "ffn_embed_dim", "attention_heads"):
        enc, dec = getattr(args, "encoder_" + what), getattr(args, "decoder_" + what)
        if enc != dec:
            raise T5ExportError(f"{ckpt}: --encoder-{what.replace('_', '-')} {enc} != --decoder-"
                                f"{what.replace('_', '-')} {dec}: HF's T5 has one value for both")
    if getattr(args, "activation_fn", "relu") != "relu":
        raise T5ExportError(
            f"{ckpt}: --activation-fn {args.activation_fn}: T5 v1.0's feed-forward is ReLU")


def refuse_non_empty(out_dir, force):
    if not out_dir.strip():
        raise T5ExportError(f"OUT_DIR {out_dir!r}: an empty path; name the directory to write")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise T5ExportError(f"{out_dir}: exists and is not a directory")
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not force:
        raise T5ExportError(f"{out_dir}: exists and is not empty (pass --force to write into it)")


# ----------------------------------------------------------------------------- loading


def read_checkpoint_args(ckpt):
    """The model args of ``ckpt`` and its training state (updates, epoch), without building the
    model."""
    from fairseq import checkpoint_utils

    import fairseq_sum_plugins  # noqa: F401  (registers the task and the models)

    if not os.path.isfile(ckpt):
        raise T5ExportError(f"{ckpt}: no such checkpoint file")
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(ckpt)
    except Exception as e:  # a truncated or foreign file
        raise T5ExportError(f"{ckpt}: not a fairseq checkpoint ({type(e).__name__}: {e})") from None
    cfg = state.get("cfg")
    if cfg is None or cfg.get("model") is None:
        raise T5ExportError(f"{ckpt}: holds no model arguments (not a fairseq checkpoint?)")
    history = state.get("optimizer_history") or [{}]
    info = dict(updates=history[-1].get("num_updates", 0),
                epoch=(state.get("extra_state") or {}).get("epoch"), data=cfg.task.get("data"))
    return cfg.model, info


def load_model(ckpt, data):
    from fairseq import checkpoint_utils

    try:
        models, _, task = checkpoint_utils.load_model_ensemble_and_task(
            [ckpt], arg_overrides={"data": data})
    except (ValueError, KeyError, RuntimeError, OSError) as e:
        raise T5ExportError(f"{ckpt} with data {data}: {e}") from None
    return models[0].eval(), task


def data_dir_of(ckpt, info, given):
    data = given or (info["data"] or "").split(os.pathsep)[0]
    if not data or not os.path.isfile(os.path.join(data, "dict.src.txt")):
        raise T5ExportError(
            f"{data or '(none recorded)'}: no dict.src.txt; pass --data, the data folder {ckpt} "
            "was trained on (its dictionary, spm.model and prepare_args.json)")
    return data


# ----------------------------------------------------------------------------- ids and weights


def t5_order(dictionary, spm_path):
    """``order`` (HF id -> fairseq id): T5's own ids when ``dictionary`` is T5's vocabulary laid out
    by ``fairseq-sum-import-t5``, else the identity."""
    from .t5_import import T5ImportError, dictionary_symbols

    n = len(dictionary)
    try:
        t5_layout = dictionary.symbols[dictionary.nspecial:] == dictionary_symbols(spm_path, n)
    except T5ImportError:  # not T5's special ids, or no spare row
        t5_layout = False
    return [(t + 1) % n for t in range(n)] if t5_layout else list(range(n))


def output_head(model, args, ckpt):
    """``(untied, scaled)`` of the decoder's output; the two combinations that every transformers
    version reads alike: T5 v1.0's (tied, ``d_model^-1/2``) and v1.1's (an ``lm_head`` of its own,
    unscaled)."""
    untied = getattr(model.decoder, "output_projection", None) is not None
    scaled = getattr(model.decoder, "output_scale", 1.0) != 1.0
    if untied == scaled:
        raise T5ExportError(
            f"{ckpt}: a{'n untied' if untied else ' tied'} output projection "
            f"{'with' if scaled else 'without'} the d_model^-1/2 scale "
            f"(--share-decoder-input-output-embed {not untied}, --t5-scale-decoder-output "
            f"{scaled}): transformers < 5 reads a T5 config as tied and scaled or untied and "
            "unscaled only")
    return untied, scaled


def hf_config(model, args, order, dictionary, untied):
    state = model.state_dict()
    inner = state["encoder.layers.0.self_attn.out_proj.weight"].size(1)  # H * d_kv (--t5-d-kv)
    position = {f: t for t, f in enumerate(order)}
    pad, eos = position[dictionary.pad()], position[dictionary.eos()]
    return {
        "architectures": ["T5ForConditionalGeneration"],
        "model_type": "t5",
        "vocab_size": len(dictionary),
        "d_model": args.encoder_embed_dim,
        "d_kv": inner // args.encoder_attention_heads,
        "d_ff": args.encoder_ffn_embed_dim,
        "num_layers": args.encoder_layers,
        "num_decoder_layers": args.decoder_layers,
        "num_heads": args.encoder_attention_heads,
        "relative_attention_num_buckets": args.t5_relative_buckets,
        "relative_attention_max_distance": args.t5_relative_max_distance,
        "dropout_rate": args.dropout,
        "layer_norm_epsilon": model.encoder.layer_norm.eps,
        "initializer_factor": 1.0,
        "feed_forward_proj": "relu",
        "is_encoder_decoder": True,
        "tie_word_embeddings": not untied,
        "scale_decoder_outputs": not untied,
        "use_cache": True,
        "pad_token_id": pad,
        "eos_token_id": eos,
        "decoder_start_token_id": pad,
        "torch_dtype": "float32",
    }


def hf_state_dict(model, cfg, order, ckpt, untied):
    """HF T5 tensors of ``model``: :func:`t5_import.hf_to_fairseq_names` read backwards (a fairseq
    tensor split into its HF parts; embedding rows in ``order``). Every tensor of the model is
    used."""
    from .t5_import import hf_to_fairseq_names

    state = {k: v.detach().float() for k, v in model.state_dict().items()}
    out, rows = {}, torch.tensor(order)
    for row in hf_to_fairseq_names(cfg, untied_head=untied):
        if row.fairseq not in state:
            raise T5ExportError(f"{ckpt}: tensor {row.fairseq} missing (not a T5-cell checkpoint?)")
        tensor = state.pop(row.fairseq)
        tensor = tensor[rows] if row.rotate else tensor
        if tensor.size(0) % len(row.hf):
            raise T5ExportError(
                f"{ckpt}: {row.fairseq} has {tensor.size(0)} rows, not {len(row.hf)} equal parts")
        for name, part in zip(row.hf, tensor.split(tensor.size(0) // len(row.hf))):
            if name in out and not torch.equal(out[name], part):  # encoder and decoder embeddings
                raise T5ExportError(f"{ckpt}: {row.fairseq} differs from the other copy of {name}; "
                                    "T5 shares one matrix")
            out[name] = part.contiguous()
    if state:
        raise T5ExportError(f"{ckpt}: tensors HF's T5 has no place for: {', '.join(sorted(state))}")
    return out


# ----------------------------------------------------------------------------- tokenizer


def _varint(buf, i):
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _proto_fields(buf):
    """``(field number, value)`` of a protocol-buffer message (varints as int, the rest as
    bytes)."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, i = buf[i:i + size], i + size
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if i > len(buf):
            raise ValueError("truncated")
        yield num, value


def read_spm_model(path):
    """What the tokenizer needs of a sentencepiece ``.model`` (sentencepiece_model.proto, read
    without protobuf): ``pieces`` {piece: (score, type)}, ``normalizer`` {name, charsmap,
    add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces}, ``model_type``,
    ``byte_fallback``."""
    with open(path, "rb") as f:
        buf = f.read()
    pieces, trainer, norm = {}, {}, {}
    try:
        for num, value in _proto_fields(buf):
            # SentencePiece: piece 1, score 2 (float), type 3 (1 normal ... 4 user-defined)
            if num == 1:
                p = dict(_proto_fields(value))
                if not isinstance(p.get(1), bytes):
                    raise ValueError("a piece without its text")
                score = struct.unpack("<f", p[2])[0] if 2 in p else 0.0
                pieces[p[1].decode("utf-8")] = (score, p.get(3, 1))
            elif num == 2:
                trainer = dict(_proto_fields(value))
            elif num == 3:
                norm = dict(_proto_fields(value))
    except (ValueError, IndexError, KeyError, TypeError, UnicodeDecodeError, struct.error) as e:
        raise T5ExportError(f"{path}: not a sentencepiece model ({e})") from None
    if not pieces:
        raise T5ExportError(f"{path}: not a sentencepiece model (no pieces)")
    return dict(pieces=pieces,
                model_type={1: "unigram", 2: "bpe", 3: "word", 4: "char"}.get(trainer.get(3, 1)),
                byte_fallback=bool(trainer.get(35, 0)), whitespace_suffix=bool(trainer.get(24, 0)),
                charsmap=norm.get(2, b""), add_dummy_prefix=bool(norm.get(3, 1)),
                remove_extra_whitespaces=bool(norm.get(4, 1)),
                escape_whitespaces=bool(norm.get(5, 1)))


NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def read_unigram_model(spm_path):
    """:func:`read_spm_model`, refusing what a ``tokenizers`` Unigram model does not reproduce."""
    spm = read_spm_model(spm_path)
    if spm["model_type"] != "unigram" or spm["whitespace_suffix"]:
        raise T5ExportError(
            f"{spm_path}: a sentencepiece {spm['model_type']} model"
            f"{' with whitespace as suffix' if spm['whitespace_suffix'] else ''}: the export "
            "writes a unigram tokenizer (fairseq-sum-prepare --model-type unigram, the default)")
    return spm


def check_pieces_in_dictionary(spm, dict_path, spm_path):
    """Every piece sentencepiece emits is a symbol of the dictionary: fairseq maps a missing one to
    ``<unk>``, which a tokenizer over the dictionary's symbols would cut into smaller pieces
    instead."""
    from fairseq.data import Dictionary

    symbols = set(Dictionary.load(dict_path).symbols)
    missing = [s for s, (_, kind) in spm["pieces"].items()
               if kind in (NORMAL, USER_DEFINED, BYTE) and s not in symbols]
    if missing:
        raise T5ExportError(
            f"{dict_path}: {len(missing)} pieces of {spm_path} are not in it "
            f"({', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}); fairseq reads them "
            "as <unk>, which the exported tokenizer cannot reproduce (fairseq-sum-prepare writes "
            "every piece into dict.txt)")


def _oniguruma(text):
    return "".join(f"\\x{{{ord(c):x}}}" for c in text)


def unmatchable_splits(symbols, kept, spm_path):
    """Letter pairs ``(a, b)`` between which the tokenizer cuts the text, so that no symbol that
    sentencepiece never emits (``<s>``, ``</s>``, ``<pad>``, ``<unk>``, ``<extra_id_N>``,
    ``madeupwordNNNN``: control, unknown or no piece at all) is read whole from the text;
    sentencepiece reads them as ordinary pieces. A ``tokenizers`` Unigram model matches every entry
    of its vocabulary; sentencepiece's lattice holds its normal and user-defined pieces only
    (``model_interface.cc``).

    Each symbol gets the first pair of adjacent letters ``ab`` in it that no emitted piece contains,
    and where ``a`` or ``b`` is a piece of its own: then no piece of sentencepiece's segmentation
    crosses the cut, and no run of unknown letters (one ``<unk>`` for sentencepiece) is cut in two,
    so the ids are sentencepiece's wherever the pair occurs. A symbol without such a pair is
    refused."""
    inside = {p[i:i + 2] for p in kept for i in range(len(p) - 1)}  # letter pairs of the pieces
    single = {p for p in kept if len(p) == 1}
    pairs = []
    for symbol in symbols:
        if symbol in kept:
            continue
        pair = next(((a, b) for a, b in zip(symbol, symbol[1:])
                     if (a in single or b in single) and a + b not in inside), None)
        if pair is None:
            raise T5ExportError(
                f"{spm_path}: the dictionary symbol {symbol!r} is no piece of this sentencepiece "
                "model (which reads it in text as ordinary pieces), and the exported tokenizer "
                "cannot keep it from being read whole without changing other pieces (every pair "
                "of its letters is inside a piece, or both letters are unknown)")
        if pair not in pairs:
            pairs.append(pair)
    return pairs


def build_tokenizer(symbols, spm, special, spm_path="spm.model"):
    """A ``tokenizers.Tokenizer`` giving ``symbols``' ids (HF order) to the pieces of the
    sentencepiece model ``spm`` (:func:`read_unigram_model`), as ``SentencePieceProcessor.encode``
    cuts text; ``special``: the symbols that are special tokens (pad, eos, unk, ...), ``</s>``
    appended to every sequence. The text ``<s>``, ``</s>``, ``<pad>``, ``<unk>`` (and any symbol
    sentencepiece never emits) is read as ordinary pieces, as fairseq's sentencepiece step reads it:
    the Unigram model cannot match these symbols (:func:`unmatchable_splits`), and
    ``tokenizer_config.json`` sets ``split_special_tokens`` so that transformers does not pick the
    special ones out of the text (with ``tokenizers`` alone: ``tokenizer.encode_special_tokens =
    True``)."""
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers,
                            processors)
    from tokenizers.models import Unigram

    kept = {s: v for s, v in spm["pieces"].items() if v[1] in (NORMAL, USER_DEFINED, BYTE)}
    pairs = unmatchable_splits(symbols, kept, spm_path)
    # sentencepiece scores an unknown letter min(normal scores) - 10; tokenizers takes the minimum
    # over its whole vocabulary: symbols it cannot match get the normal minimum, changing nothing
    normal = [score for score, kind in kept.values() if kind == NORMAL]
    floor = min(normal or [score for score, _ in kept.values()])
    vocab = [(s, kept[s][0] if s in kept else floor) for s in symbols]
    tok = Tokenizer(
        Unigram(vocab, unk_id=symbols.index("<unk>"), byte_fallback=spm["byte_fallback"]))
    steps = [normalizers.Precompiled(spm["charsmap"])] if spm["charsmap"] else []
    # spaces only: sentencepiece leaves other whitespace to the charsmap
    if spm["remove_extra_whitespaces"]:
        steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""),
                  normalizers.Replace(Regex(" {2,}"), " ")]
    if spm["escape_whitespaces"]:
        steps.append(normalizers.Replace(" ", "\u2581"))
    # Metaspace adds no prefix to text already starting with "▁"; sentencepiece does
    if spm["add_dummy_prefix"]:
        steps.append(normalizers.Replace(Regex("\\A\u2581"), "\u2581\u2581"))
    tok.normalizer = normalizers.Sequence(steps)
    pre = []
    if spm["add_dummy_prefix"]:
        pre.append(pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always",
                                            split=False))
    user = sorted((s for s, (_, kind) in kept.items() if kind == USER_DEFINED), key=len,
                  reverse=True)
    if user:  # sentencepiece emits user-defined pieces (<sep>) whole wherever they occur
        pre.append(pre_tokenizers.Split(Regex("|".join(re.escape(s) for s in user)),
                                        behavior="isolated"))
    if pairs:  # a cut after `a` where `b` follows
        pattern = "|".join(f"{_oniguruma(a)}(?={_oniguruma(b)})" for a, b in pairs)
        pre.append(pre_tokenizers.Split(Regex(pattern), behavior="merged_with_previous"))
    if pre:
        tok.pre_tokenizer = pre_tokenizers.Sequence(pre)
    steps = [decoders.Replace("\u2581", " ")
             ] + ([decoders.ByteFallback()] if spm["byte_fallback"] else [])
    if spm["add_dummy_prefix"]:
        steps += [decoders.Fuse(), decoders.Strip(content=" ", left=1, right=0)]
    tok.decoder = decoders.Sequence(steps)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in special])
    eos = symbols.index("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)])
    return tok


# ----------------------------------------------------------------------------- model card


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_scores(path):
    """The JSON that ``fairseq-sum-score --json`` writes (ROUGE-1/2/L F1 at least)."""
    try:
        with open(path, encoding="utf-8") as f:
            scores = json.load(f)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise T5ExportError(f"--scores {path}: cannot read it as JSON ({e})") from None
    if not isinstance(scores, dict) or not all(
            _number(scores.get(k)) for k in ("rouge1", "rouge2", "rougeL")):
        raise T5ExportError(
            f"--scores {path}: not the output of fairseq-sum-score --json (rouge1, rouge2, rougeL "
            "numbers expected)")
    return scores


def _score_rows(scores):
    rows = []
    for key, label in (("rouge1", "ROUGE-1 F1"), ("rouge2", "ROUGE-2 F1"),
                       ("rougeL", "ROUGE-L F1 (summary-level)"), ("meteor", "METEOR")):
        value = scores.get(key)
        if not _number(value):
            continue
        if key == "meteor" and scores.get("meteor_impl"):
            label += f" ({scores['meteor_impl']})"
        ci = scores.get(key + "_ci")
        ci = (f"{100 * ci[0]:.2f} - {100 * ci[1]:.2f}" if isinstance(ci, list) and len(ci) == 2
              and all(_number(c) for c in ci) else "")
        rows.append(f"| {label} | {100 * value:.2f} | {ci} |")
    return rows


# transformers versions the export was loaded and checked with (tests/test_t5_export.py runs both)
TRANSFORMERS_TRIED = ("4.57.6", "5.24.0")
# the Hub's license identifiers: apache-2.0, mit, cc-by-nc-4.0, other
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")
# ISO 639-1 / 639-3, optionally a region: en, pt-BR
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*")
# a dataset id of the Hub: cnn_dailymail, abisee/cnn_dailymail
HUB_DATASET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")


def _is_local_path(value, data=None):
    value = str(value)
    return (os.path.isabs(value) or value.startswith(("~", "./", "../", ".\\"))
            or os.path.exists(value)
            or (data is not None and os.path.exists(os.path.join(data, value))))


def without_local_paths(obj):
    """``obj`` (JSON) with every absolute or ``./``, ``../``, ``~`` path, alone or after ``--flag=``
    inside a string, cut to its last component: the exported folder is meant to be shared."""
    if isinstance(obj, dict):
        return {k: without_local_paths(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [without_local_paths(v) for v in obj]
    if not isinstance(obj, str):
        return obj

    def cut(match):
        flag, value = match.group(1) or "", match.group(2)
        if os.path.isabs(value) or value.startswith(("~", "./", "../")):
            return flag + (os.path.basename(value.rstrip("/\\")) or value)
        return match.group(0)

    return re.sub(r"(--[\w-]+=)?([^\s=]+)", cut, obj)


def card_metadata(prepare, data, license=None, languages=None, datasets=None):
    """``(license, languages, datasets)`` of the model card's header: the flags (``--license``,
    ``--language``, ``--dataset``) checked, else what the data's ``prepare_args.json`` records: the
    Moses language of a ``sum_moses`` pipeline, ``--hf-dataset`` when it is a Hub id and no local
    path. Without ``--license`` the card says ``other`` (the weights' terms follow the training
    data's)."""
    if license is not None and not LICENSE_ID.fullmatch(license):
        raise T5ExportError(f"--license {license!r}: not a license identifier of the Hugging Face "
                            "Hub (lower case, e.g. apache-2.0, mit, cc-by-4.0, other)")
    for code in languages or []:
        if not LANGUAGE_CODE.fullmatch(code):
            raise T5ExportError(f"--language {code!r}: not a language code (ISO 639-1 or -3, "
                                "e.g. en, de, pt-BR)")
    for name in datasets or []:
        if not HUB_DATASET.fullmatch(name):
            raise T5ExportError(f"--dataset {name!r}: not a Hugging Face dataset id (NAME or "
                                "OWNER/NAME)")
    prepare = prepare if isinstance(prepare, dict) else {}
    moses = prepare.get("tokenizer") if isinstance(prepare.get("tokenizer"), dict) else {}
    options = prepare.get("options") if isinstance(prepare.get("options"), dict) else {}
    if not languages and moses.get("tokenizer") == "sum_moses" and LANGUAGE_CODE.fullmatch(
            str(moses.get("moses_lang", "en"))):
        languages = [str(moses.get("moses_lang", "en"))]
    recorded = options.get("hf_dataset")
    if not datasets and isinstance(recorded, str) and HUB_DATASET.fullmatch(recorded) \
            and not _is_local_path(recorded, data):
        datasets = [recorded]
    return license or "other", list(languages or []), list(datasets or [])


def _source(options, datasets):
    """Where the data came from, in words, without local paths."""
    if options.get("hf_dataset"):
        name = options["hf_dataset"]
        if name in datasets:
            config = options.get("hf_config")
            config = f" (configuration `{config}`)" if config else ""
            return f"the Hugging Face dataset `{name}`{config} (`--hf-dataset`)"
        return "a local Hugging Face dataset (`--hf-dataset`)"
    if options.get("jsonl_dir"):
        return "local JSONL files (`--jsonl-dir`)"
    if options.get("parallel_dir"):
        return "local .source/.target files (`--parallel-dir`)"
    return "not recorded"


def model_card(name, ckpt, args, info, prepare, cfg, t5_vocab, scores, scores_path,
               meta=("other", [], []), max_len=MAX_LEN_B):
    """The ``README.md`` of the export: a YAML header (``license``, ``language``, ``datasets``: see
    :func:`card_metadata`) and what the checkpoint, data and scores record, with no local path."""
    license, languages, datasets = meta
    options = (prepare or {}).get("options", {}) if isinstance(prepare, dict) else {}
    options = without_local_paths(options) if isinstance(options, dict) else {}
    stats = (prepare or {}).get("stats", {}) if isinstance(prepare, dict) else {}
    header = ["---", f"license: {license}"]
    header += (["language:"] + [f"- {code}" for code in languages]) if languages else []
    header += (["datasets:"] + [f"- {d}" for d in datasets]) if datasets else []
    lines = header + [
        "library_name: transformers", "pipeline_tag: summarization", "tags:", "- t5",
        "- summarization", "- fairseq-sum-plugins", "---", "",
        f"# {name}: a T5 v1.0 summarizer trained with fairseq-sum-plugins", "",
        f"Exported by `fairseq-sum-export-hf` from `{os.path.basename(ckpt)}` (`--arch "
        f"{args.arch}`, T5 cell, {cfg['num_layers']}+{cfg['num_decoder_layers']} layers, d_model "
        f"{cfg['d_model']}, d_ff {cfg['d_ff']}, {cfg['num_heads']} heads of d_kv {cfg['d_kv']}, "
        f"vocabulary {cfg['vocab_size']}).", "",
        "## Training", "",
        f"- updates: {info['updates']}"
        + (f" (epoch {info['epoch']})" if info.get("epoch") else ""),
        f"- data: prepared by `fairseq-sum-prepare` from {_source(options, datasets)}" if options
        else "- data: no preparation options recorded"
        + (" (T5's vocabulary, `fairseq-sum-import-t5`)" if t5_vocab else ""),
    ]
    for key in ("vocab_size", "max_src_tokens", "max_tgt_tokens", "spm_model", "lowercase"):
        if options.get(key) is not None:
            lines.append(f"- `--{key.replace('_', '-')}`: {options[key]}")
    examples = (stats.get("tokenize") or {}) if isinstance(stats, dict) else {}
    if isinstance(examples, dict) and examples:
        counts = ", ".join(f"{split} {v.get('examples')}" for split, v in examples.items()
                           if isinstance(v, dict) and v.get("examples") is not None)
        if counts:
            lines.append(f"- examples: {counts}")
    lines += ["", "## Scores", ""]
    if scores:
        scorer = backend_name(scores.get("scorer", DEFAULT_BACKEND), False)
        lines += [f"From `{os.path.basename(scores_path)}` (`fairseq-sum-score --json`, scorer "
                  f"`{scorer}`), this model decoded with fairseq:", "",
                  "| metric | score | 95% CI |", "|---|---|---|", *_score_rows(scores)]
    else:
        lines.append("No scores were given to the export (`--scores`).")
    moses = (prepare.get("tokenizer") if isinstance(prepare, dict) else None) or {}
    lines += ["", "## Input text", ""]
    if moses.get("tokenizer") == "sum_moses":
        lower = ", lower-cased" if moses.get("sum_lowercase") else ""
        split = (" with ` <sep> ` between sentences"
                 if moses.get("sum_sentence_split", True) else "")
        lines += [
            "The training text was Moses-tokenized (language "
            f"`{moses.get('moses_lang', 'en')}`{lower}){split} before sentencepiece. The tokenizer "
            "here is that sentencepiece model only: give it text prepared the same way, e.g.", "",
            "```python",
            "from fairseq_sum_plugins.text import tokenize_document  # or sacremoses by hand",
            f"text = tokenize_document(raw, lang={moses.get('moses_lang', 'en')!r}, "
            f"lowercase={bool(moses.get('sum_lowercase'))}, "
            f"sentence_split={moses.get('sum_sentence_split', True)!r}, "
            f"splitter={moses.get('sentence_splitter', 'regex')!r})", "```", "",
            "Summaries come out in the same form (Moses tokens, `<sep>` between sentences).", ""
        ]
    else:
        lines += ["Raw text, as the training data was encoded"
                  + (" (T5's own sentencepiece vocabulary and ids)." if t5_vocab else "."), ""]
    lines += [
        "## Use", "",
        "```python", "from transformers import AutoTokenizer, T5ForConditionalGeneration",
        "tok = AutoTokenizer.from_pretrained(PATH)",
        "model = T5ForConditionalGeneration.from_pretrained(PATH)",
        "ids = tok([text], return_tensors='pt').input_ids",
        "print(tok.batch_decode(model.generate(ids, num_beams=4), skip_special_tokens=True))",
        "```", "",
        f"Checked with transformers {' and '.join(TRANSFORMERS_TRIED)}. "
        "`pipeline(\"summarization\")` exists in transformers 4.x only (5.x removed it); the "
        "tokenizer and `generate` lines above work in both.", "",
        "Teacher-forced log-probabilities equal the fairseq checkpoint's (float32) and greedy "
        "decoding gives the same tokens; `generation_config.json` decodes as `fairseq-generate` "
        f"does by default (never the pad token, no `</s>` first, at most {max_len} tokens: "
        f"`--max-len-b {MAX_LEN_B}` within the checkpoint's `max_target_positions` "
        f"{getattr(args, 'max_target_positions', '?')} minus one). The tokenizer reads `<s>`, "
        "`</s>`, `<pad>` and `<unk>` in the text as ordinary pieces, as fairseq's sentencepiece "
        "step does, and truncates only when asked (`truncation=True`: at "
        f"{getattr(args, 'max_source_positions', '?')} tokens, the checkpoint's "
        "`max_source_positions`).", "",
        "Files: `dict.txt` and `spm.model` are the fairseq dictionary and sentencepiece model of "
        f"the data, `{PREPARE_ARGS}` its preparation record (local paths cut to their last "
        "component).", "",
        "## License", "",
        (f"`{license}`, as given to the export (`--license`)." if license != "other" else
         "Not given to the export (`--license`): `other` in the header. The weights' terms follow "
         "those of the training data (and, for a fine-tuned import, of the original model)."), "",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- export


def _new_file_mode():
    """The mode ``open(path, "w")`` gives a new file (0o644 under the usual umask 022)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def export(ckpt, out_dir, data=None, scores=None, force=False, license=None, languages=None,
           datasets=None):
    """Writes the HF directory ``out_dir``; returns its config (dict). ``license``, ``languages``,
    ``datasets``: the model card's header (:func:`card_metadata`)."""
    card_metadata({}, None, license, languages, datasets)  # bad flags stop before any work
    try:
        import tokenizers  # noqa: F401
        from safetensors.torch import save_file
    except ImportError as e:
        raise T5ExportError(f"the export needs the tokenizers and safetensors packages ({e}): "
                            "pip install transformers safetensors (the extra 't5')") from None

    args, info = read_checkpoint_args(ckpt)
    check_exportable(args, ckpt)
    refuse_non_empty(out_dir, force)
    score_table = read_scores(scores) if scores else None
    data = data_dir_of(ckpt, info, data)
    try:
        prepare = read_prepare_args(data) or {}
    except ValueError as e:
        raise T5ExportError(str(e)) from None
    spm_path = (prepare.get("bpe") or {}).get("sentencepiece_model")
    record = os.path.join(data, PREPARE_ARGS)
    if not prepare:
        raise T5ExportError(
            f"{record}: not found; the tokenizer is built from the sentencepiece model that "
            "this record of fairseq-sum-prepare (or fairseq-sum-import-t5) names")
    if not spm_path or not os.path.isfile(spm_path):
        raise T5ExportError(
            f"{record}: names no sentencepiece model that exists ({spm_path}); the tokenizer "
            "is built from it")
    for inputs in (data, os.path.dirname(os.path.abspath(spm_path))):
        # before anything is written
        if os.path.isdir(out_dir) and os.path.samefile(out_dir, inputs):
            raise T5ExportError(
                f"{out_dir}: is the folder of the export's inputs ({inputs}: dict.txt, spm.model, "
                f"{PREPARE_ARGS}), which the export would overwrite; write to another OUT_DIR")
    spm = read_unigram_model(spm_path)
    check_pieces_in_dictionary(spm, os.path.join(data, "dict.src.txt"), spm_path)
    model, task = load_model(ckpt, data)
    max_len = fairseq_max_len(model, ckpt)
    dictionary = task.source_dictionary
    order = t5_order(dictionary, spm_path)
    untied, _ = output_head(model, args, ckpt)
    cfg = hf_config(model, args, order, dictionary, untied)
    weights = hf_state_dict(model, cfg, order, ckpt, untied)
    symbols = [dictionary[f] for f in order]
    special = [dictionary[i] for i in range(dictionary.nspecial)]  # <s> <pad> </s> <unk>
    extra = [s for s in symbols if re.fullmatch(r"<extra_id_\d+>", s)]
    tokenizer = build_tokenizer(symbols, spm, special + extra, spm_path)

    recorded = _raw_prepare_args(data)
    # options and stats of the whole record, the validated sections of read_prepare_args
    card_record = {**(recorded if isinstance(recorded, dict) else {}), **prepare}
    meta = card_metadata(card_record, data, license, languages, datasets)

    os.makedirs(out_dir, exist_ok=True)
    save_file(weights, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    pad, eos = cfg["pad_token_id"], cfg["eos_token_id"]
    generation = dict(decoder_start_token_id=pad, eos_token_id=eos, pad_token_id=pad,
                      suppress_tokens=[pad], begin_suppress_tokens=[eos],
                      max_length=max_len + 1)  # the decoder start token + fairseq's tokens
    tokenizer.save(os.path.join(out_dir, "tokenizer.json"))
    tokenizer_config = dict(tokenizer_class="PreTrainedTokenizerFast", eos_token="</s>",
                            pad_token="<pad>", unk_token="<unk>",
                            model_max_length=int(getattr(args, "max_source_positions", 512)),
                            clean_up_tokenization_spaces=False,
                            model_input_names=["input_ids", "attention_mask"],
                            split_special_tokens=True)  # "</s>" in the text: pieces, as in fairseq
    if extra:
        tokenizer_config["additional_special_tokens"] = extra
    for name, obj in (("config.json", cfg), ("generation_config.json", generation),
                      ("tokenizer_config.json", tokenizer_config),
                      ("special_tokens_map.json",
                       {k: v for k, v in tokenizer_config.items()
                        if k.endswith("_token") or k == "additional_special_tokens"})):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False)
            f.write("\n")
    dictionary.save(os.path.join(out_dir, "dict.txt"))
    shutil.copyfile(spm_path, os.path.join(out_dir, "spm.model"))
    written = list(WRITTEN[:-1])  # and PREPARE_ARGS below, where there is a record
    if recorded is not None:  # the record, local paths cut (the folder is meant to be shared)
        with open(os.path.join(out_dir, PREPARE_ARGS), "w", encoding="utf-8") as f:
            json.dump(without_local_paths(recorded), f, indent=2, ensure_ascii=False)
            f.write("\n")
        written.append(PREPARE_ARGS)
    card = model_card(os.path.basename(os.path.abspath(out_dir)), ckpt, args, info, card_record,
                      cfg, order[0] != 0, score_table, scores, meta, max_len)
    with open(os.path.join(out_dir, "README.md"), "w", encoding="utf-8") as f:
        f.write(card)
    print(f"| model card header: license {meta[0]}"
          + ("" if license else " (--license not given)")
          + f", language {', '.join(meta[1]) or '(none: --language)'}"
          + ("" if languages or not meta[1] else " (the data's Moses language)")
          + f", datasets {', '.join(meta[2]) or '(none: --dataset)'}"
          + ("" if datasets or not meta[2] else " (the data's --hf-dataset, taken as a Hub id)"))
    mode = _new_file_mode()  # safetensors writes 0o600; a file kept by --force keeps its own mode
    for name in written:
        os.chmod(os.path.join(out_dir, name), mode)
    return cfg


def _raw_prepare_args(data):
    """The whole ``prepare_args.json`` (options and stats for the model card), or None."""
    path = os.path.join(data, PREPARE_ARGS)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def get_parser():
    parser = argparse.ArgumentParser(prog="fairseq-sum-export-hf",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "checkpoint",
        help="a T5-cell checkpoint (fairseq-train's checkpoint_*.pt, or an import's model.pt)")
    parser.add_argument("out_dir",
                        help="the Hugging Face directory to write (must not exist or be empty)")
    parser.add_argument("--data", help="the data folder the checkpoint was trained on (default: "
                                       "the one it records)")
    parser.add_argument("--scores", metavar="FILE",
                        help="fairseq-sum-score --json output, reported in the model card")
    parser.add_argument("--force", action="store_true", help="write into a non-empty OUT_DIR")
    card = parser.add_argument_group("model card header (README.md)")
    card.add_argument("--license", metavar="ID",
                      help="a Hugging Face Hub license identifier, e.g. apache-2.0, cc-by-nc-4.0 "
                      "(default: other; the weights' terms follow the training data's)")
    card.add_argument("--language", metavar="CODE[,CODE]",
                      type=lambda v: [c.strip() for c in v.split(",")],
                      help="language codes, e.g. en (default: the Moses language the data was "
                      "prepared with; none for raw-text data)")
    card.add_argument("--dataset", metavar="ID", action="append", dest="datasets",
                      help="a Hugging Face dataset id the model was trained on, repeatable "
                      "(default: the data's --hf-dataset when that is a Hub id, not a local path)")
    return parser


# what an export writes into OUT_DIR (prepare_args.json where the data folder has one)
WRITTEN = ("model.safetensors", "tokenizer.json", "config.json", "generation_config.json",
           "tokenizer_config.json", "special_tokens_map.json", "dict.txt", "spm.model",
           "README.md", PREPARE_ARGS)


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    # the data folder a checkpoint records (no --data) is known once it is loaded: export() checks
    refuse_clobber(parser, reads=[("CHECKPOINT", args.checkpoint), ("--data", args.data),
                                  ("--scores", args.scores)],
                   writes=[("OUT_DIR", os.path.join(args.out_dir, name)) for name in WRITTEN])
    try:
        cfg = export(args.checkpoint, args.out_dir, data=args.data, scores=args.scores,
                     force=args.force, license=args.license, languages=args.language,
                     datasets=args.datasets)
    except T5ExportError as e:
        sys.exit(f"fairseq-sum-export-hf: error: {e}")
    print(f"| wrote {args.out_dir}: T5ForConditionalGeneration "
          f"({cfg['num_layers']}+{cfg['num_decoder_layers']} layers, d_model {cfg['d_model']}, "
          f"vocabulary {cfg['vocab_size']}), tokenizer.json, README.md")
    return cfg


def cli_main():
    main()
