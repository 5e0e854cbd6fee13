"""recipes/papers.sh, one command per table of each paper, and analysis/paper_tables.py, the tables
it writes (the paper's figures beside the run's).

The slow tests run each table's command end to end at smoke scale (``SMOKE=1``: tiny models, a few
updates) on real text: ACLSum's papers (the ``aclsum`` package, through preprocess.aclsum_to_jsonl),
bodies cut to their first paragraphs, shaped as each dataset's raw release (XSum and CNN/DM's
Hugging Face JSONL, Newsroom's jsonl.gz, Cohan et al.'s PubMed files). One prepared corpus and one
output folder per paper are shared by the tests of that paper (session fixtures), as a user running
a paper's tables one after another shares them. Each test checks that the written table has every
row of the paper's table with the paper's figures, and the run's figures where this project runs
the row."""
import gzip
import json
import os
import re
import signal
import subprocess
import sys

import pytest

from fairseq_sum_plugins.analysis import paper_tables as pt

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {"train": 100, "valid": 8, "test": 8}  # ACLSum's 100 training papers, 8 + 8 held out
PARAGRAPHS = 8  # first paragraphs of each paper body kept (a short document)
PAPER_ENV_DROP = ("WORK ARCH NAME EXTRA BATCH BEAM BEAMS UPDATE_FREQ MAX_SRC MAX_TGT EPOCHS "
                  "SAVE_INTERVAL TOPICS TOPICS_N LENPENS LAMBDA THRESHOLD TEST_SUBSET MAX_UPDATE "
                  "VOCAB OUT SMOKE PRESET SCORER METEOR PROBE_LABELS SPACY_MODEL SPLITS MEASURE "
                  "MEASURE_BATCH PROBE_EXTRA TOP_K COVERAGE_WEIGHT COVERAGE_TYPE COVERAGE_BETA "
                  "SWEEP_SUBSET SWEEP_THRESHOLDS GATE_WARMUP").split()


# ------------------------------------------------------------------------- tables, fast checks
def test_every_table_lists_its_rows_with_the_papers_figures_and_cites_them(tmp_path):
    for (paper, table), build in pt.TABLES.items():
        t = build()
        assert t.rows, (paper, table)
        for row in t.rows:
            assert len(row.paper) == len(t.columns), (paper, table, row.label)
            assert row.source or row.reason, row.label
        text = pt.render(t, str(tmp_path))
        rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
        assert len(rows) == len(t.rows) + 1  # + the header row
        for line in rows[1:]:
            assert line.count("|") == 2 * len(t.columns) + 3, line


def test_tpt_table2_holds_all_48_cells_and_reads_a_run(tmp_path):
    t = pt.get_table("tpt", "t2")
    cells = [r for r in t.rows if "Lead-3" not in r.label]
    assert len(cells) == 4 * 2 * 2 * 3  # datasets x dev/test x beams x models
    xsum_test4_tptd = next(r for r in cells if r.label.startswith("XSum / Test / beam 4 / TPT-d"))
    assert xsum_test4_tptd.paper == (35.84, 14.06, 28.40, 25.79)
    assert 'Table 2, row "XSum Test 4", TPT-d' in xsum_test4_tptd.label
    (tmp_path / "xsum").mkdir()
    (tmp_path / "xsum" / "test.tp_transformer.beam4.out.rouge.json").write_text(json.dumps(
        {"rouge1": 0.1234, "rouge2": 0.05, "rougeL": 0.1, "meteor": 0.2}))
    text = pt.render(t, str(tmp_path))
    line = next(x for x in text.splitlines() if x.startswith("| XSum / Test / beam 4 / TPT-d"))
    assert "| 35.84 | 12.34 | 14.06 | 5.00 | 28.40 | 10.00 | 25.79 | 20.00 |" in line
    wiki = next(x for x in text.splitlines() if x.startswith("| Wikihow / Dev / beam 1 / TPT-c"))
    assert "not run (wikihow/valid.tp_transformer_continuous.beam1.out.rouge.json missing)" in wiki


