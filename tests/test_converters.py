"""Converters on small fixtures in the real formats: WikiHow CSV, NYT JSONL, the shared statistics
and truncation of preprocess/stats.py / preprocess/converter_io.py, and bad / truncated input of every converter."""
import csv
import gzip
import json
import os
import subprocess
import sys

import pytest

from preprocess import (arxiv_pubmed_to_jsonl, cnndm_to_jsonl, converter_io, newsroom_to_jsonl, nyt_to_jsonl, stats,
                        wikihow_to_jsonl, xsum_to_jsonl)
from preprocess.xsum_to_jsonl import ConvertError
from tolerances import approx64


def read(path):
    return [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]


# ------------------------------------------------------------------ WikiHow

ARTICLE = ("\n Keep your workspace tidy and clean all the time. Put the tools back after using them.,\n"
           " Clean your brushes with warm water. Dry them flat on a towel so the bristles keep their shape.")
HEADLINE = "\nKeep related supplies in the same area.,\nMake an effort to clean a dedicated workspace."


def wikihow_rows(n=12):
    rows = [[HEADLINE, f"How to Organize Art Supplies {i}", ARTICLE.replace("tidy", f"tidy {i}")] for i in range(n)]
    rows.append(["", "How to Do Nothing", "Some text without a headline at all here."])  # empty headline
    rows.append(["A very long summary line that is long.", "How to Be Short", "Short."])  # summary >= 3/4
    rows.append([HEADLINE, "How to Organize Art Supplies 0", ARTICLE])  # repeated title
    return rows


def write_csv(path, rows, header=("headline", "title", "text")):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def test_wikihow_csv_hash_split(tmp_path, capsys):
    src = tmp_path / "wikihowAll.csv"
    write_csv(src, wikihow_rows())
    out = tmp_path / "out"
    counts = wikihow_to_jsonl.main(["--csv", str(src), "--out", str(out), "--valid-frac", "0.2", "--test-frac", "0.2"])
    assert sum(counts.values()) == 13 and counts["valid"] and counts["test"]
    assert "13 rows kept, 2 dropped" in capsys.readouterr().err
    ex = next(e for s in ("train", "valid", "test") for e in read(out / f"{s}.jsonl")
              if e["id"] == "How to Organize Art Supplies 3")
    assert ex["summary"] == ["Keep related supplies in the same area.", "Make an effort to clean a dedicated workspace."]
    assert ex["document"].split("\n") == [
        "Keep your workspace tidy 3 and clean all the time. Put the tools back after using them.",
        "Clean your brushes with warm water. Dry them flat on a towel so the bristles keep their shape."]
    ids = [e["id"] for s in ("train", "valid", "test") for e in read(out / f"{s}.jsonl")]
    assert "How to Organize Art Supplies 0_1" in ids
    # deterministic and independent of the row order
    write_csv(src, wikihow_rows()[::-1])
    wikihow_to_jsonl.main(["--csv", str(src), "--out", str(tmp_path / "o2"), "--valid-frac", "0.2", "--test-frac", "0.2"])
    for s in ("valid", "test"):
        assert sorted(e["id"] for e in read(tmp_path / "o2" / f"{s}.jsonl")) == \
            sorted(e["id"] for e in read(out / f"{s}.jsonl"))


def test_wikihow_official_title_lists(tmp_path, capsys):
    src = tmp_path / "wikihowAll.csv"
    write_csv(src, wikihow_rows(4))
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "all_train.txt").write_text("HowtoOrganizeArtSupplies0\nHowtoOrganizeArtSupplies1\n")
    (lists / "all_val.txt").write_text("How to Organize Art Supplies 2\n")
    (lists / "all_test.txt").write_text("howtoorganizeartsupplies3\n")
    counts = wikihow_to_jsonl.main(["--csv", str(src), "--split-lists", str(lists), "--out", str(tmp_path / "o")])
    assert counts == {"train": 3, "valid": 1, "test": 1}  # the repeated title 0 goes to train too
    assert [e["id"] for e in read(tmp_path / "o" / "test.jsonl")] == ["How to Organize Art Supplies 3"]
    (lists / "all_test.txt").unlink()
    with pytest.raises(ConvertError, match="no all_test.txt"):
        wikihow_to_jsonl.main(["--csv", str(src), "--split-lists", str(lists), "--out", str(tmp_path / "o")])


