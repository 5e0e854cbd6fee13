"""The tools' old paths (``fairseq_sum_plugins.analysis.X``) keep working for one release, each with a
one-line notice naming the new module (fairseq_sum_plugins/analysis/__init__.py)."""
import importlib
import os
import subprocess
import sys
import warnings

import pytest

from helpers import REPO

from fairseq_sum_plugins.analysis import MOVED


def test_every_old_module_has_its_forward_and_every_target_exists():
    folder = os.path.join(REPO, "fairseq_sum_plugins", "analysis")
    old = sorted(n[:-3] for n in os.listdir(folder) if n.endswith(".py") and n != "__init__.py")
    assert old == sorted(MOVED) and len(old) == 25  # the 25 modules of the flat folder
    for new in MOVED.values():
        assert importlib.util.find_spec(new) is not None, new


def test_an_old_import_warns_and_gives_the_new_module():
    sys.modules.pop("fairseq_sum_plugins.analysis.compare", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from fairseq_sum_plugins.analysis import compare as old
    from fairseq_sum_plugins.evaluation import compare as new
    assert old is new
    notes = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert any("fairseq_sum_plugins.analysis.compare has moved to "
               "fairseq_sum_plugins.evaluation.compare" in n for n in notes), notes


@pytest.mark.parametrize("old, new, flag", [
    ("compare", "fairseq_sum_plugins.evaluation.compare", "--bootstrap-samples"),
    ("baselines", "fairseq_sum_plugins.evaluation.baselines.systems", "--jsonl"),
    ("results_index", "ledger.results_index", "--check"),
])
def test_python_m_of_an_old_path_runs_the_new_tool_after_one_notice(old, new, flag):
    proc = subprocess.run([sys.executable, "-m", f"fairseq_sum_plugins.analysis.{old}", "--help"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        line for line in proc.stderr.strip().splitlines() if f"has moved to {new}" in line]
    assert len(proc.stderr.strip().splitlines()) == 1 and flag in proc.stdout