def test_rows_without_a_run_say_why(tmp_path):
    text = pt.render(pt.get_table("ta", "main"), str(tmp_path))
    bertsum = next(x for x in text.splitlines() if x.startswith("| CNN/DM / BertSUM+TA"))
    assert "43.06" in bertsum and "weights are not available" in bertsum
    nyt = next(x for x in text.splitlines() if x.startswith("| NYT / Transformer+TA"))
    assert "the paper reports no Transformer+TA figure" in nyt and "LDC2008T19" in nyt
    srl = pt.render(pt.get_table("tpt", "t4"), str(tmp_path))
    assert "SRL / layer 3 / TPT-d" in srl and "SRL tagger" in srl


def test_topic_assistant_mean_and_length_penalty_choice(tmp_path):
    a = {"rouge1": 0.30, "rouge2": 0.10, "rougeL": 0.20, "rouge1_precision": 0.5}
    b = {"rouge1": 0.40, "rouge2": 0.20, "rougeL": 0.30, "rouge1_precision": 0.7}
    mean = pt.mean_scores([a, b], ["a", "b"])
    assert mean["rouge1"] == pytest.approx(0.35) and mean["rouge1_precision"] == pytest.approx(0.6)
    assert mean["averaged"] == 2 and "meteor" not in mean
    best, lines = pt.pick_lenpen([("0.6", a), ("0.7", b), ("0.8", b)])
    assert best == "0.7" and len(lines) == 3  # the highest mean; the earlier alpha on a tie


def test_gate_and_baseline_and_extraction_sources(tmp_path):
    (tmp_path / "newsroom" / "gate_sweep.same").mkdir(parents=True)
    (tmp_path / "newsroom" / "gate_sweep.same" / "gate_sweep.json").write_text(json.dumps(
        [{"threshold": 0.1, "sparsity": 50.0, "rouge1": 30.0, "rouge2": 10.0, "rougeL": 25.0}]))
    text = pt.render(pt.get_table("is", "sweep"), str(tmp_path))
    line = next(x for x in text.splitlines() if x.startswith("| threshold 0.1 "))
    assert "| 58.20 | 50.00 | 41.11 | 30.00 |" in line
    missing = next(x for x in text.splitlines() if x.startswith("| threshold 0.2 "))
    assert "threshold 0.2 not in" in missing


def test_measured_speed_and_the_paper_scale_estimate(tmp_path):
    log = tmp_path / "measure.log"
    inner = "2026-11-29 00:13:1{} | INFO | train_inner | epoch 001:      {} / 50 loss=7.0, ups={}, wall={}\n"
    log.write_text(inner.format(4, 1, "0.05", 20) + inner.format(6, 2, "0.5", 22) + inner.format(8, 3, "0.25", 26)
                   + "2026-11-29 | INFO | train | epoch 001 | ups 0.1 | num_updates 3 | wall 26\n")
    # the first update (warm-up) is left out: mean of 1/0.5 and 1/0.25 = 3 s/update
    assert pt.measured_speed(str(log)) == pytest.approx(3.0)
    lines = pt.scale_lines("tpt", str(log), 4, 2)
    # 3 s / 4 documents x 128 documents x 200,000 updates / 3600 = 5,333 hours on 2 threads
    assert "3.00 s/update on 2 thread(s), 1.500 core-seconds per document" in lines[0]
    assert "5,333 hours on 2 thread(s), 10,667 core-hours per model" in lines[1]
    log.write_text(inner.format(4, 1, "0.05", 20))
    assert pt.measured_speed(str(log)) is None and "not measured" in pt.scale_lines("tpt", str(log), 4, 1)[0]


def test_papers_sh_refuses_bad_commands(tmp_path):
    def run(*args, **env):
        full = {k: v for k, v in os.environ.items() if k not in PAPER_ENV_DROP}
        full.update(env, OUT=str(tmp_path / "out"))
        full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
        return subprocess.run(["bash", os.path.join(REPO, "recipes", "papers.sh"), *args], cwd=REPO,
                              env=full, capture_output=True, text=True, timeout=120)

    for args, message in ((("tpt", "t9", "x"), "no table 'tpt t9'"),
                          (("nope", "t2", "x"), "no table 'nope t2'"),
                          (("tpt", "t2", "pubmed=x"), "has no dataset 'pubmed'"),
                          (("tpt", "t2", "xsum="), "an empty path"),
                          (("tpt", "t2", "xsum.aux=y"), "xsum.aux given without xsum=RAW"),
                          (("tpt", "t2"), "no data given")):
        proc = run(*args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr[-500:])
    proc = run("etads", "t2", "x", PRESET="large")
    assert proc.returncode == 2 and "PRESET must be base or small" in proc.stderr
    proc = run("etads", "t2", "x", SCORER="bleu")
    assert proc.returncode == 2 and "SCORER must be official or rouge155-py" in proc.stderr
    assert "tpt t2" in run("list").stdout


