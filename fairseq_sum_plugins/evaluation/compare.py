"""Paired tests of the difference between two summarizers (console script
``fairseq-sum-compare``).

The TP-Transformer paper (Table 2) bolds "the best ROUGE scores with a statistically significant
advantage". Given two systems' outputs on the same documents with the same references::

    fairseq-sum-compare gen_a.out gen_b.out --data DATA/bin      # fairseq-generate outputs
    fairseq-sum-compare hyp_a.txt hyp_b.txt --ref ref.txt        # one summary per line
    fairseq-sum-compare gen_a.out gen_b.out --data DATA/bin --method ar \\
        --json cmp.json --png cmp.png

per metric ``m`` (ROUGE-1/2/L F1 by default; the scorer's per-document numbers,
:meth:`fairseq_sum_plugins.scoring.rouge.Scorer.document_f1`) with per-document scores ``a_i``,
``b_i`` (i = 1..n)::

    d_i   = a_i - b_i,         delta = mean_i d_i                            (difference, A - B)
    paired bootstrap (Koehn, 2004): B resamples I_b of n documents drawn with replacement
          (:mod:`fairseq_sum_plugins.scoring.bootstrap`, the resamples of the scorer's CIs),
          delta_b = mean_{i in I_b} d_i;   95% CI = [2.5th, 97.5th] percentile of delta_b
          p = (1 + #{b : |delta_b - delta| >= |delta|}) / (1 + B)
              (two-sided; the bootstrap distribution shifted to the null,
              Berg-Kirkpatrick et al., 2012)
    approximate randomization (--method ar; Noreen, 1989; Riezler & Maxwell, 2005): R trials
          swap a_i and b_i with probability 1/2 each, delta_r = mean_i s_ri d_i with s_ri = +-1,
          p = (1 + #{r : |delta_r| >= |delta|}) / (1 + R)

Below the table, each system's ROUGE-2 reference specificity (:mod:`.specificity`: own, other, delta
in ROUGE points, its one-sided document-bootstrap lower bound, permutation p; ``--json`` key
``specificity`` {``a``, ``b``}).

``--html`` compares every system with the first by the same test as the table (``--method``,
named on the page), and shows a system's source gain and test NLL (:mod:`.source_use`) only from a
``source_use.json`` that belongs to it (:func:`source_use_for`): the file beside it must record the
sha256 of that output (``generate_output_sha256``), or the folder's run manifest
(``decodings.json``'s ``decodings``, ``hashes.json``'s ``decodings.txt`` or ``generate_output``)
must name that output's sha256 (not the references, sources or checkpoint the manifest also
records); otherwise the figures are "not measured" with the reason, never another system's. With
``--baselines`` the page states under its table each system's verdict with its paired test
against Lead-3 (the extract fairseq-sum-baselines wrote beside the JSON: :func:`lead3_extract`)
and against the first system, ROUGE-1/2/L with p, by the same test; without the extract it says
why not. Baselines of another test set are refused (:func:`check_baselines`), not tested against:
with ``--data`` the JSON's ``data_sha256`` must be that folder's
(:func:`.decodings.data_sha256`, which hashes the references' records, so a copy of the data in
another folder hashes otherwise), and the Lead-3 extract beside it, scored against the systems'
references, must give the ROUGE-1/2/L the JSON records for it (to 0.01 points): the extract of
another data set with as many documents scores otherwise.

The CI is the bootstrap one with either method. Identical systems give delta = 0, CI [0, 0] and
p = 1 under both tests; the smallest p reachable is 1 / (1 + B) (or 1 / (1 + R)).

Inputs are read by ``fairseq-sum-score``'s loaders with its reference options
(:func:`fairseq_sum_plugins.scoring.score_inputs.add_reference_options`): a file holding
``H-``/``D-`` lines is a ``fairseq-generate`` output, any other file holds one hypothesis per line.
References are the untruncated summaries of ``--data`` (or of the absolute data path in each
output's log), ``--ref FILE`` or ``--ref-jsonl FILE`` (through ``--data``'s reference index: records
dropped by ``--skip-empty`` stay aligned), each checked against the ``T-`` lines; ``--refs t-lines``
compares against the cut ``T-`` lines by name. Both systems must cover the same sample ids with
identical references, else it is an error naming the first difference; sample ids missing from an
output are reported against the split's size. The scoring options are ``fairseq-sum-score``'s
(:func:`fairseq_sum_plugins.scoring.rouge.add_scorer_options`: ``--scorer rouge155-py|official``,
``--workers``, ``--sentence-sep`` and its warning, ``--no-detok``, ``--split-sentences``), and
``--meteor-impl`` picks the METEOR of ``--metrics meteor`` (nltk's, or Meteor 1.5's segment scores).
"""
import argparse
import json
import re
import sys

