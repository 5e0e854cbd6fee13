"""The scorer's one API (:class:`Scorer`) and the default ROUGE backend; imports without fairseq.

Every entry point scores through a :class:`Scorer`, built from the same options, so ``--scorer``,
``--sentence-sep``, ``--no-detok`` and ``--split-sentences`` mean the same everywhere:

* ``fairseq-sum-score`` (score.py): :func:`add_scorer_options`, :meth:`Scorer.corpus`;
* ``fairseq-sum-compare`` (evaluation/compare.py): :func:`add_scorer_options`,
  :meth:`Scorer.document_f1`;
* the gate sweep (inspection/gate_sweep.py): :func:`add_scorer_options`, :meth:`Scorer.documents`;
* ``--eval-rouge`` (tasks/summarization.py): ``--eval-rouge-scorer``, ``--eval-rouge-sentence-sep``,
  :meth:`Scorer.documents`;
* ``fairseq-generate --scoring rouge`` (fairseq_scoring.py): ``--scorer``, ``--sentence-sep``,
  :meth:`Scorer.documents`.

A score is two steps: :meth:`Scorer.sentences` / :meth:`Scorer.pairs` turn summaries into cleaned
sentence lists (:mod:`fairseq_sum_plugins.scoring.rouge_text`: split, clean, check the references),
then :meth:`Scorer.documents` gives per-document (recall, precision, F1) rows of one backend;
:meth:`Scorer.corpus` averages them over documents with the seeded bootstrap CIs of
:mod:`fairseq_sum_plugins.scoring.bootstrap` (and METEOR,
:mod:`fairseq_sum_plugins.scoring.meteor`). The functions :func:`score_summaries`,
:func:`document_scores`, :func:`prepare_pairs` and :func:`rouge_pair` are the same calls with
keyword options.

Backends (``--scorer``):

* ``rouge155-py`` (default): this package's Python ROUGE-1.5.5, the counting of
  :mod:`~fairseq_sum_plugins.scoring.rouge_counts` over ROUGE-1.5.5's tokenizer and stemmer
  (:func:`~fairseq_sum_plugins.scoring.rouge_text.rouge_tokens`). Named for what it is: ROUGE-1.5.5
  in Python, with no dependency (Google's ``rouge_score`` package is neither imported nor needed,
  and its default tokenizer, which drops non-ASCII words and stems with nltk's extended Porter,
  gives other figures). ``rouge-score``, the name it had when it counted with that package, is a
  deprecated alias (a warning says so; JSON files that record it still read: :func:`backend_name`).
  ROUGE-L is the SUMMARY-LEVEL ``rougeLsum`` (union LCS over sentences), which is what ROUGE-1.5.5
  and the papers report; plain ``rougeL`` (one LCS over the concatenated text) is reported as
  ``rougeL_plain`` and is not comparable to papers. Its per-document scores equal ROUGE-1.5.5's
  (tests/test_rouge155_documents.py: ROUGE-1/2/L (summary-level) and the plain ROUGE-L, recall,
  precision and F1 of 400 multi-sentence extracts of XSum test documents, each to the digits
  ROUGE-1.5.5 prints; its per-document F1 is that of its recall and precision at 5 decimals).
* ``official``: ROUGE-1.5.5 itself (:mod:`fairseq_sum_plugins.scoring.rouge155`), per document, over
  ``workers`` processes; also ROUGE-3/4, -W, -S*, -SU*.
* ``files2rouge``: the ``files2rouge`` executable; corpus averages only (no per-document scores).

An empty hypothesis scores 0 (it is not an error); a reference without any word is an error naming
its sample id or line (:meth:`Scorer.pairs`), or, where no id is known (validation, the gate sweep),
a document scored 0 (:meth:`Scorer.documents` with ``wordless_zero``).
"""
import argparse
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .bootstrap import bootstrap_ci
from .rouge_counts import pair_scores
from .rouge155 import (MAIN_METRICS, OFFICIAL_ARGS, build_exception_db, per_document_official,
                       rouge155_home, score_files2rouge)
