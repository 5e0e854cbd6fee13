"""The repository's results ledger: tools that read ``results/``, the papers' tables and the
README's markers, run from the checkout (``python -m ledger.results_index --check``) by the tests and
by ``recipes/papers.sh``. Not part of the installed package (as a library keeps the checks of its
own repository beside it, not in its wheel).

* :mod:`.results_index` -- the index of every committed run, recomputed from its decodings, and
  ``--check`` (with :mod:`.results_paths` and :mod:`.results_prose`);
* :mod:`.paper_tables` -- each paper's tables beside the run's figures (``recipes/papers.sh``);
* :mod:`.paper_evidence` -- the multi-seed tables of ``recipes/xsum/paper_evidence.sh``;
* :mod:`.fingerprint` -- did two machines compute the same numbers (``recipes/aclsum/cross_cpu.sh``).
"""
