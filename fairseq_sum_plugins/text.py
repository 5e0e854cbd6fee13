"""Text normalisation shared by preprocessing and inference.

A document becomes one line of Moses tokens in which sentences are separated by the
:data:`SENT_SEP` token::

    "The cat sat. It purred."  ->  "The cat sat . <sep> It purred ."

The same function is exposed to fairseq as the tokenizer ``sum_moses``
(:mod:`.tasks.sum_moses`) so that ``fairseq-interactive --tokenizer sum_moses --bpe
sentencepiece`` sees raw text exactly as the training data was seen by ``fairseq-sum-prepare``.

Sentence splitting (:func:`split_sentences`) is the one function that ``fairseq-sum-prepare``, the
converters (truncation, ``--stats``), the ``sum_moses`` tokenizer and ``fairseq-sum-score
--split-sentences`` call, each with the same option ``--sentence-splitter``:

* ``regex`` (default): the rule-based splitter of this module, linear in the text, no dependency;
* ``pysbd``: the pysbd package (pragmatic sentence boundary rules, 0.3.x), more rules for
  abbreviations, numbers and lists, but orders of magnitude slower than ``regex`` and super-linear
  in the length of a line: use ``fairseq-sum-prepare --workers``.

Both keep "p.m. Then", "U.K. The", "$5m. iPhone" as two sentences and "No. 5" as one. The
default is ``regex`` because it is fast enough to split whole corpora and documents of any length;
data prepared with one splitter should be decoded with the same one (``prepare_args.json`` records
it in ``interactive_args``).
"""
import re
from functools import lru_cache

SENT_SEP = "<sep>"
SENTENCE_SPLITTERS = ("regex", "pysbd")
DEFAULT_SENTENCE_SPLITTER = "regex"

