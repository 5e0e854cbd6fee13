"""What a data folder records about its own encoding, read without trusting it.

* :func:`dictionary_checksum`: sha256 of a fairseq dictionary's symbols in index order. The task
  stores it in the model args (so in every checkpoint) and refuses to decode data binarized with
  another dictionary, even one of the same size; the topic model stores it beside Phi.
* :func:`read_prepare_args`: the tokenizer and BPE that ``fairseq-sum-prepare`` recorded in
  ``DATA/prepare_args.json``. The file is data, never code or configuration: only the keys the
  plugin writes are read (``tokenizer``: ``tokenizer`` = ``sum_moses``, ``moses_lang``,
  ``sum_lowercase``, ``sum_sentence_split``, ``sentence_splitter`` = ``regex`` | ``pysbd``; ``bpe``:
  ``bpe`` = ``sentencepiece``, ``sentencepiece_model``, a file name inside DATA, no path), each
  value is validated (a bad one is a ``ValueError`` naming the file and key), and every other key
  (e.g. ``user_dir``, which fairseq would import as a module) is ignored with a warning.
* :func:`prepared_limits`: the most pieces ``fairseq-sum-prepare`` kept of a source and of a
  reference (``options`` of ``prepare_args.json``), and :func:`cut_pieces`, its cut.
* :func:`text_encoding_for`: the tokenizer / BPE for raw text when the command line gives none
  (``fairseq-interactive``, the hub): the recorded ones, else none for a word-level dictionary, else
  a clear error (a sentencepiece or GPT-2 dictionary needs its BPE).
"""
import hashlib
import json
import logging
import os
import re

logger = logging.getLogger(__name__)

PREPARE_ARGS = "prepare_args.json"
# the values fairseq-sum-prepare writes (preprocess/prepare.py, step_finalize)
_TOKENIZERS = ("sum_moses",)
_BPES = ("sentencepiece",)
_LANG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})?")
_BOOL_KEYS = ("sum_lowercase", "sum_sentence_split")
_SPLITTERS = ("regex", "pysbd")


def dictionary_checksum(dictionary):
    """sha256 of the dictionary's symbols in index order (two dictionaries of the same size but
    other symbols or order differ)."""
    return hashlib.sha256("\n".join(dictionary.symbols).encode("utf-8")).hexdigest()


def looks_like_gpt2_ids(dictionary):
    """True when most non-special symbols are integers: a GPT-2 BPE dictionary (BART's
    ``dict.txt``)."""
    syms = dictionary.symbols[dictionary.nspecial:]
    return bool(syms) and sum(s.isdigit() for s in syms) > len(syms) / 2


def looks_like_sentencepiece(dictionary):
    """True when symbols start with sentencepiece's word mark ``▁`` (at least one, and 1% of them:
    a word-level dictionary has none; a small sentencepiece vocabulary may be mostly characters)."""
    syms = dictionary.symbols[dictionary.nspecial:]
    marked = sum(s.startswith("\u2581") for s in syms)
    return marked > 0 and marked >= len(syms) / 100


def _bad(path, key, value, expected):
    return ValueError(
        f"{path}: {key} = {value!r} is not valid ({expected}); this file is written by "
        "fairseq-sum-prepare: re-run it rather than editing the file")


def _choice(path, name, section, key, choices, out):
    """Copies ``section[key]`` into ``out`` when present, refusing a value outside ``choices``."""
    if key in section:
        if section[key] not in choices:
            raise _bad(path, f"{name}.{key}", section[key], f"one of {list(choices)}")
        out[key] = section[key]


def _tokenizer_section(path, section):
    out = {}
    _choice(path, "tokenizer", section, "tokenizer", _TOKENIZERS, out)
    if "moses_lang" in section:
        lang = section["moses_lang"]
        if not isinstance(lang, str) or not _LANG.fullmatch(lang):
            raise _bad(path, "tokenizer.moses_lang", lang, "a language code such as 'en'")
        out["moses_lang"] = lang
    for key in _BOOL_KEYS:
        if key in section:
            if not isinstance(section[key], bool):
                raise _bad(path, f"tokenizer.{key}", section[key], "true or false")
            out[key] = section[key]
    _choice(path, "tokenizer", section, "sentence_splitter", _SPLITTERS, out)
    if out and "tokenizer" not in out:
        raise _bad(path, "tokenizer.tokenizer", None, "the tokenizer's name is missing")
    return out


