"""Edits of committed results that results_index --check must catch: a verdict word (in a table or
in a report's verdict statement), a paired-test cell, a specificity p, a figure in the prose, a
baseline extract that keeps its scores, a run's recall, precision and intervals, a baseline's
specificity p; machine paths under results/; and what the check copies is named in its summary."""
import json
import os
import shutil

import pytest

from ledger import results_index

from ledger import results_paths

from ledger import results_prose
from fairseq_sum_plugins.evaluation.baselines import extracts as baseline_extracts

from test_results_index import RESULTS, _copy, _edit, _with_lead3, recomputable  # noqa: F401

MEM2MEM = "xsum-1000-mem2mem/results.md"


@pytest.fixture
def committed(tmp_path):
    """A copy of the committed results/ (no images or pages) and its committed index."""
    root = tmp_path / "results"
    shutil.copytree(RESULTS, root, ignore=shutil.ignore_patterns("*.png", "*.html"))
    return root, json.load(open(root / "index.json"))


def _hand_fails(root, index, before=()):
    """The hand-table failures of ``root`` that ``before`` (those of the unedited copy) has not."""
    return [f for f in results_index.check_hand_tables(str(root), index)[0] if f not in before]


def _row(root, name):
    """(line, cells) of the row of ``name`` in the baselines-and-verdict table of MEM2MEM."""
    lines = (root / MEM2MEM).read_text().splitlines()
    header = next(i for i, x in enumerate(lines) if x.startswith("| system | ROUGE-1 |"))
    row = next(x for x in lines[header:] if x.startswith(f"| {name} |"))
    return row, lines[header].split(" | ")


def _set_cell(root, name, column, value):
    row, header = _row(root, name)
    cells = row.split(" | ")
    i = next(i for i, h in enumerate(header) if h.strip().startswith(column))
    cells[i] = value
    _edit(root / MEM2MEM, row, " | ".join(cells))
    return row


def test_the_committed_hand_tables_and_prose_pass(committed):
    root, index = committed
    assert _hand_fails(root, index) == []
    assert results_prose.check_prose(str(root), index) == []


@pytest.mark.parametrize("name, key", [("`hred`", "hred"), ("*generic summary*", "generic")])
def test_a_verdict_word_flipped_in_a_hand_written_table_fails(committed, name, key):
    """The row's verdict set to the word of the recorded verdict's polarity passes; the other
    word fails, in either direction, whatever the recorded label's wording."""
    root, index = committed
    record = next(r for r in index["records"] if r["table"] == "xsum-1000-mem2mem")
    recorded = (record["models"][key]["verdict"][0] if key in record["models"]
                else record["baselines"][key]["verdict"])
    assert results_index._polarity(recorded) is not None
    same, other = ("summarizes", "does not summarize")[::1 if results_index._polarity(recorded)
                                                        else -1]
    _set_cell(root, name, "verdict", same)
    before = _hand_fails(root, index)
    assert not any(f"verdict '{same}'" in f for f in before), before
    _set_cell(root, name, "verdict", other)
    fails = _hand_fails(root, index, before)
    assert fails == [fails[0]] and f"verdict '{other}', recorded '{recorded}'" in fails[0], fails
    assert fails[0].startswith(MEM2MEM + ":")


def test_a_baselines_bar_check_in_the_verdict_column_is_the_recorded_one(committed):
    """An extract's row prints its bar check where its verdict is not measured, as
    baselines/table.py writes it ("above the bar (no test NLL)"): the recorded bar check passes
    (before: refused as "verdict 'above the bar (no test NLL)', recorded 'not measured'"), another
    fails naming the recorded one."""
    root, index = committed
    record = next(r for r in index["records"] if r["table"] == "xsum-1000-mem2mem")
    assert (record["baselines"]["lead3"]["verdict"], record["baselines"]["lead3"]["bar_check"]) \
        == ("not measured", "above the bar")
    before = _hand_fails(root, index)
    _set_cell(root, "*Lead-3*", "verdict", "above the bar (no test NLL)")
    assert _hand_fails(root, index, before) == []
    _set_cell(root, "*Lead-3*", "verdict", "below the bar (no test NLL)")
    fails = _hand_fails(root, index, before)
    assert len(fails) == 1 and fails[0].startswith(MEM2MEM + ":") and fails[0].endswith(
        "(baseline Lead-3): verdict 'below the bar (no test NLL)', recorded "
        "'above the bar (no test NLL)'"), fails