import numpy as np

from fairseq_sum_plugins.cli.outputs import refuse_clobber
from fairseq_sum_plugins.scoring import rouge
from fairseq_sum_plugins.scoring.bootstrap import bootstrap_statistics, percentile_interval
from fairseq_sum_plugins.scoring.score_inputs import (add_reference_options, generate_inputs,
                                                      hypothesis_inputs, int_at_least)

DEFAULT_METRICS = ("rouge1", "rouge2", "rougeL")
METRICS = ("rouge1", "rouge2", "rougeL", "rougeL_plain", "meteor")
_GENERATE_LINE = re.compile(r"^[HD]-\d+\t")


# ------------------------------------------------------------------------------ per-document scores
def document_scores(hyps, refs, metrics=DEFAULT_METRICS, detok=True, seps=(), scorer=None):
    """{metric: array (n,)} of per-document F1s (METEOR: its score), cleaned and scored exactly as
    ``fairseq-sum-score`` (:meth:`fairseq_sum_plugins.scoring.rouge.Scorer.document_f1` of
    ``scorer``, default ``Scorer(detok=detok, seps=seps)``)."""
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}: {', '.join(METRICS)}")
    return (scorer or rouge.Scorer(detok=detok, seps=seps)).document_f1(hyps, refs, metrics)


# ------------------------------------------------------------------------------------ statistics
def paired_bootstrap(a, b, n_samples=1000, seed=1, confidence=0.95):
    """(delta, (ci_low, ci_high), p) of mean(a - b) by the paired bootstrap (module docstring)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    delta = d.mean()
    deltas = bootstrap_statistics(d, n_samples, seed)
    ci = tuple(float(x) for x in percentile_interval(deltas, confidence))
    # a tolerance keeps float noise of a zero difference (identical systems) on the "as extreme"
    # side
    extreme = np.abs(deltas - delta) >= abs(delta) - 1e-12
    return float(delta), ci, float((1 + extreme.sum()) / (1 + n_samples))


def approximate_randomization(a, b, trials=10000, seed=1, chunk=256):
    """(delta, p) of mean(a - b) by approximate randomization (random swaps within each pair)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    delta = d.mean()
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < trials:
        k = min(chunk, trials - done)
        signs = rng.integers(0, 2, (k, len(d))) * 2 - 1
        hits += int((np.abs(signs @ d / len(d)) >= abs(delta) - 1e-12).sum())
        done += k
    return float(delta), float((1 + hits) / (1 + trials))