def _bpe_section(path, section, data_dir):
    out = {}
    _choice(path, "bpe", section, "bpe", _BPES, out)
    if "sentencepiece_model" in section:
        name = section["sentencepiece_model"]
        # a file of the data folder: no absolute path, no '..', no sub-folder
        if (not isinstance(name, str) or not name or os.path.basename(name) != name
                or name in (".", "..")):
            raise _bad(path, "bpe.sentencepiece_model", name, "a file name inside the data folder")
        out["sentencepiece_model"] = os.path.join(os.path.abspath(data_dir), name)
    if out.get("bpe") == "sentencepiece" and "sentencepiece_model" not in out:
        raise _bad(path, "bpe.sentencepiece_model", None, "sentencepiece needs its model file")
    if out and "bpe" not in out:
        raise _bad(path, "bpe.bpe", None, "the BPE's name is missing")
    return out


def read_prepare_args(data_dir):
    """``{"tokenizer": {...}, "bpe": {...}}`` recorded in ``DATA/prepare_args.json`` (validated, the
    sentencepiece model as an absolute path inside DATA), or ``None`` when there is no such file.
    Keys the plugin does not write are ignored (logged); a bad value is a ``ValueError``."""
    path = os.path.join(data_dir, PREPARE_ARGS)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(recorded, dict):
        raise ValueError(f"{path}: a JSON object expected")
    out = {}
    for name, allowed, read in (
        ("tokenizer", ("tokenizer", "moses_lang", "sentence_splitter") + _BOOL_KEYS,
         lambda s: _tokenizer_section(path, s)),
        ("bpe", ("bpe", "sentencepiece_model"), lambda s: _bpe_section(path, s, data_dir)),
    ):
        section = recorded.get(name, {})
        if not isinstance(section, dict):
            raise _bad(path, name, section, "a JSON object")
        ignored = sorted(k for k in section if k not in allowed)
        if ignored:
            logger.warning(f"{path}: ignoring {name}.{', {}.'.format(name).join(ignored)} "
                           f"(only {', '.join(allowed)} are read)")
        out[name] = read({k: v for k, v in section.items() if k in allowed})
    return out


def prepared_limits(data):
    """``{"src": n, "tgt": n}``: the most pieces ``fairseq-sum-prepare`` kept of a source and of a
    reference (its ``--max-src-tokens`` / ``--max-tgt-tokens``, read from
    ``DATA/prepare_args.json``; a side it did not cut, or a folder it did not write, is left out);
    a ``ValueError`` naming the file for a value that is not a whole number."""
    path = os.path.join(data, PREPARE_ARGS)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            options = json.load(f).get("options", {})
    except (ValueError, UnicodeDecodeError, AttributeError) as e:
        raise ValueError(f"{path}: not the JSON object fairseq-sum-prepare writes ({e})") from None
    out = {}
    for side in ("src", "tgt"):
        value = options.get(f"max_{side}_tokens") if isinstance(options, dict) else None
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{path}: options.max_{side}_tokens = {value!r} is not a whole number")
        if value > 0:
            out[side] = value
    return out


def cut_pieces(pieces, limit, separators=("<sep>", "\u2581")):
    """At most ``limit`` pieces, not ending on a separator: ``fairseq-sum-prepare``'s cut of its
    splits (preprocess/prepare.py ``truncate``, a floor above; tests/test_inspect.py holds the
    two equal)."""
    if limit <= 0 or len(pieces) <= limit:
        return pieces
    cut = pieces[:limit]
    while cut and cut[-1] in separators:
        cut.pop()
    return cut or pieces[:limit]


