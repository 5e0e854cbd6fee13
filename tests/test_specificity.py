"""ROUGE-2 reference specificity and the verdict "specific to its document"
(scoring/specificity.py), checked by hand."""

import json

import numpy as np
import pytest

from fairseq_sum_plugins.scoring import rouge
from fairseq_sum_plugins.scoring import specificity as sp
from tolerances import approx64, fp64_tol

# words of at most 3 letters: no stemming, so every bigram below is what it reads
REFS = [["a b c"], ["b c d"], ["x y z"]]
HYPS = [["a b c"], ["b c d e"], ["x y"]]
# by hand: row = output, column = reference, ROUGE-2 F1 x 100
#   out 0 {ab, bc}      vs ref 0 {ab, bc}: P 2/2 R 2/2 -> 100;  ref 1 {bc, cd}: P 1/2 R 1/2 -> 50;
# ref 2: 0 out 1 {bc, cd, de}  vs ref 0: P 1/3 R 1/2 -> 40;  ref 1: P 2/3 R 2/2 -> 80;  ref 2: 0
#   out 2 {xy}          vs ref 2 {xy, yz}: P 1/1 R 1/2 -> 200/3
HAND = np.array([[100, 50, 0], [40, 80, 0], [0, 0, 200 / 3]])


def counts(texts):
    return [sp.bigram_counts(t) for t in texts]


def test_the_matrix_of_three_documents_equals_the_hand_computation():
    m = sp.BigramMatrix(counts(HYPS), counts(REFS)).matrix()
    np.testing.assert_allclose(m, HAND, rtol=0, atol=fp64_tol(100))  # F1 x 100 in float64


def test_own_other_delta_and_the_permutation_p_of_three_documents_by_hand():
    """own = (100 + 80 + 66.67) / 3, other = (50 + 40) / 6 = 15; of the 6 assignments only the
    identity reaches the observed delta (the others' own: 100, 156.67, 50, 40, 80 summed), so p
    counts the
    identity permutations the seeded generator draws."""
    res = sp.specificity_from_counts(counts(HYPS), counts(REFS), permutations=1000, seed=3)
    own = (100 + 80 + 200 / 3) / 3
    assert res["own"] == pytest.approx(own, abs=fp64_tol(100)) and res["other"] == pytest.approx(
        15, abs=fp64_tol(100)
    )
    assert res["delta"] == pytest.approx(own - 15, abs=fp64_tol(100))
    rng = np.random.default_rng(3)
    identity = sum(list(rng.permutation(3)) == [0, 1, 2] for _ in range(1000))
    assert 100 < identity < 250  # about 1 in 6
    assert res["p"] == (1 + identity) / 1001
    assert (res["permutations"], res["seed"], res["documents"]) == (1000, 3, 3)


def test_repeated_bigrams_count_as_rouge_score_counts_them():
    """min(a, b) per bigram: out 'a b a b a b' has ab x3, ba x2; ref 'a b a b' has ab x2, ba x1:
    overlap 3, P 3/5, R 3/3 -> F1 75."""
    m = sp.BigramMatrix(counts([["a b a b a b"]]), counts([["a b a b"]])).matrix()
    assert m[0, 0] == pytest.approx(75, abs=fp64_tol(100))


