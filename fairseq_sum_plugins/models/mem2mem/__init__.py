"""Mem2Mem (Mem2Mem paper, mem2mem.txt): its own model family on the summarization task and
criterion.

    model.py      the hierarchical GRU encoder-decoder, HRED baseline, presets (``mem2mem_base``,
                  ``hred_base``)
    memory.py     memory compression, transfer, read and write (M2M eq. 3-12) and their auxiliary
                  losses
    sentences.py  the sentence layout of a ``<sep>``-delimited document
    steps.py      the decoder's recurrences and the GRUs as autograd functions (the batched path
                  in float32 training on the CPU)
"""
from . import model  # noqa: F401
