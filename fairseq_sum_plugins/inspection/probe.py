"""Decoder probing (TP-Transformer §4, Table 4, App. C; console script ``fairseq-sum-probe``).

The frozen decoder reads each summary teacher-forced (``prev_output_tokens = </s> y_1 .. y_{T-1}``).
Decoder position ``p`` is the state that predicts ``y_p`` "given the p-1 previous tokens", so a word
whose first piece is ``y_k`` is represented by position ``k`` (its input is the piece before the
word). A word of several pieces is represented by the position predicting its FIRST piece only:
that is where the decoder decides on the word; the positions of its later pieces are not used.
``<sep>`` pieces are sentence breaks, not words; the final ``</s>`` is not a word.

For every decoder layer ``l`` the probe reads three vectors at that position, from the binding of
the cross-attention sublayer (``--sublayer cross``, the binding ahead of the layer's feed-forward
block, TPT eq. 8-9; ``--sublayer self`` for the self-attention one)::

    filler  F = Y + MHAttn(LN(Y), H)                     (attention + residual, the binding's input)
    role    R = softmax(F W_r^h) r̂  (TPT eq. 5, TPT-d)   or  R = F W + b  (TPT-c)
    final   TPR(F) = R ⊙ F + F                           (TPT eq. 6, the binding's output)

A model without TPR has no role column, and its final output is its filler (the paper's "-/x/x").
The vectors are taken with forward hooks on the bindings (``nn.Identity`` without TPR); the role
is recomputed from the filler with the binding's own parameters (:func:`role_vectors`).

Probe (App. C: "a linear layer on top of the target representation"; §4.2 names Tenney et al.'s
span convolution + 2-layer MLP instead, the linear layer is used here): ``softmax(W x + b)`` over
the labels, trained with cross-entropy (Adam) on z-scored features. ``x`` is the word's vector
(POS), the concatenation ``[h_i; h_head(i)]`` of the word and its syntactic head (DEP; the root is
paired with itself), or the mean of the vectors of the span's words (NEL). F1 is micro-averaged
over labels (single-label classification of given tokens/spans: equal to accuracy); macro-F1 is in
the JSON.

Labels come from CoNLL-U (UPOS/XPOS, HEAD/DEPREL, ``NER=`` in MISC) or CoNLL files (word and label
columns; NER as BIO tags or bare types, a run of one type being one entity), written by any tagger
over the summaries' words (``--write-words`` writes them, one sentence per line). A file with
another number of sentences than the summaries used (or the whole split, whose labels are cut to
the first ``--max-documents``) is an error naming both counts. They are aligned to the summaries
word by word; the first word that disagrees is an error naming the file and line.
``--spacy-model NAME`` labels the summaries with an installed spaCy pipeline instead. Probes are
trained on ``--split`` (the paper: training-set references) and evaluated on ``--eval-split`` with
``--eval-labels`` (the paper: the model's own dev-set summaries: ``--eval-generate-output GEN``, a
fairseq-generate output of that split, whose words ``--write-words`` then writes for the tagger;
or binarized with DATA's dictionaries into ``--eval-data DIR``), or on a held-out ``--heldout``
fraction of the summaries. The JSON records which (``evaluated_on``).
"""
import argparse
import copy
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..cli.options import add_data_and_path, old_spelling
from ..cli.outputs import refuse_clobber
from ..features.tp_transformer import TPRBinding
from .loader import load_for

REPRESENTATIONS = ("role", "filler", "final")
SEP = "<sep>"
PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


# ------------------------------------------------------------------------------- words of summaries
def piece_mode(symbols):
    """'sentencepiece' ("▁" marks word starts), 'bpe' (subword-nmt "@@" continues) or 'word'."""
    if any(s.startswith("\u2581") for s in symbols):
        return "sentencepiece"
    if any(s.endswith("@@") for s in symbols):
        return "bpe"
    return "word"


