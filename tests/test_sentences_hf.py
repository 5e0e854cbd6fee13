"""Sentence splitters (``--sentence-splitter regex|pysbd``, one function for prepare, the ``sum_moses``
tokenizer and the scorer) and ``fairseq-sum-prepare --hf-dataset``."""
import json
import sys
from argparse import Namespace

import pytest

from fairseq_sum_plugins import text
from fairseq_sum_plugins.text import split_sentences, tokenize_document
from preprocess.prepare import PrepareError
from helpers import make_examples, read, run_prepare
from tolerances import approx64

SPLITTERS = ["regex", pytest.param("pysbd", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("pysbd") is None, reason="pysbd not installed"))]

# (text, sentences): the cases a regex splitter of periods and capitals gets wrong
HARD_CASES = [
    ("We met at 5 p.m. Then we left.", ["We met at 5 p.m.", "Then we left."]),
    ("He moved to the U.K. The weather was bad.", ["He moved to the U.K.", "The weather was bad."]),
    ("They paid $5m. iPhone sales rose.", ["They paid $5m.", "iPhone sales rose."]),
    ("He wore No. 5 on his shirt. It was red.", ["He wore No. 5 on his shirt.", "It was red."]),
    ("The U.S. President spoke. He left.", ["The U.S. President spoke.", "He left."]),
    ("See e.g. The Times for more. Fine.", ["See e.g. The Times for more.", "Fine."]),
]
# a text the two splitters cut differently: pysbd knows month abbreviations end sentences
DIFFERS = "Prices rose in Jan. Sales fell."


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_splitter_hard_cases(splitter):
    for doc, sents in HARD_CASES:
        assert split_sentences(doc, splitter) == sents, (splitter, doc)
    # newlines still cut, <sep> still wins, lists are kept
    assert split_sentences("One here.\nTwo there", splitter) == ["One here.", "Two there"]
    assert split_sentences("A b. C d. <sep> E f.", splitter) == ["A b. C d.", "E f."]
    assert split_sentences(["x. Y.", "z"], splitter) == ["x. Y.", "z"]


def test_regex_lowercase_no_before_number_ends_sentence():
    assert split_sentences("He said no. 5 people came.", "regex") == ["He said no.", "5 people came."]


def test_splitter_errors(monkeypatch):
    with pytest.raises(ValueError, match="--sentence-splitter must be one of regex, pysbd"):
        split_sentences("A. B.", "nltk")
    text._pysbd_segmenter.cache_clear()
    monkeypatch.setitem(sys.modules, "pysbd", None)
    with pytest.raises(ImportError, match="pip install pysbd"):
        split_sentences("A. B.", "pysbd")
    text._pysbd_segmenter.cache_clear()


def test_sum_moses_and_scorer_use_the_splitter(tmp_path):
    """The fairseq tokenizer and ``fairseq-sum-score --split-sentences`` honour --sentence-splitter."""
    pytest.importorskip("pysbd")
    from fairseq.data import encoders
    from fairseq_sum_plugins.scoring import score

    from fairseq import options

    assert split_sentences(DIFFERS, "regex") != split_sentences(DIFFERS, "pysbd")
    args = options.parse_args_and_arch(options.get_interactive_generation_parser(), [
        "data", "--path", "x.pt", "--tokenizer", "sum_moses", "--sentence-splitter", "pysbd"])
    assert args.sentence_splitter == "pysbd"
    for splitter in ("regex", "pysbd"):
        tok = encoders.build_tokenizer(Namespace(tokenizer="sum_moses", moses_lang="en", sum_lowercase=False,
                                                 sum_sentence_split=True, sentence_splitter=splitter))
        assert tok.encode(DIFFERS) == tokenize_document(DIFFERS, splitter=splitter)
        assert tok.encode(DIFFERS).count("<sep>") == len(split_sentences(DIFFERS, splitter)) - 1
    (tmp_path / "h").write_text("Prices rose in Jan. Sales fell sharply.\n")
    (tmp_path / "r").write_text("Sales fell sharply in Jan. Prices rose.\n")
    scores = {}
    for splitter in ("regex", "pysbd"):
        res = score.main(["--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r"), "--split-sentences",
                          "--sentence-splitter", splitter, "--bootstrap-samples", "0"])
        scores[splitter] = res["rougeL"]
    # regex: one sentence each, LCS "Sales fell sharply" or "Prices rose in Jan." -> 3/7 tokens
    # (rouge-score drops punctuation); pysbd: two sentences each, every reference sentence matched whole -> 7/7
    assert scores["regex"] == approx64(3 / 7)
    assert scores["pysbd"] == approx64(1.0)


