"""results/index.json: every committed table's figures, checkable by a program against its run folders."""
import json
import os
import re
import shutil
import struct

import pytest

from ledger import results_index

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_committed_index_is_up_to_date_with_the_committed_runs(capsys):
    assert results_index.main([RESULTS, "--check"]) == 0
    # the runs without decodings are named on every check, not passed silently
    out = capsys.readouterr().out
    for run in results_index.read_allowance(RESULTS):
        assert f"results_index: {run}: not recomputable: no decodings" in out
    index = json.load(open(os.path.join(RESULTS, "index.json")))
    papers = {r["paper"] for r in index["records"]}
    assert papers <= set(results_index.PAPERS) and {"tpt", "gate", "etads", "ta", "mem2mem"} <= papers
    for r in index["records"]:
        for label, figures in r["models"].items():
            for values in figures.values():
                assert len(values) == len(r["seeds"]), (r["table"], label)


@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_a_figure_changed_in_a_run_folder_makes_the_index_stale(tmp_path):
    """Every committed run has decodings now, so a figure changed in its JSON fails against them;
    a run without decodings (listed as not recomputable; made here from a committed one) can only
    be checked against the index, which is then stale."""
    root = tmp_path / "results"
    shutil.copytree(RESULTS, root, ignore=shutil.ignore_patterns("*.png"))
    run = root / "xsum-1000-mem2mem" / "hred"
    path = run / "test.out.rouge.json"
    rouge = json.load(open(path))
    rouge["rouge1"] += 0.01
    json.dump(rouge, open(path, "w"))
    with pytest.raises(SystemExit, match="xsum-1000-mem2mem/hred"):  # against its decodings
        results_index.main([str(root), "--check"])
    for name in ("decodings.txt", "decodings.json"):
        (run / name).unlink()
    with open(root / "not_recomputable.txt", "a") as f:
        f.write("xsum-1000-mem2mem/hred\n")
    with pytest.raises(SystemExit, match="stale at record [0-9]+, table 'xsum-1000-mem2mem' \\(mem2mem\\)"):
        results_index.main([str(root), "--check"])
    assert results_index.main([str(root), "--write"]) == 0
    record = next(r for r in json.load(open(root / "index.json"))["records"] if r["table"] == "xsum-1000-mem2mem")
    assert record["models"]["hred"]["rouge1"] == [100 * rouge["rouge1"]]


def test_figures_are_copied_as_measured_by_hand(tmp_path):
    root = tmp_path / "r"
    (root / "t" / "a").mkdir(parents=True)
    json.dump({"rouge1": 0.123456}, open(root / "t" / "a" / "test.out.rouge.json", "w"))
    json.dump({"gain": 0.6789, "distinct": 97}, open(root / "t" / "a" / "source_use.json", "w"))
    (root / "t" / "b").mkdir()
    json.dump({"rouge1": 0.2}, open(root / "t" / "b" / "test.out.rouge.json", "w"))  # measured before source gain
    json.dump({"records": [{"table": "t", "paper": "ta", "claim": "c", "data": "d", "updates": 5,
                            "models": {"a": {"1": "a"}, "b": {"1": "b"}}}]}, open(root / "tables.json", "w"))
    record = results_index.build(str(root))["records"][0]
    assert record["seeds"] == [1]
    nothing = {"rouge2": [None], "rougeL": [None], "specificity": [None], "sha256": [None], "nll": [None],
               "verdict": [None], "vs_first": [None], "vs_lead3": [None]}
    assert record["models"] == {
        "a": {"rouge1": [100 * 0.123456], "source_gain": [0.6789], "distinct": [97],
              **nothing},
        "b": {"rouge1": [20.0], "source_gain": [None], "distinct": [None], **nothing}}


def test_figures_are_rounded_once_in_the_tables(tmp_path):
    """The index keeps each figure as measured; a table rounds it once: a source gain of 1.03854
    shows as 1.039 (rounded to 4 decimals first, 1.0385, it would show as 1.038)."""
    root = tmp_path / "r"
    (root / "t" / "a").mkdir(parents=True)
    json.dump({"rouge1": 0.198449999}, open(root / "t" / "a" / "test.out.rouge.json", "w"))
    json.dump({"gain": 1.038542624030244, "distinct": 97}, open(root / "t" / "a" / "source_use.json", "w"))
    json.dump({"records": [{"table": "t", "paper": "ta", "claim": "c", "data": "d", "updates": 5,
                            "models": {"a": {"1": "a"}}}]}, open(root / "tables.json", "w"))
    index = results_index.build(str(root))
    assert index["records"][0]["models"]["a"]["source_gain"] == [1.038542624030244]
    row = results_index.table_block(index, "t").splitlines()[2]
    assert row.startswith("| `a` | ta | 5 | 1 | 19.84 | - | - | - | 1.039 | 97 | ")