def test_wikihow_bad_files(tmp_path):
    good = tmp_path / "good.csv"
    write_csv(good, wikihow_rows(3))
    text = good.read_text(encoding="utf-8")
    truncated = tmp_path / "truncated.csv"
    truncated.write_text(text[: text.rindex("Clean your brushes")], encoding="utf-8")  # cut inside a quoted field
    with pytest.raises(ConvertError, match=r"truncated\.csv:\d+: malformed CSV"):
        wikihow_to_jsonl.main(["--csv", str(truncated), "--out", str(tmp_path / "o")])
    short = tmp_path / "short.csv"
    short.write_text('headline,title,text\n"Do it.",How to Do It\n', encoding="utf-8")
    with pytest.raises(ConvertError, match=r"short\.csv:2: 2 fields, the header has 3"):
        wikihow_to_jsonl.main(["--csv", str(short), "--out", str(tmp_path / "o")])
    counts = wikihow_to_jsonl.main(["--csv", str(short), "--out", str(tmp_path / "o"), "--skip-bad-rows"])
    assert counts == {"train": 0, "valid": 0, "test": 0}
    nocol = tmp_path / "nocol.csv"
    write_csv(nocol, [["a", "b"]], header=("headline", "title"))
    with pytest.raises(ConvertError, match="missing column 'text'"):
        wikihow_to_jsonl.main(["--csv", str(nocol), "--out", str(tmp_path / "o")])


# ------------------------------------------------------------------ NYT


def nyt_record(i, date, abstract_words=60, **extra):
    abstract = " ".join(["word"] * (abstract_words - 1)) + " end. (M)"
    return {"id": f"nyt{i}", "date": date, "article": f"Paragraph one of {i}. Second sentence.\nParagraph two.",
            "abstract": abstract, **extra}


def test_nyt_date_split_filter_and_markers(tmp_path, capsys):
    src = tmp_path / "nyt.jsonl"
    rows = [nyt_record(i, f"2005-0{i % 9 + 1}-01") for i in range(6)]
    rows += [nyt_record(10, "2007-01-01"), nyt_record(11, "2007-05-03", abstract_words=20), nyt_record(12, "2006-12-31")]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    counts = nyt_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o"), "--valid-size", "2",
                                "--min-summary-words", "50", "--stats"])
    assert counts == {"train": 5, "valid": 2, "test": 1}
    (test,) = read(tmp_path / "o" / "test.jsonl")
    assert test["id"] == "nyt10" and test["summary"].endswith("word end.") and "\n" in test["document"]
    out = capsys.readouterr().out
    assert "1 with a summary < 50 words dropped" in out
    assert "Topic Assistant Table 1" in out and "96,834/4,000/3,452" in out and "800.04" in out


def test_nyt_directory_split_field_and_errors(tmp_path):
    src = tmp_path / "nyt.jsonl"
    rows = [nyt_record(i, None, split=s) for i, s in enumerate(["train", "train", "validation", "test"])]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert nyt_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o")]) == {"train": 2, "valid": 1, "test": 1}
    d = tmp_path / "dir"
    d.mkdir()
    for s in ("train", "valid", "test"):
        (d / f"{s}.jsonl").write_text(json.dumps({"article": ["S one.", "S two."], "abstract": ["A."]}) + "\n")
    assert nyt_to_jsonl.main(["--jsonl", str(d), "--out", str(tmp_path / "o2")]) == {"train": 1, "valid": 1, "test": 1}
    assert read(tmp_path / "o2" / "test.jsonl")[0]["document"] == ["S one.", "S two."]
    (d / "test.jsonl").write_text('{"article": "x", "abstract": "y"}\n{"article": "tru')
    with pytest.raises(ConvertError, match=r"test\.jsonl:2: invalid JSON line"):
        nyt_to_jsonl.main(["--jsonl", str(d), "--out", str(tmp_path / "o3")])
    (d / "test.jsonl").write_text('{"article": "x", "summary": "y"}\n')
    with pytest.raises(ConvertError, match=r"test\.jsonl:1: missing field 'abstract'"):
        nyt_to_jsonl.main(["--jsonl", str(d), "--out", str(tmp_path / "o3")])