from .rouge_text import as_sentences, clean_summary, countable, sentence_separators, split_summary
from .score_inputs import int_at_least
from ..text import DEFAULT_SENTENCE_SPLITTER, SENTENCE_SPLITTERS

# re-exported: the public names of the scorer's parts (rouge_text, rouge155, score_inputs)
from .rouge155 import (LABELS, check_perl, exception_db_entries, exception_db_lookup,  # noqa: F401
                       installed_path, parse_perl_documents, parse_perl_output)
from .rouge_text import (  # noqa: F401
    EXCEPTION_FILE_ORDER, KNOWN_SEPARATORS, RougeTokenizer, known_separators, rouge_tokens,
    rouge_words, wordnet_exceptions)
from .score_inputs import (  # noqa: F401
    read_generate_output, read_generate_sources, read_jsonl_field, read_lines, warn)

DEFAULT_BACKEND = "rouge155-py"
BACKENDS = (DEFAULT_BACKEND, "official", "files2rouge")
DOCUMENT_BACKENDS = (DEFAULT_BACKEND, "official")  # the backends with per-document scores
DEPRECATED_BACKENDS = {"rouge-score": DEFAULT_BACKEND}  # old name -> name
# what fairseq's options (--eval-rouge-scorer, --scoring rouge's --scorer) accept
DOCUMENT_BACKEND_NAMES = DOCUMENT_BACKENDS + tuple(DEPRECATED_BACKENDS)
_WARNED = set()
# (letter ROUGE-1.5.5 prints, result-key suffix) of each column of a per-document row; F is the bare
# key
MEASURES = (("R", "recall"), ("P", "precision"), ("F", None))


def backend_name(name, warn_deprecated=True):
    """The backend ``name`` stands for: itself, or the backend a deprecated name is an alias of
    (with a warning on stderr unless ``warn_deprecated`` is False); an unknown name is returned
    unchanged (the caller refuses it)."""
    new = DEPRECATED_BACKENDS.get(name)
    if new is None:
        return name
    if warn_deprecated and name not in _WARNED:  # once per process (validation builds many)
        _WARNED.add(name)
        warn(f"scorer {name!r} is a deprecated name of {new!r} (this package's ROUGE-1.5.5 in "
             "Python; Google's rouge_score package is not used)")
    return new


# ---------------------------------------------------------------------------------- rouge155-py
def _per_doc_rouge155_py(hyps, refs):
    """{metric: (n, 3) array of per-document (recall, precision, F1)}."""
    per = [pair_scores(h, r) for h, r in zip(hyps, refs)]
    return {
        m: np.array([[s[m].recall, s[m].precision, s[m].fmeasure]
                     for s in per], dtype=np.float64).reshape(-1, 3)
        for m in ("rouge1", "rouge2", "rougeL", "rougeL_plain")
    }


def aggregate(per_doc, bootstrap_samples=0, seed=1):
    """Flat result dict (``m``, ``m_recall``, ``m_precision`` and their ``_ci``) from per-document
    (recall, precision, F1) rows: means over documents, seeded percentile bootstrap CIs."""
    out = {}
    for m, rows in per_doc.items():
        mean = rows.mean(0)
        lo, hi = bootstrap_ci(rows, bootstrap_samples, seed) if bootstrap_samples else (None, None)
        for j, (_, name) in enumerate(MEASURES):
            key = m if name is None else f"{m}_{name}"
            out[key] = float(mean[j])
            if lo is not None:
                out[key + "_ci"] = [float(lo[j]), float(hi[j])]
    return out


