"""``fairseq-sum-import-t5 HF_DIR OUT_DIR``: a Hugging Face T5 (v1.0) directory as a fairseq checkpoint.

Reads ``HF_DIR/config.json``, ``HF_DIR/model.safetensors`` (or ``pytorch_model.bin``) and
``HF_DIR/spiece.model``; writes into ``OUT_DIR``:

* ``model.pt``: a fairseq checkpoint of ``sum_transformer`` with ``--cell t5`` (arch ``t5_small`` /
  ``t5_base`` or T5 dims given explicitly), loadable with ``torch.load(weights_only=True)``;
* ``dict.txt`` (and ``dict.src.txt`` / ``dict.tgt.txt``): the fairseq dictionary of T5's vocabulary;
* ``spm.model`` (a copy of ``spiece.model``) and ``prepare_args.json`` (sentencepiece on raw text, no
  Moses), so the hub interface reads raw text with T5's sentencepiece::

      SumTransformerModel.from_pretrained(OUT_DIR, "model.pt", data_name_or_path=".")

Binarize a corpus with T5's own vocabulary: ``fairseq-sum-prepare ... --spm-model OUT_DIR/spm.model
--dict OUT_DIR/dict.txt``; fine-tune with ``fairseq-train DATA/bin --restore-file OUT_DIR/model.pt
--reset-optimizer --reset-dataloader --reset-meters --reset-lr-scheduler --arch t5_base_gated ...``:
parameters the checkpoint lacks (gate, TPR bindings, focus, saliency, Topic Assistant) are
initialised fresh and each is named in the log (:meth:`SumTransformerModel.upgrade_state_dict_named`).

**Ids.** T5: ``<pad>`` 0 (also the decoder's start token), ``</s>`` 1, ``<unk>`` 2, sentencepiece
pieces 3..n-1, ``<extra_id_{E-1}>`` .. ``<extra_id_0>`` at n..n+E-1 (E = 100 or the rows left),
unused rows up to ``vocab_size - 1``. fairseq's Dictionary: ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2,
``<unk>`` 3, then the file's symbols. The map is one rotation, ``fairseq = (t5 + 1) mod V``: pad,
eos, unk and every piece keep their meaning, and fairseq's ``<s>`` (unused in summarization) takes
T5's last row, an unused padding row (unused rows appear as ``madeupwordNNNN``). The embedding rows
are rotated likewise, so the softmax runs over the same V rows as T5's. fairseq starts decoding from
``</s>``; the T5 cell embeds that first token with the pad row, T5's decoder start.

**Refused** with a message: T5 v1.1 / flan / mT5 configs (``feed_forward_proj`` ``gated-gelu``, an
untied head), attention inner dims other than ``d_model`` (``num_heads * d_kv != d_model``), a
sentencepiece model whose pad/eos/unk ids are not 0/1/2, and a vocabulary with no spare row for
fairseq's ``<s>``. The cross-attention ``relative_attention_bias`` of old T5 checkpoints is unused by
T5 (and by today's HF) and is dropped.
"""
import argparse
import json
import logging
import os
import shutil
import sys

import torch

logger = logging.getLogger(__name__)

IMPORT_MARKER = "t5_import_marker"  # state_dict key: missing parameters are initialised fresh


class T5ImportError(Exception):
    """Bad HF directory or an unsupported T5 variant; the message names the file."""


def read_config(hf_dir):
    path = os.path.join(hf_dir, "config.json")
    if not os.path.exists(path):
        raise T5ImportError(f"{path}: not found (a Hugging Face T5 directory holds config.json)")
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    act = cfg.get("feed_forward_proj", "relu")
    if act != "relu" or cfg.get("tie_word_embeddings", True) is False:
        raise T5ImportError(f"{path}: feed_forward_proj={act!r}, tie_word_embeddings="
                           f"{cfg.get('tie_word_embeddings', True)}: a T5 v1.1 / flan / mT5 model (gated-GELU, untied "
                           "head) is not the T5 v1.0 cell of --cell t5; only v1.0 checkpoints (t5-small, t5-base, ...) "
                           "can be imported")
    if cfg["num_heads"] * cfg["d_kv"] != cfg["d_model"]:
        raise T5ImportError(f"{path}: num_heads * d_kv = {cfg['num_heads'] * cfg['d_kv']} != d_model {cfg['d_model']}; "
                           "the T5 cell's attention has inner dim d_model")
    if abs(cfg.get("layer_norm_epsilon", 1e-6) - 1e-6) > 1e-12:
        raise T5ImportError(f"{path}: layer_norm_epsilon {cfg['layer_norm_epsilon']} (the T5 cell uses 1e-6)")
    return cfg


