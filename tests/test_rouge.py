"""Tests for fairseq_sum_plugins/scoring/rouge.py and the fairseq-sum-score CLI (fast; the ROUGE-1.5.5 tests
skip without perl)."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fairseq_sum_plugins.scoring import rouge as R
from fairseq_sum_plugins.scoring import score as S
from tolerances import approx64, printed_tol
from helpers import _perl_ready  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
# runs python code with fairseq blocked: the scorer needs neither fairseq nor its registrations
NO_FAIRSEQ = "import sys; sys.modules['fairseq'] = None; "


needs_perl = pytest.mark.skipif(_perl_ready() is not None, reason=str(_perl_ready()))


def test_module_imports_without_fairseq():
    code = NO_FAIRSEQ + ("import fairseq_sum_plugins.scoring.rouge, fairseq_sum_plugins.scoring.score, fairseq_sum_plugins.text; "
                         "print(fairseq_sum_plugins.scoring.rouge.rouge_pair('a b', 'a b')[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1.0"


# ----------------------------------------------------------------------------- hand-checked
def test_rouge12_by_hand():
    # hyp unigrams: the x2, cat, sat, on, mat; ref: the x2, cat, lay, on, mat -> 5 of 6 match.
    # bigrams: {the cat, cat sat, sat on, on the, the mat} vs {the cat, cat lay, lay on, on the,
    # the mat} -> 3 of 5 match.
    r1, r2, rl = R.rouge_pair(["the cat sat on the mat"], ["the cat lay on the mat"])
    assert r1 == approx64(5 / 6)
    assert r2 == approx64(3 / 5)
    # LCS "the cat on the mat" = 5 tokens of 6
    assert rl == approx64(5 / 6)


def test_rouge_lsum_vs_plain_lcs():
    # ref sentences: "a b c d" | "e f g h"; hyp sentences: "e f a b x" | "g h c d".
    # Plain LCS on the joined texts: ref order of hyp tokens is 4 5 0 1 6 7 2 3 -> LCS 4,
    #   R = 4/8, P = 4/9, F = 8/17.
    # Summary level: union LCS of "a b c d" with the hyp sentences = {a b} u {c d} = 4, same for
    #   "e f g h" -> 8 hits, R = 8/8, P = 8/9, F = 16/17.
    res = R.score_summaries(["e f a b x <sep> g h c d"], ["a b c d <sep> e f g h"])
    assert res["rougeL_plain"] == approx64(8 / 17)
    assert res["rougeL"] == approx64(16 / 17)
    assert res["rougeL_recall"] == approx64(1.0)
    assert res["rougeL_precision"] == approx64(8 / 9)
    assert res["rougeL"] > res["rougeL_plain"]
    assert R.rouge_pair("e f a b x <sep> g h c d", "a b c d\ne f g h")[2] == approx64(16 / 17)


def test_empty_hypothesis_scores_zero_and_empty_reference_errors():
    res = R.score_summaries(["", "the cat sat"], ["some reference", "the cat sat"])
    assert res["rouge1"] == approx64(0.5) and res["rouge2"] == approx64(0.5)
    with pytest.raises(ValueError, match="empty reference at line 1"):
        R.score_summaries(["a", "b"], ["a", " <unk> </s> "])
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        R.score_summaries(["a", "b"], ["a"])


# ------------------------------------------------------------------------------------ cleanup
def test_sep_and_newline_splitting():
    assert R.clean_summary("first sentence . <sep> second one .\nthird") == [
        "first sentence.", "second one.", "third"]
    assert R.clean_summary("a b<sep>c d <sep> <sep>", detok=False) == ["a b", "c d"]
    assert R.clean_summary("he didn 't go &quot; home &quot; .") == ['he didn\'t go "home".']
    assert R.clean_summary("he did n't go .", detok=False) == ["he did n't go ."]


def test_special_tokens_stripped():
    assert R.clean_summary("the <unk> cat </s> <pad>") == ["the cat"]


def test_sentencepiece_undone():
    assert R.clean_summary("\u2581The \u2581cat s \u2581sat .<sep> \u2581Then \u2581left") == [
        "The cats sat.", "Then left"]
    assert R.clean_summary("\u2581New \u2581York <sep>\u2581is \u2581big", detok=False) == [
        "New York", "is big"]


# ------------------------------------------------------------------------------------- inputs
GENERATE_OUT = """\
2024-01-01 | INFO | fairseq_cli.generate | loading model
S-2\tsource two
T-2\tthe dog ran . <sep> it was fast .
H-2\t-0.51\tthe dog ran @@ ! <sep> it was fast
D-2\t-0.51\tthe dog ran ! <sep> it was fast
P-2\t-0.1 -0.2
S-0\tsource zero
T-0\ta cat sat .
H-0\t-0.30\ta cat sat .
S-1\tsource one
T-1\tbirds fly
H-1\t-0.40\tbirds fly high
D-1\t-0.40\tbirds fly high
Generate test with beam=4: BLEU4 = 0.00
"""


def test_parse_generate_output(tmp_path):
    path = tmp_path / "gen.out"
    path.write_text(GENERATE_OUT)
    ids, hyps, refs = R.read_generate_output(path)
    assert ids == [0, 1, 2]
    assert hyps == ["a cat sat .", "birds fly high", "the dog ran ! <sep> it was fast"]  # D- wins
    assert refs == ["a cat sat .", "birds fly", "the dog ran . <sep> it was fast ."]


def test_generate_output_errors(tmp_path):
    path = tmp_path / "gen.out"
    path.write_text("S-0\tx\nH-0\t-1.0\tx\n")
    with pytest.raises(ValueError, match="without a T- reference"):
        R.read_generate_output(path)
    path.write_text("some log line\n")
    with pytest.raises(ValueError, match="no H-/D- lines"):
        R.read_generate_output(path)


def test_generate_output_with_missing_ids_warns(tmp_path, capsys):
    path = tmp_path / "gen.out"
    path.write_text("".join(f"T-{i}\tr {i}\nH-{i}\t-1.0\th {i}\n" for i in (0, 1, 3, 5)))
    ids, _, _ = R.read_generate_output(path)
    assert ids == [0, 1, 3, 5]
    assert f"2 sample ids missing from {path} (ids [2, 4]); scoring the 4 present" in capsys.readouterr().err


def test_files2rouge_gets_the_references_first(tmp_path, monkeypatch):
    """files2rouge hands its first file to ROUGE-1.5.5 as the model (reference) summaries: a stand-in
    with that layout reports recall = |overlap| / |first file|, precision = |overlap| / |second|."""
    stub = tmp_path / "files2rouge"
    stub.write_text(f"""#!{sys.executable}
