"""Tests of the preprocessing pipeline (text normalisation, prepare, dataset converters)."""
import filecmp
import json
import os
import re
from argparse import Namespace

import pytest

from fairseq_sum_plugins.text import (
    SENT_SEP,
    detokenize,
    split_sentences,
    tokenize_document,
)
from preprocess import prepare, xsum_to_jsonl
from preprocess.prepare import PrepareError
from helpers import CORPUS_WORDS as WORDS, _sentence, make_corpus, make_examples, read, run_prepare, write_jsonl  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------- text


def test_split_sentences():
    text = 'Mr. Smith met Dr. J. Watson in the U.S. yesterday. He said "Hi!" Then he left?\n\n' \
           "See Fig. 2 for details. 2019 was good."
    assert split_sentences(text) == [
        "Mr. Smith met Dr. J. Watson in the U.S. yesterday.",
        'He said "Hi!"',
        "Then he left?",
        "See Fig. 2 for details.",
        "2019 was good.",
    ]
    assert split_sentences("no final stop, lower case. still one") == [
        "no final stop, lower case. still one"]
    assert split_sentences(["  First  one. Second.", "", "Third"]) == [
        "First one. Second.", "Third"]
    assert split_sentences("A b. C d. <sep> E f.") == ["A b. C d.", "E f."]  # pre-segmented
    assert split_sentences("") == [] and split_sentences(" \n \n") == []
    assert split_sentences(text) == split_sentences(text)
    # a number ending a sentence is no abbreviation; capitals of any script start one
    assert split_sentences("It cost £1.5m. It rose 0.5%. He ran 9.58. Nobody did.") == [
        "It cost £1.5m.", "It rose 0.5%.", "He ran 9.58.", "Nobody did."]
    assert split_sentences("São Paulo spoke. Élise replied. Ökonomen nicht. é no.") == [
        "São Paulo spoke.", "Élise replied.", "Ökonomen nicht. é no."]
    assert split_sentences("A Ph.D. holder. E.g. this one.") == ["A Ph.D. holder.", "E.g. this one."]


def test_tokenize_detokenize_round_trip():
    text = 'The cat, which was big, sat on the mat. It cost $5.50 (20% off)!\n"Great," she said.'
    tok = tokenize_document(text)
    assert tok == ('The cat , which was big , sat on the mat . <sep> It cost $ 5.50 ( 20 % off ) ! '
                   '<sep> " Great , " she said .')
    assert detokenize(tok) == f" {SENT_SEP} ".join(split_sentences(text))
    assert tokenize_document(text, lowercase=True) == tok.lower()
    assert SENT_SEP not in tokenize_document(text, sentence_split=False)
    assert tokenize_document(["one"]) == "one"
    assert tokenize_document(" \n ") == ""
    # tokenizing the untokenized sentences again gives the same line
    assert tokenize_document(detokenize(tok)) == tok


def test_sum_moses_fairseq_tokenizer():
    from fairseq import options
    from fairseq.data import encoders

    cfg = Namespace(tokenizer="sum_moses", moses_lang="en", sum_lowercase=True,
                    sum_sentence_split=True)
    tok = encoders.build_tokenizer(cfg)
    text = "Hello there, Mr. Smith! How are you?"
    assert tok.encode(text) == tokenize_document(text, lowercase=True)
    assert tok.decode("hello there , mr. smith ! <sep> how are you ?") == \
        "hello there, mr. smith! <sep> how are you?"

    parser = options.get_interactive_generation_parser()
    args = options.parse_args_and_arch(
        parser, ["data", "--path", "x.pt", "--tokenizer", "sum_moses", "--sum-lowercase"])
    assert (args.moses_lang, args.sum_lowercase, args.sum_sentence_split) == ("en", True, True)


# ---------------------------------------------------------------- prepare


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    base = tmp_path_factory.mktemp("prep")
    raw = make_corpus(base / "raw", valid_name="val")  # val.jsonl is accepted as valid
    stats = run_prepare(raw, base / "out")
    return raw, base / "out", stats


