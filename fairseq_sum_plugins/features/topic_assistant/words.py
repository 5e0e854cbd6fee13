"""A topic's words as a reader sees them: the whole words among the topic model's symbols
(:func:`whole_words`) ranked by relevance to a topic (:func:`top_words`), for the Topic
Assistant's plots (inspection/topics.py), the inspection page and the paper tables' topic lists."""
import os

import numpy as np


def whole_words(model, dictionary, data=None, max_docs=20000):
    """Boolean mask of the symbols that are whole words, for the plots (the model keeps every
    symbol).

    Sentencepiece pieces: a piece that starts a word (``▁``) and holds a letter, and, when the
    binarized ``data/train`` split is at hand, is followed by the start of the next word (or a
    special symbol) in at least half of its occurrences in the first ``max_docs`` documents:
    "▁entit" of "▁entit ies" is left out, "▁entity" kept. GPT-2 ids: the BPE token starts a
    word (``Ġ``, when the fit's GPT-2 files are at hand; else a decoded text of at least three
    letters).
    A word-level dictionary (no ``▁`` at all): every symbol with a letter."""
    symbols = dictionary.symbols
    if model.surfaces is not None:
        try:
            bpe = model.gpt2_encoder()
        except (OSError, ValueError):
            bpe = None
        mask = np.zeros(len(symbols), dtype=bool)
        for i, (sym, text) in enumerate(zip(symbols, model.surfaces)):
            token = bpe.decoder.get(int(sym)) if bpe is not None and sym.isdigit() else None
            starts = token.startswith("\u0120") if token is not None else len(text) >= 3
            mask[i] = starts and text.isalpha()
        return mask
    letters = np.array([any(c.isalpha() for c in sym) and i >= dictionary.nspecial
                        and not (sym.startswith("<") and sym.endswith(">"))
                        for i, sym in enumerate(symbols)])
    starts = np.array([sym.startswith("\u2581") for sym in symbols])
    if not starts.any():
        return letters
    mask = starts & letters
    ends = _word_end_share(dictionary, starts, data, max_docs)
    return mask if ends is None else mask & (ends >= 0.5)


def _word_end_share(dictionary, starts, data, max_docs):
    """Per symbol, the share of its occurrences in ``data``'s train sources that the start of a word
    or a special symbol follows (1 where it never occurs); None without binarized data."""
    if data is None:
        return None
    from fairseq.data import data_utils

    path = os.path.join(data, "train.src-tgt.src")
    dataset = (data_utils.load_indexed_dataset(path, dictionary)
               if os.path.exists(path + ".idx") else None)
    if dataset is None:
        return None
    n = min(len(dataset), max_docs)
    tokens = np.concatenate([dataset[i].numpy()
                             for i in range(n)]) if n else np.zeros(0, dtype=np.int64)
    boundary = starts | (np.arange(len(starts)) < dictionary.nspecial) | ~np.array(
        [any(c.isalnum() for c in sym) for sym in dictionary.symbols])
    following = np.append(boundary[tokens[1:]], True) if len(tokens) else np.zeros(0, dtype=bool)
    total = np.bincount(tokens, minlength=len(starts))
    ended = np.bincount(tokens, weights=following, minlength=len(starts))
    return np.where(total > 0, ended / np.maximum(total, 1), 1.0)


def top_words(model, dictionary, k, n, mask=None):
    """The ``n`` whole words of topic ``k`` ranked by relevance (Sievert & Shirley, 2014, lambda
    0.6: frequent words shared by every topic go down)."""
    mask = whole_words(model, dictionary) if mask is None else mask
    marginal = model.phi.mean(1) + 1e-12
    col = model.phi[:, k] + 1e-12
    relevance = np.where(model.keep & mask, 0.6 * np.log(col) + 0.4 * np.log(col / marginal),
                         -np.inf)
    order = np.argsort(-relevance)[:n]
    return [model.surface(w, dictionary) for w in order if np.isfinite(relevance[w])]
