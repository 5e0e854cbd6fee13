"""ROUGE-2 reference specificity, and the verdict "summarizes"; imports without fairseq.

**Specificity.** A summary that depends on its document is not yet a summary of it: a copy model
that writes "s s s <sep> . . ." differs between documents, and a fixed generic abstract scores a
ROUGE-2 above zero against every reference. Specificity asks how much better an output matches its
own reference than the references of the other documents of the same test set. With ``M[i, j]`` the
ROUGE-2 F1 (x 100, ROUGE points) of output ``i`` against reference ``j`` of ``n`` documents::

    own   = mean_i M[i, i]
    other = mean_i mean_{j != i} M[i, j]  = (sum_ij M[i, j] - n * own) / (n (n - 1))
    delta = own - other

A fixed text gives delta 0 (every reference is "its own" alike), a good summarizer a large delta.

**Permutation p-value.** Under the null hypothesis the assignment of outputs to references is
exchangeable. ``permutations`` random permutations ``pi`` of the n references (numpy's
``default_rng(seed).permutation``) give ``own_pi = mean_i M[i, pi(i)]`` and ``delta_pi`` by the
formula above (``sum_ij M`` does not change); ``p = (1 + #{pi : delta_pi >= delta}) / (1 +
permutations)`` (one-sided: a larger delta than chance), with a tolerance of 1e-9 points, so that a
fixed text (every ``delta_pi`` equal to ``delta``) gets p = 1. The smallest p is ``1 / (1 +
permutations)``: 1,000 permutations (the default, at least 1,000 on the command line) reach 0.001.

**Counting.** ``M`` is the project's ROUGE-2 (:mod:`fairseq_sum_plugins.scoring.rouge`'s default
scorer, whose per-document scores equal ROUGE-1.5.5's): bigrams of
:func:`~fairseq_sum_plugins.scoring.rouge_text.rouge_tokens` (stemmed, ROUGE-1.5.5's WordNet
exceptions) of the cleaned sentences joined by newlines, ``P = overlap / max(bigrams of the output,
1)``, ``R = overlap / max(bigrams of the reference, 1)``, ``F1 = 2PR / (P + R)`` (0 when both are
0), the same float operations as ``rouge_score``, so ``M[i, i]`` equals the scorer's ROUGE-2 F1 of
document ``i``. The bigram counts are computed once per text; the overlaps ``sum_g min(a_g, b_g)``
of all n x n pairs come from sparse products, ``min(a, b) = sum_{t >= 1} [a >= t][b >= t]``. Up to
:data:`DENSE_LIMIT` documents the matrix is built once; above it the permuted pairs are computed
from the sparse rows, so memory stays linear in n.

**The verdict "summarizes"** (:func:`verdict`, printed by the quickstart, ``recipes/compare.sh`` and
``fairseq-sum-baselines``). A model summarizes its test set when all three hold:

1. *specific*: ``delta > bar`` with ``p <= 0.01``, where ``bar = max(0.5, random_delta / 2)`` and
   ``random_delta`` is the specificity delta of the random extract (``random3``: three random
   sentences of each document, :mod:`.baselines`) on the same test set. Half of what sentences
   picked blindly from the document achieve is the least a model of that document should reach; the
   floor of 0.5 ROUGE-2 points keeps a test set where extracts are barely specific from passing
   noise.
2. *better than the bag of pieces*: its own test NLL (bits per target token,
   :func:`fairseq_sum_plugins.analysis.source_use.source_gain`'s ``nll_own``) is below that of the
   no-training bag-of-pieces baseline on the same target binaries
   (:func:`.baselines.bag_of_pieces`): a model that does not predict its summaries better than the
   document's own pieces mixed with the training abstracts' unigram frequencies has learnt nothing
   about summarizing.
3. *reads* (necessary, not sufficient): source gain ``>= 0.3`` bits per target token and at least
   90% distinct outputs (:mod:`.source_use`). A copy model can pass this check before it learns
   to summarize, and fail the first two (results/quickstart-cpus/results.md, section 4).

An unmeasured input (no random extract, no NLL, no source gain) makes its check ``None`` (the
reading check fails on either of its two figures alone); the verdict is then False when another
check fails, else None ("not measured"), never a guess.
"""

import numpy as np

DENSE_LIMIT = 3000  # documents up to which the n x n matrix is built at once
DEFAULT_PERMUTATIONS = 1000
MIN_PERMUTATIONS = 1000  # the command lines' floor
# the verdict's thresholds (module docstring)
BAR_FLOOR = 0.5  # ROUGE-2 points
BAR_RANDOM_SHARE = 0.5  # of the random extract's delta
MAX_P = 0.01
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

    def total(self, block=1000):
        """``sum_ij M[i, j]``, in blocks of ``block`` rows."""
        s = 0.0
        for start in range(0, self.n_hyp, block):
            rows = np.arange(start, min(start + block, self.n_hyp))
            s += float(
                (
                    100
                    * _f1(
                        self._overlap_block(rows),
                        self.hyp_total[rows, None],
                        self.ref_total[None, :],
                    )
                ).sum()
            )
        return s


