"""What the smoke-scale tests of recipes/papers.sh share (tests/test_paper_table_*.py, one file per
paper): real text shaped as each dataset's raw release, the command's run, and the checks of a
written table.

The smoke tests run each table's command end to end at smoke scale (``SMOKE=1``: tiny models, a few
updates) on real text: ACLSum's papers (the ``aclsum`` package, through preprocess.aclsum_to_jsonl),
bodies cut to their first paragraphs, shaped as each dataset's raw release (XSum and CNN/DM's
Hugging Face JSONL, Newsroom's jsonl.gz, Cohan et al.'s PubMed files): conftest's ``raw_corpora``.
One output folder per paper (conftest's ``papers_out``) is shared by the tests of that paper, as a
user running a paper's tables one after another shares it. Each test checks that the written table
has every row of the paper's table with the paper's figures, and the run's figures where this
project runs the row."""
import gzip
import json
import os
import re
import signal
import subprocess
import sys

from ledger import paper_tables as pt

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {"train": 100, "valid": 8, "test": 8}  # ACLSum's 100 training papers, 8 + 8 held out
PARAGRAPHS = 8  # first paragraphs of each paper body kept (a short document)
PAPER_ENV_DROP = ("WORK ARCH NAME EXTRA BATCH BEAM BEAMS UPDATE_FREQ MAX_SRC MAX_TGT EPOCHS "
                  "SAVE_INTERVAL TOPICS TOPICS_N LENPENS LAMBDA THRESHOLD TEST_SUBSET MAX_UPDATE "
                  "VOCAB OUT SMOKE PRESET SCORER METEOR PROBE_LABELS SPACY_MODEL SPLITS MEASURE "
                  "MEASURE_BATCH PROBE_EXTRA TOP_K COVERAGE_WEIGHT COVERAGE_TYPE COVERAGE_BETA "
                  "SWEEP_SUBSET SWEEP_THRESHOLDS GATE_WARMUP BART_ARCH BART_EXTRA TA").split()


def write_raw_corpora(root):
    """The same real pairs in each dataset's raw format under ``root``: {dataset: path}."""
    pairs = _aclsum_pairs(root / "aclsum")
    paths = {"xsum": root / "xsum", "cnn_dm": root / "cnn_dm", "newsroom": root / "newsroom",
             "pubmed": root / "pubmed"}
    _write_xsum(paths["xsum"], pairs)
    _write_cnndm(paths["cnn_dm"], pairs)
    _write_newsroom(paths["newsroom"], pairs)
    _write_cohan(paths["pubmed"], pairs)
    return {k: str(v) for k, v in paths.items()}


def _aclsum_pairs(folder):
    """ACLSum (aclsum package) as (document paragraphs, summary sentences) per split."""
    subprocess.run([sys.executable, "-m", "preprocess.aclsum_to_jsonl", "--out", str(folder)],
                   cwd=REPO, check=True, capture_output=True)
    out = {}
    for split, n in SIZES.items():
        with open(folder / f"{split}.jsonl", encoding="utf-8") as f:
            records = [json.loads(line) for line in f][:n]
        out[split] = [(r["document"].split("\n")[:PARAGRAPHS], r["summary"]) for r in records]
    return out


def _write_xsum(folder, pairs):
    folder.mkdir(parents=True)
    names = {"train": "train", "valid": "validation", "test": "test"}
    for split, items in pairs.items():
        with open(folder / f"{names[split]}.jsonl", "w", encoding="utf-8") as f:
            for i, (paras, summ) in enumerate(items):
                f.write(json.dumps({"document": "\n".join(paras), "summary": " ".join(summ),
                                    "id": f"{split}{i}"}) + "\n")


def _write_cnndm(folder, pairs):
    folder.mkdir(parents=True)
    names = {"train": "train", "valid": "validation", "test": "test"}
    for split, items in pairs.items():
        with open(folder / f"{names[split]}.jsonl", "w", encoding="utf-8") as f:
            for i, (paras, summ) in enumerate(items):
                f.write(json.dumps({"article": "\n".join(paras), "highlights": "\n".join(summ),
                                    "id": f"{split}{i}"}) + "\n")


