"""fairseq-sum-baselines (evaluation/baselines.py): Lead-k, random, the greedy oracle, the generic
summary and
the bag of pieces, each checked against a hand computation."""

import contextlib
import io
import json
import math
import os
import sys

import numpy as np
import pytest

from fairseq_sum_plugins.evaluation.baselines import systems as bl
from tolerances import approx64, fp64_tol
from fairseq_sum_plugins.text import split_sentences

# words of at most 3 letters: no stemming
ORACLE_DOC = ["a dog ran", "the cat sat", "on the mat", "the cat sat on"]
ORACLE_REF = "the cat sat on the mat"


def test_the_greedy_oracle_of_a_hand_made_document():
    """Reference: unigrams the x2, cat, sat, on, mat (6); bigrams the-cat, cat-sat, sat-on, on-the,
    the-mat (5). Step 1, R-1 F1 + R-2 F1 of each sentence alone: 'the cat sat' 2/3 + 4/7, 'on the
    mat' the same, 'the cat sat on' 0.8 + 0.75 = 1.55: picked. Step 2: + 'on the mat' gives unigrams
    6 of 7 (F1 12/13) and bigrams 5 of 5 (F1 1): 1.923; + 'the cat sat' 50/65 + 0.6 = 1.369; + 'a
    dog ran' less.
    Step 3: every addition lowers the score: stop. Output in document order."""
    assert bl.oracle_indices(ORACLE_DOC, ORACLE_REF) == [2, 3]
    assert bl.oracle_indices(ORACLE_DOC, ORACLE_REF, max_sentences=1) == [3]
    assert bl.oracle([ORACLE_DOC], [ORACLE_REF]) == [["on the mat", "the cat sat on"]]
    assert bl.oracle_indices(["x y z"], ORACLE_REF) == []  # nothing improves on the empty selection


