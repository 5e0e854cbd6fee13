"""What made a recipe step's output: its spec, recorded beside the output and checked on re-runs.

Every step of the recipes (``recipes/common.sh``: ``step_gate``, the one "exists, skipped"
decision) asks this module before it runs::

    python -m fairseq_sum_plugins.cli.run_spec gate STEP TARGET --complete 0|1 [--partial 0|1]
        [--resumes] [--input NAME=PATH ...] [--field KEY=VALUE ...] [--root DIR] [-- FLAG ...]

and reads one word on stdout: ``skip`` (the output is complete and was made under this spec),
``run`` (no output to reuse, or an unfinished one made under this spec: the step runs, resuming
where it can) or ``force`` (``FORCE=1`` and the output was made under another spec, or under an
unknown one: the step is redone; the old output, file or folder, is removed first, so that nothing
of the old run is resumed, and a forced step that fails leaves no old output under the new
record). The record is written, through a temporary file, before the step runs, so an
interrupted step is resumed only under its own spec.

The spec (``TARGET/spec.json`` for a folder, given as ``TARGET/``; ``TARGET.spec.json`` for a
file): the step's name, ``SMOKE`` (``$SMOKE``, 0 when unset) and ``PRESET`` (``$PRESET``, empty
when unset) of the run, the identity of each input (``--input``), the result-changing settings
(``--field``) and the step's flags (after ``--``). Compared: all of them but the step's name. A
difference when there is something to reuse (a complete output, or for ``--resumes`` a partial one:
a training's ``checkpoint_last.pt``) exits 2 with one message naming each field that differs
(``OUT/x was made with SMOKE=1, this run has SMOKE=0``) and the ways out (another OUT, or
``FORCE=1``). So does an output to reuse with no record (made before records were kept, or by
hand: the settings it was made with are unknown) and an unreadable record.

Identities are of content, never of paths or times, so a moved folder is the same input:

* a prepared data folder (``dict.*.txt`` or ``prepare_args.json`` in it): the sha256 of its
  dictionaries, index files, references (``*.ref.jsonl``), ``spm.model``, the sizes of its
  ``.bin`` files and fairseq-sum-prepare's options (less paths and worker counts);
  ``topic_model.npz`` and ``*.theta.npy``, which later steps write into it, are not part of it;
* a file: the sha256 of its bytes up to 64 MiB; of a larger one (a checkpoint, a raw corpus), its
  size with the sha256 of its first and last MiB;
* another folder: of up to 64 files, each file's identity; of more (a raw corpus of one file per
  story), the names and sizes of its files;
* a text that names no path (several paths in one word list are identified one by one): itself.

Each input is also recorded by where it lay (``input_paths``, for the messages only, never
compared): under ``--root`` as ``{root}/...``, elsewhere by its name, so that a record committed
with its run's folder holds no machine path (``ledger/results_paths.py``); a refusal shows the
recorded name and this run's path as given.

Flags are recorded as given, less what does not change the result or differs between launches of
one run (``--restore-file X`` and ``--reset-*`` of a fine-tuning's first launch, a node's
``--distributed-rank``, ``--distributed-init-method``, ``--distributed-port``, the worker
processes of ``--workers`` and ``--num-workers``): a flag holding
``--root`` has it replaced by ``{root}``, and another flag naming an existing path is recorded as
that path's name (its content is an ``--input`` where it matters).

:func:`smoke_runs` tells a table writer which of the files it shows were made under ``SMOKE=1``
(:func:`find_records`); :func:`smoke_note` is the line a table then starts with (compare.sh's
``results.md``, ``baselines.md``).
"""
import argparse
import difflib
import hashlib
import json
import os
import shutil
import sys

BIG = 64 << 20  # files above this are identified by size, head and tail
EDGE = 1 << 20
MANY = 64  # folders of more files are identified by names and sizes
DROPPED = {"--restore-file": 1, "--distributed-rank": 1, "--distributed-init-method": 1,
           "--distributed-port": 1, "--workers": 1, "--num-workers": 1}
DATA_PARTS = (".idx", ".ref.jsonl")
PREPARE_PATHS = ("out", "jsonl_dir", "parallel_dir", "workers", "num_threads", "hf_dataset_dir")


class SpecError(ValueError):
    """A recorded spec that differs from this run's, or that cannot be read."""


# --------------------------------------------------------------------------------- identities
def _sha(data):
    return hashlib.sha256(data).hexdigest()[:16]