def text_encoding_for(data_dir, dictionary, tokenizer_given, bpe_given, flag_style=True):
    """``(tokenizer_args, bpe_args)`` (dicts, ``None`` when none) for raw text when the command line
    gives ``tokenizer_given`` / ``bpe_given`` (bools): what it lacks comes from
    :func:`read_prepare_args`. Without a recorded BPE, a dictionary of sentencepiece pieces or GPT-2
    ids is a ``ValueError`` (its tokens would be ``<unk>``); a word-level dictionary needs none."""
    recorded = read_prepare_args(data_dir) or {}
    tok = None if tokenizer_given else (recorded.get("tokenizer") or None)
    bpe = None if bpe_given else (recorded.get("bpe") or None)
    if not bpe_given and bpe is None:
        need = ("sentencepiece" if looks_like_sentencepiece(dictionary)
                else "gpt2" if looks_like_gpt2_ids(dictionary) else None)
        if need is not None:
            how = (("--bpe sentencepiece --sentencepiece-model SPM (and --tokenizer sum_moses)"
                    if need == "sentencepiece"
                    else "--bpe gpt2 --gpt2-encoder-json E --gpt2-vocab-bpe V")
                   if flag_style else f"bpe='{need}', ...")
            raise ValueError(
                f"the dictionary of {data_dir} holds {need} tokens, but no BPE was given and "
                f"{os.path.join(data_dir, PREPARE_ARGS)} records none: raw text would become <unk> "
                f"tokens; pass {how}")
    return tok, bpe


def text_encoder(data_dir, dictionary):
    """A function ``text -> LongTensor`` (ending in EOS) that encodes raw text as ``data_dir``
    records it (:func:`text_encoding_for`: its tokenizer and BPE; a relative sentencepiece model is
    a file of ``data_dir``), with ``dictionary``'s symbols and no new ones."""
    from argparse import Namespace

    from fairseq.data import encoders

    tok, bpe = text_encoding_for(data_dir, dictionary, False, False)
    if bpe and bpe.get("sentencepiece_model") and not os.path.isabs(bpe["sentencepiece_model"]):
        bpe = dict(bpe, sentencepiece_model=os.path.join(data_dir, bpe["sentencepiece_model"]))
    tokenizer = encoders.build_tokenizer(Namespace(**tok)) if tok else None
    bpe = encoders.build_bpe(Namespace(**bpe)) if bpe else None

    def encode(text):
        line = tokenizer.encode(text) if tokenizer else text
        line = bpe.encode(line) if bpe else line
        return dictionary.encode_line(line, add_if_not_exist=False).long()

    return encode


def hub_text_kwargs(model_name_or_path, data_name_or_path, kwargs):
    """``from_pretrained`` keyword arguments completed with the validated tokenizer / BPE of
    ``DATA/prepare_args.json`` (given ones win; a relative ``sentencepiece_model`` is a file of
    DATA); nothing else of that file reaches fairseq's configuration."""
    data_dir = data_name_or_path
    if data_name_or_path.startswith("."):
        data_dir = os.path.join(model_name_or_path, data_name_or_path)
    kwargs = dict(kwargs)
    dictionary = None
    for name in ("dict.src.txt", "dict.txt"):
        if os.path.isfile(os.path.join(data_dir, name)):
            from fairseq.data import Dictionary

            dictionary = Dictionary.load(os.path.join(data_dir, name))
            break
    tok_given, bpe_given = kwargs.get("tokenizer") is not None, kwargs.get("bpe") is not None
    if dictionary is not None:
        tok, bpe = text_encoding_for(data_dir, dictionary, tok_given, bpe_given, flag_style=False)
    else:
        recorded = read_prepare_args(data_dir) or {}
        tok = None if tok_given else recorded.get("tokenizer")
        bpe = None if bpe_given else recorded.get("bpe")
    for key, value in {**(tok or {}), **(bpe or {})}.items():
        kwargs.setdefault(key, value)
    if kwargs.get("bpe") == "sentencepiece" and not os.path.isabs(
            kwargs.get("sentencepiece_model", "/")):
        kwargs["sentencepiece_model"] = os.path.join(data_dir, kwargs["sentencepiece_model"])
    return kwargs