def test_a_paired_test_cell_edited_in_a_hand_written_table_fails(committed):
    root, index = committed
    before = _hand_fails(root, index)
    row, _ = _row(root, "`hred`")
    assert "+0.29 (p 0.531)" in row
    _edit(root / MEM2MEM, row, row.replace("+0.29 (p 0.531)", "+1.29 (p 0.003)"))
    fails = _hand_fails(root, index, before)
    assert any("vs_lead3 rouge2 +1.29, recorded +0.29" in f for f in fails), fails
    assert any("vs_lead3 rouge2 p 0.003, recorded 0.531" in f for f in fails), fails
    # the column against `hred`: mem2mem's ROUGE-L p
    row, _ = _row(root, "`mem2mem`")
    _edit(root / MEM2MEM, row, row.replace("+0.32 (p 0.628)", "+0.32 (p 0.028)"))
    assert any("vs_first rougeL p 0.028, recorded 0.628" in f
               for f in _hand_fails(root, index, before))


def test_the_p_of_a_specificity_cell_edited_fails(committed):
    root, index = committed
    before = _hand_fails(root, index)
    _set_cell(root, "`hred`", "specificity delta (p)", "+1.36 (0.400)")
    fails = _hand_fails(root, index, before)
    assert len(fails) == 1 and "specificity p 0.400, recorded 0.001" in fails[0], fails
    shutil.copy(os.path.join(RESULTS, MEM2MEM), root / MEM2MEM)
    _set_cell(root, "*Lead-3*", "specificity delta (p)", "+1.98 (0.020)")  # a baseline row
    fails = _hand_fails(root, index, before)
    assert len(fails) == 1 and "specificity p 0.020, recorded 0.001" in fails[0], fails


def test_a_figure_edited_in_the_prose_fails_naming_file_and_line(committed):
    root, index = committed
    before = results_prose.check_prose(str(root), index)
    old, new = "(2.47, 3.00), by no significant margin", "(3.47, 4.00), by a significant margin"
    text = (root / "README.md").read_text()
    assert old in text
    _edit(root / "README.md", old, new)
    line = 1 + text[:text.index(old)].count("\n")
    fails = [f for f in results_prose.check_prose(str(root), index) if f not in before]
    assert f"README.md:{line}: 3.47 is not a figure of this section's index" in " ".join(fails)
    assert "4.00 is not a figure" in " ".join(fails)
    assert any("says 'significant' with no p at or below 0.05" in f for f in fails), fails



def test_a_verdict_statement_outside_the_generated_block_is_the_indexs(committed):
    """compare.sh's report repeats each model's verdict sentence under its hand-written table,
    outside the generated block: its verdict word and its paired tests are the index's; in
    results/README.md against the tables its section links to."""
    root, index = committed
    assert results_index.check_statements(str(root), index) == []
    lines = (root / MEM2MEM).read_text().splitlines()
    line = next(x for x in lines if x.startswith("`hred`: not specific to its document;"))
    number = 1 + lines.index(line)
    for new in (line.replace("not specific", "specific", 1),
                line.replace("no significant ROUGE-2 difference", "ROUGE-2 significantly above")):
        _edit(root / MEM2MEM, line, new)
        assert results_index.check_statements(str(root), index) == [
            f"{MEM2MEM}:{number}: the verdict statement of `hred` is not the index's: {line!r}"]
        _edit(root / MEM2MEM, new, line)
    readme = root / "README.md"
    anchor = "\n\n(Wall times of the re-run:"
    assert readme.read_text().count(anchor) == 1
    _edit(readme, anchor, f"\n\n{line}{anchor}")
    assert results_index.check_statements(str(root), index) == []
    flipped = line.replace("not specific", "specific", 1)
    _edit(readme, f"\n\n{line}{anchor}", f"\n\n{flipped}{anchor}")
    number = 1 + readme.read_text().splitlines().index(flipped)
    assert results_index.check_statements(str(root), index) == [
        f"README.md:{number}: the verdict statement of `hred` is not the index's: {line!r}"]
    _edit(readme, flipped, flipped.replace("`hred`", "`nobody`"))
    assert results_index.check_statements(str(root), index) == [
        f"README.md:{number}: a verdict statement of `nobody`, which has no recorded verdict in "
        "table(s) xsum-1000-mem2mem"]