# A sentence may end at ``.``, ``!`` or ``?`` (optionally followed by closing quotes/brackets)
# when whitespace and an optional opening quote/bracket follow; the lookahead captures the next
# word, which decides in _is_boundary.
_BOUNDARY = re.compile(r"""[.!?]+['"\u2019\u201d)\]]*(?=\s+['"\u2018\u201c(\[]?(\w+))""")
# "U.S", "e.g", "Ph.D", "p.m" (the word before the final period): letters with inner periods; a
# number such as "1.5m" or "9.58" is not an abbreviation
_DOTTED = re.compile(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}")
_LAST_WORD = re.compile(r"(\S+?)[.!?]+['\"\u2019\u201d)\]]*$")
# "iPhone", "eBay", "iOS": a lower-case start that still begins a sentence
_CAMEL = re.compile(r"[a-z]{1,2}[A-Z]")
# Words that usually end with a period without ending the sentence (compared lower-cased).
ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt vs etc al fig figs eq eqs sec ch vol pp ed eds approx dept
    est inc ltd co corp gen gov sen rep rev lt col sgt capt cmdr adm jan feb mar apr jun jul aug
    sep sept oct nov dec""".split()
)
# Capitalised abbreviations that end no sentence when a number follows ("No. 5", "Art. 3";
# "he said no. 5 came" ends one).
NUMBER_ABBREVIATIONS = frozenset("no nos art arts ref tel p".split())
# Dotted abbreviations that never end a sentence ("e.g. The" continues it).
INNER_ABBREVIATIONS = frozenset("e.g i.e cf".split())
# Words that start a sentence after a dotted abbreviation ("at 5 p.m. Then", "the U.K. The"),
# while "the U.S. President" stays one sentence.
SENTENCE_STARTERS = frozenset(
    """the then he she it its they we i you but and this that these those there their his her
    our in on at after before when while if as so yet however meanwhile also a an one some
    many most all no not now still later""".split()
)
_SPACES = re.compile(r"\s+")


def _last_word(chunk):
    """The word before the final period of ``chunk``, or None when it does not end in one."""
    if not chunk.rstrip("'\"\u2019\u201d)]").endswith("."):
        return None
    m = _LAST_WORD.search(chunk)
    return None if m is None else m.group(1).lstrip("'\"\u2018\u201c([")


def _is_boundary(chunk, following):
    """True when a sentence ends after ``chunk`` (ending in ``.``/``!``/``?``) before the word
    ``following``."""
    starts = following[0].isupper() or following[0].isdigit() or bool(_CAMEL.match(following))
    if not starts:
        return False
    word = _last_word(chunk)
    if word is None:  # "!" or "?"
        return True
    low = word.lower()
    if low in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):  # "Mr.", "J." (initial)
        return False
    if low in NUMBER_ABBREVIATIONS and word[0].isupper() and following[0].isdigit():  # "No. 5"
        return False
    if _DOTTED.fullmatch(word):  # "U.S. President" (no), "p.m. Then" (yes)
        return low not in INNER_ABBREVIATIONS and following.lower() in SENTENCE_STARTERS
    return True


def _split_line_regex(line):
    sents, start = [], 0
    for m in _BOUNDARY.finditer(line):
        if _is_boundary(line[start:m.end()], m.group(1)):
            sents.append(line[start:m.end()])
            start = m.end()
    sents.append(line[start:])
    return sents


@lru_cache(maxsize=None)
def _pysbd_segmenter(lang):
    try:
        import pysbd
    except ImportError:
        raise ImportError("--sentence-splitter pysbd needs the pysbd package: pip install pysbd "
                          "(or use --sentence-splitter regex)") from None
    try:
        return pysbd.Segmenter(language=lang, clean=False)
    except ValueError as e:
        raise ValueError(
            f"--sentence-splitter pysbd: language {lang!r} not supported ({e})") from None


def _line_splitter(splitter, lang):
    if splitter in (None, "regex"):
        return _split_line_regex
    if splitter == "pysbd":
        return _pysbd_segmenter(lang).segment
    raise ValueError(
        f"--sentence-splitter must be one of {', '.join(SENTENCE_SPLITTERS)}, got {splitter!r}")


def split_sentences(text, splitter=DEFAULT_SENTENCE_SPLITTER, lang="en"):
    """Split a document into sentences.

    A list (or tuple) is taken as the sentences themselves. A string that contains ``<sep>`` is
    taken as already segmented: it is cut at the markers (and newlines) only. Any other string is
    cut at newlines, then every line by ``splitter`` (``"regex"`` or ``"pysbd"``, see the module
    docstring). The regex splitter puts a boundary after ``.``/``!``/``?`` (plus closing
    quotes/brackets) when whitespace and an upper-case letter, digit, camel-cased word ("iPhone") or
    opening quote/bracket follow, unless the period ends a known abbreviation (``Mr.``, ``Fig.``,
    ``etc.``), a single-letter initial (``J.``), ``No.``/``Art.`` before a number, or a dotted
    acronym (``U.S.``, ``e.g.``) that a usual sentence start ("The", "Then", "He", ...) does not
    follow. Whitespace is collapsed and empty sentences are dropped.
    """
    if isinstance(text, (list, tuple)):
        pieces = [str(s) for s in text]
    elif SENT_SEP in str(text):
        pieces = [part for line in str(text).splitlines() for part in line.split(SENT_SEP)]
    else:
        split_line = _line_splitter(splitter, lang)
        pieces = [sent for line in str(text).splitlines() if line.strip()
                  for sent in split_line(line)]
    sents = (_SPACES.sub(" ", s).strip() for s in pieces)
    return [s for s in sents if s]


def segment_document(doc, sentence_split=True, splitter=DEFAULT_SENTENCE_SPLITTER, lang="en"):
    """The segments of ``doc``: its sentences, or one segment when ``sentence_split`` is off."""
    sents = split_sentences(doc, splitter, lang)
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


def tokenize_document(doc, lang="en", lowercase=False, sentence_split=True,
                      splitter=DEFAULT_SENTENCE_SPLITTER):
    """Tokenize a document (string or list of sentences) into one line.

    Sentences (see :func:`split_sentences`, by ``splitter``) are joined with ``" <sep> "``; with
    ``sentence_split=False`` the whole document is a single segment without separators.
    """
    segments = segment_document(doc, sentence_split, splitter, lang)
    toks = (tokenize_sentence(s, lang, lowercase) for s in segments)
    return f" {SENT_SEP} ".join(t for t in toks if t)


def detokenize(text, lang="en"):
    """Inverse of :func:`tokenize_document`: Moses-detokenize every ``<sep>`` segment."""
    _, _, detok = _moses(lang)
    segs = (detok.detokenize(seg.split(), return_str=True).strip() for seg in text.split(SENT_SEP))
    return f" {SENT_SEP} ".join(s for s in segs if s)

