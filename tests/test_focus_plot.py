"""focus_plot's document choice: a split the data lacks and an index outside the split are refused
by name before the checkpoint is loaded (the checkpoint path below does not exist: loading it would
fail otherwise)."""
import pytest

from fairseq_sum_plugins.inspection import focus_plot


@pytest.mark.parametrize("extra, message", [
    (["--split", "test", "--document", "50"], "--document 50: the test split of {data} has 12 documents"),
    (["--split", "test", "--document", "-1"], "--document -1: the test split of {data} has 12 documents"),
    (["--split", "validation"],
     "--split validation: no binarized split validation in {data} (it has: test, train, valid)"),
    (["--split", "test.src-tgt"],  # was: its files' prefix, a traceback after loading
     "--split test.src-tgt: no binarized split test.src-tgt in {data} (it has: test, train, "
     "valid)"),
])
def test_a_bad_document_is_refused_before_loading(toy_data, tmp_path, extra, message, capsys):
    with pytest.raises(SystemExit):
        focus_plot.main([toy_data, "--path", str(tmp_path / "no-such.pt"),
                         "--png", str(tmp_path / "f.png"), *extra])
    assert message.format(data=toy_data) in capsys.readouterr().err


def test_a_missing_data_folder_is_refused_by_name(tmp_path, capsys):
    with pytest.raises(SystemExit):
        focus_plot.main([str(tmp_path / "nodata"), "--path", "x.pt", "--png",
                         str(tmp_path / "f.png")])
    assert f"{tmp_path / 'nodata'}: no such data folder" in capsys.readouterr().err


def test_a_model_without_focus_attention_is_refused_by_name(toy_data, tmp_path, capsys):
    from test_inspect import fresh

    ckpt = fresh(toy_data, tmp_path / "plain.pt", "t5_transformer_small")
    with pytest.raises(SystemExit):  # was a ValueError traceback
        focus_plot.main([toy_data, "--path", ckpt, "--split", "test", "--png",
                         str(tmp_path / "f.png")])
    assert f"{ckpt}: this model has no focus attention" in capsys.readouterr().err