def test_a_baseline_extract_edited_without_moving_a_score_fails(committed):
    """One word of Lead-3's first line: caught by the extracts' SHA256SUMS, and, with the hash
    written again, by the document whose first three sentences the line must be."""
    root, _ = committed
    table = root / "xsum-read"
    path = table / "baselines/lead3.txt"
    first = path.read_text().splitlines()[0]
    word = first.split()[3]
    _edit(path, first, first.replace(f" {word} ", " moreover ", 1))
    fails = baseline_extracts.check_sums(str(table / "baselines"))
    assert fails == [f"{path}: sha256 differs from SHA256SUMS's (edited?)"]
    sources = (table / "sources.txt").read_text().splitlines()
    lines = path.read_text().splitlines()
    system = json.load(open(table / "baselines.json"))["systems"]["lead3"]
    fails, _ = baseline_extracts.check_documents("lead3", lines, sources, system, str(path))
    assert fails == [f"{path}:1: sentence 1 is not the document's sentence 1 (sources.txt line 1)"]
    # through the check, with the hash written again to match the edited file
    baseline_extracts.write_sums(str(table / "baselines"))
    notes = results_index._notes()
    base = results_index.baseline_figures(str(table))
    results_index.recompute_baselines(str(table), base, notes, {})
    assert any("lead3.txt:1: sentence 1 is not the document's" in f for f in notes["fail"])


def test_an_extract_sentence_not_of_its_document_fails_by_system():
    docs = ["A one . <sep> B two . <sep> C three . <sep> D four ."]
    assert baseline_extracts.check_documents("lead3", ["A one . <sep> B two . <sep> C three ."],
                                             docs, {}, "x") == ([], 0)
    assert baseline_extracts.check_documents("lead1", ["B two ."], docs, {}, "x")[0]
    assert baseline_extracts.check_documents("leadk", ["A one . <sep> B two ."], docs, {"k": 2},
                                             "x") == ([], 0)
    assert baseline_extracts.check_documents("leadk", ["A one ."], docs, {"k": 0}, "x")[0]
    # chosen sentences: in the document's order; past the source's cut only after those in it
    assert baseline_extracts.check_documents("random3", ["B two . <sep> D four ."], docs, {},
                                             "x") == ([], 0)
    assert baseline_extracts.check_documents("random3", ["D four . <sep> B two ."], docs, {},
                                             "x")[0]
    assert baseline_extracts.check_documents("oracle", ["B two . <sep> Z past the cut ."], docs,
                                             {}, "x") == ([], 1)
    assert baseline_extracts.check_documents("oracle", ["Z past the cut . <sep> B two ."], docs,
                                             {}, "x")[0]
    # an edited sentence is not "past the cut": it begins as one of the document's
    long = ["The government and the union agreed to talk . <sep> It rained ."]
    assert baseline_extracts.check_documents(
        "oracle", ["The government and the union refused to talk ."], long, {}, "x")[0]
    assert baseline_extracts.check_documents("generic", ["x", "y"], docs * 2, {}, "x")[0]


def test_sha256sums_missing_malformed_or_naming_no_file_fails(tmp_path):
    (tmp_path / "lead3.txt").write_text("a\n")
    assert "SHA256SUMS missing" in baseline_extracts.check_sums(str(tmp_path))[0]
    baseline_extracts.write_sums(str(tmp_path))
    assert baseline_extracts.check_sums(str(tmp_path)) == []
    with open(tmp_path / "SHA256SUMS", "a") as f:
        f.write(f"{'0' * 64}  oracle.txt\n")
    assert baseline_extracts.check_sums(str(tmp_path)) == [
        f"{tmp_path / 'SHA256SUMS'}: names oracle.txt, which is not there"]
    (tmp_path / "SHA256SUMS").unlink()
    (tmp_path / "SHA256SUMS").mkdir()
    assert baseline_extracts.check_sums(str(tmp_path)) == [
        f"{tmp_path / 'SHA256SUMS'}: not a plain file"]
    (tmp_path / "SHA256SUMS").rmdir()
    (tmp_path / "SHA256SUMS").write_text("not a hash line\n")
    assert baseline_extracts.check_sums(str(tmp_path)) == [
        f"{tmp_path / 'SHA256SUMS'}:1: not 'SHA256  NAME.txt'"]


