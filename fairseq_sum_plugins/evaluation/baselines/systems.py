"""The baselines every summarization table needs (console script ``fairseq-sum-baselines``).

::

    fairseq-sum-baselines --jsonl TEST.jsonl --json OUT.json  # [--valid-jsonl V] [--train-jsonl T]
    fairseq-sum-baselines --data WORK --json OUT.json         # a folder of fairseq-sum-prepare

Systems, each scored like ``fairseq-sum-score`` scores a model (ROUGE-1/2/L F1 with 95% bootstrap
intervals, :class:`fairseq_sum_plugins.scoring.rouge.Scorer` and its options) and with ROUGE-2
reference specificity (:mod:`.specificity`, own / other / delta / permutation p):

* ``lead1``, ``lead3``: the first 1 / 3 sentences of the document;
* ``leadk``: Lead-k with k in 1..``--max-lead`` (10) chosen on the validation split (the k with the
  highest mean of ROUGE-1 and ROUGE-2 F1 over its first ``--max-valid`` (2,000) documents, the
  smallest k on a tie);
* ``random3``: 3 sentences drawn without replacement from each document (``numpy.random.default_rng(
  --seed)``, one generator over the documents in order), kept in document order; all of a shorter
  document. The mean specificity delta of ``--random-draws`` (20) such extracts, seeds ``--seed``,
  ``--seed`` + 1, ..., sets the bar of the verdict "specific to its document"
  (:func:`.specificity.random_draws`, :func:`.specificity.verdict`);
* ``oracle``: the greedy extractive oracle (Nallapati et al., 2017, SummaRuNNer §4; Kedzie et al.,
  2018): starting from no sentence, add the sentence whose addition gives the largest ROUGE-1 F1 +
  ROUGE-2 F1 of the selection against the reference, stop when no sentence improves it (or at
  ``--oracle-max-sentences``); the selection's n-gram counts are the sums of its sentences' (no
  n-gram across two sentences, as the usual implementations); output in document order;
* ``generic``: one training summary given as the summary of every document: the one with the highest
  mean, over the other training summaries, of (ROUGE-1 F1 + ROUGE-2 F1) / 2 against them (from
  cached n-gram counts, :class:`.specificity.BigramMatrix`); from at most ``--max-generic`` (1,000)
  training summaries, a seeded sample (``default_rng(--seed).choice``, sorted) when the split has
  more.

Sentences: ``--jsonl`` documents are split by the project's splitter
(:func:`fairseq_sum_plugins.text.split_sentences`, ``--sentence-splitter`` as in fairseq-sum-prepare
and the scorer: abbreviations such as "Dr.", "U.S.", "e.g." do not end a sentence; a list field is
taken as the sentences); ``--data``
reads ``WORK/raw/{split}.src``, split at prepare time by the splitter recorded in
``prepare_args.json``, and the untruncated references of ``WORK/bin/{split}.ref.jsonl`` (what
``fairseq-sum-score --data`` scores against). With ``--jsonl`` the validation and training files
default to ``valid.jsonl`` (or ``val.jsonl``, ``validation.jsonl``) and ``train.jsonl`` beside the
test file; without them ``leadk`` / ``generic`` are null, with a note.

**Bag of pieces** (``--data`` only; :func:`bag_of_pieces`): a model without training that predicts
every target piece ``y`` of document ``x`` as ``p(y) = lam * c_x(y) / |x| + (1 - lam) * u(y)``,
``c_x`` the counts of the pieces of the document's binarized source (its ``</s>`` included), ``u``
the unigram distribution of the training targets with add-one smoothing over the dictionary. ``lam``
in 0, 0.05, ..., 0.95 minimizes the validation NLL. Its test NLL (bits per target token, every
target token and ``</s>`` of the same binaries as :func:`.source_use.source_gain`, over its first
``--max-examples`` (1,000) examples, as source_use's default) and its source gain (NLL given
document ``i + 1`` minus given its own, source_use's pairing) are the floor a trained model's NLL
must pass.

Extracts (``--outputs DIR``): ``DIR/NAME.txt`` of each system computed, one line per test document,
its sentences as the scorer cleaned them joined by `` <sep> `` (the format of a run's committed
``decodings.txt``, :mod:`.decodings`): scored again with ``Scorer(detok=False)`` against the same
references they give the JSON's ROUGE exactly, which ``results_index --check`` recomputes, with
each model's paired bootstrap against Lead-3.

JSON (``--json``; the keys are stable): ``systems`` {``lead1``, ``lead3``, ``leadk``, ``random3``,
``oracle``, ``generic``: each ``rouge1`` / ``rouge2`` / ``rougeL`` (F1 in [0, 1]) with ``_ci``,
``specificity`` {``own``, ``other``, ``delta``, ``lower``, ``p``, ...} (points), ``sentences``
(mean extracted), ``distinct`` (different outputs), ``verdict`` (:func:`.specificity.verdict`),
and ``k`` / ``seed`` / ``train_index`` where they apply; or null}, ``bag_of_pieces`` {``nll``,
``nll_other``, ``gain``, ``lambda``, ``valid_nll``, ``examples``, ``tokens``, ``verdict``} or
null, ``random_draws`` {``seeds``, ``deltas``, ``mean``, ``min``, ``max``}, ``random_delta`` (their
mean), ``bar``, ``documents``, ``split``, ``notes``, and what identifies the data without a path of
the machine that ran it: ``source`` (the name of the ``--jsonl`` file or of the ``--data``
folder), ``inputs`` {name relative to the data: sha256} of every file read, ``data_sha256``
(``--data``: :func:`.decodings.data_sha256` of the split, the hash a run's ``decodings.json``
records) and ``options`` (the command line's options, paths as those names).

Outputs: ``--json`` and the extracts of ``--outputs`` may not be a file the command reads (resolved
through links; a hard link by its inode): the ``--jsonl`` files, the splits found beside it, and
every file of ``--data`` it opens (its sources, references, binaries, dictionaries,
``prepare_args.json``); refused before anything is read or written.
"""

