"""docs/equations.md: every numbered equation of the five papers, with the functions that compute it.

The index names each equation once (``TPT eq. 6``), every function it names exists, and no equation
reference in the package lacks its paper's tag (``eq. 6`` alone is ambiguous between five papers).
"""
import importlib
import os
import re

import pytest

from helpers import REPO

INDEX = os.path.join(REPO, "docs", "equations.md")
# the numbered equations of each paper (shared/papers/*.txt)
PAPERS = {"TPT": 10, "M2M": 17, "ETADS": 12, "TA": 10, "IS": 9}
OTHERS = ("GNMT", "PG", "E&R")  # Wu et al., 2016, See et al., 2017, Erkan & Radev, 2004 (LexRank):
# cited, not indexed
ROW = re.compile(r"^\| (TPT|M2M|ETADS|TA|IS) eq\. (\d+) \|.*\|(.*)\|\s*$")
WHERE = re.compile(r"`([\w/]+\.py)::([\w.]+)`")
REF = re.compile(r"\b[Ee]qs?\.(?=\s*\(?\d)")
TAGGED = re.compile(r"\b(?:%s) $" % "|".join([*PAPERS, *OTHERS]))
NUMBERS = re.compile(r"\b(%s) eqs?\.\s*(\d+(?:-\d+)?(?:,\s*\d+(?:-\d+)?)*)" % "|".join(PAPERS))


def index_rows():
    with open(INDEX, encoding="utf-8") as f:
        return [(m.group(1), int(m.group(2)), WHERE.findall(m.group(3)))
                for m in map(ROW.match, f.read().splitlines()) if m]


def resolve(path, qualname):
    """The object ``qualname`` of the module at ``path`` (relative to the repository)."""
    module = importlib.import_module(path[: -len(".py")].replace("/", "."))
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def package_lines():
    for top in ("fairseq_sum_plugins", "preprocess"):
        for folder, dirs, names in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        yield f"{os.path.relpath(path, REPO)}:{number}", line


def test_the_index_names_every_equation_once():
    rows = index_rows()
    found = sorted((paper, n) for paper, n, _ in rows)
    assert found == sorted((paper, n) for paper, count in PAPERS.items() for n in range(1, count + 1))
    assert all(where for _, _, where in rows), [f"{p} eq. {n}" for p, n, w in rows if not w]


@pytest.mark.parametrize("path,qualname", sorted({w for _, _, where in index_rows() for w in where}))
def test_every_function_of_the_index_exists(path, qualname):
    assert os.path.exists(os.path.join(REPO, path)), path
    assert callable(resolve(path, qualname)), f"{path}::{qualname}"


def test_no_equation_reference_without_its_paper():
    bare = [f"{where}: {line.strip()}" for where, line in package_lines()
            for m in REF.finditer(line) if not TAGGED.search(line[: m.start()])]
    assert bare == []


def test_tagged_references_name_equations_the_paper_has():
    wrong = []
    for where, line in package_lines():
        for m in NUMBERS.finditer(line):
            numbers = [int(n) for part in m.group(2).split(",") for n in part.strip().split("-")]
            if not all(1 <= n <= PAPERS[m.group(1)] for n in numbers):
                wrong.append(f"{where}: {m.group(0)}")
    assert wrong == []


def test_the_checks_see_a_bare_reference_and_a_wrong_number():
    line = "gated attention (eq. 6), see IS eq. 6 and TA eq. 12"
    assert [m.start() for m in REF.finditer(line) if not TAGGED.search(line[: m.start()])] == [line.index("eq. 6")]
    assert [m.group(0) for m in NUMBERS.finditer(line)] == ["IS eq. 6", "TA eq. 12"]
