"""ROUGE-2 reference specificity, and the verdict "specific to its document"; imports without
fairseq.

**Specificity.** A summary that depends on its document is not yet a summary of it: a copy model
that writes "s s s <sep> . . ." differs between documents, and a fixed generic abstract scores a
ROUGE-2 above zero against every reference. Specificity asks how much better an output matches its
own reference than the references of the other documents of the same test set. With ``M[i, j]`` the
ROUGE-2 F1 (x 100, ROUGE points) of output ``i`` against reference ``j`` of ``n`` documents::

    own   = mean_i M[i, i]
    other = mean_i mean_{j != i} M[i, j]  = (sum_ij M[i, j] - n * own) / (n (n - 1))
    delta = own - other  = mean_i c_i,   c_i = M[i, i] - mean_{j != i} M[i, j]

A fixed text gives delta 0 (every reference is "its own" alike), an output specific to its document
a large delta. What it measures is specificity, not summarization: an extract of the document (its
first words, its frequent bigrams) is specific to it too, so the verdict below is named for what it
shows, and a table states beside it the paired ROUGE test against Lead-3.

**Document-bootstrap lower bound** (``lower``, the verdict's test). ``c_i`` is document ``i``'s
contribution (:func:`contributions`). ``resamples`` (10,000) resamples of the ``n`` documents drawn
with replacement give ``delta_b = mean_{i in I_b} c_i``; ``lower`` is their ``100 (1 - level)``-th
percentile (``level`` 0.95: a one-sided 95% interval ``[lower, inf)``). Resampling the
contributions keeps each output with its own reference and the other references fixed, the choice
made here (the papers define no such test). The resamples are drawn from numpy's
``default_rng(data_seed(c))``, a seed derived from the contributions themselves
(:func:`data_seed`: the sha256 of their values at 9 decimals), not from a command line's
``--seed``: the same outputs and references give the same bound on every run and machine.

**Monte Carlo bands** (why the verdict has a third state). The bound is a percentile of finitely
many resamples, the bar a mean of finitely many random draws: another seed moves both. Each gets a
band of :data:`MC_Z` (3) Monte Carlo standard errors: ``lower_band`` is the pair of order
statistics of the resampled means at ranks ``B q -+ 3 sqrt(B q (1 - q))`` (``q = 1 - level``, ``B``
resamples; the binomial interval of a sample quantile, no assumption on the distribution), and the
bar's band is ``bar -+ 3 x 0.5 x sd(draws) / sqrt(draws)`` (floored at 0.5 as the bar is;
:func:`bar_band`). With 10,000 resamples the first band is about +-0.06 standard deviations of the
bootstrap distribution wide; the second is what 20 draws allow.

**Permutation p-value** (``p``, reported, not the verdict's test: it tests delta > 0). Under the
null hypothesis the assignment of outputs to references is exchangeable. ``permutations`` random
permutations ``pi`` of the n references (numpy's ``default_rng(seed).permutation``) give ``own_pi =
mean_i M[i, pi(i)]`` and ``delta_pi`` by the formula above (``sum_ij M`` does not change); ``p = (1
+ #{pi : delta_pi >= delta}) / (1 + permutations)`` (one-sided), with a tolerance of 1e-9 points, so
that a fixed text gets p = 1. The smallest p is ``1 / (1 + permutations)``.

**Counting.** ``M`` is the project's ROUGE-2 (:mod:`fairseq_sum_plugins.scoring.rouge`'s default
scorer, whose per-document scores equal ROUGE-1.5.5's): bigrams of
:func:`~fairseq_sum_plugins.scoring.rouge_text.rouge_tokens` (stemmed, ROUGE-1.5.5's WordNet
exceptions) of the cleaned sentences joined by newlines, ``P = overlap / max(bigrams of the output,
1)``, ``R = overlap / max(bigrams of the reference, 1)``, ``F1 = 2PR / (P + R)`` (0 when both are
0), the same float operations as ``rouge_score``, so ``M[i, i]`` equals the scorer's ROUGE-2 F1 of
document ``i``. The bigram counts are computed once per text; the overlaps ``sum_g min(a_g, b_g)``
of all n x n pairs come from sparse products, ``min(a, b) = sum_{t >= 1} [a >= t][b >= t]``. Up to
:data:`DENSE_LIMIT` documents the matrix is built once; above it the permuted pairs and the row sums
are computed from the sparse rows, so memory stays linear in n.

**The bar.** ``bar = max(0.5, 0.5 * mean_s delta_s)``, ``delta_s`` the specificity delta of the
random extract with seed ``s`` (three random sentences of each document,
:func:`.baselines.random_extract`) for the :data:`RANDOM_DRAWS` (20) seeds 1..20 on the same test
set (:func:`random_draws`; fairseq-sum-baselines records the seeds, each draw's delta and the
mean). One draw's delta moves with its seed; the mean of 20 does not move much. Half of what
sentences picked blindly from the document achieve is the least a model of that document should
reach; the floor of 0.5 ROUGE-2 points keeps a test set where extracts are barely specific from
passing noise.

**The verdict "specific to its document"** (:func:`verdict`, printed by the quickstart,
``recipes/compare.sh`` and ``fairseq-sum-baselines``). A model's outputs are specific to their
documents when all three hold:

1. *above the bar*: ``lower > bar`` (the one-sided 95% document-bootstrap bound of its delta) with
   the two bands apart: the bottom of ``lower_band`` above the top of the bar's band. With the
   bands overlapping the check is ``"marginal"`` (:data:`MARGINAL`), neither above nor below:
   whether the bound clears the bar depends on the seeds of the resamples and of the draws
   (tests/test_verdict_stability.py: a case at the bar gets "marginal" under 20 seeds of each);
2. *better than the bag of pieces*: its own test NLL (bits per target token,
   :func:`fairseq_sum_plugins.inspection.source_use.source_gain`'s ``nll_own``) is below that of the
   no-training bag-of-pieces baseline on the same target binaries
   (:func:`.baselines.bag_of_pieces`);
3. *reads* (necessary, not sufficient): source gain ``>= 0.3`` bits per target token and at least
   90% distinct outputs (:mod:`.source_use`). A copy model can pass this check before it learns
   anything else, and fail the first two (results/quickstart-cpus/results.md, section 4).

Otherwise "not specific to its document". A failed check makes the verdict False, else an
unmeasured one None, else a marginal bar check ``"marginal"`` ("marginal (at the bar)"). An
unmeasured input (no random draws, no bootstrap bound
in a score file written before it was computed, no NLL, no source gain) makes its check ``None``
(the reading check fails on either of its two figures alone); the verdict is then False when another
check fails, else None ("not measured"), never a guess. The verdict says nothing of ROUGE: a model
specific to its documents may still be below Lead-3, which the tables say in their first sentence.

**What the test admits.** The bar separates outputs that depend on their document from generic
ones; it is no test of summarizing. An extract of the document clears it: on results/xsum-read's
100 XSum test documents Lead-3, three random sentences and the oracle are above the bar that its
models fail or meet only marginally, and so is a word salad of each document's 10 most frequent
bigrams (lowercased, punctuation dropped; tests/test_verdict_stability.py). An extract has no test
NLL, so its verdict is "not measured"; the tables print its bar check (:func:`bar_word`) instead.
"""
import hashlib

