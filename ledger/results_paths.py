"""Machine paths in committed results: a file under ``results/`` that records an absolute path of
the machine that wrote it (``/work/runs/xsum``, ``/home/me/x``, ``~/data``, ``C:\\runs``,
``C:/runs``) fails ``results_index --check``, naming the file and the JSON key
(``systems.lead1.source``) or the line. What identifies data in a result is its hash and the
command that made it, with the folders as placeholders (``WORK``, ``RUN``), never where it lay.

A link whose target is absolute fails too, a link to a folder included (the walk does not enter
it). Every file is read except those that are not text (a NUL byte or not UTF-8: images) and the
texts of documents and outputs (:data:`TEXTS`: ``decodings.txt``, ``references.txt``,
``sources.txt`` and the extracts ``baselines/NAME.txt``), whose words are data ("the relation
/people/person/place" of a paper) and whose hashes tie them to their runs. An absolute path is a
``/`` that no letter, digit, ``.``, ``~``, ``:``, ``/``, ``<``, ``\\``, ``}`` or ``-`` precedes,
followed by at least two names (``/tmp/qs``: a single ``/name`` is too often a unit, as in
"tokens /s"); a drive letter's ``C:\\`` or ``C:/`` and a ``file://`` URL are one; a web URL's
path (``https://host/a/b``), an HTML closing tag (``</td>``) and a path under a placeholder (a step
record's ``{root}/base/test.out``, fairseq_sum_plugins/cli/run_spec.py) are not.
"""
import json
import os
import re

ABSOLUTE = re.compile(r"(?<![\w.~:/<\\}-])/[\w.+-]+(?:/[\w.+-]+)+|(?<![\w.])~/[\w.+-]+"
                      r"|\b[A-Za-z]:(?:\\\\?|/)[\w.+-]+|\bfile://[^\s\"'<>)]+")


TEXTS = ("decodings.txt", "references.txt", "sources.txt")


def _is_text_data(path):
    name, parent = os.path.basename(path), os.path.basename(os.path.dirname(path))
    return name in TEXTS or (parent == "baselines" and name.endswith(".txt"))


def paths_in(text):
    """The absolute paths in ``text``."""
    return [m.group(0) for m in ABSOLUTE.finditer(text)]


def _json_strings(value, key=""):
    """(key path, string) of every string of a JSON value, keys included."""
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{key}.{k}" if key else str(k)
            yield where + " (the key)", str(k)
            yield from _json_strings(v, where)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _json_strings(v, f"{key}[{i}]")
    elif isinstance(value, str):
        yield key, value


def _text(path):
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def check_paths(root):
    """Failures: every absolute path in a text file under ``root``, as "FILE: key K: PATH"
    (JSON) or "FILE:LINE: PATH"."""
    fails = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in sorted(files + links):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                target = os.readlink(path)
                if os.path.isabs(target) or paths_in(target):
                    fails.append(f"{rel}: a link to the machine path '{target}'")
                continue
            if not os.path.isfile(path) or _is_text_data(path):
                continue
            text = _text(path)
            if text is None:
                continue
            if name.endswith(".json"):
                try:
                    data = json.loads(text)
                except ValueError:
                    data = None
                if data is not None:
                    fails += [f"{rel}: key {key!r} holds the machine path '{p}'"
                              for key, s in _json_strings(data) for p in paths_in(s)]
                    continue
            for number, line in enumerate(text.splitlines(), 1):
                fails += [f"{rel}:{number}: the machine path '{p}'" for p in paths_in(line)]
    return fails
