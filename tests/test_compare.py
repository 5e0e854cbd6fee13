"""fairseq-sum-compare: paired bootstrap / approximate randomization between two systems."""
import json
import os
import random
import shutil
import struct
import subprocess

import numpy as np
import pytest

from fairseq_sum_plugins.scoring import rouge
from fairseq_sum_plugins.evaluation import compare as C
from tolerances import approx64
from helpers import write_prepared  # noqa: F401

WORDS = [f"word{i}" for i in range(60)]


def _corpus(n=60, seed=0):
    """References and two systems: A replaces 2 words of each reference, B the same 2 plus 4 more."""
    rng = random.Random(seed)
    refs, hyp_a, hyp_b = [], [], []
    for _ in range(n):
        ref = [rng.choice(WORDS) for _ in range(14)]
        pos = rng.sample(range(14), 6)
        a, b = list(ref), list(ref)
        for k, p in enumerate(pos):
            if k < 2:
                a[p] = b[p] = "zzz"
            else:
                b[p] = "yyy"
        refs.append(" ".join(ref))
        hyp_a.append(" ".join(a))
        hyp_b.append(" ".join(b))
    return hyp_a, hyp_b, refs


def _write_generate(path, hyps, refs, order=None):
    with open(path, "w") as f:
        for i in order or range(len(hyps)):
            f.write(f"S-{i}\tsource {i}\nT-{i}\t{refs[i]}\nH-{i}\t-0.5\t{hyps[i]}\nD-{i}\t-0.5\t{hyps[i]}\n")
    return str(path)


def test_document_scores_equal_the_scorer_per_pair():
    hyp_a, _, refs = _corpus(5)
    scores = C.document_scores(hyp_a, refs)
    for i in range(5):
        assert scores["rouge1"][i] == approx64(rouge.rouge_pair(hyp_a[i], refs[i])[0])
    mean = rouge.score_summaries(hyp_a, refs)
    assert scores["rougeL"].mean() == approx64(mean["rougeL"])


def test_identical_systems_have_p_one_and_a_zero_interval():
    hyp_a, _, refs = _corpus()
    for method in ("bootstrap", "ar"):
        res = C.compare_systems(hyp_a, list(hyp_a), refs, method=method, samples=200, trials=500)
        for r in res["metrics"].values():
            assert r["diff"] == 0 and r["ci"] == [0.0, 0.0] and r["p"] == 1.0


def test_strictly_better_system_is_significant_with_both_tests():
    hyp_a, hyp_b, refs = _corpus()
    for method in ("bootstrap", "ar"):
        res = C.compare_systems(hyp_a, hyp_b, refs, method=method, samples=1000, trials=2000)
        for m, r in res["metrics"].items():
            assert r["a"] > r["b"] and r["diff"] == approx64(r["a"] - r["b"])
            assert 0 < r["ci"][0] <= r["diff"] <= r["ci"][1], m
            assert r["p"] < 0.01, (method, m, r)
    # swapping the systems flips the sign, not the p-value
    rev = C.compare_systems(hyp_b, hyp_a, refs, samples=1000)
    assert rev["metrics"]["rouge1"]["diff"] == approx64(-res["metrics"]["rouge1"]["diff"])
    assert rev["metrics"]["rouge1"]["ci"][1] < 0


def test_meteor_is_compared_with_the_scorers_per_document_meteor():
    """METEOR per document equals fairseq_sum_plugins.scoring.meteor on the same cleaned pairs; the better
    system is significantly better in METEOR too."""
    import os

    if not os.path.exists("/usr/share/wordnet/data.noun") and not os.environ.get("WORDNET_DIR"):
        pytest.skip("WordNet (Debian wordnet-base) is not installed")
    from fairseq_sum_plugins.scoring import meteor

    hyp_a, hyp_b, refs = _corpus()
    per = C.document_scores(hyp_a, refs, metrics=("meteor",))["meteor"]
    assert per[0] == approx64(meteor.meteor_pair(hyp_a[0], refs[0]))
    res = C.compare_systems(hyp_a, hyp_b, refs, metrics=("rouge1", "meteor"), samples=500)
    assert res["metrics"]["meteor"]["diff"] > 0 and res["metrics"]["meteor"]["p"] < 0.01