import argparse
import json
import os
import sys
from collections import Counter

import numpy as np

from ...cli.outputs import refuse_clobber, refuse_unwritable
from ...scoring import rouge
from ...scoring.rouge_text import rouge_tokens
from ...scoring.score_inputs import ScoreInputError, int_at_least, jsonl_objects
from ...text import DEFAULT_SENTENCE_SPLITTER, SENT_SEP, split_sentences
from ...scoring import specificity as sp

SYSTEMS = ("lead1", "lead3", "leadk", "random3", "oracle", "generic")
LAMBDAS = tuple(
    round(0.05 * i, 2) for i in range(20)
)  # 0 .. 0.95 (1 would give unseen pieces p = 0)
VALID_NAMES = ("valid", "val", "validation")


class BaselineError(ValueError):
    """Bad input of fairseq-sum-baselines; the message names the file (and line) or flag."""


# ------------------------------------------------------------------------------------ reading
def read_jsonl(
    path,
    src_field="document",
    tgt_field="summary",
    splitter=DEFAULT_SENTENCE_SPLITTER,
    documents=True,
):
    """(documents as sentence lists, reference texts) of a JSONL file; bad JSON, a missing or empty
    field
    names the line."""
    docs, refs = [], []
    try:  # the scorer's JSONL reader (invalid bytes or JSON name the line)
        objects = list(jsonl_objects(path))
    except ScoreInputError as e:
        raise BaselineError(str(e)) from None
    for lineno, obj in objects:
        values = []
        for field, flag in ((src_field, "--src-field"), (tgt_field, "--tgt-field")):
            value = obj.get(field) if isinstance(obj, dict) else None
            if not isinstance(value, (str, list)):
                raise BaselineError(f"{path}:{lineno}: no text field {field!r} ({flag})")
            values.append(value)
        # documents=False (the training split: only its summaries are used): not split
        sents = split_sentences(values[0], splitter) if documents else [str(values[0])]
        if not sents or not sents[0].strip():
            raise BaselineError(f"{path}:{lineno}: empty document ({src_field!r})")
        ref = "\n".join(values[1]) if isinstance(values[1], list) else values[1]
        if not ref.strip():
            raise BaselineError(f"{path}:{lineno}: empty summary ({tgt_field!r})")
        docs.append(sents)
        refs.append(ref)
    if not docs:
        raise BaselineError(f"{path}: no JSON records")
    return docs, refs


def sibling(path, names):
    """The first of ``names`` + ``.jsonl`` beside ``path``, or None."""
    for name in names:
        candidate = os.path.join(os.path.dirname(os.path.abspath(path)), name + ".jsonl")
        if os.path.isfile(candidate) and os.path.abspath(candidate) != os.path.abspath(path):
            return candidate
    return None


def prepared_folders(folder):
    """(WORK, WORK/bin) of a folder of fairseq-sum-prepare given as WORK or WORK/bin."""
    if os.path.isfile(os.path.join(folder, "bin", "prepare_args.json")):
        return folder, os.path.join(folder, "bin")
    if os.path.isfile(os.path.join(folder, "prepare_args.json")):
        return os.path.dirname(os.path.abspath(folder)), folder
    raise BaselineError(
        f"--data {folder}: no prepare_args.json in it or in its bin/ (a folder of "
        "fairseq-sum-prepare)"
    )