def split_words(pieces, mode):
    """Words of one summary: a list of sentences, each a list of ``(word, index of first
    piece)``."""
    sents, sent, word, start, new_word = [], [], None, 0, True

    def flush():
        if word:
            sent.append((word, start))

    for k, piece in enumerate(pieces):
        if piece == SEP:
            flush()
            word, new_word = None, True
            if sent:
                sents.append(sent)
            sent = []
            continue
        if mode == "sentencepiece":
            begins, text = piece.startswith("\u2581") or new_word, piece.lstrip("\u2581")
            if not text:  # a bare "▁": the next piece starts the word
                flush()
                word, new_word = None, True
                continue
        elif mode == "bpe":
            begins, text = new_word, piece[:-2] if piece.endswith("@@") else piece
        else:
            begins, text = True, piece
        if begins:
            flush()
            word, start = text, k
        else:
            word += text
        new_word = mode == "bpe" and not piece.endswith("@@")
        if mode == "sentencepiece":
            new_word = False
    flush()
    if sent:
        sents.append(sent)
    return sents


def summary_words(task, split, max_summaries=0):
    """[(sample id, sentences)] of a split's targets (:func:`split_words` of their pieces); a split
    the task holds already (e.g. :func:`use_generated_summaries`') is not loaded again."""
    if split not in task.datasets:
        task.load_dataset(split)
    dataset, dictionary = task.dataset(split), task.target_dictionary
    mode = piece_mode(dictionary.symbols)
    n = len(dataset) if not max_summaries else min(max_summaries, len(dataset))
    out = []
    for i in range(n):
        target = dataset[i]["target"].tolist()
        if target and target[-1] == dictionary.eos():
            target = target[:-1]
        out.append((i, split_words([dictionary[t] for t in target], mode)))
    return out


def with_targets(dataset, targets):
    """A shallow copy of ``dataset`` (a LanguagePairDataset, or a wrapper of one with a
    ``dataset``) whose targets are ``targets`` (LongTensors ending in EOS)."""
    new = copy.copy(dataset)
    if hasattr(dataset, "tgt"):
        new.tgt, new.tgt_sizes = targets, np.array([t.numel() for t in targets])
    else:
        new.dataset = with_targets(dataset.dataset, targets)
    return new


def use_generated_summaries(task, split, generate_output, data):
    """Table 4's evaluation set ("the model-generated summaries for the XSum dev set", App. C):
    ``split``'s documents with the model's own summaries as targets, ``generate_output``'s
    hypotheses of that split (D- lines, else H-) encoded as ``data`` records them (its tokenizer and
    BPE; hypotheses written as sentencepiece pieces are read as pieces). Held by ``task`` under
    ``split``. A ``ValueError`` names the file when it decodes another split or data folder (by
    content, :func:`~fairseq_sum_plugins.scoring.score_inputs.check_decoding_of`), misses an
    example of the split or has one the split lacks."""
    from ..data_folder import text_encoder
    from ..scoring.score_inputs import GenerateOutput, ScoreInputError, check_decoding_of

    task.load_dataset(split)
    base = task.dataset(split)
    try:
        gen = GenerateOutput(generate_output)
        if gen.subset is not None and gen.subset != split:  # its closing "Generate SPLIT ..." line
            raise ScoreInputError(f"a decoding of the {gen.subset} split, not of --eval-split "
                                  f"{split}")
        # by content, as fairseq-sum-score matches it: from any working folder, whatever path
        # (relative, moved) generate's log names
        check_decoding_of(gen, data, split)
    except (OSError, ScoreInputError) as e:
        raise ValueError(f"--eval-generate-output {generate_output}: {e}") from None
    hyps = gen.hyps
    n = len(base)
    missing = [i for i in range(n) if i not in hyps]
    extra = sorted(i for i in hyps if not 0 <= i < n)
    if missing or extra:
        raise ValueError(
            f"--eval-generate-output {generate_output}: not a decoding of the {split} split of "
            f"{data} ({n} documents): " + (f"no hypothesis for ids {missing[:5]}" if missing else
                                            f"hypotheses for ids {extra[:5]} it lacks"))
    dictionary = task.target_dictionary
    texts = [hyps[i] for i in range(n)]
    if any("\u2581" in t for t in texts):  # pieces, as fairseq-generate prints them without --bpe
        targets = [dictionary.encode_line(t, add_if_not_exist=False).long() for t in texts]
    else:
        encode = text_encoder(data, dictionary)
        targets = [encode(t) for t in texts]
    task.datasets[split] = with_targets(base, targets)