@pytest.mark.parametrize("record, message", [
    ({"table": "t", "paper": "bart", "claim": "c", "data": "d", "updates": 5, "models": {}}, "paper 'bart' is not one of"),
    ({"table": "t", "paper": "ta", "data": "d", "updates": 5, "models": {}}, "missing claim"),
    ({"table": "t", "paper": "ta", "claim": "c", "data": "d", "updates": 5, "models": {"a": {"1": "nowhere"}}},
     "test.out.rouge.json"),
    ({"table": "t", "paper": "ta", "claim": "c", "data": "d", "updates": 5,
      "models": {"a": {"1": "../../etc"}}}, "run folder '../../etc' of 'a' is not inside"),
])
def test_bad_tables_are_refused_naming_the_table(tmp_path, record, message):
    json.dump({"records": [record]}, open(tmp_path / "tables.json", "w"))
    with pytest.raises(SystemExit, match=message):
        results_index.main([str(tmp_path), "--check"])


# ------------------------------------------------------------------ runs with committed decodings
REFS = ["The cat sat on the mat . <sep> It purred .", "A dog barked at the postman all day .",
        "Rain fell on the city for a week .", "The council approved the new budget on Monday ."]
HYPS = {"a": ["the cat sat on a mat .", "a dog barked at the man .", "rain fell on the town .",
              "the council approved the budget ."],
        "b": ["the cat sat .", "the cat sat .", "rain fell on the city .",
              "the budget was approved ."]}


def _generate(path, hyps, refs):
    with open(path, "w") as f:
        for i, (h, r) in enumerate(zip(hyps, refs)):
            f.write(f"S-{i}\tsource {i} : {r}\nT-{i}\t{r}\nH-{i}\t-0.5\t{h}\nD-{i}\t-0.5\t{h}\n")
        f.write("Generate test with beam=4: BLEU4 = 0\n")
    return str(path)


def _prepared(folder, refs):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "test.ref.jsonl", "w") as f:
        for i, r in enumerate(refs):
            f.write(json.dumps({"id": str(i), "file": "test.jsonl", "line": i + 1,
                                "summary": [s.strip() for s in r.split("<sep>")]}) + "\n")
    header = b"MMIDIDX\x00\x00" + struct.pack("<QBQ", 1, 4, len(refs))
    (folder / "test.src-tgt.src.idx").write_bytes(header)
    (folder / "test.src-tgt.src.bin").write_bytes(b"\x01\x02")
    (folder / "dict.src.txt").write_text("the 5\n")
    return folder


def _run(root, table, folder, label, seed, updates, data, hyps):
    from fairseq_sum_plugins.scoring import score
    from fairseq_sum_plugins.evaluation import decodings

    run = root / table / folder
    run.mkdir(parents=True)
    gen = _generate(run / "test.out", hyps, REFS)
    ckpt = run / "checkpoint_last.pt"
    ckpt.write_bytes(f"weights of {label} {seed}".encode())
    decodings.main([gen, "--out", str(run), "--table-dir", str(root / table), "--data", str(data),
                    "--checkpoint", str(ckpt)])
    score.main(["--generate-output", gen, "--data", str(data),
                "--json", str(run / "test.out.rouge.json")])
    use = {"gain": 0.5 + seed / 10, "distinct": len(set(hyps)), "hypotheses": len(hyps)}
    json.dump(use, open(run / "source_use.json", "w"))
    (run / "run_spec.txt").write_text(
        f"train.model={label}\ntrain.MAX_UPDATE={updates}\ntrain.SEED={seed}\n")
    for name in ("test.out", "checkpoint_last.pt"):  # not committed
        (run / name).unlink()


@pytest.fixture(scope="module")
def recomputable(tmp_path_factory):
    """A results/ tree of one table, two models x seeds 1, 2 with committed decodings, indexed."""
    root = tmp_path_factory.mktemp("recomputable") / "results"
    data = _prepared(root.parent / "data", REFS)
    for label in ("a", "b"):
        for seed in (1, 2):
            hyps = [h.replace(" .", " today ." if seed == 2 else " .") for h in HYPS[label]]
            _run(root, "t", f"seed{seed}/{label}", label, seed, 50, data, hyps)
    json.dump({"records": [{"table": "t", "paper": "ta", "claim": "c", "data": "d", "updates": 50,
                            "models": {m: {"1": f"seed1/{m}", "2": f"seed2/{m}"}
                                       for m in ("a", "b")}}]},
              open(root / "tables.json", "w"))
    (root / "t" / "results.md").write_text("# t\n\nProse.\n")
    assert results_index.main([str(root), "--write"]) == 0
    assert results_index.main([str(root), "--check"]) == 0
    return root


def _copy(root, tmp_path):
    shutil.copytree(root, tmp_path / "results")
    return tmp_path / "results"


