"""The one bootstrap over documents behind every confidence interval and paired test of the scorers.

``B`` resamples of the ``n`` documents drawn with replacement from a generator seeded with ``seed``
(``numpy.random.default_rng``); each resample ``I_b`` gives a statistic ``s_b =
statistic(values[I_b])`` (default: the mean over documents, per column), and the ``confidence``
interval is the percentile interval ``[q_a, q_(100-a)]`` of the ``s_b`` with ``a = (1 - confidence)
/ 2 * 100``. ROUGE's and nltk METEOR's CIs (means of per-document scores), Meteor 1.5's (its score
of the summed statistics of the resample) and ``fairseq-sum-compare``'s paired test (means of the
differences) all call it, so one seed gives the same resamples everywhere.
"""
import numpy as np


def _mean(rows):
    return rows.mean(0)


def bootstrap_statistics(values, n_samples=1000, seed=1, statistic=_mean):
    """Array (n_samples, ...) of ``statistic`` over resamples of the rows of ``values``; the default
    statistic (the mean over rows) by :func:`resampled_means`, any other one resample at a time."""
    values = np.asarray(values, dtype=np.float64)
    if statistic is _mean:
        return resampled_means(values, n_samples, seed)
    rng = np.random.default_rng(seed)
    return np.stack([
        np.asarray(statistic(values[rng.integers(0, len(values), len(values))]), dtype=np.float64)
        for _ in range(n_samples)
    ])


def resampled_means(values, n_samples, seed, chunk_cells=2_000_000):
    """The mean over rows of each of ``n_samples`` resamples of the rows of ``values`` (n, ...),
    drawn in blocks of resamples: ``rng.integers(0, n, (k, n))`` is the same stream as ``k`` draws
    of ``n`` one resample at a time, and the mean of a resample the same sum in the same order, so
    the figures equal :func:`bootstrap_statistics`'s loop bit for bit (a test compares them) in a
    few NumPy calls instead of one per resample. A block holds about ``chunk_cells`` values."""
    values = np.asarray(values, dtype=np.float64)
    n, rng = len(values), np.random.default_rng(seed)
    out = np.empty((n_samples,) + values.shape[1:])
    step = max(1, chunk_cells // max(values.size, 1))
    for start in range(0, n_samples, step):
        k = min(step, n_samples - start)
        out[start:start + k] = values[rng.integers(0, n, (k, n))].mean(1)
    return out


def percentile_interval(samples, confidence=0.95):
    """(low, high) percentile interval of bootstrap ``samples`` along their first axis."""
    alpha = (1 - confidence) / 2 * 100
    return np.percentile(samples, alpha, axis=0), np.percentile(samples, 100 - alpha, axis=0)


def bootstrap_ci(values, n_samples=1000, seed=1, confidence=0.95, statistic=_mean):
    """Percentile bootstrap CI of ``statistic`` (the mean over rows) of ``values`` (n, ...) -> (low,
    high)."""
    return percentile_interval(bootstrap_statistics(values, n_samples, seed, statistic), confidence)
