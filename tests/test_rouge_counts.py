"""The default backend ``rouge155-py`` (scoring/rouge_counts.py) counts as Google's ``rouge_score``
package did over the same tokenizer, bit for bit; ``rouge-score`` stays its deprecated name
(command line, fairseq options, JSON files that record it)."""
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fairseq_sum_plugins.scoring import rouge as R
from fairseq_sum_plugins.scoring import rouge_counts as C
from tolerances import approx64

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "results" / "quickstart"
METRICS = {"rouge1": "rouge1", "rouge2": "rouge2", "rougeL": "rougeLsum", "rougeL_plain": "rougeL"}


def google_scores(hyp_sents, ref_sents):
    """Google's package over this package's tokenizer: what the backend computed before."""
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(list(METRICS.values()), tokenizer=R.RougeTokenizer())
    s = scorer.score("\n".join(ref_sents), "\n".join(hyp_sents))
    return {ours: tuple(s[theirs]) for ours, theirs in METRICS.items()}


def ours(hyp_sents, ref_sents):
    return {m: tuple(score) for m, score in C.pair_scores(hyp_sents, ref_sents).items()}


def random_summary(rng, words):
    return [" ".join(rng.choice(words) for _ in range(rng.randint(0, 9)))
            for _ in range(rng.randint(1, 4))]


def test_random_pairs_score_as_google_rouge_score_bit_for_bit():
    rng = random.Random(7)
    words = "the a cat cats sat sits on mat mats . , dog running runs ran 2 é über".split()
    for _ in range(400):  # few words, so that pairs share words and LCSs tie
        hyp, ref = random_summary(rng, words), random_summary(rng, words)
        assert ours(hyp, ref) == google_scores(hyp, ref), (hyp, ref)


def test_committed_decodings_score_as_google_rouge_score_bit_for_bit():
    scorer = R.Scorer(detok=False)
    hyps = (QUICKSTART / "seed1-150" / "decodings.txt").read_text(encoding="utf-8").splitlines()
    refs = (QUICKSTART / "references.txt").read_text(encoding="utf-8").splitlines()
    hyp_sents, ref_sents = scorer.pairs(hyps, refs)
    for h, r in zip(hyp_sents, ref_sents):
        assert ours(h, r) == google_scores(h, r)


def test_bit_parallel_lcs_gives_every_cell_and_read_back_of_the_table():
    """lcs_columns' cells equal the dynamic programme's (every cell), and lcs_positions reads back
    the same subsequence as the full table (ties included: few distinct tokens, so many), on random
    pairs up to 130 tokens (past a 64-bit word) and the empty cases; by hand, "a b c b" against
    "b c a b": LCS 3 ("b c b")."""
    rng = random.Random(11)
    for n in range(300):
        ref = [rng.choice("abcd") for _ in range(rng.randint(0, 130 if n % 10 == 0 else 12))]
        hyp = [rng.choice("abcde") for _ in range(rng.randint(0, 130 if n % 7 == 0 else 12))]
        table, columns = C.lcs_table(ref, hyp), C.lcs_columns(ref, hyp)
        assert [[C._cell(columns, i, j) for j in range(len(hyp) + 1)]
                for i in range(len(ref) + 1)] == table
        assert C.lcs_length(ref, hyp) == table[-1][-1]
        assert C.lcs_positions(ref, hyp) == C.lcs_positions_reference(ref, hyp)
    assert C.lcs_length(list("abcb"), list("bcab")) == 3
    assert C.lcs_positions(list("abcb"), list("bcab")) == [1, 2, 3]


def test_a_pair_scored_again_is_looked_up_and_the_kept_pairs_are_bounded(monkeypatch):
    """pair_scores keeps what score_pair computes, under a digest of both sentence lists: a second
    call gives equal scores without scoring (score_pair not called), a caller's change to the
    returned dict does not reach the next call, a pair that differs in one sentence boundary is
    scored anew, and only the last PAIRS_KEPT pairs are kept."""
    monkeypatch.setattr(C, "_KEPT", type(C._KEPT)())
    monkeypatch.setattr(C, "PAIRS_KEPT", 2)
    calls = []
    score_pair = C.score_pair
    monkeypatch.setattr(C, "score_pair", lambda h, r: calls.append((h, r)) or score_pair(h, r))
    hyp, ref = ["mat", "the cat"], ["the cat mat"]  # summary-level LCS: 3 hits; joined: 2
    first = C.pair_scores(hyp, ref)
    assert first == score_pair(hyp, ref) and len(calls) == 1
    first["rouge1"] = None
    assert C.pair_scores(hyp, ref) == score_pair(hyp, ref) and len(calls) == 1
    joined = C.pair_scores(["mat the cat"], ref)  # the same words, one sentence
    assert len(calls) == 2 and joined["rougeL"] != score_pair(hyp, ref)["rougeL"]
    C.pair_scores(["rain"], ref)
    assert len(C._KEPT) == 2  # the first pair, used least recently, is gone
    C.pair_scores(hyp, ref)
    assert len(calls) == 4


