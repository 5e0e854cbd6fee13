"""One command-line shape for every tool that reads a checkpoint, fairseq-generate's ``DATA --path
CKPT``, with one option name per meaning and help on every option; the earlier spellings still
parse (hidden, with a one-line notice naming the new one); a file that is no checkpoint, fairseq's
colon-separated ensemble and a second ``--path`` of a one-model tool are refused in one line naming
them, through each tool's own parser (no traceback)."""
import argparse

import pytest

from fairseq_sum_plugins.inspection.page import cli
from fairseq_sum_plugins.inspection import (focus_plot, gate_sweep, implicit_extraction, probe,
                                            roles, source_curve, source_use, topics)


def subparser(parser, name):
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


PARSERS = {
    "fairseq-sum-inspect": cli.get_parser,
    "fairseq-sum-roles": roles.get_parser,
    "fairseq-sum-probe": probe.get_parser,
    "focus_plot": focus_plot.get_parser,
    "topics attention": lambda: subparser(topics.get_parser(), "attention"),
    "implicit_extraction": implicit_extraction.get_parser,
    "gate_sweep": gate_sweep.get_parser,
    "source_use": source_use.get_parser,
    "source_curve": source_curve.get_parser,
}
# the shared names each tool has, by what it does: --documents (chosen documents), --document (the
# one document a figure shows), --max-documents (a cap), the decoding's --beam/--lenpen/--max-len-b,
# --cpu (a tool that moves its model to a GPU when there is one)
SHARED = {
    "fairseq-sum-inspect": {"--split", "--documents", "--beam", "--lenpen", "--max-len-b"},
    "fairseq-sum-roles": {"--split", "--max-documents", "--cpu"},
    "fairseq-sum-probe": {"--split", "--max-documents", "--batch-size", "--cpu"},
    "focus_plot": {"--split", "--document"},
    "topics attention": {"--split", "--max-documents", "--batch-size"},
    "implicit_extraction": {"--split", "--document", "--max-documents", "--batch-size", "--beam",
                            "--lenpen", "--max-len-b", "--cpu"},
    "gate_sweep": {"--split", "--document", "--max-documents", "--batch-size", "--beam", "--lenpen",
                   "--max-len-b", "--cpu"},
    "source_use": {"--split", "--max-documents", "--batch-size", "--cpu"},
    "source_curve": {"--split", "--max-documents"},
}
KIND = {"--split": str, "--documents": str, "--document": int, "--max-documents": int,
        "--batch-size": int, "--beam": int, "--lenpen": float, "--max-len-b": int, "--cpu": bool}
# the names these tools had before, each now another's spelling (tests below)
RETIRED = {"--subset", "--gen-subset", "--max-docs", "--max-examples", "--max-summaries", "--index",
           "--doc-index", "--png-index", "--out-dir", "--max-batches", "--run"}


def options(parser):
    return {s: a for a in parser._actions for s in a.option_strings}


@pytest.mark.parametrize("tool", PARSERS)
def test_data_first_then_path_and_the_shared_names(tool):
    parser = PARSERS[tool]()
    positionals = [a for a in parser._actions if not a.option_strings]
    assert positionals[0].dest == "data" and positionals[0].metavar == "DATA", tool
    found = options(parser)
    assert "--path" in found and found["--path"].help != argparse.SUPPRESS
    for name in SHARED[tool]:
        assert name in found and found[name].help != argparse.SUPPRESS, (tool, name)
        action = found[name]
        kind = bool if isinstance(action, argparse._StoreTrueAction) else action.type or str
        assert kind is KIND[name] and action.nargs is None or kind is bool, (tool, name)
    visible = {s for s, a in found.items() if a.help != argparse.SUPPRESS}
    assert not visible & RETIRED, (tool, visible & RETIRED)


def every_parser():
    yield from PARSERS.items()
    for sub in ("plot", "map"):
        yield f"topics {sub}", lambda sub=sub: subparser(topics.get_parser(), sub)


@pytest.mark.parametrize("tool, make", list(every_parser()), ids=[t for t, _ in every_parser()])
def test_every_option_has_help_and_every_hidden_one_is_an_old_spelling(tool, make):
    for action in make()._actions:
        if action.help == argparse.SUPPRESS:
            assert set(action.option_strings) <= RETIRED, (tool, action.option_strings)
        else:
            assert action.help and action.help.strip(), (tool, action.option_strings or action.dest)


