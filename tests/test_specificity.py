"""ROUGE-2 reference specificity and the verdict "summarizes" (scoring/specificity.py), checked by
hand."""

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
def spec(delta, p=0.001):
    return {"own": delta, "other": 0.0, "delta": delta, "p": p}


def test_the_bar_is_half_the_random_extracts_delta_with_a_floor_of_half_a_point():
    assert sp.specificity_bar(4.6) == approx64(2.3) and sp.specificity_bar(0.6) == 0.5
    assert sp.specificity_bar(None) is None


@pytest.mark.parametrize(
    "kwargs,summarizes,failed",
    [
        (dict(spec=spec(3.0), nll=8.0, bag_nll=9.0, gain=0.6, distinct=100, outputs=100), True, []),
        # the trained quickstart model's delta 1.37 under a bar of 2.3 (ACLSum's random extract:
        # 4.6)
        (
            dict(spec=spec(1.37), nll=8.0, bag_nll=9.0, gain=0.6, distinct=100, outputs=100),
            False,
            ["specific"],
        ),
        (
            dict(spec=spec(3.0, p=0.02), nll=8.0, bag_nll=9.0, gain=0.6, distinct=100, outputs=100),
            False,
            ["specific"],
        ),
        # a 2-update copy model: reads (gain 1.43, 100 distinct), NLL above the bag of pieces
        (
            dict(spec=spec(0.27), nll=9.92, bag_nll=9.0, gain=1.43, distinct=100, outputs=100),
            False,
            ["specific", "beats_bag"],
        ),
        # a generic summary: one text
        (
            dict(spec=spec(0.0, p=1.0), nll=8.0, bag_nll=9.0, gain=0.0, distinct=1, outputs=100),
            False,
            ["specific", "reads"],
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
            ["specific"],
        ),
    ],
)
def test_the_verdict_needs_specificity_nll_below_the_bag_and_reading(kwargs, summarizes, failed):
    v = sp.verdict(random_delta=4.6, **kwargs)
    assert v["summarizes"] is summarizes
    assert sorted(k for k, c in v["checks"].items() if c is False) == sorted(failed)
    assert (
        v["label"]
        == {True: "summarizes", False: "does not summarize", None: "not measured"}[summarizes]
    )
    assert v["bar"] == approx64(2.3) and len(v["reasons"]) == sum(
        c is not True for c in v["checks"].values()
    )
    json.dumps(v)


def test_without_a_random_extract_the_specificity_check_is_not_measured():
    v = sp.verdict(spec(3.0), None, nll=8.0, bag_nll=9.0, gain=0.6, distinct=100, outputs=100)
    assert v["summarizes"] is None and v["checks"]["specific"] is None and v["bar"] is None


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