def prepared_inputs(folder, split):
    """{name relative to WORK: path} of every file of a prepared folder that ``--data`` reads:
    ``raw/{split,valid}.src``, ``bin/{split,valid,train}.ref.jsonl``, ``bin/prepare_args.json``,
    the dictionaries and the binaries of the three splits (those present)."""
    work, bin_dir = prepared_folders(folder)
    out = {}
    for sub, d in (("raw", os.path.join(work, "raw")), ("bin", bin_dir)):
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if sub == "raw":
                read = name in (f"{split}.src", "valid.src")
            else:
                read = (name == "prepare_args.json" or name.startswith("dict.")
                        or any(name.startswith(f"{s}.") and name.endswith((".bin", ".idx"))
                               or name == f"{s}.ref.jsonl" for s in (split, "valid", "train")))
            if read and os.path.isfile(os.path.join(d, name)):
                out[f"{sub}/{name}"] = os.path.join(d, name)
    return out


def jsonl_inputs(test, valid, train):
    """{name: path} of the --jsonl files read (names relative to the test file's folder)."""
    here = os.path.dirname(os.path.abspath(test))
    return {os.path.relpath(os.path.abspath(p), here): p for p in (test, valid, train) if p}


def read_paths(args):
    """``[(flag, path)]`` of what the command reads, for the output guard: ``--jsonl`` and the
    splits beside it (or ``--valid-jsonl``/``--train-jsonl``), or ``--data``'s ``bin/`` folder and
    the ``raw/`` files it reads (the rest of ``WORK`` may hold the outputs: recipes write
    ``WORK/baselines.json``)."""
    if args.jsonl:
        return [("--jsonl", args.jsonl),
                ("--valid-jsonl", args.valid_jsonl or sibling(args.jsonl, VALID_NAMES)),
                ("--train-jsonl", args.train_jsonl or sibling(args.jsonl, ("train",)))]
    return prepared_reads("--data", args.data, args.split)


def prepared_reads(flag, folder, split):
    """``[(flag, path)]`` of a prepared folder read (:func:`read_prepared`), for the output guard:
    its ``bin/`` folder and the ``raw/`` files of :func:`prepared_inputs` (the rest of ``WORK``
    may hold outputs); the folder itself when it is not a prepared one (said when it is read)."""
    try:
        bin_dir = prepared_folders(folder)[1]
        inputs = prepared_inputs(folder, split)
    except (BaselineError, OSError):
        return [(flag, folder)]
    return [(flag, bin_dir)] + [(flag, path) for name, path in sorted(inputs.items())
                                if name.startswith("raw/")]


def output_paths(json_path, outputs_dir):
    """``[(flag, path)]`` of what the command writes: ``--json`` and each extract of
    ``--outputs``."""
    names = SYSTEMS if outputs_dir else ()
    return [("--json", json_path)] + [("--outputs", os.path.join(outputs_dir, f"{n}.txt"))
                                      for n in names]