# ------------------------------------------------------------------ statistics and truncation


def test_stats_against_paper_table():
    splits = {"train": [{"document": "One two three. Four five.", "summary": ["Six seven."]}] * 2,
              "valid": [{"document": ["a b", "c d", "e f"], "summary": "x y z"}], "test": []}
    ours = stats.corpus_stats(splits)
    assert ours["examples"] == {"train": 2, "valid": 1, "test": 0}
    assert ours["doc_words"] == approx64(16 / 3) and ours["doc_sents"] == approx64(7 / 3)
    assert ours["sum_words"] == approx64(7 / 3) and ours["sum_sents"] == 1
    table = stats.format_table("xsum", ours)
    lines = table.splitlines()
    assert lines[2].startswith("ours") and "2/1/0" in lines[2] and "5.33" in lines[2]
    assert "Topic Assistant Table 1" in lines[3] and "204,045/11,332/11,334" in lines[3] and "431.07" in lines[3]
    assert "227k BBC articles" in table
    cnndm = stats.format_table("cnn_dm", ours)
    for figure in ("760.50", "653.33", "42.10", "287,226/13,368/11,490", "781.00"):
        assert figure in cnndm
    for dataset in ("pubmed", "arxiv", "newsroom", "wikihow", "nyt"):
        assert stats.REFERENCE[dataset]


def test_truncation_keeps_sentences():
    sents = ["one two three.", "four five six.", "seven eight."]
    assert converter_io.truncate_sentences(sents, 5) == ["one two three.", "four five"]
    assert converter_io.truncate_sentences(sents, 0) == sents
    assert converter_io.truncate_text("Short one. Two.", 10) == "Short one. Two."
    assert converter_io.truncate_text("One two three. Four five six.", 4) == ["One two three.", "Four"]


def test_cnndm_paper_truncation_and_stats(tmp_path, capsys):
    src = tmp_path / "cnndm.jsonl"
    doc = " ".join(f"Sentence number {i} has six words." for i in range(100))  # 600 words
    src.write_text("\n".join(json.dumps({"article": doc, "highlights": "A point .\nAnother point .", "id": f"x{i}"})
                             for i in range(10)) + "\n")
    cnndm_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o"), "--valid-frac", "0.1",
                         "--test-frac", "0.1", "--paper-truncation", "etads", "--stats"])
    ex = read(tmp_path / "o" / "train.jsonl")[0]
    assert isinstance(ex["document"], list) and len(ex["document"]) == 67  # 66 full sentences + 4 words
    assert sum(len(s.split()) for s in ex["document"]) == 400
    assert ex["summary"] == "A point .\nAnother point ."  # under the 100-word limit: unchanged
    out = capsys.readouterr().out
    assert "ours" in out and "8/1/1" in out and "400.00" in out and "ETADS" in out


def test_arxiv_mem2mem_truncation(tmp_path):
    d = tmp_path / "arxiv-dataset"
    d.mkdir()
    rec = {"article_id": "a1", "article_text": ["x"] * 3,
           "abstract_text": ["<S> " + " ".join(["w"] * 150) + " . </S>", "<S> " + " ".join(["v"] * 100) + " . </S>"],
           "section_names": [f"s{i}" for i in range(6)],
           "sections": [[" ".join([f"t{i}"] * 300) + " .", " ".join([f"u{i}"] * 300) + " ."] for i in range(6)]}
    for s in ("train", "val", "test"):
        (d / f"{s}.txt").write_text(json.dumps(rec) + "\n")
    arxiv_pubmed_to_jsonl.main(["--in", str(d), "--out", str(tmp_path / "o"), "--paper-truncation", "mem2mem"])
    (ex,) = read(tmp_path / "o" / "test.jsonl")
    assert len(ex["document"]) == 8 and ex["document"][1].split()[0] == "u0"  # 4 sections x (300 + 200 words)
    assert sum(len(s.split()) for s in ex["document"]) == 2000
    assert sum(len(s.split()) for s in ex["summary"]) == 200
    (d / "test.txt").write_text(json.dumps({"article_text": "not a list", "abstract_text": []}) + "\n")
    with pytest.raises(SystemExit, match=r"test\.txt:1: article_text and abstract_text must be lists"):
        arxiv_pubmed_to_jsonl.main(["--in", str(d), "--out", str(tmp_path / "o")])


