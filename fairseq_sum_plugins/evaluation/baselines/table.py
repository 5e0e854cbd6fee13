"""The baselines and the verdict "specific to its document" beside the models of a
``recipes/compare.sh`` run.

::

    python -m fairseq_sum_plugins.evaluation.baseline_table OUT WORK LABEL... \\
        [--baselines OUT/baselines.json]

reads ``fairseq-sum-baselines --data WORK``'s JSON (default ``OUT/baselines.json``) and, per label,
``OUT/LABEL/test.out`` (the decoding), ``test.out.rouge.json`` (``fairseq-sum-score --specificity``)
and ``source_use.json`` (source gain, the model's own test NLL, distinct outputs), and writes

* ``OUT/baselines.md``: one table, the baseline rows (Lead-1, Lead-3, Lead-k, random3, the oracle,
  the generic summary, the bag of pieces) then the models, each with ROUGE-1/2/L F1, ROUGE-2
  specificity delta (p), test NLL, source gain, distinct outputs and the verdict
  (:func:`fairseq_sum_plugins.scoring.specificity.verdict`), and for each model its paired
  bootstrap against Lead-3 (:func:`fairseq_sum_plugins.evaluation.compare.compare_systems`, 1,000
  resamples, seed 1: A - B in ROUGE points with p) beside its paired difference from the first label
  (compare.sh's baseline), and under the table per model the sentence of
  :func:`.lead3_statement.statement` (the paired test against Lead-3 and against the first label,
  with p; "specific to its document but below Lead-3" first where that holds);
* ``OUT/verdicts.json``: ``{label: {"verdict", "vs_lead3", "vs_first"}}`` (``vs_*``:
  compare_systems' ``metrics``) and ``baselines`` (the JSON read);
* the same table appended to ``OUT/results.md`` under "## Baselines and the verdict" (replacing an
  earlier such section).

Over seeds (``recipes/xsum/paper_evidence.sh``: one compare.sh OUT per seed, the same test set)::

    python -m fairseq_sum_plugins.evaluation.baseline_table OUT --across OUT/seed1 OUT/seed2 ...

writes the section once for all seeds into ``OUT/results.md`` and ``OUT/baselines.md``: the baseline
rows of the first seed's folder (the baselines do not train: the same in every folder), then per
model the mean +- sd over seeds of ROUGE-1/2/L and of the specificity delta, the verdict of each
seed, and the ROUGE-2 difference from Lead-3 of each seed with its paired-bootstrap p
(:func:`across_seeds`).

Lead-3 is recomputed from ``WORK`` (:func:`.baselines.read_prepared`, :func:`.baselines.lead`), the
text fairseq-sum-baselines scored. A label whose decoding does not cover every test document, or
whose references differ from WORK's, is an error naming it. The table (both forms) starts with a
SMOKE=1 line when a run it shows, or its baselines, was made under ``SMOKE=1`` (their spec records,
:func:`fairseq_sum_plugins.cli.run_spec.smoke_note`).
"""

import argparse
import json
import os
import sys

from ...cli import run_spec
from ...cli.outputs import refuse_clobber
from ...scoring import rouge
from . import systems as bl
from .. import lead3_statement as ls
from ...scoring import specificity as sp

SECTION = "## Baselines and the verdict"
NAMES = {
    "lead1": "Lead-1",
    "lead3": "Lead-3",
    "leadk": "Lead-k",
    "random3": "random 3 sentences",
    "oracle": "oracle (greedy)",
    "generic": "generic summary",
}


def _read_json(path, what):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} missing ({what})")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def model_outputs(gen_output, data_bin, n):
    """Hypotheses and references of a generate output, by sample id 0..n-1 (fairseq-sum-score's
    reading)."""
    from ..compare import get_parser, load_system

    args = get_parser().parse_args([gen_output, gen_output, "--data", data_bin])
    system = load_system(gen_output, args)
    if sorted(system) != list(range(n)):
        raise ValueError(
            f"{gen_output} covers {len(system)} sample ids, not the {n} test documents of the "
            "baselines"
        )
    return [system[i][0] for i in range(n)], [system[i][1] for i in range(n)]


