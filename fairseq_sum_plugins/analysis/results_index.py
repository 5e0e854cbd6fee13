"""``results/index.json``: every committed result table as a record a program can check.

``results/tables.json`` (written by hand, read as data) says, per record, what the table is::

    {"records": [{"table": "xsum-read", "paper": "recipe", "claim": "...", "data": "...", "updates": 2000,
                  "models": {"base": {"1": "base"}, "copy": {"1": "copy"}}}, ...]}

``models`` maps each model's label to its runs, seed -> run folder (relative to ``results/TABLE``).
A run folder holds what ``recipes/compare.sh`` writes there: ``test.out.rouge.json``
(fairseq-sum-score) and, for runs measured for it, ``source_use.json`` (analysis/source_use.py). A
``parity`` record names instead the JSON of ``benchmarks/learning_parity.py`` (``"parity": FILE``)
and lists its models by their labels there. The index copies those figures per model and seed::

    {"table", "paper", "claim", "data", "updates", "seeds": [1, ...],
     "models": {label: {"rouge1": [..], "source_gain": [..], "distinct": [..]}}}       (summary tables)
     "models": {label: {"valid_nll": [[[updates, bits], ...] per seed]}}               (parity)

``rouge1`` is ROUGE-1 F1 x 100; ``source_gain`` in bits per summary token and ``distinct`` (distinct
decodings) are null for runs made before the project measured them. ``paper`` is one of ``tpt``,
``gate``, ``etads``, ``ta``, ``mem2mem``, ``parity``, or ``recipe`` (a training-recipe ablation that
tests no paper's claim)::

    python -m fairseq_sum_plugins.analysis.results_index results/ --write    # (re)write index.json
    python -m fairseq_sum_plugins.analysis.results_index results/ --check    # exit 1 if it is stale
"""
import argparse
import json
import os
import sys

PAPERS = ("tpt", "gate", "etads", "ta", "mem2mem", "parity", "recipe")


class ResultsError(ValueError):
    pass


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise ResultsError(f"{path}: {e}") from None


def _run_figures(folder):
    rouge = _load(os.path.join(folder, "test.out.rouge.json"))
    use_path = os.path.join(folder, "source_use.json")
    use = _load(use_path) if os.path.exists(use_path) else {}
    return {"rouge1": round(100 * rouge["rouge1"], 2),
            "source_gain": round(use["gain"], 3) if "gain" in use else None,
            "distinct": use.get("distinct")}


def _parity_figures(record, root):
    data = _load(os.path.join(root, record["table"], record["parity"]))
    models = {}
    for label in record["models"]:
        per_seed = []
        for seed in sorted(data["seeds"], key=int):
            curve = data["seeds"][seed].get(label)
            if curve is None:
                raise ResultsError(f"{record['parity']}: no model {label!r} for seed {seed}")
            per_seed.append([[p["updates"], round(p["valid_nll"], 3)] for p in curve])
        models[label] = {"valid_nll": per_seed}
    return sorted(int(s) for s in data["seeds"]), models


def build(root):
    """The index records of ``root``/tables.json, figures read from the run folders."""
    tables = _load(os.path.join(root, "tables.json"))
    out = []
    for record in tables["records"]:
        where = f"tables.json, table {record.get('table')!r}"
        missing = [k for k in ("table", "paper", "claim", "data", "updates", "models") if k not in record]
        if missing:
            raise ResultsError(f"{where}: missing {', '.join(missing)}")
        if record["paper"] not in PAPERS:
            raise ResultsError(f"{where}: paper {record['paper']!r} is not one of {', '.join(PAPERS)}")
        entry = {k: record[k] for k in ("table", "paper", "claim", "data", "updates")}
        if record["paper"] == "parity":
            entry["seeds"], entry["models"] = _parity_figures(record, root)
        else:
            seeds = sorted({int(s) for runs in record["models"].values() for s in runs})
            models = {}
            for label, runs in record["models"].items():
                if sorted(int(s) for s in runs) != seeds:
                    raise ResultsError(f"{where}: model {label!r} has seeds {sorted(runs)}, the table {seeds}")
                figures = [_run_figures(os.path.join(root, record["table"], runs[str(s)])) for s in seeds]
                models[label] = {k: [f[k] for f in figures] for k in ("rouge1", "source_gain", "distinct")}
            entry["seeds"], entry["models"] = seeds, models
        out.append(entry)
    return {"records": out}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", help="the results/ folder (with tables.json)")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="(re)write RESULTS/index.json")
    mode.add_argument("--check", action="store_true", help="exit 1 unless RESULTS/index.json is up to date")
    args = p.parse_args(argv)
    try:
        index = build(args.results)
    except (ResultsError, KeyError, TypeError) as e:
        sys.exit(f"results_index: {e}")
    path = os.path.join(args.results, "index.json")
    if args.write:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(index, f, indent=1)
            f.write("\n")
        print(f"results_index: wrote {len(index['records'])} records to {path}")
        return 0
    committed = _load(path) if os.path.exists(path) else None
    if committed != index:
        old = (committed or {}).get("records", [])
        for i, r in enumerate(index["records"]):
            if i >= len(old) or old[i] != r:
                sys.exit(f"results_index: {path} is stale at record {i + 1}, table {r['table']!r} ({r['paper']}): "
                         f"rerun with --write")
        sys.exit(f"results_index: {path} is stale (records removed): rerun with --write")
    print(f"results_index: {path} is up to date ({len(index['records'])} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