@pytest.mark.parametrize("key, delta", [("rouge2_recall", 0.005), ("rouge1_precision_ci", 0.001),
                                        ("rougeL_plain", 0.001), ("num_summaries", 1)])
def test_a_runs_recall_precision_and_intervals_are_recomputed(committed, key, delta):
    root, _ = committed
    run = root / "xsum-1000-mem2mem/hred"
    path = run / "test.out.rouge.json"
    rouge = json.load(open(path))
    again = results_index.recompute(str(run), str(run.parent))
    assert results_index.compare_scores(rouge, again, str(path)) == []
    rouge[key] = ([x + delta for x in rouge[key]] if isinstance(rouge[key], list)
                  else rouge[key] + delta)
    fails = results_index.compare_scores(rouge, again, str(path))
    assert len(fails) == 1 and fails[0].startswith(f"{path}: {key} "), fails
    rouge = json.load(open(path))
    rouge["specificity"]["p"] = 0.4
    assert "specificity p 0.4" in results_index.compare_scores(rouge, again, str(path))[0]
    rouge["brand_new"] = 1.0  # a figure nobody recomputes or names
    assert any("brand_new is a figure the check neither recomputes nor names as copied" in f
               for f in results_index.compare_scores(rouge, again, str(path)))


def test_a_baselines_specificity_p_is_recomputed(committed):
    root, _ = committed
    table = root / "xsum-read"
    data = json.load(open(table / "baselines.json"))
    data["systems"]["random3"]["specificity"]["p"] = 0.4
    data["systems"]["oracle"]["rouge2_recall_ci"][0] += 0.001
    json.dump(data, open(table / "baselines.json", "w"))
    notes = results_index._notes()
    results_index.recompute_baselines(str(table), results_index.baseline_figures(str(table)),
                                      notes, {})
    assert len(notes["fail"]) == 2, notes["fail"]
    assert "random3.txt (baselines.json random3): specificity p 0.4" in notes["fail"][1]
    assert "oracle.txt (baselines.json oracle): rouge2_recall_ci" in notes["fail"][0]


def test_the_summary_names_what_the_check_copies_and_a_copied_figure_edited_is_stale(
        recomputable, tmp_path, capsys):
    """A run's test NLL and source gain are copied from source_use.json (no checkpoint is
    committed): the summary says so; METEOR is copied too."""
    root = _copy(recomputable, tmp_path)
    assert results_index.main([str(root), "--check"]) == 0
    out = capsys.readouterr().out
    assert ("copied, not recomputed: each run's test NLL and source gain (source_use.json of 4 "
            "runs") in out
    assert "METEOR (test.out.rouge.json)" in out
    path = root / "t/seed1/a/test.out.rouge.json"
    rouge = json.load(open(path))
    rouge["meteor"] = 0.5  # copied: passes, and named above
    rouge["rouge1_recall"] += 0.005
    json.dump(rouge, open(path, "w"))
    with pytest.raises(SystemExit, match="seed1/a/test.out.rouge.json: rouge1_recall "):
        results_index.main([str(root), "--check"])


