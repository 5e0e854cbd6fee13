"""Every figure README.md and the Markdown pages under docs/ quote is checked
(ledger/results_prose.py): a figure of a page beside results/ must be one of the index figures of
the tables the page links to (``results/TABLE/...``), or be listed for it in
results/prose_figures.txt with where it comes from. Before, these pages were read by nothing:
29.72 -> 24.72 and p 0.001 -> 0.201 in README.md passed."""
import json
import os
import shutil

import pytest

from ledger import results_prose

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of the checkout's results/ (no pictures or pages), README.md and the Markdown pages
    under docs/."""
    top = tmp_path_factory.mktemp("checkout")
    shutil.copytree(os.path.join(REPO, "results"), top / "results",
                    ignore=shutil.ignore_patterns("*.png", "*.html", "decodings.txt"))
    shutil.copy(os.path.join(REPO, "README.md"), top / "README.md")
    shutil.copytree(os.path.join(REPO, "docs"), top / "docs",
                    ignore=lambda folder, names: [n for n in names if not n.endswith(".md")
                                                  and not os.path.isdir(os.path.join(folder, n))])
    return top


def _fails(top):
    index = json.load(open(top / "results" / "index.json"))
    return results_prose.check_prose(str(top / "results"), index)


def _edited(checkout, tmp_path, name, old, new):
    top = tmp_path / "c"
    shutil.copytree(checkout, top)
    text = (top / name).read_text()
    assert old in text, (name, old)
    (top / name).write_text(text.replace(old, new, 1))
    return top


def test_the_committed_pages_quote_only_checked_figures(checkout):
    assert _fails(checkout) == []
    pages = results_prose.quoting_files(str(checkout / "results"))
    assert {os.path.relpath(p, checkout) for p in pages} >= {
        "README.md", os.path.join("docs", "quickstart.md"), os.path.join("docs", "usage.md"),
        os.path.join("docs", "reference", "fairseq-options.md"),
        os.path.join("docs", "inspect", "README.md")}


def test_a_result_quoted_by_a_generated_reference_page_is_checked(checkout, tmp_path):
    """docs/reference's pages come from the commands' help: a result a help text quotes is read
    like any page's (before, the reference pages were read by nothing)."""
    fails = _fails(_edited(checkout, tmp_path, "docs/reference/fairseq-options.md",
                           "half the source tokens for 0.04 bits",
                           "half the source tokens for 0.01 bits"))
    assert len(fails) == 2 and fails[0].startswith("../docs/reference/fairseq-options.md:"), fails
    assert ": 0.01 is not a figure of this section's index" in fails[0]
    assert "lists 0.04 for ../docs/reference/fairseq-options.md, which no sentence" in fails[1]


def test_a_section_number_is_not_a_figure(checkout, tmp_path):
    """"§4.1" names a section of a paper: not a figure to check (a figure beside it still is)."""
    top = _edited(checkout, tmp_path, "docs/usage.md", "\n",
                  "\nThe paper's §4.1 and §5.4 hold 7.77.\n")
    assert [f.split(": ", 1)[1] for f in _fails(top)] == [
        "7.77 is not a figure of this section's index (nor listed in prose_figures.txt)"]


@pytest.mark.parametrize("name, old, new, figure", [
    ("README.md", "Lead-3 (29.72/", "Lead-3 (24.72/", "24.72"),
    ("README.md", "-2.71, p 0.001", "-2.71, p 0.201", "0.201"),
    ("docs/quickstart.md", "(8.09 vs 8.74 bits)", "(8.19 vs 8.74 bits)", "8.19"),
    ("docs/quickstart.md", "(+1.13, lower", "(+1.31, lower", "+1.31"),
])
def test_a_quoted_figure_changed_fails_naming_the_page_and_line(checkout, tmp_path, name, old,
                                                                new, figure):
    fails = _fails(_edited(checkout, tmp_path, name, old, new))
    assert len(fails) == 1 and fails[0].startswith(f"../{name}:"), fails
    assert f": {figure} is not a figure of this section's index" in fails[0]


def test_a_listed_figure_no_page_needs_fails(checkout, tmp_path):
    top = _edited(checkout, tmp_path, "results/prose_figures.txt", "../docs/usage.md 3.11 3.10",
                  "../docs/usage.md 3.11 3.10 9.99")
    assert _fails(top) == ["prose_figures.txt lists 9.99 for ../docs/usage.md, which no sentence "
                           "there needs (an index figure, or gone)"]


@pytest.mark.parametrize("name, old, new, said", [
    ("results/xsum-read/results.md", "the same 100 test documents", "the same 500 test documents",
     "'500 test documents', the section's tables have 100 test documents"),
    ("results/quickstart/README.md", "150 updates, seed 1)", "150 updates, seed 7)",
     "'seed 7' is not a seed of the section's tables (1)"),
])
def test_a_test_set_size_or_seed_changed_in_prose_fails(checkout, tmp_path, name, old, new, said):
    """Before: a document count (100 -> 500) and a seed (1 -> 7) in prose passed the check."""
    fails = _fails(_edited(checkout, tmp_path, name, old, new))
    assert len(fails) == 1 and said in fails[0], fails


def _hand_fails(top):
    from ledger import results_index

    index = json.load(open(top / "results" / "index.json"))
    return results_index.check_hand_tables(str(top / "results"), index)[0]


CPUS = "results/quickstart-cpus/results.md"


@pytest.mark.parametrize("old, new, said", [
    # section 2's copy of cross_cpu.sh's table: a PINNED=0 CPU made to agree with the host
    ("| 812e5a411bf9 | 3bdd4c3e6bfc (2) | NO |", "| 812e5a411bf9 | 3bdd4c3e6bfc (2) | yes |",
     "not the table of cross_cpu.json (edited by hand?)"),
    # section 1: the environments of two code paths swapped
    ("| `code-paths/aten_avx2` | `ATEN_CPU_CAPABILITY=avx2` |",
     "| `code-paths/aten_avx2` | `ATEN_CPU_CAPABILITY=default` |",
     "environment 'ATEN_CPU_CAPABILITY=default', the run's env.txt 'ATEN_CPU_CAPABILITY=avx2'"),
])
def test_a_words_cell_of_a_hand_written_table_is_checked_against_its_files(checkout, tmp_path,
                                                                           old, new, said):
    """Before: both edits passed; the cells are words, and only figures were compared."""
    assert _hand_fails(checkout) == []
    fails = _hand_fails(_edited(checkout, tmp_path, CPUS, old, new))
    assert len(fails) == 1 and said in fails[0] and fails[0].startswith("quickstart-cpus/"), fails


def test_a_model_label_swapped_in_prose_fails_against_its_runs(checkout, tmp_path):
    """Before: "`default` = `t5_small`, `t5cell` = `t5_transformer_small`" passed."""
    from ledger import results_index

    top = _edited(checkout, tmp_path, "results/README.md",
                  "`default` = `t5_transformer_small`, `t5cell` = `t5_small`",
                  "`default` = `t5_small`, `t5cell` = `t5_transformer_small`")
    index = json.load(open(top / "results" / "index.json"))
    fails = results_index.check_labels(str(top / "results"), index)
    assert [f.split(": ", 1)[1] for f in fails] == [
        "`default` = `t5_small`, its runs' run_spec.txt says t5_transformer_small",
        "`t5cell` = `t5_transformer_small`, its runs' run_spec.txt says t5_small"]
    assert results_index.check_labels(str(checkout / "results"), index) == []
