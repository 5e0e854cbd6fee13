"""The one output guard (fairseq_sum_plugins/cli/outputs.py) and every command that writes a file.

First the guard against hand-made cases; then one parametrized test that runs every writer (console
scripts, ``python -m`` tools of the package, ``ledger/`` and ``preprocess/``) with its output set to
each of its inputs (or a path inside an input folder): exit 2, one error line naming both flags,
and no file of the inputs changed (the inputs are cheap dummies: the guard runs before anything
reads them). A completeness check fails when a module's parser has an output option and the table
has no case for it, or a console script of setup.py is missing.
"""
import hashlib
import importlib
import os
import re

import pytest

from fairseq_sum_plugins.cli.outputs import OutputClash, check_clobber, clash, contents, unwritable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAIL = ", which this command reads; nothing written"


# ------------------------------------------------------------------------------ the guard itself
@pytest.fixture
def files(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "raw").mkdir()
    (tmp_path / "bin" / "test.ref.jsonl").write_text('{"summary": ["x"]}\n')
    (tmp_path / "raw" / "x").write_text("doc\n")
    (tmp_path / "hyp.txt").write_text("a b c\n")
    return tmp_path


def test_same_path(files):
    hyp = str(files / "hyp.txt")
    assert clash([("--hyp", hyp)], [("--json", hyp)]) == f"--json {hyp} is --hyp {hyp}{TAIL}"


def test_through_a_symlink(files):
    os.symlink(files / "hyp.txt", files / "link.json")
    assert clash([("--hyp", str(files / "hyp.txt"))], [("--json", str(files / "link.json"))]) == \
        f"--json {files / 'link.json'} is --hyp {files / 'hyp.txt'}{TAIL}"


def test_a_dangling_symlink_to_a_path_inside_an_input_folder(files):
    os.symlink(files / "bin" / "new.json", files / "link.json")
    said = clash([("--data", str(files / "bin"))], [("--json", str(files / "link.json"))])
    assert said == f"--json {files / 'link.json'} lies inside --data {files / 'bin'}{TAIL}"


def test_a_hard_link(files):
    os.link(files / "hyp.txt", files / "hard.json")
    assert clash([("--hyp", str(files / "hyp.txt"))], [("--json", str(files / "hard.json"))]) == \
        f"--json {files / 'hard.json'} is --hyp {files / 'hyp.txt'}{TAIL}"


def test_a_hard_link_to_a_file_of_a_folder_read(files):
    """A hard link elsewhere resolves to its own path: found among the folder's files."""
    os.link(files / "bin" / "test.ref.jsonl", files / "refs.json")
    said = clash([("--data", str(files / "bin"))], [("--json", str(files / "refs.json"))])
    assert said == (f"--json {files / 'refs.json'} is test.ref.jsonl of --data {files / 'bin'} "
                    f"(a link to it){TAIL}")


def test_a_link_inside_a_folder_read_to_the_output(files):
    """bin/test.src is a link to elsewhere/docs.txt: writing docs.txt writes what --data reads."""
    (files / "elsewhere").mkdir()
    (files / "elsewhere" / "docs.txt").write_text("d\n")
    os.symlink(files / "elsewhere" / "docs.txt", files / "bin" / "test.src")
    said = clash([("--data", str(files / "bin"))],
                 [("--json", str(files / "elsewhere" / "docs.txt"))])
    assert said.startswith(f"--json {files / 'elsewhere' / 'docs.txt'} is test.src of --data")


def test_dot_dot_is_resolved(files):
    out = f"{files}/bin/../raw/x"
    assert clash([("--src", str(files / "raw" / "x"))], [("--json", out)]) == \
        f"--json {out} is --src {files / 'raw' / 'x'}{TAIL}"


def test_a_file_inside_an_input_folder(files):
    out = str(files / "bin" / "page.html")
    assert clash([("DATA", str(files / "bin"))], [("--html", out)]) == \
        f"--html {out} lies inside DATA {files / 'bin'}{TAIL}"


def test_two_outputs_naming_one_file(files):
    out = str(files / "x.json")
    assert clash([], [("--json", out), ("--png", f"{files}/bin/../x.json")]) == \
        f"--png {files}/bin/../x.json and --json {out} name one file; nothing written"


