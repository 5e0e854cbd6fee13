"""docs/reference/: one page per command, generated from its parser by scripts/make_reference.py.

The committed pages are regenerated in memory and compared; a command of setup.py, or a
``python -m`` tool the recipes and docs name, without a page fails; and the generator itself is
checked on small parsers (capture without running the command, notes kept, warnings, escaping).
"""
import argparse
import os
import re
import sys

import pytest

from helpers import REPO

sys.path[:0] = [REPO, os.path.join(REPO, "scripts")]
import make_reference as mr  # noqa: E402

PAGES = os.path.join(REPO, "docs", "reference")


def test_every_committed_page_is_what_its_parser_gives(monkeypatch):
    """A narrow terminal changes nothing (argparse's usage is laid out at a fixed width)."""
    monkeypatch.setenv("COLUMNS", "40")
    assert mr.stale() == []


def test_every_console_script_of_setup_py_has_a_page():
    setup = open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()
    scripts = re.findall(r'"([\w-]+) = [\w.]+:\w+"', setup)
    assert "fairseq-sum-score" in scripts and len(scripts) >= 9
    missing = [s for s in scripts if not os.path.exists(os.path.join(PAGES, f"{s}.md"))]
    assert missing == [], f"no page in docs/reference/ for {missing}: run scripts/make_reference.py"


def test_every_python_m_tool_the_recipes_and_docs_name_has_a_page():
    named = set()
    for top in ("recipes", "docs", "results", "README.md"):
        path = os.path.join(REPO, top)
        files = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs
            if f.endswith((".md", ".sh")) and "reference" not in d]
        for f in files:
            text = open(f, encoding="utf-8", errors="replace").read()
            named |= set(re.findall(
                r"python3? -m ((?:fairseq_sum_plugins|preprocess|ledger)\.[\w.]+)", text))
    named = {m.rstrip(".") for m in named if os.path.exists(mr._module_path(m.rstrip(".")))
             and ".analysis." not in m}  # 'preprocess.xxx' is a placeholder; analysis/ forwards
    assert {"ledger.paper_tables", "fairseq_sum_plugins.inspection.gate_sweep"} <= named
    covered = {c.module for c in mr.commands()} | {
        a[len("python -m "):] for c in mr.commands() for a in c.aliases}
    assert sorted(named - covered) == [], "add them to TOOLS in scripts/make_reference.py"


def _toy(**kwargs):
    return mr.Command("fairseq-sum-toy", "fairseq-sum-toy", "fairseq_sum_plugins.text", None,
                      **kwargs)


def test_the_parser_is_taken_before_the_command_runs():
    ran = []

    def main():
        p = argparse.ArgumentParser(prog="fairseq-sum-toy")
        p.add_argument("--n", type=int, default=3, help="how many")
        try:
            p.parse_args()
        except Exception:  # a command's own broad except does not swallow the capture
            ran.append("except")
        ran.append("after")

    original = argparse.ArgumentParser.parse_known_args
    parser = mr.capture(main, "fairseq-sum-toy")
    assert ran == [] and parser.prog == "fairseq-sum-toy"
    assert [a.dest for a in parser._actions] == ["help", "n"]
    assert argparse.ArgumentParser.parse_known_args is original  # restored
    assert parser.parse_args(["--n", "5"]).n == 5


def test_a_command_that_fails_or_never_parses_is_named():
    def broken():
        raise ImportError("no module named spacy")

    with pytest.raises(mr.CaptureError, match="fairseq-sum-toy: ImportError before parsing.*spacy"):
        mr.capture(broken, "fairseq-sum-toy")
    with pytest.raises(mr.CaptureError, match="fairseq-sum-toy: returned without parsing"):
        mr.capture(lambda: None, "fairseq-sum-toy")
    with pytest.raises(mr.CaptureError, match=r"exited \(2\)"):
        mr.capture(lambda: sys.exit(2), "fairseq-sum-toy")
    assert sys.argv[0] != "fairseq-sum-toy"  # restored after a failure too