import numpy as np

from .bootstrap import resampled_means

DENSE_LIMIT = 3000  # documents up to which the n x n matrix is built at once
DEFAULT_PERMUTATIONS = 1000
MIN_PERMUTATIONS = 1000  # the command lines' floor
DEFAULT_RESAMPLES = 10000  # document-bootstrap resamples of the lower bound
MC_Z = 3.0  # half-width of the Monte Carlo bands, in standard errors
MARGINAL = "marginal"  # the bar check and the verdict when the two bands overlap
LEVEL = 0.95  # one-sided level of the lower bound
# the verdict's thresholds (module docstring)
BAR_FLOOR = 0.5  # ROUGE-2 points
BAR_RANDOM_SHARE = 0.5  # of the mean delta of the random extracts
RANDOM_DRAWS = 20  # seeds 1..20 of the random extract
LABELS = {True: "specific to its document", False: "not specific to its document",
          None: "not measured", MARGINAL: "marginal (at the bar)"}
# labels of files written before the verdict was renamed (read, never written)
OLD_LABELS = {"summarizes": LABELS[True], "does not summarize": LABELS[False]}
READ_GAIN = 0.3  # bits per target token
READ_DISTINCT = 0.9  # share of distinct outputs
_TOL = 1e-9  # points: a permuted delta this close to the observed one counts as "as large"