def test_approximate_randomization_by_hand():
    # d = (1, 1): |mean(s * d)| = 1 when both signs agree (prob 1/2), else 0 -> p = 1/2
    # tol: hits ~ Binomial(20000, 1/2): p within 4 sd = 4 * sqrt(0.25 / 20000) = 0.014 (was 0.015)
    assert C.approximate_randomization([1, 1], [0, 0], trials=20000)[1] == pytest.approx(
        0.5, abs=4 * (0.25 / 20000) ** 0.5)  # tol: above
    # d = (1, 0): |mean(s * d)| = 0.5 = |delta| always -> p = 1
    assert C.approximate_randomization([1, 0], [0, 0], trials=100)[1] == 1.0
    # large consistent gain: no random swap reaches it; p = 1 / (1 + R)
    assert C.approximate_randomization(np.ones(40), np.zeros(40), trials=999)[1] == approx64(1e-3)


@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_cli_reads_generate_outputs_and_writes_json_and_png(tmp_path):
    hyp_a, hyp_b, refs = _corpus(40)
    a = _write_generate(tmp_path / "a.out", hyp_a, refs)
    b = _write_generate(tmp_path / "b.out", hyp_b, refs, order=list(range(39, -1, -1)))  # ids in another order
    exe = shutil.which("fairseq-sum-compare")
    assert exe, "console script not installed (pip install -e .)"
    out = subprocess.run([exe, a, b, "--refs", "t-lines", "--json", str(tmp_path / "c.json"), "--png", str(tmp_path / "c.png"),
                          "--bootstrap-samples", "300"], capture_output=True, text=True, check=True)
    assert "ROUGE-1" in out.stdout and "ROUGE-L" in out.stdout
    res = json.loads((tmp_path / "c.json").read_text())
    assert res["num_summaries"] == 40 and set(res["metrics"]) == {"rouge1", "rouge2", "rougeL"}
    assert all(r["p"] < 0.01 for r in res["metrics"].values())
    assert (tmp_path / "c.png").stat().st_size > 1000
    # hypothesis files with --ref give the same numbers
    for name, hyps in (("a.txt", hyp_a), ("b.txt", hyp_b)):
        (tmp_path / name).write_text("\n".join(hyps) + "\n")
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n")
    res2 = C.main([str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--ref", str(tmp_path / "ref.txt"),
                   "--bootstrap-samples", "300"])
    assert res2["metrics"]["rouge2"] == res["metrics"]["rouge2"]


def test_the_table_shows_each_systems_specificity(tmp_path, capsys):
    """fairseq-sum-compare prints and writes the ROUGE-2 specificity of both systems, the same numbers as
    scoring/specificity.py gives each alone (the 3x3 example of tests/test_specificity.py for A; a fixed
    text for B: 50, 100 and 0 against the three references, delta 0, p 1)."""
    from fairseq_sum_plugins.scoring.specificity import specificity

    refs = ["a b c", "b c d", "x y z"]
    (tmp_path / "a.txt").write_text("a b c\nb c d e\nx y\n")
    (tmp_path / "b.txt").write_text("b c d\nb c d\nb c d\n")
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n")
    res = C.main([str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--ref", str(tmp_path / "ref.txt"),
                  "--bootstrap-samples", "10", "--json", str(tmp_path / "c.json"), "--seed", "3"])
    printed = capsys.readouterr().out
    assert "A: ROUGE-2 specificity own 82.22, other 15.00, delta +67.22" in printed
    # B by hand: contributions 50 - 50, 100 - 25, 0 - 75; of 27 resamples one has mean -75, three
    # -50 (-75, -75, 0): the 5th percentile of 1,000 resampled means is -50
    assert ("B: ROUGE-2 specificity own 50.00, other 50.00, delta +0.00, 95% one-sided lower bound "
            "-50.00 (permutation p 1.0000 against 0)") in printed
    saved = json.loads((tmp_path / "c.json").read_text())["specificity"]
    assert saved["a"] == res["specificity"]["a"] == specificity([["a b c"], ["b c d e"], ["x y"]],
                                                                  [[r] for r in refs], seed=3)
    assert saved["b"]["p"] == 1.0


