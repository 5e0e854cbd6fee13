"""LexRank (evaluation/lexrank.py, Erkan & Radev 2004) against hand computation on three sentences."""
import math

import numpy as np
import pytest

from fairseq_sum_plugins.evaluation.baselines.lexrank import lexrank_extract, lexrank_scores, similarity_matrix

# s1 and s3 share no word; s2 shares "x" with s1 and "z" with s3: a path s1 - s2 - s3
SENTS = ["x y", "x z", "z w"]


def test_similarity_is_the_idf_modified_cosine_by_hand():
    # N = 3 sentences; n_x = n_z = 2, n_y = n_w = 1: idf(x) = idf(z) = log 1.5, idf(y) = idf(w) = log 3
    a, b = math.log(1.5), math.log(3)
    cos12 = a * a / (math.sqrt(a * a + b * b) * math.sqrt(2 * a * a))  # shared x
    sim = similarity_matrix(SENTS)
    assert sim[0, 1] == pytest.approx(cos12) and sim[1, 2] == pytest.approx(cos12)
    assert cos12 == pytest.approx(0.2448, abs=1e-4)  # tol: the hand value rounded to 4 digits
    assert sim[0, 2] == 0 and np.allclose(np.diag(sim), 1)


def test_power_iteration_reaches_the_hand_computed_stationary_scores():
    # threshold 0.1 < 0.2448: edges 1-2 and 2-3 (+ self loops), degrees 2, 3, 2. By symmetry
    # p1 = p3 = a, p2 = 1 - 2a, and a = d/3 + (1-d) (a/2 + (1-2a)/3) gives
    # a = (d/3 + (1-d)/3) / (1 - (1-d)/2 + 2(1-d)/3) = (1/3) / 1.141667 with d = 0.15
    d = 0.15
    a = (1 / 3) / (1 - (1 - d) / 2 + 2 * (1 - d) / 3)
    scores = lexrank_scores(SENTS, threshold=0.1, damping=d)
    assert scores == pytest.approx([a, 1 - 2 * a, a], abs=1e-7)  # tol: power iteration stops at its tolerance
    assert a == pytest.approx(0.291971, abs=1e-6)  # tol: the hand value rounded to 6 digits
    # above the cosine no edge is left: every sentence is alone, the scores uniform
    assert lexrank_scores(SENTS, threshold=0.25) == pytest.approx([1 / 3] * 3)


def test_extract_keeps_the_best_in_document_order_and_refuses_bad_arguments():
    assert lexrank_extract(SENTS, k=1) == ["x z"]
    assert lexrank_extract(SENTS, k=2) == ["x y", "x z"]  # tie s1 / s3: the earlier
    assert lexrank_extract(SENTS, k=10) == SENTS
    assert lexrank_extract([], k=3) == []
    assert lexrank_extract(["!", "x y"], k=1) == ["!"]  # two isolated vertices: a tie, the earlier
    for bad in (dict(k=0), dict(threshold=1.0), dict(threshold=-0.1), dict(damping=0)):
        with pytest.raises(ValueError):
            lexrank_extract(SENTS, **bad)


def test_cli_writes_each_documents_extract_and_refuses_to_overwrite_its_inputs(tmp_path):
    import json
    import os

    import corpora
    from fairseq_sum_plugins.evaluation.baselines import lexrank
    from fairseq_sum_plugins.evaluation.baselines.systems import read_prepared

    work = corpora.prepared_jsonl_work(tmp_path)
    out, scores = tmp_path / "lexrank.txt", tmp_path / "lexrank.json"
    assert lexrank.main(["--data", str(work), "--sentences", "2", "--out", str(out), "--json", str(scores)]) == 0
    docs, refs = read_prepared(str(work), "test")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines == [" <sep> ".join(lexrank_extract(d, 2)) for d in docs]
    result = json.loads(scores.read_text())
    assert result["num_summaries"] == len(refs) and 0 < result["rouge1"] <= 1 and result["sentences"] == 2
    src = os.path.join(str(work), "raw", "test.src")
    before = open(src, encoding="utf-8").read()
    for argv in (["--out", src], ["--out", str(out), "--json", str(out)], ["--out", str(out), "--sentences", "0"]):
        with pytest.raises(SystemExit) as e:
            lexrank.main(["--data", str(work), *argv])
        assert e.value.code == 2
    assert open(src, encoding="utf-8").read() == before