# (tool's main, the options it needs, the old spelling, the new one): one test each
ALIASES = [
    (roles.cli_main, [], ["--max-docs", "3"], ["--max-documents", "3"]),
    (probe.main, [], ["--max-summaries", "3"], ["--max-documents", "3"]),
    (focus_plot.main, ["--png", "f.png"], ["--index", "3"], ["--document", "3"]),
    (implicit_extraction.cli_main, ["--out", "o"], ["--max-docs", "3"], ["--max-documents", "3"]),
    (implicit_extraction.cli_main, ["--out", "o"], ["--png-index", "3"], ["--document", "3"]),
    (gate_sweep.main, ["--out", "o"], ["--gen-subset", "valid"], ["--split", "valid"]),
    (gate_sweep.main, ["--out", "o"], ["--max-examples", "3"], ["--max-documents", "3"]),
    (gate_sweep.main, ["--out", "o"], ["--doc-index", "3"], ["--document", "3"]),
    (gate_sweep.main, [], ["--out-dir", "o"], ["--out", "o"]),
    (source_use.main, [], ["--subset", "valid"], ["--split", "valid"]),
    (source_use.main, [], ["--max-examples", "3"], ["--max-documents", "3"]),
    (source_curve.main, [], ["--subset", "test"], ["--split", "test"]),
    (source_curve.main, [], ["--max-examples", "3"], ["--max-documents", "3"]),
]
MAKE = {roles.cli_main: roles.get_parser, probe.main: probe.get_parser,
        focus_plot.main: focus_plot.get_parser, implicit_extraction.cli_main:
        implicit_extraction.get_parser, gate_sweep.main: gate_sweep.get_parser,
        source_use.main: source_use.get_parser, source_curve.main: source_curve.get_parser}


@pytest.mark.parametrize("main, need, old, new", ALIASES, ids=[f"{m.__module__.split('.')[-1]} "
                                                               f"{o[0]}" for m, _, o, _ in ALIASES])
def test_an_old_spelling_parses_as_the_new_one_with_a_notice(main, need, old, new, capsys):
    parser = MAKE[main]()
    base = ["DATA", "--path", "x.pt", *need]
    assert parser.parse_args(base + old) == parser.parse_args(base + new)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"note: {old[0]} is now {new[0]}" in err
    assert parser.parse_args(base + new) != parser.parse_args(base)  # the option does something
    assert old[0] not in parser.format_help()


def test_topics_old_spellings(capsys, monkeypatch):
    """``plot --index`` is ``--document``; ``attention --max-batches N`` (batches, as it counted)
    reads the first N x --batch-size documents."""
    parser = topics.get_parser()
    assert parser.parse_args(["plot", "DATA", "--index", "3"]) == \
        parser.parse_args(["plot", "DATA", "--document", "3"])
    assert "note: --index is now --document" in capsys.readouterr().err
    seen = {}
    monkeypatch.setattr(topics, "attention_main", lambda args: seen.update(vars(args)))
    topics.main(["attention", "DATA", "--path", "x.pt", "--max-batches", "3", "--batch-size", "4"])
    assert seen["max_documents"] == 12
    assert "note: --max-batches is now --max-documents (documents" in capsys.readouterr().err


def test_source_curve_run_label_is_path_with_names(tmp_path, capsys):
    runs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "checkpoint_1_2.pt").write_bytes(b"")
        runs.append(str(tmp_path / name))
    parser = source_curve.get_parser()
    new = parser.parse_args(["DATA", "--path", runs[0], "--path", runs[1], "--names", "x,y"])
    old = parser.parse_args(["DATA", "--run", f"x={runs[0]}", "--run", f"y={runs[1]}"])
    assert source_curve.runs_of(parser, new) == source_curve.runs_of(parser, old) == \
        {"x": runs[0], "y": runs[1]}
    assert "note: --run LABEL=DIR is now --path DIR --names LABEL" in capsys.readouterr().err
    assert source_curve.runs_of(parser, parser.parse_args(["DATA", "--path", runs[0]])) == \
        {runs[0]: runs[0]}  # without --names: the folder as given
    with pytest.raises(SystemExit):
        source_curve.runs_of(parser, parser.parse_args(["DATA", "--path", runs[0], "--names",
                                                        "x,y"]))
    assert "--names gives 2 names for 1 --path folders" in capsys.readouterr().err


