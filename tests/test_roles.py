"""fairseq-sum-roles' input checks: a split the data lacks, a negative --max-documents and a model
without discrete roles are refused by name (the last one was a ValueError traceback)."""
import pytest

from fairseq_sum_plugins.inspection import roles
from test_inspect import fresh


@pytest.mark.parametrize("extra, message", [
    (["--split", "validation"], "--split validation: no binarized split validation in {data}"),
    (["--max-documents", "-1"], "--max-documents must be >= 0, got -1"),
])
def test_bad_options_are_refused_before_loading(toy_data, tmp_path, extra, message, capsys):
    with pytest.raises(SystemExit):
        roles.cli_main([toy_data, "--path", str(tmp_path / "no-such.pt"), *extra])
    assert message.format(data=toy_data) in capsys.readouterr().err


def test_a_model_without_discrete_roles_is_refused_by_name(toy_data, tmp_path, capsys):
    ckpt = fresh(toy_data, tmp_path / "plain.pt", "t5_transformer_small")
    with pytest.raises(SystemExit):
        roles.cli_main([toy_data, "--path", ckpt, "--split", "test"])
    assert f"{ckpt}: role analysis needs a TP-Transformer with discrete roles" in \
        capsys.readouterr().err