def compare_systems(hyps_a, hyps_b, refs, metrics=DEFAULT_METRICS, method="bootstrap", samples=1000,
                    trials=10000, seed=1, detok=True, seps=(), scorer=None, specificity=False):
    """Per metric: means of A and B, their difference, its 95% bootstrap CI and the p-value (scores
    of ``scorer``, a :class:`~fairseq_sum_plugins.scoring.rouge.Scorer`; default: the default one
    with ``detok`` and ``seps``). ``specificity``: also each system's ROUGE-2 reference specificity
    (:mod:`.specificity`, 1,000 permutations seeded by ``seed``) under ``specificity`` {``a``,
    ``b``}."""
    if not (len(hyps_a) == len(hyps_b) == len(refs)):
        raise ValueError(f"{len(hyps_a)} and {len(hyps_b)} hypotheses for {len(refs)} references")
    if not refs:
        raise ValueError("nothing to compare")
    if method not in ("bootstrap", "ar"):
        raise ValueError(f"unknown method {method!r} (bootstrap, ar)")
    scorer = scorer or rouge.Scorer(detok=detok, seps=seps)
    sa, sb = (document_scores(h, refs, metrics, scorer=scorer) for h in (hyps_a, hyps_b))
    out = {}
    for m in metrics:
        delta, ci, p = paired_bootstrap(sa[m], sb[m], samples, seed)
        if method == "ar":
            p = approximate_randomization(sa[m], sb[m], trials, seed)[1]
        out[m] = {"a": float(sa[m].mean()), "b": float(sb[m].mean()), "diff": delta,
                  "ci": list(ci), "p": p}
    res = {"method": method, "num_summaries": len(refs), "metrics": out}
    if specificity and len(refs) > 1:
        from ..scoring.specificity import specificity as reference_specificity

        res["specificity"] = {side: reference_specificity(*scorer.pairs(hyps, refs), seed=seed)
                              for side, hyps in (("a", hyps_a), ("b", hyps_b))}
    if "meteor" in metrics:
        from ..scoring.meteor import impl_label

        res["meteor_impl"] = impl_label(scorer.meteor or "nltk")
    return res


# ---------------------------------------------------------------------------------------- inputs
def is_generate_output(path):
    """True when ``path`` holds ``H-``/``D-`` lines of ``fairseq-generate``."""
    with open(path, encoding="utf-8") as f:
        return any(_GENERATE_LINE.match(line) for line in f)


def load_system(path, args):
    """{sample id: (hypothesis, reference)} of one system's output file, read as
    ``fairseq-sum-score`` reads it with the reference options ``args``."""
    if is_generate_output(path):
        ids, hyps, refs, _ = generate_inputs(path, args)
    else:
        ids, hyps, refs = hypothesis_inputs(path, args)
    return {i: (h, r) for i, h, r in zip(ids, hyps, refs)}


def paired_inputs(path_a, path_b, args):
    """(hyps_a, hyps_b, refs) over the sample ids of both systems, checked to pair up."""
    sys_a, sys_b = load_system(path_a, args), load_system(path_b, args)
    if set(sys_a) != set(sys_b):
        only = sorted(set(sys_a) ^ set(sys_b))
        raise ValueError(
            f"{path_a} and {path_b} cover different samples ({len(sys_a)} vs {len(sys_b)}; "
            f"ids in one only: {only[:10]})")
    ids = sorted(sys_a)
    for i in ids:
        ra, rb = sys_a[i][1], sys_b[i][1]
        if ra != rb:
            k = next((k for k, (x, y) in enumerate(zip(ra, rb)) if x != y), min(len(ra), len(rb)))
            at = slice(max(0, k - 20), k + 40)
            raise ValueError(
                f"sample {i}: the references differ between {path_a} and {path_b} at character {k} "
                f"({ra[at]!r} vs {rb[at]!r}); pass the references with --data, --ref or --ref-jsonl"
            )
    return [sys_a[i][0] for i in ids], [sys_b[i][0] for i in ids], [sys_a[i][1] for i in ids]


# ------------------------------------------------------------------------------------------ report
def metric_name(res, m):
    """A metric's row label; METEOR's names its implementation (``METEOR (nltk-3.9)``)."""
    return f"METEOR ({res['meteor_impl']})" if m == "meteor" else rouge.LABELS.get(m, m)