@pytest.fixture
def hf_dict(tmp_path):
    datasets = pytest.importorskip("datasets")

    def split(n, seed):
        ex = make_examples(n, seed)
        return {"id": [e["id"] for e in ex], "article": [e["document"] for e in ex],
                "highlights": [" ".join(e["summary"]) for e in ex], "extra": [1] * n}

    train = split(30, 1)
    train["article"][0] = DIFFERS + " The end came."
    dd = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict(train),
        "validation": datasets.Dataset.from_dict(split(5, 2)),
        "test": datasets.Dataset.from_dict(split(5, 3)),
    })
    path = tmp_path / "hf"
    dd.save_to_disk(str(path))
    return path, dd


def test_prepare_hf_dataset(tmp_path, hf_dict):
    """save_to_disk -> fairseq-sum-prepare --hf-dataset -> binarized data with the dataset's splits and ids;
    the pysbd splitter is used for <sep> and recorded for inference; a re-run is up to date."""
    pytest.importorskip("pysbd")
    from fairseq.data import Dictionary, data_utils

    path, dd = hf_dict
    out = tmp_path / "out"
    run_prepare(path, out, "--src-field", "article", "--tgt-field", "highlights",
                "--sentence-splitter", "pysbd", source="--hf-dataset")
    d = Dictionary.load(str(out / "bin" / "dict.src.txt"))
    for split, hf_split in (("train", "train"), ("valid", "validation"), ("test", "test")):
        assert read(out / "tok" / f"{split}.id") == dd[hf_split]["id"]
        ds = data_utils.load_indexed_dataset(str(out / "bin" / f"{split}.src-tgt.src"), d)
        assert len(ds) == len(dd[hf_split])
    assert read(out / "raw" / "train.src")[0] == "Prices rose in Jan. <sep> Sales fell. <sep> The end came."
    info = json.loads((out / "bin" / "prepare_args.json").read_text())
    assert info["tokenizer"]["sentence_splitter"] == "pysbd"
    assert "--sentence-splitter pysbd" in info["interactive_args"]
    mtime = (out / "tok" / "train.src").stat().st_mtime_ns
    run_prepare(path, out, "--src-field", "article", "--tgt-field", "highlights",
                "--sentence-splitter", "pysbd", source="--hf-dataset")
    assert (out / "tok" / "train.src").stat().st_mtime_ns == mtime  # export unchanged: tokenize skipped


def test_prepare_hf_dataset_errors(tmp_path, hf_dict):
    datasets = pytest.importorskip("datasets")
    path, dd = hf_dict
    with pytest.raises(PrepareError, match=r"no field 'document' \(has: id, article, highlights, extra\); "
                                           r"choose it with --src-field"):
        run_prepare(path, tmp_path / "o1", source="--hf-dataset")
    no_test = tmp_path / "no_test"
    datasets.DatasetDict({"train": dd["train"], "validation": dd["validation"]}).save_to_disk(str(no_test))
    with pytest.raises(PrepareError, match="no test split .* it has train, validation"):
        run_prepare(no_test, tmp_path / "o2", "--src-field", "article", "--tgt-field", "highlights",
                    source="--hf-dataset")
    single = tmp_path / "single"
    dd["train"].save_to_disk(str(single))
    with pytest.raises(PrepareError, match="one split without names"):
        run_prepare(single, tmp_path / "o3", source="--hf-dataset")


def test_prepare_hf_dataset_without_datasets(tmp_path, monkeypatch):
    """Without the optional package the error says what to install."""
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(PrepareError, match="--hf-dataset needs the `datasets` package: pip install datasets"):
        run_prepare(tmp_path, tmp_path / "o", source="--hf-dataset")


def test_hf_dataset_with_valid_and_validation_is_ambiguous(tmp_path, hf_dict):
    """As --jsonl-dir refuses valid.jsonl beside validation.jsonl, --hf-dataset refuses a dataset with
    both splits (it took one silently), before exporting anything."""
    datasets = pytest.importorskip("datasets")
    path, dd = hf_dict
    both = tmp_path / "both"
    datasets.DatasetDict({**dd, "valid": dd["test"]}).save_to_disk(str(both))
    with pytest.raises(PrepareError, match=r"--hf-dataset .*both: ambiguous valid split: valid and validation both exist"):
        run_prepare(both, tmp_path / "out", "--src-field", "article", "--tgt-field", "highlights",
                    source="--hf-dataset")
    assert not (tmp_path / "out" / "hf_jsonl" / "train.jsonl").exists()


def test_hf_dataset_logs_no_debug_records(tmp_path, hf_dict, caplog):
    """datasets / fsspec logged every file they open at DEBUG (fairseq leaves the root logger at
    DEBUG): their loggers are quiet once the plugin is imported."""
    import logging

    path, _ = hf_dict
    caplog.set_level(logging.NOTSET)
    run_prepare(path, tmp_path / "out", "--src-field", "article", "--tgt-field", "highlights",
                "--splits", "train", source="--hf-dataset")
    chatty = [r for r in caplog.records if r.name.split(".")[0] in ("fsspec", "datasets", "filelock")
              and r.levelno < logging.WARNING]
    assert not chatty, [f"{r.name}: {r.getMessage()}" for r in chatty[:3]]
