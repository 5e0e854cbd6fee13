"""The sentence every table and the quickstart's last line carry beside the verdict "specific to its
document": the model's paired test against Lead-3 and against the table's baseline model, with p.

The verdict (:func:`fairseq_sum_plugins.scoring.specificity.verdict`) says that outputs depend on
their documents beyond what random extracts show; it says nothing of ROUGE. So a model that is
specific to its document but below Lead-3 in ROUGE-2 gets that as the first words of its sentence.
A difference is called significant at p <= :data:`SIGNIFICANT` only, else "no significant
difference" (the paired tests of :func:`fairseq_sum_plugins.evaluation.compare.paired_bootstrap`,
1,000 resamples, two-sided).

Figures are ROUGE points (F1 x 100): ``{rouge1, rouge2, rougeL: {diff, p}}`` per run.
"""

from ..scoring.specificity import LABELS, label_of

SIGNIFICANT = 0.05
KEYS = ("rouge1", "rouge2", "rougeL")


def paired_text(vs):
    """'ROUGE-1/2/L +1.00/-0.50/+0.20 (p 0.010/0.300/0.700)' of one paired result."""
    return ("ROUGE-1/2/L " + "/".join(f"{vs[k]['diff']:+.2f}" for k in KEYS) + " (p "
            + "/".join(f"{vs[k]['p']:.3f}" for k in KEYS) + ")")


def significance(vs):
    d, p = vs["rouge2"]["diff"], vs["rouge2"]["p"]
    if p > SIGNIFICANT:
        return "no significant ROUGE-2 difference"
    return f"ROUGE-2 significantly {'above' if d > 0 else 'below'}"


def below_lead3(label, vs_lead3):
    """True when a run is specific to its document and below Lead-3 in ROUGE-2."""
    return (label_of(label) == LABELS[True] and vs_lead3 is not None
            and vs_lead3["rouge2"]["diff"] < 0)


def statement(name, labels, vs_lead3, vs_base=None, base_name=None, seeds=None):
    """The sentence of model ``name`` (module docstring): ``labels``, ``vs_lead3`` and ``vs_base``
    are per run (one per seed in ``seeds``; None where not measured)."""
    seeds = list(seeds) if seeds is not None else list(range(1, len(labels) + 1))
    many = len(seeds) > 1

    def at(i):
        return f"seed {seeds[i]}: " if many else ""

    below = [i for i, (lab, vs) in enumerate(zip(labels, vs_lead3)) if below_lead3(lab, vs)]
    parts = []
    if below:
        where = f" (seed {', '.join(str(seeds[i]) for i in below)})" if many else ""
        parts.append(f"`{name}` is specific to its document but below Lead-3 in ROUGE-2{where}.")
    runs = []
    for i, (lab, vs) in enumerate(zip(labels, vs_lead3)):
        word = label_of(lab) or "not measured"
        against = (f"against Lead-3 {paired_text(vs)}, {significance(vs)}" if vs is not None
                   else "against Lead-3 not measured")
        runs.append(f"{at(i)}{word}; {against}")
    parts.append(f"`{name}`: " + "; ".join(runs) + ".")
    if vs_base is not None and base_name and any(v is not None for v in vs_base):
        base = [f"{at(i)}{paired_text(v)}, {significance(v)}" for i, v in enumerate(vs_base)
                if v is not None]
        parts.append(f"Against `{base_name}` (the table's baseline model): " + "; ".join(base)
                     + ".")
    return " ".join(parts)


def points(metrics):
    """compare_systems' ``metrics`` (F1 in [0, 1]) as ROUGE points {key: {diff, p}}."""
    return {k: {"diff": 100 * metrics[k]["diff"], "p": metrics[k]["p"]} for k in KEYS}
