"""METEOR implementations (fairseq_sum_plugins/scoring/meteor.py): Meteor 1.5's score formula on hand-counted
statistics (no Java), the jar through ``fairseq-sum-score --meteor --meteor-impl 1.5`` against the
jar run directly (skipped without java / pycocoevalcap), clear errors naming the install option, and
the implementation label on every METEOR figure (text, JSON, fairseq-sum-compare, compare report)."""
import json
import os
import re
import shutil
import subprocess

import pytest

from fairseq_sum_plugins.scoring import meteor as M
from fairseq_sum_plugins.scoring import score as S
from tolerances import approx64, fp64_tol

ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75  # Meteor 1.5, -l en (task rank)
# stats rows: |hyp| |ref| fw_hyp fw_ref, (hyp content, ref content, hyp function, ref function) matches
# of exact / stem / synonym / paraphrase, chunks, hyp word matches, ref word matches
CAT = [6, 6, 3, 3, 3, 3, 2, 2] + [0] * 12 + [2, 5, 5]  # "the cat sat on the mat" / "... on a mat"
WALK = [4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 4, 4]  # "he walks home quickly"
SAME = [1, 1, 1, 1, 0, 0, 1, 1] + [0] * 12 + [1, 1, 1]  # "a" / "a": one function word, identical
EMPTY = [0, 1, 0, 0] + [0] * 16 + [0, 0, 0]  # empty hypothesis


def _by_hand(p, r, frag):
    return p * r / (ALPHA * p + (1 - ALPHA) * r) * (1 - GAMMA * frag ** BETA)


def test_meteor15_formula_on_hand_counted_stats():
    # cat: weighted length 0.75*3 + 0.25*3 = 3, matches 0.75*3 + 0.25*2 = 2.75; frag 2 chunks / 5 matches
    cat = _by_hand(2.75 / 3, 2.75 / 3, 2 / 5)
    assert M.meteor15_from_stats(CAT) == approx64(cat)
    # walk: exact "home" + function "he", stem walks/walked (0.6), paraphrase quickly/fast (0.6); all words
    # matched in one chunk: no fragmentation penalty
    walk = (0.75 * (1 + 0.6 + 0.6) + 0.25 * 1) / (0.75 * 3 + 0.25 * 1)
    assert M.meteor15_from_stats(WALK) == approx64(walk) == approx64(0.76)
    assert M.meteor15_from_stats(SAME) == 1.0
    assert M.meteor15_from_stats(EMPTY) == 0.0  # 0 / 0 is 0, never NaN
    # the final score sums the statistics, except the chunk of a pair matched whole in one chunk
    # (WALK and SAME): 2 chunks for 10 + 10 matched words
    total = M.meteor15_sum([CAT, WALK, SAME, EMPTY])
    assert list(total[:4]) == [11, 12, 5, 5] and list(total[-3:]) == [2, 10, 10]
    p = (0.75 * (3 + 1 + 0.6 + 0.6) + 0.25 * (2 + 1 + 1)) / (0.75 * 6 + 0.25 * 5)
    r = (0.75 * (3 + 1 + 0.6 + 0.6) + 0.25 * (2 + 1 + 1)) / (0.75 * 7 + 0.25 * 5)
    assert M.meteor15_from_stats(total) == approx64(_by_hand(p, r, 2 / 10))
    with pytest.raises(ValueError, match="23"):
        M.meteor15_from_stats(CAT[:-1])


def test_impl_labels():
    import nltk

    assert M.impl_label("nltk") == f"nltk-{nltk.__version__}" and M.impl_label("1.5") == "meteor-1.5"
    with pytest.raises(ValueError, match="nltk, 1.5"):
        M.impl_label("2.0")


# ------------------------------------------------------------------------------------ the jar
def _jar_or_skip():
    if shutil.which("java") is None:
        pytest.skip("java not installed (scripts/install.sh --meteor15)")
    try:
        return M.meteor15_jar()
    except RuntimeError as e:
        pytest.skip(str(e))


HYPS = ["the cat sat on the mat", "He walks home quickly", "", "A", "Prices rose 5% in Zürich, officials said.",
        "the dog ||| barked"]
REFS = ["the cat sat on a mat", "he walked home fast", "nothing here", "a", "Officials say prices went up in Zurich.",
        "the dog barked"]