def test_runs_with_decodings_are_recomputed_and_hashed(recomputable, capsys):
    index = json.load(open(recomputable / "index.json"))
    a = index["records"][0]["models"]["a"]
    rouge = json.load(open(recomputable / "t" / "seed1" / "a" / "test.out.rouge.json"))
    assert a["rouge2"][0] == pytest.approx(100 * rouge["rouge2"], abs=100 * results_index.TOLERANCE)  # tol: the check's, in points
    assert a["distinct"] == [4, 4]
    assert set(a["sha256"][0]) == {"decodings", "references", "checkpoint", "data"}
    assert a["sha256"][0]["checkpoint"] != a["sha256"][1]["checkpoint"]
    assert a["sha256"][0]["data"] == a["sha256"][1]["data"]
    assert a["specificity"][0]["delta"] > 0
    # b writes "the cat sat ." for two documents: 3 distinct
    assert index["records"][0]["models"]["b"]["distinct"][0] == 3
    text = (recomputable / "t" / "results.md").read_text()
    assert "Prose." in text and "<!-- BEGIN results_index table=t " in text and "2 of 2" in text
    page = (recomputable / "t" / "report.html").read_text()
    assert "t: every model&#x27;s test outputs (seed1/a, seed1/b)" in page and "document 3" in page
    results_index.main([str(recomputable), "--check"])
    assert "4 runs recomputed from their decodings, 0 not recomputable" in capsys.readouterr().out


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def _swap(a, b):
    tmp = a.with_name(a.name + ".swap")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


@pytest.mark.parametrize("tamper, message", [
    (lambda r: _edit(r / "t/seed1/a/decodings.txt", "cat", "dog"), "sha256 of decodings.txt"),
    (lambda r: (r / "t/seed1/a/decodings.txt").unlink(), "without decodings.txt"),
    (lambda r: [(r / "t/seed1/a" / n).unlink() for n in ("decodings.txt", "decodings.json")],
     "seed1/a: not recomputable: no decodings, and not listed"),
    (lambda r: _edit(r / "t/references.txt", "mat", "rug"), "sha256 of .*references.txt"),
    (lambda r: _edit(r / "t/seed2/b/test.out.rouge.json", '"rouge2": 0.', '"rouge2": 0.0'),
     "test.out.rouge.json: rouge2 .*its lines give"),
    (lambda r: _edit(r / "t/seed1/b/source_use.json", '"distinct": 3', '"distinct": 4'),
     "source_use.json has 4 distinct decodings, decodings.txt 3"),
    (lambda r: _edit(r / "t/seed1/b/source_use.json", '"gain": 0.6', '"gain": 0.7'),
     "index.json is stale"),
    (lambda r: _swap(r / "t/seed1/a", r / "t/seed2/a"),
     "run_spec.txt says train.SEED=2, tables.json 1"),
    (lambda r: _edit(r / "t/seed2/a/run_spec.txt", "MAX_UPDATE=50", "MAX_UPDATE=60"),
     "run_spec.txt says train.MAX_UPDATE=60, tables.json 50"),
    (lambda r: _edit(r / "t/results.md", "| `a` | ta | 50 | 1, 2 | ", "| `a` | ta | 50 | 1, 2 | 9"),
     "the generated table of 't' differs from index.json"),
    (lambda r: _edit(r / "index.json", '"rouge1": [\n', '"rouge1": [\n 1.0,\n'),
     "index.json is stale"),
    (lambda r: _edit(r / "t/results.md", "<!-- END results_index -->", ""),
     "without its end marker"),
    (lambda r: _edit(r / "t/report.html", "ROUGE-1/2/L ", "ROUGE-1/2/L 9"),
     "report.html differs from the page of the committed decodings"),
    (lambda r: (r / "t/report.html").unlink(), "report.html missing"),
])
def test_a_changed_number_anywhere_fails_the_check(recomputable, tmp_path, tamper, message):
    root = _copy(recomputable, tmp_path)
    tamper(root)
    with pytest.raises(SystemExit, match=message):
        results_index.main([str(root), "--check"])


def test_an_empty_decodings_file_is_an_error_naming_it(recomputable, tmp_path):
    root = _copy(recomputable, tmp_path)
    (root / "t/seed1/a/decodings.txt").write_text("")
    with pytest.raises(SystemExit, match="decodings.txt: empty file"):
        results_index.main([str(root), "--check"])


def test_a_run_of_other_data_fails_the_check(recomputable, tmp_path):
    root = _copy(recomputable, tmp_path)
    path = root / "t/seed2/b/decodings.json"
    manifest = json.load(open(path))
    manifest["data"] = "0" * 64
    json.dump(manifest, open(path, "w"))
    with pytest.raises(SystemExit, match="its runs decoded different data"):
        results_index.main([str(root), "--check"])


