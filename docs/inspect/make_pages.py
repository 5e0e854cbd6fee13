"""The two pages of docs/inspect/ in one command: data, tiny models, pages.

    OMP_NUM_THREADS=1 python docs/inspect/make_pages.py --xsum-sample XSUM_TEST.jsonl \\
        [--work data/inspect-pages] [--out docs/inspect]

``XSUM_TEST.jsonl``: 1,000 pairs of XSum's test split in the Hugging Face ``xsum`` layout
(``document``, ``summary``, ``id``), carved 800/100/100 by ``preprocess.xsum_to_jsonl``. The
quickstart page's data is ACLSum, shipped with the ``aclsum`` package. Every model is trained for
:data:`UPDATES` updates with seed 1 on one CPU thread (``--cpu``): the pages show what each mechanism
computes on a real document, not what a trained model of the papers does. A step whose output is
there (``WORK/*/bin/prepare_args.json``, a checkpoint's ``.done``) is skipped; delete ``WORK`` to
start again.

Each page records the sha256 of its generator (:func:`generator_digest`: this script and the
inspection page's code, :data:`GENERATOR_FILES`) in ``<meta name="inspect-generator">``;
tests/test_inspect.py fails when a committed page's digest is not the current files' (a page older
than its generator).
"""
import argparse
import hashlib
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# what the pages are made from, besides the checkpoints (relative to the repository)
GENERATOR_FILES = ("docs/inspect/make_pages.py",
                   "fairseq_sum_plugins/inspection/page/cli.py",
                   "fairseq_sum_plugins/inspection/stage.py",
                   "fairseq_sum_plugins/inspection/page/render.py",
                   "fairseq_sum_plugins/inspection/page/assets/inspect.js",
                   "fairseq_sum_plugins/inspection/page/assets/inspect.css",
                   "fairseq_sum_plugins/inspection/page/assets/layers.json")
META = '<meta name="inspect-generator" content="sha256:{}">'
UPDATES = 100

COMMON = ["--cpu", "--seed", "1", "--num-workers", "0", "--max-update", str(UPDATES),
          "--disable-validation", "--no-epoch-checkpoints", "--log-format", "simple",
          "--log-interval", "25"]
QUICKSTART = ["--arch", "tp_transformer_small", "--pointer-generator", "True", "--optimizer", "adam",
              "--adam-betas", "(0.9, 0.98)", "--lr", "2e-3", "--lr-scheduler", "inverse_sqrt",
              "--warmup-updates", "50", "--label-smoothing", "0.1", "--dropout", "0.1",
              "--clip-norm", "1.0", "--max-tokens", "4000", "--max-source-positions", "520",
              "--max-target-positions", "260"]
XSUM = ["--optimizer", "adam", "--lr", "2e-3", "--lr-scheduler", "inverse_sqrt",
        "--warmup-updates", "30", "--label-smoothing", "0.1", "--dropout", "0.1",
        "--max-tokens", "4000"]
TINY = ["--encoder-embed-dim", "64", "--decoder-embed-dim", "64", "--encoder-layers", "2",
        "--decoder-layers", "2", "--encoder-attention-heads", "4", "--decoder-attention-heads",
        "4", "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
        "--pointer-generator", "True"]
# (folder, page name, flags) of the XSum page's models
XSUM_MODELS = [
    ("gate", "gated transformer (IS)", ["--arch", "transformer_gated_small", *TINY]),
    ("etads", "ETADS focus+saliency", ["--arch", "t5_transformer_small", *TINY,
                                       "--focus-layers", "1", "--saliency-layers", "2"]),
    ("tpt", "TP-Transformer", ["--arch", "tp_transformer_small", *TINY, "--tpr-role-dim", "16"]),
    ("ta", "Topic Assistant", ["--arch", "transformer_ta_small", *TINY, "--side-data", "theta"]),
    ("mem2mem", "Mem2Mem", ["--arch", "mem2mem_base", "--embed-dim", "64",
                            "--encoder-hidden-size", "64", "--decoder-hidden-size", "96"]),
]