def test_summary_level_lcs_by_hand():
    # reference sentence "a b c d" against hypothesis sentences "a b x" and "c y d": the union of
    # the two LCSs covers all four words; "e f" has no match: 4 hits of 6 reference and 6
    # hypothesis tokens
    s = C.rouge_lsum([["a", "b", "c", "d"], ["e", "f"]], [["a", "b", "x"], ["c", "y", "d"]])
    assert (s.precision, s.recall, s.fmeasure) == (4 / 6, 4 / 6, 2 * (4 / 6) ** 2 / (8 / 6))
    # a word matched in two hypothesis sentences counts once per copy in the reference
    s = C.rouge_lsum([["a", "b"]], [["a"], ["a", "b"]])
    assert (s.precision, s.recall) == (2 / 3, 1.0)
    assert C.rouge_lsum([], [["a"]]) == C.ZERO and C.rouge_lsum([[]], [["a"]]) == C.ZERO


def test_the_old_name_is_an_alias():
    assert R.Scorer("rouge-score") == R.Scorer() and R.Scorer().backend == "rouge155-py"
    with pytest.raises(ValueError, match="unknown scorer 'rouge_score'"):
        R.Scorer("rouge_score")


@pytest.mark.parametrize("name", ["rouge155-py", "rouge-score", None])
def test_the_command_line_takes_both_names_and_records_the_new_one(tmp_path, name):
    hyp, ref, out = tmp_path / "hyp.txt", tmp_path / "ref.txt", tmp_path / "out.json"
    hyp.write_text("the cat sat on the mat\na dog ran\n")
    ref.write_text("the cat lay on the mat\na dog runs fast\n")
    argv = ["--hyp", str(hyp), "--ref", str(ref), "--json", str(out), "--bootstrap-samples", "0"]
    proc = subprocess.run([sys.executable, "-m", "fairseq_sum_plugins.scoring.score", *argv]
                          + (["--scorer", name] if name else []),
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert ("deprecated name of 'rouge155-py'" in proc.stderr) == (name == "rouge-score")
    saved = json.loads(out.read_text())
    assert saved["scorer"] == "rouge155-py"
    # line 1: 5 of 6 words each side; line 2: "a dog" of 3 and 4 words (ran/runs: "ran" is too
    # short to stem) -> F1 2/3 * 1/2 * 2 / (2/3 + 1/2) = 4/7
    assert saved["rouge1"] == approx64((5 / 6 + 4 / 7) / 2)


def test_a_json_that_records_the_old_name_reads_as_the_new_one():
    old = json.loads((QUICKSTART / "seed1-150" / "test.out.rouge.json").read_text())
    assert old["scorer"] == "rouge-score"  # as committed
    assert R.backend_name(old["scorer"], False) == "rouge155-py"


def test_a_parser_that_names_only_the_old_name_takes_both():
    """A command that offers only ``("rouge-score",)`` (decodings.py) offers the backend itself."""
    import argparse

    p = argparse.ArgumentParser()
    R.add_scorer_options(p, ("rouge-score",))
    for argv in ([], ["--scorer", "rouge155-py"], ["--scorer", "rouge-score"]):
        assert p.parse_args(argv).scorer == "rouge155-py"
    with pytest.raises(SystemExit):
        p.parse_args(["--scorer", "official"])


def test_the_scorer_help_names_only_the_backends_the_command_offers():
    """Before: decodings.py, which offers the default backend alone, said in its help that
    ``official`` (ROUGE-1.5.5 itself) was one, and argparse then refused it."""
    import argparse

    def help_of(backends):
        p = argparse.ArgumentParser()
        R.add_scorer_options(p, backends)
        return " ".join(p.format_help().split())

    assert "official (ROUGE-1.5.5 itself)" not in help_of(("rouge-score",))
    assert "rouge155-py (default" in help_of(("rouge-score",))
    assert "official (ROUGE-1.5.5 itself)" in help_of(R.BACKENDS)


def test_no_option_list_or_recipe_comment_names_the_default_backend_by_its_old_name():
    """Before: gate_sweep's docstring listed ``--scorer rouge-score|official`` and the newsroom
    sweep's header said it scored with rouge-score. The old name may stand as the deprecated alias
    (a shell ``case`` that accepts it), not as what a command scores with."""
    import re

    said = re.compile(r"rouge-score\s*\||: rouge-score,")
    paths = sorted((REPO / "fairseq_sum_plugins").rglob("*.py")) + sorted(
        (REPO / "recipes").rglob("*.sh"))
    found = [str(p.relative_to(REPO)) for p in paths
             if said.search(" ".join(p.read_text(encoding="utf-8").split()))]
    assert found == []
