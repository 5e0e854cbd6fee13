"""Novel n-grams of summaries (Mem2Mem §5.6, Table 4): how much of a summary is copied from its
source.

For a summary ``s`` with source document ``d`` and n-gram order ``n`` (words of
:func:`fairseq_sum_plugins.scoring.rouge.rouge_words`, lower-cased, no stemming, sentence breaks
ignored)::

    novel_n(s, d) = |{occurrences g of n-grams in s : g not an n-gram of d}|
                    / |n-gram occurrences in s|

averaged over the summaries that have at least one n-gram of order ``n``. Table 4 reports the
complement, the share found in the source: ``found_n = 1 - novel_n``. The scorer reports both
for hypotheses and references (``fairseq-sum-score --novel-ngrams 1,2,3,4``; the paper's orders are
``5,10,15,20``).
"""


def _ngrams(words, n):
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def novel_ngram_ratios(summaries, sources, orders=(1, 2, 3, 4)):
    """{n: mean novel_n} over parallel summaries and sources (texts or sentence lists); None for an
    order no summary reaches."""
    from .rouge import rouge_words

    def words(text):
        return [w for s in ([text] if isinstance(text, str) else text) for w in rouge_words(s)]

    out = {}
    pairs = [(words(s), words(d)) for s, d in zip(summaries, sources)]
    for n in orders:
        ratios = []
        for summ, src in pairs:
            grams = _ngrams(summ, n)
            if grams:
                seen = set(_ngrams(src, n))
                ratios.append(sum(g not in seen for g in grams) / len(grams))
        out[n] = sum(ratios) / len(ratios) if ratios else None
    return out