# ---------------------------------------------------------------------------------------- the API
@dataclass(frozen=True)
class Scorer:
    """How summaries are scored: ``backend`` (``--scorer``), ``seps`` (``--sentence-sep`` tokens),
    ``detok`` (not ``--no-detok``), ``splitter`` (``--split-sentences`` with this
    ``--sentence-splitter``, None: off), ``rouge_args`` / ``workers`` (ROUGE-1.5.5), the bootstrap
    (``bootstrap_samples``, 0: no CIs; ``seed``) and ``meteor`` (None, ``nltk`` or ``1.5``)."""
    backend: str = DEFAULT_BACKEND
    seps: tuple = ()
    detok: bool = True
    splitter: Optional[str] = None
    rouge_args: str = OFFICIAL_ARGS
    workers: Optional[int] = None
    bootstrap_samples: int = 0
    seed: int = 1
    meteor: Optional[str] = None

    def __post_init__(self):
        object.__setattr__(self, "backend", backend_name(self.backend))
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown scorer {self.backend!r} ({', '.join(BACKENDS)})")
        if self.splitter is not None and self.splitter not in SENTENCE_SPLITTERS:
            raise ValueError(
                f"unknown sentence splitter {self.splitter!r} ({', '.join(SENTENCE_SPLITTERS)})")
        object.__setattr__(self, "seps", tuple(separator_token(t) for t in self.seps or ()))

    def check(self):
        """Fail early, saying how to install it, when ROUGE-1.5.5 (``official``) cannot run; returns
        self."""
        if self.backend == "official":
            rouge155_home()
            build_exception_db()
        return self

    # -- summaries -> cleaned sentence lists
    def sentences(self, summary):
        """The cleaned sentences of one summary or document (a string or a list of sentences)."""
        if self.splitter is not None:
            summary = [s for part in ([summary] if isinstance(summary, str) else summary)
                       for s in split_summary(part, self.splitter)]
        return as_sentences(summary, self.detok, self.seps)

    def pairs(self, hyps, refs, ids=None):
        """Cleaned sentence lists of parallel hypotheses and references, checked: an empty or
        wordless reference raises ``ValueError`` naming its sample id (``ids``), else its line
        (0-based)."""
        if len(hyps) != len(refs):
            raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
        if not hyps:
            raise ValueError("nothing to score")
        hyp_sents, ref_sents = [self.sentences(h) for h in hyps], [self.sentences(r) for r in refs]
        for i, r in enumerate(ref_sents):
            where = f"of sample {ids[i]}" if ids is not None else f"at line {i} (0-based)"
            if not r:
                raise ValueError(f"empty reference {where}: {refs[i]!r}")
            if not countable(r):
                raise ValueError(f"reference {where} has no word ROUGE can count: {refs[i]!r}")
        return hyp_sents, ref_sents

    # -- scores
    def documents(self, hyp_sents, ref_sents, wordless_zero=False):
        """{metric: (n, 3) per-document (recall, precision, F1)} of cleaned sentence lists (the
        backend's metrics). ``wordless_zero``: a document whose reference has no word scores 0
        (the backend does not see it), where no sample id can name it."""
        if self.backend == "files2rouge":
            raise ValueError(
                f"files2rouge gives no per-document scores (use {DEFAULT_BACKEND} or official)")
        keep = [i for i, r in enumerate(ref_sents)
                if countable(r)] if wordless_zero else range(len(ref_sents))
        if len(keep) == len(ref_sents):
            return self._per_doc(hyp_sents, ref_sents)
        if not keep:
            return {m: np.zeros((len(ref_sents), 3)) for m in MAIN_METRICS}
        per = self._per_doc([hyp_sents[i] for i in keep], [ref_sents[i] for i in keep])
        out = {m: np.zeros((len(ref_sents), 3)) for m in per}
        for m, rows in per.items():
            out[m][keep] = rows
        return out

    def _per_doc(self, hyp_sents, ref_sents):
        if self.backend == "official":
            return per_document_official(hyp_sents, ref_sents, self.rouge_args, self.workers)
        return _per_doc_rouge155_py(hyp_sents, ref_sents)

    def corpus(self, hyps, refs, ids=None):
        """Flat dict: ``rouge1``, ``rouge2``, ``rougeL`` (summary-level) F1s in [0, 1], plus
        ``<metric>_precision`` / ``<metric>_recall``, ``<key>_ci`` = [low, high] 95% intervals (the
        seeded bootstrap over documents when ``bootstrap_samples``; files2rouge: ROUGE-1.5.5's own),
        ``rougeL_plain`` for rouge155-py, the extra ROUGE-1.5.5 metrics for the perl scorers,
        ``meteor`` / ``meteor_impl`` / ``meteor_ci`` with ``meteor``, and ``num_summaries``."""
        hyp_sents, ref_sents = self.pairs(hyps, refs, ids)
        if self.backend == "files2rouge":
            out = score_files2rouge(hyp_sents, ref_sents, self.rouge_args)
        else:
            out = aggregate(self.documents(hyp_sents, ref_sents), self.bootstrap_samples, self.seed)
        if self.meteor:
            from .meteor import meteor_corpus

            out.update(meteor_corpus(hyp_sents, ref_sents, self.meteor, self.bootstrap_samples,
                                     self.seed))
        out["num_summaries"] = len(hyps)
        return out

    def document_f1(self, hyps, refs, metrics=MAIN_METRICS, ids=None):
        """{metric: array (n,)} of per-document F1s (``meteor``: METEOR of ``self.meteor`` or
        nltk's, per pair; the 1.5 jar's segment scores) of raw summaries, for paired tests."""
        hyp_sents, ref_sents = self.pairs(hyps, refs, ids)
        out = {}
        rouge_metrics = [m for m in metrics if m != "meteor"]
        if rouge_metrics:
            per = self.documents(hyp_sents, ref_sents)
            missing = [m for m in rouge_metrics if m not in per]
            if missing:
                raise ValueError(f"--scorer {self.backend} has no metric {', '.join(missing)} "
                                 f"(it has {', '.join(per)})")
            out.update({m: per[m][:, 2].copy() for m in rouge_metrics})
        if "meteor" in metrics:
            from .meteor import meteor_scores

            out["meteor"] = np.asarray(meteor_scores(hyp_sents, ref_sents, self.meteor or "nltk"),
                                       dtype=np.float64)
        return {m: out[m] for m in metrics}


