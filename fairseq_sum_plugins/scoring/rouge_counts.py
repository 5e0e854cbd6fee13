"""ROUGE-N and ROUGE-L counting of the default backend ``rouge155-py``, in Python and without
dependencies (ROUGE-1.5.5's own figures: :mod:`.rouge155`).

The scorer's first backend scored with Google's ``rouge_score`` package over this package's
ROUGE-1.5.5 tokenizer (:func:`~.rouge_text.rouge_tokens`), whence its old name ``rouge-score``;
importing that package (with nltk and absl) took longer than scoring a test set, and its name made
the logs read as Google's tokenizer. The counting here is the same arithmetic, operation for
operation (tests/test_rouge_counts.py compares every score with ``rouge_score``'s on random and
real pairs, bit for bit), so the scores equal ROUGE-1.5.5's per document as before:

* ROUGE-N (:func:`rouge_n`): clipped n-gram overlap over the whole summary (n-grams run across
  sentence ends, as in ROUGE-1.5.5); recall = overlap / reference n-grams, precision = overlap /
  hypothesis n-grams (each denominator at least 1), F1 = 2PR / (P + R) (0 where P + R = 0).
* ROUGE-L summary-level (:func:`rouge_lsum`, Lin 2004 section 3.2, ROUGE-1.5.5's ``-f A``
  ROUGE-L): for each reference sentence the union of its longest common subsequences with every
  hypothesis sentence; a token of the union is a hit while both summaries have an unmatched copy of
  it; recall = hits / reference tokens, precision = hits / hypothesis tokens. Where a sentence pair
  has several longest common subsequences, the one read back from the end of the table (a
  hypothesis step when the table's left cell is larger, else a reference step) is used, as in
  ``rouge_score``.
* plain ROUGE-L (:func:`rouge_l`): one LCS of the concatenated token lists (``rougeL_plain``; not
  what papers report).

Sentences are the lines of the ``"\\n"``-joined summary that are not empty, as ``rouge_score``
splits them.

Speed: the LCS table is computed a column at a time as one integer of ``len(ref)`` bits
(:func:`lcs_columns`; Crochemore et al. 2001's bit-parallel LCS: bit ``i`` of column ``j`` is 0
where ``table[i + 1][j] = table[i][j] + 1``), so a column costs a few big-integer operations instead
of ``len(ref)`` Python steps; any cell is a population count (:func:`_cell`), and the read-back
visits only the cells on its path. :func:`lcs_table` keeps the dynamic programme cell by cell, the
reference the tests compare both with (every cell, every read-back).
"""
import hashlib
import json
from collections import Counter, OrderedDict, namedtuple

from .rouge_text import rouge_tokens

Score = namedtuple("Score", ["precision", "recall", "fmeasure"])
ZERO = Score(0, 0, 0)


def fmeasure(precision, recall):
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def ngrams(tokens, n):
    """Counter of the ``n``-grams (tuples) of a token list."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def rouge_n(ref_tokens, hyp_tokens, n):
    ref, hyp = ngrams(ref_tokens, n), ngrams(hyp_tokens, n)
    overlap = sum(min(count, hyp[gram]) for gram, count in ref.items())
    precision = overlap / max(sum(hyp.values()), 1)
    recall = overlap / max(sum(ref.values()), 1)
    return Score(precision, recall, fmeasure(precision, recall))


def lcs_table(ref, hyp):
    """The dynamic-programming table of LCS lengths, ``(len(ref) + 1) x (len(hyp) + 1)``."""
    table = [[0] * (len(hyp) + 1)]
    for r in ref:
        above, row = table[-1], [0]
        for j, h in enumerate(hyp):
            row.append(above[j] + 1 if r == h else max(above[j + 1], row[j]))
        table.append(row)
    return table


def lcs_columns(ref, hyp):
    """The columns of :func:`lcs_table` as integers of ``len(ref)`` bits: ``columns[j]`` has bit
    ``i`` clear where ``table[i + 1][j] - table[i][j] = 1`` (set where it is 0), so ``table[i][j]``
    is the number of clear bits below bit ``i`` (:func:`_cell`). Column ``j + 1`` from column ``j``
    and the bits ``M`` of ``ref``'s positions holding ``hyp[j]``: ``U = V & M``, ``V' = (V + U) |
    (V - U)`` (Crochemore, Iliopoulos, Pinzon and Reid, 2001), cut to ``len(ref)`` bits."""
    where = {}
    for i, token in enumerate(ref):
        where[token] = where.get(token, 0) | (1 << i)
    full = (1 << len(ref)) - 1
    v, columns = full, [full]
    for token in hyp:
        u = v & where.get(token, 0)
        v = ((v + u) | (v - u)) & full
        columns.append(v)
    return columns


def _cell(columns, i, j):
    """``lcs_table(ref, hyp)[i][j]`` from :func:`lcs_columns`."""
    return i - (columns[j] & ((1 << i) - 1)).bit_count()


def lcs_length(ref, hyp):
    """The length of a longest common subsequence (``lcs_table(ref, hyp)[-1][-1]``)."""
    return _cell(lcs_columns(ref, hyp), len(ref), len(hyp)) if hyp else 0


def read_back(ref, hyp, cell):
    """Positions in ``ref`` of one longest common subsequence with ``hyp``, read back from the
    table's last cell (module docstring): ``cell(i, j)`` is ``lcs_table(ref, hyp)[i][j]``."""
    i, j, out = len(ref), len(hyp), []
    while i > 0 and j > 0:
        if ref[i - 1] == hyp[j - 1]:
            out.append(i - 1)
            i, j = i - 1, j - 1
        elif cell(i, j - 1) > cell(i - 1, j):
            j -= 1
        else:
            i -= 1
    return out[::-1]