def read_weights(hf_dir):
    st, pt = os.path.join(hf_dir, "model.safetensors"), os.path.join(hf_dir, "pytorch_model.bin")
    if os.path.exists(st):
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise T5ImportError(f"{st}: reading it needs the safetensors package (pip install safetensors)") from None
        return load_file(st)
    if os.path.exists(pt):
        return torch.load(pt, map_location="cpu", weights_only=True)
    raise T5ImportError(f"{hf_dir}: neither model.safetensors nor pytorch_model.bin")


def dictionary_symbols(spm_path, vocab_size):
    """fairseq dictionary symbols after the 4 specials: T5 ids 3 .. V-2 (see "Ids" above)."""
    import sentencepiece as spm

    if not os.path.exists(spm_path):
        raise T5ImportError(f"{spm_path}: not found (T5's sentencepiece model)")
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    n = sp.get_piece_size()
    if (sp.pad_id(), sp.eos_id(), sp.unk_id()) != (0, 1, 2):
        raise T5ImportError(f"{spm_path}: pad/eos/unk ids {(sp.pad_id(), sp.eos_id(), sp.unk_id())}, T5 uses (0, 1, 2)")
    if vocab_size <= n:
        raise T5ImportError(f"{spm_path}: {n} pieces but vocab_size {vocab_size}: no spare row for fairseq's <s>")
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


