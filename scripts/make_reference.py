"""The command reference, ``docs/reference/``, generated from each command's own parser.

    python scripts/make_reference.py            # writes docs/reference/*.md and its README.md
    python scripts/make_reference.py --check    # writes nothing; exits 1 naming each stale page

One page per command: every console script of ``setup.py`` (read from its ``entry_points``) and
every ``python -m`` tool of :data:`TOOLS` (those the recipes and the docs name; a tool that is also
a console script, e.g. ``python -m fairseq_sum_plugins.evaluation.compare``, is that script's page),
and one page of the plugin's fairseq options (:data:`FAIRSEQ_PAGE`: what the task, the criterion and
each model family add to ``fairseq-train`` / ``fairseq-generate``, with the presets of each family).
A page holds the usage line (argparse's, 100 columns), the description (the first paragraph of the
module docstring: the rest of the docstring is the module's documentation), every option of every
group with its help, default and choices, and each subcommand likewise. Options hidden with
``help=argparse.SUPPRESS`` (earlier names) are left out.

Hand-written notes live in the page between ``<!-- BEGIN notes -->`` and ``<!-- END notes -->``;
regeneration keeps them, and everything outside them is the generator's.

The parser is taken from the command's entry function itself: the function is called with
``ArgumentParser.parse_known_args`` replaced by a hook that hands back the parser before anything is
parsed (the hook raises a ``BaseException``, so no ``except Exception`` of the command catches it),
so a parser built inside ``main()`` is read as it is, and nothing of the command runs past its
parser. A command whose function ends without parsing, or fails before, is an error naming it.

An option without help text, or a parser whose ``prog`` is not how the command is run, is listed as
a warning (stderr); neither stops the generator. A page whose notes lost a marker stops it before it
writes anything. ``tests/test_reference_pages.py`` regenerates every page in memory and fails on a
committed page that differs from its parser, on any warning (:func:`warnings_of`), and on a
``--flag`` named in the notes or in ``docs/architecture.md`` that no parser knows
(:func:`known_options`, :func:`unknown_flags`).
"""
import argparse
import ast
import contextlib
import importlib
import inspect
import os
import re
import runpy
import sys
import warnings as pywarnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "docs", "reference")
P = "fairseq_sum_plugins"
COLUMNS = "100"  # argparse's usage width: fixed, whatever the terminal
# ``python -m`` tools the recipes and docs name (console scripts' modules are found in setup.py)
TOOLS = (
    f"{P}.evaluation.decodings", f"{P}.evaluation.compare_report",
    f"{P}.evaluation.baselines.table", f"{P}.evaluation.baselines.lexrank",
    f"{P}.inspection.focus_plot", f"{P}.inspection.topics", f"{P}.inspection.implicit_extraction",
    f"{P}.inspection.gate_sweep", f"{P}.inspection.source_use", f"{P}.inspection.source_curve",
    "preprocess.topic_model", "preprocess.gpt2_bpe", "preprocess.stats", "preprocess.spacy_conllu",
    "preprocess.aclsum_to_jsonl", "preprocess.xsum_to_jsonl", "preprocess.cnndm_to_jsonl",
    "preprocess.arxiv_pubmed_to_jsonl", "preprocess.newsroom_to_jsonl",
    "preprocess.wikihow_to_jsonl", "preprocess.nyt_to_jsonl",
    "ledger.results_index", "ledger.paper_tables", "ledger.paper_evidence", "ledger.fingerprint",
    f"{P}.cli.run_spec",
)
FAIRSEQ_PAGE = "fairseq-options"  # the plugin's options of fairseq-train / -generate
# the index's sections: (title, module prefixes), first match wins
SECTIONS = (
    ("Data", ("preprocess.",)),
    ("Training and decoding (fairseq's commands)", ("(fairseq)",)),
    ("Scoring and evaluation", (f"{P}.scoring.", f"{P}.evaluation.")),
    ("Inspection (loads a checkpoint)", (f"{P}.inspection.",)),
    ("Converters", (f"{P}.convert.",)),
    ("The results ledger (from the checkout)", ("ledger.",)),
    ("Recipe plumbing", (f"{P}.cli.",)),
)
BEGIN, END = "<!-- BEGIN notes -->", "<!-- END notes -->"
MD_SPECIAL = re.compile(r"([\\`*<>|])")