# ----------------------------------------------------------------------------- command-line options
def add_scorer_options(p, backends=BACKENDS):
    """The scorer's options, the same in ``fairseq-sum-score``, ``fairseq-sum-compare`` and the gate
    sweep: ``--scorer`` (among ``backends``), ``--workers``, ``--rouge-args``, ``--sentence-sep``,
    ``--no-detok``, ``--split-sentences``, ``--sentence-splitter`` (:func:`scorer_from_args`)."""
    # a deprecated name among ``backends`` (a caller's ("rouge-score",)) stands for its backend
    backends = list(dict.fromkeys(backend_name(b, False) for b in backends))
    p.add_argument("--scorer", default=DEFAULT_BACKEND, choices=backends, type=backend_name,
                   help=f"ROUGE backend: {DEFAULT_BACKEND} (default; this package's ROUGE-1.5.5 "
                        "in Python, equal to it per document; 'rouge-score' is its deprecated "
                        "name)"
                        + (", official (ROUGE-1.5.5 itself)" if "official" in backends else "")
                        + (", files2rouge (corpus averages only)" if "files2rouge" in backends
                           else ""))
    p.add_argument("--workers", type=int_at_least(1), default=None,
                   help="parallel ROUGE-1.5.5 processes for --scorer official (default: all cores)")
    p.add_argument("--rouge-args", default=OFFICIAL_ARGS, help="ROUGE-1.5.5 options (perl scorers)")
    p.add_argument("--sentence-sep", action="append", metavar="TOKEN", type=separator_token,
                   help="an extra sentence separator token, e.g. '<q>' (repeatable)")
    p.add_argument("--no-detok", action="store_true", help="skip Moses detokenization")
    p.add_argument(
        "--split-sentences", action="store_true",
        help="split hypotheses and references into sentences with the rule-based splitter "
        "(outputs without <sep> / newline boundaries, e.g. BART's)")
    p.add_argument("--sentence-splitter", choices=SENTENCE_SPLITTERS,
                   default=DEFAULT_SENTENCE_SPLITTER,
                   help="splitter of --split-sentences, as fairseq-sum-prepare --sentence-splitter")