def test_a_missing_optional_flag_and_lists(files):
    hyp = str(files / "hyp.txt")
    assert clash([("--ref", None), ("--src", ""), ("SYS", [None, hyp])],
                 [("--json", None), ("--html", ""), ("--png", str(files / "p.png"))]) is None
    assert clash([("SYS", ["a", hyp])], [("--out", [None, hyp])]) == \
        f"--out {hyp} is SYS {hyp}{TAIL}"


def test_an_output_file_in_a_missing_folder_or_on_a_folder_is_named(files):
    new = files / "new" / "x.json"
    assert unwritable([("--json", str(new))]) == f"--json {new}: its folder does not exist"
    assert unwritable([("--png", str(files / "hyp.txt" / "p.png"))]) == \
        f"--png {files / 'hyp.txt' / 'p.png'}: its folder does not exist"  # a file on its way
    assert unwritable([("--html", str(files / "bin"))]) == f"--html {files / 'bin'} is a folder"
    assert unwritable([("--json", None), ("--html", ""), ("DEST", [str(files / "a.json"),
                                                                  str(files / "bin" / "b.json")])]) is None
    assert unwritable([("DEST", [str(files / "a.json"), str(new)])]) == \
        f"DEST {new}: its folder does not exist"
    assert not new.parent.exists()  # nothing made


def test_apart_and_an_input_inside_the_output_folder_are_fine(files):
    assert clash([("--data", str(files / "bin")), ("--hyp", str(files / "hyp.txt"))],
                 [("--json", str(files / "out.json")), ("--out", str(files))]) is None


def test_check_clobber_raises_and_contents_lists_a_folder(files):
    with pytest.raises(OutputClash, match="is --hyp"):
        check_clobber([("--hyp", str(files / "hyp.txt"))], [("--json", str(files / "hyp.txt"))])
    check_clobber([("--hyp", str(files / "hyp.txt"))], [("--json", str(files / "o.json"))])
    assert contents(str(files / "bin")) == [str(files / "bin" / "test.ref.jsonl")]
    assert contents(str(files / "hyp.txt")) == str(files / "hyp.txt") and contents(None) is None


