"""arXiv/PubMed (Cohan et al.) and Newsroom converters on small fixtures."""
import gzip
import json

import pytest

from corpora import cohan_record
from preprocess import arxiv_pubmed_to_jsonl, newsroom_to_jsonl


@pytest.fixture
def cohan_dir(tmp_path):
    d = tmp_path / "pubmed-dataset"
    d.mkdir()
    for split, n in (("train", 3), ("val", 2), ("test", 2)):
        lines = [json.dumps(cohan_record(i)) for i in range(n)]
        if split == "train":
            lines.insert(1, json.dumps(cohan_record(99, empty=True)))
            lines.append("")
        (d / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return d


def read(path):
    return [json.loads(l) for l in path.read_text().splitlines()]


def test_arxiv_pubmed_keeps_sentences(cohan_dir, tmp_path, capsys):
    out = tmp_path / "jsonl"
    arxiv_pubmed_to_jsonl.main(["--in", str(cohan_dir), "--out", str(out)])
    train = read(out / "train.jsonl")
    assert len(train) == 3 and len(read(out / "valid.jsonl")) == 2 and len(read(out / "test.jsonl")) == 2
    assert train[0] == {
        "id": "PMC0",
        "document": ["first sentence of the article .", "a second one , with @xmath0 ."],
        "summary": ["the abstract says this .", "and that ."],
    }
    assert "1 with an empty article or abstract skipped" in capsys.readouterr().err


def test_arxiv_pubmed_sections(cohan_dir, tmp_path):
    out = tmp_path / "jsonl"
    arxiv_pubmed_to_jsonl.main(["--in", str(cohan_dir), "--out", str(out), "--keep-sections", "--max-sections", "1",
                                "--limit-per-split", "1"])
    (rec,) = read(out / "train.jsonl")
    assert rec["document"] == ["first sentence of the article ."]
    assert rec["sections"] == [["first sentence of the article ."], ["a second one , with @xmath0 ."]]
    assert rec["section_names"] == ["introduction", "methods"]


def test_arxiv_pubmed_paper_truncation_keeps_4_sections_or_2000_words(tmp_path):
    """Mem2Mem App. A.2: the first 4 sections, each cut after 500 words (section 3 included); a record
    without sections keeps the same budget of its article_text (4 x 500 words)."""
    d = tmp_path / "pubmed-dataset"
    d.mkdir()
    sections = [[" ".join([f"s{k}"] * 27) + " ." for _ in range(30)] for k in range(6)]  # 6 x 840 words
    rec = dict(cohan_record(0), sections=sections, article_text=[s for sec in sections for s in sec])
    bare = dict(rec, sections=[])
    for split in ("train", "val", "test"):
        (d / f"{split}.txt").write_text(json.dumps(rec) + "\n" + json.dumps(bare) + "\n")
    out = tmp_path / "jsonl"
    arxiv_pubmed_to_jsonl.main(["--in", str(d), "--out", str(out), "--paper-truncation", "mem2mem"])
    with_sections, without = read(out / "test.jsonl")
    words = " ".join(with_sections["document"]).split()
    assert [words.count(f"s{k}") for k in range(6)] == [483, 483, 483, 483, 0, 0]  # 17 x 27 + 24, then "."
    assert len(words) == 2000 and len(with_sections["document"]) == 4 * 18
    assert len(" ".join(without["document"]).split()) == 2000


def test_arxiv_pubmed_bad_input_names_the_line(tmp_path):
    d = tmp_path / "arxiv"
    d.mkdir()
    for split in ("train", "val", "test"):
        (d / f"{split}.txt").write_text(json.dumps(cohan_record(0)) + "\n{\"article_text\": [\n")
    with pytest.raises(SystemExit, match=r"train.txt:2"):
        arxiv_pubmed_to_jsonl.main(["--in", str(d), "--out", str(tmp_path / "o")])


def test_newsroom_abstractive_test_subset(tmp_path):
    d = tmp_path / "newsroom"
    d.mkdir()
    rows = [
        {"url": "u1", "text": "Para one.\n\nPara two.", "summary": "S one.", "density_bin": "abstractive"},
        {"url": "u2", "text": "Other text.", "summary": "S two.", "density_bin": "extractive"},
    ]
    for split in ("train", "dev", "test"):
        with gzip.open(d / f"{split}.jsonl.gz", "wt") as f:
            f.write("\n".join(json.dumps(r) for r in rows) + "\n")
    newsroom_to_jsonl.main(["--in", str(d), "--out", str(tmp_path / "o"), "--density-bin", "abstractive"])
    assert [r["id"] for r in read(tmp_path / "o" / "test.jsonl")] == ["u1"]
    assert len(read(tmp_path / "o" / "train.jsonl")) == 2
    assert read(tmp_path / "o" / "valid.jsonl")[0]["document"] == "Para one.\n\nPara two."