# ------------------------------------------------------------------------- smoke-scale tables
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


@pytest.fixture(scope="session")
def raw_corpora(tmp_path_factory):
    """The same real pairs in each dataset's raw format: {dataset: path}."""
    root = tmp_path_factory.mktemp("paper_corpora")
    pairs = _aclsum_pairs(root / "aclsum")
    paths = {"xsum": root / "xsum", "cnn_dm": root / "cnn_dm", "newsroom": root / "newsroom",
             "pubmed": root / "pubmed"}
    _write_xsum(paths["xsum"], pairs)
    _write_cnndm(paths["cnn_dm"], pairs)
    _write_newsroom(paths["newsroom"], pairs)
    _write_cohan(paths["pubmed"], pairs)
    return {k: str(v) for k, v in paths.items()}


@pytest.fixture(scope="session")
def papers_out(tmp_path_factory):
    """One output folder per paper, shared by its tables (as papers.sh's default OUT)."""
    root = tmp_path_factory.mktemp("papers")
    return lambda paper: str(root / paper)


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
    (label prefixes, or (prefix, columns) for a row with figures in its first columns only: a
    baseline has no METEOR) have finite run figures in every column."""
    t = pt.get_table(paper, table)
    rows = table_rows(text)
    assert len(rows) == len(t.rows)
    for row in t.rows:
        cells = rows[row.label]
        for k, value in enumerate(row.paper):
            assert cells[2 * k] == ("-" if value is None else pt._cells([value], 3 if t.keys[0]
                                                                        .startswith("ss_") else 2)[0])
    for prefix in run_rows:
        prefix, ncols = prefix if isinstance(prefix, tuple) else (prefix, len(t.columns))
        hits = [cells for label, cells in rows.items() if label.startswith(prefix)]
        assert hits, prefix
        for cells in hits:
            runs = cells[1:2 * ncols:2]
            assert all(re.fullmatch(r"-?\d+\.\d+", c) for c in runs), (prefix, cells)
    assert "SMOKE=1" in text and "s/update" in text
    return rows


@pytest.mark.slow
def test_tpt_table2_on_xsum_at_smoke_scale(raw_corpora, papers_out):
    text = papers_sh(papers_out("tpt"), "tpt", "t2", f"xsum={raw_corpora['xsum']}", MEASURE="3",
                     MEASURE_BATCH="2")
    # the paper-dims model measured for the header's paper-scale estimate
    assert re.search(r"Paper scale, measured: t5_transformer_base at its paper dims, 2 documents .* "
                     r"\d+\.\d\d s/update on 1 thread", text)
    assert "core-hours per model" in text
    rows = check_table(text, "tpt", "t2", [f"XSum / {s} / beam {b} / {m}" for s in ("Dev", "Test")
                                           for b in (1, 4) for m in ("Transformer", "TPT-c", "TPT-d")]
                       + [("XSum / Test / Lead-3", 3)])
    (cnn,) = [cells for label, cells in rows.items() if label.startswith("CNN/DM / Test / beam 4 / TPT-d")]
    assert "not run (cnn_dm/" in cnn[-1]


def _probe_labels(out, folder):
    """pos / dep / nel .conllu over the training summaries' words (--write-words), labelled by a
    rule (a stand-in for a tagger: the probe's input format is what is tested here)."""
    import torch  # noqa: F401  (fairseq-sum-probe's import cost is paid once here)

    words = folder / "words.txt"
    ckpt = os.path.join(out, "xsum", "checkpoints", "tp_transformer", "checkpoint_best.pt")
    subprocess.run(["fairseq-sum-probe", os.path.join(out, "xsum", "bin"), "--path", ckpt, "--split", "train",
                    "--write-words", str(words)], check=True, capture_output=True,
                   env={**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]})

    def label(w):
        return "NUM" if any(c.isdigit() for c in w) else "PUNCT" if not w.isalnum() else \
            "LONG" if len(w) > 4 else "SHORT"

    for task in ("pos", "dep", "nel"):
        with open(words, encoding="utf-8") as f, open(folder / f"{task}.conllu", "w", encoding="utf-8") as out_f:
            for n, line in enumerate(f):
                out_f.write(f"# sent_id = {n}\n")
                ws = line.split()
                for i, w in enumerate(ws):
                    misc = (f"NER={'B' if i == 1 else 'I'}-{label(ws[1])}" if i else "NER=O") if task == "nel" else "_"
                    out_f.write(f"{i + 1}\t{w}\t_\tX\t{label(w)}\t_\t{0 if i == 0 else 1}\t{label(w)}\t_\t{misc}\n")
                out_f.write("\n")
    return str(folder)