def test_a_page_holds_every_option_and_an_option_without_help_is_a_warning():
    p = argparse.ArgumentParser(prog="fairseq-sum-toy")
    p.add_argument("data", help="binarized data")
    p.add_argument("--bare", type=int, default=3)
    p.add_argument("--sep", default="<q>", help="separator, e.g. '<q>' or *x*")
    p.add_argument("--split", default="test", help="the split (default: test)")
    p.add_argument("--mode", choices=["a", "b"], default="a", help="the mode")
    p.add_argument("--out", required=True, metavar="DIR", help="output, %(default)s if unset")
    p.add_argument("--flag", action="store_true", help="a switch")
    p.add_argument("--old", help=argparse.SUPPRESS)
    warnings = []
    page = mr.render(_toy(), p, warnings=warnings)
    assert warnings == ["fairseq-sum-toy: --bare has no help text"]
    assert "- `data`: binarized data." in page
    assert "- `--bare BARE` Default: `3`." in page
    assert r"- `--sep SEP`: separator, e.g. '\<q\>' or \*x\*. Default: `<q>`." in page
    assert "- `--split SPLIT`: the split (default: test)." + "\n" in page  # its own default
    assert "- `--mode {a,b}`: the mode. Default: `a`." in page
    assert "- `--out DIR`: output, None if unset. Required." in page
    assert "- `--flag`: a switch.\n" in page
    assert "--old" not in page and "usage: fairseq-sum-toy [-h]" in page


def test_subcommands_have_their_own_usage_and_options():
    p = argparse.ArgumentParser(prog="fairseq-sum-toy")
    sub = p.add_subparsers(dest="cmd", required=True)
    fit = sub.add_parser("fit", help="fit the model")
    fit.add_argument("--topics", type=int, default=256, help="K")
    warnings = []
    page = mr.render(_toy(), p, warnings=warnings)
    assert "## Subcommand `fit`\n\nfit the model\n\n### Usage" in page
    assert "usage: fairseq-sum-toy fit [-h] [--topics TOPICS]" in page
    assert "- `--topics TOPICS`: K. Default: `256`." in page and warnings == []


def test_a_usage_line_naming_another_program_is_a_warning():
    warnings = []
    mr.render(_toy(), argparse.ArgumentParser(prog="toy"), warnings=warnings)
    assert warnings == ["fairseq-sum-toy: its usage line names 'toy', not 'fairseq-sum-toy'"]


def test_warnings_of_lists_the_warnings_of_the_pages(monkeypatch, tmp_path):
    name = "python -m fairseq_sum_plugins.evaluation.decodings"
    command = mr.Command(name, "toy", "fairseq_sum_plugins.evaluation.decodings", None)
    p = argparse.ArgumentParser(prog="decodings")
    p.add_argument("--bare", type=int, default=3)
    monkeypatch.setattr(mr, "parser_of", lambda c: p)
    assert mr.warnings_of([command], str(tmp_path)) == [
        f"{name}: its usage line names 'decodings', not '{name}'", f"{name}: --bare has no help text"]


def test_every_option_has_help_and_every_usage_line_names_its_command():
    """What ``python scripts/make_reference.py`` lists as warnings, over every page (the plugin's
    fairseq options included): an option without help text, or a usage line (``prog``) naming
    another program than the one typed (``usage: lexrank`` for ``python -m ...lexrank``)."""
    found = mr.warnings_of()
    assert found == [], "\n".join(found)


def test_notes_are_kept_and_a_changed_page_is_named(tmp_path, monkeypatch):
    """A round trip on one real command: write, check, edit outside and inside the notes, check."""
    score = [c for c in mr.commands() if c.name == "fairseq-sum-score"]
    page = tmp_path / "fairseq-sum-score.md"
    assert mr.stale(str(tmp_path), cmds=score) == [
        f"{os.path.relpath(tmp_path, REPO)}/{n} is missing: run python scripts/make_reference.py"
        for n in ("fairseq-sum-score.md", "README.md")]
    for name, text in mr.pages(score, str(tmp_path)).items():
        (tmp_path / name).write_text(text)
    assert mr.stale(str(tmp_path), cmds=score) == []
    text = page.read_text()
    assert "- `--scorer {rouge155-py,official,files2rouge}`" in text
    page.write_text(text.replace(mr.END, "Scores `fairseq-generate` output.\n" + mr.END))
    assert mr.stale(str(tmp_path), cmds=score) == []  # notes are the page's own
    page.write_text(page.read_text().replace("--scorer {", "--scorers {"))
    rel = os.path.relpath(tmp_path, REPO)
    assert mr.stale(str(tmp_path), cmds=score) == [
        f"{rel}/fairseq-sum-score.md is stale: run python scripts/make_reference.py"]
    (tmp_path / "fairseq-sum-gone.md").write_text("# gone\n")
    assert mr.stale(str(tmp_path), cmds=score)[1].startswith(
        f"{rel}/fairseq-sum-gone.md is the page of no command")
    regenerated = mr.pages(score, str(tmp_path))["fairseq-sum-score.md"]
    assert "Scores `fairseq-generate` output.\n" + mr.END in regenerated
    assert "--scorers" not in regenerated