def scorer_from_args(args, summaries=(), **fields):
    """The :class:`Scorer` of :func:`add_scorer_options`' ``args``; a known separator found in
    ``summaries`` without ``--sentence-sep`` is warned about. ``fields``: the other fields."""
    return Scorer(backend=args.scorer, seps=sentence_separators(args.sentence_sep,
                                                                summaries), detok=not args.no_detok,
                  splitter=args.sentence_splitter if args.split_sentences else None,
                  rouge_args=args.rouge_args, workers=args.workers, **fields)


class SeparatorError(ValueError, argparse.ArgumentTypeError):
    """A ``--sentence-sep`` value that is not one token (argparse prints its message)."""


def separator_token(token):
    """A ``--sentence-sep`` token: non-empty, without whitespace (summaries are split on it)."""
    if not token or token.split() != [token]:
        raise SeparatorError(f"a sentence separator is one token without spaces, got {token!r}")
    return token


def separator_tokens(text):
    """A fairseq flag's ``--...sentence-sep`` value (whitespace-separated tokens, or None) as a
    tuple."""
    return tuple((text or "").split())


# ---------------------------------------------------------------------------------- functional API
def prepare_pairs(hyps, refs, detok=True, seps=(), ids=None):
    """:meth:`Scorer.pairs` of ``Scorer(detok=detok, seps=seps)``."""
    return Scorer(detok=detok, seps=seps).pairs(hyps, refs, ids)


def rouge_pair(hyp_sents, ref_sents):
    """Cheap per-pair ROUGE-1/2/L(sum) F1s; strings are split on ``<sep>``/newlines only."""
    if isinstance(hyp_sents, str):
        hyp_sents = clean_summary(hyp_sents, detok=False)
    if isinstance(ref_sents, str):
        ref_sents = clean_summary(ref_sents, detok=False)
    s = pair_scores(hyp_sents, ref_sents)
    return s["rouge1"].fmeasure, s["rouge2"].fmeasure, s["rougeL"].fmeasure


def score_summaries(hyps, refs, scorer=DEFAULT_BACKEND, detok=True, bootstrap=False,
                    bootstrap_samples=1000, seed=1, rouge_args=OFFICIAL_ARGS, seps=(), workers=None,
                    ids=None):
    """:meth:`Scorer.corpus` of parallel summaries (strings with ``<sep>``/newlines, or sentence
    lists); CIs with ``bootstrap`` and always with ``official``."""
    samples = bootstrap_samples if bootstrap or scorer == "official" else 0
    return Scorer(scorer, seps, detok, rouge_args=rouge_args, workers=workers,
                  bootstrap_samples=samples, seed=seed).corpus(hyps, refs, ids)


def document_scores(hyps, refs, scorer=DEFAULT_BACKEND, detok=True, rouge_args=OFFICIAL_ARGS,
                    seps=(), workers=None, ids=None):
    """Per-document scores: ``{metric: [one dict per document]}`` with ``{"precision", "recall",
    "fmeasure", "score"}`` (``score`` = ``fmeasure``), in the order of ``hyps``; the corpus score is
    the mean of ``score`` (:meth:`Scorer.documents` of :meth:`Scorer.pairs`)."""
    s = Scorer(scorer, seps, detok, rouge_args=rouge_args, workers=workers)
    per = s.documents(*s.pairs(hyps, refs, ids))
    return {m: [{"recall": float(r), "precision": float(p), "fmeasure": float(f), "score": float(f)}
                for r, p, f in rows] for m, rows in per.items()}