def generator_digest(repo=REPO):
    """sha256 of :data:`GENERATOR_FILES` (each file's path and bytes, in that order)."""
    h = hashlib.sha256()
    for rel in GENERATOR_FILES:
        with open(os.path.join(repo, rel), "rb") as f:
            h.update(rel.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def recorded_digest(html):
    """The digest a page records (:data:`META`), or None."""
    head, sep, rest = html.partition('<meta name="inspect-generator" content="sha256:')
    return rest.split('"', 1)[0] if sep else None


def stamp(path):
    """Records :func:`generator_digest` in the page ``path`` (after its ``<meta charset>``)."""
    with open(path, encoding="utf-8") as f:
        html = f.read()
    charset = '<meta charset="utf-8">'
    if charset not in html:
        raise ValueError(f"{path}: no {charset} to put the generator's digest after")
    html = html.replace(charset, charset + META.format(generator_digest()), 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)


def run(*cmd):
    print("+", " ".join(cmd), flush=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run(cmd, check=True, cwd=REPO, env=env)


def prepare(jsonl, out, *flags):
    if not os.path.isfile(os.path.join(out, "bin", "prepare_args.json")):
        run("fairseq-sum-prepare", "--jsonl-dir", jsonl, "--out", out, "--workers", "1",
            "--seed", "1", "--num-threads", "1", *flags)
    return os.path.join(out, "bin")


def train(data, save, *flags):
    if not os.path.isfile(os.path.join(save, ".done")):
        os.makedirs(save, exist_ok=True)
        run("fairseq-train", data, "--user-dir", os.path.join(REPO, "fairseq_sum_plugins"),
            "--task", "summarization", "--criterion", "summarization_loss", "--save-dir", save,
            *COMMON, *flags)
        open(os.path.join(save, ".done"), "w").close()
    return os.path.join(save, "checkpoint_last.pt")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--xsum-sample", required=True, metavar="JSONL",
                   help="1,000 pairs of XSum's test split, HF layout")
    p.add_argument("--work", default=os.path.join(REPO, "data", "inspect-pages"),
                   help="data and checkpoints (default: data/inspect-pages)")
    p.add_argument("--out", default=os.path.join(REPO, "docs", "inspect"),
                   help="where the pages go (default: docs/inspect)")
    args = p.parse_args(argv)
    if not os.path.isfile(args.xsum_sample):
        p.error(f"--xsum-sample {args.xsum_sample}: no such file")
    if not os.path.isdir(args.out):
        p.error(f"--out {args.out}: no such folder")
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)

    qs = os.path.join(work, "quickstart")
    if not os.path.isfile(os.path.join(qs, "jsonl", "test.jsonl")):
        run(sys.executable, "-m", "preprocess.aclsum_to_jsonl", "--out", os.path.join(qs, "jsonl"))
    qs_bin = prepare(os.path.join(qs, "jsonl"), qs, "--vocab-size", "8000", "--max-src-tokens",
                     "512", "--max-tgt-tokens", "256")
    qs_ckpt = train(qs_bin, os.path.join(qs, "ckpt"), *QUICKSTART)

    xs = os.path.join(work, "xsum")
    if not os.path.isfile(os.path.join(xs, "jsonl", "test.jsonl")):
        run(sys.executable, "-m", "preprocess.xsum_to_jsonl", "--jsonl", args.xsum_sample,
            "--out", os.path.join(xs, "jsonl"))
    xs_bin = prepare(os.path.join(xs, "jsonl"), xs, "--vocab-size", "4000", "--max-src-tokens",
                     "400", "--max-tgt-tokens", "64")
    if not os.path.isfile(os.path.join(xs_bin, "test.theta.npy")):
        run(sys.executable, "-m", "preprocess.topic_model", "fit", xs_bin, "--topics", "20",
            "--iters", "30", "--seed", "1", "--splits", "train,valid,test")
    ckpts = [train(xs_bin, os.path.join(xs, "ckpt-" + folder), *XSUM, *flags)
             for folder, _, flags in XSUM_MODELS]

    page = os.path.join(args.out, "quickstart.html")
    run("fairseq-sum-inspect", qs_bin, "--path", qs_ckpt, "--split", "test", "--documents", "0,1",
        "--names", f"quickstart model: tp_transformer_small + copy; {UPDATES} updates",
        "--title", "Mechanisms at work: the quickstart model", "--html", page)
    stamp(page)
    page = os.path.join(args.out, "xsum-papers.html")
    paths = [a for c in ckpts for a in ("--path", c)]
    run("fairseq-sum-inspect", xs_bin, *paths, "--split", "test", "--documents", "0,1",
        "--names", ",".join(name for _, name, _ in XSUM_MODELS),
        "--title", f"Mechanisms at work: five papers' tiny models, {UPDATES} updates on XSum",
        "--html", page)
    stamp(page)


if __name__ == "__main__":
    main()