def vs_lead3_of(gen_output, work, split="test", samples=1000, seed=1):
    """The paired bootstrap of a generate output's ROUGE minus Lead-3's on ``work``'s ``split``
    (:func:`.lead3_statement.points`: ROUGE points with p), as :func:`build` computes it."""
    from ..compare import compare_systems

    docs, refs = bl.read_prepared(work, split)
    hyps, model_refs = model_outputs(gen_output, bl.prepared_folders(work)[1], len(docs))
    if model_refs != refs:
        raise ValueError(f"{gen_output}: its references differ from {work}'s {split} references")
    return ls.points(compare_systems(hyps, bl.lead(docs, 3), refs, samples=samples, seed=seed,
                                     scorer=rouge.Scorer())["metrics"])


def _points(metrics):
    """'+1.23 (p 0.004)' per ROUGE-1/2/L of compare_systems' metrics, joined by ' / '."""
    return " / ".join(
        f"{100 * metrics[m]['diff']:+.2f} (p {metrics[m]['p']:.3f})" for m in rouge.MAIN_METRICS
    )


def _spec_cell(spec):
    """'delta (p)': the delta and its permutation p against 0 (the column the results check reads);
    the verdict's lower bound is in the bar's note and the verdict's reasons."""
    return f"{round(spec['delta'], 9) + 0.0:+.2f} ({spec['p']:.3f})" if spec else "-"


def _f(value, fmt):
    return "-" if value is None else format(value, fmt)


