"""Source gain (NLL of a summary given another document minus given its own) and distinct outputs,
checked against a per-example hand computation."""
import json
import math

import pytest
import torch

from helpers import save_fresh_checkpoint
from tolerances import MODEL_ULPS, fp32_tol
from fairseq_sum_plugins.evaluation.decodings import sha256_file
from fairseq_sum_plugins.inspection.source_use import distinct_outputs, main, source_gain


def checkpoint(data, path, arch="transformer_gated_small"):
    return save_fresh_checkpoint(
        [data, "--task", "summarization", "--arch", arch, "--encoder-layers", "1", "--decoder-layers", "1",
         "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
         "--dropout", "0.3", "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "0.001"],
        path, "SummarizationLoss")


def load(data, path):
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides={"data": data})
    return models[0], task


def nll_bits_one(model, task, src, tgt):
    """NLL in bits of ``tgt`` given ``src`` (1-D tensors), one example, no batching."""
    eos = task.target_dictionary.eos()
    prev = torch.cat([tgt.new_tensor([eos]), tgt[:-1]]).unsqueeze(0)
    with torch.no_grad():
        out = model(src.unsqueeze(0), torch.tensor([len(src)]), prev)
        lp = model.get_normalized_probs(out, log_probs=True)[0]
    return -float(lp.gather(-1, tgt.unsqueeze(-1)).sum()) / math.log(2), len(tgt)


def test_source_gain_equals_the_per_example_hand_computation(toy_data, tmp_path):
    model, task = load(toy_data, checkpoint(toy_data, str(tmp_path / "m.pt")))
    model.train()  # source_gain measures in eval mode and restores the mode
    out = source_gain(model, task, "test", max_documents=7, batch_size=3)
    assert model.training
    model.eval()
    ds = task.dataset("test")
    own = other = tokens = 0
    for i in range(7):
        b, n = nll_bits_one(model, task, ds[i]["source"], ds[i]["target"])
        own, tokens = own + b, tokens + n
        other += nll_bits_one(model, task, ds[(i + 1) % 7]["source"], ds[i]["target"])[0]
    assert out["examples"] == 7 and out["tokens"] == tokens
    # per-token NLLs (bits) from float32 log-probs of batches of 3 against one example at a time:
    # ulps of the log-sum-exp, of the NLL's size for a random model (tests/tolerances.py)
    tol = fp32_tol(other / tokens, MODEL_ULPS)
    assert out["nll_own"] == pytest.approx(own / tokens, abs=tol)
    assert out["nll_other"] == pytest.approx(other / tokens, abs=tol)
    assert out["gain"] == pytest.approx((other - own) / tokens, abs=2 * tol)  # tol: two such means
    # a random model's NLL depends on its (random) source, by far more than the rounding
    assert abs(out["gain"]) > 1e-4  # tol: 5x the tolerance above


def test_source_gain_is_zero_for_a_model_whose_gates_are_closed(toy_data, tmp_path):
    """Gates ~1e-13 scale every key and value of the cross-attention to ~0 (IS eq. 6): the decoder sees
    no document, so a summary is as likely after any document."""
    model, task = load(toy_data, checkpoint(toy_data, str(tmp_path / "m.pt")))
    with torch.no_grad():  # gates ~0 everywhere: keys and values scaled to ~0, so no document is read
        model.encoder.info_gate.proj.bias.fill_(-30.0)
    out = source_gain(model, task, "test", batch_size=5)
    # two float32 means, equal values
    assert abs(out["gain"]) < 2 * fp32_tol(out["nll_own"], MODEL_ULPS)


def test_cli_writes_json_with_distinct_outputs(toy_data, tmp_path, capsys):
    path = checkpoint(toy_data, str(tmp_path / "m.pt"))
    gen = tmp_path / "test.out"
    gen.write_text("".join(f"S-{i}\tdoc\nT-{i}\tref\nH-{i}\t-1\t{h}\n" for i, h in enumerate(["the cat", "the cat", "a dog"])))
    assert distinct_outputs(str(gen)) == (2, 3)
    main([toy_data, "--path", path, "--max-documents", "5", "--generate-output", str(gen), "--json", str(tmp_path / "s.json")])
    saved = json.load(open(tmp_path / "s.json"))
    assert saved["examples"] == 5 and saved["distinct"] == 2 and saved["hypotheses"] == 3
    assert "source gain" in capsys.readouterr().out
    # which output it measured: fairseq-sum-compare --html uses the file for that output only
    assert saved["generate_output_sha256"] == sha256_file(str(gen))


def test_one_example_is_refused(toy_data, tmp_path):
    model, task = load(toy_data, checkpoint(toy_data, str(tmp_path / "m.pt")))
    with pytest.raises(ValueError, match="at least 2 documents"):
        source_gain(model, task, "test", max_documents=1)