def format_comparison(res, name_a="A", name_b="B"):
    """Text table: metric, A, B, A - B with its 95% CI and p (ROUGE points)."""
    label = "approximate randomization" if res["method"] == "ar" else "paired bootstrap"
    width = max([12] + [len(metric_name(res, m)) for m in res["metrics"]])
    lines = [f"{res['num_summaries']} summaries; p-values by {label}; scores x 100",
             f"{'metric':{width}s} {name_a[:10]:>10s} {name_b[:10]:>10s} {'A - B':>8s} "
             f"{'95% CI':>18s} {'p':>8s}"]
    for m, r in res["metrics"].items():
        ci = f"[{100 * r['ci'][0]:+.2f}, {100 * r['ci'][1]:+.2f}]"
        lines.append(f"{metric_name(res, m):{width}s} {100 * r['a']:10.2f} {100 * r['b']:10.2f} "
                     f"{100 * r['diff']:+8.2f} {ci:>18s} {r['p']:8.4f}")
    for side, name in (("a", name_a), ("b", name_b)):
        spec = res.get("specificity", {}).get(side)
        if spec:
            delta = round(spec["delta"], 9) + 0.0  # no "-0.00" for a float-noise zero
            lower = (f", {spec['level']:.0%} one-sided lower bound {spec['lower']:+.2f}"
                     if spec.get("lower") is not None else "")
            lines.append(f"{name[:10]}: ROUGE-2 specificity own {spec['own']:.2f}, "
                         f"other {spec['other']:.2f}, delta {delta:+.2f}{lower} "
                         f"(permutation p {spec['p']:.4f} against 0)")
    return "\n".join(lines)


def plot_comparison(res, path, name_a="A", name_b="B"):
    """PNG: per metric the difference A - B (points) with its 95% CI and p-value."""
    from .plotting import pyplot, save

    plt = pyplot()

    names = list(res["metrics"])
    rows = [res["metrics"][m] for m in names]
    diff = np.array([100 * r["diff"] for r in rows])
    err = np.array([[100 * (r["diff"] - r["ci"][0]) for r in rows],
                    [100 * (r["ci"][1] - r["diff"]) for r in rows]])
    fig, ax = plt.subplots(figsize=(6, 0.6 * len(names) + 1.6))
    y = np.arange(len(names))[::-1]
    colors = ["tab:green" if r["p"] < 0.05 else "tab:gray" for r in rows]
    for i in range(len(names)):
        ax.errorbar(diff[i], y[i], xerr=err[:, i:i + 1], fmt="none", ecolor=colors[i], capsize=5,
                    lw=2)
    ax.scatter(diff, y, c=colors, zorder=3)
    ax.axvline(0, color="black", lw=0.8, ls="--")
    for yi, d, r in zip(y, diff, rows):
        ax.annotate(f"p={r['p']:.3g}", (d, yi), textcoords="offset points", xytext=(0, 8),
                    ha="center", fontsize=8)
    ax.set_yticks(y, [metric_name(res, m) for m in names])
    ax.set_ylim(-0.7, len(names) - 0.3)
    ax.set_xlabel(f"{name_a} - {name_b} (points, 95% paired-bootstrap CI)")
    ax.set_title(f"{res['num_summaries']} summaries, p by "
                 f"{'approximate randomization' if res['method'] == 'ar' else 'paired bootstrap'}",
                 fontsize=9)
    save(fig, path)


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-sum-compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sys_a", metavar="SYS_A",
                   help="system A: fairseq-generate output or hypotheses, one per line")
    p.add_argument("sys_b", metavar="SYS_B", help="system B, same documents and references")
    p.add_argument("more", nargs="*", metavar="SYS",
                   help="more systems for --html (the paired test above stays A vs B; the page "
                        "compares each with A)")
    add_reference_options(p)
    rouge.add_scorer_options(p, rouge.DOCUMENT_BACKENDS)
    p.add_argument("--metrics", default=",".join(DEFAULT_METRICS),
                   help="comma-separated: rouge1, rouge2, rougeL (summary-level), rougeL_plain "
                        "(rouge155-py only), meteor (--meteor-impl)")
    p.add_argument("--meteor-impl", choices=("nltk", "1.5"),
                   help="METEOR of --metrics meteor: nltk (default; WordNet: Debian wordnet-base) "
                        "or 1.5 (Meteor Universal 1.5's segment scores, as fairseq-sum-score "
                        "--meteor-impl 1.5)")
    p.add_argument("--method", choices=["bootstrap", "ar"], default="bootstrap",
                   help="p-value by paired bootstrap or approximate randomization (CI: bootstrap)")
    p.add_argument("--bootstrap-samples", type=int_at_least(1), default=1000,
                   help="paired-bootstrap resamples of the documents, B: the CI with either "
                        "--method, and p with bootstrap (default: %(default)s)")
    p.add_argument("--ar-trials", type=int_at_least(1), default=10000,
                   help="approximate-randomization trials, R: p with --method ar "
                        "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the resamples, the trials and the specificity permutations "
                        "(default: %(default)s)")
    p.add_argument("--name-a", default="A",
                   help="name of SYS_A in the table (its first 10 characters) and the --png "
                        "plot (default: %(default)s); in --html, unless --names, this name when "
                        "given, else SYS_A's folder")
    p.add_argument("--name-b", default="B",
                   help="name of SYS_B, as --name-a (default: %(default)s)")
    p.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    p.add_argument("--png", metavar="FILE", help="plot the differences with their CIs")
    p.add_argument("--html", metavar="FILE",
                   help="write one self-contained page (no network resource): the table of "
                        "every system (with --baselines, the baselines and verdicts), then per "
                        "document the source with each system's copied n-grams highlighted, the "
                        "reference and the outputs with per-document ROUGE and specificity, "
                        "sortable by where the systems differ most (evaluation/compare_report.py)")
    p.add_argument("--src", metavar="DOCS",
                   help="the documents of --html: one a line (sources.txt of "
                        "evaluation/decodings.py) or a .jsonl (--src-field); default: the S- lines "
                        "of the first generate output")
    p.add_argument("--src-field", default="document",
                   help="document field of a --src .jsonl (default: document)")
    p.add_argument("--baselines", metavar="JSON",
                   help="fairseq-sum-baselines' --json of the same test set (--html; its "
                   "--outputs folder beside it gives Lead-3 for the paired test)")
    p.add_argument("--names", metavar="A,B,...",
                   help="names of the systems in --html (default: each file's folder, or "
                        "--name-a / --name-b)")
    p.add_argument("--title", default="Summaries side by side", help="heading of --html")
    p.add_argument("--html-docs", type=int_at_least(1), default=500, metavar="N",
                   help="documents shown in --html (default 500): all when the split has at "
                        "most N, else the N where the systems' ROUGE-2 differs most (the table "
                        "covers all)")
    return p


