"""Tools that load a checkpoint and read its mechanisms, on one loader (:mod:`.loader`) and one
teacher-forced stage (:mod:`.stage`): the page of ``fairseq-sum-inspect`` (:mod:`.page`, its command
line :mod:`.cli`), TPT's roles and probes (:mod:`.roles`, :mod:`.probe`), ETADS's focus
(:mod:`.focus_plot`), the Topic Assistant's topics (:mod:`.topics`), Mem2Mem's implicit extraction
(:mod:`.implicit_extraction`), information selection's gate sweep (:mod:`.gate_sweep`) and how much
a model reads its source (:mod:`.source_use`, :mod:`.source_curve`). Every command here takes
fairseq-generate's shape, ``DATA --path CKPT``.
"""