@pytest.mark.slow
def test_tpt_table4_probes_and_role_analysis_at_smoke_scale(raw_corpora, papers_out, tmp_path):
    out = papers_out("tpt")
    papers_sh(out, "tpt", "roles", raw_corpora["xsum"])  # trains the XSum models unless Table 2 did
    labels = _probe_labels(out, tmp_path)
    text = papers_sh(out, "tpt", "t4", raw_corpora["xsum"], PROBE_LABELS=labels, PROBE_EXTRA="--epochs 3")
    rows = table_rows(text)
    for task in ("POS", "DEP", "NEL"):
        for layer in range(1, 3):  # SMOKE's models have 1 layer... the rows of deeper layers say so
            tptd = rows[f'{task} / layer {layer} / TPT-d (Table 4, row "{task} {layer}", TPT-d)']
            base = rows[f'{task} / layer {layer} / Transformer (Table 4, row "{task} {layer}", Transformer)']
            if layer == 1:
                assert all(re.fullmatch(r"\d+\.\d+", c) for c in tptd[1:6:2]), tptd
                assert base[1] == "-" and re.fullmatch(r"\d+\.\d+", base[3]) and base[3] == base[5]
    assert "SRL tagger" in rows['SRL / layer 1 / TPT-d (Table 4, row "SRL 1", TPT-d)'][-1]
    roles = table_rows(open(os.path.join(out, "tpt-roles.md"), encoding="utf-8").read())
    (cells,) = roles.values()
    assert cells[0] == "90.00" and 0 <= float(cells[1]) <= 100


@pytest.mark.slow
def test_mem2mem_tables_1_3_4_on_pubmed_at_smoke_scale(raw_corpora, papers_out):
    out = papers_out("mem2mem")
    text = papers_sh(out, "mem2mem", "t3", f"pubmed={raw_corpora['pubmed']}")
    check_table(text, "mem2mem", "t3", ["PubMed / Lead-10", "PubMed / LexRank", "PubMed / Mem2Mem",
                                        "PubMed / Gold Ext"])
    text = papers_sh(out, "mem2mem", "t4", raw_corpora["pubmed"])
    rows = check_table(text, "mem2mem", "t4", ["Reference"])
    assert "not available here" in rows['TLM-hybrid (Table 4, row "TLM-hybrid")'][-1]
    for name in ("hred_base", "mem2mem_base"):  # 3-update models' summaries may have no 5-gram: "-"
        novel = json.load(open(os.path.join(out, "pubmed", f"test.{name}.beam4.out.novel.json")))
        assert all(f"novel_{n}gram_hyp" in novel for n in (5, 10, 15, 20))
    for label in ('Baseline HRED (Table 4, row "Baseline HRED")', 'Mem2Mem (Table 4, row "Mem2Mem (ours)")'):
        assert rows[label][-1] == ""  # read from its file, not "not run"
    text = papers_sh(out, "mem2mem", "t1", f"pubmed={raw_corpora['pubmed']}")
    rows = check_table(text, "mem2mem", "t1", ["PubMed / Lead-10", "PubMed / Mem2Mem", "PubMed / HRED"])
    assert "not run (arxiv/" in rows['arXiv / Mem2Mem (Table 1, row "Mem2Mem", arXiv)'][-1]
    assert "does not implement" in rows['PubMed / Sent-PTR (Table 1, row "Sent-PTR", PubMed)'][-1]