def test_runs_without_decodings_pass_only_while_listed(recomputable, tmp_path, capsys):
    root = _copy(recomputable, tmp_path)
    for name in ("decodings.txt", "decodings.json"):
        (root / "t/seed1/a" / name).unlink()
    (root / "not_recomputable.txt").write_text(
        "# legacy\nt/seed1/a   # before decodings were committed\n")
    assert results_index.main([str(root), "--write"]) == 0
    assert results_index.main([str(root), "--check"]) == 0
    out = capsys.readouterr().out
    assert "t/seed1/a: not recomputable: no decodings (listed in not_recomputable.txt)" in out
    assert "3 runs recomputed from their decodings, 1 not recomputable" in out
    assert "| `a` | ta | 50 | 1, 2 |" in (root / "t/results.md").read_text()
    assert results_index.table_page(str(root), "t") is None  # seed 1 of a has no decodings now
    (root / "not_recomputable.txt").write_text("t/seed1/a\nt/seed2/a\n")  # seed 2 has its decodings
    with pytest.raises(SystemExit, match="lists t/seed2/a, which has decodings now: remove it"):
        results_index.main([str(root), "--check"])
    (root / "not_recomputable.txt").write_text("t/seed1/a\nt/seed9/a\n")
    with pytest.raises(SystemExit,
                       match="lists t/seed9/a, a run folder no record of tables.json names"):
        results_index.main([str(root), "--check"])


# the runs committed before decodings were (2026-11-27): not_recomputable.txt may only lose entries
# (since then aclsum, xsum-etads, xsum-mem2mem and xsum-1000-etads were retired, the rest re-run)
LEGACY = {f"{table}/{run}" for table, runs in {
    "xsum-read": ["default", "default+copy", "t5cell", "t5cell+copy"],
    "aclsum-150": ["t5", "tpt", "gated", "ta"],
    "xsum-1000-etads": ["etads_baseline", "etads"],
    "xsum-1000-etads-lead": ["etads_baseline", "etads"],
    "xsum-1000-mem2mem": ["hred", "mem2mem"],
    "aclsum": ["t5", "tpt"],
    "xsum-etads": ["etads_baseline", "etads"],
    "xsum-mem2mem": ["hred", "mem2mem"],
    "xsum-papers": [f"seed{s}/{m}" for s in (1, 2, 3) for m in (
        "base", "tpt", "gate", "gate_warm", "etads_baseline", "etads", "ta", "hred", "mem2mem")],
}.items() for run in runs}


def test_the_list_of_runs_without_decodings_only_shrinks():
    listed = results_index.read_allowance(RESULTS)
    assert len(listed) == len(set(listed)) and set(listed) <= LEGACY, set(listed) - LEGACY


@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_swapped_seed_folders_of_the_committed_runs_fail_the_check(tmp_path):
    """Today's runs have no decodings, but their run_spec.txt names the seed and the updates."""
    root = tmp_path / "results"
    shutil.copytree(RESULTS, root, ignore=shutil.ignore_patterns("*.png"))
    _swap(root / "xsum-papers/seed1/tpt", root / "xsum-papers/seed3/tpt")
    with pytest.raises(SystemExit, match="seed1/tpt: run_spec.txt says train.SEED=3, tables.json 1"):
        results_index.main([str(root), "--check"])


def test_a_tables_baselines_need_their_extracts_and_the_bag_of_pieces_is_copied(recomputable, tmp_path):
    """A system of baselines.json without its committed extract fails the check (and --write
    refuses), so a baseline row cannot turn from recomputed into copied; the bag of pieces, which
    has no text, is copied into the index and its row says so."""
    root = _copy(recomputable, tmp_path)
    lead3 = {"rouge1": 0.31234, "rouge2": 0.1, "rougeL": 0.25, "verdict": {"label": "summarizes"},
             "specificity": {"own": 10.0, "other": 2.0, "delta": 8.004, "p": 0.001}}
    json.dump({"systems": {"lead3": lead3, "leadk": None}}, open(root / "t/baselines.json", "w"))
    with pytest.raises(SystemExit, match="t/baselines.json without its extracts"):
        results_index.main([str(root), "--write"])
    shutil.rmtree(root / "t/baselines", ignore_errors=True)
    _with_lead3(root)
    data = json.load(open(root / "t/baselines.json"))
    data["systems"]["oracle"] = dict(data["systems"]["lead3"])  # in the JSON, no extract
    json.dump(data, open(root / "t/baselines.json", "w"))
    with pytest.raises(SystemExit, match="baselines/oracle.txt missing: baselines.json has oracle"):
        results_index.main([str(root), "--check"])
    del data["systems"]["oracle"]
    data["bag_of_pieces"] = {"nll": 9.87654, "gain": 0.5, "verdict": {"label": "does not summarize"}}
    json.dump(data, open(root / "t/baselines.json", "w"))
    assert results_index.main([str(root), "--write"]) == 0
    record = json.load(open(root / "index.json"))["records"][0]
    assert record["baselines"]["bag_of_pieces"]["nll"] == 9.87654
    assert record["baselines"]["lead3"]["recomputed"] is True
    text = (root / "t/results.md").read_text()
    assert ("| baseline: bag of pieces (no training) | - | - | - | - | - | - | 9.877 | 0.500 | - | - | - | - | - "
            "| no | copied from baselines.json |") in text
    assert results_index.main([str(root), "--check"]) == 0


