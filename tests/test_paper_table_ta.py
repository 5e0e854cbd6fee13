"""recipes/papers.sh ta at smoke scale: the Topic Assistant's main table (Transformer and BART, each
with and without TA), semantic similarity (eq. 10) and the topics, on XSum-shaped data."""
import json
import os

import pytest

from paper_smoke import check_table, papers_sh


# a bart_base-shaped BART release for the BART rows (papers.sh's BART_ARCH and BART_EXTRA), its
# positions covering SMOKE's MAX_SRC (200) and the XSum decoding's 60
BART_SMOKE = ("--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 --decoder-embed-dim 32 "
              "--encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 --encoder-attention-heads 2 "
              "--decoder-attention-heads 2 --max-source-positions 256 --max-target-positions 256").split()


def _tiny_bart_release(folder):
    """A tiny GPT-2 vocabulary (the byte symbols: any text encodes) and a fresh ``bart_base``
    model.pt over it, in the layout of fairseq's BART release."""
    import shutil

    from helpers import save_bart_checkpoint, write_gpt2_files

    paths = write_gpt2_files(str(folder))
    dicts = folder / "dicts"
    dicts.mkdir()
    for lang in ("src", "tgt"):
        shutil.copy(paths["dict.txt"], dicts / f"dict.{lang}.txt")
    save_bart_checkpoint(str(dicts), str(folder / "model.pt"), BART_SMOKE, "--source-lang", "src",
                         "--target-lang", "tgt")
    shutil.rmtree(dicts)
    return str(folder)


@pytest.mark.slow
def test_topic_assistant_main_ss_and_topics_at_smoke_scale(raw_corpora, papers_out, tmp_path):
    out = papers_out("ta")
    bart = _tiny_bart_release(tmp_path / "bart")
    text = papers_sh(out, "ta", "main", f"xsum={raw_corpora['xsum']}", f"bart={bart}", LENPENS="0.6 1.0",
                     BART_ARCH="bart_base_ta", BART_EXTRA=" ".join(BART_SMOKE))
    rows = check_table(text, "ta", "main", ["XSum / Transformer (", "XSum / Transformer+TA", "XSum / Lead-3",
                                            "XSum / BART (", "XSum / BART+TA"])
    assert "not run (cnn_dm/" in rows['CNN/DM / BART (Table 5, row "BART")'][-1]
    for name in ("bart", "bart_ta"):  # each the mean of its kept checkpoints' decodings
        mean = json.load(open(os.path.join(out, "xsum", name, "test.mean.json"), encoding="utf-8"))
        assert mean["averaged"] >= 1
    mean = json.load(open(os.path.join(out, "xsum", "transformer_ta", "test.mean.json"), encoding="utf-8"))
    # the checkpoints fairseq kept by validation loss (--keep-best-checkpoints 3 saves a new one when
    # it beats the kept ones: 3 validations of 3 updates may keep fewer), each decoded and averaged
    kept = [f for f in os.listdir(os.path.join(out, "xsum", "checkpoints", "transformer_ta"))
            if f.startswith("checkpoint.best_loss_")]
    assert 1 <= mean["averaged"] == min(len(kept), 3) and len(mean["files"]) == mean["averaged"]
    assert open(os.path.join(out, "xsum", "transformer_ta", "lenpen.txt")).read().count("alpha ") == 2
    text = papers_sh(out, "ta", "ss", f"xsum={raw_corpora['xsum']}", LENPENS="0.6 1.0")
    check_table(text, "ta", "ss", ["XSum / Transformer (", "XSum / Transformer+TA"])
    text = papers_sh(out, "ta", "topics", f"xsum={raw_corpora['xsum']}", LENPENS="0.6 1.0")
    assert "## Topics of xsum/topics.json" in text and "- topic 0: " in text