def test_the_diagonal_equals_the_scorers_rouge2_and_the_sparse_path_the_dense_one():
    """Stemmed words, sentences, an empty output: M[i, i] is the scorer's ROUGE-2 F1 of document i,
    and the
    path for large test sets (pairs computed from sparse rows) gives the dense path's numbers."""
    refs = [
        "The councils were closing three parks. <sep> Residents said they protested.",
        "A new station opened in the city.",
        "Officers warned drivers about the roads.",
        "The team won the match after a late goal.",
    ]
    hyps = [
        "Three parks were closed by the council. <sep> Residents protested.",
        "The city opened a new station.",
        "",
        "A late goal won the match for the team.",
    ]
    scorer = rouge.Scorer()
    hyp_sents, ref_sents = scorer.pairs(hyps, refs)
    want = scorer.documents(hyp_sents, ref_sents)["rouge2"][:, 2] * 100
    m = sp.BigramMatrix(counts(hyp_sents), counts(ref_sents)).matrix()
    np.testing.assert_allclose(np.diag(m), want, rtol=0, atol=fp64_tol(100))
    dense = sp.specificity_from_counts(counts(hyp_sents), counts(ref_sents), 1000, seed=5)
    sparse = sp.specificity_from_counts(
        counts(hyp_sents), counts(ref_sents), 1000, seed=5, dense_limit=0
    )
    # the same F1s, summed in another order
    assert sparse == pytest.approx(dense, abs=fp64_tol(100))


def test_the_contributions_and_the_one_sided_lower_bound_of_three_documents_by_hand():
    """c_i = M[i, i] - mean_{j != i} M[i, j] of HAND: 100 - 25 = 75, 80 - 20 = 60, 66.67 - 0;
    their mean is the delta. The lower bound is the 5th percentile of the means of 10,000
    resamples of the three documents drawn as numpy's default_rng(data_seed(c)).integers draws
    them (the seed of the contributions, not the permutations' 3); of the 27 equally likely
    resamples one (all document 1) has mean 60, three mean 62.22 (1, 1, 2)."""
    c = sp.contributions(np.diag(HAND), HAND.sum(1))
    np.testing.assert_allclose(c, [75, 60, 200 / 3], rtol=0, atol=fp64_tol(100))
    res = sp.specificity_from_counts(counts(HYPS), counts(REFS), permutations=1000, seed=3)
    assert c.mean() == pytest.approx(res["delta"], abs=fp64_tol(100))
    rng = np.random.default_rng(sp.data_seed(c))
    means = sorted(c[rng.integers(0, 3, 3)].mean() for _ in range(10000))
    # np.percentile's linear rule at position 0.05 * 9999 = 499.95
    want = means[499] + 0.95 * (means[500] - means[499])
    assert res["lower"] == pytest.approx(want, abs=fp64_tol(100))
    assert sum(m == 60 for m in means) < 500 and res["lower"] == pytest.approx(
        (60 + 60 + 200 / 3) / 3, abs=fp64_tol(100))
    assert (res["level"], res["resamples"]) == (0.95, 10000)
    # the Monte Carlo band: the order statistics at ranks 500 -+ 3 sqrt(10000 x 0.05 x 0.95),
    # floor(434.6) and ceil(565.4)
    assert res["lower_band"] == pytest.approx([means[433], means[565]], abs=fp64_tol(100))


def test_equal_contributions_have_a_lower_bound_equal_to_the_delta():
    """Two documents, each output its own reference and nothing of the other's: c = [100, 100],
    every resample's mean is 100."""
    res = sp.specificity([["a b c"], ["x y z"]], [["a b c"], ["x y z"]], permutations=1000)
    assert res["delta"] == approx64(100.0) and res["lower"] == approx64(100.0)


def test_the_delta_alone_and_the_random_draws_mean():
    """specificity_delta is the delta of specificity_from_counts; random_draws averages the
    draws it is given, one per seed (here a fake extract: seed s -> the outputs of HYPS or the
    fixed text, by hand 67.22 and 0)."""
    assert sp.specificity_delta(counts(HYPS), counts(REFS)) == pytest.approx(
        (100 + 80 + 200 / 3) / 3 - 15, abs=fp64_tol(100))
    fixed = [["b c d"]] * 3
    draws = sp.random_draws(HYPS, REFS, lambda s: HYPS if s % 2 else fixed, seeds=[1, 2, 3, 4])
    delta = (100 + 80 + 200 / 3) / 3 - 15
    assert draws["seeds"] == [1, 2, 3, 4]
    np.testing.assert_allclose(draws["deltas"], [delta, 0, delta, 0], rtol=0, atol=fp64_tol(100))
    assert draws["mean"] == pytest.approx(delta / 2, abs=fp64_tol(100))
    assert draws["min"] == pytest.approx(0, abs=fp64_tol(100)) and draws["max"] == approx64(
        draws["deltas"][0])
    assert len(sp.random_draws(HYPS, REFS, lambda s: HYPS)["seeds"]) == sp.RANDOM_DRAWS == 20
    with pytest.raises(ValueError, match="at least one random draw"):
        sp.random_draws(HYPS, REFS, lambda s: HYPS, seeds=[])