def test_each_run_with_decodings_gets_its_verdict_against_the_tables_baselines(recomputable, tmp_path):
    """The verdict of a recomputed run: the one-sided lower bound of its specificity against the
    bar the table's random extracts set (max(0.5, mean delta / 2)), its test NLL against the bag of
    pieces', its reading. A bar below the run's bound and a bag NLL above its NLL: "specific to its
    document"; a bar above its delta: not."""
    from fairseq_sum_plugins.scoring.specificity import LABELS, verdict

    root = _copy(recomputable, tmp_path)
    record = results_index.build(str(root))["records"][0]
    label, f = next((k, v) for k, v in record["models"].items() if v["specificity"][0])
    spec = f["specificity"][0]
    for random_delta, want in ((0.0, spec["lower"] > 0.5), (2 * spec["delta"] + 1.0, False)):
        json.dump({"systems": {}, "random_delta": random_delta, "documents": 100,
                   "bag_of_pieces": {"nll": 99.0}}, open(root / "t/baselines.json", "w"))
        got = results_index.build(str(root))["records"][0]["models"][label]
        by_hand = verdict(spec, random_delta, f["nll"][0], 99.0, f["source_gain"][0],
                          f["distinct"][0], 100)
        assert got["verdict"][0] == by_hand["label"]
        assert (got["verdict"][0] == LABELS[True]) == (want and by_hand["specific"] is True)
        assert results_index.main([str(root), "--write"]) == 0
        cell = "yes" if got["verdict"][0] == LABELS[True] else "no"
        row = next(x for x in (root / "t/results.md").read_text().splitlines() if x.startswith(f"| `{label}` |"))
        assert row.split(" | ")[-2].split(", ")[0].split(" ")[0] == cell  # seed 1


def test_each_model_after_the_first_gets_its_paired_bootstrap_recomputed_from_the_decodings(recomputable):
    """vs_first of `b` is its per-document ROUGE minus `a`'s, the same paired bootstrap as
    fairseq-sum-compare of the two decodings: the two tools agree, and the difference is the mean of
    the per-document differences."""
    import numpy as np

    from fairseq_sum_plugins.evaluation.compare import compare_systems
    from fairseq_sum_plugins.evaluation.decodings import read_decodings, scorer

    index = json.load(open(recomputable / "index.json"))
    models = index["records"][0]["models"]
    assert models["a"]["vs_first"] == [None, None]
    refs = read_decodings(str(recomputable / "t/references.txt"))
    for i, seed in enumerate((1, 2)):
        a, b = (read_decodings(str(recomputable / f"t/seed{seed}/{m}/decodings.txt")) for m in "ab")
        got = models["b"]["vs_first"][i]
        assert got["model"] == "a"
        cmp = compare_systems(b, a, refs, ("rouge1", "rouge2", "rougeL"), scorer=scorer())["metrics"]
        per = {m: scorer().document_f1(h, refs, ("rouge1",))["rouge1"] for m, h in (("a", a), ("b", b))}
        assert got["rouge1"]["diff"] == pytest.approx(100 * float(np.mean(per["b"] - per["a"])))
        for k in ("rouge1", "rouge2", "rougeL"):
            assert got[k]["diff"] == pytest.approx(100 * cmp[k]["diff"])
            assert got[k]["ci"] == pytest.approx([100 * x for x in cmp[k]["ci"]])
            assert got[k]["p"] == cmp[k]["p"]
    row = next(x for x in (recomputable / "t/results.md").read_text().splitlines() if x.startswith("| `b` |"))
    assert f"{models['b']['vs_first'][0]['rouge1']['diff']:+.2f} [" in row and "vs `a`" in row


def test_the_parity_table_pairs_each_cell_with_its_peer_by_hand(tmp_path):
    (tmp_path / "p").mkdir()
    curves = {"1": {"mine": [{"updates": 100, "valid_nll": 9.0004}, {"updates": 200, "valid_nll": 8.5}],
                    "peer": [{"updates": 100, "valid_nll": 9.1}, {"updates": 200, "valid_nll": 8.4996}]}}
    json.dump({"seeds": curves}, open(tmp_path / "p/parity.json", "w"))
    json.dump({"records": [{"table": "p", "paper": "parity", "parity": "parity.json", "claim": "c",
                            "data": "d", "updates": 200, "models": ["mine", "peer"]}]},
              open(tmp_path / "tables.json", "w"))
    block = results_index.table_block(results_index.build(str(tmp_path)), "p")
    # 9.0004 - 9.1 = -0.0996 and 8.5 - 8.4996 = +0.0004: min .. max of the differences
    assert block.splitlines()[2] == "| mine / peer | 1 | 8.500 / 8.500 at 200 | -0.100 .. +0.000 |"


def _hand_table(root, rows, name="t/seed1-notes.md", first="model"):
    lines = [f"| {first} | ROUGE-1/2/L | source gain (bits) | distinct | words |", "|---|---|---|---|---|"]
    (root / name).write_text("# notes\n\n" + "\n".join(lines + rows) + "\n")


