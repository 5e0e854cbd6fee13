"""evaluation/decodings.py: a run's test outputs as committed plain text, which the scorer scores as
it scored the output they came from."""
import json
import struct

import pytest

from fairseq_sum_plugins.scoring import rouge
from fairseq_sum_plugins.evaluation import decodings as D

REFS = ["The cat sat on the mat .\nIt purred .", "Stocks fell 5 % on Monday &amp; recovered ."]
# sentencepiece pieces (H-): a sentence break, a Moses-escaped ampersand
HYPS = ["\u2581the \u2581cat \u2581sat \u2581. \u2581<sep> \u2581it \u2581pur red \u2581.",
        "\u2581stocks \u2581fell \u2581&amp; \u2581rose \u2581."]
SRCS = ["The cat sat on the mat . <sep> It purred loudly .", "Stocks fell 5 % on Monday ."]


def _data(folder, refs=REFS):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "test.ref.jsonl", "w") as f:
        for i, r in enumerate(refs):
            record = {"id": str(i), "file": "t.jsonl", "line": i + 1, "summary": r.split("\n")}
            f.write(json.dumps(record) + "\n")
    header = b"MMIDIDX\x00\x00" + struct.pack("<QBQ", 1, 4, len(refs))
    (folder / "test.src-tgt.src.idx").write_bytes(header)
    (folder / "test.src-tgt.src.bin").write_bytes(b"\x00")
    (folder / "dict.src.txt").write_text("the 3\n")
    return folder


def _gen(path, ids=(0, 1), sources=True):
    with open(path, "w") as f:
        for i in ids:
            if sources:
                f.write(f"S-{i}\t{SRCS[i]}\n")
            f.write(f"T-{i}\t{REFS[i].splitlines()[0]}\nH-{i}\t-0.3\t{HYPS[i]}\n")
        f.write("Generate test with beam=4: BLEU4 = 0\n")
    return str(path)


def _args(*argv):
    return D.get_parser().parse_args(list(argv))


def test_the_committed_lines_score_as_the_scorer_scored_the_output(tmp_path):
    data = _data(tmp_path / "bin")
    run = tmp_path / "table" / "run"
    run.mkdir(parents=True)
    gen = _gen(run / "test.out")
    ckpt = tmp_path / "ck.pt"
    ckpt.write_bytes(b"w")
    m = D.main([gen, "--out", str(run), "--data", str(data), "--checkpoint", str(ckpt)])
    hyps = (run / "decodings.txt").read_text().splitlines()
    refs = (tmp_path / "table" / "references.txt").read_text().splitlines()
    # pieces joined, sentences kept apart by <sep>, the reference's newline a <sep>, &amp; unescaped
    assert hyps == ["the cat sat. <sep> it purred.", "stocks fell & rose."]
    assert refs == ["The cat sat on the mat. <sep> It purred.",
                    "Stocks fell 5% on Monday & recovered."]
    assert (tmp_path / "table" / "sources.txt").read_text().splitlines()[0] == \
        "The cat sat on the mat. <sep> It purred loudly."
    assert m["examples"] == 2 and m["checkpoint"] == D.sha256_file(ckpt)
    assert m["data"] == D.data_sha256(str(data))
    manifest = json.load(open(run / "decodings.json"))
    assert manifest["decodings"] == D.sha256_file(run / "decodings.txt")
    # scoring the lines again (no second detokenization) gives the scorer's figures on the output
    from fairseq_sum_plugins.scoring.score_inputs import generate_inputs

    _, raw_hyps, raw_refs, _ = generate_inputs(gen, _args(gen, "--out", "x", "--data", str(data)))
    for m_ in ("rouge1", "rouge2", "rougeL"):
        again = D.scorer().document_f1(hyps, refs, (m_,))[m_]
        first = rouge.Scorer().document_f1(raw_hyps, raw_refs, (m_,))[m_]
        assert list(again) == list(first)
    # a second run of the same table reuses references.txt and sources.txt
    run2 = tmp_path / "table" / "run2"
    run2.mkdir()
    D.main([_gen(run2 / "test.out"), "--out", str(run2), "--data", str(data)])
    assert json.load(open(run2 / "decodings.json"))["checkpoint"] is None


def test_the_data_hash_covers_the_split_and_the_dictionaries(tmp_path):
    data = _data(tmp_path / "bin")
    before = D.data_sha256(str(data))
    (data / "valid.src-tgt.src.bin").write_bytes(b"other split")
    assert D.data_sha256(str(data)) == before
    # the Topic Assistant's side data, written into the folder by a later run: not the examples
    (data / "test.theta.npy").write_bytes(b"theta")
    (data / "test.theta.json").write_text("{}")
    assert D.data_sha256(str(data)) == before
    (data / "test.ref.jsonl").write_text((data / "test.ref.jsonl").read_text() + "\n")
    assert D.data_sha256(str(data)) != before
    (data / "test.ref.jsonl").write_text((data / "test.ref.jsonl").read_text()[:-1])
    assert D.data_sha256(str(data)) == before
    (data / "dict.src.txt").write_text("the 4\n")
    assert D.data_sha256(str(data)) != before
    with pytest.raises(ValueError, match="no files of the train split"):
        D.data_sha256(str(data), "train")


@pytest.mark.parametrize("case, message", [
    ("missing id", "1 of the 2 examples of the test split have no hypothesis \\(ids \\[1\\]\\)"),
    ("no sources", "no S- line for ids \\[0, 1\\]"),
    ("other data",
     "references.txt \\(2 lines\\) differs from this run's references \\(2 lines\\) at line 1"),
    ("no checkpoint", "--checkpoint .*nowhere.pt: no such file"),
    ("no table dir", "--table-dir .*nowhere: no such directory"),
])
def test_bad_inputs_are_refused_by_name(tmp_path, case, message):
    data = _data(tmp_path / "bin")
    run = tmp_path / "table" / "run"
    run.mkdir(parents=True)
    gen = _gen(run / "test.out", ids=(0,) if case == "missing id" else (0, 1),
               sources=case != "no sources")
    argv = [gen, "--out", str(run), "--data", str(data)]
    if case == "other data":
        (tmp_path / "table" / "references.txt").write_text("another reference\nand another\n")
    if case == "no checkpoint":
        argv += ["--checkpoint", str(tmp_path / "nowhere.pt")]
    if case == "no table dir":
        argv += ["--table-dir", str(tmp_path / "nowhere")]
    with pytest.raises(SystemExit, match=message):
        D.main(argv)
    assert not (run / "decodings.txt").exists()
