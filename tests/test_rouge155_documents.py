"""The default scorer (rouge155-py) equals ROUGE-1.5.5 per document on real documents: 400 XSum
test documents, each hypothesis 2-4 of its document's sentences (Lead-3, three random sentences, or
the last two), each reference its summary, with one of the document's sentences added for every
other document (summary-level ROUGE-L over two reference sentences). ROUGE-1, ROUGE-2 and
ROUGE-L, the summary-level union-LCS (what this project calls ROUGE-L and others ROUGE-Lsum), each
recall and precision per document to ROUGE-1.5.5's 5 printed decimals, and F1 as ROUGE-1.5.5
prints it per document: from its recall and precision at 5 decimals (measured here: the exact F1
differs from the printed one by up to 1e-5, its rounded recall and precision's F1 by at most
half the last digit); and the plain
(sentence-level) ROUGE-L, ``rougeL_plain``, against ROUGE-1.5.5 given each text as one sentence.
The perl script runs where it is installed (CI: scripts/install.sh --rouge155)."""
import json
import os
import random

import numpy as np
import pytest

from fairseq_sum_plugins.scoring import rouge as R
from fairseq_sum_plugins.text import split_sentences
from helpers import _perl_ready
from tolerances import printed_tol

XSUM = "/work/shared/data/xsum-sample/test.jsonl"
DOCUMENTS = 400
needs_perl = pytest.mark.skipif(_perl_ready() is not None, reason=str(_perl_ready()))
needs_data = pytest.mark.skipif(not os.path.isfile(XSUM), reason="XSum sample not present")


def _pairs():
    """(hypotheses, references) as sentence lists (module docstring), seeded."""
    with open(XSUM, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    rng = random.Random(1)
    hyps, refs = [], []
    for i, r in enumerate(records):
        sents = [s for s in split_sentences(r["document"]) if s.strip()]
        if len(sents) < 5:
            continue
        kind = i % 3
        if kind == 0:
            hyp = sents[:3]
        elif kind == 1:
            hyp = [sents[j] for j in sorted(rng.sample(range(len(sents)), 3))]
        else:
            hyp = sents[-2:]
        ref = [r["summary"]] + ([sents[rng.randrange(len(sents))]] if i % 2 else [])
        hyps.append(hyp)
        refs.append(ref)
        if len(hyps) == DOCUMENTS:
            break
    return hyps, refs


@pytest.mark.slow  # ROUGE-1.5.5 on 400 documents, twice
@needs_perl
@needs_data
def test_the_default_scorer_equals_rouge155_per_document_on_real_multi_sentence_summaries():
    hyps, refs = _pairs()
    assert len(hyps) == DOCUMENTS
    assert sum(len(h) > 1 for h in hyps) == DOCUMENTS and sum(len(r) > 1 for r in refs) >= 190
    ours = R.Scorer().documents(hyps, refs)
    perl = R.Scorer("official", workers=2).documents(hyps, refs)
    for metric in ("rouge1", "rouge2", "rougeL"):
        _equal_as_printed(ours[metric], perl[metric], metric)
    # the summary-level ROUGE-L is not the sentence-level one on these summaries
    assert np.abs(ours["rougeL"][:, 2] - ours["rougeL_plain"][:, 2]).max() > 0.01
    # ROUGE-1.5.5 given each text as one sentence computes the plain LCS
    one = R.Scorer("official", workers=2).documents([[" ".join(h)] for h in hyps],
                                                    [[" ".join(r)] for r in refs])
    _equal_as_printed(ours["rougeL_plain"], one["rougeL"], "rougeL_plain")


def _equal_as_printed(ours, perl, metric):
    """Per document: recall and precision within half the printed digit; F1 as ROUGE-1.5.5 prints
    it, from recall and precision at 5 decimals."""
    assert ours.shape == perl.shape == (DOCUMENTS, 3), metric
    worst = np.abs(ours[:, :2] - perl[:, :2]).max(0)
    assert (worst <= printed_tol(5)).all(), (metric, "recall, precision", worst)
    r, p = np.round(ours[:, 0], 5), np.round(ours[:, 1], 5)
    f = np.where(r + p > 0, 2 * r * p / np.where(r + p > 0, r + p, 1), 0.0)
    worst = np.abs(f - perl[:, 2]).max()
    assert worst <= printed_tol(5), (metric, "F1", worst)
