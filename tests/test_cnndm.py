"""CNN / Daily Mail converter: raw .story files with url lists, and Hugging Face JSONL."""
import json

import pytest

from corpora import STORY
from preprocess import cnndm_to_jsonl


def _read(path):
    return [json.loads(l) for l in open(path, encoding="utf-8")]


def test_parse_story():
    article, highlights = cnndm_to_jsonl.parse_story(STORY)
    assert article == "(CNN) -- The first paragraph of the story.\nA second paragraph. With two sentences."
    assert highlights == "First highlight\nSecond highlight here"


def test_stories_with_url_lists(tmp_path):
    cnn, dm, lists = tmp_path / "cnn", tmp_path / "dm", tmp_path / "lists"
    for d in (cnn, dm, lists):
        d.mkdir()
    urls = {split: [f"http://www.cnn.com/{split}/{i}" for i in range(n)] for split, n in (("train", 3), ("val", 1), ("test", 2))}
    for split, us in urls.items():
        (lists / f"all_{split}.txt").write_text("\n".join(us) + "\n")
        for i, u in enumerate(us):
            folder = cnn if i % 2 == 0 else dm
            text = STORY.replace("first paragraph", f"{split} {i} paragraph")
            if split == "train" and i == 2:
                text = "@highlight\n\nonly a highlight\n"  # no article: dropped
            (folder / f"{cnndm_to_jsonl.hashhex(u)}.story").write_text(text)
    out = tmp_path / "out"
    counts = cnndm_to_jsonl.main(["--stories-dir", str(cnn), str(dm), "--url-lists", str(lists), "--out", str(out)])
    assert counts == {"train": 2, "valid": 1, "test": 2}
    test = _read(out / "test.jsonl")
    assert [e["id"] for e in test] == [cnndm_to_jsonl.hashhex(u) for u in urls["test"]]  # url-list order
    assert test[1]["document"].startswith("(CNN) -- The test 1 paragraph") and test[1]["summary"].count("\n") == 1
    (lists / "all_test.txt").write_text("http://missing\n")
    with pytest.raises(cnndm_to_jsonl.ConvertError, match="1 urls have no .story file"):
        cnndm_to_jsonl.main(["--stories-dir", str(cnn), "--url-lists", str(lists), "--out", str(out)])


def test_hf_jsonl_directory(tmp_path):
    src = tmp_path / "hf"
    src.mkdir()
    for split, n in (("train", 4), ("validation", 2), ("test", 2)):
        with open(src / f"{split}.jsonl", "w") as f:
            for i in range(n):
                f.write(json.dumps({"article": f"Article {i}. More text.", "highlights": f"Point {i} .\nPoint two .",
                                    "id": f"{split}{i}"}) + "\n")
    counts = cnndm_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "out"), "--limit-per-split", "3"])
    assert counts == {"train": 3, "valid": 2, "test": 2}
    ex = _read(tmp_path / "out" / "valid.jsonl")[1]
    assert ex == {"document": "Article 1. More text.", "summary": "Point 1 .\nPoint two .", "id": "validation1"}
    (src / "test.jsonl").write_text('{"article": "x"}\n')
    with pytest.raises(cnndm_to_jsonl.ConvertError, match="test.jsonl:1: missing or non-string field 'highlights'"):
        cnndm_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o2")])