def read_prepared(folder, split, documents=True):
    """(documents as sentence lists, reference texts) of ``split`` of a prepared folder; with
    ``documents=False`` (the training split: only its summaries are used) the documents are None."""
    work, bin_dir = prepared_folders(folder)
    src, ref = os.path.join(work, "raw", f"{split}.src"), os.path.join(
        bin_dir, f"{split}.ref.jsonl"
    )
    for path in (src, ref) if documents else (ref,):
        if not os.path.isfile(path):
            raise BaselineError(
                f"--data {folder}: {path} missing (run fairseq-sum-prepare on the split {split!r})"
            )
    docs = None
    if documents:
        with open(src, encoding="utf-8") as f:
            docs = [
                [s.strip() for s in line.rstrip("\n").split(f" {SENT_SEP} ") if s.strip()]
                for line in f
            ]
    refs = []
    with open(ref, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            try:
                refs.append("\n".join(json.loads(line)["summary"]))
            except (ValueError, KeyError, TypeError):
                raise BaselineError(
                    f"{ref}:{lineno}: not a reference record of fairseq-sum-prepare"
                ) from None
    if docs is not None and len(docs) != len(refs):
        raise BaselineError(
            f"{src} has {len(docs)} documents but {ref} {len(refs)} references (prepared again "
            "since?)"
        )
    return docs, refs


# ------------------------------------------------------------------------------------ systems
def lead(docs, k):
    """The first ``k`` sentences of every document."""
    return [d[:k] for d in docs]


def random_extract(docs, k=3, seed=1):
    """``k`` sentences of every document drawn without replacement (one seeded generator over the
    documents in order), in document order; all of a shorter document."""
    rng = np.random.default_rng(seed)
    out = []
    for d in docs:
        if len(d) <= k:
            out.append(list(d))
        else:
            out.append([d[i] for i in sorted(rng.choice(len(d), k, replace=False))])
    return out


def ngram_counts(tokens, n):
    return Counter(zip(*(tokens[i:] for i in range(n))))


def _f1(overlap, hyp_total, ref_total):
    p, r = overlap / max(hyp_total, 1), overlap / max(ref_total, 1)
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def oracle_indices(doc_sents, ref_text, max_sentences=None):
    """Indices (document order) of the greedy oracle's sentences (module docstring)."""
    ref_tokens = rouge_tokens(ref_text)
    ref = [ngram_counts(ref_tokens, n) for n in (1, 2)]
    ref_total = [sum(c.values()) for c in ref]
    sents = [[ngram_counts(t, n) for n in (1, 2)] for t in (rouge_tokens(s) for s in doc_sents)]
    chosen, sel, best = [], [Counter(), Counter()], 0.0
    overlap, total = [0, 0], [0, 0]
    while max_sentences is None or len(chosen) < max_sentences:
        pick = None
        for i, counts in enumerate(sents):
            if i in chosen:
                continue
            score, new = 0.0, []
            for n in range(2):
                ov = overlap[n] + sum(
                    min(sel[n][g] + k, ref[n][g]) - min(sel[n][g], ref[n][g])
                    for g, k in counts[n].items()
                    if g in ref[n]
                )
                tot = total[n] + sum(counts[n].values())
                new.append((ov, tot))
                score += _f1(ov, tot, ref_total[n])
            if score > best + 1e-12:
                best, pick, pick_new = score, i, new
        if pick is None:
            break
        chosen.append(pick)
        for n in range(2):
            sel[n].update(sents[pick][n])
            overlap[n], total[n] = pick_new[n]
    return sorted(chosen)


def oracle(docs, refs, max_sentences=None):
    """The greedy oracle's extract of every document."""
    return [[d[i] for i in oracle_indices(d, r, max_sentences)] for d, r in zip(docs, refs)]


def _r12_matrix(hyp_tokens, ref_tokens):
    """Dense (ROUGE-1 F1 + ROUGE-2 F1) / 2 x 100 of every hypothesis against every reference."""
    out = 0
    for n in (1, 2):
        out = (
            out
            + sp.BigramMatrix(
                [ngram_counts(t, n) for t in hyp_tokens], [ngram_counts(t, n) for t in ref_tokens]
            ).matrix()
        )
    return out / 2


def choose_lead_k(docs, refs, max_k=10, max_docs=2000):
    """(k, {k: mean (ROUGE-1 F1 + ROUGE-2 F1) / 2 x 100}) of Lead-k on the first ``max_docs``
    documents."""
    docs, refs = docs[:max_docs], refs[:max_docs]
    ref_tokens = [ngram_counts(rouge_tokens(r), n) for r in refs for n in (1, 2)]
    scores = {}
    for k in range(1, max_k + 1):
        total = 0.0
        for j, d in enumerate(docs):
            tokens = rouge_tokens("\n".join(d[:k]))
            for n in (1, 2):
                c, ref = ngram_counts(tokens, n), ref_tokens[2 * j + n - 1]
                total += _f1(
                    sum(min(v, ref[g]) for g, v in c.items()), sum(c.values()), sum(ref.values())
                )
        scores[k] = 100 * total / (2 * len(docs))
    best = max(scores, key=lambda k: (scores[k], -k))
    return best, scores


def generic_summary(train_refs, max_summaries=1000, seed=1):
    """(index in ``train_refs``, candidates compared) of the training summary with the highest mean
    (ROUGE-1 F1 + ROUGE-2 F1) / 2 against the other candidates (module docstring)."""
    n = len(train_refs)
    if n < 2:
        raise BaselineError(f"the generic summary needs at least 2 training summaries, got {n}")
    idx = (
        np.arange(n)
        if n <= max_summaries
        else np.sort(np.random.default_rng(seed).choice(n, max_summaries, replace=False))
    )
    tokens = [rouge_tokens(train_refs[i]) for i in idx]
    m = _r12_matrix(tokens, tokens)
    mean_other = (m.sum(1) - np.diag(m)) / (len(idx) - 1)
    return int(idx[int(np.argmax(mean_other))]), len(idx)


# ------------------------------------------------------------------------------------ scoring
def random_bar_draws(docs, refs, scorer, seed=1, draws=sp.RANDOM_DRAWS):
    """:func:`.specificity.random_draws` of :func:`random_extract` with seeds ``seed`` ..
    ``seed + draws - 1``, cleaned as ``scorer`` cleans a system's outputs."""
    ref_sents = scorer.pairs(refs, refs)[1]
    return sp.random_draws(
        docs, ref_sents, lambda s: scorer.pairs(random_extract(docs, 3, s), refs)[0],
        range(seed, seed + draws))


def score_system(hyps, refs, scorer, permutations=sp.DEFAULT_PERMUTATIONS, seed=1):
    """ROUGE-1/2/L (``Scorer.corpus``) and ``specificity`` of one system's outputs (sentence
    lists)."""
    hyp_sents, ref_sents = scorer.pairs(hyps, refs)
    res = rouge.aggregate(
        {
            m: rows
            for m, rows in scorer.documents(hyp_sents, ref_sents).items()
            if m in rouge.MAIN_METRICS
        },
        scorer.bootstrap_samples,
        scorer.seed,
    )
    res["specificity"] = sp.specificity(hyp_sents, ref_sents, permutations, seed)
    res["sentences"] = float(np.mean([len(h) for h in hyps]))
    res["distinct"] = len({"\n".join(h) for h in hyp_sents})
    return res


# ------------------------------------------------------------------------------- bag of pieces
def _pair_files(bin_dir, split):
    """(source prefix, target prefix) of ``split``'s binaries in ``bin_dir``."""
    import re

    pattern = re.compile(rf"^{re.escape(split)}\.([^.]+)-([^.]+)\.([^.]+)\.idx$")
    for name in sorted(os.listdir(bin_dir)):
        m = pattern.match(name)
        if m and m.group(3) == m.group(1):
            src, tgt = m.group(1), m.group(2)
            return (
                os.path.join(bin_dir, f"{split}.{src}-{tgt}.{src}"),
                os.path.join(bin_dir, f"{split}.{src}-{tgt}.{tgt}"),
                tgt,
            )
    raise BaselineError(f"{bin_dir}: no binarized split {split!r} ({split}.SRC-TGT.SRC.idx)")


def load_pairs(bin_dir, split, max_examples=None):
    """(sources, targets): lists of int arrays of the first ``max_examples`` binarized examples."""
    from fairseq.data import Dictionary, data_utils

    src_prefix, tgt_prefix, tgt = _pair_files(bin_dir, split)
    dictionary = Dictionary.load(os.path.join(bin_dir, f"dict.{tgt}.txt"))
    out = []
    for prefix in (src_prefix, tgt_prefix):
        ds = data_utils.load_indexed_dataset(prefix, dictionary)
        if ds is None:
            raise BaselineError(f"{prefix}.bin / .idx: cannot be read")
        n = len(ds) if not max_examples else min(max_examples, len(ds))
        out.append([ds[i].numpy().astype(np.int64) for i in range(n)])
    if len(out[0]) != len(out[1]):
        raise BaselineError(
            f"{bin_dir}: {split} has {len(out[0])} sources but {len(out[1])} targets"
        )
    return out[0], out[1], len(dictionary)


def unigram(targets, vocab_size):
    """Add-one unigram distribution of the pieces of ``targets`` over ``vocab_size`` symbols."""
    counts = np.bincount(np.concatenate(targets), minlength=vocab_size).astype(np.float64) + 1
    return counts / counts.sum()


def _token_probs(sources, targets, uni, shift=0):
    """(document probability, unigram probability) of every target token, with the source of example
    ``(i + shift) % n`` for target ``i``."""
    n = len(targets)
    doc_p, uni_p = [], []
    for i, t in enumerate(targets):
        s = sources[(i + shift) % n]
        c = np.bincount(s, minlength=len(uni))
        doc_p.append(c[t] / len(s))
        uni_p.append(uni[t])
    return np.concatenate(doc_p), np.concatenate(uni_p)


def mixture_nll(doc_p, uni_p, lam):
    """Bits per token of ``lam * doc_p + (1 - lam) * uni_p``."""
    return float(-np.log2(lam * doc_p + (1 - lam) * uni_p).mean())


def bag_of_pieces(bin_dir, split="test", max_examples=1000, lambdas=LAMBDAS, train=None):
    """``{'nll', 'nll_other', 'gain', 'lambda', 'valid_nll', 'examples', 'tokens'}`` of the
    bag-of-pieces baseline (module docstring) on ``split`` of the binaries in ``bin_dir``; ``lam``
    chosen on valid.
    """
    _, train_tgt, vocab = load_pairs(bin_dir, "train") if train is None else train
    uni = unigram(train_tgt, vocab)
    valid_src, valid_tgt, _ = load_pairs(bin_dir, "valid", max_examples)
    vd, vu = _token_probs(valid_src, valid_tgt, uni)
    valid = {lam: mixture_nll(vd, vu, lam) for lam in lambdas}
    lam = min(valid, key=lambda x: (valid[x], x))
    src, tgt, _ = load_pairs(bin_dir, split, max_examples)
    if len(tgt) < 2:
        raise BaselineError(
            f"the bag of pieces' source gain needs at least 2 examples of {split!r}, got {len(tgt)}"
        )
    own = mixture_nll(*_token_probs(src, tgt, uni), lam)
    other = mixture_nll(*_token_probs(src, tgt, uni, shift=1), lam)
    return {
        "nll": own,
        "nll_other": other,
        "gain": other - own,
        "lambda": lam,
        "valid_nll": valid[lam],
        "examples": len(tgt),
        "tokens": int(sum(len(t) for t in tgt)),
    }


# ---------------------------------------------------------------------------------------- run
def output_lines(hyps, refs, scorer):
    """One line per document of a system's sentence lists: the sentences as ``scorer`` cleans
    them, joined by `` <sep> `` (a committed ``decodings.txt``'s format)."""
    from ..decodings import JOIN

    return [JOIN.join(s) for s in scorer.pairs(hyps, refs)[0]]


def run(
    docs,
    refs,
    scorer,
    valid=None,
    train_refs=None,
    seed=1,
    permutations=sp.DEFAULT_PERMUTATIONS,
    max_lead=10,
    max_valid=2000,
    max_generic=1000,
    oracle_max_sentences=None,
    log=None,
    texts=None,
    draws=sp.RANDOM_DRAWS,
):
    """The ``systems`` of the JSON (module docstring), its notes and the random draws of the bar;
    ``texts``, a dict, receives each system's :func:`output_lines`."""
    log = log or (lambda msg: None)
    systems, notes = {}, []
    outputs = {"lead1": (lead(docs, 1), {}), "lead3": (lead(docs, 3), {})}
    if valid is not None:
        k, by_k = choose_lead_k(*valid, max_lead, max_valid)
        outputs["leadk"] = (lead(docs, k), {"k": k, "valid_scores": by_k})
        log(f"lead-k: k = {k} on validation")
    else:
        notes.append("leadk: no validation split")
    outputs["random3"] = (random_extract(docs, 3, seed), {"seed": seed})
    outputs["oracle"] = (
        oracle(docs, refs, oracle_max_sentences),
        {"max_sentences": oracle_max_sentences},
    )
    if train_refs is not None:
        index, compared = generic_summary(train_refs, max_generic, seed)
        outputs["generic"] = (
            [train_refs[index]] * len(docs),
            {"train_index": index, "candidates": compared},
        )
        log(f"generic summary: training summary {index} (of {compared} compared)")
    else:
        notes.append("generic: no training split")
    for name in SYSTEMS:
        if name not in outputs:
            systems[name] = None
            continue
        hyps, extra = outputs[name]
        log(f"scoring {name}")
        systems[name] = {**score_system(hyps, refs, scorer, permutations, seed), **extra}
        if texts is not None:
            texts[name] = output_lines(hyps, refs, scorer)
    log(f"the bar: {draws} random extracts")
    return systems, notes, random_bar_draws(docs, refs, scorer, seed, draws)


def add_verdicts(result):
    """The verdict of every system (and of the bag of pieces) against the bar of this test set's
    random draws (``result["random_draws"]``)."""
    result["random_delta"] = sp.random_mean(
        {"random_draws": result.get("random_draws")})
    result["bar"] = sp.specificity_bar(result["random_delta"])
    bag = result.get("bag_of_pieces")
    bag_nll = bag["nll"] if bag else None
    for name, s in result["systems"].items():
        if s is not None:
            s["verdict"] = sp.verdict(
                s["specificity"],
                result["random_delta"],
                distinct=s["distinct"],
                outputs=result["documents"],
                deltas=sp.random_deltas(result),
            )
    if bag:
        bag["verdict"] = sp.verdict(
            None, result["random_delta"], nll=bag["nll"], bag_nll=bag_nll, gain=bag["gain"],
            deltas=sp.random_deltas(result),
        )
    return result


def format_table(result):
    """Text table: ROUGE-1/2/L F1 x 100 and specificity of every system, and the bag of pieces."""
    lines = [
        f"{result['documents']} documents of {result['split']} ({result['source']}); scores x 100; "
        f"specificity delta with its {sp.LEVEL:.0%} one-sided document-bootstrap lower bound",
        f"{'system':12s} {'R-1':>6s} {'R-2':>6s} {'R-L':>6s} {'own':>6s} {'other':>6s} "
        f"{'delta':>7s} {'lower':>7s}",
    ]
    for name, s in result["systems"].items():
        if s is None:
            lines.append(f"{name:12s} (not computed)")
            continue
        spec = s["specificity"]
        label = f"leadk(k={s['k']})" if name == "leadk" else name
        lines.append(
            f"{label:12s} {100 * s['rouge1']:6.2f} {100 * s['rouge2']:6.2f} "
            f"{100 * s['rougeL']:6.2f} "
            f"{spec['own']:6.2f} {spec['other']:6.2f} {round(spec['delta'], 9) + 0.0:+7.2f} "
            f"{round(spec['lower'], 9) + 0.0:+7.2f}"
        )
    if result.get("bar") is not None:
        draws = result["random_draws"]
        lines.append(
            f"bar of the verdict 'specific to its document': the lower bound above "
            f"{result['bar']:.2f} = max({sp.BAR_FLOOR}, {sp.BAR_RANDOM_SHARE} x the mean delta "
            f"{draws['mean']:+.2f} of {len(draws['seeds'])} random extracts, seeds "
            f"{draws['seeds'][0]}-{draws['seeds'][-1]}, range {draws['min']:+.2f} .. "
            f"{draws['max']:+.2f})"
        )
    bag = result.get("bag_of_pieces")
    if bag:
        lines.append(
            f"bag of pieces (no training, lambda {bag['lambda']:.2f} on valid): test NLL "
            f"{bag['nll']:.3f} "
            f"bits/token, {bag['nll_other']:.3f} with another document: source gain "
            f"{bag['gain']:.3f} over "
            f"{bag['examples']} examples ({bag['tokens']} target tokens)"
        )
    lines += [f"note: {n}" for n in result.get("notes", [])]
    return "\n".join(lines)


def get_parser():
    p = argparse.ArgumentParser(
        prog="fairseq-sum-baselines",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--jsonl", metavar="TEST.jsonl", help="test documents and summaries, one JSON object a line"
    )
    src.add_argument(
        "--data", metavar="WORK", help="a folder of fairseq-sum-prepare (WORK or WORK/bin)"
    )
    p.add_argument(
        "--valid-jsonl",
        metavar="FILE",
        help="validation split of --jsonl (Lead-k's k; default: "
        "valid.jsonl / val.jsonl / validation.jsonl beside it)",
    )
    p.add_argument(
        "--train-jsonl",
        metavar="FILE",
        help="training split of --jsonl (the generic summary; " "default: train.jsonl beside it)",
    )
    p.add_argument("--src-field", default="document", help="document field of --jsonl")
    p.add_argument("--tgt-field", default="summary", help="summary field of --jsonl")
    p.add_argument("--split", default="test", help="split of --data to score (default test)")
    p.add_argument(
        "--seed",
        type=int_at_least(0),
        default=1,
        help="seed of random3, the generic sample, the bootstrap and " "the permutations",
    )
    p.add_argument(
        "--permutations",
        type=int_at_least(sp.MIN_PERMUTATIONS),
        default=sp.DEFAULT_PERMUTATIONS,
        help="permutations of the specificity p-value (>= 1000)",
    )
    p.add_argument(
        "--bootstrap-samples",
        type=int_at_least(0),
        default=1000,
        help="bootstrap resamples (0: no CIs)",
    )
    p.add_argument("--max-lead", type=int_at_least(1), default=10, help="largest k of Lead-k")
    p.add_argument(
        "--max-valid",
        type=int_at_least(1),
        default=2000,
        help="validation documents for Lead-k's k",
    )
    p.add_argument(
        "--max-generic",
        type=int_at_least(2),
        default=1000,
        help="training summaries compared for the generic summary (a seeded sample above it)",
    )
    p.add_argument(
        "--oracle-max-sentences",
        type=int_at_least(1),
        default=None,
        help="cap of the greedy oracle (default: until no sentence improves ROUGE-1 + ROUGE-2)",
    )
    p.add_argument(
        "--max-examples",
        type=int_at_least(2),
        default=1000,
        help="examples of the bag-of-pieces NLL (source_use.py's default)",
    )
    p.add_argument(
        "--random-draws",
        type=int_at_least(sp.RANDOM_DRAWS),
        default=sp.RANDOM_DRAWS,
        help="random extracts whose mean specificity delta sets the bar (seeds --seed on; >= 20)",
    )
    p.add_argument("--json", metavar="FILE", help="write the numbers here")
    p.add_argument(
        "--outputs",
        metavar="DIR",
        help="write each system's extracts to DIR/NAME.txt, one line per document (created)",
    )
    scorer_group = p.add_argument_group("scorer (as fairseq-sum-score)")
    rouge.add_scorer_options(scorer_group, rouge.DOCUMENT_BACKENDS)
    return p


def main(argv=None):
    """Runs ``fairseq-sum-baselines`` and returns its result."""
    parser = get_parser()
    args = parser.parse_args(argv)
    refuse_clobber(parser, read_paths(args), output_paths(args.json, args.outputs))
    if args.data and (args.valid_jsonl or args.train_jsonl):
        parser.error(
            "--valid-jsonl / --train-jsonl go with --jsonl (--data reads the folder's splits)"
        )
    for flag in ("jsonl", "valid_jsonl", "train_jsonl"):
        path = getattr(args, flag)
        if path is not None and not os.path.isfile(path):
            parser.error(f"--{flag.replace('_', '-')} {path}: no such file")
    for flag in ("valid_jsonl", "train_jsonl"):  # a split of its own, not the test file again
        path = getattr(args, flag)
        if path is not None and args.jsonl and os.path.realpath(path) == os.path.realpath(
                args.jsonl):
            parser.error(f"--{flag.replace('_', '-')} {path}: the test file itself (--jsonl)")
    refuse_unwritable(parser, [("--json", args.json)])
    if args.outputs and os.path.exists(args.outputs) and not os.path.isdir(args.outputs):
        parser.error(f"--outputs {args.outputs}: not a folder")
    for name in SYSTEMS if args.outputs else ():
        path = os.path.join(args.outputs, f"{name}.txt")
        if os.path.lexists(path) and (os.path.islink(path) or not os.path.isfile(path)):
            parser.error(
                f"--outputs {args.outputs}: {path} is not a plain file (a link or a folder)"
            )
    if args.json and os.path.isdir(args.json):
        parser.error(f"--json {args.json}: a folder")
    texts = {} if args.outputs else None

    def log(msg):
        print(f"[baselines] {msg}", file=sys.stderr)

    try:
        if args.jsonl:  # every file read, resolved before anything is read or written
            valid_path = args.valid_jsonl or sibling(args.jsonl, VALID_NAMES)
            train_path = args.train_jsonl or sibling(args.jsonl, ("train",))
            inputs = jsonl_inputs(args.jsonl, valid_path, train_path)
        else:
            inputs = prepared_inputs(args.data, args.split)
        if args.jsonl:
            docs, refs = read_jsonl(
                args.jsonl, args.src_field, args.tgt_field, args.sentence_splitter
            )
            valid = (
                read_jsonl(valid_path, args.src_field, args.tgt_field, args.sentence_splitter)
                if valid_path
                else None
            )
            train_refs = (
                read_jsonl(
                    train_path, args.src_field, args.tgt_field, args.sentence_splitter, False
                )[1]
                if train_path
                else None
            )
            source, split = os.path.basename(args.jsonl), "test"
        else:
            docs, refs = read_prepared(args.data, args.split)
            valid = read_prepared(args.data, "valid")
            train_refs = read_prepared(args.data, "train", documents=False)[1]
            work = prepared_folders(args.data)[0]
            source, split = os.path.basename(os.path.normpath(work)), args.split
        if len(docs) < 2:
            raise BaselineError(
                f"{source}: {len(docs)} document; the baselines' specificity needs at least 2"
            )
        scorer = rouge.scorer_from_args(
            args, refs, bootstrap_samples=args.bootstrap_samples, seed=args.seed
        ).check()
        systems, notes, draws = run(
            docs,
            refs,
            scorer,
            valid,
            train_refs,
            args.seed,
            args.permutations,
            args.max_lead,
            args.max_valid,
            args.max_generic,
            args.oracle_max_sentences,
            log,
            texts,
            args.random_draws,
        )
        result = {
            "source": source,
            **provenance(args, inputs, split),
            "split": split,
            "documents": len(docs),
            "scorer": args.scorer,
            "seed": args.seed,
            "systems": systems,
            "notes": notes,
            "bag_of_pieces": None,
            "random_draws": draws,
        }
        if args.data:
            log("bag of pieces")
            result["bag_of_pieces"] = bag_of_pieces(
                prepared_folders(args.data)[1], args.split, args.max_examples
            )
        add_verdicts(result)
    except (ValueError, RuntimeError, OSError) as e:
        sys.exit(f"fairseq-sum-baselines: error: {e}")
    print(format_table(result))
    if texts is not None:
        write_outputs(args.outputs, texts)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return result


PATH_OPTIONS = ("jsonl", "data", "valid_jsonl", "train_jsonl", "json", "outputs")


def provenance(args, inputs, split):
    """``inputs`` {name: sha256}, ``data_sha256`` (``--data``) and ``options`` (module docstring):
    what identifies the data and the command, with no path of this machine."""
    from ..decodings import data_sha256, sha256_file

    out = {"inputs": {name: sha256_file(path) for name, path in sorted(inputs.items())}}
    if args.data:
        out["data_sha256"] = data_sha256(prepared_folders(args.data)[1], split)
    options = {k: v for k, v in sorted(vars(args).items()) if k not in PATH_OPTIONS}
    for k in PATH_OPTIONS:  # which path flags were given, as names
        value = getattr(args, k, None)
        if value is not None:
            options[k] = os.path.basename(os.path.normpath(value))
    out["options"] = options
    return out


def write_outputs(folder, texts):
    """Writes ``folder/NAME.txt`` of each system in ``texts`` (:func:`.decodings.write_lines`, as
    a run's decodings are written), after checking that every line is valid Unicode (a lone
    surrogate from a JSON escape is an error naming the system and document, before any file is
    written); a system not computed now loses the file of an earlier run. Then
    ``folder/SHA256SUMS``, the extracts' hashes that the results check compares
    (:mod:`.baseline_extracts`)."""
    from .extracts import write_sums
    from ..decodings import write_lines

    for name, lines in texts.items():
        for i, line in enumerate(lines):
            try:
                line.encode("utf-8")
            except UnicodeEncodeError as e:
                sys.exit(f"fairseq-sum-baselines: error: {name}, document {i + 1}: text that is "
                         f"not valid Unicode ({e.reason} at character {e.start})")
    os.makedirs(folder, exist_ok=True)
    for name in SYSTEMS:
        path = os.path.join(folder, f"{name}.txt")
        if name in texts:
            write_lines(path, texts[name])
        elif os.path.exists(path):
            os.remove(path)
    write_sums(folder)


def cli_main():
    main()


if __name__ == "__main__":
    cli_main()
