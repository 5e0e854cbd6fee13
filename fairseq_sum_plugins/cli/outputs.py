"""The one output guard of every command that writes a file.

A command declares what it reads and what it writes, each by the flag that names it::

    refuse_clobber(parser, reads=[("--data", args.data), ("SYSTEM", args.systems)],
                   writes=[("--html", args.html), ("--json", args.json)])

and before any work an output that is, or lies inside, a file or folder it reads is refused in one
line naming both flags (``--html B.out is SYSTEM B.out, which this command reads; nothing
written``); so is one file named by two outputs. Paths are compared as the file system resolves
them: through symbolic links (:func:`os.path.realpath`, which also resolves ``bin/../raw``), and for
files that exist by device and inode, so that a hard link to an input is the input. A path of
``None`` or ``""`` (an option not given) is skipped; a list (``nargs``) names several.

Every console script, ``python -m`` tool and recipe step of the plugin calls it right after parsing
its arguments (``tests/test_output_guard.py`` runs every writer against each of its inputs).
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


def clash(reads, writes):
    """The message of the first clash between ``writes`` and ``reads`` (each ``[(flag, path or
    [paths] or None)]``), or None when every output is apart from every input and from the
    others."""
    inputs = [(flag, path, os.path.realpath(path), _identity(path)) for flag, path in _paths(reads)]
    seen = []
    for flag, path in _paths(writes):
        real, ident = os.path.realpath(path), _identity(path)
        for in_flag, in_path, in_real, in_ident in inputs:
            if _within(real, in_real) or (ident is not None and ident == in_ident):
                how = "is" if real == in_real or ident == in_ident else "lies inside"
                return (f"{flag} {path} {how} {in_flag} {in_path}, which this command reads; "
                        "nothing written")
        for out_flag, out_path, out_real, out_ident in seen:
            if real == out_real or (ident is not None and ident == out_ident):
                return f"{flag} {path} and {out_flag} {out_path} name one file; nothing written"
        seen.append((flag, path, real, ident))
    return None


def check_clobber(reads, writes):
    """:func:`clash` as an exception (:class:`OutputClash`) for code without a parser."""
    message = clash(reads, writes)
    if message:
        raise OutputClash(message)


def refuse_clobber(parser, reads, writes):
    """:func:`clash` through ``parser.error`` (exit 2, one line naming both flags)."""
    message = clash(reads, writes)
    if message:
        parser.error(message)