def test_a_fixed_text_has_delta_zero_and_p_one():
    hyps = [["b c d"]] * 3
    res = sp.specificity(hyps, REFS, permutations=1000)
    assert res["delta"] == pytest.approx(0, abs=fp64_tol(100)) and res["p"] == 1.0


def test_fewer_than_two_documents_or_unpaired_lists_are_refused():
    with pytest.raises(ValueError, match="at least 2 documents"):
        sp.specificity([["a b"]], [["a b"]])
    with pytest.raises(ValueError, match="2 outputs but 3 references"):
        sp.specificity(HYPS[:2], REFS)


# ----------------------------------------------------------------------------------- verdict
def spec(delta, lower=None, p=0.001):
    lower = delta - 0.5 if lower is None else lower
    return {"own": delta, "other": 0.0, "delta": delta, "lower": lower, "level": 0.95, "p": p}


def test_the_bar_is_half_the_random_extracts_mean_delta_with_a_floor_of_half_a_point():
    assert sp.specificity_bar(4.6) == approx64(2.3) and sp.specificity_bar(0.6) == 0.5
    assert sp.specificity_bar(None) is None
    # the mean of the recorded draws; a file without them: its one draw
    assert sp.random_mean({"random_draws": {"mean": 2.12}, "random_delta": 1.79}) == 2.12
    assert sp.random_mean({"random_delta": 1.79}) == 1.79 and sp.random_mean(None) is None
    assert sp.label_of("summarizes") == "specific to its document"
    assert sp.label_of("does not summarize") == "not specific to its document"


@pytest.mark.parametrize(
    "kwargs,specific,failed",
    [
        (dict(spec=spec(3.0), nll=8.0, bag_nll=9.0, gain=0.6, distinct=100, outputs=100), True, []),
        # the trained quickstart model's delta 1.37 under a bar of 2.3 (ACLSum's random extract:
        # 4.6)
        (
            dict(spec=spec(1.37), nll=8.0, bag_nll=9.0, gain=0.6, distinct=100, outputs=100),
            False,
            ["above_bar"],
        ),
        # a delta above the bar whose lower bound is not: not specific; the permutation p against
        # 0 plays no part (p 0.5 with a lower bound above the bar passes)
        (
            dict(spec=spec(3.0, lower=2.3), nll=8.0, bag_nll=9.0, gain=0.6, distinct=100,
                 outputs=100),
            False,
            ["above_bar"],
        ),
        (
            dict(spec=spec(3.0, lower=2.31, p=0.5), nll=8.0, bag_nll=9.0, gain=0.6, distinct=100,
                 outputs=100),
            True,
            [],
        ),
        # a 2-update copy model: reads (gain 1.43, 100 distinct), NLL above the bag of pieces
        (
            dict(spec=spec(0.27), nll=9.92, bag_nll=9.0, gain=1.43, distinct=100, outputs=100),
            False,
            ["above_bar", "beats_bag"],
        ),
        # a generic summary: one text
        (
            dict(spec=spec(0.0, p=1.0), nll=8.0, bag_nll=9.0, gain=0.0, distinct=1, outputs=100),
            False,
            ["above_bar", "reads"],
        ),
        (
            dict(spec=spec(3.0), nll=None, bag_nll=9.0, gain=0.6, distinct=100, outputs=100),
            None,
            [],
        ),
        (
            dict(spec=spec(3.0), nll=9.5, bag_nll=None, gain=None, distinct=None, outputs=None),
            None,
            [],
        ),
        (
            dict(spec=spec(0.1), nll=None, bag_nll=None, gain=None, distinct=None, outputs=None),
            False,
            ["above_bar"],
        ),
    ],
)
def test_the_verdict_needs_the_lower_bound_above_the_bar_nll_below_the_bag_and_reading(
        kwargs, specific, failed):
    v = sp.verdict(random_delta=4.6, **kwargs)
    assert v["specific"] is specific
    assert sorted(k for k, c in v["checks"].items() if c is False) == sorted(failed)
    assert (
        v["label"]
        == {True: "specific to its document", False: "not specific to its document",
            None: "not measured"}[specific]
    )
    assert v["bar"] == approx64(2.3) and len(v["reasons"]) == sum(
        c is not True for c in v["checks"].values()
    )
    json.dumps(v)