class Command:
    """One command: ``name`` (as typed: ``fairseq-sum-score``, ``python -m preprocess.stats``), the
    page's file stem, its ``module``, its entry ``function`` (None: the module's ``__main__``
    block, run as ``python -m`` runs it) and ``aliases`` (other ways to run it)."""

    def __init__(self, name, stem, module, function, aliases=()):
        self.name, self.stem, self.module, self.function = name, stem, module, function
        self.aliases = list(aliases)

    def __repr__(self):
        return f"Command({self.name!r})"


class _Captured(BaseException):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


class CaptureError(RuntimeError):
    """A command's parser could not be read (its message names the command)."""


class PageError(CaptureError):
    """A committed page whose notes cannot be kept (a marker missing or repeated)."""


def console_scripts(setup_py=None):
    """``[(name, module, function)]`` of ``setup.py``'s ``console_scripts``, read from its
    source."""
    setup_py = setup_py or os.path.join(REPO, "setup.py")
    tree = ast.parse(open(setup_py, encoding="utf-8").read(), setup_py)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    for item in ast.literal_eval(value):
                        name, target = (s.strip() for s in item.split("=", 1))
                        module, function = target.split(":")
                        found.append((name, module, function))
    return found


def _module_path(module):
    """Source file of ``module`` in the checkout (the installed preprocess package is
    ``preprocess/``)."""
    if module.startswith("fairseq_sum_plugins_preprocess"):
        module = "preprocess" + module[len("fairseq_sum_plugins_preprocess"):]
    base = os.path.join(REPO, *module.split("."))
    return base + ".py" if os.path.exists(base + ".py") else os.path.join(base, "__init__.py")


def commands(setup_py=None, tools=TOOLS):
    """Every command with a page, console scripts first (setup.py's order), then :data:`TOOLS`."""
    found, by_module = [], {}
    for name, module, function in console_scripts(setup_py):
        found.append(Command(name, name, module, function))
        short = module.replace("fairseq_sum_plugins_preprocess", "preprocess")
        by_module[short] = found[-1]
    for module in tools:
        if module in by_module:
            by_module[module].aliases.append(f"python -m {module}")
            continue
        stem = module[len(P) + 1:] if module.startswith(P + ".") else module
        found.append(Command(f"python -m {module}", stem, module, None))
    return found


@contextlib.contextmanager
def _fixed_width():
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def capture(function, argv0):
    """The parser that ``function()`` builds, taken at its first ``parse_known_args`` (which
    ``parse_args`` calls); ``sys.argv[0]`` is ``argv0`` meanwhile, as when the command runs."""
    def hook(self, args=None, namespace=None):
        raise _Captured(self)

    saved, saved_argv = argparse.ArgumentParser.parse_known_args, sys.argv
    argparse.ArgumentParser.parse_known_args = hook
    sys.argv = [argv0]
    try:
        function()
    except _Captured as c:
        return c.parser
    except SystemExit as e:
        raise CaptureError(f"{argv0}: exited ({e.code}) before parsing its arguments") from None
    except Exception as e:
        raise CaptureError(f"{argv0}: {type(e).__name__} before parsing its arguments: {e}") from e
    finally:
        argparse.ArgumentParser.parse_known_args = saved
        sys.argv = saved_argv
    raise CaptureError(f"{argv0}: returned without parsing any arguments")