# ----------------------------------------------------------------------------------- counting
def bigram_counts(sentences):
    """``{bigram: count}`` of cleaned ``sentences`` as the default scorer counts ROUGE-2 (the
    module docstring): tokens of the sentences joined by newlines, so bigrams span sentence ends."""
    from collections import Counter

    from .rouge_text import rouge_tokens

    tokens = rouge_tokens("\n".join(sentences))
    return Counter(zip(tokens, tokens[1:]))


def _levels(counts, vocab):
    """Sparse 0/1 matrices ``[a >= t]`` for t = 1..max count over texts (rows) x bigram ids
    (cols)."""
    from scipy import sparse

    top = max((max(c.values()) for c in counts if c), default=0)
    levels = []
    for t in range(1, top + 1):
        rows, cols = [], []
        for i, c in enumerate(counts):
            for g, k in c.items():
                if k >= t:
                    rows.append(i)
                    cols.append(vocab[g])
        levels.append(
            sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(counts), len(vocab)))
        )
    return levels


def _f1(overlap, hyp_total, ref_total):
    """rouge_score's F1 of overlap counts (arrays), elementwise."""
    precision = overlap / np.maximum(hyp_total, 1)
    recall = overlap / np.maximum(ref_total, 1)
    denom = precision + recall
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(denom > 0, 2 * precision * recall / np.where(denom > 0, denom, 1), 0.0)
    return f


class BigramMatrix:
    """ROUGE-2 F1 (x 100) of every output against every reference from cached bigram counts.

    ``hyp_counts`` / ``ref_counts``: lists of :func:`bigram_counts` (outputs and references of the
    same documents, in order). :meth:`pairs` gives ``M[i, j]`` for index arrays, :meth:`total`
    ``sum_ij M[i, j]``, :meth:`matrix` the dense matrix."""

    def __init__(self, hyp_counts, ref_counts):
        vocab = {}
        for c in list(hyp_counts) + list(ref_counts):
            for g in c:
                vocab.setdefault(g, len(vocab))
        vocab = vocab or {None: 0}
        self.n_hyp, self.n_ref = len(hyp_counts), len(ref_counts)
        self.hyp_total = np.array([sum(c.values()) for c in hyp_counts], dtype=np.float64)
        self.ref_total = np.array([sum(c.values()) for c in ref_counts], dtype=np.float64)
        hyp_levels, ref_levels = _levels(hyp_counts, vocab), _levels(ref_counts, vocab)
        k = min(len(hyp_levels), len(ref_levels))  # min(a, b) >= t needs both
        self._levels = list(zip(hyp_levels[:k], ref_levels[:k]))

    def _overlap_block(self, rows):
        out = np.zeros((len(rows), self.n_ref))
        for h, r in self._levels:
            out += (h[rows] @ r.T).toarray()
        return out

    def matrix(self):
        """Dense ``(n_hyp, n_ref)`` matrix of ROUGE-2 F1 x 100."""
        rows = np.arange(self.n_hyp)
        return 100 * _f1(
            self._overlap_block(rows), self.hyp_total[:, None], self.ref_total[None, :]
        )

    def pairs(self, i, j):
        """``M[i[k], j[k]]`` for index arrays ``i``, ``j`` (ROUGE-2 F1 x 100)."""
        i, j = np.asarray(i), np.asarray(j)
        overlap = np.zeros(len(i))
        for h, r in self._levels:
            overlap += np.asarray(h[i].multiply(r[j]).sum(1)).ravel()
        return 100 * _f1(overlap, self.hyp_total[i], self.ref_total[j])

    def row_sums(self, block=1000):
        """``sum_j M[i, j]`` of every row ``i``, in blocks of ``block`` rows."""
        out = np.zeros(self.n_hyp)
        for start in range(0, self.n_hyp, block):
            rows = np.arange(start, min(start + block, self.n_hyp))
            f1 = _f1(self._overlap_block(rows), self.hyp_total[rows, None], self.ref_total[None, :])
            out[rows] = (100 * f1).sum(1)
        return out

    def total(self, block=1000):
        """``sum_ij M[i, j]``, in blocks of ``block`` rows."""
        return float(self.row_sums(block).sum())


