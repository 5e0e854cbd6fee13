"""Start-up cost of the fairseq-free commands, as ratios measured in one run.

Each command runs as its console script does (``from MODULE import cli_main; cli_main()``) in a
fresh interpreter, with the package imported from ``--tree`` (default: this checkout) and, where
``--before DIR`` is given, from that checkout of an earlier commit (``git worktree add --detach
DIR COMMIT``), round-robin over ``--repeats`` rounds; the median wall time of each is reported,
with its ratio to the import of Google's rouge-score scorer (``python -c "import
rouge_score.rouge_scorer"``) and to a bare interpreter (``python -c pass``):

* ``score``: ``fairseq-sum-score --hyp H --ref R --no-detok`` on the first ``--docs`` committed
  decodings of results/quickstart/seed1-150 (ROUGE-1/2/L with 1,000-sample bootstrap intervals);
* ``compare``: ``fairseq-sum-compare`` of seed1-150 against seed1-2 on the same documents
  (paired bootstrap, 1,000 samples);
* ``baselines``: ``fairseq-sum-baselines --jsonl`` on the same documents and references (Lead-1/3/k,
  random, oracle, specificity).

    python benchmarks/bench_start.py --before /tmp/before --json benchmarks/results/X/start.json
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from fairseq_sum_plugins.scoring.score_inputs import int_at_least  # noqa: E402  (no fairseq)

QUICKSTART = os.path.join(ROOT, "results", "quickstart")
COMMANDS = {"score": "fairseq_sum_plugins.scoring.score",
            "compare": "fairseq_sum_plugins.evaluation.compare",
            "baselines": "fairseq_sum_plugins.evaluation.baselines.systems"}


def inputs(folder, docs):
    """The first ``docs`` decodings, references and sources of the quickstart, written to
    ``folder``; returns the arguments of each command."""
    def lines(*path):
        with open(os.path.join(QUICKSTART, *path), encoding="utf-8") as f:
            return f.read().splitlines()

    refs, srcs = lines("references.txt"), lines("sources.txt")
    if docs > len(refs):
        sys.exit(f"bench_start.py: --docs {docs}: the quickstart has {len(refs)} documents")
    files = {"a": lines("seed1-150", "decodings.txt"), "b": lines("seed1-2", "decodings.txt"),
             "ref": refs}
    for name, text in files.items():
        with open(os.path.join(folder, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(text[:docs]) + "\n")
    with open(os.path.join(folder, "test.jsonl"), "w", encoding="utf-8") as f:
        for src, ref in zip(srcs[:docs], refs[:docs]):
            f.write(json.dumps({"document": src.split(" <sep> "), "summary": ref}) + "\n")
    a, b, ref = (os.path.join(folder, f"{n}.txt") for n in ("a", "b", "ref"))
    return {"score": ["--hyp", a, "--ref", ref, "--no-detok"],
            "compare": [a, b, "--ref", ref, "--no-detok"],
            "baselines": ["--jsonl", os.path.join(folder, "test.jsonl")]}


def timed(argv, tree, cwd):
    env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1")
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"bench_start.py: {' '.join(argv[:4])} failed ({proc.returncode}):\n"
                 f"{proc.stderr[-2000:]}")
    return wall


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tree", default=ROOT, help="checkout the package is imported from")
    p.add_argument("--before", metavar="DIR", help="checkout of an earlier commit, to compare")
    p.add_argument("--docs", type=int_at_least(1), default=20)
    p.add_argument("--repeats", type=int_at_least(1), default=7)
    p.add_argument("--commands", default=",".join(COMMANDS),
                   help=f"comma-separated, of {', '.join(COMMANDS)}")
    p.add_argument("--json", metavar="FILE", help="write the figures here")
    args = p.parse_args(argv)
    commands = [c for c in args.commands.split(",") if c]
    bad = [c for c in commands if c not in COMMANDS]
    if bad or not commands:
        p.error(f"--commands {args.commands}: expected some of {', '.join(COMMANDS)}")
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        p.error(f"--json {args.json}: no such folder")
    trees = {"after": os.path.abspath(args.tree)}
    if args.before:
        trees["before"] = os.path.abspath(args.before)
    for tree in trees.values():
        if not os.path.isfile(os.path.join(tree, "fairseq_sum_plugins", "__init__.py")):
            p.error(f"{tree}: not a checkout of this package (no fairseq_sum_plugins/__init__.py)")
    py = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        argvs = inputs(folder, args.docs)
        runs = {"python -c pass": ([py, "-c", "pass"], trees["after"]),
                "import rouge_score.rouge_scorer": (
                    [py, "-c", "import rouge_score.rouge_scorer"], trees["after"])}
        for command in commands:
            code = f"import sys; from {COMMANDS[command]} import cli_main; cli_main()"
            for when, tree in trees.items():
                runs[f"{command} ({when})"] = ([py, "-c", code, *argvs[command]], tree)
        walls = {name: [] for name in runs}
        for _ in range(args.repeats):
            for name, (cmd, tree) in runs.items():
                walls[name].append(timed(cmd, tree, folder))
    median = {name: statistics.median(w) for name, w in walls.items()}
    rouge = median["import rouge_score.rouge_scorer"]
    bare = median["python -c pass"]
    print(f"{'run':<34} {'median s':>9} {'/ rouge-score import':>21} {'/ bare python':>14}")
    for name, m in median.items():
        print(f"{name:<34} {m:9.3f} {m / rouge:21.2f} {m / bare:14.1f}")
    for command in commands if "before" in trees else ():
        speedup = median[f"{command} (before)"] / median[f"{command} (after)"]
        print(f"{command}: before / after = {speedup:.2f}")
    if args.json:
        load = os.getloadavg() if hasattr(os, "getloadavg") else None
        out = {"docs": args.docs, "repeats": args.repeats, "cpu": platform.processor()
               or platform.machine(), "cpus": os.cpu_count(), "load_average_at_end": load,
               "python": platform.python_version(), "median_s": median, "walls_s": walls,
               "ratio_to_rouge_score_import": {n: m / rouge for n, m in median.items()}}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
    return median


if __name__ == "__main__":
    main()