import sys
first, second = (open(p, encoding="utf-8").read().split() for p in sys.argv[1:3])
overlap = len(set(first) & set(second))
r, p = overlap / len(first), overlap / len(second)
f = 2 * p * r / (p + r)
for n in ("1", "2", "L"):
    for k, v in (("R", r), ("P", p), ("F", f)):
        print(f"1 ROUGE-{{n}} Average_{{k}}: {{v:.5f}} (95%-conf.int. {{v:.5f}} - {{v:.5f}})")
""")
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    out = R.score_summaries(["a b c d"], ["a b"], scorer="files2rouge", detok=False)
    assert out["rouge1_recall"] == approx64(1.0) and out["rouge1_precision"] == approx64(0.5)


def test_cli_hyp_ref_and_json(tmp_path, capsys):
    (tmp_path / "hyp").write_text("the cat sat on the mat\nbirds fly high\n")
    (tmp_path / "ref").write_text("the cat lay on the mat\nbirds fly\n")
    res = S.main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref"),
                      "--bootstrap-samples", "200", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    line = re.compile(r"^ROUGE-(1|2|L) Average_[RPF]: \d\.\d{5} \(95%-conf\.int\. \d\.\d{5} - \d\.\d{5}\)$",
                      re.M)
    assert len(line.findall(out)) == 9
    summary = "ROUGE-1/2/L F1: " + "/".join(f"{100 * res[k]:.2f}" for k in ("rouge1", "rouge2", "rougeL"))
    assert summary in out
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["rouge1"] == approx64(res["rouge1"]) and saved["num_summaries"] == 2


def test_cli_generate_output_with_ref_jsonl(tmp_path, capsys):
    (tmp_path / "gen.out").write_text(GENERATE_OUT)
    (tmp_path / "refs.jsonl").write_text("".join(json.dumps({"summary": s}) + "\n" for s in
                                                 ["a cat sat.", "birds fly", "the dog ran! It was fast."]))
    res = S.main(["--generate-output", str(tmp_path / "gen.out"), "--ref-jsonl",
                      str(tmp_path / "refs.jsonl"), "--bootstrap-samples", "0"])
    assert "conf.int" not in capsys.readouterr().out
    assert res["num_summaries"] == 3 and 0 < res["rouge1"] <= 1


def test_cli_generate_output_with_ref_lines_checked_against_t_lines(tmp_path, capsys):
    """--ref FILE: line i = sample id i, each checked against its T- line (the first that differs
    is named); --refs t-lines needs a generate output."""
    (tmp_path / "gen.out").write_text(GENERATE_OUT)
    (tmp_path / "ref").write_text("a cat sat.\nbirds fly south\nthe dog ran! It was fast and far.\n")
    res = S.main(["--generate-output", str(tmp_path / "gen.out"), "--ref", str(tmp_path / "ref"), "--bootstrap-samples", "0"])
    assert res["num_summaries"] == 3
    (tmp_path / "ref").write_text("a cat sat.\nbirds fly south\nthe cat ran! It was fast.\n")
    with pytest.raises(SystemExit, match=r"sample 2: the reference from .*ref \('the cat ran! It was fast.'\) does not "
                                         r"start with the T- line"):
        S.main(["--generate-output", str(tmp_path / "gen.out"), "--ref", str(tmp_path / "ref")])
    with pytest.raises(SystemExit, match=r"--refs t-lines needs a fairseq-generate output"):
        S.main(["--hyp", str(tmp_path / "ref"), "--refs", "t-lines"])


def test_cli_split_sentences(tmp_path, capsys):
    """One-line summaries (BART's GPT-2 BPE output) get sentence boundaries for the summary-level ROUGE-L."""
    (tmp_path / "hyp").write_text("The dog ran home. The cat sat on the mat.\n")
    (tmp_path / "ref").write_text("The cat sat on the mat. The dog ran home.\n")
    common = ["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref"), "--bootstrap-samples", "0"]
    plain = S.main(common)
    split = S.main(common + ["--split-sentences"])
    assert split["rouge1"] == approx64(plain["rouge1"]) == approx64(1.0)
    assert split["rougeL"] == approx64(1.0) and plain["rougeL"] == approx64(0.6)
    # the splitter works without fairseq, as the rest of the scorer
    code = NO_FAIRSEQ + (f"from fairseq_sum_plugins.scoring import score; "
                         f"print(score.main({common + ['--split-sentences']!r})['rougeL'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "1.0"


def test_cli_mismatched_files(tmp_path, capsys):
    (tmp_path / "hyp").write_text("a\nb\nc\n")
    (tmp_path / "ref").write_text("a\nb\n")
    with pytest.raises(SystemExit) as e:
        S.main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref")])
    assert "line count mismatch: 3 hypotheses vs 2 references" in str(e.value.code)


# ---------------------------------------------------------------------------------- bootstrap
def test_bootstrap_ci_contains_mean_and_is_seeded():
    hyps = ["the cat sat", "a dog barked loudly", "birds fly", "rain fell all day", "x y z"]
    refs = ["the cat sat down", "the dog barked", "birds can fly", "it rained all day", "x y"]
    a = R.score_summaries(hyps, refs, bootstrap=True, bootstrap_samples=300, seed=3)
    b = R.score_summaries(hyps, refs, bootstrap=True, bootstrap_samples=300, seed=3)
    c = R.score_summaries(hyps, refs, bootstrap=True, bootstrap_samples=300, seed=4)
    for k in ("rouge1", "rouge2", "rougeL", "rouge1_recall", "rougeL_precision"):
        lo, hi = a[k + "_ci"]
        assert lo <= a[k] <= hi and lo < hi
    assert a == b
    assert a["rouge1_ci"] != c["rouge1_ci"]
    assert "rouge1_ci" not in R.score_summaries(hyps, refs)


@pytest.mark.parametrize("shape", [(1,), (7,), (1000,), (8, 3), (1001, 4)])
def test_resampled_means_in_blocks_equal_the_loop_of_one_resample_at_a_time(shape):
    """The bootstrap's mean statistic in blocks of resamples (one draw of (k, n) indices) gives
    the figures of the reference loop (a draw of n per resample) bit for bit, whatever the block."""
    from fairseq_sum_plugins.scoring.bootstrap import bootstrap_statistics, resampled_means

    values = np.random.default_rng(0).random(shape)
    loop = bootstrap_statistics(values, 300, seed=5, statistic=lambda rows: rows.mean(0))
    assert loop.shape == (300,) + shape[1:]
    # a resample per block, blocks with a shorter last one, one block
    for cells in (1, 7 * values.size, 2_000_000):
        assert np.array_equal(resampled_means(values, 300, 5, chunk_cells=cells), loop)
    assert np.array_equal(bootstrap_statistics(values, 300, seed=5), loop)
    assert not np.array_equal(bootstrap_statistics(values, 300, seed=6), loop) or shape == (1,)


# ------------------------------------------------------------------------ official ROUGE-1.5.5
OFFICIAL_PAIRS = [
    ("the cat sat on the mat <sep> it was happy", "the cat sat on a mat <sep> the dog was happy"),
    ("Police arrested two men on Tuesday . <sep> They were charged with theft .",
     "Two men were arrested by police . <sep> The men face theft charges ."),
    ("e f a b x <sep> g h c d", "a b c d <sep> e f g h"),
]


@needs_perl
@pytest.mark.parametrize("hyp,ref", OFFICIAL_PAIRS)
def test_official_matches_rouge_score(hyp, ref):
    ours = R.score_summaries([hyp], [ref])
    perl = R.score_summaries([hyp], [ref], scorer="official")
    for k in ("rouge1", "rouge2", "rougeL", "rouge1_recall", "rougeL_precision"):
        # ROUGE-1.5.5 prints 5 decimals
        assert perl[k] == pytest.approx(ours[k], abs=printed_tol(5)), k
    assert "rougeSU" in perl and "rougeW" in perl


@needs_perl
def test_official_corpus_and_empty_hypothesis():
    hyps = [h for h, _ in OFFICIAL_PAIRS] + [""]
    refs = [r for _, r in OFFICIAL_PAIRS] + ["some reference text"]
    ours = R.score_summaries(hyps, refs)
    perl = R.score_summaries(hyps, refs, scorer="official")
    for k in ("rouge1", "rouge2", "rougeL"):  # our mean of perl's per-document rows (was abs 0.01)
        # the mean of per-document figures printed with 5 decimals
        assert perl[k] == pytest.approx(ours[k], abs=printed_tol(5)), k
        assert perl[k + "_ci"][0] <= perl[k] <= perl[k + "_ci"][1]


@needs_perl
def test_exception_db_built_non_empty(tmp_path):
    data = R.build_exception_db(tmp_path)
    db = data / "WordNet-2.0.exc.db"
    count, went = R.exception_db_entries(db)
    assert count > 1000 and went == "go"
    db.write_bytes(b"")  # a broken cached DB is detected and rebuilt
    R.build_exception_db(tmp_path)
    assert R.exception_db_entries(db)[0] == count


@needs_perl
def test_official_uses_wordnet_exceptions():
    # with a working DB, -m maps went -> go (an empty DB silently skips it, like Porter alone)
    perl = R.score_summaries(["the dog went home"], ["the dog go home"], scorer="official")
    assert perl["rouge1"] == approx64(1.0)
    # the default scorer applies the same exception list before Porter stemming
    assert R.score_summaries(["the dog went home"], ["the dog go home"])["rouge1"] == approx64(1.0)


def test_files2rouge_missing_is_clear(monkeypatch):
    from fairseq_sum_plugins.scoring import rouge155

    monkeypatch.setattr(rouge155.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="files2rouge is not on PATH"):
        R.score_summaries(["a"], ["a"], scorer="files2rouge")


# ------------------------------------------------------------------ semantic similarity (TA eq. 10)
def _planted_topic_data(folder):
    """dict.src.txt + topic_model.npz with two planted topics (animals, instruments)."""
    pytest.importorskip("fairseq")
    from fairseq.data import Dictionary

    from preprocess.topic_model import PoissonFactorAnalysis, dictionary_checksum, excluded_symbols

    animals, music = "cat dog mouse horse cow".split(), "piano violin guitar drum flute".split()
    d = Dictionary()
    for w in animals + music + ["<sep>", "."]:
        d.add_symbol(w)
    d.save(str(folder / "dict.src.txt"))
    keep = ~excluded_symbols(d)
    phi = np.full((len(d), 2), 1e-3, np.float32)
    phi[[d.index(w) for w in animals], 0] = 1.0
    phi[[d.index(w) for w in music], 1] = 1.0
    phi[~keep] = 0
    phi /= phi.sum(0, keepdims=True)
    path = str(folder / "topic_model.npz")
    PoissonFactorAnalysis(phi, keep, dictionary_checksum(d)).save(path)
    return path


def test_cli_semantic_similarity(tmp_path, capsys):
    (tmp_path / "tm").mkdir()  # the topic model's folder is read: the outputs go beside it
    tm = _planted_topic_data(tmp_path / "tm")
    gen = tmp_path / "gen.out"
    gen.write_text(
        "S-0\tcat dog mouse . <sep> horse cow cat .\n"
        "T-0\tpiano violin drum .\n"
        "H-0\t-0.5\tcat dog horse .\n"
        "S-1\tpiano guitar drum . <sep> flute violin .\n"
        "T-1\tguitar flute .\n"
        "H-1\t-0.5\tpiano drum flute .\n"
    )
    out_json = tmp_path / "s.json"
    res = S.main(["--generate-output", str(gen), "--refs", "t-lines", "--topic-model", tm, "--bootstrap-samples", "0",
                  "--json", str(out_json)])
    # summary 0 is on its document's topic but not its gold's; summary 1 matches both
    assert res["ss_sum_doc"] > 0.95
    assert 0.4 < res["ss_sum_gold"] < 0.6
    assert "SS (TA eq. 10) summary-document: " in capsys.readouterr().out
    saved = json.loads(out_json.read_text())
    assert saved["ss_sum_doc"] == approx64(res["ss_sum_doc"])
    # --src replaces the S- lines; --hyp/--ref need it
    (tmp_path / "src.txt").write_text("piano violin .\ncat cow .\n")
    (tmp_path / "hyp.txt").write_text("cat dog horse .\npiano drum flute .\n")
    (tmp_path / "ref.txt").write_text("piano violin drum .\nguitar flute .\n")
    res = S.main(["--hyp", str(tmp_path / "hyp.txt"), "--ref", str(tmp_path / "ref.txt"), "--src",
                  str(tmp_path / "src.txt"), "--topic-model", tm, "--bootstrap-samples", "0"])
    assert res["ss_sum_doc"] < 0.1
    with pytest.raises(SystemExit, match="--src"):
        S.main(["--hyp", str(tmp_path / "hyp.txt"), "--ref", str(tmp_path / "ref.txt"),
                "--topic-model", tm])