# -------------------------------------------------------------------------------- specificity
def _delta(own_mean, total, n):
    other = (total - n * own_mean) / (n * (n - 1))
    return own_mean - other, other


def contributions(diag, row_sums):
    """Per document ``c_i = M[i, i] - (sum_j M[i, j] - M[i, i]) / (n - 1)`` (points; their mean is
    the delta)."""
    diag, row_sums = np.asarray(diag, dtype=np.float64), np.asarray(row_sums, dtype=np.float64)
    return diag - (row_sums - diag) / max(len(diag) - 1, 1)


def data_seed(values):
    """The seed of the lower bound's resamples: the first 8 hex digits of the sha256 of
    ``values`` written at 9 decimals (module docstring)."""
    text = ",".join(f"{v:.9f}" for v in np.asarray(values, dtype=np.float64))
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def lower_band(contrib, resamples=DEFAULT_RESAMPLES, seed=None, level=LEVEL):
    """``(lower, [low, high])``: the one-sided ``level`` document-bootstrap lower bound of
    ``mean(contrib)`` and its Monte Carlo band (module docstring); ``seed`` None: :func:`data_seed`
    of ``contrib``."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    contrib = np.asarray(contrib, dtype=np.float64)
    seed = data_seed(contrib) if seed is None else seed
    means = np.sort(resampled_means(contrib, resamples, seed))
    q = 1 - level
    half = MC_Z * np.sqrt(resamples * q * (1 - q))
    low = int(np.clip(np.floor(resamples * q - half), 1, resamples))  # ranks, 1-based
    high = int(np.clip(np.ceil(resamples * q + half), 1, resamples))
    lower = float(np.percentile(means, 100 * q))
    return lower, [float(means[low - 1]), float(means[high - 1])]


def lower_bound(contrib, resamples=DEFAULT_RESAMPLES, seed=None, level=LEVEL):
    """The one-sided ``level`` document-bootstrap lower bound of ``mean(contrib)`` (module
    docstring): the ``100 (1 - level)``-th percentile of the resampled means."""
    return lower_band(contrib, resamples, seed, level)[0]


def _check_sizes(n, n_refs):
    if n != n_refs:
        raise ValueError(f"{n} outputs but {n_refs} references")
    if n < 2:
        raise ValueError(
            f"specificity needs at least 2 documents (it compares each output with the other "
            f"documents' references), got {n}"
        )


def specificity_delta(hyp_counts, ref_counts):
    """The delta alone (points) of parallel bigram counts, without p or bound (the random draws)."""
    _check_sizes(len(hyp_counts), len(ref_counts))
    bm = BigramMatrix(hyp_counts, ref_counts)
    idx = np.arange(len(hyp_counts))
    return float(contributions(bm.pairs(idx, idx), bm.row_sums()).mean())


def specificity_from_counts(
    hyp_counts,
    ref_counts,
    permutations=DEFAULT_PERMUTATIONS,
    seed=1,
    dense_limit=DENSE_LIMIT,
    resamples=DEFAULT_RESAMPLES,
    level=LEVEL,
):
    """``{'own', 'other', 'delta', 'lower', 'lower_band', 'level', 'resamples', 'p',
    'permutations', 'seed', 'documents'}`` (own / other / delta / lower / lower_band in ROUGE-2
    points) of parallel bigram counts (the module docstring; ``seed`` seeds the permutations, the
    resamples have :func:`data_seed`)."""
    n = len(hyp_counts)
    _check_sizes(n, len(ref_counts))
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    bm = BigramMatrix(hyp_counts, ref_counts)
    idx = np.arange(n)
    rng = np.random.default_rng(seed)
    if n <= dense_limit:
        m = bm.matrix()
        diag, rows = np.diag(m), m.sum(1)
        permuted = np.array([m[idx, rng.permutation(n)].mean() for _ in range(permutations)])
    else:
        diag, rows = bm.pairs(idx, idx), bm.row_sums()
        permuted = np.array([bm.pairs(idx, rng.permutation(n)).mean() for _ in range(permutations)])
    total, own = float(rows.sum()), float(diag.mean())
    delta, other = _delta(own, total, n)
    deltas = _delta(permuted, total, n)[0]
    hits = int((deltas >= delta - _TOL).sum())
    lower, band = lower_band(contributions(diag, rows), resamples, None, level)
    return {
        "own": own,
        "other": float(other),
        "delta": float(delta),
        "lower": lower,
        "lower_band": band,
        "level": float(level),
        "resamples": int(resamples),
        "p": (1 + hits) / (1 + permutations),
        "permutations": int(permutations),
        "seed": int(seed),
        "documents": n,
    }


def specificity(hyp_sents, ref_sents, permutations=DEFAULT_PERMUTATIONS, seed=1):
    """Specificity of cleaned sentence lists
    (:meth:`fairseq_sum_plugins.scoring.rouge.Scorer.pairs`)."""
    return specificity_from_counts(
        [bigram_counts(h) for h in hyp_sents],
        [bigram_counts(r) for r in ref_sents],
        permutations,
        seed,
    )


def format_specificity(spec):
    """One line: own, other, delta (ROUGE-2 points), its one-sided bootstrap lower bound and the
    permutation p-value."""
    lower = (
        f", {spec['level']:.0%} one-sided lower bound {spec['lower']:+.2f} ({spec['resamples']} "
        "document resamples)"
        if spec.get("lower") is not None
        else ""
    )
    return (
        f"ROUGE-2 specificity: own {spec['own']:.2f}, other {spec['other']:.2f}, delta "
        f"{round(spec['delta'], 9) + 0.0:+.2f}{lower} "
        f"(permutation p {spec['p']:.4f} against 0, {spec['permutations']} permutations, seed "
        f"{spec['seed']}, {spec['documents']} documents)"
    )


# ---------------------------------------------------------------------------------- verdict
def random_draws(doc_sents, ref_sents, extract, seeds=None):
    """``{'seeds', 'deltas', 'mean', 'min', 'max'}`` of the random extract's specificity delta
    over ``seeds`` (default 1..:data:`RANDOM_DRAWS`); ``extract(seed)`` gives the cleaned sentence
    lists of one draw, ``ref_sents`` the references' (module docstring, the bar)."""
    seeds = list(range(1, RANDOM_DRAWS + 1) if seeds is None else seeds)
    if not seeds:
        raise ValueError("the bar needs at least one random draw")
    refs = [bigram_counts(r) for r in ref_sents]
    deltas = [specificity_delta([bigram_counts(h) for h in extract(s)], refs) for s in seeds]
    return {
        "seeds": [int(s) for s in seeds],
        "deltas": deltas,
        "mean": float(np.mean(deltas)),
        "min": float(min(deltas)),
        "max": float(max(deltas)),
    }