def write_words(summaries, path):
    """One sentence per line, words separated by spaces (input for an external tagger)."""
    with open(path, "w", encoding="utf-8") as f:
        for _, sents in summaries:
            for sent in sents:
                f.write(" ".join(w for w, _ in sent) + "\n")


# ------------------------------------------------------------------------------------------ labels
def read_conll(path, task, pos_field="xpos", word_column=1, label_column=-1):
    """Tokens of a CoNLL-U / CoNLL file: dicts with word, label, line, sentence, index in sentence,
    head (0-based index in the sentence, DEP only)."""
    conllu = path.endswith(".conllu")
    if word_column < 1 or label_column == 0:
        raise ValueError("--word-column must be >= 1 and --label-column non-zero (got "
                         f"{word_column}, {label_column})")
    tokens, sent_no, in_sent = [], 0, 0
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                sent_no, in_sent = sent_no + (in_sent > 0), 0
                continue
            if line.startswith("#") or line.startswith("-DOCSTART-"):
                continue
            cols = line.split("\t") if conllu else line.split()
            tok = {"line": line_no, "sentence": sent_no, "index": in_sent}
            if conllu:
                if len(cols) != 10:
                    raise ValueError(f"{path}:{line_no}: {len(cols)} columns, CoNLL-U has 10")
                if "-" in cols[0] or "." in cols[0]:  # multi-word token range / empty node
                    continue
                tok["word"] = cols[1]
                if task == "pos":
                    tok["label"] = cols[3] if pos_field == "upos" else cols[4]
                elif task == "dep":
                    if not cols[6].isdigit():
                        raise ValueError(f"{path}:{line_no}: HEAD {cols[6]!r} is not a number")
                    tok["label"], tok["head"] = cols[7], int(cols[6]) - 1  # -1: root
                else:
                    ner = [m[4:] for m in cols[9].split("|") if m.startswith("NER=")]
                    tok["label"] = ner[0] if ner else "O"
                if tok["label"] == "_":
                    raise ValueError(f"{path}:{line_no}: no {task} label ('_'); "
                                     + ("try --pos-field upos" if task == "pos" else "wrong file?"))
            else:
                if task == "dep":
                    raise ValueError(f"{path}: DEP needs a CoNLL-U file (.conllu) with HEAD/DEPREL")
                try:
                    tok["word"] = cols[word_column - 1]
                    tok["label"] = cols[label_column - 1 if label_column > 0 else label_column]
                except IndexError:
                    raise ValueError(f"{path}:{line_no}: too few columns for --word-column "
                                     f"{word_column} / --label-column {label_column}") from None
            tokens.append(tok)
            in_sent += 1
    return tokens


def align_labels(summaries, tokens, path):
    """Attach the tokens to the summary words in order; error on the first word that disagrees.

    Returns per word: ``(summary i, word j, label, head as (summary, word) or None)``."""
    words = [(si, j, w) for si, (_, sents) in enumerate(summaries)
             for j, w in enumerate(w for sent in sents for w, _ in sent)]
    if len(tokens) < len(words):
        raise ValueError(f"{path}: {len(tokens)} tokens for {len(words)} summary words "
                         f"(labels for {len(summaries)} summaries?)")
    first_of_sentence, out = {}, []
    for k, ((si, j, w), tok) in enumerate(zip(words, tokens)):
        if PTB_ESCAPES.get(tok["word"], tok["word"]) != w:
            raise ValueError(f"{path}:{tok['line']}: token {tok['word']!r} does not match word {j} "
                             f"of summary {summaries[si][0]} ({w!r}); tag the words of "
                             "--write-words, one sentence per line, without re-tokenizing")
        first_of_sentence.setdefault(tok["sentence"], k - tok["index"])
        out.append([si, j, tok["label"], tok.get("head")])
    if len(tokens) > len(words):
        raise ValueError(
            f"{path}:{tokens[len(words)]['line']}: more tokens than summary words ({len(words)})")
    for k, row in enumerate(out):
        if row[3] is not None:
            tok = tokens[k]
            h = k if row[3] < 0 else first_of_sentence[tok["sentence"]] + row[3]  # root: itself
            if h >= len(words) or words[h][0] != row[0]:
                raise ValueError(f"{path}:{tok['line']}: head {row[3] + 1} lies outside summary "
                                 f"{summaries[row[0]][0]}")
            row[3] = (words[h][0], words[h][1])
    return out