def lcs_positions(ref, hyp):
    """:func:`read_back` over the cells :func:`lcs_columns` gives."""
    columns = lcs_columns(ref, hyp)
    return read_back(ref, hyp, lambda i, j: _cell(columns, i, j))


def lcs_positions_reference(ref, hyp):
    """:func:`read_back` over the full :func:`lcs_table` (the tests' reference)."""
    table = lcs_table(ref, hyp)
    return read_back(ref, hyp, lambda i, j: table[i][j])


def rouge_l(ref_tokens, hyp_tokens):
    if not ref_tokens or not hyp_tokens:
        return ZERO
    length = lcs_length(ref_tokens, hyp_tokens)
    precision, recall = length / len(hyp_tokens), length / len(ref_tokens)
    return Score(precision, recall, fmeasure(precision, recall))


def rouge_lsum(ref_sents, hyp_sents):
    """Summary-level ROUGE-L of token lists per sentence."""
    if not ref_sents or not hyp_sents:
        return ZERO
    m, n = sum(map(len, ref_sents)), sum(map(len, hyp_sents))
    if not m or not n:
        return ZERO
    ref_left = Counter(t for s in ref_sents for t in s)
    hyp_left = Counter(t for s in hyp_sents for t in s)
    hits = 0
    for r in ref_sents:
        union = sorted(set().union(*(lcs_positions(r, h) for h in hyp_sents)))
        for token in (r[i] for i in union):
            if hyp_left[token] > 0 and ref_left[token] > 0:
                hits += 1
                hyp_left[token] -= 1
                ref_left[token] -= 1
    precision, recall = hits / n, hits / m
    return Score(precision, recall, fmeasure(precision, recall))


def _lines(text):
    return [line for line in text.split("\n") if line]


def pair_scores(hyp_sents, ref_sents):
    """{``rouge1``, ``rouge2``, ``rougeL`` (summary-level), ``rougeL_plain``: :data:`Score`} of one
    pair of cleaned sentence lists.

    A function of the two lists' strings only, so the scores of the last :data:`PAIRS_KEPT` pairs
    are kept in the process, under a 128-bit BLAKE2 digest of the pair (about 1 kB each, whatever
    the summaries' length): the same decodings scored again (a table's page after its index, the
    results check's second pass, a paired test after the scores) cost a lookup. A fresh dict each
    call."""
    key = hashlib.blake2b(json.dumps([hyp_sents, ref_sents]).encode("utf-8"),
                          digest_size=16).digest()
    scores = _KEPT.get(key)
    if scores is None:
        scores = _KEPT[key] = score_pair(hyp_sents, ref_sents)
        if len(_KEPT) > PAIRS_KEPT:
            _KEPT.popitem(last=False)
    else:
        _KEPT.move_to_end(key)
    return dict(scores)


PAIRS_KEPT = 1 << 16
_KEPT = OrderedDict()


def score_pair(hyp_sents, ref_sents):
    """:func:`pair_scores`, computed (not looked up)."""
    ref_text, hyp_text = "\n".join(ref_sents), "\n".join(hyp_sents)
    ref, hyp = rouge_tokens(ref_text), rouge_tokens(hyp_text)
    return {"rouge1": rouge_n(ref, hyp, 1), "rouge2": rouge_n(ref, hyp, 2),
            "rougeL": rouge_lsum([rouge_tokens(s) for s in _lines(ref_text)],
                                 [rouge_tokens(s) for s in _lines(hyp_text)]),
            "rougeL_plain": rouge_l(ref, hyp)}
