"""The one output guard of every command that writes a file.

A command declares what it reads and what it writes, each by the flag that names it::

    refuse_clobber(parser, reads=[("--data", args.data), ("SYSTEM", args.systems)],
                   writes=[("--html", args.html), ("--json", args.json)])

and before any work an output that is, or lies inside, a file or folder it reads is refused in one
line naming both flags (``--html B.out is SYSTEM B.out, which this command reads; nothing
written``); so is one file named by two outputs. Paths are compared as the file system resolves
them: through symbolic links (:func:`os.path.realpath`, which also resolves ``bin/../raw``), and for
files that exist by device and inode, so that a hard link to an input is the input. An output file
that exists is also looked for among the files of every folder read (a hard link elsewhere to
``bin/test.ref.jsonl``, or the target of a link inside the folder, is refused as that file of the
folder). A path of ``None`` or ``""`` (an option not given) is skipped; a list (``nargs``) names
several.

A tool that writes into a folder declares the files it writes there (``("--out", OUT/x.json)``),
or the folder itself where an output inside an input folder is what must be refused; a tool that
reads only some files of a folder it also writes into (``WORK`` with its ``bin/``) declares the
files or subfolders it reads, not the whole folder, and a converter's input folder is declared by
its entries (:func:`contents`: ``--jsonl-dir RAW --out RAW/work`` is fine, ``--out RAW`` is not
where RAW holds a file of that name).

An output file whose folder does not exist, or that is a folder, is refused the same way, before
any work (``refuse_clobber(..., files=True)``, or :func:`refuse_unwritable` for some of the
outputs; the commands that make their output folders do not ask for it).

Every console script and ``python -m`` tool of the plugin, ``ledger/`` and ``preprocess/`` calls it
right after parsing its arguments (``tests/test_output_guard.py`` runs every writer against each
of its inputs).
"""
import os


class OutputClash(ValueError):
    """An output that would overwrite an input (or another output); the message names both flags."""


def _paths(pairs):
    for flag, value in pairs:
        if value is None or value == "":
            continue
        for path in (value if isinstance(value, (list, tuple)) else [value]):
            if path is not None and path != "":
                yield flag, os.fspath(path)


def _identity(path):
    """``(device, inode)`` of an existing file (a hard link shares its input's), else None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if not os.path.isdir(path) else None


def _within(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _folder_files(folder):
    """{(device, inode): path} of the files under ``folder`` (links to files followed, links to
    folders not entered)."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            ident = _identity(path)
            if ident is not None:
                found.setdefault(ident, path)
    return found


def clash(reads, writes):
    """The message of the first clash between ``writes`` and ``reads`` (each ``[(flag, path or
    [paths] or None)]``), or None when every output is apart from every input and from the
    others."""
    inputs = [(flag, path, os.path.realpath(path), _identity(path)) for flag, path in _paths(reads)]
    folders = {}  # read folder -> its files by identity (walked once, for an existing output)
    seen = []
    for flag, path in _paths(writes):
        real, ident = os.path.realpath(path), _identity(path)
        for in_flag, in_path, in_real, in_ident in inputs:
            if _within(real, in_real) or (ident is not None and ident == in_ident):
                same = real == in_real or (ident is not None and ident == in_ident)
                how = "is" if same else "lies inside"
                return (f"{flag} {path} {how} {in_flag} {in_path}, which this command reads; "
                        "nothing written")
        for in_flag, in_path, in_real, _ in inputs if ident is not None else ():
            if os.path.isdir(in_real):
                if in_real not in folders:
                    folders[in_real] = _folder_files(in_real)
                if ident in folders[in_real]:
                    inner = os.path.relpath(folders[in_real][ident], in_real)
                    return (f"{flag} {path} is {inner} of {in_flag} {in_path} (a link to it), "
                            "which this command reads; nothing written")
        for out_flag, out_path, out_real, out_ident in seen:
            if real == out_real or (ident is not None and ident == out_ident):
                return f"{flag} {path} and {out_flag} {out_path} name one file; nothing written"
        seen.append((flag, path, real, ident))
    return None


def contents(path):
    """The entries directly inside ``path`` when it is a folder whose files are read by name (a
    converter's input folder: an output folder beside them inside it is fine), else ``path``;
    None stays None."""
    if path and os.path.isdir(path):
        return sorted(os.path.join(path, name) for name in os.listdir(path))
    return path


def check_clobber(reads, writes):
    """:func:`clash` as an exception (:class:`OutputClash`) for code without a parser."""
    message = clash(reads, writes)
    if message:
        raise OutputClash(message)


def refuse_clobber(parser, reads, writes, files=False):
    """:func:`clash` through ``parser.error`` (exit 2, one line naming both flags); with ``files``
    (the writes are files, written into folders the command does not make), :func:`unwritable`
    too."""
    message = clash(reads, writes) or (unwritable(writes) if files else None)
    if message:
        parser.error(message)


def unwritable(files):
    """The message of the first of ``files`` (``[(flag, path or [paths] or None)]``: outputs that
    are files, written into a folder that the command does not make) that is a folder or whose
    folder does not exist, or None."""
    for flag, path in _paths(files):
        if os.path.isdir(path):
            return f"{flag} {path} is a folder"
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            return f"{flag} {path}: its folder does not exist"
    return None


def refuse_unwritable(parser, files):
    """:func:`unwritable` through ``parser.error``, before any work: a command must not do its
    work and then fail to write it (``fairseq-sum-score --json new/x.json`` scored everything, then
    raised ``FileNotFoundError``)."""
    message = unwritable(files)
    if message:
        parser.error(message)