def test_newsroom_bad_input(tmp_path):
    d = tmp_path / "newsroom"
    d.mkdir()
    row = {"url": "u", "text": "Some text.", "summary": "S.", "density": 1.0}
    for s in ("train", "dev"):
        with gzip.open(d / f"{s}.jsonl.gz", "wt") as f:
            f.write(json.dumps(row) + "\n")
    (d / "test.jsonl").write_text(json.dumps({"url": "u", "text": "no summary"}) + "\n")
    with pytest.raises(SystemExit, match=r"test\.jsonl:1: missing field 'summary'"):
        newsroom_to_jsonl.main(["--in", str(d), "--out", str(tmp_path / "o")])
    (d / "test.jsonl").unlink()
    data = gzip.compress((json.dumps(row) + "\n").encode() * 200)
    (d / "test.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(SystemExit, match=r"test\.jsonl\.gz: unreadable after line \d+ .*truncated file"):
        newsroom_to_jsonl.main(["--in", str(d), "--out", str(tmp_path / "o")])
    # empty documents / summaries are dropped and counted (fairseq-sum-prepare would stop on them)
    rows = [row, dict(row, text=""), dict(row, summary=None), dict(row, summary="  ")]
    (d / "test.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    stats = newsroom_to_jsonl.convert(newsroom_to_jsonl.get_parser().parse_args(
        ["--in", str(d), "--out", str(tmp_path / "o"), "--min-doc-tokens", "0", "--min-summary-tokens", "0"]))
    assert stats["test"] == {"kept": 1, "dropped": 3}
    assert [ex["summary"] for ex in read(tmp_path / "o" / "test.jsonl")] == ["S."]


def test_xsum_stats(tmp_path, capsys):
    src = tmp_path / "x.jsonl"
    src.write_text("\n".join(json.dumps({"document": "A b c.\nD e.", "summary": "S t.", "id": str(i)})
                             for i in range(10)) + "\n")
    xsum_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o"), "--stats"])
    out = capsys.readouterr().out
    assert "statistics of xsum" in out and "5.00" in out and "431.07" in out


def test_xsum_single_file_as_one_split(tmp_path, capsys):
    """One released split file (integer ids, as in the Hugging Face files) kept whole, for --stats."""
    src = tmp_path / "test.jsonl"
    src.write_text("\n".join(json.dumps({"document": "First line here.\nSecond line.", "summary": "One sentence.",
                                         "id": 34268361 + i}) for i in range(5)) + "\n")
    counts = xsum_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o"), "--single-split", "test", "--stats"])
    assert counts == {"train": 0, "valid": 0, "test": 5}
    assert read(tmp_path / "o" / "test.jsonl")[0]["id"] == "34268361"
    assert "0/0/5" in capsys.readouterr().out
    with pytest.raises(ConvertError, match="--single-split goes with a single --jsonl file"):
        xsum_to_jsonl.main(["--jsonl", str(tmp_path), "--out", str(tmp_path / "o2"), "--single-split", "test"])