def specificity_bar(random_mean):
    """The bound a model's lower bound must exceed: ``max(0.5, random_mean / 2)``, ``random_mean``
    the mean delta of the random draws (None when unknown)."""
    if random_mean is None:
        return None
    return max(BAR_FLOOR, BAR_RANDOM_SHARE * float(random_mean))


def bar_band(random_mean, deltas=None):
    """``[low, high]``: the Monte Carlo band of the bar (module docstring) from the random draws'
    ``deltas`` (their mean ``random_mean``); the bar alone at both ends with fewer than 2 draws;
    None when the bar is unknown."""
    bar = specificity_bar(random_mean)
    if bar is None:
        return None
    deltas = [float(d) for d in deltas or []]
    if len(deltas) < 2:
        return [bar, bar]
    half = MC_Z * BAR_RANDOM_SHARE * float(np.std(deltas, ddof=1)) / np.sqrt(len(deltas))
    return [specificity_bar(random_mean - half / BAR_RANDOM_SHARE),
            specificity_bar(random_mean + half / BAR_RANDOM_SHARE)]


def random_deltas(baselines):
    """The random draws' deltas of fairseq-sum-baselines' JSON (``random_draws.deltas``), or
    None (a file with one draw)."""
    draws = (baselines or {}).get("random_draws")
    if isinstance(draws, dict) and isinstance(draws.get("deltas"), list):
        return [float(d) for d in draws["deltas"]]
    return None