def parser_of(command):
    if command.stem == FAIRSEQ_PAGE:
        return fairseq_parsers()
    if command.function is None:  # python -m MODULE: its ``__main__`` block, as python runs it
        def function():
            with pywarnings.catch_warnings():  # runpy's notice that the module is already imported
                pywarnings.simplefilter("ignore", RuntimeWarning)
                runpy.run_module(command.module, run_name="__main__", alter_sys=False)
        return capture(function, command.name)
    try:
        function = getattr(importlib.import_module(command.module), command.function)
    except Exception as e:
        raise CaptureError(f"{command.name}: {command.module}:{command.function} does not import: "
                           f"{type(e).__name__}: {e}") from e
    return capture(function, command.name)


def description(module):
    """First paragraph of ``module``'s docstring (read from its source, not imported), Sphinx roles
    written as code."""
    path = _module_path(module)
    doc = ast.get_docstring(ast.parse(open(path, encoding="utf-8").read(), path)) or ""
    first = inspect.cleandoc(doc).split("\n\n")[0].strip()
    return re.sub(r":[a-z]+:`~?([^`]+)`", r"``\1``", first)


def _escape(text):
    """Help text as Markdown: whitespace collapsed, the characters Markdown would read escaped
    (``*``, backquotes, ``<`` ...; ``_`` at a word's edge)."""
    text = MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))
    return re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", text)