def labels_of_summaries(tokens, path, task, split, summaries, max_summaries):
    """The tokens of ``summaries`` (the first ``max_summaries`` of ``split``). The label file must
    hold one sentence per sentence of these summaries, or of the whole split (labels of every
    summary, cut to the first ``max_summaries``); any other count is an error naming both."""
    have = len({t["sentence"] for t in tokens})
    used = sum(len(sents) for _, sents in summaries)
    if have == used:
        return tokens
    whole = used
    if max_summaries and len(summaries) == max_summaries:  # the split may have more summaries
        whole = sum(len(sents) for _, sents in summary_words(task, split))
    if have == whole:
        first = sorted({t["sentence"] for t in tokens})[:used]
        keep = set(first)
        return [t for t in tokens if t["sentence"] in keep]
    split_text = f"{used} sentences" + (f" ({whole} in the whole split)" if whole != used else "")
    raise ValueError(
        f"{path}: {have} labelled sentences, but the {len(summaries)} summaries of split {split!r} "
        f"used (--max-documents {max_summaries}) have {split_text}: label the words that "
        "--write-words writes for this split (one sentence per line, not re-split by the tagger)")


def spacy_labels(summaries, model_name, task, pos_field="xpos"):
    """Tokens as :func:`read_conll` returns them, from a spaCy pipeline run on the summary words."""
    try:
        import spacy
        from spacy.tokens import Doc
    except ImportError:
        raise ValueError("--spacy-model needs spaCy (pip install spacy) and a model") from None
    try:
        nlp = spacy.load(model_name)
    except OSError as e:
        raise ValueError(f"spaCy model {model_name!r} is not installed: {e}") from None
    tokens, sent_no = [], 0
    for _, sents in summaries:
        for sent in sents:
            doc = nlp(Doc(nlp.vocab, words=[w for w, _ in sent]))
            for t in doc:
                label = {"pos": t.pos_ if pos_field == "upos" else t.tag_, "dep": t.dep_,
                         "nel": f"{t.ent_iob_}-{t.ent_type_}" if t.ent_type_ else "O"}[task]
                head = (-1 if t.head.i == t.i else t.head.i) if task == "dep" else None
                tokens.append({"word": t.text, "label": label, "line": 0, "sentence": sent_no,
                               "index": t.i, "head": head})
            sent_no += 1
    return tokens


def entity_spans(aligned):
    """NEL spans ``(summary, [word indices], type)`` from BIO tags or runs of bare types."""
    spans, cur = [], None
    for si, j, label, _ in aligned:
        tagged = label[:2] in ("B-", "I-", "E-", "S-")
        prefix, _, kind = label.partition("-") if tagged else ("", "", label)
        if label == "O" or (cur and (cur[0] != si or cur[2] != kind or prefix in ("B", "S"))):
            cur = None
        if label == "O":
            continue
        if cur is None:
            cur = (si, [], kind)
            spans.append(cur)
        cur[1].append(j)
        if prefix in ("E", "S"):
            cur = None
    return spans


# ---------------------------------------------------------------------------------------- features
def role_vectors(binding, filler):
    """``R`` of TPT eq. 5 (discrete) or ``F W + b`` (continuous) for the fillers ``F`` of a
    binding."""
    if binding.mode == "continuous":
        return binding.role_proj(filler)
    scores = binding.role_proj(filler).unflatten(-1, (binding.num_heads, binding.num_roles))
    return (F.softmax(scores, dim=-1) @ F.normalize(binding.roles, dim=-1)).flatten(-2)