# ------------------------------------------------------------------ a file that is no checkpoint
def argv_of(tool, data, ckpt, tmp_path):
    """``(main, argv, prog)`` running ``tool`` on ``data`` with ``--path ckpt`` and nothing else
    wrong (its outputs in ``tmp_path``)."""
    out = str(tmp_path / "out")
    return {
        "fairseq-sum-inspect": (cli.main, ["--json", f"{out}.json"]),
        "fairseq-sum-roles": (roles.cli_main, ["--split", "test"]),
        "fairseq-sum-probe": (probe.main, ["--write-words", f"{out}.txt"]),
        "focus_plot": (focus_plot.main, ["--split", "test", "--png", f"{out}.png"]),
        "topics attention": (topics.main, ["--split", "test"]),
        "implicit_extraction": (implicit_extraction.cli_main, ["--out", out, "--cpu"]),
        "gate_sweep": (gate_sweep.main, ["--out", out, "--cpu"]),
        "source_use": (source_use.main, ["--cpu"]),
    }[tool]


ONE_MODEL = [t for t in PARSERS if t not in ("fairseq-sum-inspect", "source_curve")]


def run(tool, data, ckpt, tmp_path, capsys, *more):
    main, extra = argv_of(tool, data, ckpt, tmp_path)
    head = ["attention"] if tool == "topics attention" else []
    with pytest.raises(SystemExit) as e:
        main([*head, data, "--path", ckpt, *more, *extra])
    err = capsys.readouterr().err
    prog = (topics.get_parser() if tool == "topics attention" else PARSERS[tool]()).prog
    assert e.value.code == 2 and "Traceback" not in err and err.count(": error: ") == 1
    return err.strip().splitlines()[-1], prog


@pytest.mark.parametrize("tool", [t for t in PARSERS if t != "source_curve"])
def test_a_file_that_is_no_checkpoint_is_refused_in_one_line_naming_it(tool, toy_data, tmp_path,
                                                                       capsys):
    junk = tmp_path / "junk.pt"
    junk.write_text("junk")
    line, prog = run(tool, toy_data, str(junk), tmp_path, capsys)
    assert line.startswith(f"{prog}: error: {junk}: not a checkpoint of this plugin for "
                           f"{toy_data} ("), line
    assert not (tmp_path / "out").exists()


def test_source_curve_refuses_a_file_that_is_no_checkpoint_in_one_line(toy_data, tmp_path,
                                                                        capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "checkpoint_1_2.pt").write_text("junk")
    with pytest.raises(SystemExit) as e:
        source_curve.main([toy_data, "--path", str(run_dir), "--max-documents", "5"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "Traceback" not in err and err.count(": error: ") == 1
    assert err.splitlines()[-1].startswith(
        f"{source_curve.get_parser().prog}: error: {run_dir / 'checkpoint_1_2.pt'}: not a "
        f"checkpoint of this plugin for {toy_data} (")


@pytest.mark.parametrize("tool", ONE_MODEL)
def test_a_colon_separated_ensemble_is_refused_by_a_one_model_tool(tool, toy_data, tmp_path,
                                                                   capsys):
    for name in ("a.pt", "b.pt"):
        (tmp_path / name).write_text("junk")
    ensemble = f"{tmp_path / 'a.pt'}:{tmp_path / 'b.pt'}"
    line, prog = run(tool, toy_data, ensemble, tmp_path, capsys)
    assert line == (f"{prog}: error: --path {ensemble}: fairseq's colon-separated ensemble; these "
                    "tools read each checkpoint on its own (one --path each)")


@pytest.mark.parametrize("tool", ONE_MODEL)
def test_a_second_path_is_refused_by_a_one_model_tool(tool, toy_data, tmp_path, capsys):
    line, prog = run(tool, toy_data, "a.pt", tmp_path, capsys, "--path", "b.pt")
    sub = f"{prog} attention" if tool == "topics attention" else prog
    assert line == (f"{sub}: error: --path given twice: this tool reads one checkpoint "
                    "(fairseq-sum-inspect shows several side by side)")


def test_the_side_by_side_tools_refuse_a_colon_separated_ensemble(toy_data, tmp_path, capsys):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / f"{name}.pt").write_text("junk")
    with pytest.raises(SystemExit):
        source_curve.main([toy_data, "--path", f"{tmp_path / 'a'}:{tmp_path / 'b'}"])
    assert "not fairseq's colon-separated ensemble" in capsys.readouterr().err
    ensemble = f"{tmp_path / 'a.pt'}:{tmp_path / 'b.pt'}"
    with pytest.raises(SystemExit):
        cli.main([toy_data, "--path", ensemble, "--json", str(tmp_path / "v.json")])
    assert "a colon-separated ensemble; this tool shows each model on its own: repeat --path" in \
        capsys.readouterr().err