def _write_newsroom(folder, pairs):
    folder.mkdir(parents=True)
    names = {"train": "train", "valid": "dev", "test": "test"}
    for split, items in pairs.items():
        with gzip.open(folder / f"{names[split]}.jsonl.gz", "wt", encoding="utf-8") as f:
            for i, (paras, summ) in enumerate(items):
                f.write(json.dumps({
                    "url": f"http://example.com/{split}/{i}", "archive": "", "title": summ[0][:40],
                    "date": "20150101000000", "text": "\n\n".join(paras), "summary": " ".join(summ),
                    "compression": 10.0, "coverage": 0.9, "density": 1.0,
                    "compression_bin": "medium", "coverage_bin": "high",
                    "density_bin": "abstractive"}) + "\n")


def _write_cohan(folder, pairs):
    folder.mkdir(parents=True)
    names = {"train": "train", "valid": "val", "test": "test"}
    sentence_end = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
    for split, items in pairs.items():
        with open(folder / f"{names[split]}.txt", "w", encoding="utf-8") as f:
            for i, (paras, summ) in enumerate(items):
                sections = [[s.lower() for s in sentence_end.split(p) if s.strip()] for p in paras]
                sections = [s for s in sections if s][:4]
                f.write(json.dumps({
                    "article_id": f"{split}{i}", "article_text": [s for sec in sections for s in sec],
                    "abstract_text": [f"<S> {s.lower()} </S>" for s in summ], "labels": None,
                    "section_names": [f"section {k}" for k in range(len(sections))],
                    "sections": sections}) + "\n")


def papers_sh(out, paper, table, *args, **env):
    full = {k: v for k, v in os.environ.items() if k not in PAPER_ENV_DROP}
    # METEOR: nltk's, a Python call, where Meteor 1.5's jar costs a JVM start per scoring (the
    # recipes' commands with --meteor-impl 1.5: tests/test_recipe_commands.py)
    full.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", VISIBLE_GPUS="0", SMOKE="1", OUT=out,
                METEOR="nltk")
    full.update(env)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    proc = subprocess.Popen(["bash", os.path.join(REPO, "recipes", "papers.sh"), paper, table, *args],
                            cwd=REPO, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=3600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the recipes it started too
        raise
    assert proc.returncode == 0, (stdout + stderr)[-5000:]
    with open(os.path.join(out, f"{paper}-{table}.md"), encoding="utf-8") as f:
        return f.read()


def table_rows(text):
    """{label prefix (before " ("): [cells]} of a written table."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| row |"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def check_table(text, paper, table, run_rows):
    """Every row of the paper's table is there with the paper's figures; the rows ``run_rows``
    (label prefixes, or (prefix, columns) for a row with figures in some columns only: the number
    of first columns (a baseline has no METEOR) or their keys) have finite run figures in those
    columns (a ``type`` column: A, E or H)."""
    t = pt.get_table(paper, table)
    rows = table_rows(text)
    assert len(rows) == len(t.rows)
    for row in t.rows:
        assert rows[row.label][0:2 * len(t.columns):2] == pt.cells(t, row.paper), row.label
    for prefix in run_rows:
        prefix, cols = prefix if isinstance(prefix, tuple) else (prefix, len(t.columns))
        cols = range(cols) if isinstance(cols, int) else [t.keys.index(k) for k in cols]
        hits = [cells for label, cells in rows.items() if label.startswith(prefix)]
        assert hits, prefix
        for cells in hits:
            for k in cols:
                want = r"[AEH]" if t.keys[k] == "type" else r"-?\d+\.\d+"
                assert re.fullmatch(want, cells[2 * k + 1]), (prefix, t.columns[k], cells)
    assert "SMOKE=1" in text and "s/update" in text
    return rows