def _jar_directly(tmp_path, hyps, refs):
    """(segment scores, final score) of ``java -jar meteor-1.5.jar HYP REF -l en -norm`` on files."""
    (tmp_path / "jh").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    (tmp_path / "jr").write_text("".join(r + "\n" for r in refs), encoding="utf-8")
    r = subprocess.run(["java", "-Xmx2G", "-Dfile.encoding=UTF-8", "-jar", str(_jar_or_skip()),
                        str(tmp_path / "jh"), str(tmp_path / "jr"), "-l", "en", "-norm"],
                       capture_output=True, text=True, check=True)
    assert "Modules:        exact stem synonym paraphrase" in r.stdout
    seg = [float(x) for x in re.findall(r"^Segment \d+ score:\s+(\S+)$", r.stdout, re.M)]
    return seg, float(re.search(r"^Final score:\s+(\S+)$", r.stdout, re.M).group(1))


@pytest.mark.slow  # a few seconds or more: a recipe, a subprocess or the committed results
def test_cli_meteor_impl_15_equals_the_jar_run_directly(tmp_path, capsys, monkeypatch):
    """fairseq-sum-score --meteor --meteor-impl 1.5 (one -stdio process) against the jar on files:
    same segment and final scores, hand-checked pairs, labelled in the text and the JSON."""
    # Meteor's field separator ||| is not text: it is dropped (else "barked" would be a second reference)
    seg, final = _jar_directly(tmp_path, [h.replace("|||", "") for h in HYPS], REFS)
    assert seg[:4] == approx64([M.meteor15_from_stats(CAT), 0.76, 0.0, 1.0]) and seg[5] == 1.0
    runs = []
    run = M.run_meteor15
    monkeypatch.setattr(M, "run_meteor15", lambda h, r: runs.append(run(h, r)) or runs[-1])
    (tmp_path / "h").write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    (tmp_path / "r").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    res = S.main(["--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r"), "--meteor", "--meteor-impl", "1.5",
                  "--bootstrap-samples", "200", "--json", str(tmp_path / "s.json")])
    (ours_seg, ours_final, stats), = runs
    # the jar prints doubles in full (Java's shortest round-trip form); scores <= 1, our float64
    # formula may sum its terms in another order: fp64_tol(1)
    tol = fp64_tol(1.0)
    assert ours_seg == pytest.approx(seg, abs=tol) and ours_final == pytest.approx(final, abs=tol)
    assert stats[0].tolist() == CAT and stats[1].tolist() == WALK and stats[3].tolist() == SAME
    # the formula the bootstrap uses gives the jar's numbers
    assert [M.meteor15_from_stats(s) for s in stats] == pytest.approx(seg, abs=tol)
    assert M.meteor15_from_stats(M.meteor15_sum(stats)) == pytest.approx(final, abs=tol)
    assert res["meteor"] == pytest.approx(final, abs=tol) and res["meteor_impl"] == "meteor-1.5"
    lo, hi = res["meteor_ci"]
    assert 0 <= lo < hi <= 1
    saved = json.loads((tmp_path / "s.json").read_text())
    assert saved["meteor_impl"] == "meteor-1.5" and saved["meteor"] == approx64(final)
    assert f"METEOR (meteor-1.5): {100 * final:.2f} (95%-conf.int." in capsys.readouterr().out


def test_missing_java_or_jar_names_the_install_option(tmp_path, monkeypatch):
    (tmp_path / "h").write_text("a b\n")
    (tmp_path / "r").write_text("a b\n")
    argv = ["--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r"), "--meteor", "--meteor-impl", "1.5"]
    monkeypatch.setenv("METEOR15_JAR", str(tmp_path / "nowhere" / "meteor-1.5.jar"))
    with pytest.raises(SystemExit, match=r"Meteor 1.5 jar not found: .*nowhere.*install.sh --meteor15"):
        S.main(argv)
    (tmp_path / "jar").mkdir()
    (tmp_path / "jar" / "meteor-1.5.jar").write_bytes(b"")  # a jar without its paraphrase table
    monkeypatch.setenv("METEOR15_JAR", str(tmp_path / "jar" / "meteor-1.5.jar"))
    with pytest.raises(SystemExit, match=r"paraphrase table not found: .*paraphrase-en.gz"):
        S.main(argv)
    (tmp_path / "jar" / "data").mkdir()
    (tmp_path / "jar" / "data" / "paraphrase-en.gz").write_bytes(b"")
    if shutil.which("java"):  # a broken jar: the jar's own message, not a traceback
        with pytest.raises(SystemExit, match=r"Meteor 1.5 failed \(.*meteor-1.5.jar.*exit 1\):\n.*jar"):
            S.main(argv)
    monkeypatch.setattr(M.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match=r"java is not on PATH: `bash scripts/install.sh --meteor15`"):
        S.main(argv)
    with pytest.raises(SystemExit) as e:  # the implementation without --meteor
        S.main(argv[:4] + ["--meteor-impl", "1.5"])
    assert e.value.code == 2