def test_target_lead_is_the_first_sentence_of_the_first_paragraph(tmp_path):
    """--target lead (every converter, through converter_io.finish_example): the summary becomes the
    document's first sentence, the document is kept whole, truncation still applies; a document with
    no text is an error naming the example, also from the command line."""
    src = tmp_path / "x.jsonl"
    docs = ["Mr. Smith met the U.K. team on Monday. They talked.\nSecond paragraph here.",
            "\n  \nOnly after blank lines. Then more."]
    src.write_text("\n".join(json.dumps({"document": d, "summary": "Ref.", "id": str(i)}) for i, d in enumerate(docs)) + "\n")
    xsum_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o"), "--single-split", "test", "--target", "lead"])
    rows = read(tmp_path / "o" / "test.jsonl")
    assert [r["summary"] for r in rows] == ["Mr. Smith met the U.K. team on Monday.", "Only after blank lines."]
    assert [r["document"] for r in rows] == docs
    xsum_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o2"), "--single-split", "test", "--target", "lead",
                        "--max-summary-words", "3"])
    assert read(tmp_path / "o2" / "test.jsonl")[0]["summary"] == ["Mr. Smith met"]
    assert read(tmp_path / "o2" / "test.jsonl")[1]["summary"] == ["Only after blank"]
    # a document given as sections of sentences (arXiv / PubMed --keep-sections): the first sentence of the first
    assert converter_io.lead_sentence([[], ["", "First one. Second."], ["Later."]]) == "First one."
    assert converter_io.lead_sentence(["  ", []]) is None
    src.write_text(json.dumps({"document": " \n ", "summary": "Ref.", "id": "empty-7"}) + "\n")
    with pytest.raises(converter_io.ExampleError, match="example empty-7 has no document text"):
        xsum_to_jsonl.main(["--jsonl", str(src), "--out", str(tmp_path / "o3"), "--single-split", "test", "--target", "lead"])
    proc = subprocess.run([sys.executable, "-m", "preprocess.xsum_to_jsonl", "--jsonl", str(src), "--out",
                           str(tmp_path / "o4"), "--single-split", "test", "--target", "lead"],
                          capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 1 and "xsum_to_jsonl: error: --target lead: example empty-7" in proc.stderr
    assert not (tmp_path / "o4" / "test.jsonl").exists()


def test_interrupted_converter_leaves_no_split(tmp_path):
    """A converter stopped by bad input in the last split leaves no test.jsonl (the recipes skip the
    conversion when it exists) and no temporary file."""
    d = tmp_path / "newsroom"
    d.mkdir()
    row = {"url": "u", "text": "Some text.", "summary": "S."}
    for s in ("train", "dev"):
        (d / f"{s}.jsonl").write_text(json.dumps(row) + "\n")
    (d / "test.jsonl").write_text(json.dumps(row) + "\n" + '{"url": "u", "text": "tru')
    out = tmp_path / "o"
    with pytest.raises(SystemExit, match=r"test\.jsonl:2: not JSON"):
        newsroom_to_jsonl.main(["--in", str(d), "--out", str(out)])
    assert sorted(p.name for p in out.iterdir()) == ["train.jsonl", "valid.jsonl"]
    cohan = tmp_path / "pubmed"
    cohan.mkdir()
    for s in ("train", "val"):
        (cohan / f"{s}.txt").write_text(json.dumps({"article_text": ["a ."], "abstract_text": ["<S> b . </S>"]}) + "\n")
    (cohan / "test.txt").write_text(json.dumps({"article_text": ["a ."], "abstract_text": ["<S> b . </S>"]}) + "\n{")
    with pytest.raises(SystemExit, match=r"test\.txt:2"):
        arxiv_pubmed_to_jsonl.main(["--in", str(cohan), "--out", str(tmp_path / "o2")])
    assert sorted(p.name for p in (tmp_path / "o2").iterdir()) == ["train.jsonl", "valid.jsonl"]


def test_stats_needs_no_fairseq():
    """The converters' statistics split sentences without fairseq (blocked here: the plugin package
    then registers nothing and its text module imports alone)."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys; sys.modules['fairseq'] = None; from preprocess import converter_io, stats; "
            "assert converter_io.split_sentences('One. Two here.') == ['One.', 'Two here.']; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_aclsum_stats(tmp_path, capsys):
    pytest.importorskip("aclsum")
    from preprocess import aclsum_to_jsonl

    counts = aclsum_to_jsonl.main(["--out", str(tmp_path), "--stats"])
    assert counts == {"train": 100, "valid": 50, "test": 100}
    out = capsys.readouterr().out
    assert "statistics of aclsum" in out and out.count("100/50/100") == 2  # ours and the paper's split
    assert not list(tmp_path.glob("*.tmp"))


def test_cnndm_undecodable_story(tmp_path):
    d = tmp_path / "stories"
    d.mkdir()
    (d / "abc.story").write_bytes(b"Article text \xff\xfe.\n\n@highlight\n\nPoint\n")
    with pytest.raises(ConvertError, match=r"abc\.story: not valid UTF-8"):
        cnndm_to_jsonl.main(["--stories-dir", str(d), "--out", str(tmp_path / "o")])