ABBREVIATED = (
    "Dr. Smith met Mr. Jones at 5 p.m. Then they left for the U.S. Embassy. It rained, e.g. The "
    "rain was "
    "heavy. Fig. 3 shows it."
)
ABBREVIATED_SENTS = [
    "Dr. Smith met Mr. Jones at 5 p.m.",
    "Then they left for the U.S. Embassy.",
    "It rained, e.g. The rain was heavy.",
    "Fig. 3 shows it.",
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_lead_k_on_text_with_abbreviations(tmp_path):
    """Dr., Mr., U.S. before a name, e.g. and Fig. end no sentence; 'p.m. Then' does."""
    write_jsonl(tmp_path / "test.jsonl", [{"document": ABBREVIATED, "summary": "x"}])
    docs, refs = bl.read_jsonl(tmp_path / "test.jsonl")
    assert docs == [ABBREVIATED_SENTS] and refs == ["x"]
    assert bl.lead(docs, 2) == [ABBREVIATED_SENTS[:2]] and bl.lead(docs, 9) == [ABBREVIATED_SENTS]


def test_lead_k_chooses_k_on_validation():
    """References made of the first two sentences: Lead-2 scores 100, every other k less."""
    docs = [ABBREVIATED_SENTS, ["One day came.", "Two men went.", "Three hours passed."]]
    refs = ["\n".join(d[:2]) for d in docs]
    k, scores = bl.choose_lead_k(docs, refs, max_k=4)
    assert k == 2 and scores[2] == approx64(100) and all(scores[j] < 100 for j in (1, 3, 4))


def test_random_extract_is_seeded_in_document_order_and_keeps_short_documents():
    docs = [[f"s{i}" for i in range(10)], ["only", "two"]]
    a, b = bl.random_extract(docs, 3, seed=4), bl.random_extract(docs, 3, seed=4)
    assert a == b and len(a[0]) == 3 and a[1] == ["only", "two"]
    assert a[0] == sorted(a[0], key=lambda s: int(s[1:]))
    rng = np.random.default_rng(4)
    assert a[0] == [f"s{i}" for i in sorted(rng.choice(10, 3, replace=False))]


def test_the_generic_summary_has_the_highest_mean_rouge_against_the_others():
    """Mean of (R-1 F1 + R-2 F1) / 2 against the other three: 'a b c' (0.583 vs 'a b d', 0 vs 'x y
    z', 0.829
    vs 'a b c e') beats 'a b c e' (0.829, 0, 0.486) and 'a b d' (0.583, 0, 0.486)."""
    train = ["a b c", "a b d", "x y z", "a b c e"]
    assert bl.generic_summary(train) == (0, 4)
    index, compared = bl.generic_summary(train * 300, max_summaries=50, seed=2)
    assert compared == 50 and train[index % 4] == "a b c"
    with pytest.raises(ValueError, match="at least 2 training summaries"):
        bl.generic_summary(["a b"])


# ------------------------------------------------------------------------------------ bag of pieces
def write_bin(folder, split, pairs):
    """fairseq binaries of (source ids, target ids) pairs; the dictionary: a (4), b (5)."""
    import torch
    from fairseq.data import indexed_dataset

    for side, k in (("src", 0), ("tgt", 1)):
        prefix = os.path.join(folder, f"{split}.src-tgt.{side}")
        builder = indexed_dataset.make_builder(prefix + ".bin", impl="mmap", vocab_size=6)
        for pair in pairs:
            builder.add_item(torch.IntTensor(pair[k]))
        builder.finalize(prefix + ".idx")


def test_bag_of_pieces_nll_of_a_tiny_hand_example(tmp_path):
    """Train targets 'a b </s>', 'a </s>': add-one unigram over the 6 symbols (bos, pad, eos, unk,
    a, b) u = [1, 1, 3, 1, 3, 2] / 11. Valid: source 'a a </s>', target 'a </s>': the document gives
    a 2/3 and </s> 1/3, both above u's 3/11, so the largest weight of the grid wins: 0.95. Test:
    source 'b b a </s>'
    with target 'b </s>', source 'a </s>' with target 'a a </s>'."""
    for side in ("src", "tgt"):
        (tmp_path / f"dict.{side}.txt").write_text("a 1\nb 1\n")
    write_bin(tmp_path, "train", [([4, 2], [4, 5, 2]), ([5, 2], [4, 2])])
    write_bin(tmp_path, "valid", [([4, 4, 2], [4, 2])])
    write_bin(tmp_path, "test", [([5, 5, 4, 2], [5, 2]), ([4, 2], [4, 4, 2])])
    res = bl.bag_of_pieces(str(tmp_path))
    lam, u = 0.95, {2: 3 / 11, 4: 3 / 11, 5: 2 / 11}

    def p(doc_share, token):
        return lam * doc_share + (1 - lam) * u[token]

    own = [p(2 / 4, 5), p(1 / 4, 2), p(1 / 2, 4), p(1 / 2, 4), p(1 / 2, 2)]
    other = [
        p(0, 5),
        p(1 / 2, 2),
        p(1 / 4, 4),
        p(1 / 4, 4),
        p(1 / 4, 2),
    ]  # target i with source i + 1
    nll = -sum(math.log2(x) for x in own) / 5
    nll_other = -sum(math.log2(x) for x in other) / 5
    assert res["lambda"] == lam and res["tokens"] == 5 and res["examples"] == 2
    # float64 sums of the same log2 terms in another order (tests/tolerances.py)
    assert res["nll"] == pytest.approx(nll,
                                       abs=fp64_tol(nll)) and res["nll_other"] == pytest.approx(
        nll_other, abs=fp64_tol(nll_other)
    )
    assert res["gain"] == pytest.approx(nll_other - nll, abs=fp64_tol(nll_other))
    valid = (
        -(math.log2(lam * 2 / 3 + (1 - lam) * 3 / 11) + math.log2(lam / 3 + (1 - lam) * 3 / 11)) / 2
    )
    assert res["valid_nll"] == pytest.approx(valid, abs=fp64_tol(valid))


def test_bag_of_pieces_names_a_missing_split(tmp_path):
    (tmp_path / "dict.tgt.txt").write_text("a 1\n")
    with pytest.raises(ValueError, match="no binarized split 'train'"):
        bl.bag_of_pieces(str(tmp_path))


# ------------------------------------------------------------------------------------------- CLI
class Run:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(*argv):
    """``fairseq-sum-baselines ARGV`` in this process (its import of the plugin takes seconds)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            bl.main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
            if not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
    return Run(code, out.getvalue(), err.getvalue())


def jsonl_splits(folder):
    docs = [
        ABBREVIATED,
        "One day came. Two men went. Three hours passed. Four dogs barked.",
        "The sun rose early. Birds sang loudly. The town woke up. Shops opened at nine.",
    ]
    records = [{"document": d, "summary": " ".join(split_sentences(d)[:2])} for d in docs]
    for split in ("train", "valid", "test"):
        write_jsonl(folder / f"{split}.jsonl", records)
    return folder / "test.jsonl"


def test_cli_on_jsonl_writes_every_system_with_specificity_and_verdicts(tmp_path):
    test = jsonl_splits(tmp_path)
    proc = cli("--jsonl", test, "--json", tmp_path / "b.json", "--bootstrap-samples", "10")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((tmp_path / "b.json").read_text())
    assert (
        list(res["systems"]) == list(bl.SYSTEMS)
        and res["bag_of_pieces"] is None
        and res["documents"] == 3
    )
    assert res["systems"]["leadk"]["k"] == 2 and res["systems"]["leadk"]["rouge2"] == approx64(
        1.0
    )
    for s in res["systems"].values():
        assert set(s["specificity"]) >= {"own", "other", "delta", "p"} and {
            "rouge1",
            "rouge2",
            "rougeL",
        } <= set(s)
    generic = res["systems"]["generic"]
    assert generic["distinct"] == 1 and generic["verdict"]["specific"] is False
    assert generic["verdict"]["label"] == "not specific to its document"
    # the bar: half the mean delta of 20 random extracts, seeds 1..20, each recomputed here
    draws = res["random_draws"]
    assert draws["seeds"] == list(range(1, 21)) and len(draws["deltas"]) == 20
    docs, refs = bl.read_jsonl(test)
    scorer = bl.rouge.Scorer()
    ref_sents = scorer.pairs(refs, refs)[1]
    for seed, delta in zip(draws["seeds"], draws["deltas"]):
        hyp_sents = scorer.pairs(bl.random_extract(docs, 3, seed), refs)[0]
        assert delta == approx64(bl.sp.specificity(hyp_sents, ref_sents)["delta"])
    assert draws["mean"] == approx64(np.mean(draws["deltas"])) and res["random_delta"] == draws[
        "mean"]
    assert res["bar"] == max(0.5, draws["mean"] / 2)
    assert res["systems"]["random3"]["specificity"]["delta"] == approx64(draws["deltas"][0])
    assert "leadk(k=2)" in proc.stdout and "bar of the verdict" in proc.stdout
    # what identifies the data, and no path of this machine
    assert res["source"] == "test.jsonl" and res["options"]["jsonl"] == "test.jsonl"
    assert sorted(res["inputs"]) == ["test.jsonl", "train.jsonl", "valid.jsonl"]
    from fairseq_sum_plugins.evaluation.decodings import sha256_file

    assert res["inputs"]["train.jsonl"] == sha256_file(tmp_path / "train.jsonl")
    assert str(tmp_path) not in (tmp_path / "b.json").read_text()


def test_cli_without_sibling_splits_notes_what_it_left_out(tmp_path):
    write_jsonl(
        tmp_path / "only.jsonl",
        [
            {"document": ABBREVIATED, "summary": "Dr. Smith met Mr. Jones."},
            {"document": "A b c. D e f.", "summary": "D e f."},
        ],
    )
    proc = cli(
        "--jsonl",
        tmp_path / "only.jsonl",
        "--json",
        tmp_path / "b.json",
        "--bootstrap-samples",
        "0",
    )
    assert proc.returncode == 0, proc.stderr
    res = json.loads((tmp_path / "b.json").read_text())
    assert res["systems"]["leadk"] is None and res["systems"]["generic"] is None
    assert res["notes"] == ["leadk: no validation split", "generic: no training split"]


@pytest.mark.parametrize(
    "records,argv,message",
    [
        ([{"document": "A b.", "summary": "A b."}], [], "needs at least 2"),
        (
            [{"text": "A b.", "summary": "c"}],
            [],
            "only.jsonl:1: no text field 'document' (--src-field)",
        ),
        (
            [{"document": "A b.", "summary": "c"}, {"document": "", "summary": "c"}],
            [],
            "only.jsonl:2: empty document",
        ),
        (
            [{"document": "A b.", "summary": "c"}] * 2,
            ["--permutations", "10"],
            "must be >= 1000, got 10",
        ),
        ([{"document": "A b.", "summary": "c"}] * 2, ["--max-lead", "0"], "must be >= 1, got 0"),
        (
            [{"document": "A b.", "summary": "c"}] * 2,
            ["--train-jsonl", "nowhere.jsonl"],
            "--train-jsonl nowhere.jsonl: no such file",
        ),
        (
            [{"document": "A b.", "summary": "c"}, {"document": "A b.", "summary": " "}],
            [],
            "only.jsonl:2: empty summary ('summary')",
        ),
        ([{"document": "A b.", "summary": "c"}] * 2, ["--seed", "-1"], "must be >= 0, got -1"),
        (
            [{"document": "A b.", "summary": "c"}] * 2,
            ["--json", "/nonexistent-folder/b.json"],
            "--json /nonexistent-folder/b.json: its folder does not exist",
        ),
    ],
)
def test_cli_refuses_bad_input_by_name(tmp_path, records, argv, message):
    write_jsonl(tmp_path / "only.jsonl", records)
    proc = cli("--jsonl", tmp_path / "only.jsonl", *argv)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr


def test_cli_refuses_a_folder_that_is_not_prepared_and_jsonl_flags_with_data(tmp_path):
    proc = cli("--data", tmp_path)
    assert proc.returncode != 0 and "no prepare_args.json" in proc.stderr
    proc = cli("--data", tmp_path, "--train-jsonl", "x.jsonl")
    assert proc.returncode == 2 and "--valid-jsonl / --train-jsonl go with --jsonl" in proc.stderr


@pytest.mark.slow
def test_cli_on_a_prepared_folder_adds_the_bag_of_pieces(tmp_path_factory):
    import corpora

    work = corpora.prepared_jsonl_work(tmp_path_factory.mktemp("bl"))
    out = work / "b.json"
    proc = cli("--data", work / "bin", "--json", out, "--bootstrap-samples", "0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    bag = res["bag_of_pieces"]
    assert bag["examples"] == 4 and bag["lambda"] in bl.LAMBDAS and math.isfinite(bag["nll"])
    assert bag["verdict"]["specific"] is False and bag["verdict"]["checks"]["beats_bag"] is False
    # no path of this machine; the data's hash is the one a run's decodings.json records
    from fairseq_sum_plugins.evaluation.decodings import data_sha256

    assert str(work.parent) not in out.read_text() and res["source"] == work.name
    assert res["data_sha256"] == data_sha256(str(work / "bin"), "test")
    assert {"raw/test.src", "bin/test.ref.jsonl", "bin/prepare_args.json"} <= set(res["inputs"])
    with open(work / "bin" / "test.ref.jsonl") as f:
        assert res["documents"] == sum(1 for _ in f)


# ------------------------------------------------------------------------- compare.sh's table
@pytest.mark.slow
def test_the_compare_table_puts_baseline_rows_the_verdict_and_the_bootstrap_against_lead3(
    tmp_path_factory,
):
    """A 'model' that writes Lead-3 and one that writes the generic summary, through the files
    compare.sh leaves: the first is 0 from Lead-3 with p 1; the second is not specific to its
    document (one text: specificity 0, 1 distinct), and the table says why and states each
    model's paired test against Lead-3."""
    import corpora
    from fairseq_sum_plugins.scoring import score
    from fairseq_sum_plugins.evaluation.baselines import table as baseline_table

    work = corpora.prepared_jsonl_work(tmp_path_factory.mktemp("tbl"))
    out = work.parent / "out"
    out.mkdir()
    assert (
        cli("--data", work, "--json", out / "baselines.json", "--bootstrap-samples", "0").returncode
        == 0
    )
    base = json.loads((out / "baselines.json").read_text())
    docs, refs = bl.read_prepared(work, "test")
    generic = bl.read_prepared(work, "train")[1][base["systems"]["generic"]["train_index"]]
    for label, hyps in (
        ("lead", [" <sep> ".join(d[:3]) for d in docs]),
        ("same", [generic.replace("\n", " <sep> ")] * len(docs)),
    ):
        (out / label).mkdir()
        with open(out / label / "test.out", "w") as f:
            for i, h in enumerate(hyps):
                f.write(
                    f"S-{i}\tsource\nT-{i}\t{refs[i].splitlines()[0]}\n"
                    f"H-{i}\t-0.5\t{h}\nD-{i}\t-0.5\t{h}\n"
                )
        score.main(
            [
                "--generate-output",
                str(out / label / "test.out"),
                "--data",
                str(work / "bin"),
                "--specificity",
                "--bootstrap-samples",
                "0",
                "--json",
                str(out / label / "test.out.rouge.json"),
            ]
        )
        distinct = len(set(hyps))
        (out / label / "source_use.json").write_text(
            json.dumps(
                {
                    "nll_own": 5.0,
                    "gain": 0.5 if distinct > 1 else 0.0,
                    "distinct": distinct,
                    "hypotheses": len(hyps),
                }
            )
        )
    (out / "results.md").write_text("# Comparison\n\n| table |\n\n## Settings and hardware\n\nx\n")
    table = baseline_table.write(str(out), str(work), ["lead", "same"])
    verdicts = json.loads((out / "verdicts.json").read_text())["labels"]
    assert (
        verdicts["lead"]["vs_lead3"]["rouge2"]["diff"] == 0
        and verdicts["lead"]["vs_lead3"]["rouge2"]["p"] == 1
    )
    assert (
        verdicts["lead"]["vs_first"] is None and verdicts["same"]["vs_first"]["rouge2"]["diff"] < 0
    )
    same = verdicts["same"]["verdict"]
    assert (
        same["specific"] is False
        and same["checks"]["above_bar"] is False
        and same["checks"]["reads"] is False
    )
    assert (
        "| *Lead-3* |" in table
        and "| *bag of pieces (no training" in table
        and "| `same` |" in table
    )
    assert "- `same`: ROUGE-2 specificity delta" in table
    assert ("`lead`: " in table and "against Lead-3 ROUGE-1/2/L +0.00/+0.00/+0.00 (p 1.000/1.000/"
            "1.000), no significant ROUGE-2 difference." in table)
    assert "`same`: not specific to its document; against Lead-3" in table
    assert "Against `lead` (the table's baseline model): ROUGE-1/2/L" in table
    assert "lower bound of the specificity delta above the bar" in table
    results = (out / "results.md").read_text()
    assert results.count(baseline_table.SECTION) == 1 and results.index(
        "## Settings"
    ) < results.index("## Baselines")
    baseline_table.write(
        str(out), str(work), ["lead", "same"]
    )  # again: the section replaced, not repeated
    assert (out / "results.md").read_text() == results
    # over seeds (paper_evidence.sh): a second seed's folder, one section for both
    import shutil

    top = work.parent / "top"
    top.mkdir()
    for seed in ("seed1", "seed2"):
        shutil.copytree(out, top / seed)
    (top / "results.md").write_text("# Evidence\n")
    across = baseline_table.write_across(str(top), [str(top / "seed1"), str(top / "seed2")])
    assert (
        "| `lead` | 47.19 +- 0.00 | 44.56 +- 0.00 | 47.19 +- 0.00 | 43.81 +- 0.00 (p <= 0.039)"
        in across
    )
    # `lead` writes Lead-3: its lower bound clears the bar (half the 20 draws' mean), its NLL the
    # bag's and it reads; its permutation p (0.039 with 4 documents) plays no part any more
    assert ("| - | specific to its document / specific to its document | +0.00 (1.000) / +0.00 "
            "(1.000) |") in across
    assert "`same`: seed seed1: not specific to its document; against Lead-3" in across
    assert (top / "results.md").read_text().count(baseline_table.SECTION) == 1


def test_invalid_utf8_in_the_jsonl_names_its_line(tmp_path):
    """The JSONL is read by the scorer's UTF-8 line reader: a bad byte is an error naming the line."""
    path = tmp_path / "test.jsonl"
    good = json.dumps({"document": "One. Two.", "summary": "One."}).encode()
    path.write_bytes(good + b"\n" + b'{"document": "caf\xe9", "summary": "x"}\n')
    with pytest.raises(bl.BaselineError, match=r"test\.jsonl:2: not valid UTF-8"):
        bl.read_jsonl(str(path))


def test_the_extracts_written_with_outputs_score_again_to_the_json_exactly(tmp_path):
    """--outputs writes each system's extracts as committed decodings are written (the scorer's
    cleaned sentences joined by <sep>, one line per document): scored again by the committed-lines
    scorer against the same references they give the JSON's ROUGE; Lead-3 keeps its sentences."""
    from fairseq_sum_plugins.evaluation.decodings import scorer

    test = jsonl_splits(tmp_path)
    out = tmp_path / "extracts"
    (out).mkdir()
    (out / "leadk.txt").write_text("left from an earlier run\n")
    proc = cli("--jsonl", test, "--json", tmp_path / "b.json", "--outputs", out,
               "--bootstrap-samples", "0")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((tmp_path / "b.json").read_text())
    refs = [r["summary"] for r in map(json.loads, test.read_text().splitlines())]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{n}.txt" for n in bl.SYSTEMS] + ["SHA256SUMS"])
    lead3 = (out / "lead3.txt").read_text().splitlines()
    assert lead3[1] == "One day came. <sep> Two men went. <sep> Three hours passed."
    for name in bl.SYSTEMS:
        lines = (out / f"{name}.txt").read_text().splitlines()
        assert len(lines) == 3
        per = scorer().document_f1(lines, refs, ("rouge1", "rouge2", "rougeL"))
        for k in ("rouge1", "rouge2", "rougeL"):
            assert float(per[k].mean()) == approx64(res["systems"][name][k])
    # a system not computed this time leaves no file of the earlier run behind
    (tmp_path / "valid.jsonl").unlink()
    assert cli("--jsonl", test, "--json", tmp_path / "b.json", "--outputs", out,
               "--bootstrap-samples", "0").returncode == 0
    assert not (out / "leadk.txt").exists()
    # the extracts' hashes the results check compares follow the extracts written this time
    from fairseq_sum_plugins.evaluation.baselines.extracts import read_sums
    from fairseq_sum_plugins.evaluation.decodings import sha256_file

    assert read_sums(out / "SHA256SUMS") == {p.name: sha256_file(p) for p in out.glob("*.txt")}
    (tmp_path / "afile").write_text("")
    proc = cli("--jsonl", test, "--outputs", tmp_path / "afile")
    assert proc.returncode != 0 and "--outputs" in proc.stderr and "not a folder" in proc.stderr


def test_outputs_never_overwrite_an_input_or_write_through_a_link(tmp_path):
    """--json may not be the test file or an extract, nor a folder; a folder or a link in the
    place of an extract is refused before anything runs; text that is not valid Unicode (a lone
    surrogate from a JSON escape) is an error naming the system and document, and no extract is
    written."""
    test = jsonl_splits(tmp_path)
    before = test.read_text()
    out = tmp_path / "extracts"
    out.mkdir()
    for argv, message in (
        (("--json", test), f"--json {test} is --jsonl {test}, which this command reads"),
        (("--outputs", out, "--json", out / "lead3.txt"),
         f"--outputs {out / 'lead3.txt'} and --json {out / 'lead3.txt'} name one file"),
        (("--json", tmp_path), "a folder"),
    ):
        proc = cli("--jsonl", test, *argv)
        assert proc.returncode != 0 and message in proc.stderr, (argv, proc.stderr)
    assert test.read_text() == before
    (out / "lead3.txt").mkdir()
    proc = cli("--jsonl", test, "--outputs", out)
    assert proc.returncode != 0 and "lead3.txt is not a plain file" in proc.stderr
    (out / "lead3.txt").rmdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (out / "lead1.txt").symlink_to(victim)
    proc = cli("--jsonl", test, "--outputs", out)
    assert proc.returncode != 0 and "lead1.txt is not a plain file" in proc.stderr
    assert victim.read_text() == "keep me\n"
    (out / "lead1.txt").unlink()
    records = [json.loads(x) for x in test.read_text().splitlines()]
    records[1]["document"] = "\ud800 One day came. Two men went."
    write_jsonl(tmp_path / "bad.jsonl", records)
    proc = cli("--jsonl", tmp_path / "bad.jsonl", "--outputs", out, "--bootstrap-samples", "0")
    assert proc.returncode != 0 and "lead1, document 2: text that is not valid Unicode" in proc.stderr
    assert list(out.iterdir()) == []


def test_json_and_outputs_may_not_replace_a_split_read_beside_the_test_file(tmp_path):
    """--jsonl RAW/test.jsonl reads RAW/train.jsonl and RAW/valid.jsonl beside it: --json on
    either (or on a link to one) is refused before anything runs, and so is --outputs whose
    NAME.txt is a file it reads (--valid-jsonl DIR/lead3.txt)."""
    test = jsonl_splits(tmp_path)
    train, valid = tmp_path / "train.jsonl", tmp_path / "valid.jsonl"
    before = {p: p.read_text() for p in (train, valid)}
    (tmp_path / "link.json").symlink_to(train)
    extracts = tmp_path / "extracts"
    extracts.mkdir()
    (extracts / "lead3.txt").write_text(valid.read_text())
    for argv, named in (
        (("--json", train), f"--json {train} is --train-jsonl {train}"),
        (("--json", valid), f"--json {valid} is --valid-jsonl {valid}"),
        (("--json", tmp_path / "link.json"), f"--json {tmp_path / 'link.json'} is --train-jsonl"),
        (("--outputs", extracts, "--valid-jsonl", extracts / "lead3.txt"),
         f"--outputs {extracts / 'lead3.txt'} is --valid-jsonl {extracts / 'lead3.txt'}"),
    ):
        proc = cli("--jsonl", test, *argv, "--bootstrap-samples", "0")
        assert proc.returncode == 2, argv
        assert f"{named}" in proc.stderr and "which this command reads; nothing written" in \
            proc.stderr, (argv, proc.stderr)
    assert {p: p.read_text() for p in (train, valid)} == before
    assert (extracts / "lead3.txt").read_text() == valid.read_text()
    for flag in ("--valid-jsonl", "--train-jsonl"):  # the test file as its own validation split
        proc = cli("--jsonl", test, flag, test)
        assert proc.returncode == 2 and "the test file itself (--jsonl)" in proc.stderr


def fake_prepared(work):
    """The files fairseq-sum-baselines --data opens, as names (refused before it reads them)."""
    (work / "bin").mkdir(parents=True)
    (work / "raw").mkdir()
    (work / "bin" / "prepare_args.json").write_text("{}")
    for split in ("train", "valid", "test"):
        (work / "bin" / f"{split}.ref.jsonl").write_text('{"summary": ["x"]}\n')
        (work / "raw" / f"{split}.src").write_text("x\n")
        for lang in ("src", "tgt"):
            for ext in ("bin", "idx"):
                (work / "bin" / f"{split}.src-tgt.{lang}.{ext}").write_text("")
    (work / "bin" / "dict.tgt.txt").write_text("")
    return work


@pytest.mark.parametrize("name", ["bin/test.ref.jsonl", "raw/valid.src", "bin/train.ref.jsonl",
                                  "bin/dict.tgt.txt", "bin/valid.src-tgt.tgt.bin",
                                  "bin/prepare_args.json"])
def test_json_may_not_replace_a_file_of_the_prepared_folder_it_reads(tmp_path, name):
    work = fake_prepared(tmp_path / "work")
    before = (work / name).read_text()
    proc = cli("--data", work, "--json", work / name)
    how = (f"lies inside --data {work / 'bin'}" if name.startswith("bin/")
           else f"is --data {work / name}")
    assert proc.returncode == 2 and f"--json {work / name} {how}, which this command reads" in \
        proc.stderr, proc.stderr
    assert (work / name).read_text() == before


def test_json_may_not_overwrite_an_input_through_a_hard_link(tmp_path):
    """A hard link resolves to its own path: --json on one to the training split beside --jsonl
    or to --data's references wrote through it (exit 0). Now refused by the file's inode."""
    test = jsonl_splits(tmp_path)
    train = tmp_path / "train.jsonl"
    before = train.read_text()
    os.link(train, tmp_path / "hard.json")
    proc = cli("--jsonl", test, "--json", tmp_path / "hard.json", "--bootstrap-samples", "0")
    assert proc.returncode == 2 and f"is --train-jsonl {train}" in proc.stderr, proc.stderr
    assert train.read_text() == before
    work = fake_prepared(tmp_path / "work")
    os.link(work / "bin" / "test.ref.jsonl", tmp_path / "refs.json")
    proc = cli("--data", work, "--json", tmp_path / "refs.json")
    assert proc.returncode == 2 and (f"--json {tmp_path / 'refs.json'} is test.ref.jsonl of "
                                     f"--data {work / 'bin'} (a link to it)") in proc.stderr, \
        proc.stderr
    assert (work / "bin" / "test.ref.jsonl").read_text() == '{"summary": ["x"]}\n'