def _row(index, label, seed):
    f = index["records"][0]["models"][label]
    i = [1, 2].index(seed)
    return (f"| `{label}` | {f['rouge1'][i]:.2f}/{f['rouge2'][i]:.2f}/{f['rougeL'][i]:.2f} | "
            f"{f['source_gain'][i]:.3f} | {f['distinct'][i]}/4 | 12.34 |")


def test_a_hand_written_table_of_a_run_is_checked_against_the_index(recomputable, tmp_path, capsys):
    """A table whose first column names runs (model, label, system, run) has every figure it shows
    compared with the index at the digits shown, for the seed of its folder; an edited figure or a
    row that names no model fails; tables of other rows are named as not checked."""
    root = _copy(recomputable, tmp_path)
    index = json.load(open(root / "index.json"))
    good = [_row(index, "a", 1), _row(index, "b", 1)]
    _hand_table(root, good)
    _hand_table(root, ["| 0.1 | 1.00/2.00/3.00 | 0.5 | 4 | - |"], name="t/sweep.md", first="threshold")
    assert results_index.main([str(root), "--check"]) == 0
    out = capsys.readouterr().out
    assert "1 hand-written tables checked (their ROUGE, " in out
    assert "tables of figures whose rows name no run: t/sweep.md:3" in out
    assert "t/sweep.md:3" in out
    f = index["records"][0]["models"]["a"]
    edited = good[0].replace(f"{f['rouge2'][0]:.2f}/", f"{f['rouge2'][0] + 0.01:.2f}/", 1)
    _hand_table(root, [edited, good[1]])
    with pytest.raises(SystemExit, match=r"t/seed1-notes.md:5 \(`a` seed 1\): rouge2 "):
        results_index.main([str(root), "--check"])
    _hand_table(root, [good[0].replace("`a`", "`c`")])
    with pytest.raises(SystemExit, match="row '`c`' names no model, run or baseline of table 't'"):
        results_index.main([str(root), "--check"])
    # seed 2's figures in seed 1's folder
    assert _row(index, "a", 2) != _row(index, "a", 1)
    _hand_table(root, [_row(index, "a", 2)])
    with pytest.raises(SystemExit, match=r"seed1-notes.md:5 \(`a` seed 1\)"):
        results_index.main([str(root), "--check"])


def test_a_gate_sweep_table_is_checked_against_the_json_it_was_written_from(recomputable, tmp_path):
    from fairseq_sum_plugins.inspection.gate_sweep import table

    root = _copy(recomputable, tmp_path)
    sweep = root / "t/seed1/a/sweep"
    sweep.mkdir()
    rows = [{"threshold": t, "sparsity": s, "rouge1": 20.0 - t, "rouge2": 3.0, "rougeL": 15.0,
             "source_gain": 1.0, "distinct": 99, "n": 100, "words_per_s": 50.0}
            for t, s in ((0.0, 0.0), (0.1, 48.5))]
    json.dump(rows, open(sweep / "gate_sweep.json", "w"))
    (sweep / "gate_sweep.md").write_text(table(rows) + "\n")
    assert "| 0.1 | 48.50% | 19.90 |" in (sweep / "gate_sweep.md").read_text()
    assert results_index.main([str(root), "--check"]) == 0
    _edit(sweep / "gate_sweep.md", "| 0.1 | 48.50% | 19.90 |", "| 0.1 | 48.50% | 19.95 |")
    with pytest.raises(SystemExit, match="gate_sweep.md: differs from the table its tool writes from "
                                         "gate_sweep.json"):
        results_index.main([str(root), "--check"])
    (sweep / "gate_sweep.json").unlink()
    with pytest.raises(SystemExit, match="gate_sweep.json is missing"):
        results_index.main([str(root), "--check"])


def test_a_table_edited_in_a_paper_evidence_report_fails_against_the_runs(tmp_path):
    """Every table of xsum-papers/results.md is one paper_evidence writes from the committed run
    folders (sweeps by threshold, probes, similarity, extraction): a figure edited in one fails."""
    root = tmp_path / "results"
    shutil.copytree(RESULTS, root, ignore=shutil.ignore_patterns("*.png", "*.html", "decodings.txt"))
    index = json.load(open(root / "index.json"))
    fails, checked, unchecked = results_index.check_hand_tables(str(root), index)
    assert fails == [] and not any(u.startswith("xsum-papers") for u in unchecked)
    assert unchecked == []
    _edit(root / "xsum-papers/results.md", "| 0.1 | 61.6 +- 19.4 (53.1, 47.9, 83.8) |",
          "| 0.1 | 61.6 +- 19.4 (53.1, 47.9, 83.9) |")
    fails, _, _ = results_index.check_hand_tables(str(root), index)
    assert len(fails) == 1 and fails[0].startswith("xsum-papers/results.md:")
    assert "not a table its tool writes from the committed runs" in fails[0]


