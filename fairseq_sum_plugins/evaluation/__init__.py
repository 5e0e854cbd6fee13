"""Tools that read decodings and data as text, beside :mod:`..scoring`: the baselines every
table needs (:mod:`.baselines`: Lead-k, random, oracle, generic, LexRank), paired comparison and
its page (:mod:`.compare`, :mod:`.compare_report`, :mod:`.page`), committed decodings
(:mod:`.decodings`), the sentence against Lead-3 (:mod:`.lead3_statement`) and plots
(:mod:`.plotting`). No module here imports torch or fairseq at its top
(``scripts/check_layering.py`` checks it): they start fast and run where no model does.
"""