def test_machine_paths_under_results_fail_naming_file_and_key(recomputable, tmp_path):
    root = _copy(recomputable, tmp_path)
    _with_lead3(root)
    assert results_index.main([str(root), "--write"]) == 0
    assert results_index.main([str(root), "--check"]) == 0
    data = json.load(open(root / "t/baselines.json"))
    data["source"] = "/work/runs/xsum"
    json.dump(data, open(root / "t/baselines.json", "w"))
    with pytest.raises(SystemExit, match="t/baselines.json: key 'source' holds the machine path "
                                         "'/work/runs/xsum'"):
        results_index.main([str(root), "--check"])
    assert results_paths.check_paths(str(root)) == [
        "t/baselines.json: key 'source' holds the machine path '/work/runs/xsum'"]
    del data["source"]
    data["notes"] = {"made": ["with --data ~/runs/xsum"]}
    json.dump(data, open(root / "t/baselines.json", "w"))
    assert results_paths.check_paths(str(root)) == [
        "t/baselines.json: key 'notes.made[0]' holds the machine path '~/runs'"]
    json.dump(data | {"notes": []}, open(root / "t/baselines.json", "w"))
    (root / "t/run_info.txt").write_text("work=WORK\nlog C:\\runs\\x and /home/me/x.log\n")
    (root / "t/page.html").write_text("<td>ROUGE-1/2/L</td> https://example.org/a/b </p>\n"
                                      '<a href="file:///home/me/x.html">x</a>\n')
    assert results_paths.check_paths(str(root)) == [
        "t/page.html:2: the machine path 'file:///home/me/x.html'",
        "t/run_info.txt:2: the machine path 'C:\\runs'",
        "t/run_info.txt:2: the machine path '/home/me/x.log'"]
    # the texts of documents and outputs are data: a paper's "/people/person/place" is words
    _edit(root / "t/references.txt", "The cat", "The /people/person/place cat")
    assert len(results_paths.check_paths(str(root))) == 3
    (root / "t/run_info.txt").unlink()
    (root / "t/page.html").unlink()
    os.symlink("/work/runs/xsum", root / "t/data")  # a link out of results/
    assert results_paths.check_paths(str(root)) == [
        "t/data: a link to the machine path '/work/runs/xsum'"]


def test_a_link_to_a_folder_and_a_drive_path_with_slashes_are_machine_paths(tmp_path):
    """Before: os.walk lists a link to a folder among the folders (and does not enter it), so
    results/x -> /work/runs/xsum passed; and C:/Users/me/runs (a drive path as Python on Windows
    often prints it) passed where C:\\Users did not."""
    root = tmp_path / "results"
    (root / "t").mkdir(parents=True)
    (tmp_path / "runs").mkdir()
    os.symlink(tmp_path / "runs", root / "t" / "run")
    (root / "t" / "run_info.txt").write_text("data C:/Users/me/runs/xsum\n")
    assert results_paths.check_paths(str(root)) == [
        f"t/run: a link to the machine path '{tmp_path / 'runs'}'",
        "t/run_info.txt:1: the machine path 'C:/Users'"]


def test_the_committed_results_hold_no_machine_path():
    """Every committed file under results/ (baselines.json names its data by hashes and a
    placeholder, the logs by WORK / OUT / REPO)."""
    assert results_paths.check_paths(RESULTS) == []


def _prose(root, text, allowed=""):
    """t/results.md with ``text`` from its line 3, before its generated block."""
    block = (root / "t/results.md").read_text().split("<!-- BEGIN", 1)[1]
    (root / "t/results.md").write_text(f"# t\n\n{text}\n\n<!-- BEGIN{block}")
    (root / results_prose.ALLOWED).write_text(allowed)