@pytest.mark.slow
def test_etads_tables_2_and_5_at_smoke_scale(raw_corpora, papers_out):
    out = papers_out("etads")
    text = papers_sh(out, "etads", "t2", f"cnn_dm={raw_corpora['cnn_dm']}")
    check_table(text, "etads", "t2", ["Basic model", "+Focus-Attention", "+Saliency-Selection", "ETADS",
                                      "Lead-3"])
    text = papers_sh(out, "etads", "t5", raw_corpora["cnn_dm"])  # 2 more models: [1-2], [3-4]
    check_table(text, "etads", "t5", ["-", "[1-2]", "[3-4]", "[1-4]"])


@pytest.mark.slow
def test_topic_assistant_main_ss_and_topics_at_smoke_scale(raw_corpora, papers_out):
    out = papers_out("ta")
    text = papers_sh(out, "ta", "main", f"xsum={raw_corpora['xsum']}", LENPENS="0.6 1.0")
    rows = check_table(text, "ta", "main", ["XSum / Transformer (", "XSum / Transformer+TA", "XSum / Lead-3"])
    assert "bart" in rows['XSum / BART (Table 5, row "BART")'][-1]
    mean = json.load(open(os.path.join(out, "xsum", "transformer_ta", "test.mean.json"), encoding="utf-8"))
    # the checkpoints fairseq kept by validation loss (--keep-best-checkpoints 3 saves a new one when
    # it beats the kept ones: 3 validations of 3 updates may keep fewer), each decoded and averaged
    kept = [f for f in os.listdir(os.path.join(out, "xsum", "checkpoints", "transformer_ta"))
            if f.startswith("checkpoint.best_loss_")]
    assert 1 <= mean["averaged"] == min(len(kept), 3) and len(mean["files"]) == mean["averaged"]
    assert open(os.path.join(out, "xsum", "transformer_ta", "lenpen.txt")).read().count("alpha ") == 2
    text = papers_sh(out, "ta", "ss", f"xsum={raw_corpora['xsum']}", LENPENS="0.6 1.0")
    check_table(text, "ta", "ss", ["XSum / Transformer (", "XSum / Transformer+TA"])
    text = papers_sh(out, "ta", "topics", f"xsum={raw_corpora['xsum']}", LENPENS="0.6 1.0")
    assert "## Topics of xsum/topics.json" in text and "- topic 0: " in text


@pytest.mark.slow
def test_information_selection_tables_at_smoke_scale(raw_corpora, papers_out):
    out = papers_out("is")
    text = papers_sh(out, "is", "t2", f"newsroom={raw_corpora['newsroom']}")
    check_table(text, "is", "t2", [f"{g} / threshold {t}" for g in ("same gates", "diff gates")
                                   for t in ("0 ", "0.04", "0.08", "0.1 ", "0.2")])
    text = papers_sh(out, "is", "sweep", raw_corpora["newsroom"])
    check_table(text, "is", "sweep", ["threshold 0.1 ", "threshold 0.12", "threshold 0.2 "])
    text = papers_sh(out, "is", "t3", raw_corpora["newsroom"])
    check_table(text, "is", "t3", [f"lambda {x} " for x in ("0", "0.1", "0.2", "0.4", "0.7")])


class _Runs:
    """Unpickling this runs code: a checkpoint must never be loaded with weights_only=False."""

    def __reduce__(self):
        return (os.system, ("touch RAN_CODE",))


def test_parameter_count_reads_tensors_only_and_refuses_a_pickle_that_runs_code(tmp_path, monkeypatch):
    import argparse

    import torch

    monkeypatch.chdir(tmp_path)
    good = tmp_path / "good.pt"
    torch.save({"args": argparse.Namespace(arch="x"), "model": {
        "w": torch.zeros(3, 4), "b": torch.zeros(5), "steps": torch.tensor(7)}}, good)
    assert pt.parameter_count(str(good))["params_k"] == pytest.approx(17 / 1000)  # the int not counted
    bad = tmp_path / "bad.pt"
    torch.save({"model": {"w": torch.zeros(1)}, "extra": _Runs()}, bad)
    with pytest.raises(ValueError, match=r"bad\.pt: not a readable fairseq checkpoint"):
        pt.parameter_count(str(bad))
    proc = subprocess.run([sys.executable, "-m", "fairseq_sum_plugins.analysis.paper_tables", "params",
                           str(bad), str(tmp_path / "p.json")], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2 and "not a readable fairseq checkpoint" in proc.stderr
    assert not (tmp_path / "RAN_CODE").exists() and not (tmp_path / "p.json").exists()