def random_mean(baselines):
    """The random extracts' mean delta of fairseq-sum-baselines' JSON (``random_draws.mean``; a
    file written before the draws were recorded gives its one draw, ``random_delta``), or None."""
    baselines = baselines or {}
    draws = baselines.get("random_draws")
    if isinstance(draws, dict) and draws.get("mean") is not None:
        return float(draws["mean"])
    value = baselines.get("random_delta")
    return None if value is None else float(value)


def label_of(value):
    """The verdict's label of a stored label, old ("summarizes") or new, or None."""
    if value is None:
        return None
    return OLD_LABELS.get(value, value)


def verdict(spec, random_delta, nll=None, bag_nll=None, gain=None, distinct=None, outputs=None,
            deltas=None):
    """Whether a model's outputs are specific to their documents (module docstring), as a dict:

    ``specific`` (True / False / None: not measured / :data:`MARGINAL`), ``label``
    (:data:`LABELS`), ``bar`` (points), ``bar_band`` and ``lower_band`` (the Monte Carlo bands,
    points), ``checks`` {``above_bar`` (True / False / None / :data:`MARGINAL`), ``beats_bag``,
    ``reads`` (each True / False / None)} and ``reasons`` (one line per check that did not pass).

    ``spec``: :func:`specificity`'s dict (or None; one without ``lower_band``, written before it
    was, is a point); ``random_delta``: the mean delta of the random extracts on the same test set
    (:func:`random_mean`) and ``deltas`` their draws (:func:`random_deltas`; None: the bar is a
    point); ``nll`` / ``bag_nll``: the model's and the bag-of-pieces baseline's test NLL (bits per
    target token); ``gain``: source gain (bits); ``distinct`` / ``outputs``: distinct outputs of
    how many."""
    bar, band = specificity_bar(random_delta), bar_band(random_delta, deltas)
    checks, reasons, lband = {}, [], None
    if spec is None or bar is None:
        checks["above_bar"] = None
        reasons.append(
            "specificity not measured" if spec is None else "no random extracts to set the bar"
        )
    elif spec.get("lower") is None:
        checks["above_bar"] = None
        reasons.append("no bootstrap lower bound of the specificity (a score file written before "
                       "it was computed: score it again)")
    else:
        lower = float(spec["lower"])
        lband = [float(x) for x in spec.get("lower_band") or (lower, lower)]
        if lband[0] > band[1]:
            checks["above_bar"] = True
        elif lband[1] <= band[0]:  # two points: the strict rule lower > bar
            checks["above_bar"] = False
        else:
            checks["above_bar"] = MARGINAL
        if checks["above_bar"] is not True:
            delta = round(spec["delta"], 9) + 0.0  # a float-noise zero prints as +0.00
            marginal = checks["above_bar"] == MARGINAL
            reasons.append(
                f"ROUGE-2 specificity delta {delta:+.2f}: its {spec.get('level', LEVEL):.0%} "
                f"one-sided lower bound {round(lower, 9) + 0.0:+.2f} "
                f"[{lband[0]:+.2f}, {lband[1]:+.2f}] is "
                f"{'at' if marginal else 'not above'} the bar {bar:.2f} "
                f"[{band[0]:.2f}, {band[1]:.2f}]"
                + (" (marginal: the Monte Carlo bands overlap)" if marginal else "")
            )
    if nll is None or bag_nll is None:
        checks["beats_bag"] = None
        reasons.append("test NLL not measured" if nll is None else "no bag-of-pieces NLL")
    else:
        checks["beats_bag"] = bool(nll < bag_nll)
        if not checks["beats_bag"]:
            reasons.append(f"test NLL {nll:.3f} bits is not below the bag of pieces' {bag_nll:.3f}")
    low_gain = gain is not None and gain < READ_GAIN
    few = distinct is not None and bool(outputs) and distinct < READ_DISTINCT * outputs
    if low_gain or few:
        checks["reads"] = False
        reasons.append(
            "does not read: "
            + ", ".join(
                ([f"source gain {gain:.3f} bits < {READ_GAIN}"] if low_gain else [])
                + (
                    [f"{distinct} distinct outputs of {outputs} < {READ_DISTINCT:.0%}"]
                    if few
                    else []
                )
            )
        )
    elif gain is None or distinct is None or not outputs:
        checks["reads"] = None
        reasons.append("source gain / distinct outputs not measured")
    else:
        checks["reads"] = True
    values = list(checks.values())
    specific = (False if any(v is False for v in values)
                else None if any(v is None for v in values)
                else MARGINAL if MARGINAL in values else True)
    return {
        "specific": specific,
        "label": LABELS[specific],
        "bar": bar,
        "bar_band": band,
        "lower_band": lband,
        "checks": checks,
        "reasons": reasons,
    }