def test_prepare_makes_loadable_dataset(prepared):
    from fairseq.data import Dictionary, data_utils

    _, out, stats = prepared
    bin_dir = out / "bin"
    d = Dictionary.load(str(bin_dir / "dict.src.txt"))
    assert SENT_SEP in d.indices
    assert filecmp.cmp(bin_dir / "dict.src.txt", bin_dir / "dict.tgt.txt", shallow=False)

    # every sentencepiece piece is in the fairseq dictionary
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(bin_dir / "spm.model"))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
              if not (sp.is_unknown(i) or sp.is_control(i))]
    assert all(d.index(p) != d.unk() for p in pieces)
    assert len(d) == len(pieces) + 4

    sep = d.index(SENT_SEP)
    for split, n in (("train", 40), ("valid", 6), ("test", 6)):
        for side, limit in (("src", 40), ("tgt", 12)):
            ds = data_utils.load_indexed_dataset(str(bin_dir / f"{split}.src-tgt.{side}"), d)
            assert len(ds) == n
            for item in ds:
                assert 2 <= len(item) <= limit + 1 and item[-1] == d.eos()
                assert item[-2] != sep and d.unk() not in item.tolist()
        assert stats["tokenize"][split]["examples"] == n

    assert stats["encode"]["train"]["src_truncated"] > 0
    info = json.loads((bin_dir / "prepare_args.json").read_text())
    assert info["tokenizer"] == {"tokenizer": "sum_moses", "moses_lang": "en", "sum_lowercase": False,
                                 "sum_sentence_split": True, "sentence_splitter": "regex"}
    assert info["options"]["max_src_tokens"] == 40
    assert read(out / "tok" / "train.src")[5] == "Alone"
    assert read(out / "tok" / "train.id")[0] == "ex1-0"


def test_raw_output_reproduces_tokenization(prepared):
    """OUT/raw fed to fairseq's ``sum_moses`` + ``sentencepiece`` encoders gives OUT/spm."""
    from fairseq.data import encoders

    _, out, _ = prepared
    tokenizer = encoders.build_tokenizer(Namespace(
        tokenizer="sum_moses", moses_lang="en", sum_lowercase=False, sum_sentence_split=True))
    bpe = encoders.build_bpe(Namespace(
        bpe="sentencepiece", sentencepiece_model=str(out / "bin" / "spm.model")))
    for side, limit in (("src", 40), ("tgt", 12)):
        raw, tok = read(out / "raw" / f"test.{side}"), read(out / "tok" / f"test.{side}")
        assert [tokenize_document(line) for line in raw] == tok
        encoded = [bpe.encode(tokenizer.encode(line)).split() for line in raw]
        assert [" ".join(prepare.truncate(e, limit)) for e in encoded] == \
            read(out / "spm" / f"test.{side}")


def test_prepare_is_deterministic_and_skips_fresh_steps(prepared, tmp_path, capsys):
    raw, out, _ = prepared
    other = tmp_path / "again"
    run_prepare(raw, other)
    names = ["spm.model", "spm.vocab", "dict.txt"]
    for d in ("tok", "raw", "spm"):
        names += [f"{d}/{f}" for f in os.listdir(out / d)]
    names += [f"bin/{f}" for f in os.listdir(out / "bin")
              if f not in ("preprocess.log", "prepare_args.json")]
    match, mismatch, errors = filecmp.cmpfiles(out, other, names, shallow=False)
    assert not mismatch and not errors and len(match) > 20

    mtime = os.stat(other / "bin" / "train.src-tgt.src.bin").st_mtime_ns
    capsys.readouterr()
    run_prepare(raw, other)
    err = capsys.readouterr().err
    assert all(f"{step}: up to date" in err for step in ("tokenize", "spm", "encode", "binarize"))
    assert os.stat(other / "bin" / "train.src-tgt.src.bin").st_mtime_ns == mtime
    run_prepare(raw, other, "--max-tgt-tokens", "8")  # changed option: encode reruns
    assert "encode: up to date" not in capsys.readouterr().err
    run_prepare(raw, other, "--force")
    assert filecmp.cmp(out / "spm" / "train.src", other / "spm" / "train.src", shallow=False)