def probe_points(model, sublayer="cross"):
    """The decoder's per-layer binding modules (TPRBinding or nn.Identity)."""
    layers = getattr(getattr(model, "decoder", None), "layers", None)
    name = f"{sublayer}_attn_binding"
    if layers is None or not all(hasattr(layer, name) for layer in layers):
        raise ValueError(
            "probing needs a sum_transformer decoder (TP-Transformer / T5-style presets)")
    return [getattr(layer, name) for layer in layers]


@torch.no_grad()
def decoder_features(model, task, split, summaries, sublayer="cross", batch_size=32):
    """{(layer, rep): array (num words, d)} at the positions predicting each word's first piece.

    Rows follow the words of ``summaries`` in order; ``rep`` "role" is absent without TPR."""
    dataset = task.dataset(split)
    points = probe_points(model, sublayer)
    has_roles = isinstance(points[0], TPRBinding)
    captured = {}

    def hook(layer):
        def fn(module, inputs, output):
            captured[layer] = (inputs[0], output)
        return fn

    handles = [p.register_forward_hook(hook(i)) for i, p in enumerate(points)]
    rows = {}
    device = next(model.parameters()).device
    model.eval()
    try:
        for b in range(0, len(summaries), batch_size):
            chunk = summaries[b:b + batch_size]
            sample = dataset.collater([dataset[i] for i, _ in chunk])
            model(**move_to(sample["net_input"], device))
            length = sample["net_input"]["prev_output_tokens"].shape[1]
            row_of = {int(i): r for r, i in enumerate(sample["id"])}
            for i, sents in chunk:
                pos = torch.tensor([k for sent in sents for _, k in sent], dtype=torch.long)
                for layer, (filler, out) in captured.items():
                    fill = filler[row_of[i], -length:][pos]  # -length: drops a TEMA prefix
                    reps = {"filler": fill, "final": out[row_of[i], -length:][pos]}
                    if has_roles:
                        reps["role"] = role_vectors(points[layer], fill)
                    for rep, v in reps.items():
                        rows.setdefault((layer, rep), []).append(v.float().cpu().numpy())
    finally:
        for h in handles:
            h.remove()
    return {key: np.concatenate(v) for key, v in rows.items()}


def probe_inputs(feats, aligned, summaries, task):
    """(X, labels) for one representation: word rows, [word; head] pairs, or span means."""
    offset = np.cumsum([0] + [sum(len(s) for s in sents) for _, sents in summaries])
    if task == "pos":
        return feats[[offset[si] + j for si, j, _, _ in aligned]], [lab for _, _, lab, _ in aligned]
    if task == "dep":
        idx = [offset[si] + j for si, j, _, _ in aligned]
        head = [offset[h[0]] + h[1] for _, _, _, h in aligned]
        return np.concatenate([feats[idx], feats[head]], axis=1), [lab for _, _, lab, _ in aligned]
    spans = entity_spans(aligned)
    if not spans:
        raise ValueError("no entity spans in the labels (all 'O')")
    x = np.stack([feats[[offset[si] + j for j in words]].mean(0) for si, words, _ in spans])
    return x, [kind for _, _, kind in spans]


