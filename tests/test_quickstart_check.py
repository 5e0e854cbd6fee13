"""recipes/aclsum/quickstart_check.py: the quickstart's last lines."""
import importlib.util
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(REPO, "recipes", "aclsum", "quickstart_check.py")
spec = importlib.util.spec_from_file_location("quickstart_check", PATH)
qc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(qc)


def rouge(r1, r2, rl):
    return {"rouge1": r1 / 100, "rouge2": r2 / 100, "rougeL": rl / 100}


def use(gain, distinct, n=100):
    return {"gain": gain, "distinct": distinct, "hypotheses": n}


def test_pinned_run_must_equal_the_expected_figures_to_the_last_digit():
    same = qc.lines(rouge(26.69, 5.10, 23.72), use(0.636, 100), pinned=True, defaults=True)
    assert same[0].startswith("[quickstart] reads its papers: yes (source gain 0.636")
    assert "the same as the expected 26.69/5.10/23.72, 0.636, 100" in same[1]
    # one hundredth of ROUGE-2 off, or the gain's third decimal: different
    assert "DIFFERENT from" in qc.lines(rouge(26.69, 5.11, 23.72), use(0.636, 100), True, True)[1]
    assert "DIFFERENT from" in qc.lines(rouge(26.69, 5.10, 23.72), use(0.637, 100), True, True)[1]


def test_unpinned_run_is_judged_by_the_measured_rouge1_tolerance():
    assert "inside the expected 25.00 +- 2.1" in qc.lines(rouge(27.03, 5.0, 24.1), use(0.64, 100), False, True)[1]
    assert "OUTSIDE the expected 25.00 +- 2.1" in qc.lines(rouge(22.80, 4.0, 21.0), use(0.64, 100), False, True)[1]


def test_a_model_that_does_not_read_says_no_and_other_settings_have_no_expected_figures():
    out = qc.lines(rouge(20.0, 3.0, 18.0), use(0.0, 1), True, False)
    assert out[0].startswith("[quickstart] reads its papers: NO (source gain 0.000 bits >= 0.3, 1 distinct")
    assert out[1].endswith("not the default settings, no expected figures")
    assert "NO" in qc.lines(rouge(20.0, 3.0, 18.0), use(0.5, 89), True, True)[0]  # 89 of 100 distinct


def test_the_script_prints_the_lines_from_the_two_json_files(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(rouge(26.69, 5.10, 23.72)))
    (tmp_path / "u.json").write_text(json.dumps(use(0.636, 100)))
    proc = subprocess.run([sys.executable, PATH, str(tmp_path / "r.json"), str(tmp_path / "u.json"), "1", "1"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.count("[quickstart]") == 2 and "the same as" in proc.stdout