def read_paths(args):
    """``[(flag, path)]`` of every file and folder the command may read, for the output guard:
    the systems and the log beside each (``GEN.log``), the reference options, ``--src``,
    ``--baselines`` and the extracts folder beside it, and the run manifest and ``source_use.json``
    beside each system (:func:`source_use_for`)."""
    import os

    from .decodings import MANIFEST

    systems = [("SYS_A", args.sys_a), ("SYS_B", args.sys_b)] + [("SYS", p) for p in args.more]
    reads = systems + [("--ref", args.ref), ("--ref-jsonl", args.ref_jsonl),
                       ("--data", args.data), ("--src", args.src),
                       ("--baselines", args.baselines)]
    if args.baselines:
        reads.append(("the extracts beside --baselines", os.path.splitext(args.baselines)[0]))
    for flag, path in systems:
        folder = os.path.dirname(os.path.abspath(path))
        reads.append((f"the log of {flag}", path + ".log"))
        reads += [(f"{name} beside {flag}", os.path.join(folder, name))
                  for name in (MANIFEST, "hashes.json", "source_use.json")
                  if os.path.isfile(os.path.join(folder, name))]
    return reads


def main(argv=None):
    """Runs the comparison CLI and returns its result (``cli_main`` is the console entry point)."""
    parser = get_parser()
    args = parser.parse_args(argv)
    refuse_clobber(parser, reads=read_paths(args), writes=[
        ("--json", args.json), ("--png", args.png), ("--html", args.html)], files=True)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if args.meteor_impl and "meteor" not in metrics:
        parser.error("--meteor-impl goes with --metrics ...,meteor")
    try:
        hyps_a, hyps_b, refs = paired_inputs(args.sys_a, args.sys_b, args)
        scorer = rouge.scorer_from_args(args, hyps_a + hyps_b + refs, meteor=args.meteor_impl)
        res = compare_systems(hyps_a, hyps_b, refs, metrics, args.method, args.bootstrap_samples,
                              args.ar_trials, args.seed, scorer=scorer, specificity=True)
    except (ValueError, RuntimeError, OSError) as e:
        sys.exit(f"fairseq-sum-compare: error: {e}")
    res.update(sys_a=args.sys_a, sys_b=args.sys_b)
    print(format_comparison(res, args.name_a, args.name_b))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2)
    if args.png:
        plot_comparison(res, args.png, args.name_a, args.name_b)
        print(f"wrote {args.png}")
    if args.html:
        try:
            html_page(args, res)
        except (ValueError, RuntimeError, OSError) as e:
            sys.exit(f"fairseq-sum-compare: error: {e}")
        print(f"wrote {args.html}")
    return res