def _code(value):
    text = str(value)
    ticks = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _default(action):
    """The default worth printing, or None (switches, no default, a help action)."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                           argparse._StoreConstAction, argparse._HelpAction,
                           argparse._VersionAction, argparse._CountAction)):
        return None
    if action.default is None or action.default == argparse.SUPPRESS or not action.option_strings:
        return None
    value = action.default
    if isinstance(value, str):
        return _code(value) if value else "`''` (empty)"
    if isinstance(value, (list, tuple)):
        return _code(" ".join(map(str, value))) if value else "none"
    return _code(repr(value) if isinstance(value, float) else value)


def _says_default(helptext, value):
    """Whether the help text already names ``value`` as the default (``(default: test)``)."""
    shown = [" ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)]
    if isinstance(value, float) and value.is_integer():
        shown.append(str(int(value)))  # (default: 1) of 1.0
    return any(s and re.search(r"\bdefault:?\s+['\"]?" + re.escape(_escape(s)) + r"(?![\w.-])",
                               helptext) for s in shown)


def _option(formatter, action, where, warnings):
    """One option as a Markdown bullet; None for a hidden one. Options without help go to
    ``warnings`` (named with ``where``)."""
    if action.help == argparse.SUPPRESS:
        return None
    invocation = formatter._format_action_invocation(action)
    if action.help:
        helptext = _escape(formatter._expand_help(action))
    else:
        helptext = ""
        name = max(action.option_strings, key=len) if action.option_strings else action.dest
        warnings.append(f"{where}: {name} has no help text")
    if helptext and helptext[-1] not in ".!?":
        helptext += "."
    parts = [f"- {_code(invocation)}" + (f": {helptext}" if helptext else "")]
    if action.required and action.option_strings:
        parts.append("Required.")
    if action.choices is not None and "{" not in invocation:
        parts.append("Choices: " + ", ".join(_code(c) for c in action.choices) + ".")
    default = _default(action)
    if default is not None and not _says_default(helptext, action.default):
        parts.append(f"Default: {default}.")
    return " ".join(parts)


def _parser_body(parser, where, warnings, level=2, usage=True):
    """Usage (unless not ``usage``) and options of ``parser``, then its subcommands (one level
    deeper)."""
    h = "#" * level
    with _fixed_width():
        line = parser.format_usage().strip()
        formatter = parser._get_formatter()
    out = ["%s Usage" % h, "", "```text", line, "```", ""] if usage else []
    if parser.description and not usage:  # the fairseq page's own Markdown
        out += [parser.description, ""]
    subparsers = []
    groups = [g for g in parser._action_groups if g._group_actions]
    for group in groups:
        lines = []
        for action in group._group_actions:
            if isinstance(action, argparse._SubParsersAction):
                subparsers.append(action)
                continue
            if isinstance(action, argparse._HelpAction):
                continue
            line = _option(formatter, action, where, warnings)
            if line:
                lines.append(line)
        if lines:
            title = (group.title or "options").capitalize()
            out += [f"{h} {title}", ""]
            if group.description:
                out += [_escape(group.description), ""]
            out += lines + [""]
    for action in subparsers:
        helps = {c.dest: c.help for c in action._choices_actions}
        for name, sub in action.choices.items():
            out += [f"{h} Subcommand `{name}`", ""]
            if helps.get(name):
                out += [_escape(helps[name]), ""]
            out += _parser_body(sub, f"{where} {name}", warnings, level + 1)
    return out


def notes_of(text, where="the page"):
    """The hand-written notes of a page (between the markers), or '' for a page without markers.
    One marker without the other, a repeated one or END before BEGIN is a :class:`PageError`
    (regenerating would lose the notes)."""
    counts = (text.count(BEGIN), text.count(END))
    if counts == (0, 0):
        return ""
    if counts != (1, 1) or text.index(END) < text.index(BEGIN):
        raise PageError(f"{where}: its notes need one {BEGIN} and, after it, one {END} (found "
                        f"{counts[0]} and {counts[1]}): restore them, nothing was written")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def render(command, parser, notes="", warnings=None):
    """The page of ``command`` as Markdown."""
    warnings = [] if warnings is None else warnings
    where = command.name
    source = os.path.relpath(_module_path(command.module), REPO) if command.module else None
    out = [f"# {command.name}", "",
           "<!-- Generated by scripts/make_reference.py from the command's parser: edit the parser "
           "(or the notes below), then rerun it. -->", ""]
    if command.aliases:
        out += ["Also run as " + ", ".join(_code(a) for a in command.aliases) + ".", ""]
    if source:
        out += [description(command.module), "",
                f"Source: [`{source}`](../../{source}) (its docstring is the full documentation).",
                ""]
        if parser.prog != command.name:
            warnings.append(f"{where}: its usage line names {parser.prog!r}, not {command.name!r}")
        out += _parser_body(parser, where, warnings)
    else:
        out += fairseq_intro() + [""]
        for title, sub in parser:
            out += [f"## {title}", ""] + _parser_body(sub, f"{FAIRSEQ_PAGE} ({title})", warnings, 3,
                                                      usage=False)
    out += ["## Notes", "", BEGIN] + ([notes] if notes else []) + [END, ""]
    return "\n".join(out)


def index(cmds):
    """docs/reference/README.md: every page, by section."""
    out = ["# Command reference", "",
           "<!-- Generated by scripts/make_reference.py: rerun it after changing a parser. -->", "",
           "One page per command, generated from the command's own parser (usage, every option "
           "with its help and default) plus hand-written notes; `tests/test_reference_pages.py` "
           "fails when "
           "a page differs from its parser. How the commands fit together: "
           "[`docs/architecture.md`](../architecture.md).", ""]
    placed = set()
    for title, prefixes in SECTIONS:
        rows = []
        for c in cmds:
            key = c.module if c.module else "(fairseq)"
            key = key.replace("fairseq_sum_plugins_preprocess", "preprocess")
            if c.stem in placed or not any(key.startswith(p) for p in prefixes):
                continue
            placed.add(c.stem)
            what = _first_sentence(description(c.module)) if c.module else \
                "what the plugin adds to fairseq-train, -generate, -validate, -interactive"
            rows.append(f"| [{_code(c.name)}]({c.stem}.md) | {what} |")
        if rows:
            out += [f"## {title}", "", "| command | what it does |", "|---|---|"] + rows + [""]
    missing = [c.name for c in cmds if c.stem not in placed]
    if missing:
        raise CaptureError(f"no section of the index takes {', '.join(missing)} (SECTIONS)")
    return "\n".join(out)


def _first_sentence(text):
    text = " ".join(text.split())
    m = re.search(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bApp)(?<!\beq)(?<!\bFig)(?<!\bal)"
                  r"\.(\s|$)", text)
    sentence = text[: m.start() + 1] if m else text
    return sentence.replace("|", "\\|")


# ---------------------------------------------------------------- the plugin's fairseq options

def fairseq_intro():
    return [
        "The options the plugin adds to fairseq's commands (`fairseq-train`, `fairseq-generate`, "
        "`fairseq-validate`, `fairseq-interactive`, with `--user-dir fairseq_sum_plugins` or the "
        "package imported): the task `summarization` (beyond fairseq's `translation`), the "
        "criterion `summarization_loss` (beyond `label_smoothed_cross_entropy`) and each model "
        "family, with its presets (`--arch`). A preset sets the defaults of its family's options; "
        "`fairseq-train --arch ARCH --help` prints them. Each section is the component's "
        "`add_args`, as fairseq calls it.",
    ]


def _added_args(add_args, base_add_args=None):
    """A parser holding the options ``add_args`` declares that ``base_add_args`` does not."""
    parser = argparse.ArgumentParser(prog="fairseq-train", add_help=False, allow_abbrev=False)
    add_args(parser)
    if base_add_args is not None:
        base = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        base_add_args(base)
        known = {s for a in base._actions for s in a.option_strings}
        positionals = {a.dest for a in base._actions if not a.option_strings}
        for action in list(parser._actions):
            if (set(action.option_strings) <= known if action.option_strings
                    else action.dest in positionals):
                parser._remove_action(action)
                for group in parser._action_groups:
                    if action in group._group_actions:
                        group._group_actions.remove(action)
    return parser


def fairseq_parsers():
    """``[(title, parser)]``: the task's, the criterion's and each model family's added options."""
    import fairseq_sum_plugins

    fairseq_sum_plugins.register()
    from fairseq.criterions import CRITERION_REGISTRY
    from fairseq.models import ARCH_MODEL_INV_REGISTRY, MODEL_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    out = [("Task `summarization`", _added_args(TASK_REGISTRY["summarization"].add_args,
                                                 TASK_REGISTRY["translation"].add_args)),
           ("Criterion `summarization_loss`",
            _added_args(CRITERION_REGISTRY["summarization_loss"].add_args,
                        CRITERION_REGISTRY["label_smoothed_cross_entropy"].add_args))]
    for family, base in (("sum_transformer", None), ("bart_sum", "bart"), ("mem2mem", None)):
        parser = _added_args(MODEL_REGISTRY[family].add_args,
                             MODEL_REGISTRY[base].add_args if base else None)
        presets = ", ".join(f"`{a}`" for a in sorted(ARCH_MODEL_INV_REGISTRY[family]))
        parser.description = f"Presets (`--arch`): {presets}."
        title = f"Model family `{family}`" + (f" (beyond fairseq's `{base}`)" if base else "")
        out.append((title, parser))
    return out