def file_identity(path):
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        if size <= BIG:
            return f"sha256:{_sha(f.read())}"
        head = f.read(EDGE)
        f.seek(size - EDGE)
        return f"size:{size},ends:{_sha(head + f.read(EDGE))}"


def is_data_folder(path):
    return os.path.isfile(os.path.join(path, "prepare_args.json")) or any(
        n.startswith("dict.") and n.endswith(".txt") for n in os.listdir(path))


def data_identity(folder):
    """The identity of a prepared (binarized) data folder: see the module docstring."""
    h = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        full = os.path.join(folder, name)
        if not os.path.isfile(full):
            continue
        if (name.startswith("dict.") and name.endswith(".txt")) or name.endswith(DATA_PARTS) \
                or name == "spm.model":
            with open(full, "rb") as f:
                h.update(name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
        elif name.endswith(".bin"):
            h.update(f"{name}\0{os.path.getsize(full)}".encode())
        elif name == "prepare_args.json":
            try:
                with open(full, encoding="utf-8") as f:
                    options = json.load(f).get("options", {})
                options = {k: v for k, v in options.items() if k not in PREPARE_PATHS}
            except (ValueError, AttributeError):
                options = {"unreadable": True}
            h.update(json.dumps(options, sort_keys=True, default=str).encode())
    return f"data:{h.hexdigest()[:16]}"


def folder_identity(folder):
    if is_data_folder(folder):
        return data_identity(folder)
    files = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        files += [os.path.join(root, n) for n in sorted(names)]
    files = [f for f in files if os.path.basename(f) != "spec.json"
             and not f.endswith(".spec.json")]
    h = hashlib.sha256()
    many = len(files) > MANY
    for f in files:
        rel = os.path.relpath(f, folder)
        h.update(f"{rel}\0{os.path.getsize(f) if many else file_identity(f)}\n".encode())
    return f"{'names+sizes' if many else 'files'}:{h.hexdigest()[:16]}"


def identity(value):
    """The identity of an input: a path's content, or the text itself (see the module docstring)."""
    if os.path.isdir(value):
        return folder_identity(value)
    if os.path.isfile(value):
        return file_identity(value)
    words = value.split()
    if len(words) > 1 and any(os.path.exists(w) for w in words):
        return " ".join(identity(w) for w in words)
    return f"text:{value}"


def _rooted(word, root):
    """``word`` with a leading ``root`` path (the whole word, or ``root/...``, also after ``=``)
    written ``{root}``; any other word as it is (``out`` never rewrites ``--out``)."""
    key, eq, value = word.partition("=") if word.startswith("-") else ("", "", word)
    base = root.rstrip("/") or "/"
    if value == base or value.startswith(base.rstrip("/") + "/"):
        value = "{root}" + value[len(base):]
    return key + eq + value


def recorded_path(path, root=None):
    """How the record names an input (``input_paths``, for the messages only): a path under
    ``root`` as ``{root}/...``, another absolute or existing path by its name, several paths in
    one word list each so; a text that names no path as it is. A record travels with its run's
    folder into ``results/``, which keeps no machine path (``ledger/results_paths.py``)."""
    words = path.split()
    if len(words) > 1 and any(os.path.exists(w) for w in words):
        return " ".join(recorded_path(w, root) for w in words)
    if root and (os.path.isabs(path) or os.path.exists(path)):
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
        if rel == ".":
            return "{root}"
        if rel != ".." and not rel.startswith("../"):
            return "{root}/" + rel
    if os.path.isabs(path) or os.path.exists(path):
        return os.path.basename(os.path.normpath(path)) or path
    return path


def normalize_flags(flags, root=None):
    out, skip = [], 0
    for flag in flags:
        if skip:
            skip -= 1
            continue
        if flag in DROPPED:
            skip = DROPPED[flag]
            continue
        if flag.startswith("--reset-"):
            continue
        if root and _rooted(flag, root) != flag:
            flag = _rooted(flag, root)
        elif "/" in flag and os.path.exists(flag):
            flag = os.path.basename(os.path.normpath(flag))
        out.append(flag)
    return out


# ------------------------------------------------------------------------------- the record
def record_path(target):
    """``TARGET/spec.json`` for a folder (``TARGET/``, or an existing folder), else
    ``TARGET.spec.json``."""
    if target.endswith("/") or os.path.isdir(target):
        return os.path.join(target.rstrip("/") or "/", "spec.json")
    return target + ".spec.json"


def build(step, inputs=(), fields=(), flags=(), root=None, env=None):
    env = os.environ if env is None else env
    spec = {"step": step, "SMOKE": env.get("SMOKE") or "0", "PRESET": env.get("PRESET", "")}
    spec["inputs"] = {name: identity(path) for name, path in inputs}
    spec["input_paths"] = {name: recorded_path(path, root) for name, path in inputs}  # messages
    spec["fields"] = dict(fields)
    spec["flags"] = normalize_flags(list(flags), root)
    return spec


def read(path):
    """The record at ``path`` (None when absent); an unreadable one is a :class:`SpecError`."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
        if not isinstance(spec, dict) or not isinstance(spec.get("inputs", {}), dict) \
                or not isinstance(spec.get("fields", {}), dict):
            raise ValueError("not a spec record")
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: unreadable spec record ({e})") from None
    return spec


def _flag_change(old, new):
    parts = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            parts.append(f"'{' '.join(old[i1:i2])}' -> '{' '.join(new[j1:j2])}'")
    return "made with other flags: " + "; ".join(parts[:4]) + (" ..." if len(parts) > 4 else "")


def differences(old, new, paths=None, root=None):
    """One phrase per field of the spec ``old`` (recorded) that differs in ``new``; SMOKE first.
    An input is shown by its recorded name (``{root}`` read as ``root``) and, for this run's, by
    ``paths`` (``{name: path}`` as given) where known."""
    paths = paths or {}
    out = []
    for key in ("SMOKE", "PRESET"):
        if str(old.get(key, "")) != str(new.get(key, "")):
            out.append(f"made with {key}={old.get(key, '')!s}, this run has "
                       f"{key}={new.get(key, '')!s}")
    for group, what in (("inputs", "input"), ("fields", "")):
        o, n = old.get(group, {}), new.get(group, {})
        for key in sorted(set(o) | set(n)):
            if o.get(key) != n.get(key):
                if group == "inputs":
                    was = str(old.get("input_paths", {}).get(key, "?"))
                    if root and was.startswith("{root}"):
                        was = root.rstrip("/") + was[len("{root}"):]
                    now = paths.get(key, new.get("input_paths", {}).get(key, "?"))
                    out.append(f"made from {what} {key} {was} ({o.get(key, 'none')}), this "
                               f"run's is {now} ({n.get(key, 'none')})")
                else:
                    out.append(f"made with {key}={o.get(key, '(none)')}, this run has "
                               f"{key}={n.get(key, '(none)')}")
    if list(old.get("flags", [])) != list(new.get("flags", [])):
        out.append(_flag_change(list(old.get("flags", [])), list(new.get("flags", []))))
    return out


def write(path, spec):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"  # every node of a multi-node training writes its record
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def gate(target, spec, complete, partial=False, resumes=False, force=False, paths=None,
         root=None):
    """``skip``, ``run`` or ``force`` for the step making ``target`` (see the module docstring);
    writes the record unless ``skip``. A :class:`SpecError` when refused (``paths``, ``root``: how
    its message shows the inputs, :func:`differences`)."""
    path = record_path(target)
    reusable = complete or (resumes and partial)
    shown = target.rstrip("/")
    try:
        old = read(path)
    except SpecError as e:
        if not (force or not reusable):
            raise SpecError(f"{e}: remove it and {shown} to make it again, or FORCE=1") from None
        old = None
    if old is not None:
        diffs = differences(old, spec, paths, root)
        if not diffs:
            if complete:
                return "skip"
            write(path, spec)
            return "run"
    if not reusable:
        write(path, spec)
        return "run"
    if not force:
        if old is None:
            why = (f"{shown} exists without a spec record ({os.path.basename(path)}: made before "
                   "records were kept, or by hand): the settings it was made with are unknown")
        else:
            why = f"{shown} was " + "; ".join(diffs)
        raise SpecError(f"{why}: use another OUT, or FORCE=1 to make it again")
    remove_output(shown)
    write(path, spec)
    return "force"


def remove_output(target):
    """The old output a forced step makes again: removed before the new record is written, so
    that a forced step that fails leaves no output of the old spec under the new record (which a
    later run would skip as complete)."""
    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target)
    elif os.path.lexists(target):
        os.remove(target)


# ------------------------------------------------------------------------------------- tables
def find_records(path):
    """The spec records that cover ``path``: its own (file or folder), else its folder's, else the
    records of the files beside it (a mean of decodings, a copy); [] when none."""
    folder = os.path.dirname(path) or "."
    for candidate in (path + ".spec.json", os.path.join(path, "spec.json"),
                      os.path.join(folder, "spec.json")):
        if os.path.isfile(candidate):
            return [candidate]
    if not os.path.isdir(folder):
        return []
    return [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".spec.json")]


def smoke_runs(paths):
    """The ``paths`` whose spec record (:func:`find_records`) says SMOKE=1; an unreadable record
    counts as SMOKE (what made it is unknown)."""
    out = []
    for path in paths:
        for record in find_records(path):
            try:
                spec = read(record)
            except SpecError:
                spec = {"SMOKE": "1"}
            if str(spec.get("SMOKE", "0")) == "1":
                out.append(path)
                break
    return out


def run_files(run):
    """The files of a compare.sh run folder ``run`` whose records tell how it was made: its score
    file, its decoding and its checkpoints' folder (for :func:`smoke_note`)."""
    return [os.path.join(run, "test.out.rouge.json"), os.path.join(run, "test.out"),
            os.path.join(run, "checkpoints")]


def smoke_note(runs, what="runs"):
    """The line a table starts with when one of its runs was made under SMOKE=1, else "".
    ``runs``: ``{name: [path, ...]}``, the files each run shown in the table was read from."""
    smoke = [name for name, paths in runs.items() if smoke_runs(paths)]
    if not smoke:
        return ""
    return (f"**SMOKE=1:** {len(smoke)} of the {len(runs)} {what} shown "
            f"({', '.join(f'`{n}`' for n in smoke)}) were made under SMOKE=1 (their spec records, "
            "recipes/common.sh step_gate): tiny models and few updates, whose figures check the "
            "pipeline, not the models.")


# -------------------------------------------------------------------------------- command line
def _pair(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return tuple(text.split("=", 1))


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    flags = []
    if "--" in argv:
        at = argv.index("--")
        argv, flags = argv[:at], argv[at + 1:]
    p = argparse.ArgumentParser(prog="python -m fairseq_sum_plugins.cli.run_spec",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gate", help="skip, run or force a step (see above)")
    g.add_argument("step", help="the step's name: recorded, not compared; it starts each "
                   "message")
    g.add_argument("target", help="the step's output: FOLDER/ or FILE")
    g.add_argument("--complete", choices=("0", "1"), required=True,
                   help="1: TARGET is complete, skipped when made under this spec")
    g.add_argument("--partial", choices=("0", "1"), default="0",
                   help="1: TARGET holds an unfinished output (a training's checkpoint_last.pt), "
                        "reused with --resumes (default: %(default)s)")
    g.add_argument("--resumes", action="store_true", help="the step resumes a partial output")
    g.add_argument("--input", type=_pair, action="append", default=[], metavar="NAME=PATH",
                   help="an input of the step, compared by the identity of its content "
                        "(sha256 or sizes, never its path); repeatable")
    g.add_argument("--field", type=_pair, action="append", default=[], metavar="KEY=VALUE",
                   help="a setting that changes the result, compared as text; repeatable")
    g.add_argument("--root", help="a path recorded as {root} in the flags")
    s = sub.add_parser("smoke", help="print the paths made under SMOKE=1, one a line")
    s.add_argument("paths", nargs="*",
                   help="files or folders; printed: those whose spec record (their own, their "
                        "folder's, or those beside them) says SMOKE=1 or cannot be read")
    args = p.parse_args(argv)
    if args.cmd == "smoke":
        print("\n".join(smoke_runs(args.paths)))
        return 0
    force = os.environ.get("FORCE", "0")
    if force not in ("0", "1", ""):
        print(f"run_spec: FORCE must be 0 or 1, got {force!r}", file=sys.stderr)
        return 2
    try:
        spec = build(args.step, args.input, args.field, flags, args.root)
        action = gate(args.target, spec, args.complete == "1", args.partial == "1", args.resumes,
                      force == "1", dict(args.input), args.root)
    except SpecError as e:
        print(f"{args.step}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{args.step}: {args.target}: cannot identify an input or write the record ({e})",
              file=sys.stderr)
        return 2
    print(action)
    return 0


if __name__ == "__main__":
    sys.exit(main())