def _html_names(args, paths):
    if args.names:
        names = [n.strip() for n in args.names.split(",")]
        if len(names) != len(paths) or not all(names) or len(set(names)) != len(names):
            raise ValueError(f"--names {args.names!r}: {len(paths)} distinct, non-empty names "
                             "needed, one per system")
        return names
    import os

    names = [os.path.basename(os.path.dirname(os.path.abspath(p))) or p for p in paths]
    given = ((args.name_a, "A", names[0]), (args.name_b, "B", names[1]))
    names[:2] = [name if default == name_given else name_given
                 for name_given, default, name in given]
    return [n if names.index(n) == i else f"{n} ({i + 1})" for i, n in enumerate(names)]


def html_sources(args, paths, n):
    """The documents of --html as ``<sep>``-joined lines (evaluation/decodings.py's format)."""
    import os

    from ..scoring.score_inputs import GenerateOutput, read_jsonl_field, read_lines
    from .decodings import clean_line

    if args.src is None:
        if not is_generate_output(paths[0]):
            raise ValueError("--html needs --src DOCS (the documents) when the systems are not "
                             "generate outputs")
        gen = GenerateOutput(paths[0])
        missing = [i for i in range(n) if i not in gen.sources]
        if missing:
            raise ValueError(
                f"{paths[0]}: no S- line for sample ids {missing[:10]}: pass --src DOCS")
        return [clean_line(gen.sources[i]) for i in range(n)]
    if not os.path.isfile(args.src):
        raise ValueError(f"--src {args.src}: no such file")
    if args.src.endswith(".jsonl"):
        docs = read_jsonl_field(args.src, args.src_field)
    else:
        docs = read_lines(args.src, "documents")
    if len(docs) != n:
        raise ValueError(f"--src {args.src} has {len(docs)} documents for {n} summaries "
                         "(line i = document i)")
    if is_generate_output(paths[0]):  # the S- lines (cut sources) must start their documents
        from ..scoring.score_inputs import starts_like

        shown = GenerateOutput(paths[0]).sources
        for i in range(n):
            if i in shown and not starts_like(docs[i].replace("<sep>", " "), shown[i]):
                raise ValueError(
                    f"--src {args.src}: document {i} ({docs[i][:60]!r}) does not start "
                    f"with the S- line of {paths[0]} ({shown[i][:60]!r}): documents "
                    "of another split or data set")
    return [clean_line(d, detok=False) for d in docs]


def _read_baselines(path, n):
    with open(path, encoding="utf-8") as f:
        baselines = json.load(f)
    if not isinstance(baselines, dict) or "systems" not in baselines:
        raise ValueError(f"--baselines {path}: not a JSON of fairseq-sum-baselines (no 'systems')")
    docs = baselines.get("documents")
    if docs is not None and docs != n:
        raise ValueError(f"--baselines {path} is of {docs} documents, the systems of {n}")
    return baselines


LEAD3_TOLERANCE = 1e-4  # F1 in [0, 1]: 0.01 ROUGE points, the digits the tables print
LEAD3_KEYS = ("rouge1", "rouge2", "rougeL")