def test_bad_inputs_give_clear_errors(tmp_path):
    hyp_a, hyp_b, refs = _corpus(6)
    a = _write_generate(tmp_path / "a.out", hyp_a, refs)
    other = list(refs)
    other[3] = "a different reference"
    b = _write_generate(tmp_path / "b.out", hyp_b, other)
    with pytest.raises(SystemExit, match="sample 3: the references differ"):
        C.main([a, b, "--refs", "t-lines"])
    short = _write_generate(tmp_path / "short.out", hyp_b[:5], refs[:5])
    with pytest.raises(SystemExit, match="different samples"):
        C.main([a, short, "--refs", "t-lines"])
    (tmp_path / "a.txt").write_text("\n".join(hyp_a) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(hyp_b) + "\n")
    with pytest.raises(SystemExit, match="--ref"):
        C.main([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])


def test_generate_outputs_are_compared_against_untruncated_references(tmp_path):
    """As fairseq-sum-score: the T- lines hold the summaries cut by --max-tgt-tokens, the data folder
    named in generate's log holds the full gold summaries (DATA/test.ref.jsonl); systems equal to
    the full summaries score 100, not the ROUGE of the cut targets."""
    full = ["the committee approved the budget for the new school on tuesday evening",
            "heavy rain flooded the roads near the river and closed two bridges"]
    cut = [" ".join(s.split()[:4]) for s in full]
    data = write_prepared(tmp_path / "bin", full)
    paths = []
    for name in ("a", "b"):
        path = _write_generate(tmp_path / f"{name}.out", full, cut)
        with open(path + ".log", "w") as f:
            f.write(f"INFO:fairseq.tasks.translation:{data} test src-tgt 2 examples\n")
        paths.append(path)
    res = C.main([*paths, "--bootstrap-samples", "50"])
    assert all(r["a"] == approx64(1.0) and r["b"] == approx64(1.0) for r in res["metrics"].values())


# ------------------------------------------------------------------- references, as the scorer reads them
FULL = ["the committee approved the budget for the new school on tuesday evening",
        "heavy rain flooded the roads near the river and closed two bridges",
        "the museum opened a new wing with paintings from the last century",
        "local farmers reported a record harvest of apples this autumn"]


def _outputs(tmp_path, data_path, hyps=FULL, ids=range(4)):
    """Two generate outputs (T- lines cut to 4 words) whose logs name ``data_path``."""
    cut = [" ".join(s.split()[:4]) for s in FULL]
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.out"
        with open(path, "w") as f:
            for i in ids:
                f.write(f"S-{i}\tsource {i}\nT-{i}\t{cut[i]}\nH-{i}\t-0.5\t{hyps[i]}\nD-{i}\t-0.5\t{hyps[i]}\n")
        (tmp_path / f"{name}.out.log").write_text(
            f"INFO:fairseq.tasks.translation:{data_path} test src-tgt 4 examples\n")
        paths.append(str(path))
    return paths


def test_references_never_come_from_the_working_directory(tmp_path, monkeypatch):
    """A log naming a relative data folder is not resolved from where compare runs (another project's
    data/bin there held other summaries); an explicit wrong --data fails the T- line check."""
    decoy = write_prepared(tmp_path / "elsewhere" / "data" / "bin", [s[::-1] for s in FULL])
    a, b = _outputs(tmp_path, "data/bin")
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(SystemExit, match=r"no references .*generate's log names 'data/bin'.*--data"):
        C.main([a, b, "--bootstrap-samples", "20"])
    with pytest.raises(SystemExit, match=r"sample 0: the reference from .*elsewhere/data/bin/test.ref.jsonl .* does not "
                                         r"start with the T- line"):
        C.main([a, b, "--data", decoy, "--bootstrap-samples", "20"])
    good = write_prepared(tmp_path / "good", FULL)
    res = C.main([a, b, "--data", good, "--bootstrap-samples", "20"])
    assert all(r["a"] == approx64(1.0) for r in res["metrics"].values())