def build(out_dir, work, labels, baselines_path=None, samples=1000, seed=1):
    """(markdown table, verdicts dict) of the run (module docstring)."""
    from ..compare import compare_systems

    base = _read_json(
        baselines_path or os.path.join(out_dir, "baselines.json"), "fairseq-sum-baselines --json"
    )
    docs, refs = bl.read_prepared(work, base.get("split", "test"))
    if len(docs) != base.get("documents"):
        raise ValueError(
            f"the baselines are of {base.get('documents')} documents, {work} has {len(docs)}"
        )
    lead3 = bl.lead(docs, 3)
    _, bin_dir = bl.prepared_folders(work)
    scorer = rouge.Scorer()
    bag = base.get("bag_of_pieces") or {}
    head = [
        "system",
        "ROUGE-1",
        "ROUGE-2",
        "ROUGE-L",
        "specificity delta (p)",
        "test NLL (bits)",
        "source gain",
        "distinct",
        "verdict",
        "vs Lead-3: A - B, ROUGE-1 / 2 / L (p)",
        f"vs `{labels[0]}`: A - B (p)",
    ]
    rows = []
    for name, s in base["systems"].items():
        if s is None:
            continue
        label = f"Lead-{s['k']} (k on valid)" if name == "leadk" else NAMES.get(name, name)
        rows.append(
            [
                f"*{label}*",
                *(f"{100 * s[m]:.2f}" for m in rouge.MAIN_METRICS),
                _spec_cell(s["specificity"]),
                "-",
                "-",
                f"{s['distinct']}/{base['documents']}",
                sp.extract_cell(s["verdict"]),
                "",
                "",
            ]
        )
    if bag:
        rows.append(
            [
                f"*bag of pieces (no training, lambda {bag['lambda']:.2f})*",
                "-",
                "-",
                "-",
                "-",
                f"{bag['nll']:.3f}",
                f"{bag['gain']:.3f}",
                "-",
                sp.label_of(bag["verdict"]["label"]),
                "",
                "",
            ]
        )
    verdicts, first = {}, None
    for label in labels:
        run = os.path.join(out_dir, label)
        scores = _read_json(os.path.join(run, "test.out.rouge.json"), "fairseq-sum-score --json")
        use_path = os.path.join(run, "source_use.json")
        use = _read_json(use_path, "source_use") if os.path.isfile(use_path) else {}
        hyps, model_refs = model_outputs(os.path.join(run, "test.out"), bin_dir, len(docs))
        if model_refs != refs:
            raise ValueError(f"{run}/test.out: its references differ from {work}'s test references")
        v = sp.verdict(
            scores.get("specificity"),
            sp.random_mean(base),
            deltas=sp.random_deltas(base),
            nll=use.get("nll_own"),
            bag_nll=bag.get("nll"),
            gain=use.get("gain"),
            distinct=use.get("distinct"),
            outputs=use.get("hypotheses"),
        )
        vs_lead3 = compare_systems(hyps, lead3, refs, samples=samples, seed=seed, scorer=scorer)[
            "metrics"
        ]
        vs_first = (
            None
            if first is None
            else compare_systems(hyps, first, refs, samples=samples, seed=seed, scorer=scorer)[
                "metrics"
            ]
        )
        first = hyps if first is None else first
        verdicts[label] = {"verdict": v, "vs_lead3": vs_lead3, "vs_first": vs_first}
        rows.append(
            [
                f"`{label}`",
                *(f"{100 * scores[m]:.2f}" for m in rouge.MAIN_METRICS),
                _spec_cell(scores.get("specificity")),
                _f(use.get("nll_own"), ".3f"),
                _f(use.get("gain"), ".3f"),
                f"{use['distinct']}/{use['hypotheses']}" if "distinct" in use else "-",
                f"**{v['label']}**" if v["specific"] is True else v["label"],
                _points(vs_lead3),
                _points(vs_first) if vs_first else "(itself)",
            ]
        )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(r) + " |" for r in rows
    ]
    statements = [
        ls.statement(label, [v["verdict"]["label"]], [ls.points(v["vs_lead3"])],
                     [ls.points(v["vs_first"]) if v["vs_first"] else None], labels[0])
        for label, v in verdicts.items()
    ]
    notes = statements + [
        "",
        f"{base['documents']} test documents. Baselines: fairseq-sum-baselines "
        "(evaluation/baselines.py); "
        "ROUGE F1 x 100; specificity: ROUGE-2 F1 against the own reference minus against the other "
        "documents' (points), permutation p against 0. Verdict \"specific to its document\" "
        f"(scoring/specificity.py): the {sp.LEVEL:.0%} one-sided document-bootstrap lower bound of "
        f"the specificity delta above {sp.bar_note(base)}, test NLL below the bag of pieces'"
        + (f" {bag['nll']:.3f} bits" if bag else "")
        + f", and reading (source gain >= {sp.READ_GAIN} bits, >= {sp.READ_DISTINCT:.0%} "
        "distinct); \"marginal\" where the Monte Carlo bands of the bound and of the bar overlap. "
        "The verdict separates outputs that depend on their document from generic ones and is no "
        "test of summarizing: an extract clears the bar (an extract's row: its bar check, as it "
        "has no test NLL). "
        "Paired bootstrap (fairseq-sum-compare's, 1,000 resamples): the model minus Lead-3, and "
        "the model "
        f"minus `{labels[0]}`."
    ]
    failed = {
        label: v["verdict"]["reasons"]
        for label, v in verdicts.items()
        if v["verdict"]["specific"] is not True
    }
    notes += [f"- `{label}`: " + "; ".join(reasons) for label, reasons in failed.items()]
    smoke = _smoke({label: run_spec.run_files(os.path.join(out_dir, label)) for label in labels},
                   baselines_path or os.path.join(out_dir, "baselines.json"))
    return smoke + "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n", {
        "labels": verdicts,
        "baselines": base,
    }


