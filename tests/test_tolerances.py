"""Every float tolerance of the suite says why it is that size (tests/tolerances.py).

A bare ``atol=1e-5`` holds on the CPU it was tried on and says nothing of the others: the README's
test command failed on an AVX2-only CPU by an absolute 1e-5 that should have been relative to the
logits (issue 31, item 7). This lint fails on a numeric tolerance literal in tests/*.py that has
neither a name from tests/tolerances.py on its line nor an inline ``# tol: <reason>`` comment.
"""
import ast
import glob
import os
import re

import tolerances

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE_KEYWORDS = {"atol", "rtol", "abs", "rel"}
# a tolerance passed by position: approx(x, rel), allclose(a, b, rtol, atol)
FIRST_POSITIONAL_TOLERANCE = {"approx": 1, "allclose": 2, "isclose": 2, "assert_close": 2,
                              "assert_allclose": 2}
# ``diff < 1e-5``: a float written with an exponent, compared with <, <=, >, >= (``p < 0.01``, a
# significance level, and ``rougeL < 0.6``, a bound, are claims, not tolerances)
EXPONENT = re.compile(r"^\d+(?:\.\d*)?[eE]-\d+$")
REASON = re.compile(r"#\s*tol:\s*\S")
NAMES = {n for n in vars(tolerances) if not n.startswith("_") and n != "torch"}


def _numbers(node):
    """The nonzero numeric literals in ``node`` (zero is exact: rtol=0), unless it names a
    tolerance of tests/tolerances.py."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    if names & NAMES:
        return []
    return [n for n in ast.walk(node) if isinstance(n, ast.Constant)
            and type(n.value) in (int, float) and n.value != 0]


def _callee(call):
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _tolerance_nodes(tree, text):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in TOLERANCE_KEYWORDS and _numbers(kw.value):
                    yield node
            first = FIRST_POSITIONAL_TOLERANCE.get(_callee(node))
            if first is not None and any(_numbers(a) for a in node.args[first:]):
                yield node
        elif isinstance(node, ast.Compare):
            if any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
                small = [c for side in [node.left] + node.comparators for c in _numbers(side)
                         if EXPONENT.match(ast.get_source_segment(text, c) or "")]
                if small:
                    yield node


def bare_tolerances(text):
    """Line numbers (1-based) of ``text`` with a numeric tolerance literal and no reason: no
    name from tests/tolerances.py in it and no ``# tol: why`` comment on its lines."""
    lines = text.splitlines()
    found = set()
    for node in _tolerance_nodes(ast.parse(text), text):
        span = lines[node.lineno - 1 : node.end_lineno]
        if not any(REASON.search(line) for line in span):
            found.add(node.lineno)
    return sorted(found)


def test_the_lint_finds_bare_tolerances_and_accepts_reasons():
    flagged = [
        "assert torch.allclose(a, b, atol=1e-5)",
        "np.testing.assert_allclose(x, y, rtol=1e-4)",
        "assert x == pytest.approx(y, abs=1e-12)",
        "assert x == pytest.approx(y, rel=0.35)",
        "assert x == pytest.approx(y, 1e-3)",
        "assert torch.allclose(a, b, 1e-5)",
        "assert (a - b).abs().max() < 1e-5",
        "assert worst <= 1e-4",
        "assert abs(f - expected) < 1e-5 * max(1, abs(expected))",
        "TOL = dict(rtol=1e-6, atol=1e-6)",
    ]
    for line in flagged:
        assert bare_tolerances(line) == [1], line
    accepted = [
        "assert torch.allclose(a, b, atol=fp32_tol(b))",
        "assert (a - b).abs().max() < fp32_tol(logits, MODEL_ULPS)",
        "assert x == pytest.approx(y, abs=1e-12)  # tol: float64 sums, 45 ulps of 100",
        "np.testing.assert_allclose(m, HAND, rtol=0, atol=0)",
        "assert x == pytest.approx(5 / 6)",
        "assert torch.allclose(a, b)",
        "# assert torch.allclose(a, b, atol=1e-5)",
        "assert len(x) < 10 and y > 0.5 and r['p'] < 0.01",
        "assert abs(f - expected) < fp32_tol(expected, OP_ULPS)",
    ]
    for line in accepted:
        assert bare_tolerances(line) == [], line


def test_every_tolerance_in_the_suite_has_a_reason():
    bare = []
    for path in sorted(glob.glob(os.path.join(HERE, "*.py"))):
        if os.path.basename(path) in ("tolerances.py", "test_tolerances.py"):
            continue
        with open(path, encoding="utf-8") as f:
            bare += [f"{os.path.basename(path)}:{n}" for n in bare_tolerances(f.read())]
    assert not bare, (
        f"{len(bare)} tolerances without a reason (use tests/tolerances.py or `# tol: why`): "
        + ", ".join(bare))