def test_without_a_random_extract_the_specificity_check_is_not_measured():
    v = sp.verdict(spec(3.0), None, nll=8.0, bag_nll=9.0, gain=0.6, distinct=100, outputs=100)
    assert v["specific"] is None and v["checks"]["above_bar"] is None and v["bar"] is None


def test_a_score_file_without_the_lower_bound_is_not_measured_not_guessed():
    old = {"own": 3.0, "other": 0.0, "delta": 3.0, "p": 0.001}  # written before the bound
    v = sp.verdict(old, 4.6, nll=8.0, bag_nll=9.0, gain=0.6, distinct=100, outputs=100)
    assert v["specific"] is None and v["checks"]["above_bar"] is None
    assert "no bootstrap lower bound" in v["reasons"][0]


def test_position_between_the_generic_summary_and_lead3():
    assert sp.position_between(5.10, 3.01, 7.41) == approx64((5.10 - 3.01) / (7.41 - 3.01))
    assert sp.position_between(1.0, 2.0, 2.0) is None and sp.position_between(None, 1, 2) is None


# ---------------------------------------------------------------------------- fairseq-sum-score
def test_fairseq_sum_score_specificity_prints_and_writes_json(tmp_path, capsys):
    from fairseq_sum_plugins.scoring import score

    hyp, ref, out = tmp_path / "hyp.txt", tmp_path / "ref.txt", tmp_path / "s.json"
    hyp.write_text("".join(" ".join(h) + "\n" for h in HYPS))
    ref.write_text("".join(" ".join(r) + "\n" for r in REFS))
    score.main(
        [
            "--hyp",
            str(hyp),
            "--ref",
            str(ref),
            "--specificity",
            "--bootstrap-samples",
            "0",
            "--json",
            str(out),
            "--seed",
            "3",
        ]
    )
    printed = capsys.readouterr().out
    assert "ROUGE-2 specificity: own 82.22, other 15.00, delta +67.22" in printed
    got = json.loads(out.read_text())["specificity"]
    assert got == sp.specificity_from_counts(counts(HYPS), counts(REFS), 1000, 3)
    assert set(got) >= {"own", "other", "delta", "p"}


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--permutations", "999", "--specificity"], "--permutations: must be >= 1000, got 999"),
        (["--permutations", "2000"], "--permutations goes with --specificity"),
    ],
)
def test_fairseq_sum_score_refuses_few_permutations_or_permutations_alone(
    tmp_path, capsys, argv, message
):
    from fairseq_sum_plugins.scoring import score

    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a b\nc d\n")
    with pytest.raises(SystemExit):
        score.main(["--hyp", str(hyp), "--ref", str(hyp), *argv])
    assert message in capsys.readouterr().err


def test_fairseq_sum_score_specificity_of_one_document_is_an_error(tmp_path):
    from fairseq_sum_plugins.scoring import score

    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a b c\n")
    with pytest.raises(SystemExit, match="specificity needs at least 2 documents"):
        score.main(["--hyp", str(hyp), "--ref", str(hyp), "--specificity"])
