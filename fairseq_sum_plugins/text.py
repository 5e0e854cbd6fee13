"""Text normalisation shared by preprocessing and inference.

A document becomes one line of Moses tokens in which sentences are separated by the
:data:`SENT_SEP` token::

    "The cat sat. It purred."  ->  "The cat sat . <sep> It purred ."

The same function is exposed to fairseq as the tokenizer ``sum_moses`` so that
``fairseq-interactive --tokenizer sum_moses --bpe sentencepiece`` sees raw text exactly as
the training data was seen by ``fairseq-sum-prepare``.
"""
import re
from dataclasses import dataclass, field
from functools import lru_cache

SENT_SEP = "<sep>"

# A sentence ends at ``.``, ``!`` or ``?`` (optionally followed by closing quotes/brackets)
# when whitespace, an optional opening quote/bracket and an upper-case letter (any script: "É",
# "Ö") or a digit follow; the lookahead captures that character, checked in _split_line.
_BOUNDARY = re.compile(r"""[.!?]+['"\u2019\u201d)\]]*(?=\s+['"\u2018\u201c(\[]?(\w))""")
# "U.S", "e.g", "Ph.D" (the word before the final period): letters with inner periods; a number
# such as "1.5m" or "9.58" is not an abbreviation
_DOTTED = re.compile(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}")
_LAST_WORD = re.compile(r"(\S+?)[.!?]+['\"\u2019\u201d)\]]*$")
# Words that usually end with a period without ending the sentence (compared lower-cased).
ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt vs etc al fig figs eq eqs sec ch vol pp ed eds approx dept
    est inc ltd co corp gen gov sen rep rev lt col sgt capt cmdr adm jan feb mar apr jun jul aug
    sep sept oct nov dec""".split()
)
_SPACES = re.compile(r"\s+")


def _is_abbreviation(chunk):
    """True when the text ``chunk`` (ending in a period) ends with an abbreviation."""
    if not chunk.rstrip("'\"\u2019\u201d)]").endswith("."):
        return False
    m = _LAST_WORD.search(chunk)
    if m is None:
        return False
    word = m.group(1).lstrip("'\"\u2018\u201c([")
    # "Mr.", "J." (initial), "U.S." / "e.g." (inner periods)
    return word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or bool(_DOTTED.fullmatch(word))


def _split_line(line):
    sents, start = [], 0
    for m in _BOUNDARY.finditer(line):
        following = m.group(1)
        if not (following.isupper() or following.isdigit()) or _is_abbreviation(line[start:m.end()]):
            continue
        sents.append(line[start:m.end()])
        start = m.end()
    sents.append(line[start:])
    return sents


def split_sentences(text):
    """Split a document into sentences.

    A list (or tuple) is taken as the sentences themselves. A string that contains ``<sep>``
    is taken as already segmented: it is cut at the markers (and newlines) only. Any other
    string is cut at newlines, then every line by a rule-based splitter: a boundary follows
    ``.``/``!``/``?`` (plus closing quotes/brackets) when whitespace and an upper-case letter,
    digit or opening quote/bracket follow, unless the period ends a known abbreviation (``Mr.``,
    ``Fig.``, ``etc.``), a single-letter initial (``J.``) or a dotted acronym (``U.S.``, ``e.g.``).
    Whitespace is collapsed and empty sentences are dropped.
    """
    if isinstance(text, (list, tuple)):
        pieces = [str(s) for s in text]
    elif SENT_SEP in str(text):
        pieces = [part for line in str(text).splitlines() for part in line.split(SENT_SEP)]
    else:
        pieces = [sent for line in str(text).splitlines() for sent in _split_line(line)]
    sents = (_SPACES.sub(" ", s).strip() for s in pieces)
    return [s for s in sents if s]


def segment_document(doc, sentence_split=True):
    """The segments of ``doc``: its sentences, or one segment when ``sentence_split`` is off."""
    sents = split_sentences(doc)
    if not sentence_split:
        return [" ".join(sents)] if sents else []
    return sents


@lru_cache(maxsize=None)
def _moses(lang):
    from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer

    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang), MosesDetokenizer(lang=lang)


def tokenize_sentence(sent, lang="en", lowercase=False):
    """Moses-normalise and tokenize one sentence (no escaping of ``&<>'"``)."""
    norm, tok, _ = _moses(lang)
    out = tok.tokenize(norm.normalize(sent), escape=False, return_str=True)
    out = _SPACES.sub(" ", out).strip()
    return out.lower() if lowercase else out


def tokenize_document(doc, lang="en", lowercase=False, sentence_split=True):
    """Tokenize a document (string or list of sentences) into one line.

    Sentences (see :func:`split_sentences`) are joined with ``" <sep> "``; with
    ``sentence_split=False`` the whole document is a single segment without separators.
    """
    toks = (tokenize_sentence(s, lang, lowercase) for s in segment_document(doc, sentence_split))
    return f" {SENT_SEP} ".join(t for t in toks if t)


def detokenize(text, lang="en"):
    """Inverse of :func:`tokenize_document`: Moses-detokenize every ``<sep>`` segment."""
    _, _, detok = _moses(lang)
    segs = (detok.detokenize(seg.split(), return_str=True).strip() for seg in text.split(SENT_SEP))
    return f" {SENT_SEP} ".join(s for s in segs if s)


FairseqDataclass = None
# fairseq is optional for the text utilities themselves (the scorer and the converters need none)
try:
    from fairseq.data.encoders import TOKENIZER_REGISTRY, register_tokenizer
    from fairseq.dataclass import FairseqDataclass
except ImportError:
    pass

if FairseqDataclass is not None:

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

    class SumMosesTokenizer(object):
        """Document tokenizer of ``fairseq-sum-prepare``: Moses + ``<sep>`` between sentences."""

        def __init__(self, cfg):
            self.cfg = cfg

        def encode(self, x: str) -> str:
            return tokenize_document(
                x,
                lang=self.cfg.moses_lang,
                lowercase=self.cfg.sum_lowercase,
                sentence_split=self.cfg.sum_sentence_split,
            )

        def decode(self, x: str) -> str:
            return detokenize(x, lang=self.cfg.moses_lang)

    if "sum_moses" not in TOKENIZER_REGISTRY:
        register_tokenizer("sum_moses", dataclass=SumMosesTokenizerConfig)(SumMosesTokenizer)