def move_to(value, device):
    """``value`` (tensors in nested dicts/lists) on ``device``."""
    if torch.is_tensor(value):
        return value.to(device)
    if isinstance(value, dict):
        return {k: move_to(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(move_to(v, device) for v in value)
    return value


# ------------------------------------------------------------------------------------------ probes
def train_probe(x, y, num_classes, epochs=100, lr=1e-2, batch_size=512, seed=1):
    """App. C's linear probe on z-scored features; returns a predict(x) function."""
    g = torch.Generator().manual_seed(seed)
    x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(y, dtype=torch.long)
    mean, std = x.mean(0), x.std(0, unbiased=False).clamp_min(1e-6)
    torch.manual_seed(seed)
    linear = nn.Linear(x.shape[1], num_classes)
    opt = torch.optim.Adam(linear.parameters(), lr=lr)
    xs = (x - mean) / std
    for _ in range(epochs):
        for idx in torch.randperm(len(xs), generator=g).split(batch_size):
            opt.zero_grad()
            F.cross_entropy(linear(xs[idx]), y[idx]).backward()
            opt.step()

    def predict(x_new):
        with torch.no_grad():
            return linear(
                (torch.as_tensor(x_new, dtype=torch.float32) - mean) / std).argmax(-1).numpy()

    return predict


def f1_scores(gold, pred, num_classes):
    """(micro-F1, macro-F1 over the gold labels present)."""
    gold, pred = np.asarray(gold), np.asarray(pred)
    micro = float((gold == pred).mean())
    f1s = []
    for c in np.unique(gold):
        tp = ((pred == c) & (gold == c)).sum()
        p, r = tp / max((pred == c).sum(), 1), tp / max((gold == c).sum(), 1)
        f1s.append(0.0 if tp == 0 else 2 * p * r / (p + r))
    return micro, float(np.mean(f1s))


def probe_grid(train, evaluation, task, epochs=100, seed=1):
    """F1 of a probe per (layer, representation); ``train``/``evaluation`` = (feats, aligned,
    summaries).

    Returns ``{"cells": {(layer, rep): {"f1", "macro_f1"}}, "majority": rate, "n_train",
    "n_eval"}``."""
    cells, n_train, n_eval, majority = {}, 0, 0, 0.0
    done = {}
    for key in sorted(train[0], key=lambda k: (k[0], REPRESENTATIONS.index(k[1]))):
        x_tr, y_tr = probe_inputs(train[0][key], train[1], train[2], task)
        x_ev, y_ev = probe_inputs(evaluation[0][key], evaluation[1], evaluation[2], task)
        classes = sorted(set(y_tr))
        index = {c: i for i, c in enumerate(classes)}
        # a label unseen in training is never right
        gold = np.array([index.get(c, -1) for c in y_ev])
        same = next((k for k in done
                     if k[0] == key[0] and np.array_equal(train[0][k], train[0][key])), None)
        if same is not None:  # without TPR the final output is the filler: same probe, same numbers
            cells[key] = dict(cells[same])
            continue
        predict = train_probe(x_tr, [index[c] for c in y_tr], len(classes), epochs=epochs,
                              seed=seed)
        micro, macro = f1_scores(gold, predict(x_ev), len(classes))
        cells[key] = {"f1": micro, "macro_f1": macro}
        done[key] = True
        counts = np.bincount([index[c] for c in y_tr], minlength=len(classes))
        majority = float((gold == counts.argmax()).mean())
        n_train, n_eval = len(y_tr), len(y_ev)
    return {"cells": cells, "majority": majority, "n_train": n_train, "n_eval": n_eval}


def format_grid(grid, num_layers):
    """Table 4's layout: one row per layer, role / filler / final F1 (x100; '-' without roles)."""
    lines = [f"{'layer':>5s} {'role':>7s} {'filler':>7s} {'final':>7s}   (F1 x 100; Table 4: "
             "role/filler/final)"]
    for layer in range(num_layers):
        vals = [grid["cells"].get((layer, rep)) for rep in REPRESENTATIONS]
        text = [f"{100 * v['f1']:7.1f}" if v else f"{'-':>7s}" for v in vals]
        short = "/".join("-" if v is None else f"{100 * v['f1']:.1f}" for v in vals)
        lines.append(f"{layer + 1:5d} {' '.join(text)}   {short}")
    lines.append(f"majority-class rate on the evaluation items: {100 * grid['majority']:.1f} "
                 f"({grid['n_train']} training / {grid['n_eval']} evaluation items)")
    return "\n".join(lines)


def plot_grid(grid, num_layers, path, title):
    """Heatmap PNG of the grid (layers x representations, F1 annotated)."""
    from fairseq_sum_plugins.evaluation.plotting import pyplot, save

    plt = pyplot()

    values = np.full((num_layers, len(REPRESENTATIONS)), np.nan)
    for (layer, rep), v in grid["cells"].items():
        values[layer, REPRESENTATIONS.index(rep)] = 100 * v["f1"]
    fig, ax = plt.subplots(figsize=(4.8, 0.45 * num_layers + 1.8))
    im = ax.imshow(values, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, "-" if np.isnan(v) else f"{v:.1f}", ha="center", va="center",
                color="white" if np.isnan(v) or v < 60 else "black", fontsize=9)
    ax.set_xticks(range(len(REPRESENTATIONS)), REPRESENTATIONS)
    ax.set_yticks(range(num_layers), [f"layer {i + 1}" for i in range(num_layers)])
    ax.set_title(f"{title}\nmajority class {100 * grid['majority']:.1f}", fontsize=9)
    fig.colorbar(im, ax=ax, label="F1 (micro)")
    save(fig, path)


# --------------------------------------------------------------------------------------------- CLI
def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-sum-probe", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_and_path(p, "checkpoint of a sum_transformer model")
    p.add_argument("--task", dest="probe_task", choices=["pos", "dep", "nel"], default="pos",
                   help="POS tags, dependency labels (word + head) or named-entity types (spans)")
    p.add_argument("--labels", help="CoNLL-U (.conllu) or CoNLL labels of --split's summaries")
    p.add_argument("--split", default="train", help="summaries the probes are trained on")
    p.add_argument("--eval-split",
                   help="summaries the probes are evaluated on (with --eval-labels)")
    p.add_argument("--eval-labels", help="labels of --eval-split")
    p.add_argument("--eval-generate-output", metavar="GEN",
                   help="evaluate on the model's own summaries of --eval-split (the paper's "
                        "evaluation set): a fairseq-generate output of that split; with "
                        "--write-words, write their words")
    p.add_argument("--eval-data", metavar="DIR",
                   help="binarized data dir of --eval-split (default: DATA), e.g. the model's own "
                        "summaries binarized with DATA's dictionaries")
    p.add_argument(
        "--heldout", type=float, default=0.2,
        help="without --eval-split: share of --split's summaries held out for evaluation")
    p.add_argument("--spacy-model", help="label the summaries with this installed spaCy pipeline")
    p.add_argument("--pos-field", choices=["xpos", "upos"], default="xpos",
                   help="CoNLL-U POS column (xpos: PTB tags as CoreNLP writes, the paper's)")
    p.add_argument("--word-column", type=int, default=1, help="CoNLL (not -U): 1-based word column")
    p.add_argument("--label-column", type=int, default=-1,
                   help="CoNLL (not -U): 1-based label column (negative: from the end, -1: last)")
    p.add_argument("--sublayer", choices=["cross", "self"], default="cross", help="the binding "
                   "read: the cross-attention sublayer's (default) or the self-attention one's")
    p.add_argument("--write-words", metavar="FILE",
                   help="write --split's summary words for a tagger and stop")
    p.add_argument(
        "--max-documents", type=int, default=2000, metavar="N",
        help="the first N documents' summaries of each split (0: all); the features take "
        "words x layers x 3 x d_m x 4 bytes (2000 XSum summaries, base model: ~1.7 GB)")
    p.add_argument("--epochs", type=int, default=100, help="training epochs of each probe")
    p.add_argument("--batch-size", type=int, default=32, help="summaries per forward pass")
    p.add_argument("--seed", type=int, default=1, help="seed of the probes and of --heldout")
    p.add_argument("--png", help="heatmap of the grid")
    p.add_argument("--json", help="write the grid as JSON")
    p.add_argument("--cpu", action="store_true", help="stay on the CPU even with a GPU")
    old_spelling(p, "--max-summaries", "--max-documents")
    return p


def _labelled(args, task, model, split, labels):
    """(features, aligned labels, summaries) of one split."""
    summaries = summary_words(task, split, args.max_documents)
    if args.spacy_model:
        tokens, source = spacy_labels(summaries, args.spacy_model, args.probe_task,
                                      args.pos_field), "spaCy"
    else:
        tokens, source = read_conll(labels, args.probe_task, args.pos_field, args.word_column,
                                    args.label_column), labels
        tokens = labels_of_summaries(tokens, labels, task, split, summaries, args.max_documents)
    aligned = align_labels(summaries, tokens, source)
    return decoder_features(model, task, split, summaries, args.sublayer,
                            args.batch_size), aligned, summaries


def _heldout(data, fraction, seed):
    feats, aligned, summaries = data
    rng = np.random.default_rng(seed)
    held = set(
        rng.permutation(len(summaries))[: max(1, int(round(fraction * len(summaries))))].tolist())
    if len(held) >= len(summaries):
        raise ValueError(f"--heldout {fraction} leaves no summary to train on")
    return ((feats, [a for a in aligned if a[0] not in held], summaries),
            (feats, [a for a in aligned if a[0] in held], summaries))


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    refuse_clobber(parser, reads=[
        ("DATA", args.data), ("--path", args.path), ("--labels", args.labels),
        ("--eval-labels", args.eval_labels), ("--eval-generate-output", args.eval_generate_output),
        ("--eval-data", args.eval_data)], writes=[
        ("--write-words", args.write_words), ("--png", args.png), ("--json", args.json)],
        files=True)
    try:
        if not (args.write_words or args.labels or args.spacy_model):
            raise ValueError(
                "--labels FILE (or --spacy-model NAME, or --write-words FILE) is required")
        if args.eval_generate_output and not args.eval_split:
            raise ValueError("--eval-generate-output needs --eval-split (the split it decodes)")
        if args.eval_generate_output and args.eval_split == args.split:
            raise ValueError(f"--eval-generate-output: --eval-split {args.eval_split} is --split "
                             "too (the probes train on that split's references)")
        if args.eval_generate_output and args.eval_data:
            raise ValueError("--eval-generate-output and --eval-data: give one (the model's "
                             "summaries as a decoding, or binarized)")
        if args.eval_split and not (args.eval_labels or args.spacy_model or args.write_words):
            raise ValueError("--eval-split needs --eval-labels (or --spacy-model)")
        model, task = load_for(parser, args.path, args.data,
                               cuda=torch.cuda.is_available() and not args.cpu)
        if args.eval_generate_output:
            use_generated_summaries(task, args.eval_split, args.eval_generate_output, args.data)
        if args.write_words:
            split = args.eval_split if args.eval_generate_output else args.split
            write_words(summary_words(task, split, args.max_documents), args.write_words)
            print(f"wrote {args.write_words}")
            return None
        num_layers = len(probe_points(model, args.sublayer))
        train = _labelled(args, task, model, args.split, args.labels)
        if args.eval_split:
            eval_task = task
            if args.eval_data:
                eval_task = load_for(parser, args.path, args.eval_data)[1]
            evaluation = _labelled(args, eval_task, model, args.eval_split, args.eval_labels)
        else:
            train, evaluation = _heldout(train, args.heldout, args.seed)
        grid = probe_grid(train, evaluation, args.probe_task, args.epochs, args.seed)
    except (ValueError, OSError) as e:
        sys.exit(f"fairseq-sum-probe: error: {e}")
    evaluated_on = (f"the model's own {args.eval_split} summaries "
                    f"({os.path.basename(args.eval_generate_output)})"
                    if args.eval_generate_output else
                    f"the {args.eval_split} summaries" + (f" of {args.eval_data}" if args.eval_data
                                                          else "")
                    if args.eval_split else
                    f"{args.heldout:g} of the {args.split} summaries, held out")
    print(f"{args.probe_task.upper()} probing of {args.path} ({args.sublayer}-attention bindings; "
          f"trained on the {args.split} summaries, evaluated on {evaluated_on})")
    print(format_grid(grid, num_layers))
    if args.png:
        plot_grid(grid, num_layers, args.png,
                  f"{args.probe_task.upper()} probe, {args.sublayer}-attention bindings")
        print(f"wrote {args.png}")
    if args.json:
        cells = {f"{layer + 1}/{rep}": v for (layer, rep), v in grid["cells"].items()}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"task": args.probe_task, "sublayer": args.sublayer, "trained_on": args.split,
                       "evaluated_on": evaluated_on, **grid, "cells": cells},
                      f, indent=1)
    return grid


def cli_main():
    main()


if __name__ == "__main__":
    cli_main()