# ----------------------------------------------------------------------------- every writer
def _world(root):
    """Cheap dummy inputs: names only matter (the guard runs before any is read)."""
    def put(rel, text="x\n"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    for d in ("data", "work/bin"):
        for name in ("dict.src.txt", "dict.tgt.txt", "prepare_args.json", "test.ref.jsonl",
                     "train.src-tgt.src.bin", "train.src-tgt.src.idx", "test.src-tgt.src.idx"):
            put(f"{d}/{name}")
    for name in ("work/raw/test.src", "work/raw/valid.src", "A.out", "B.out", "C.out", "gen.out",
                 "ref.txt", "refs.jsonl", "docs.txt", "baselines.json", "ckpt.pt", "ckpt2.pt",
                 "labels.conllu", "words.txt", "scores.json", "topic_model.npz", "jsonl/train.jsonl",
                 "jsonl/valid.jsonl", "jsonl/test.jsonl", "test.jsonl", "valid.jsonl",
                 "train.jsonl", "rawdir/1.data", "split.json", "stories/a.story", "urls/all_test.txt",
                 "hf/config.json", "spm.model", "dict.txt", "encoder.json", "vocab.bpe",
                 "wikihow.csv", "train.log", "logs/run/train.log", "cmp/a/test.out",
                 "cmp/b/test.out", "cmp/run_info.txt", "cmp/baselines.json", "seeds/seed1/tpt/x.json",
                 "results/tables.json", "cross/pinned1/host/fingerprint.json",
                 "cross/pinned0/host/fingerprint.json", "runs/r1/checkpoint_last.pt",
                 "arxiv/train.txt", "newsroom/train.jsonl", "fullsrc/train.src"):
            put(name)
    return root


I, S, R, E = "fairseq_sum_plugins.inspection", "fairseq_sum_plugins.scoring", "ledger", \
    "fairseq_sum_plugins.evaluation"
# (case id, "module:function", argv template, the output flag, the inputs as (path template, flag)).
# {OUT} is set to each input (a folder input: a file inside it; a converter's input folder, read by
# its entries, is given by one of its files); with "link:NAME" instead of an
# output flag, the command writes NAME (a fixed name under its folder), which is made a link to the
# input. Paths are relative to the dummy world.
WRITERS = [
    ("score", f"{S}.score:main", ["--generate-output", "gen.out", "--ref", "ref.txt", "--src",
     "docs.txt", "--topic-model", "topic_model.npz", "--data", "data", "--json", "{OUT}"],
     "--json", [("gen.out", "--generate-output"), ("ref.txt", "--ref"), ("docs.txt", "--src"),
                ("topic_model.npz", "--topic-model"), ("data", "--data")]),
    ("score-hyp", f"{S}.score:main", ["--hyp", "A.out", "--ref-jsonl", "refs.jsonl", "--json",
     "{OUT}"], "--json", [("A.out", "--hyp"), ("refs.jsonl", "--ref-jsonl")]),
    ("compare", f"{E}.compare:main", ["A.out", "B.out", "C.out", "--data", "data", "--src",
     "docs.txt", "--baselines", "baselines.json", "--ref", "ref.txt", "--json", "j.json",
     "--png", "p.png", "--html", "{OUT}"], "--html",
     [("A.out", "SYS_A"), ("B.out", "SYS_B"), ("C.out", "SYS"), ("data", "--data"),
      ("docs.txt", "--src"), ("baselines.json", "--baselines"), ("ref.txt", "--ref")]),
    ("compare-json", f"{E}.compare:main", ["A.out", "B.out", "--ref", "ref.txt", "--json", "{OUT}"],
     "--json", [("B.out", "SYS_B"), ("ref.txt", "--ref")]),
    ("compare-png", f"{E}.compare:main", ["A.out", "B.out", "--ref-jsonl", "refs.jsonl", "--png",
     "{OUT}"], "--png", [("A.out", "SYS_A"), ("refs.jsonl", "--ref-jsonl")]),
    ("baselines-jsonl", f"{E}.baselines.systems:main", ["--jsonl", "test.jsonl", "--json",
     "{OUT}"], "--json", [("test.jsonl", "--jsonl"), ("valid.jsonl", "--valid-jsonl"),
                          ("train.jsonl", "--train-jsonl")]),
    ("baselines-data", f"{E}.baselines.systems:main", ["--data", "work", "--json", "j.json",
     "--outputs", "{OUT}"], "--outputs", [("work/bin", "--data"), ("work/raw/test.src", "--data")]),
    ("lexrank", f"{E}.baselines.lexrank:main", ["--data", "work", "--out", "{OUT}"], "--out",
     [("work/bin", "--data"), ("work/raw/test.src", "--data")]),
    ("lexrank-json", f"{E}.baselines.lexrank:main", ["--data", "work", "--out", "l.txt", "--json",
     "{OUT}"], "--json", [("work/bin/test.ref.jsonl", "--data")]),
    ("baseline-table", f"{E}.baselines.table:cli_main", ["cmp", "work", "a", "b", "--baselines",
     "baselines.json"], "link:cmp/verdicts.json", [("baselines.json", "--baselines"),
                                                    ("work/raw/test.src", "WORK")]),
    ("compare-report", f"{E}.compare_report:cli_main", ["cmp", "a", "b"], "link:cmp/results.md",
     [("cmp/a/test.out", "LABEL"), ("cmp/run_info.txt", "OUT")]),
    ("decodings", f"{E}.decodings:main", ["gen.out", "--checkpoint", "ckpt.pt", "--ref", "ref.txt",
     "--data", "data", "--out", "{OUT}"], "--out",
     [("gen.out", "GEN"), ("ckpt.pt", "--checkpoint"), ("ref.txt", "--ref"), ("data", "--data")]),
    ("import-t5", "fairseq_sum_plugins.convert.t5_import:main", ["hf", "{OUT}"], "OUT_DIR",
     [("hf", "HF_DIR")]),
    ("export-hf", "fairseq_sum_plugins.convert.t5_export:main", ["ckpt.pt", "{OUT}", "--data",
     "data", "--scores", "scores.json"], "OUT_DIR",
     [("ckpt.pt", "CHECKPOINT"), ("data", "--data"), ("scores.json", "--scores")]),
    ("prepare", "preprocess.prepare:main", ["--jsonl-dir", "jsonl", "--spm-model", "spm.model",
     "--dict", "dict.txt", "--out", "{OUT}"], "--out",
     [("jsonl/train.jsonl", "--jsonl-dir"), ("spm.model", "--spm-model"), ("dict.txt", "--dict")]),
    ("prepare-parallel", "preprocess.prepare:main", ["--parallel-dir", "jsonl", "--out", "{OUT}"],
     "--out", [("jsonl/valid.jsonl", "--parallel-dir")]),
    ("aclsum", "preprocess.aclsum_to_jsonl:main", None, None, []),  # reads no file: ACLSum package
    ("arxiv-pubmed", "preprocess.arxiv_pubmed_to_jsonl:main", ["--in", "arxiv", "--out", "{OUT}"],
     "--out", [("arxiv/train.txt", "--in")]),
    ("cnndm-jsonl", "preprocess.cnndm_to_jsonl:main", ["--jsonl", "jsonl", "--out", "{OUT}"],
     "--out", [("jsonl/test.jsonl", "--jsonl")]),
    ("cnndm-stories", "preprocess.cnndm_to_jsonl:main", ["--stories-dir", "stories", "--url-lists",
     "urls", "--out", "{OUT}"], "--out", [("stories/a.story", "--stories-dir"), ("urls/all_test.txt", "--url-lists")]),
    ("newsroom", "preprocess.newsroom_to_jsonl:main", ["--in", "newsroom", "--out", "{OUT}"],
     "--out", [("newsroom/train.jsonl", "--in")]),
    ("nyt", "preprocess.nyt_to_jsonl:main", ["--jsonl", "jsonl", "--out", "{OUT}"], "--out",
     [("jsonl/train.jsonl", "--jsonl")]),
    ("wikihow", "preprocess.wikihow_to_jsonl:main", ["--csv", "wikihow.csv", "--split-lists", "urls",
     "--out", "{OUT}"], "--out", [("wikihow.csv", "--csv"), ("urls/all_test.txt", "--split-lists")]),
    ("xsum", "preprocess.xsum_to_jsonl:main", ["--raw-dir", "rawdir", "--split-file", "split.json",
     "--out", "{OUT}"], "--out", [("rawdir/1.data", "--raw-dir"), ("split.json", "--split-file")]),
    ("xsum-jsonl", "preprocess.xsum_to_jsonl:main", ["--jsonl", "test.jsonl", "--out", "{OUT}"],
     "--out", [("test.jsonl", "--jsonl")]),
    ("gpt2-bpe", "preprocess.gpt2_bpe:main", ["--jsonl-dir", "jsonl", "--encoder-json",
     "encoder.json", "--vocab-bpe", "vocab.bpe", "--out", "{OUT}"], "--out",
     [("jsonl/test.jsonl", "--jsonl-dir"), ("encoder.json", "--encoder-json"),
      ("vocab.bpe", "--vocab-bpe")]),
    ("gpt2-bpe-full", "preprocess.gpt2_bpe:main", ["--jsonl-dir", "jsonl", "--encoder-json",
     "encoder.json", "--vocab-bpe", "vocab.bpe", "--out", "bpe", "--full-src-out", "{OUT}"],
     "--full-src-out", [("jsonl/valid.jsonl", "--jsonl-dir"), ("vocab.bpe", "--vocab-bpe")]),
    ("spacy-conllu", "preprocess.spacy_conllu:main", ["words.txt", "{OUT}"], "OUT",
     [("words.txt", "WORDS")]),
    ("topic-model-fit", "preprocess.topic_model:main", ["fit", "data", "--full-src", "fullsrc",
     "--topic-model", "{OUT}"], "--topic-model",
     [("data/dict.src.txt", "DATA"), ("data/train.src-tgt.src.bin", "DATA"),
      ("fullsrc", "--full-src")]),
    ("topic-model-infer", "preprocess.topic_model:main", ["infer", "data", "--topic-model",
     "topic_model.npz"], "link:data/train.theta.npy", [("topic_model.npz", "--topic-model")]),
    ("fingerprint", f"{R}.fingerprint:cli_main", ["--path", "ckpt.pt", "--generate-output",
     "gen.out", "--json", "{OUT}"], "--json",
     [("ckpt.pt", "--path"), ("gen.out", "--generate-output")]),
    ("fingerprint-compare", f"{R}.fingerprint:cli_main", ["--compare", "cross", "--json", "{OUT}"],
     "--json", [("cross/pinned1", "--compare")]),
    ("paper-evidence", f"{R}.paper_evidence:main", ["seeds"], "link:seeds/results.md",
     [("seeds/seed1/tpt/x.json", "ROOT")]),
    ("paper-tables-write", f"{R}.paper_tables:main", ["write", "tpt", "t2", "cmp", "--measure",
     "train.log", "8", "1", "--train-logs", "logs"], "link:cmp/tpt-t2.md",
     [("train.log", "--measure"), ("logs/run/train.log", "--train-logs")]),
    ("paper-tables-mean", f"{R}.paper_tables:main", ["mean", "{OUT}", "scores.json"], "DEST",
     [("scores.json", "SCORES")]),
    ("paper-tables-lenpen", f"{R}.paper_tables:main", ["pick-lenpen", "{OUT}", "1.0=scores.json"],
     "RECORD", [("scores.json", "ALPHA=JSON")]),
    ("paper-tables-params", f"{R}.paper_tables:main", ["params", "ckpt.pt", "{OUT}"], "DEST",
     [("ckpt.pt", "CHECKPOINT")]),
    ("paper-tables-topics", f"{R}.paper_tables:main", ["topic-words", "data", "{OUT}"], "DEST",
     [("data", "DATA")]),
    ("results-index", f"{R}.results_index:main", ["results", "--write"],
     "link:results/index.json", [("results/tables.json", "RESULTS")]),
    # the inspection tools (their command lines are the inspection room's)
    ("inspect", f"{I}.page.cli:main", ["data", "--path", "ckpt.pt", "--path", "ckpt2.pt", "--text",
     "docs.txt", "--json", "v.json", "--html", "{OUT}"], "--html",
     [("data", "DATA"), ("ckpt.pt", "--path"), ("ckpt2.pt", "--path"), ("docs.txt", "--text")]),
    ("inspect-json", f"{I}.page.cli:main", ["data", "--path", "ckpt.pt", "--text", "docs.txt",
     "--json", "{OUT}"], "--json", [("docs.txt", "--text")]),
    ("roles", f"{I}.roles:cli_main", ["data", "--path", "ckpt.pt", "--json", "{OUT}"], "--json",
     [("data", "DATA"), ("ckpt.pt", "--path")]),
    ("roles-png", f"{I}.roles:cli_main", ["data", "--path", "ckpt.pt", "--png", "{OUT}"], "--png",
     [("ckpt.pt", "--path")]),
    ("probe", f"{I}.probe:main", ["data", "--path", "ckpt.pt", "--labels", "labels.conllu",
     "--eval-generate-output", "gen.out", "--json", "{OUT}"], "--json",
     [("data", "DATA"), ("ckpt.pt", "--path"), ("labels.conllu", "--labels"),
      ("gen.out", "--eval-generate-output")]),
    ("probe-words", f"{I}.probe:main", ["data", "--path", "ckpt.pt", "--write-words", "{OUT}"],
     "--write-words", [("data", "DATA"), ("ckpt.pt", "--path")]),
    ("focus-plot", f"{I}.focus_plot:main", ["data", "--path", "ckpt.pt", "--png", "f.png",
     "--all-json", "{OUT}"], "--all-json", [("data", "DATA"), ("ckpt.pt", "--path")]),
    ("gate-sweep", f"{I}.gate_sweep:main", ["data", "--path", "ckpt.pt", "--out", "{OUT}"],
     "--out", [("data", "DATA"), ("ckpt.pt", "--path")]),
    ("implicit-extraction", f"{I}.implicit_extraction:cli_main", ["data", "--path", "ckpt.pt",
     "--out", "{OUT}"], "--out", [("data", "DATA"), ("ckpt.pt", "--path")]),
    ("source-use", f"{I}.source_use:main", ["data", "--path", "ckpt.pt", "--generate-output",
     "gen.out", "--json", "{OUT}"], "--json",
     [("data", "DATA"), ("ckpt.pt", "--path"), ("gen.out", "--generate-output")]),
    ("source-curve", f"{I}.source_curve:main", ["data", "--path", "runs/r1", "--json", "{OUT}"],
     "--json", [("data", "DATA"), ("runs/r1", "--path")]),
    ("topics-attention", f"{I}.topics:main", ["attention", "data", "--path", "ckpt.pt", "--json",
     "{OUT}"], "--json", [("data", "DATA"), ("ckpt.pt", "--path")]),
    ("topics-plot", f"{I}.topics:main", ["plot", "data", "--png", "{OUT}"], "--png",
     [("data", "DATA")]),
]
CASES = [pytest.param(w, inp, id=f"{w[0]}:{inp[1]}={inp[0]}") for w in WRITERS for inp in w[4]]


def _digest(root):
    """{relative path: sha256} of every file under ``root`` (links by what they point at)."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.mark.parametrize("writer, given", CASES)
def test_every_writer_refuses_an_output_on_each_of_its_inputs(tmp_path, capsys, monkeypatch,
                                                              writer, given):
    name, target, argv, out_flag, _ = writer
    path, in_flag = given
    root = _world(tmp_path / "w")
    monkeypatch.chdir(root)
    if out_flag.startswith("link:"):  # a fixed output name made a link to the input
        os.symlink(os.path.abspath(path), out_flag[5:])
        out = out_flag[5:]
    else:
        out = os.path.join(path, "o.json") if os.path.isdir(path) else path
    before = _digest(root)
    module, function = target.split(":")
    with pytest.raises(SystemExit) as e:
        getattr(importlib.import_module(module), function)(
            [a.replace("{OUT}", out) for a in argv])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "error: " in x]
    assert e.value.code == 2 and len(lines) == 1, (name, err)
    said = lines[0].split("error: ", 1)[1]
    assert said.endswith(TAIL) or said.endswith("(a link to it)" + TAIL), said
    written = said.split(" is ")[0].split(" lies inside ")[0]
    if not out_flag.startswith("link:"):
        assert written.startswith(f"{out_flag} "), said
    rest = said[len(written):]
    assert re.match(r" (is|lies inside) ", rest) and f"{in_flag} " in rest, said
    assert _digest(root) == before  # nothing written, no input changed


# the writers whose output is a file written into a folder they do not make ("score" reads the
# folder of its --topic-model, the world's root: "score-hyp" is the same command without it)
FILE_OUTPUTS = [pytest.param(w, id=w[0]) for w in WRITERS if w[0] in (
    "score-hyp", "compare", "compare-json", "compare-png", "baselines-jsonl", "lexrank",
    "lexrank-json", "fingerprint", "fingerprint-compare", "paper-tables-mean",
    "paper-tables-lenpen", "paper-tables-params", "paper-tables-topics", "inspect",
    "inspect-json", "roles", "roles-png", "probe", "probe-words", "focus-plot", "source-use",
    "source-curve", "topics-attention", "topics-plot", "spacy-conllu", "topic-model-fit")]


@pytest.mark.parametrize("writer", FILE_OUTPUTS)
def test_every_file_writer_refuses_an_output_in_a_missing_folder_before_any_work(
        tmp_path, capsys, monkeypatch, writer):
    """(fairseq-sum-score, paper_tables and others did their work, then raised
    FileNotFoundError; each now says it first, through the guard's ``files=True``.)"""
    name, target, argv, out_flag, _ = writer
    root = _world(tmp_path / "w")
    monkeypatch.chdir(root)
    before = _digest(root)
    module, function = target.split(":")
    with pytest.raises(SystemExit) as e:
        getattr(importlib.import_module(module), function)(
            [a.replace("{OUT}", "no/such/o.out") for a in argv])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "error: " in x]
    assert e.value.code == 2 and len(lines) == 1, (name, err)
    assert lines[0].endswith(f"error: {out_flag} no/such/o.out: its folder does not exist"), err
    assert _digest(root) == before and not os.path.exists(root / "no")


def _module_of(path):
    rel = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


OUTPUT_OPTION = re.compile(r"""add_argument\(\s*["'](--json|--html|--png|--out|--outputs|"""
                           r"""--all-json|--write-words|--out-dir|--full-src-out|--write|--topic-model|out|"""
                           r"""out_dir|dest|record)["']""")


def test_every_writer_has_a_case():
    """Every module under fairseq_sum_plugins/, ledger/ and preprocess/ whose parser has an output
    option, and every console script of setup.py, has a case above (a new writer without one
    fails here)."""
    covered = {w[1].split(":")[0] for w in WRITERS}
    found = set()
    for top in ("fairseq_sum_plugins", "ledger", "preprocess"):
        for folder, _, names in os.walk(os.path.join(REPO, top)):
            for name in names:
                if name.endswith(".py"):
                    with open(os.path.join(folder, name), encoding="utf-8") as f:
                        if OUTPUT_OPTION.search(f.read()):
                            found.add(_module_of(os.path.join(folder, name)))
    with open(os.path.join(REPO, "setup.py"), encoding="utf-8") as f:
        scripts = re.findall(r'"(fairseq-sum-[\w-]+) = ([\w.]+):', f.read())
    assert len(scripts) >= 9
    found |= {m.replace("fairseq_sum_plugins_preprocess", "preprocess") for _, m in scripts}
    assert "preprocess.topic_model" in found and "fairseq_sum_plugins.evaluation.compare" in found
    assert sorted(found - covered) == []