# -------------------------------------------------------------------------------- specificity
def _delta(own_mean, total, n):
    other = (total - n * own_mean) / (n * (n - 1))
    return own_mean - other, other


def specificity_from_counts(
    hyp_counts, ref_counts, permutations=DEFAULT_PERMUTATIONS, seed=1, dense_limit=DENSE_LIMIT
):
    """``{'own', 'other', 'delta', 'p', 'permutations', 'seed', 'documents'}`` (own / other / delta
    in
    ROUGE-2 points) of parallel bigram counts (the module docstring)."""
    n = len(hyp_counts)
    if n != len(ref_counts):
        raise ValueError(f"{n} outputs but {len(ref_counts)} references")
    if n < 2:
        raise ValueError(
            f"specificity needs at least 2 documents (it compares each output with the other "
            f"documents' references), got {n}"
        )
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    bm = BigramMatrix(hyp_counts, ref_counts)
    idx = np.arange(n)
    rng = np.random.default_rng(seed)
    if n <= dense_limit:
        m = bm.matrix()
        total, own = float(m.sum()), float(np.diag(m).mean())
        permuted = np.array([m[idx, rng.permutation(n)].mean() for _ in range(permutations)])
    else:
        total, own = bm.total(), float(bm.pairs(idx, idx).mean())
        permuted = np.array([bm.pairs(idx, rng.permutation(n)).mean() for _ in range(permutations)])
    delta, other = _delta(own, total, n)
    deltas = _delta(permuted, total, n)[0]
    hits = int((deltas >= delta - _TOL).sum())
    return {
        "own": own,
        "other": float(other),
        "delta": float(delta),
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
    """One line: own, other, delta (ROUGE-2 points) and the permutation p-value."""
    return (
        f"ROUGE-2 specificity: own {spec['own']:.2f}, other {spec['other']:.2f}, delta "
        f"{round(spec['delta'], 9) + 0.0:+.2f} "
        f"(p {spec['p']:.4f}, {spec['permutations']} permutations, seed {spec['seed']}, "
        f"{spec['documents']} documents)"
    )


# ---------------------------------------------------------------------------------- verdict
def specificity_bar(random_delta):
    """The delta a model must exceed: ``max(0.5, random_delta / 2)`` (None when unknown)."""
    if random_delta is None:
        return None
    return max(BAR_FLOOR, BAR_RANDOM_SHARE * float(random_delta))


def verdict(spec, random_delta, nll=None, bag_nll=None, gain=None, distinct=None, outputs=None):
    """Whether a model summarizes its test set (module docstring), as a dict:

    ``summarizes`` (True / False / None: not measured), ``label`` ("summarizes", "does not
    summarize", "not measured"), ``bar`` (points), ``checks`` {``specific``, ``beats_bag``,
    ``reads``} (each True / False / None) and ``reasons`` (one line per failed or unmeasured check).

    ``spec``: :func:`specificity`'s dict (or None); ``random_delta``: the random extract's delta on
    the same test set; ``nll`` / ``bag_nll``: the model's and the bag-of-pieces baseline's test NLL
    (bits per target token); ``gain``: source gain (bits); ``distinct`` / ``outputs``: distinct
    outputs of
    how many."""
    bar = specificity_bar(random_delta)
    checks, reasons = {}, []
    if spec is None or bar is None:
        checks["specific"] = None
        reasons.append(
            "specificity not measured" if spec is None else "no random extract to set the bar"
        )
    else:
        checks["specific"] = bool(spec["delta"] > bar and spec["p"] <= MAX_P)
        if not checks["specific"]:
            delta = round(spec["delta"], 9) + 0.0  # a float-noise zero prints as +0.00
            reasons.append(
                f"ROUGE-2 specificity delta {delta:+.2f} (p {spec['p']:.4f}) is not above the bar "
                f"{bar:.2f} with p <= {MAX_P}"
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
    summarizes = False if False in values else (None if None in values else True)
    label = {True: "summarizes", False: "does not summarize", None: "not measured"}[summarizes]
    return {
        "summarizes": summarizes,
        "label": label,
        "bar": bar,
        "checks": checks,
        "reasons": reasons,
    }


def position_between(value, low, high):
    """Where ``value`` lies from ``low`` (0) to ``high`` (1), e.g. a model's ROUGE-2 between the
    generic
    summary's and Lead-3's; None when they coincide or one is unknown."""
    if value is None or low is None or high is None or high == low:
        return None
    return (value - low) / (high - low)