def extract_cell(v):
    """The verdict cell of an extract from its :func:`verdict` dict (or None): where the verdict is
    not measured for want of a test NLL, its bar check with "(no test NLL)", e.g. "above the bar
    (no test NLL)"; else the verdict's label."""
    if not v:
        return "-"
    check = (v.get("checks") or {}).get("above_bar")
    if v.get("specific") is None and check is not None:
        return f"{bar_word(check)} (no test NLL)"
    return label_of(v.get("label"))


def bar_word(check):
    """The bar check of an output without a verdict (an extract: no test NLL) as the tables print
    it: "above the bar", "below the bar", "marginal" or "not measured"."""
    return {True: "above the bar", False: "below the bar", MARGINAL: "marginal"}.get(
        check, "not measured")


def position_between(value, low, high):
    """Where ``value`` lies from ``low`` (0) to ``high`` (1), e.g. a model's ROUGE-2 between the
    generic
    summary's and Lead-3's; None when they coincide or one is unknown."""
    if value is None or low is None or high is None or high == low:
        return None
    return (value - low) / (high - low)


def bar_note(base):
    """How the bar of ``base`` (fairseq-sum-baselines' JSON) was set, one sentence."""
    draws = base.get("random_draws")
    mean = random_mean(base)
    if mean is None:
        return "no random extracts to set the bar"
    if draws:
        made = (f"the mean delta {mean:+.2f} of {len(draws['seeds'])} random extracts (seeds "
                f"{draws['seeds'][0]}-{draws['seeds'][-1]}, range {draws['min']:+.2f} .. "
                f"{draws['max']:+.2f})")
    else:
        made = f"the delta {mean:+.2f} of one random extract (a file without its draws)"
    low, high = bar_band(mean, random_deltas(base))
    return (f"the bar {specificity_bar(mean):.2f} = max({BAR_FLOOR}, "
            f"{BAR_RANDOM_SHARE} x {made}), Monte Carlo band [{low:.2f}, {high:.2f}]")