def test_ref_jsonl_after_skip_empty_uses_the_reference_index(tmp_path):
    """Raw line 3 was dropped by --skip-empty: example 2 came from line 4. compare maps it as the
    scorer does (a perfect system: 100, was record i for sample i: a wrong reference)."""
    raw = tmp_path / "test.jsonl"
    raw.write_text("".join(json.dumps({"summary": s}) + "\n" for s in FULL[:2] + ["..."] + FULL[2:]))
    full = FULL[:3]
    data = write_prepared(tmp_path / "bin", full, lines=[1, 2, 4])
    cut = [" ".join(s.split()[:4]) for s in full]
    paths = []
    for name in ("a", "b"):
        paths.append(_write_generate(tmp_path / f"{name}.out", full, cut))
        with open(paths[-1] + ".log", "w") as f:  # the index found through generate's log
            f.write(f"INFO:fairseq.tasks.translation:{data} test src-tgt 3 examples\n")
    res = C.main([*paths, "--ref-jsonl", str(raw), "--bootstrap-samples", "20"])
    assert res["num_summaries"] == 3
    assert all(r["a"] == approx64(1.0) and r["b"] == approx64(1.0) for r in res["metrics"].values())
    for name in ("a", "b"):
        os.remove(tmp_path / f"{name}.out.log")
    # without the index, record 2 (the dropped one) would be sample 2's: the T- line check refuses it
    with pytest.raises(SystemExit, match=r"sample 2: the reference from .*test.jsonl \('\.\.\.'\) does not start"):
        C.main([*paths, "--ref-jsonl", str(raw), "--bootstrap-samples", "20"])


def test_sentence_sep_as_the_scorer(tmp_path, capsys):
    """<q>-separated summaries: without --sentence-sep "q" is a word (and warned about, as by
    fairseq-sum-score); with it a system equal to the references scores 100 in ROUGE-L."""
    refs = ["a b c d <q> e f g h", "i j k <q> l m n"]
    hyp_a = ["e f g h <q> a b c d", "l m n <q> i j k"]
    hyp_b = ["e f x y <q> a b z w", "l m <q> i j"]
    for name, lines in (("a.txt", hyp_a), ("b.txt", hyp_b), ("r.txt", refs)):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    common = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--ref", str(tmp_path / "r.txt"),
              "--bootstrap-samples", "20"]
    plain = C.main(common)
    assert "<q> occur in the summaries and are scored as words; if they end sentences, pass --sentence-sep '<q>'" \
        in capsys.readouterr().err
    split = C.main(common + ["--sentence-sep", "<q>"])
    assert "scored as words" not in capsys.readouterr().err
    assert split["metrics"]["rougeL"]["a"] == approx64(1.0)
    assert plain["metrics"]["rougeL"]["a"] < 0.9
    from fairseq_sum_plugins.scoring import score as S

    scored = S.main(["--hyp", str(tmp_path / "b.txt"), "--ref", str(tmp_path / "r.txt"), "--sentence-sep", "<q>",
                     "--bootstrap-samples", "0"])
    assert split["metrics"]["rougeL"]["b"] == approx64(scored["rougeL"])


def test_ids_missing_from_both_outputs_are_reported(tmp_path, capsys):
    """Both outputs lack the split's last document: each is reported against the split's size."""
    data = write_prepared(tmp_path / "bin", FULL)
    a, b = _outputs(tmp_path, data, ids=range(3))
    res = C.main([a, b, "--bootstrap-samples", "20"])
    err = capsys.readouterr().err
    assert res["num_summaries"] == 3
    for path in (a, b):
        assert f"1 sample ids missing from {path} (ids [3]); scoring the 3 present of the split's 4" in err


def test_hypothesis_files_must_cover_the_split_of_data(tmp_path):
    data = write_prepared(tmp_path / "bin", FULL)
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("\n".join(FULL[:2]) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(FULL) + "\n")
    with pytest.raises(SystemExit, match=r"line count mismatch: 2 hypotheses vs 4 references"):
        C.main([str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--ref", str(tmp_path / "r.txt")])
    with pytest.raises(SystemExit, match=r"a.txt has 2 hypotheses, but the test split of .* has 4 examples"):
        C.main([str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--data", data])