# ---------------------------------------------------------------- flags named in prose

# flags of other programs that the notes and docs/architecture.md quote: pip's,
# scripts/install.sh's, scripts/check_layering.py's
OTHER_PROGRAMS_FLAGS = frozenset({"--no-deps", "--meteor15", "--rouge155", "--rooms"})
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _walk_options(parser, found):
    found.update(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _walk_options(sub, found)


def known_options(cmds=None):
    """Every option string of the pages' parsers (subcommands and hidden earlier names included),
    of fairseq's commands as the plugin extends them (task, criterion, tokenizer, BPE, scoring) and
    of the plugin's model families."""
    found = set()
    for c in commands() if cmds is None else cmds:
        if c.stem != FAIRSEQ_PAGE:
            _walk_options(parser_of(c), found)
    import fairseq_sum_plugins

    fairseq_sum_plugins.register()
    from fairseq import options
    from fairseq.models import MODEL_REGISTRY

    argv = ["DATA", "--task", "summarization", "--criterion", "summarization_loss", "--arch",
            "tp_transformer_small", "--tokenizer", "sum_moses", "--bpe", "sentencepiece",
            "--sentencepiece-model", "spm.model", "--scoring", "rouge"]
    for make in (options.get_training_parser, options.get_generation_parser,
                 options.get_validation_parser, options.get_interactive_generation_parser):
        parser = make()
        options.parse_args_and_arch(parser, argv, parse_known=True)  # adds the chosen parts' flags
        _walk_options(parser, found)
    _walk_options(options.get_preprocessing_parser(), found)
    for family in ("sum_transformer", "bart_sum", "mem2mem"):
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        MODEL_REGISTRY[family].add_args(parser)
        _walk_options(parser, found)
    return found | OTHER_PROGRAMS_FLAGS


def unknown_flags(text, known):
    """The ``--flags`` that ``text`` names and no parser knows (a renamed or removed option)."""
    return sorted({f for f in FLAG.findall(text) if f not in known})


# ---------------------------------------------------------------- pages

def pages(cmds=None, out_dir=OUT, warnings=None):
    """``{file name: text}`` of every page and the index, the notes read from ``out_dir``."""
    cmds = commands() if cmds is None else cmds
    warnings = [] if warnings is None else warnings
    result = {}
    for c in cmds:
        path = os.path.join(out_dir, c.stem + ".md")
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        notes = notes_of(old, os.path.relpath(path, REPO))
        result[c.stem + ".md"] = render(c, parser_of(c), notes, warnings)
    result["README.md"] = index(cmds)
    return result


def warnings_of(cmds=None, out_dir=OUT):
    """The generator's warnings for the pages of ``cmds`` (default: every page): each option
    without help text and each usage line naming another program than the command's, as
    :func:`main` lists them."""
    found = []
    pages(all_commands() if cmds is None else cmds, out_dir, found)
    return found


def all_commands():
    name = "fairseq-train, fairseq-generate: the plugin's options"
    return commands() + [Command(name, FAIRSEQ_PAGE, None, None)]


def stale(out_dir=OUT, warnings=None, cmds=None):
    """Messages naming each page of ``out_dir`` that differs from what the parsers of ``cmds``
    (default: every command) give, is missing, or belongs to no command."""
    want = pages(all_commands() if cmds is None else cmds, out_dir, warnings)
    rel = os.path.relpath(out_dir, REPO)
    problems = []
    for name, text in want.items():
        path = os.path.join(out_dir, name)
        if not os.path.exists(path):
            problems.append(f"{rel}/{name} is missing: run python scripts/make_reference.py")
        elif open(path, encoding="utf-8").read() != text:
            problems.append(f"{rel}/{name} is stale: run python scripts/make_reference.py")
    if os.path.isdir(out_dir):
        for name in sorted(os.listdir(out_dir)):
            if name.endswith(".md") and name not in want:
                problems.append(f"{rel}/{name} is the page of no command: remove it, or name its "
                                "command in scripts/make_reference.py (TOOLS)")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(prog="python scripts/make_reference.py",
                                description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming each page that differs from its parser")
    p.add_argument("--out", default=OUT, help="the folder of the pages (default: docs/reference)")
    args = p.parse_args(argv)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        p.error(f"--out {args.out}: not a folder")
    warnings = []
    try:
        if args.check:
            problems = stale(args.out, warnings)
        else:
            os.makedirs(args.out, exist_ok=True)
            problems = []
            for name, text in pages(all_commands(), args.out, warnings).items():
                path = os.path.join(args.out, name)
                if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(text)
                    print(f"wrote {os.path.relpath(path, REPO)}")
    except CaptureError as e:
        sys.exit(f"make_reference: {e}")
    if warnings and args.check:
        print(f"{len(warnings)} warning(s): run without --check to list them", file=sys.stderr)
    elif warnings:
        print(f"{len(warnings)} warning(s):", file=sys.stderr)
        for w in warnings:
            print(f"  {w}", file=sys.stderr)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path[:0] = [REPO]  # preprocess/ and ledger/ from the checkout
    sys.exit(main())