def test_prose_figures_are_the_index_figures_of_their_section(recomputable, tmp_path):
    root = _copy(recomputable, tmp_path)
    index = json.load(open(root / "index.json"))
    a = index["records"][0]["models"]["a"]
    b = index["records"][0]["models"]["b"]
    r1, gain = a["rouge1"][0], a["source_gain"][1]
    vs = b["vs_first"][0]["rouge1"]
    mean = sum(a["rouge2"]) / 2
    _prose(root, f"Model a has ROUGE-1 {r1:.2f} (and {r1:.1f}), source gain {gain:.3f}, "
                 f"ROUGE-2 {mean:.2f} on average; b is {abs(vs['diff']):.2f} behind a (p "
                 f"{vs['p']:.3f}), no significant difference. It ran with lr 0.00917.",
           "t/results.md 0.00917  # learning rate\n")
    assert results_prose.check_prose(str(root), index) == []
    assert results_index.main([str(root), "--check"]) == 0
    _prose(root, f"Model a has ROUGE-1 {r1 + 1:.2f}.\n\nA second paragraph.")
    fails = results_prose.check_prose(str(root), index)
    assert fails == [f"t/results.md:3: {r1 + 1:.2f} is not a figure of this section's index (nor "
                     "listed in prose_figures.txt)"]
    with pytest.raises(SystemExit, match=f"t/results.md:3: {r1 + 1:.2f} is not a figure"):
        results_index.main([str(root), "--check"])
    # inline code, code blocks and tables are not prose; integers are not figures
    _prose(root, "Run `x 9.99` with 800 documents.\n\n    lr 9.99\n\n| x | 9.99 |\n|---|---|\n")
    assert results_prose.check_prose(str(root), index) == []
    # every number of a range, a triple or in e-notation is a figure
    for text, shown in ((f"ROUGE-1 {r1:.2f}-9.99.", "9.99"), (f"ROUGE-1/2 {r1:.2f}/9.99.", "9.99"),
                        ("lr 9.99e-3.", "9.99e-3")):
        _prose(root, text)
        assert results_prose.check_prose(str(root), index) == [
            f"t/results.md:3: {shown} is not a figure of this section's index (nor listed in "
            "prose_figures.txt)"], text


def test_the_allow_list_holds_only_what_the_prose_needs(recomputable, tmp_path):
    root = _copy(recomputable, tmp_path)
    index = json.load(open(root / "index.json"))
    r1 = index["records"][0]["models"]["a"]["rouge1"][0]
    _prose(root, "It ran with lr 0.00917.", "t/results.md 0.00917  # learning rate\n")
    assert results_prose.check_prose(str(root), index) == []
    _prose(root, "It ran with lr 0.00917.",
           f"t/results.md 0.00917 0.7 {r1:.2f}  # 0.7 and an index figure need no line\n"
           "gone/results.md 0.5\n")
    assert sorted(results_prose.check_prose(str(root), index)) == sorted([
        f"prose_figures.txt lists {r1:.2f} for t/results.md, which no sentence there needs (an "
        "index figure, or gone)",
        "prose_figures.txt lists 0.7 for t/results.md, which no sentence there needs (an index "
        "figure, or gone)",
        "prose_figures.txt lists gone/results.md, whose prose the check does not read"])


@pytest.mark.parametrize("sentence, fails", [
    ("a is above b, significantly.", "without its p"),
    ("a is significantly above b (p {p}).", "with no p at or below 0.05"),
    ("There is no significant difference (p {p}).", None),
    ("a is not significantly above b (p {p}).", None),
    ('A sentence that says "significant" must show its p.', None),  # the word named, not said
    ("Seed 2 does not show: any model significantly above a (p {p}).", None),
])
def test_a_sentence_that_says_significant_shows_its_p(recomputable, tmp_path, sentence, fails):
    root = _copy(recomputable, tmp_path)
    index = json.load(open(root / "index.json"))
    p = index["records"][0]["models"]["b"]["vs_first"][0]["rouge1"]["p"]
    assert p > 0.05
    _prose(root, sentence.format(p=f"{p:.3f}"))
    got = results_prose.check_prose(str(root), index)
    assert (got == []) if fails is None else (len(got) == 1 and fails in got[0]), got


def test_a_bad_allow_list_line_is_an_error_naming_it(recomputable, tmp_path):
    root = _copy(recomputable, tmp_path)
    (root / results_prose.ALLOWED).write_text("# why\nt/results.md 0.1 dropout\n")
    with pytest.raises(ValueError, match="prose_figures.txt:2: not 'FILE FIGURE...  # why'"):
        results_prose.read_allowed(str(root))
    (root / results_prose.ALLOWED).write_bytes(b"t/results.md 0.1 \xff\n")
    with pytest.raises(ValueError, match="prose_figures.txt:1: not UTF-8 text"):
        results_prose.read_allowed(str(root))
    (root / results_prose.ALLOWED).write_text("# why\nt/results.md 0.1 dropout\n")
    with pytest.raises(SystemExit, match="prose_figures.txt:2"):
        results_index.main([str(root), "--check"])