def _with_lead3(root):
    """Adds t/baselines.json with a Lead-3 scored from t/baselines/lead3.txt (as
    fairseq-sum-baselines --outputs writes them); returns the extract lines."""
    from fairseq_sum_plugins.evaluation.decodings import scorer

    from fairseq_sum_plugins.evaluation.baselines.extracts import write_sums

    # the first three sentences of each committed source (the documents of _generate)
    sources = (root / "t/sources.txt").read_text().splitlines()
    lines = [" <sep> ".join(s.split(" <sep> ")[:3]) for s in sources]
    (root / "t/baselines").mkdir()
    (root / "t/baselines/lead3.txt").write_text("".join(x + "\n" for x in lines))
    write_sums(str(root / "t/baselines"))
    per = scorer().document_f1(lines, REFS, ("rouge1", "rouge2", "rougeL"))
    spec = results_index.specificity_of(lines, REFS)
    lead3 = {**{k: float(per[k].mean()) for k in ("rouge1", "rouge2", "rougeL")},
             "specificity": spec, "distinct": 4, "verdict": {"label": "not measured"}}
    json.dump({"systems": {"lead3": lead3}, "random_delta": 1.0, "documents": 4},
              open(root / "t/baselines.json", "w"))
    return lines


def test_a_tables_page_states_each_models_tests_against_lead3_and_baseline(recomputable, tmp_path):
    """Before: report.html gave the verdicts and the ROUGE-2 difference from the first model, but
    no test against Lead-3. Now each model's sentence of the generated table is on the page too:
    its verdict, its index figures against Lead-3 and against its record's first model, with p."""
    from fairseq_sum_plugins.evaluation.lead3_statement import paired_text

    root = _copy(recomputable, tmp_path)
    _with_lead3(root)
    assert results_index.main([str(root), "--write"]) == 0
    page = (root / "t/report.html").read_text()
    b = json.load(open(root / "index.json"))["records"][0]["models"]["b"]
    assert "Per system, the paired bootstrap against Lead-3's extracts" in page
    assert f"against Lead-3 {paired_text(b['vs_lead3'][0])}" in page
    assert (f"Against <code>a</code> (the table&#x27;s baseline model): "
            f"{paired_text(b['vs_first'][0])}") in page
    assert results_index.main([str(root), "--check"]) == 0


@pytest.mark.slow  # the committed pages
def test_every_committed_page_with_baselines_states_the_paired_test_against_lead3():
    for table in sorted(os.listdir(RESULTS)):
        page = os.path.join(RESULTS, table, "report.html")
        if not (os.path.isfile(page) and os.path.isfile(os.path.join(RESULTS, table,
                                                                     "baselines.json"))):
            continue
        text = open(page, encoding="utf-8").read()
        models = re.findall(r"<tr><td>([^<]+)</td>", text.split('<table class="t">')[1]
                            .split("</table>")[0])
        assert models, table
        for model in models:
            said = (rf"<li><code>{re.escape(model)}</code>: [^<]*; "
                    r"against Lead-3 ROUGE-1/2/L [^<]* \(p ")
            assert re.search(said, text), (table, model)


def test_committed_baseline_extracts_are_rescored_and_each_run_is_compared_with_lead3(recomputable, tmp_path):
    """With fairseq-sum-baselines' extracts committed (TABLE/baselines/NAME.txt), a baseline row
    is recomputed, not copied, and every run gets its paired bootstrap against Lead-3: the same
    figures as fairseq-sum-compare of the run's decodings against the Lead-3 lines."""
    from fairseq_sum_plugins.evaluation.compare import compare_systems
    from fairseq_sum_plugins.evaluation.decodings import read_decodings, scorer

    root = _copy(recomputable, tmp_path)
    lead3 = _with_lead3(root)
    assert results_index.main([str(root), "--write"]) == 0
    assert results_index.main([str(root), "--check"]) == 0
    record = json.load(open(root / "index.json"))["records"][0]
    a1 = read_decodings(str(root / "t/seed1/a/decodings.txt"))
    want = compare_systems(a1, lead3, REFS, ("rouge2",), scorer=scorer())["metrics"]["rouge2"]
    got = record["models"]["a"]["vs_lead3"][0]["rouge2"]
    assert got["diff"] == pytest.approx(100 * want["diff"]) and got["p"] == want["p"]
    text = (root / "t/results.md").read_text()
    assert "| baseline: Lead-3 | - | - | - | " in text and "recomputed from baselines/lead3.txt |" in text
    _edit(root / "t/baselines/lead3.txt", "A dog barked at the postman", "A dog barked")
    with pytest.raises(SystemExit, match=r"baselines/lead3.txt \(baselines.json lead3\): rouge1 "):
        results_index.main([str(root), "--check"])
    _edit(root / "t/baselines/lead3.txt", "A dog barked", "A dog barked at the postman")
    (root / "t/baselines/lead9.txt").write_text("x\n")
    with pytest.raises(SystemExit, match="lead9.txt: not the extract of a system of baselines.json"):
        results_index.main([str(root), "--check"])


