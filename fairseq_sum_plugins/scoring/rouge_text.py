"""What ROUGE reads of a summary: cleanup into sentences, and the words and tokens it counts.

Cleanup (:func:`clean_summary`, every scorer and every entry point): undo sentencepiece / ``@@``
BPE, drop special tokens, split sentences on ``<sep>``, newlines and any extra ``seps`` (the
``--sentence-sep`` tokens, e.g. See et al.'s ``<q>``), Moses-detokenize. ``--split-sentences``
first splits a summary with the rule-based splitter (:func:`split_summary`,
:func:`fairseq_sum_plugins.text.split_sentences`), for outputs without boundaries (BART's).

Tokens (:func:`rouge_tokens`): lower-cased runs of letters and digits of every script
(``state-of-the-art`` is four tokens, as in ROUGE-1.5.5 and rouge-score); each Han / kana character
is a token of its own (Chinese and Japanese write no spaces). An ASCII token longer than 3
characters is replaced by its WordNet 2.0 exception lemma when it has one (``were -> be``, ``said ->
say``, ``children -> child``: ROUGE-1.5.5's ``-m`` lookup, data in
``data/wordnet-2.0-exceptions.txt``, the four ``.exc`` files of ROUGE-1.5.5 merged in
:data:`EXCEPTION_FILE_ORDER`), else stemmed by ROUGE-1.5.5's own Porter stemmer
(:mod:`fairseq_sum_plugins.scoring.stemmer`, ported from its Perl: ``says -> sai``, ``environmental
-> environ``; rouge-score's default tokenizer uses nltk's extended Porter, ``says -> say``); other
tokens are kept as they are. :func:`rouge_words` are the same tokens before stemming (METEOR, novel
n-grams and ROUGE-1.5.5's input read them).
"""
import functools
import re
from pathlib import Path

from .score_inputs import warn
from .stemmer import stem as porter_stem
from ..text import DEFAULT_SENTENCE_SPLITTER, split_sentences

EXCEPTION_FILE_ORDER = ("adv", "noun", "verb", "adj")  # a later file's entry wins
# sentence separators of other toolkits (See et al.'s pointer-generator and PreSumm write " <q> ")
KNOWN_SEPARATORS = ("<q>", "<t>", "</t>", "<n>", "##SENT##")

_SEP_RE = re.compile(r"(?:<|&lt;)\s*sep\s*(?:>|&gt;)|\r?\n")
_SPECIAL_RE = re.compile(r"(?:<|&lt;)\s*(?:unk|pad|/s|s)\s*(?:>|&gt;)")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
ASCII_WORD = re.compile(r"[a-z0-9]+")  # a word ROUGE-1.5.5 reads (and stems) itself


# --------------------------------------------------------------------------------------- cleanup
@functools.lru_cache(maxsize=None)
def _detokenizer(lang="en"):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


@functools.lru_cache(maxsize=None)
def _separator_re(seps):
    extra = "".join(f"|{re.escape(s)}" for s in seps)
    return re.compile(_SEP_RE.pattern + extra)


def clean_summary(text, detok=True, seps=()):
    """Return the sentences of one generated / reference summary, ready for ROUGE.

    Sentences end at ``<sep>``, newlines and each string of ``seps`` (e.g. ``("<q>",)``)."""
    if "\u2581" in text:  # sentencepiece pieces: join them, "▁" marks a word start
        text = text.replace(" ", "").replace("\u2581", " ")
    text = re.sub(r"@@( |$)", "", text)  # subword-nmt BPE left in (no --remove-bpe)
    sents = []
    for sent in _separator_re(tuple(seps)).split(text):
        tokens = _SPECIAL_RE.sub(" ", sent).split()
        if tokens:
            sents.append(_detokenizer().detokenize(tokens) if detok else " ".join(tokens))
    return [s for s in sents if s.strip()]


def split_summary(text, splitter=DEFAULT_SENTENCE_SPLITTER):
    """``--split-sentences``: the sentences of ``text`` by
    :func:`fairseq_sum_plugins.text.split_sentences`."""
    return split_sentences(text, splitter)


def as_sentences(summary, detok=True, seps=()):
    """:func:`clean_summary` of a string, or of each sentence of a list, flattened."""
    if isinstance(summary, str):
        return clean_summary(summary, detok, seps)
    return [s for sent in summary for s in clean_summary(sent, detok, seps)]


def known_separators(summaries):
    """The :data:`KNOWN_SEPARATORS` that occur as words in ``summaries`` (strings)."""
    found = set()
    for s in summaries:
        words = set(s.split())
        found.update(sep for sep in KNOWN_SEPARATORS if sep in words)
    return sorted(found)


def sentence_separators(seps, summaries):
    """``--sentence-sep`` (``seps``, or None) as a tuple, warning about the
    :data:`KNOWN_SEPARATORS` found in ``summaries`` without it."""
    seps = tuple(seps or ())
    unseen = [s for s in known_separators(summaries) if s not in seps]
    if unseen:
        warn(f"{', '.join(unseen)} occur in the summaries and are scored as words; if they end "
             f"sentences, pass --sentence-sep '{unseen[0]}'")
    return seps


# ------------------------------------------------------------------------------------ tokenizer
@functools.lru_cache(maxsize=None)
def wordnet_exceptions():
    """{inflected form: lemma} of ROUGE-1.5.5's WordNet 2.0 exception list (module docstring)."""
    path = Path(__file__).with_name("data") / "wordnet-2.0-exceptions.txt"
    table = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                word, lemma = line.split()
                table[word] = lemma
    return table


@functools.lru_cache(maxsize=1 << 16)
def _stem(token):
    if len(token) <= 3 or not ASCII_WORD.fullmatch(token):
        return token
    lemma = wordnet_exceptions().get(token)
    return lemma if lemma is not None else porter_stem(token)


def rouge_words(text):
    """The lower-cased words ROUGE counts (no stemming); see the module docstring."""
    return _TOKEN_RE.findall(text.lower())


def rouge_tokens(text):
    """:func:`rouge_words` with WordNet exception lemmas / Porter stems (ASCII words > 3 chars)."""
    return [_stem(t) for t in rouge_words(text)]


def countable(sents):
    """True when cleaned sentences ``sents`` hold a word ROUGE counts."""
    return any(rouge_words(s) for s in sents)


class RougeTokenizer:
    """``rouge_score`` tokenizer interface over :func:`rouge_tokens`."""

    def tokenize(self, text):
        return rouge_tokens(text)