def test_check_on_the_command_line_exits_1_naming_the_page(tmp_path, capsys):
    assert mr.main(["--check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "fairseq-sum-prepare.md is missing: run python scripts/make_reference.py" in err
    assert not os.listdir(tmp_path)  # --check writes nothing


@pytest.fixture(scope="module")
def known_flags():
    return mr.known_options()


def _notes_and_architecture():
    texts = {"docs/architecture.md": open(os.path.join(REPO, "docs", "architecture.md"),
                                          encoding="utf-8").read()}
    for name in sorted(os.listdir(PAGES)):
        text = open(os.path.join(PAGES, name), encoding="utf-8").read()
        if mr.BEGIN in text:
            texts[f"docs/reference/{name}"] = mr.notes_of(text)
    return texts


def test_every_flag_the_notes_and_the_architecture_page_name_is_an_option(known_flags):
    """Hand-written prose goes stale when an option is renamed: each --flag it names must be an
    option of some command (the pages' parsers, fairseq's as the plugin extends them)."""
    assert "--gate-warmup-updates" in known_flags and "--restore-file" in known_flags
    prose = "`--beam 4`, --no-such-flag and `--eval-rouge-bpe` (not `--eval-rouge-bp`)"
    assert mr.unknown_flags(prose, known_flags) == ["--eval-rouge-bp", "--no-such-flag"]
    stale = {where: bad for where, text in _notes_and_architecture().items()
             if (bad := mr.unknown_flags(text, known_flags))}
    assert stale == {}


def _blocks(text):
    """Bullets and paragraphs of Markdown ``text`` (code fences, tables, headings left out)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    blocks, current = [], []
    for line in text.split("\n"):
        starts = re.match(r"\s*([-*]|\d+\.)\s", line) is not None
        if starts or not line.strip() or line.startswith(("#", "|", "<!--")):
            if current:
                blocks.append(" ".join(current))
            current = [re.sub(r"^\s*([-*]|\d+\.)\s", "", line)] if starts else []
        else:
            current.append(line)
    return blocks + ([" ".join(current)] if current else [])


def test_no_bullet_of_the_architecture_page_or_the_notes_runs_long():
    text = "- one two\n  three\n\npara graph\n| a | b |\n"
    assert [len(b.split()) for b in _blocks(text)] == [3, 2]
    long = [(where, len(b.split()), b[:60]) for where, text in _notes_and_architecture().items()
            for b in _blocks(text) if len(b.split()) > 85]
    assert long == []


def test_the_links_of_the_architecture_page_and_the_reference_resolve():
    broken = []
    for where in ["docs/architecture.md"] + [f"docs/reference/{n}" for n in os.listdir(PAGES)]:
        path = os.path.join(REPO, where)
        text = open(path, encoding="utf-8").read()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" not in target and not os.path.exists(
                    os.path.join(os.path.dirname(path), target)):
                broken.append(f"{where}: {target}")
    assert broken == []


def test_a_page_whose_notes_lost_a_marker_stops_the_generator_before_it_writes(tmp_path, capsys):
    score = [c for c in mr.commands() if c.name == "fairseq-sum-score"]
    page = tmp_path / "fairseq-sum-score.md"
    page.write_text(mr.pages(score, str(tmp_path))["fairseq-sum-score.md"].replace(
        mr.END, "Precious notes.\n"))
    before = page.read_text()
    with pytest.raises(mr.PageError, match=r"fairseq-sum-score.md: its notes need one .* \(found 1 "
                       r"and 0\): restore them, nothing was written"):
        mr.pages(score, str(tmp_path))
    with pytest.raises(SystemExit, match="make_reference: .*fairseq-sum-score.md: its notes need"):
        mr.main(["--out", str(tmp_path)])
    assert page.read_text() == before and sorted(os.listdir(tmp_path)) == ["fairseq-sum-score.md"]


def test_a_console_script_whose_module_does_not_import_is_named():
    gone = mr.Command("fairseq-sum-gone", "fairseq-sum-gone", "fairseq_sum_plugins.no_such", "main")
    with pytest.raises(mr.CaptureError, match="fairseq-sum-gone: fairseq_sum_plugins.no_such:main "
                       "does not import: ModuleNotFoundError"):
        mr.parser_of(gone)


def test_out_that_is_a_file_is_refused_naming_the_flag(tmp_path, capsys):
    target = tmp_path / "README.md"
    target.write_text("mine\n")
    with pytest.raises(SystemExit) as e:
        mr.main(["--out", str(target)])
    assert e.value.code == 2 and f"--out {target}: not a folder" in capsys.readouterr().err
    assert target.read_text() == "mine\n"
