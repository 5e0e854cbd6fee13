"""tests/fast_start/sitecustomize.py: the suite's processes start without scikit-learn and
scipy.stats, and every name fairseq takes from them is the real function when used."""
import json
import os
import subprocess
import sys
import types

from conftest import FAST_START, REPO, fast_start_path


def python(code):
    env = dict(os.environ, PYTHONPATH=FAST_START, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fairseq_starts_without_sklearn_and_each_deferred_name_is_the_real_function():
    got = python("""
import json, sys
import fairseq
from fairseq.criterions import sentence_prediction as sp
from fairseq.tasks import audio_classification as ac
loaded = sorted(m for m in ("sklearn", "sklearn.metrics", "scipy.stats") if m in sys.modules)
f1 = sp.f1_score(y_true=[0, 1, 1, 0], y_pred=[0, 1, 0, 0])
r = sp.pearsonr([1.0, 2.0, 4.0], [1.0, 2.0, 3.0])[0]
import sklearn.linear_model, sklearn.metrics  # the real packages, after the stand-ins left
print(json.dumps({"loaded": loaded, "f1": f1, "r": float(r),
                  "real": hasattr(sys.modules["sklearn.metrics"], "__file__"),
                  "roc": ac.sklearn_metrics.roc_curve is sklearn.metrics.roc_curve,
                  "mcc": sp.matthews_corrcoef([0, 1, 1, 0], [0, 1, 0, 0])}))""")
    assert got["loaded"] == []  # fairseq imported: neither package loaded
    # by hand: precision 1/1, recall 1/2 -> F1 2/3; Pearson of (1, 2, 4) and (1, 2, 3):
    # deviations (-4/3, -1/3, 5/3) and (-1, 0, 1): 3 / sqrt(42/9 * 2)
    assert abs(got["f1"] - 2 / 3) < 1e-12  # tol: float64 rounding of one division
    assert abs(got["r"] - 3 / (42 / 9 * 2) ** 0.5) < 1e-12  # tol: float64 rounding
    # Matthews' correlation of labels (0, 1, 0, 0) and predictions (0, 1, 1, 0):
    # TP 1, TN 2, FP 1, FN 0 -> (2 - 0) / sqrt(2 * 1 * 3 * 2) = 2 / sqrt(12)
    assert abs(got["mcc"] - 2 / 12 ** 0.5) < 1e-12  # tol: float64 rounding
    assert got["real"] and got["roc"]


def test_a_process_that_imported_sklearn_first_gets_the_real_names():
    got = python("""
import json, sklearn.metrics, fairseq
from fairseq.criterions import sentence_prediction as sp
print(json.dumps(sp.f1_score is sklearn.metrics.f1_score))""")
    assert got is True


def test_the_suite_puts_fast_start_first_unless_another_sitecustomize_is_found():
    spec = types.SimpleNamespace(origin=os.path.join(FAST_START, "sitecustomize.py"))
    other = types.SimpleNamespace(origin=os.path.join(REPO, "tests", "conftest.py"))
    assert fast_start_path({"PYTHONPATH": "/a" + os.pathsep + "/b"}) == os.pathsep.join(
        [FAST_START, "/a", "/b"])
    assert fast_start_path({}, None) == FAST_START
    assert fast_start_path({"PYTHONPATH": FAST_START}, spec) is None  # there already
    assert fast_start_path({"PYTHONPATH": "/a"}, other) is None  # another one left to run
    assert FAST_START in os.environ["PYTHONPATH"].split(os.pathsep)  # this suite's processes