@pytest.mark.slow
def test_source_curve_gives_each_interval_checkpoint_its_gain_cached_and_plotted(toy_data, tmp_path):
    from fairseq_sum_plugins.inspection import source_curve

    run = tmp_path / "run"
    run.mkdir()
    for updates in (10, 2):  # written out of order: the curve is sorted by updates
        checkpoint(toy_data, str(run / f"checkpoint_1_{updates}.pt"), arch="t5_transformer_small")
    (run / "checkpoint_last.pt").write_bytes(b"not an interval checkpoint")
    argv = [toy_data, "--path", str(run), "--names", "a", "--max-documents", "5", "--png", str(tmp_path / "c.png"),
            "--json", str(tmp_path / "c.json")]
    curves = source_curve.main(argv)
    assert [p["updates"] for p in curves["a"]] == [2, 10]
    model, task = load(toy_data, str(run / "checkpoint_1_10.pt"))
    # the same function on the same weights and batches: bit for bit
    assert curves["a"][1]["gain"] == source_gain(model, task, "valid", 5)["gain"]
    assert json.load(open(tmp_path / "c.json"))["a"][0]["updates"] == 2
    assert (tmp_path / "c.png").stat().st_size > 1000
    cache = run / "checkpoint_1_10.pt.gain-valid.json"
    saved = json.load(open(cache))
    saved["gain"]["gain"] = 123.0  # a cache entry with the same key is used as it is
    json.dump(saved, open(cache, "w"))
    assert source_curve.main(argv)["a"][1]["gain"] == 123.0


@pytest.mark.parametrize("run, message", [(["--run", "nolabel"], "--run takes LABEL=DIR"),
                                          (["--path", "/nonexistent"], "--path /nonexistent: no interval checkpoints"),
                                          ([], "give --path DIR")])
def test_source_curve_refuses_a_bad_run(toy_data, run, message, capsys):
    from fairseq_sum_plugins.inspection import source_curve

    with pytest.raises(SystemExit):
        source_curve.main([toy_data, *run])
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("where, extra, message", [
    ("jsonl", [], "no dict.src.txt (not a binarized data folder"),
    ("data", ["--split", "nope"], "--split nope: no binarized split nope in"),
    ("data", ["--json", "/nonexistent/c.json"], "--json /nonexistent/c.json: its folder does not exist"),
    ("data", ["--png", "/nonexistent/c.png"], "--png /nonexistent/c.png: its folder does not exist"),
])
def test_source_curve_refuses_a_folder_or_split_that_is_not_binarized(toy_data, tmp_path, where, extra, message,
                                                                      capsys):
    # were tracebacks: of fairseq's task (FileNotFoundError / "Could not infer language pair"), or of
    # writing --json / --png after every checkpoint was computed
    from fairseq_sum_plugins.inspection import source_curve

    run = tmp_path / "run"
    run.mkdir()
    checkpoint(toy_data, str(run / "checkpoint_1_2.pt"), arch="t5_transformer_small")
    data = toy_data if where == "data" else str(tmp_path)
    with pytest.raises(SystemExit):
        source_curve.main([data, "--path", str(run), *extra])
    assert message in capsys.readouterr().err
    assert not list(run.glob("*.gain-*.json"))


def test_source_curve_refuses_a_checkpoint_of_another_dictionary_of_the_same_size(toy_data, tmp_path, capsys):
    import shutil

    from fairseq_sum_plugins.inspection import source_curve

    run = tmp_path / "run"
    run.mkdir()
    checkpoint(toy_data, str(run / "checkpoint_1_2.pt"), arch="t5_transformer_small")
    other = tmp_path / "other"
    shutil.copytree(toy_data, other)
    for side in ("src", "tgt"):  # two words swapped: same size, ids that mean other words
        lines = (other / f"dict.{side}.txt").read_text().splitlines(keepends=True)
        lines[0], lines[1] = lines[1], lines[0]
        (other / f"dict.{side}.txt").write_text("".join(lines))
    with pytest.raises(SystemExit):
        source_curve.main([str(other), "--path", str(run), "--max-documents", "5"])
    err = capsys.readouterr().err
    assert "checkpoint_1_2.pt" in err and "another source dictionary" in err
    assert not list(run.glob("*.gain-*.json"))


@pytest.mark.slow
def test_source_curve_does_not_reuse_its_cache_for_a_folder_prepared_again(toy_data, tmp_path, capsys):
    import shutil

    from fairseq_sum_plugins.inspection import source_curve

    run = tmp_path / "run"
    run.mkdir()
    checkpoint(toy_data, str(run / "checkpoint_1_2.pt"), arch="t5_transformer_small")
    data = tmp_path / "data"
    shutil.copytree(toy_data, data)
    source_curve.main([str(data), "--path", str(run), "--max-documents", "5"])
    for side in ("src", "tgt"):  # DATA prepared again in the same place, with another dictionary
        path = data / f"dict.{side}.txt"
        lines = path.read_text().splitlines(keepends=True)
        lines[0], lines[1] = lines[1], lines[0]
        path.write_text("".join(lines))
    with pytest.raises(SystemExit):  # was the cached gain of the old folder, silently
        source_curve.main([str(data), "--path", str(run), "--max-documents", "5"])
    assert "another source dictionary" in capsys.readouterr().err
