"""The verdict "specific to its document" in the generated tables (results_index's add_verdicts,
table_block): the lower bound against the bar of the random draws' mean, and the sentence with the
paired test against Lead-3 under every table."""
import json

import numpy as np
import pytest

from ledger import results_index
from fairseq_sum_plugins.scoring import specificity as sp
from test_results_index import _copy, _with_lead3, recomputable  # noqa: F401  (a fixture)


def _with_nll(root):
    """Each run's source_use.json with a test NLL below the bag of pieces' 99 bits."""
    for path in root.glob("t/seed*/*/source_use.json"):
        use = json.load(open(path))
        json.dump({**use, "nll_own": 5.0}, open(path, "w"))


def _baselines(root, mean, deltas=None):
    data = json.load(open(root / "t/baselines.json"))
    deltas = deltas or [mean] * 20
    data["random_draws"] = {"seeds": list(range(1, len(deltas) + 1)), "deltas": deltas,
                            "mean": mean, "min": min(deltas), "max": max(deltas)}
    data["random_delta"] = mean
    data["bag_of_pieces"] = {"nll": 99.0}
    json.dump(data, open(root / "t/baselines.json", "w"))


def test_the_index_verdict_tests_the_lower_bound_against_the_bar_of_the_draws_mean(
        recomputable, tmp_path):  # noqa: F811
    """A bar between a run's lower bound and its delta: not specific (the delta alone would
    pass); a bar below the lower bound: specific. The bar is half the draws' mean, not the first
    draw's delta."""
    root = _copy(recomputable, tmp_path)
    _with_lead3(root)
    _with_nll(root)
    _baselines(root, 0.0)
    record = results_index.build(str(root))["records"][0]
    label, f = "a", record["models"]["a"]  # reads: 4 distinct outputs of 4 (b: 3 of 4)
    spec = f["specificity"][0]
    low, high = spec["lower_band"]
    assert 0.6 < low <= spec["lower"] <= high < spec["delta"]
    for bar, want in (((high + spec["delta"]) / 2, "not specific to its document"),
                      (0.95 * low, "specific to its document"),
                      (spec["lower"], "marginal (at the bar)")):
        # the first draw above the others, the mean at 2 x bar; the draws' spread gives the bar a
        # band of 3 x 0.5 x sd / sqrt(20) = 0.015 x bar either side
        deltas = [2.1 * bar] + [(40 * bar - 2.1 * bar) / 19] * 19
        _baselines(root, 2 * bar, deltas)
        got = results_index.build(str(root))["records"][0]["models"][label]
        assert got["verdict"][0] == want
        assert got["bar"][0]["bar"] == pytest.approx(bar) and got["bar"][0]["draws"] == 20
        assert got["bar"][0]["band_high"] - bar == pytest.approx(
            1.5 * float(np.std(deltas, ddof=1)) / np.sqrt(20))
        assert sp.verdict(spec, 2 * bar, f["nll"][0], 99.0, f["source_gain"][0],
                          f["distinct"][0], 4, deltas)["label"] == want


def test_every_generated_table_states_the_bar_and_each_models_paired_test_against_lead3(
        recomputable, tmp_path):  # noqa: F811
    root = _copy(recomputable, tmp_path)
    _with_lead3(root)
    _with_nll(root)
    _baselines(root, 0.4, [0.2] * 10 + [0.6] * 10)
    assert results_index.main([str(root), "--write"]) == 0
    assert results_index.main([str(root), "--check"]) == 0
    index = json.load(open(root / "index.json"))
    text = (root / "t/results.md").read_text()
    block = text[text.index("<!-- BEGIN"):text.index("<!-- END")]
    assert "specific to its document? per seed" in block and "summarizes" not in block
    assert ("above the bar 0.50 = max(0.5, 0.5 x the mean delta +0.40 of 20 random extracts "
            "(range +0.20 .. +0.60))") in block
    b = index["records"][0]["models"]["b"]
    for seed, (label, vs, first) in enumerate(zip(b["verdict"], b["vs_lead3"], b["vs_first"]), 1):
        r = vs["rouge2"]
        assert f"seed {seed}: {label}; against Lead-3 ROUGE-1/2/L " in block
        assert f"/{r['diff']:+.2f}/" in block and f"/{r['p']:.3f}/" in block
        assert f"seed {seed}: ROUGE-1/2/L {first['rouge1']['diff']:+.2f}/" in block
    assert "Against `a` (the table's baseline model)" in block
    # a model specific to its document but below Lead-3 says so first
    lines = [x for x in block.splitlines() if x.startswith("- `")]
    for line, label in zip(lines, ("a", "b")):
        f = index["records"][0]["models"][label]
        below = [s for s, (v, vs) in enumerate(zip(f["verdict"], f["vs_lead3"]), 1)
                 if v == "specific to its document" and vs["rouge2"]["diff"] < 0]
        assert line.startswith(f"- `{label}` is specific to its document but below Lead-3")\
            == bool(below)


def test_an_extracts_row_prints_its_bar_check_and_the_legend_what_the_column_tests():
    """Before: Lead-3, random 3 sentences and the oracle of results/xsum-read printed "not
    measured" (an extract has no test NLL), hiding that they clear the bar its models fail. The
    committed block is the generator's (results_index --check)."""
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results",
                        "xsum-read", "results.md")
    text = open(path, encoding="utf-8").read()
    rows = {line.split(" | ")[0]: line for line in text.splitlines()
            if line.startswith("| baseline: ")}
    for name in ("Lead-3", "random 3 sentences", "oracle (greedy)"):
        assert rows[f"| baseline: {name}"].endswith(
            "| above the bar (no test NLL) | recomputed from baselines/"
            + {"Lead-3": "lead3", "random 3 sentences": "random3",
               "oracle (greedy)": "oracle"}[name] + ".txt |")
    assert "| no | recomputed from baselines/generic.txt |" in rows["| baseline: generic summary"]
    assert ("The column separates outputs that depend on their document from generic ones and is "
            "no test of summarizing") in text
    assert "| `t5cell+copy` |" in text and "| marginal | 1 of 1 |" in text