def test_a_hand_written_row_may_name_its_run_folder(recomputable, tmp_path):
    """A row naming a run folder beside the file (`seed1/b`) is compared with that folder's own
    JSONs; a folder outside the file's folder is not looked up, and a file outside any table folder
    must name run folders."""
    root = _copy(recomputable, tmp_path)
    rouge = json.load(open(root / "t/seed1/b/test.out.rouge.json"))
    use = json.load(open(root / "t/seed1/b/source_use.json"))
    cells = f"{100 * rouge['rouge1']:.2f}/{100 * rouge['rouge2']:.2f}/{100 * rouge['rougeL']:.2f}"
    row = f"| `seed1/b` | {cells} | {use['gain']:.3f} | {use['distinct']} | - |"
    _hand_table(root, [row], name="t/runs.md", first="run")
    assert results_index.main([str(root), "--check"]) == 0
    _hand_table(root, [row.replace(f"| {use['gain']:.3f} |", f"| {use['gain'] + 0.001:.3f} |")],
                name="t/runs.md", first="run")
    with pytest.raises(SystemExit, match=r"t/runs.md:5 \(run folder `seed1/b`\): source_gain "):
        results_index.main([str(root), "--check"])
    # a run folder's METEOR and interval bounds are checked too; a missing cell or a word fails
    rouge["meteor"] = 0.123456  # as fairseq-sum-score --meteor records it
    json.dump(rouge, open(root / "t/seed1/b/test.out.rouge.json", "w"))
    ci = rouge["rouge1_ci"]
    (root / "t/runs.md").write_text(
        "| run | ROUGE-1 | METEOR |\n|---|---|---|\n"
        f"| `seed1/b` | {100 * rouge['rouge1']:.2f} [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}] | "
        f"{100 * rouge['meteor']:.2f} |\n")
    assert results_index.main([str(root), "--check"]) == 0
    text = (root / "t/runs.md").read_text()
    (root / "t/runs.md").write_text(text.replace(f"[{100 * ci[0]:.2f}, ", f"[{100 * ci[0] - 0.01:.2f}, "))
    with pytest.raises(SystemExit, match="rouge1 interval bound"):
        results_index.main([str(root), "--check"])
    (root / "t/runs.md").write_text(text.replace(f"| {100 * rouge['meteor']:.2f} |", "| 99.99 |"))
    with pytest.raises(SystemExit, match="meteor 99.99, recorded"):
        results_index.main([str(root), "--check"])
    (root / "t/runs.md").write_text(text.replace(f"| {100 * rouge['meteor']:.2f} |", "|"))
    with pytest.raises(SystemExit, match="2 cells, its header 3"):
        results_index.main([str(root), "--check"])
    (root / "t/runs.md").write_text(text.replace(f"| {100 * rouge['rouge1']:.2f} [", "| nan ["))
    with pytest.raises(SystemExit, match="rouge1 'nan .*' is not a number"):
        results_index.main([str(root), "--check"])
    (root / "other").mkdir()
    _hand_table(root, [row.replace("`seed1/b`", "`../t/seed1/b`")], name="other/notes.md", first="run")
    (root / "t/runs.md").unlink()
    with pytest.raises(SystemExit, match="names no run folder"):
        results_index.main([str(root), "--check"])


def test_the_overview_page_must_hold_a_generated_table_of_every_table(recomputable, tmp_path):
    """results/README.md says every table on it is generated: deleting one of its blocks fails,
    although the table keeps its block in its own folder."""
    root = _copy(recomputable, tmp_path)
    block = ("<!-- BEGIN results_index table=t (generated by results_index --write; do not edit) -->\n"
             "<!-- END results_index -->\n")
    (root / "README.md").write_text("# results\n\n" + block)
    assert results_index.main([str(root), "--write"]) == 0
    assert results_index.main([str(root), "--check"]) == 0
    (root / "README.md").write_text("# results\n\nThe table was here.\n")
    with pytest.raises(SystemExit, match="README.md has no generated table of 't'"):
        results_index.main([str(root), "--check"])


@pytest.mark.parametrize("text, message", [
    ('{\n"records": [\n<<<<<<< HEAD\n{"table": "t"}\n=======\n{"table": "u"}\n>>>>>>> other\n]}\n',
     r"index.json:3: a merge-conflict marker '<<<<<<<': not JSON \(rerun with --write\)"),
    ('{\n "records": [\n  {"table": "t",\n', r"index.json:4: not JSON \(.*cut short\?\)"),
    ('[1, 2]\n', r"index.json: not an index \(no 'records' list\)"),
])
def test_an_index_that_does_not_parse_fails_first_naming_its_line(tmp_path, monkeypatch, text,
                                                                  message):
    """Before: the check recomputed every run, then ended in a raw JSONDecodeError traceback. Now
    the file is read first and nothing is recomputed (build is never called)."""
    root = tmp_path / "results"
    root.mkdir()
    (root / "index.json").write_text(text)

    def build(*args, **kwargs):
        raise AssertionError("recomputed before the index was read")

    monkeypatch.setattr(results_index, "build", build)
    with pytest.raises(SystemExit, match=r"results_index: FAILED:\n  .*" + message):
        results_index.main([str(root), "--check"])