def convert_state_dict(weights, cfg):
    """HF T5 names -> ``sum_transformer`` (T5 cell) names; embedding rows rotated by one."""
    emb = torch.roll(weights["shared.weight"].float(), 1, dims=0)
    out = {"encoder.embed_tokens.weight": emb, "decoder.embed_tokens.weight": emb}
    if "lm_head.weight" in weights and not torch.equal(weights["lm_head.weight"], weights["shared.weight"]):
        raise T5ImportError("lm_head.weight differs from shared.weight: an untied head is not T5 v1.0")

    def w(name):
        return weights[name].float()

    for side, n_layers in (("encoder", cfg["num_layers"]), ("decoder", cfg.get("num_decoder_layers") or cfg["num_layers"])):
        for i in range(n_layers):
            hf, fs = f"{side}.block.{i}.layer.", f"{side}.layers.{i}."
            att = hf + "0.SelfAttention."
            out[fs + "self_attn.in_proj.weight"] = torch.cat([w(att + "q.weight"), w(att + "k.weight"), w(att + "v.weight")])
            out[fs + "self_attn.out_proj.weight"] = w(att + "o.weight")
            out[fs + "self_attn_sublayer.layer_norm.weight"] = w(hf + "0.layer_norm.weight")
            ff = 1
            if side == "decoder":
                att = hf + "1.EncDecAttention."
                out[fs + "cross_attn.q_proj.weight"] = w(att + "q.weight")
                out[fs + "cross_attn.kv_proj.weight"] = torch.cat([w(att + "k.weight"), w(att + "v.weight")])
                out[fs + "cross_attn.out_proj.weight"] = w(att + "o.weight")
                out[fs + "cross_attn_sublayer.layer_norm.weight"] = w(hf + "1.layer_norm.weight")
                ff = 2
            out[fs + "ffn.fc1.weight"] = w(f"{hf}{ff}.DenseReluDense.wi.weight")
            out[fs + "ffn.fc2.weight"] = w(f"{hf}{ff}.DenseReluDense.wo.weight")
            out[fs + "ffn_sublayer.layer_norm.weight"] = w(f"{hf}{ff}.layer_norm.weight")
        out[f"{side}.relative_position.relative_attention_bias.weight"] = w(
            f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight")
        out[f"{side}.layer_norm.weight"] = w(f"{side}.final_layer_norm.weight")
    return out


def arch_flags(cfg):
    """``--arch`` and dims of the matching T5-cell preset."""
    dec_layers = cfg.get("num_decoder_layers") or cfg["num_layers"]
    dims = (cfg["d_model"], cfg["d_ff"], cfg["num_layers"], dec_layers, cfg["num_heads"])
    arch = {(512, 2048, 6, 6, 8): "t5_small", (768, 3072, 12, 12, 12): "t5_base"}.get(dims, "t5_small")
    drop = str(cfg.get("dropout_rate", 0.1))
    return ["--arch", arch, "--encoder-embed-dim", str(dims[0]), "--encoder-ffn-embed-dim", str(dims[1]),
            "--encoder-layers", str(dims[2]), "--decoder-layers", str(dims[3]), "--encoder-attention-heads", str(dims[4]),
            "--decoder-embed-dim", str(dims[0]), "--decoder-ffn-embed-dim", str(dims[1]),
            "--decoder-attention-heads", str(dims[4]),
            "--t5-relative-buckets", str(cfg.get("relative_attention_num_buckets", 32)),
            "--t5-relative-max-distance", str(cfg.get("relative_attention_max_distance", 128)),
            "--t5-cross-position-bias", "False",
            "--dropout", drop, "--attention-dropout", drop, "--activation-dropout", drop]


def training_args(out_dir, cfg):
    from fairseq import options

    import fairseq_sum_plugins  # noqa: F401  (registers the task and the model)

    argv = [out_dir, "--task", "summarization", *arch_flags(cfg), "--criterion", "cross_entropy",
            "--optimizer", "adam", "--lr", "0.0001", "--source-lang", "src", "--target-lang", "tgt"]
    return options.parse_args_and_arch(options.get_training_parser(), argv)


def write_dictionary(out_dir, symbols):
    lines = "".join(f"{s} {len(symbols) - i}\n" for i, s in enumerate(symbols))
    for name in ("dict.txt", "dict.src.txt", "dict.tgt.txt"):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(lines)


def write_prepare_args(out_dir):
    info = dict(tokenizer={}, bpe=dict(bpe="sentencepiece", sentencepiece_model="spm.model"),
                interactive_args="--bpe sentencepiece --sentencepiece-model " + os.path.join(out_dir, "spm.model"),
                imported_from="t5")
    with open(os.path.join(out_dir, "prepare_args.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")


def import_t5(hf_dir, out_dir):
    """Writes ``OUT_DIR/model.pt`` and the dictionaries; returns the checkpoint's args."""
    cfg = read_config(hf_dir)
    symbols = dictionary_symbols(os.path.join(hf_dir, "spiece.model"), cfg["vocab_size"])
    weights = read_weights(hf_dir)
    if weights["shared.weight"].size(0) != cfg["vocab_size"]:
        raise T5ImportError(f"{hf_dir}: shared.weight has {weights['shared.weight'].size(0)} rows, "
                           f"config.json vocab_size {cfg['vocab_size']}")
    try:
        state = convert_state_dict(weights, cfg)
    except KeyError as e:
        raise T5ImportError(f"{hf_dir}: weight {e} missing (not a T5 v1.0 checkpoint?)") from None
    dropped = [k for k in weights if "EncDecAttention.relative_attention_bias" in k]
    if dropped:
        logger.info(f"dropping {dropped}: T5 does not use a cross-attention position bias")
    state[IMPORT_MARKER] = torch.ones(())
    os.makedirs(out_dir, exist_ok=True)
    write_dictionary(out_dir, symbols)
    shutil.copyfile(os.path.join(hf_dir, "spiece.model"), os.path.join(out_dir, "spm.model"))
    write_prepare_args(out_dir)
    args = training_args(out_dir, cfg)
    torch.save({
        "args": args, "model": state, "last_optimizer_state": None,
        "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "FairseqAdam",
                               "lr_scheduler_state": {"best": None}, "num_updates": 0}],
        "extra_state": {"epoch": 1, "train_iterator": {"epoch": 1, "iterations_in_epoch": 0}, "val_loss": None},
    }, os.path.join(out_dir, "model.pt"))
    return args


def main(argv=None):
    parser = argparse.ArgumentParser(prog="fairseq-sum-import-t5", description=__doc__.split("\n\n")[0])
    parser.add_argument("hf_dir", help="Hugging Face T5 directory: config.json, model.safetensors or "
                                       "pytorch_model.bin, spiece.model")
    parser.add_argument("out_dir", help="output: model.pt, dict.txt, spm.model, prepare_args.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    saved = import_t5(args.hf_dir, args.out_dir)
    print(f"| wrote {os.path.join(args.out_dir, 'model.pt')} (--arch {saved.arch}, d_model {saved.encoder_embed_dim}, "
          f"{saved.encoder_layers}+{saved.decoder_layers} layers) and {os.path.join(args.out_dir, 'dict.txt')}")


def cli_main():
    try:
        main()
    except T5ImportError as e:
        sys.exit(f"fairseq-sum-import-t5: error: {e}")
