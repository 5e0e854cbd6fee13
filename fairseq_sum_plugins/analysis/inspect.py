"""Which documents of a binarized split a command shows.

:func:`check_documents` refuses, before a checkpoint is loaded, a split the data folder lacks and a
document index outside the split.
"""
import os

from ..scoring.score_inputs import split_size


def binarized_splits(data):
    """Names of the splits binarized in ``data`` (``SPLIT.*.idx``), sorted."""
    return sorted({name.split(".", 1)[0] for name in os.listdir(data) if name.endswith(".idx")})


def check_documents(data, split, indices, flag="--index"):
    """The number of documents of ``split`` in the binarized folder ``data``; a ``ValueError``
    naming the flag for a folder that is not one, a split it lacks, or an index of ``indices``
    outside ``0..n-1`` (a negative index is refused: it would name the document by another
    number)."""
    if not os.path.isdir(data):
        raise ValueError(f"{data}: no such data folder")
    n = split_size(data, split)
    if n is None:
        have = ", ".join(binarized_splits(data)) or "none"
        raise ValueError(f"--split {split}: no binarized split {split} in {data} (it has: {have})")
    bad = [i for i in indices if not 0 <= i < n]
    if bad:
        raise ValueError(f"{flag} {bad[0]}: the {split} split of {data} has {n} documents "
                         f"(0..{n - 1})")
    return n