def check_baselines(args, baselines, lead3=None, refs=None, scorer=None):
    """Raises ValueError naming ``--baselines`` when the JSON is not of the compared test set
    (module docstring): its ``data_sha256`` against ``--data``'s, and the ROUGE of the ``lead3``
    extract against ``refs`` (by ``scorer``) against the figures it records for Lead-3."""
    if args.data and baselines.get("data_sha256"):
        from .decodings import data_sha256

        split = args.split or baselines.get("split") or "test"
        mine = data_sha256(args.data, split)
        if mine != baselines["data_sha256"]:
            raise ValueError(
                f"--baselines {args.baselines} records the data sha256 "
                f"{baselines['data_sha256'][:12]}, --data {args.data} ({split}) hashes to "
                f"{mine[:12]}: baselines of another data set (or of a copy of the data in another "
                "folder: run fairseq-sum-baselines on this one)")
    recorded = (baselines.get("systems") or {}).get("lead3") or {}
    if lead3 is None or not all(isinstance(recorded.get(k), (int, float)) for k in LEAD3_KEYS):
        return
    rows = scorer.documents(*scorer.pairs(lead3, refs))
    got = [float(rows[k][:, 2].mean()) for k in LEAD3_KEYS]
    want = [float(recorded[k]) for k in LEAD3_KEYS]
    if any(abs(g - w) > LEAD3_TOLERANCE for g, w in zip(got, want)):
        shown = "/".join(f"{100 * g:.2f}" for g in got)
        raise ValueError(
            f"--baselines {args.baselines}: its Lead-3 extract scores ROUGE-1/2/L {shown} against "
            f"these references, the file records {'/'.join(f'{100 * w:.2f}' for w in want)}: "
            "baselines of another test set (or references other than those they were scored "
            "against)")


def lead3_extract(baselines_path, baselines, n):
    """(lines, None) of the Lead-3 extract fairseq-sum-baselines wrote with the JSON
    ``baselines_path`` (its ``--outputs`` folder beside the JSON, as recipes/common.sh writes
    OUT/baselines.json with OUT/baselines/lead3.txt), or (None, why not). An extract whose
    SHA256SUMS line does not match it, or of another number of documents, is not used."""
    import os

    from .baselines.extracts import SUMS, read_sums
    from .decodings import read_decodings, sha256_file

    folder = os.path.dirname(os.path.abspath(baselines_path))
    outputs = (baselines.get("options") or {}).get("outputs")
    names = [outputs] if isinstance(outputs, str) and outputs else []
    names.append(os.path.splitext(os.path.basename(baselines_path))[0])
    path = next((p for p in (os.path.join(folder, d, "lead3.txt") for d in names)
                 if os.path.isfile(p)), None)
    if path is None:
        return None, (f"no lead3.txt beside --baselines (fairseq-sum-baselines --outputs "
                      f"{os.path.join(folder, names[0])})")
    sums = os.path.join(os.path.dirname(path), SUMS)
    if os.path.isfile(sums):
        try:
            recorded = read_sums(sums).get("lead3.txt")
        except ValueError as e:
            return None, str(e)
        if recorded is not None and recorded != sha256_file(path):
            return None, f"{path} differs from its hash in {SUMS}"
    lines = read_decodings(path, "the Lead-3 extract")
    if len(lines) != n:
        return None, f"{path} has {len(lines)} documents, the systems {n}"
    return lines, None


