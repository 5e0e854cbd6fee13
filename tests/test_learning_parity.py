"""benchmarks/learning_parity.py: four models on the same batches, validation curves, merged seeds."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
pytest.importorskip("transformers")
import learning_parity  # noqa: E402

TINY = ["--embed-dim", "16", "--ffn-dim", "32", "--layers", "1", "--heads", "2", "--max-tokens", "400",
        "--max-source-positions", "64", "--max-target-positions", "32"]


def test_parity_run_records_every_models_validation_and_merges_seeds(toy_data, tmp_path):
    runs = []
    for seed in (1, 2):
        out = tmp_path / f"s{seed}.json"
        summary = learning_parity.main([toy_data, "--seeds", str(seed), "--updates", "2", "--valid-every", "1",
                                        "--json", str(out), *TINY])
        curves = summary["seeds"][seed]
        assert set(curves) == {"default cell", "fairseq transformer", "T5 cell", "HF T5"}
        assert all([p["updates"] for p in c] == [1, 2] and all(p["valid_nll"] > 0 for p in c) for c in curves.values())
        runs.append(str(out))
    merged = learning_parity.main(["-", "--merge", *runs, "--json", str(tmp_path / "m.json"),
                                   "--png", str(tmp_path / "m.png")])
    assert sorted(merged["seeds"]) == [1, 2] and merged["args"]["pairs"] == ["default", "t5"]
    assert json.load(open(tmp_path / "m.json"))["seeds"]["2"]["HF T5"] == json.load(open(runs[1]))["seeds"]["2"]["HF T5"]
    assert (tmp_path / "m.png").stat().st_size > 1000
    other = json.load(open(runs[1]))
    other["args"]["lr"] = 0.5
    json.dump(other, open(tmp_path / "other.json", "w"))
    with pytest.raises(SystemExit, match="other settings \\(lr\\)"):
        learning_parity.main(["-", "--merge", runs[0], str(tmp_path / "other.json")])


def test_hf_inputs_move_left_padding_to_the_right_and_mask_labels():
    import torch

    sample = {"net_input": {"src_tokens": torch.tensor([[1, 1, 5, 6, 2], [7, 8, 9, 10, 2]])},
              "target": torch.tensor([[4, 2, 1], [4, 5, 2]])}
    out = learning_parity.hf_inputs(sample, pad=1)
    assert out["input_ids"].tolist() == [[5, 6, 2, 1, 1], [7, 8, 9, 10, 2]]
    assert out["attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    assert out["labels"].tolist() == [[4, 2, -100], [4, 5, 2]]


@pytest.mark.parametrize("argv, message", [
    (["--updates", "0"], "--updates must be at least 1"), (["--pairs", "bart"], "--pairs takes default and/or t5"),
    (["--seeds", "a"], "--seeds takes integers"), (["--dropout", "1"], "--dropout must be in"),
])
def test_bad_settings_are_refused(toy_data, argv, message, capsys):
    with pytest.raises(SystemExit):
        learning_parity.main([toy_data, *argv])
    assert message in capsys.readouterr().err
