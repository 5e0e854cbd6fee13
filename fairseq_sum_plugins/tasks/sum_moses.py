"""The ``sum_moses`` tokenizer of fairseq (``fairseq-interactive --tokenizer sum_moses --bpe
sentencepiece``): :func:`~fairseq_sum_plugins.text.tokenize_document`, the text normalisation of
``fairseq-sum-prepare``, as a fairseq tokenizer. Imports fairseq, so it is registered with the rest
of the plugin (:mod:`fairseq_sum_plugins`), apart from the fairseq-free
:mod:`fairseq_sum_plugins.text`.
"""
from dataclasses import dataclass, field

from fairseq.data.encoders import TOKENIZER_REGISTRY, register_tokenizer
from fairseq.dataclass import FairseqDataclass

from ..text import (DEFAULT_SENTENCE_SPLITTER, SENTENCE_SPLITTERS, detokenize, split_sentences,
                    tokenize_document)


@dataclass
class SumMosesTokenizerConfig(FairseqDataclass):
    moses_lang: str = field(default="en", metadata={"help": "language for sacremoses"})
    sum_lowercase: bool = field(default=False, metadata={"help": "lower-case the text"})
    sum_sentence_split: bool = field(
        default=True,
        metadata={
            "help": "split sentences and join them with <sep> (fairseq turns a bool that "
            "defaults to True into a flag that sets it to False)"
        },
    )
    sentence_splitter: str = field(
        default=DEFAULT_SENTENCE_SPLITTER,
        metadata={"help": "sentence splitter, as fairseq-sum-prepare --sentence-splitter: "
                  + " | ".join(SENTENCE_SPLITTERS)},
    )


class SumMosesTokenizer(object):
    """Document tokenizer of ``fairseq-sum-prepare``: Moses + ``<sep>`` between sentences."""

    def __init__(self, cfg):
        self.cfg = cfg
        # early error: an unknown splitter, pysbd not installed or without the language
        split_sentences("A check.", getattr(cfg, "sentence_splitter", None) or "regex",
                        cfg.moses_lang)

    def encode(self, x: str) -> str:
        return tokenize_document(
            x,
            lang=self.cfg.moses_lang,
            lowercase=self.cfg.sum_lowercase,
            sentence_split=self.cfg.sum_sentence_split,
            splitter=getattr(self.cfg, "sentence_splitter", None) or DEFAULT_SENTENCE_SPLITTER,
        )

    def decode(self, x: str) -> str:
        return detokenize(x, lang=self.cfg.moses_lang)


if "sum_moses" not in TOKENIZER_REGISTRY:
    register_tokenizer("sum_moses", dataclass=SumMosesTokenizerConfig)(SumMosesTokenizer)