def source_use_for(path):
    """(source_use.json's figures or None, why not or None) of the system in ``path``: the
    ``source_use.json`` beside it counts only when it, or the folder's run manifest, records the
    sha256 of ``path`` (module docstring)."""
    import os

    from .decodings import MANIFEST, sha256_file

    folder = os.path.dirname(os.path.abspath(path))
    use_path = os.path.join(folder, "source_use.json")
    if not os.path.isfile(use_path):
        return None, None
    try:
        with open(use_path, encoding="utf-8") as f:
            use = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"source_use.json beside {os.path.basename(path)} cannot be read ({e})"
    if not isinstance(use, dict):
        return None, f"source_use.json beside {os.path.basename(path)} is not a JSON object"
    mine = sha256_file(path)
    recorded = use.get("generate_output_sha256")
    if recorded is not None:
        if recorded == mine:
            return use, None
        return None, (f"source_use.json beside {os.path.basename(path)} is of another output "
                      f"(it records sha256 {str(recorded)[:12]}, this file's is {mine[:12]})")
    manifests = []
    outputs = {MANIFEST: ("decodings",), "hashes.json": ("decodings.txt", "generate_output")}
    for name, keys in outputs.items():
        manifest_path = os.path.join(folder, name)
        if os.path.isfile(manifest_path):
            try:
                with open(manifest_path, encoding="utf-8") as f:
                    manifest = json.load(f)
            except (OSError, UnicodeDecodeError, ValueError):
                continue  # an unreadable manifest names nothing
            if isinstance(manifest, dict):
                manifests.append({k: manifest.get(k) for k in keys})
    named = {v for m in manifests for v in m.values() if isinstance(v, str)}
    if manifests and mine in named:
        return use, None
    return None, (f"source_use.json beside {os.path.basename(path)} records no hash of it "
                  "(nor does a run manifest there): whose figures they are cannot be told")


def html_page(args, res):
    """Writes --html (:func:`fairseq_sum_plugins.evaluation.compare_report.html_report`) for every
    system."""
    import os

    from .compare_report import html_report, system_summary

    paths = [args.sys_a, args.sys_b] + list(args.more)
    names = _html_names(args, paths)
    loaded = [load_system(p, args) for p in paths]
    ids = sorted(loaded[0])
    for p, sysm in zip(paths[1:], loaded[1:]):
        if sorted(sysm) != ids or any(sysm[i][1] != loaded[0][i][1] for i in ids):
            raise ValueError(
                f"{p} does not cover the samples of {paths[0]} with the same references")
    if ids != list(range(len(ids))):
        raise ValueError(f"{paths[0]}: the page needs every document of the split (sample ids "
                         f"0..n-1), got {len(ids)} ids up to {ids[-1]}")
    refs = [loaded[0][i][1] for i in ids]
    scorer = rouge.scorer_from_args(args, refs)
    baselines = _read_baselines(args.baselines, len(ids)) if args.baselines else None
    if baselines is not None:
        check_baselines(args, baselines)
    systems = []
    for p, name, sysm in zip(paths, names, loaded):
        use, why = source_use_for(p)
        hyps = [sysm[i][0] for i in ids]
        systems.append(system_summary(name, hyps, refs, scorer, use, baselines, why))
    first = [loaded[0][i][0] for i in ids]
    # the table's test (--method), so that the page shows the p the table printed; each metric is
    # tested alone with the same seed, so ROUGE-2's p is the table's whatever else is tested
    test = dict(method=args.method, samples=args.bootstrap_samples, trials=args.ar_trials,
                seed=args.seed, scorer=scorer)
    pairs = {s["name"]: compare_systems([sysm[i][0] for i in ids], first, refs, DEFAULT_METRICS,
                                        **test)
             for s, sysm in zip(systems[1:], loaded[1:])}
    vs_lead3 = None
    if baselines is not None:  # each system against the Lead-3 extract, by the same test
        from .lead3_statement import points

        lead3, vs_lead3 = lead3_extract(args.baselines, baselines, len(ids))
        if lead3 is not None:
            check_baselines(args, baselines, lead3, refs, scorer)
            vs_lead3 = {s["name"]: points(compare_systems([sysm[i][0] for i in ids], lead3, refs,
                                                          DEFAULT_METRICS, **test)["metrics"])
                        for s, sysm in zip(systems, loaded)}
    ref_lines = [" <sep> ".join(r) for r in scorer.pairs(refs, refs)[1]]
    page = html_report(systems, ref_lines, html_sources(args, paths, len(ids)), baselines, pairs,
                       args.title, max_docs=args.html_docs, vs_lead3=vs_lead3)
    with open(args.html, "w", encoding="utf-8") as f:
        f.write(page)


def cli_main():
    main()


if __name__ == "__main__":
    cli_main()