def _baseline_rows(base):
    rows = []
    for name, s in base["systems"].items():
        if s is not None:
            label = f"Lead-{s['k']} (k on valid)" if name == "leadk" else NAMES.get(name, name)
            rows.append(
                [
                    f"*{label}*",
                    *(f"{100 * s[m]:.2f}" for m in rouge.MAIN_METRICS),
                    _spec_cell(s["specificity"]),
                    f"{s['distinct']}/{base['documents']}",
                    sp.extract_cell(s["verdict"]),
                    "",
                ]
            )
    bag = base.get("bag_of_pieces")
    if bag:
        rows.append(
            [
                f"*bag of pieces (no training, lambda {bag['lambda']:.2f}): test NLL "
                f"{bag['nll']:.3f} bits, "
                f"source gain {bag['gain']:.3f}*",
                "-",
                "-",
                "-",
                "-",
                "-",
                sp.label_of(bag["verdict"]["label"]),
                "",
            ]
        )
    return rows


def _mean_sd(values):
    import numpy as np

    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return (
        f"{np.mean(values):.2f} +- {np.std(values, ddof=1):.2f}"
        if len(values) > 1
        else f"{values[0]:.2f}"
    )


def across_seeds(seed_dirs):
    """Markdown section of compare.sh folders of several seeds (module docstring)."""
    base = _read_json(os.path.join(seed_dirs[0], "baselines.json"), "fairseq-sum-baselines --json")
    runs = [
        _read_json(os.path.join(d, "verdicts.json"), "baseline_table of the seed's compare.sh")[
            "labels"
        ]
        for d in seed_dirs
    ]
    labels = list(runs[0])
    head = [
        "system",
        "ROUGE-1",
        "ROUGE-2",
        "ROUGE-L",
        "specificity delta (p)",
        "distinct",
        "verdict",
        "vs Lead-3: ROUGE-2 A - B (p), each seed",
    ]
    rows = _baseline_rows(base)
    for label in labels:
        scores = []
        for d, run in zip(seed_dirs, runs):
            if label not in run:
                raise ValueError(f"{d}/verdicts.json has no label {label!r} (of {seed_dirs[0]})")
            scores.append(
                _read_json(
                    os.path.join(d, label, "test.out.rouge.json"), "fairseq-sum-score --json"
                )
            )
        specs = [s.get("specificity") for s in scores]
        rows.append(
            [
                f"`{label}`",
                *(_mean_sd([100 * s[m] for s in scores]) for m in rouge.MAIN_METRICS),
                _mean_sd([sp_["delta"] if sp_ else None for sp_ in specs])
                + (f" (p <= {max(sp_['p'] for sp_ in specs):.3f})" if all(specs) else ""),
                "-",
                " / ".join(run[label]["verdict"]["label"] for run in runs),
                " / ".join(
                    f"{100 * run[label]['vs_lead3']['rouge2']['diff']:+.2f} "
                    f"({run[label]['vs_lead3']['rouge2']['p']:.3f})"
                    for run in runs
                ),
            ]
        )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(r) + " |" for r in rows
    ]
    seeds = [os.path.basename(d) for d in seed_dirs]
    statements = [
        ls.statement(label, [run[label]["verdict"]["label"] for run in runs],
                     [ls.points(run[label]["vs_lead3"]) for run in runs],
                     [ls.points(run[label]["vs_first"]) if run[label].get("vs_first") else None
                      for run in runs], labels[0], seeds=seeds)
        for label in labels
    ]
    note = (
        f"{base['documents']} test documents, {len(seed_dirs)} seeds "
        f"({', '.join(seeds)}): "
        "models as mean +- sd over seeds, the verdict and the paired bootstrap against Lead-3 of "
        "each seed; "
        'baselines (fairseq-sum-baselines, no training) once. Verdict "specific to its document" '
        f"(scoring/specificity.py): the {sp.LEVEL:.0%} one-sided document-bootstrap lower bound of "
        f"the ROUGE-2 specificity delta above {sp.bar_note(base)}, test NLL below the bag of "
        "pieces', source gain "
        f">= {sp.READ_GAIN} bits and >= {sp.READ_DISTINCT:.0%} distinct; each seed's table: "
        "SEED/baselines.md."
    )
    smoke = _smoke({f"{os.path.basename(d)}/{label}": run_spec.run_files(os.path.join(d, label))
                    for d in seed_dirs for label in labels},
                   os.path.join(seed_dirs[0], "baselines.json"))
    return (smoke + "\n".join(lines) + "\n\n" + "\n".join(statements) + "\n\n" + note + "\n")


