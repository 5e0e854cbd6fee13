"""Scoring summaries: ROUGE equal to ROUGE-1.5.5 (rouge.py, rouge_text.py, stemmer.py; rouge155.py
runs the Perl original), METEOR (meteor.py), bootstrap confidence intervals and paired tests
(bootstrap.py), novel n-grams (novelty.py), the ``fairseq-sum-score`` command (score.py,
score_inputs.py) and the ``--scoring rouge`` scorer of ``fairseq-generate`` (fairseq_scoring.py).
Importable without fairseq.
"""
