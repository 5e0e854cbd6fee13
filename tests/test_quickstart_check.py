"""recipes/aclsum/quickstart_check.py: the quickstart's last lines."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(REPO, "recipes", "aclsum", "quickstart_check.py")
spec = importlib.util.spec_from_file_location("quickstart_check", PATH)
qc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(qc)


def rouge(r1, r2, rl, delta=None, p=0.001, lower=None):
    out = {"rouge1": r1 / 100, "rouge2": r2 / 100, "rougeL": rl / 100}
    if delta is not None:
        out["specificity"] = {"own": delta + 1, "other": 1.0, "delta": delta, "p": p,
                              "lower": delta - 0.4 if lower is None else lower, "level": 0.95}
    return out


def vs(r2, p2=0.01):
    """A paired result against Lead-3 in ROUGE points (ROUGE-1 and L fixed)."""
    return {"rouge1": {"diff": -3.03, "p": 0.001}, "rouge2": {"diff": r2, "p": p2},
            "rougeL": {"diff": -2.65, "p": 0.002}}


def use(gain, distinct, n=100, nll=8.11):
    return {"gain": gain, "distinct": distinct, "hypotheses": n, "nll_own": nll}


def baselines(random_delta=4.6, bag_nll=8.74):
    """Lead-3 and the generic summary as measured on the quickstart's test papers (issue
    figures)."""
    return {
        "documents": 100,
        "random_delta": random_delta,
        "random_draws": {"seeds": list(range(1, 21)), "mean": random_delta,
                         "min": random_delta - 1, "max": random_delta + 1},
        "bag_of_pieces": {"nll": bag_nll},
        "systems": {
            "lead3": {**rouge(29.72, 7.41, 26.37), "specificity": {"delta": 6.26}},
            "generic": {**rouge(30.92, 3.82, 27.77), "specificity": {"delta": 0.0}},
        },
    }


def test_pinned_run_must_equal_a_measured_cpus_figures_to_the_last_digit():
    same = qc.lines(rouge(25.64, 4.70, 23.12), use(0.654, 100), pinned=True, defaults=True)
    assert "the same as measured on the Intel Xeon, AVX-512" in same[0]
    # one hundredth of ROUGE-2 off, or the gain's third decimal: different
    assert "DIFFERENT from" in qc.lines(rouge(25.64, 4.71, 23.12), use(0.654, 100), True, True)[0]
    assert "DIFFERENT from" in qc.lines(rouge(25.64, 4.70, 23.12), use(0.655, 100), True, True)[0]


def test_each_pinned_figure_is_named_with_the_cpu_it_was_measured_on():
    """Before: one expected set (the Intel Xeon's), so the AMD EPYC's own pinned run, 26.69/5.10/
    23.72 with gain 0.636, printed DIFFERENT; the two CPU models part after 150 updates."""
    amd = qc.lines(rouge(26.69, 5.10, 23.72), use(0.636, 100), True, True)[0]
    assert "the same as measured on the AMD EPYC, AVX-512" in amd
    # the Intel figures with the AMD gain match neither run
    mixed = qc.lines(rouge(25.64, 4.70, 23.12), use(0.636, 100), True, True)[0]
    assert "DIFFERENT from every pinned run measured" in mixed
    assert "25.64/4.70/23.12, 0.654, 100 on the Intel Xeon" in mixed
    assert "26.69/5.10/23.72, 0.636, 100 on the AMD EPYC" in mixed
    # not the default settings: no figures are expected, whatever they are
    assert "no expected figures" in qc.lines(rouge(26.69, 5.10, 23.72), use(0.636, 100), True,
                                              False)[0]


def test_unpinned_run_is_judged_by_the_measured_rouge1_tolerance():
    assert (
        "inside the expected 25.00 +- 2.1"
        in qc.lines(rouge(27.03, 5.0, 24.1), use(0.64, 100), False, True)[0]
    )
    assert (
        "OUTSIDE the expected 25.00 +- 2.1"
        in qc.lines(rouge(22.80, 4.0, 21.0), use(0.64, 100), False, True)[0]
    )


def test_other_settings_have_no_expected_figures():
    out = qc.lines(rouge(20.0, 3.0, 18.0), use(0.0, 1), True, False)
    assert out[0].endswith("not the default settings, no expected figures")


def test_the_last_lines_give_rouge_beside_lead3_and_the_generic_summary_and_the_verdict():
    out = qc.lines(rouge(25.64, 4.70, 23.12, delta=3.0), use(0.654, 100), True, True, baselines())
    assert out[1] == (
        "[quickstart] ROUGE-1/2/L 25.64/4.70/23.12 beside Lead-3 29.72/7.41/26.37 and the generic "
        "summary 30.92/3.82/27.77 (one training abstract for every paper), on the same 100 test "
        "papers"
    )
    assert out[2].startswith(
        "[quickstart] specific to its document: yes (ROUGE-2 specificity +3.00, its 95% one-sided "
        "lower bound +2.60 above the bar 2.30 = max(0.5, mean of 20 random extracts' +4.60 / 2)"
    )
    assert out[2].endswith("against Lead-3: no paired test (no decodings or data given)")
    assert (
        "test NLL 8.110 bits below the bag of pieces' 8.740" in out[2]
        and "reads its papers: yes" in out[2]
    )


def test_a_model_below_the_bar_says_no_and_where_it_stands_between_generic_and_lead3():
    """A delta of 1.37 under a bar of 2.3: ROUGE-2 (4.70 - 3.82) / (7.41 - 3.82),
    specificity 1.37 / 6.26 of the way from the generic summary to Lead-3."""
    out = qc.lines(
        rouge(25.64, 4.70, 23.12, delta=1.37, p=0.0005), use(0.654, 100), True, True, baselines()
    )
    assert out[2].startswith(
        "[quickstart] specific to its document: NO (ROUGE-2 specificity +1.37, its 95% one-sided "
        "lower bound +0.97 NOT above the bar 2.30"
    )
    r2, spec_at = (4.70 - 3.82) / (7.41 - 3.82), 1.37 / 6.26
    assert out[2].endswith(
        f"between the generic summary (0) and Lead-3 (1): ROUGE-2 at {r2:.2f}, "
        f"specificity at {spec_at:.2f}"
    )


@pytest.mark.parametrize(
    "model_use,failed",
    [
        (
            use(1.434, 100, nll=9.92),
            "test NLL 9.920 bits NOT below the bag of pieces' 8.740",
        ),  # the 2-update copy model
        (use(0.0, 1), "reads its papers: NO (source gain 0.000 bits >= 0.3, 1 distinct of 100"),
        (use(0.5, 89), "reads its papers: NO"),  # 89 of 100 distinct
    ],
)
def test_a_model_that_fails_the_nll_or_the_reading_check_is_not_specific(model_use, failed):
    out = qc.lines(rouge(25.64, 4.70, 23.12, delta=3.0), model_use, True, True, baselines())
    assert out[2].startswith("[quickstart] specific to its document: NO") and failed in out[2]


def test_a_delta_above_the_bar_whose_lower_bound_is_not_is_not_specific():
    """The bar is the lower bound's: delta 2.5 > 2.3 with a lower bound of 2.0 fails."""
    out = qc.lines(rouge(25.64, 4.70, 23.12, delta=2.5, lower=2.0), use(0.654, 100), True, True,
                   baselines())
    assert out[2].startswith("[quickstart] specific to its document: NO (ROUGE-2 specificity "
                             "+2.50, its 95% one-sided lower bound +2.00 NOT above the bar 2.30")


def test_the_last_line_carries_the_paired_test_against_lead3_and_says_below_first():
    """Specific but below Lead-3 in ROUGE-2: the line begins so; not specific: the verdict first,
    the test after; a p above 0.05 is no significant difference."""
    out = qc.lines(rouge(25.64, 4.70, 23.12, delta=3.0), use(0.654, 100), True, True, baselines(),
                   vs(-2.31, 0.001))
    assert out[2].startswith("[quickstart] specific to its document but below Lead-3 in ROUGE-2 (")
    assert out[2].endswith("against Lead-3 (paired bootstrap, 1,000 resamples): ROUGE-1/2/L "
                           "-3.03/-2.31/-2.65 (p 0.001/0.001/0.002), ROUGE-2 significantly below")
    out = qc.lines(rouge(25.64, 4.70, 23.12, delta=1.37), use(0.654, 100), True, True, baselines(),
                   vs(-0.31, 0.4))
    assert out[2].startswith("[quickstart] specific to its document: NO (")
    assert "(p 0.001/0.400/0.002), no significant ROUGE-2 difference; between" in out[2]
    out = qc.lines(rouge(25.64, 4.70, 23.12, delta=3.0), use(0.654, 100), True, True, baselines(),
                   vs(+0.5, 0.03))
    assert out[2].startswith("[quickstart] specific to its document: yes (")
    assert out[2].endswith("ROUGE-2 significantly above")
    out = qc.lines(rouge(25.64, 4.70, 23.12, delta=3.0), use(0.654, 100), True, True, baselines(),
                   "not measured (test.out covers 0 sample ids)")
    assert out[2].endswith("against Lead-3: not measured (test.out covers 0 sample ids)")


def test_without_baselines_the_verdict_is_not_measured():
    out = qc.lines(rouge(25.64, 4.70, 23.12, delta=3.0), use(0.654, 100), True, True)
    assert "no baselines to compare with" in out[1] and out[2].startswith(
        "[quickstart] specific to its document: not measured"
    )


@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_the_script_prints_the_lines_from_the_json_files(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(rouge(25.64, 4.70, 23.12, delta=1.37)))
    (tmp_path / "u.json").write_text(json.dumps(use(0.654, 100)))
    (tmp_path / "b.json").write_text(json.dumps(baselines()))
    proc = subprocess.run(
        [
            sys.executable,
            PATH,
            *(str(tmp_path / f) for f in ("r.json", "u.json")),
            "1",
            "1",
            str(tmp_path / "b.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        proc.returncode == 0
        and proc.stdout.count("[quickstart]") == 3
        and "the same as" in proc.stdout
    )
    assert proc.stdout.splitlines()[-1].startswith("[quickstart] specific to its document: NO")


def test_a_lower_bound_at_the_bar_is_marginal_when_the_bands_overlap():
    """The bound 2.35 [2.32, 2.38] against the bar 2.30 of draws 4.0 and 5.2 alternating (sd 0.62:
    band 2.30 -+ 3 x 0.5 x 0.62 / sqrt(20) = 2.09 .. 2.51): neither above nor below."""
    base = baselines()
    base["random_draws"]["deltas"] = [4.0, 5.2] * 10
    r = rouge(25.64, 4.70, 23.12, delta=3.0, lower=2.35)
    r["specificity"]["lower_band"] = [2.32, 2.38]
    out = qc.lines(r, use(0.654, 100), True, True, base)
    assert out[2].startswith(
        "[quickstart] specific to its document: marginal (ROUGE-2 specificity +3.00, its 95% "
        "one-sided lower bound +2.35 at the bar 2.30 = max(0.5, mean of 20 random extracts' "
        "+4.60 / 2) (marginal: the Monte Carlo bands overlap)")