def _smoke(runs, baselines):
    """The SMOKE=1 line (with its blank line) the table starts with when a run it shows, or its
    baselines' data, was made under SMOKE=1 (:func:`fairseq_sum_plugins.cli.run_spec.smoke_note`);
    "" when none."""
    note = run_spec.smoke_note(dict(runs, baselines=[baselines]))
    return note + "\n\n" if note else ""


def _replace_section(results, table):
    """Puts ``table`` under :data:`SECTION` at the end of the markdown file ``results`` (replacing
    it)."""
    if not os.path.isfile(results):
        return
    with open(results, encoding="utf-8") as f:
        text = f.read()
    if SECTION in text:  # an earlier section: up to the next "## " heading
        start = text.index(SECTION)
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + (text[end + 1 :] if end >= 0 else "")
    with open(results, "w", encoding="utf-8") as f:
        f.write(text.rstrip("\n") + f"\n\n{SECTION}\n\n{table}")


def write_across(out_dir, seed_dirs):
    """OUT/baselines.md and the section of OUT/results.md over seeds."""
    table = across_seeds(seed_dirs)
    with open(os.path.join(out_dir, "baselines.md"), "w", encoding="utf-8") as f:
        f.write("# Baselines and the verdict\n\n" + table)
    _replace_section(os.path.join(out_dir, "results.md"), table)
    return table


def write(out_dir, work, labels, baselines_path=None):
    """Writes baselines.md and verdicts.json and the section of results.md (module docstring)."""
    table, verdicts = build(out_dir, work, labels, baselines_path)
    with open(os.path.join(out_dir, "baselines.md"), "w", encoding="utf-8") as f:
        f.write("# Baselines and the verdict\n\n" + table)
    with open(os.path.join(out_dir, "verdicts.json"), "w", encoding="utf-8") as f:
        json.dump(verdicts, f, indent=2)
    _replace_section(os.path.join(out_dir, "results.md"), table)
    return table


def cli_main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "out", help="the OUT folder of recipes/compare.sh (with --across: where to write)"
    )
    p.add_argument("work", nargs="?", help="the prepared folder WORK of the run")
    p.add_argument(
        "labels", nargs="*", help="labels in table order (the first is compare.sh's baseline)"
    )
    p.add_argument("--baselines", help="fairseq-sum-baselines' JSON (default OUT/baselines.json)")
    p.add_argument(
        "--across",
        nargs="+",
        metavar="SEED_OUT",
        help="compare.sh folders of several seeds, each with its verdicts.json: "
        "one section for all",
    )
    args = p.parse_args(argv)
    outs = ["baselines.md"] + ([] if args.across else ["verdicts.json"])
    work = bl.prepared_reads("WORK", args.work, "test") if args.work else []
    refuse_clobber(p, reads=work + [
        ("--baselines", args.baselines or os.path.join(args.out, "baselines.json")),
        ("LABEL", [os.path.join(args.out, label) for label in args.labels]),
        ("--across", [os.path.join(d, "verdicts.json") for d in args.across or ()])],
        writes=[("OUT", os.path.join(args.out, name)) for name in outs])
    if bool(args.across) == bool(args.work):
        p.error(
            "give WORK LABEL... (one compare.sh run) or --across SEED_OUT... (several seeds), not "
            "both"
        )
    if args.work and not args.labels:
        p.error("WORK needs the labels of the run")
    try:
        print(
            write_across(args.out, args.across)
            if args.across
            else write(args.out, args.work, args.labels, args.baselines)
        )
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"baseline_table: error: {e}")


if __name__ == "__main__":
    cli_main()