# ----------------------------------------------------------------------- labels of nltk's METEOR
def _wordnet_or_skip():
    if os.environ.get("WORDNET_DIR") is None and not os.path.isfile("/usr/share/wordnet/data.noun"):
        pytest.skip("Debian's wordnet-base is not installed")


def test_default_nltk_meteor_is_labelled(tmp_path, capsys):
    _wordnet_or_skip()
    (tmp_path / "h").write_text("a b c d\n")
    (tmp_path / "r").write_text("a b x y\n")
    res = S.main(["--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r"), "--meteor",
                  "--bootstrap-samples", "0", "--json", str(tmp_path / "s.json")])
    label = M.impl_label("nltk")
    assert res["meteor"] == approx64(0.5 * (1 - 0.5 / 8)) and res["meteor_impl"] == label
    assert json.loads((tmp_path / "s.json").read_text())["meteor_impl"] == label
    assert f"METEOR ({label}): 46.88" in capsys.readouterr().out


def test_compare_labels_its_meteor(tmp_path):
    _wordnet_or_skip()
    from fairseq_sum_plugins.evaluation import compare as C

    res = C.compare_systems(["a b c d", "he is quick"], ["a b x y", "he is slow"], ["a b x y", "he is fast"],
                            metrics=("rouge1", "meteor"), samples=50)
    assert res["meteor_impl"] == M.impl_label("nltk")
    assert f"METEOR ({M.impl_label('nltk')})" in C.format_comparison(res)


def test_compare_table_and_figure_keep_meteors_label_in_its_column(tmp_path, monkeypatch):
    _wordnet_or_skip()
    from fairseq_sum_plugins.evaluation import compare as C
    from fairseq_sum_plugins.evaluation import plotting

    res = C.compare_systems(["a b c d", "he is quick"], ["a b x y", "he is slow"], ["a b x y", "he is fast"],
                            metrics=("rouge1", "meteor"), samples=50)
    rows = C.format_comparison(res).splitlines()[1:]
    label = f"METEOR ({M.impl_label('nltk')})"
    assert rows[2].startswith(label + " ")
    ends = {len(row.split("[")[0].rstrip()) for row in rows[1:]}  # the A - B column ends alike
    assert len(ends) == 1, rows  # was shifted right by the label longer than 12 characters
    figures = []
    monkeypatch.setattr(plotting, "save", lambda fig, path: figures.append(fig))
    C.plot_comparison(res, str(tmp_path / "c.png"))
    ticks = [t.get_text() for t in figures[0].axes[0].get_yticklabels()]
    assert label in ticks  # was 'meteor', without its implementation


def test_compare_report_heads_meteor_with_its_implementation(tmp_path):
    from helpers import write_run

    from fairseq_sum_plugins.evaluation.compare_report import write_report

    out = str(tmp_path)
    for label, impl in (("base", "meteor-1.5"), ("method", "meteor-1.5"), ("old", None)):
        write_run(out, label, 0.25)
        path = os.path.join(out, label, "test.out.rouge.json")
        scores = json.load(open(path))
        scores.update(meteor=0.1234, **({"meteor_impl": impl} if impl else {}))
        json.dump(scores, open(path, "w"))
    write_report(out, ["base", "method"])
    md = open(os.path.join(out, "results.md")).read()
    assert "| METEOR (meteor-1.5) |" in md and "| 12.34 |" in md
    write_report(out, ["base", "old"])  # a score file from before the label holds nltk's METEOR
    md = open(os.path.join(out, "results.md")).read()
    assert "| METEOR (meteor-1.5, nltk) |" in md
    assert "| 12.34 (meteor-1.5) |" in md and "| 12.34 (nltk) |" in md