def test_failed_run_leaves_no_stamp_for_the_next(tmp_path, capsys):
    """A run that fails half-way (train split rewritten, valid bad) must not let the next run with
    the first options take the half-rewritten outputs for up to date."""
    raw = make_corpus(tmp_path / "raw", n_train=8)
    with open(raw / "train.jsonl", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    for r in records:
        r["text"] = "Other words here. And more."
    write_jsonl(raw / "train.jsonl", records)
    # valid has no "text" field: the --src-field text run fails there, after rewriting train
    out = tmp_path / "out"
    run_prepare(raw, out, "--src-field", "document")
    first = read(out / "tok" / "train.src")
    with pytest.raises(PrepareError, match="missing field 'text'"):
        run_prepare(raw, out, "--src-field", "text")
    assert read(out / "tok" / "train.src") != first  # train was rewritten before valid failed
    capsys.readouterr()
    run_prepare(raw, out, "--src-field", "document")
    assert "tokenize: up to date" not in capsys.readouterr().err
    assert read(out / "tok" / "train.src") == first


def test_input_replaced_by_an_older_file_is_seen(tmp_path, capsys):
    raw = make_corpus(tmp_path / "raw", n_train=8)
    out = tmp_path / "out"
    run_prepare(raw, out)
    replacement = tmp_path / "test.jsonl"
    write_jsonl(replacement, make_examples(6, 9))
    os.utime(replacement, ns=(10**18, 10**18))  # older than every output (2001)
    os.replace(replacement, raw / "test.jsonl")
    capsys.readouterr()
    run_prepare(raw, out)
    assert "tokenize: up to date" not in capsys.readouterr().err
    new_docs = [line.replace(" <sep>", "") for line in read(out / "raw" / "test.src")]
    assert new_docs == [ex["document"].replace("\n", " ") for ex in make_examples(6, 9)]


def test_truncation_never_ends_on_separator():
    assert prepare.truncate(["▁a", "▁.", "▁", "<sep>", "▁b"], 4) == ["▁a", "▁."]
    assert prepare.truncate(["▁a", "▁b"], 0) == ["▁a", "▁b"]
    assert prepare.truncate(["▁a", "▁b"], 5) == ["▁a", "▁b"]


def test_parallel_input_and_skip_empty(tmp_path, capsys):
    src = tmp_path / "par"
    src.mkdir()
    exs = make_examples(30, 4)
    for split in ("train", "valid", "test"):
        docs = [e["document"].replace("\n", " ") for e in exs]
        summs = [" <sep> ".join(e["summary"]) for e in exs]
        docs[3], summs[7] = "   ", ""  # dropped with --skip-empty
        (src / f"{split}.source").write_text("\n".join(docs) + "\n")
        (src / f"{split}.target").write_text("\n".join(summs) + "\n")
    stats = run_prepare(src, tmp_path / "out", "--skip-empty", "--workers", "2",
                        source="--parallel-dir")
    train = stats["tokenize"]["train"]
    assert (train["examples"], train["skipped"]) == (28, 2)
    assert "dropped 2 pairs" in capsys.readouterr().err
    out = tmp_path / "out"
    for d, side in (("raw", "src"), ("raw", "tgt"), ("tok", "src"), ("tok", "tgt"),
                    ("tok", "id"), ("spm", "src"), ("spm", "tgt")):
        assert len(read(out / d / f"train.{side}")) == 28
    assert read(out / "tok" / "train.id")[3] == "5"
    assert read(out / "tok" / "train.tgt")[0].count(SENT_SEP) == summs[0].count(SENT_SEP)


def test_summary_without_words_is_refused_or_skipped(tmp_path, capsys):
    """A summary with no word the scorer counts ("...", "- !") was kept even with --skip-empty (and the
    scorer then refused the whole split): an error naming its line, or dropped and counted with
    --skip-empty, every aligned output (ids, references) keeping the other examples."""
    d = make_corpus(tmp_path / "c", n_train=12)
    train = make_examples(12, 1)
    train[4]["summary"] = "..."
    write_jsonl(d / "train.jsonl", train)
    valid = make_examples(6, 2)
    valid[2]["summary"] = ["- !", "<unk>"]
    write_jsonl(d / "valid.jsonl", valid)
    with pytest.raises(PrepareError, match=r"train\.jsonl:5: summary with no word ROUGE can count \('\.\.\.'\) "
                                           r"\(use --skip-empty to drop such pairs\)"):
        run_prepare(d, tmp_path / "out")
    stats = run_prepare(d, tmp_path / "out", "--skip-empty")
    assert [(stats["tokenize"][s]["examples"], stats["tokenize"][s]["skipped"]) for s in ("train", "valid")] == \
        [(11, 1), (5, 1)]
    err = capsys.readouterr().err
    assert "tokenize train: dropped 1 pairs with an empty document or a summary without words" in err
    out = tmp_path / "out"
    for split, exs, gone in (("train", train, 4), ("valid", valid, 2)):
        kept = [e["id"] for i, e in enumerate(exs) if i != gone]
        assert read(out / "tok" / f"{split}.id") == kept
        refs = [json.loads(line) for line in read(out / "bin" / f"{split}.ref.jsonl")]
        assert [r["id"] for r in refs] == kept and [r["line"] for r in refs] == [i + 1 for i in range(len(exs)) if i != gone]


@pytest.mark.parametrize("ex_id", ["a\nb", "a\rb", "a\u2028b", "a\x85b"])
def test_id_with_a_line_break_is_refused(tmp_path, ex_id):
    """tok/{split}.id holds one id per line: an id with a line break would shift every id after it."""
    d = make_corpus(tmp_path / "c", n_train=6)
    train = make_examples(6, 1)
    train[2]["id"] = ex_id
    write_jsonl(d / "train.jsonl", train)
    with pytest.raises(PrepareError, match=rf"train\.jsonl:3: id {re.escape(repr(ex_id))} holds a line break"):
        run_prepare(d, tmp_path / "out")
    train[2]["id"] = "a b\t"  # other whitespace is kept as it is
    write_jsonl(d / "train.jsonl", train)
    run_prepare(d, tmp_path / "out")
    assert read(tmp_path / "out" / "tok" / "train.id") == [e["id"] for e in train]


def _bad_corpus(tmp_path, train_lines):
    d = tmp_path / "bad"
    make_corpus(d, n_train=4)
    write_jsonl(d / "train.jsonl", train_lines)
    return d


@pytest.mark.parametrize("line,message", [
    ('{"document": "A b.", "summary": "C d."', r"train\.jsonl:2: invalid JSON"),
    ('{"document": "A b.", "abstract": "C d."}', r"train\.jsonl:2: missing field 'summary'"),
    ('{"document": 3, "summary": "C d."}', r"train\.jsonl:2: field 'document' must be a string"),
    ('{"document": " \\n ", "summary": "C d."}', r"train\.jsonl:2: empty document"),
    ('{"document": "A b.", "summary": []}', r"train\.jsonl:2: empty summary"),
    ('[1, 2]', r"train\.jsonl:2: expected a JSON object"),
])
def test_bad_jsonl_input(tmp_path, line, message):
    good = json.dumps({"document": "A b.", "summary": "C d."})
    d = _bad_corpus(tmp_path, [good, line, good])
    with pytest.raises(PrepareError, match=message):
        run_prepare(d, tmp_path / "out")
    assert not (tmp_path / "out" / "tok" / "train.src").exists()  # no stale partial output


def test_bad_corpus_layout(tmp_path):
    d = make_corpus(tmp_path / "c", n_train=4)
    os.remove(d / "test.jsonl")
    with pytest.raises(PrepareError, match=r"missing test split: .*test\.jsonl not found"):
        run_prepare(d, tmp_path / "out")

    p = tmp_path / "par"
    p.mkdir()
    for split in ("train", "valid", "test"):
        (p / f"{split}.source").write_text("A b.\nC d.\n")
        (p / f"{split}.target").write_text("E.\nF.\n")
    (p / "valid.target").write_text("E.\n")
    with pytest.raises(PrepareError, match=r"valid\.source has 2 lines but .*valid\.target has 1"):
        run_prepare(p, tmp_path / "out2", source="--parallel-dir")
    (p / "valid.target").write_text("E.\n\n")
    with pytest.raises(PrepareError, match=r"valid\.target:2: empty summary"):
        run_prepare(p, tmp_path / "out2", source="--parallel-dir")
    os.remove(p / "test.target")
    with pytest.raises(PrepareError, match=r"test\.target not found"):
        run_prepare(p, tmp_path / "out2", source="--parallel-dir")


def test_cli_reports_errors(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.argv", ["fairseq-sum-prepare", "--jsonl-dir", str(tmp_path / "nope"),
                                     "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match="fairseq-sum-prepare: error: .*nope: no such directory"):
        prepare.cli_main()


# ---------------------------------------------------------------- converters


RAW_XSUM = """[SN]URL[SN]
http://www.bbc.co.uk/news/{id}

[SN]TITLE[SN]
A title

[SN]FIRST-SENTENCE[SN]
The summary of {id}.

[SN]RESTBODY[SN]
First sentence of {id}.
Share this with
Email
Second sentence.
"""


def test_xsum_raw_format(tmp_path):
    raw = tmp_path / "bbc"
    raw.mkdir()
    for i in ("101", "102", "103"):
        (raw / f"{i}.summary").write_text(RAW_XSUM.format(id=i))
    (raw / "104.data").write_text(RAW_XSUM.format(id="104").replace("[SN]", "[XSUM]"))
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": ["101", "102"], "validation": ["103"], "test": ["104"]}))
    out = tmp_path / "out"
    args = ["--raw-dir", str(raw), "--split-file", str(split), "--out", str(out)]
    counts = xsum_to_jsonl.main(args)
    assert counts == {"train": 2, "valid": 1, "test": 1}
    ex = json.loads(read(out / "test.jsonl")[0])
    assert ex == {"document": "First sentence of 104.\nSecond sentence.",
                  "summary": "The summary of 104.", "id": "104"}
    assert xsum_to_jsonl.main(args + ["--limit-per-split", "1"])["train"] == 1

    (raw / "102.summary").write_text(RAW_XSUM.format(id="102").split("[SN]RESTBODY")[0])
    with pytest.raises(xsum_to_jsonl.ConvertError, match=r"102\.summary: no \[SN\]RESTBODY"):
        xsum_to_jsonl.main(args)
    os.remove(raw / "102.summary")
    with pytest.raises(xsum_to_jsonl.ConvertError, match=r"1 train ids .* \(first: 102\)"):
        xsum_to_jsonl.main(args)
    assert xsum_to_jsonl.main(args + ["--skip-missing"])["train"] == 1
    split.write_text('{"train": ["101"]')
    with pytest.raises(xsum_to_jsonl.ConvertError, match="cannot read the split file"):
        xsum_to_jsonl.main(args)


def test_xsum_jsonl(tmp_path):
    exs = [{"document": f"Doc {i}.\nMore.", "summary": f"Sum {i}.", "id": 1000 + i}
           for i in range(20)]
    single = tmp_path / "test.jsonl"
    write_jsonl(single, exs)
    out = tmp_path / "out"
    args = ["--jsonl", str(single), "--out", str(out), "--valid-frac", "0.2", "--test-frac", "0.1"]
    assert xsum_to_jsonl.main(args) == {"train": 14, "valid": 4, "test": 2}
    first = {s: read(out / f"{s}.jsonl") for s in ("train", "valid", "test")}
    xsum_to_jsonl.main(args)
    assert first == {s: read(out / f"{s}.jsonl") for s in ("train", "valid", "test")}
    ids = sorted(json.loads(l)["id"] for lines in first.values() for l in lines)
    assert ids == sorted(str(1000 + i) for i in range(20))

    d = tmp_path / "hf"
    d.mkdir()
    write_jsonl(d / "train.jsonl", exs[:10])
    write_jsonl(d / "test.jsonl", exs[10:])
    assert xsum_to_jsonl.main(["--jsonl", str(d), "--out", str(out), "--valid-frac", "0.3"]) == \
        {"train": 7, "valid": 3, "test": 10}
    write_jsonl(d / "validation.jsonl", exs[:2] + ['{"document": "x"'])
    with pytest.raises(xsum_to_jsonl.ConvertError, match=r"validation\.jsonl:3: invalid JSON"):
        xsum_to_jsonl.main(["--jsonl", str(d), "--out", str(out)])
    write_jsonl(d / "validation.jsonl", [{"document": "x", "id": 1}])
    with pytest.raises(xsum_to_jsonl.ConvertError, match=r"validation\.jsonl:1: .*'summary'"):
        xsum_to_jsonl.main(["--jsonl", str(d), "--out", str(out)])


def _xsum_sample():
    for base in (ROOT, os.path.dirname(ROOT)):
        path = os.path.join(base, "shared", "data", "xsum-sample", "test.jsonl")
        if os.path.isfile(path):
            return path
    return None


@pytest.mark.skipif(_xsum_sample() is None, reason="shared/data/xsum-sample not available")
def test_xsum_sample_end_to_end(tmp_path):
    with open(_xsum_sample(), encoding="utf-8") as f:
        lines = [next(f) for _ in range(60)]
    (tmp_path / "slice.jsonl").write_text("".join(lines), encoding="utf-8")
    xsum_to_jsonl.main(["--jsonl", str(tmp_path / "slice.jsonl"), "--out", str(tmp_path / "raw")])
    stats = prepare.main(["--jsonl-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "out"),
                          "--vocab-size", "300", "--max-src-tokens", "200", "--lowercase"])
    assert [stats["tokenize"][s]["examples"] for s in ("train", "valid", "test")] == [48, 6, 6]
    assert stats["tokenize"]["train"]["src_sents"] > 48 * 3
    assert all(line == line.lower() for line in read(tmp_path / "out" / "tok" / "valid.src"))


def test_aclsum_conversion(tmp_path):
    pytest.importorskip("aclsum")
    from preprocess import aclsum_to_jsonl

    counts = aclsum_to_jsonl.main(["--out", str(tmp_path)])
    assert counts == {"train": 100, "valid": 50, "test": 100}
    ex = json.loads(read(tmp_path / "valid.jsonl")[0])
    assert set(ex) == {"id", "title", "document", "summary"}
    assert isinstance(ex["summary"], list) and len(ex["summary"]) >= 2
    assert ex["document"].count("\n") > 5 and len(ex["document"].split()) > 1000
    align = aclsum_to_jsonl.align_sentences
    assert align("A b, c. D e.", ["A b , c .", "D e ."]) == ["A b, c.", "D e."]
    assert align("A b.", ["X ."]) is None
