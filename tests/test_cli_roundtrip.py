"""Real round trip through the CLIs with --user-dir: prepare -> train -> generate -> score,
checkpoint reload with no environment variable, fairseq-interactive and the hub interface on raw text."""
import json
import os
import random
import re
import subprocess
import sys

import pytest

from helpers import REPO, repo_env
from tolerances import fp64_tol
from helpers import USER_DIR, WORDS, cli, run  # noqa: F401

pytestmark = pytest.mark.slow  # trains and decodes through the console scripts

N_TEST = 11  # not a multiple of the batch size: the last partial batch must be generated too


def write_jsonl(path, n, rng):
    with open(path, "w") as f:
        for i in range(n):
            sents = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))).capitalize() + "." for _ in range(rng.randint(1, 4))]
            f.write(json.dumps({"id": str(i), "document": sents, "summary": sents[0]}) + "\n")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("roundtrip")
    rng = random.Random(0)
    jsonl = root / "jsonl"
    jsonl.mkdir()
    for split, n in (("train", 60), ("valid", 8), ("test", N_TEST)):
        write_jsonl(jsonl / f"{split}.jsonl", n, rng)
    run(cli("fairseq-sum-prepare"), "--jsonl-dir", str(jsonl), "--out", str(root / "data"), "--vocab-size", "60")
    data = str(root / "data" / "bin")
    save = str(root / "ckpt")
    train = run(
        cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization", "--arch", "tp_transformer_small",
        "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
        "--encoder-attention-heads", "2", "--tpr-roles", "4",
        "--criterion", "summarization_loss", "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "0.003",
        "--max-tokens", "1000", "--max-update", "12", "--save-dir", save, "--no-epoch-checkpoints",
        "--eval-rouge", "--eval-rouge-args", '{"beam": 1, "max_len_b": 8}',
        "--best-checkpoint-metric", "rouge_l", "--maximize-best-checkpoint-metric", "--log-format", "simple",
    )
    return {"data": data, "save": save, "ckpt": os.path.join(save, "checkpoint_best.pt"), "train_log": train.stderr + train.stdout}


def test_training_logs_rouge_and_selects_by_it(trained):
    valid = [l for l in trained["train_log"].splitlines() if "valid on 'valid' subset" in l]
    assert valid and all(re.search(r"rouge_l [0-9.]+", l) for l in valid)
    assert re.search(r"best_rouge_l [0-9.]+", valid[-1])
    assert os.path.exists(trained["ckpt"])


def test_generate_and_score(trained, tmp_path):
    gen = run(
        cli("fairseq-generate"), trained["data"], "--user-dir", USER_DIR, "--task", "summarization",
        "--path", trained["ckpt"], "--gen-subset", "test", "--beam", "2", "--batch-size", "4", "--max-len-b", "10",
        "--tokenizer", "sum_moses", "--bpe", "sentencepiece", "--sentencepiece-model", os.path.join(trained["data"], "spm.model"),
    )
    ids = sorted(int(l.split("\t")[0][2:]) for l in gen.stdout.splitlines() if l.startswith("H-"))
    assert ids == list(range(N_TEST))  # every test document, including the last partial batch
    out = tmp_path / "gen.out"
    out.write_text(gen.stdout)
    score = run(cli("fairseq-sum-score"), "--generate-output", str(out), "--data", trained["data"], "--json", str(tmp_path / "r.json"), "--bootstrap-samples", "50")
    assert "ROUGE-1 Average_F" in score.stdout
    result = json.loads((tmp_path / "r.json").read_text())
    assert 0.0 <= result["rouge1"] <= 1.0 and result["num_summaries"] == N_TEST


def test_interactive_summarizes_raw_text(trained):
    out = run(
        cli("fairseq-interactive"), trained["data"], "--user-dir", USER_DIR, "--task", "summarization",
        "--path", trained["ckpt"], "--beam", "2", "--max-len-b", "10",
        "--tokenizer", "sum_moses", "--bpe", "sentencepiece", "--sentencepiece-model", os.path.join(trained["data"], "spm.model"),
        stdin="The model reads the paper. Attention finds the role of each filler.\nData and results.\n",
    )
    hyps = [l for l in out.stdout.splitlines() if l.startswith("H-")]
    assert len(hyps) == 2
    sources = [l for l in out.stdout.splitlines() if l.startswith("S-")]
    assert "<sep>" in sources[0]  # raw text was split into sentences like the training data


def test_hub_interface(trained):
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    hub = SumTransformerModel.from_pretrained(trained["save"], checkpoint_file="checkpoint_best.pt", data_name_or_path=trained["data"])
    summaries = hub.sample(["The network reads the corpus. It writes a summary.", "Role and filler."], beam=2, max_len_b=10)
    assert len(summaries) == 2 and all(isinstance(s, str) for s in summaries)


def test_hub_truncates_a_document_longer_than_the_model_accepts(trained):
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    hub = SumTransformerModel.from_pretrained(trained["save"], checkpoint_file="checkpoint_best.pt", data_name_or_path=trained["data"])
    hub.cfg.dataset.max_tokens = 4000  # the checkpoint's training --max-tokens 1000 is below 1024 positions
    long_doc = " ".join(["The model reads the paper and the network writes a summary."] * 150)
    assert len(hub.encode(long_doc)) > hub.task.max_inference_source_tokens()
    summaries = hub.sample([long_doc], beam=1, max_len_b=5)  # was: "Size of sample #0 is invalid"
    assert len(summaries) == 1 and isinstance(summaries[0], str)


def test_role_analysis_cli(trained, tmp_path):
    png = tmp_path / "roles.png"
    out = run(cli("fairseq-sum-roles"), trained["data"], "--path", trained["ckpt"], "--png", str(png), "--json", str(tmp_path / "r.json"))
    assert png.stat().st_size > 1000
    stats = json.loads((tmp_path / "r.json").read_text())
    assert len(stats["sublayers"]) == 3  # encoder self, decoder self, decoder cross (1 layer each)
    # float64 counts divided by their sum (inspection/roles.py): one rounding per share, summed
    assert all(abs(sum(s["usage"]) - 1) <= fp64_tol(1.0) for s in stats["sublayers"].values())
    assert "overall:" in out.stdout


def test_prepare_rejects_mismatched_parallel_files(tmp_path):
    (tmp_path / "in").mkdir()
    for split in ("train", "valid", "test"):
        (tmp_path / "in" / f"{split}.source").write_text("a b c\nd e f\n")
        (tmp_path / "in" / f"{split}.target").write_text("a\n")
    env = repo_env()
    proc = subprocess.run([cli("fairseq-sum-prepare"), "--parallel-dir", str(tmp_path / "in"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    assert "train" in proc.stderr and ("2" in proc.stderr and "1" in proc.stderr)


# --- the data folder is data: dictionary checksums, prepare_args.json read without trusting it -----------


def _data_copy(trained, dest, payload_dir=None):
    """A copy of the prepared data folder; with ``payload_dir``, its prepare_args.json carries a
    ``user_dir`` key in the tokenizer section pointing at a module that writes a marker file."""
    import shutil

    data = shutil.copytree(trained["data"], dest)
    if payload_dir is not None:
        payload_dir.mkdir()
        marker = payload_dir / "MARKER"
        (payload_dir / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('code ran')\n")
        args = json.loads((dest / "prepare_args.json").read_text())
        args["tokenizer"]["user_dir"] = str(payload_dir)
        args["tokenizer"]["sum_lowercase_typo"] = True
        (dest / "prepare_args.json").write_text(json.dumps(args))
        return str(data), marker
    return str(data)


def test_interactive_takes_text_encoding_from_prepare_args_cuts_at_the_models_limit_and_warns(trained, tmp_path):
    """Issues 12.8-10, 16.5: fairseq-interactive without --tokenizer/--bpe encodes raw text as
    prepare_args.json records (validated: its user_dir payload is ignored, no code runs); a model
    accepting 1,500 positions reads 1,500 tokens, not the task default 1,023, and says when it cuts;
    an empty line is warned about."""
    data, marker = _data_copy(trained, tmp_path / "bin", payload_dir=tmp_path / "payload")
    long_doc = " ".join(["The model reads the paper and the network writes a summary."] * 200)
    out = subprocess.run(
        [cli("fairseq-interactive"), data, "--user-dir", USER_DIR, "--task", "summarization",
         "--path", trained["ckpt"], "--beam", "1", "--max-len-b", "3",
         "--model-overrides", "{'max_source_positions': 1500}"],
        input=f"Data and results. The role of each filler.\n{long_doc}\n   \n", capture_output=True, text=True,
        cwd=REPO, env=repo_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert not marker.exists()  # the payload was not imported
    assert "ignoring tokenizer.sum_lowercase_typo, tokenizer.user_dir" in out.stderr
    sources = {int(l.split("\t")[0][2:]): l.split("\t")[1] for l in out.stdout.splitlines() if l.startswith("S-")}
    assert "<sep>" in sources[0] and "<unk>" not in sources[0]  # sum_moses + sentencepiece of DATA
    assert len(sources[1].split()) == 1499  # the model's 1,500 positions (EOS not printed)
    assert "truncated to the model's limit of 1500" in out.stderr
    assert "raw-text input 0 is empty or whitespace only" in out.stderr  # third line, a batch of its own


def test_interactive_without_bpe_on_sentencepiece_data_without_a_record_is_refused(trained, tmp_path):
    data = _data_copy(trained, tmp_path / "bin")
    os.remove(os.path.join(data, "prepare_args.json"))
    out = subprocess.run(
        [cli("fairseq-interactive"), data, "--user-dir", USER_DIR, "--task", "summarization",
         "--path", trained["ckpt"], "--beam", "1", "--max-len-b", "3"],
        input="Data and results.\n", capture_output=True, text=True, cwd=REPO, env=repo_env())
    assert out.returncode != 0 and "--bpe sentencepiece --sentencepiece-model" in out.stderr


def test_hub_ignores_code_in_prepare_args_and_warns_about_empty_input(trained, tmp_path, caplog):
    """Issue 12.9 payload through from_pretrained: no marker file, the hub still summarizes."""
    import logging

    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    data, marker = _data_copy(trained, tmp_path / "bin", payload_dir=tmp_path / "payload")
    with caplog.at_level(logging.WARNING):
        hub = SumTransformerModel.from_pretrained(trained["save"], checkpoint_file="checkpoint_best.pt",
                                                  data_name_or_path=data)
        summaries = hub.sample(["The network reads the corpus.", "  "], beam=1, max_len_b=4)
    assert not marker.exists() and len(summaries) == 2
    assert "user_dir" in caplog.text and "empty or whitespace only" in caplog.text


def test_prepare_args_values_are_validated(tmp_path):
    from fairseq_sum_plugins.data_folder import read_prepare_args

    good = {"tokenizer": {"tokenizer": "sum_moses", "moses_lang": "en", "sum_lowercase": False,
                          "sum_sentence_split": True, "sentence_splitter": "pysbd"},
            "bpe": {"bpe": "sentencepiece", "sentencepiece_model": "spm.model"}, "options": {"x": 1}}
    path = tmp_path / "prepare_args.json"
    path.write_text(json.dumps(good))
    got = read_prepare_args(str(tmp_path))
    assert got["bpe"] == {"bpe": "sentencepiece", "sentencepiece_model": str(tmp_path / "spm.model")}
    assert got["tokenizer"] == good["tokenizer"]
    for section, key, value in (("bpe", "sentencepiece_model", "../../elsewhere/spm.model"),
                                ("bpe", "sentencepiece_model", "/abs/spm.model"), ("bpe", "bpe", "gpt2"),
                                ("tokenizer", "tokenizer", "moses"), ("tokenizer", "moses_lang", "en; rm -rf /"),
                                ("tokenizer", "sum_lowercase", "yes"), ("tokenizer", "sentence_splitter", "os")):
        bad = json.loads(json.dumps(good))
        bad[section][key] = value
        path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=f"prepare_args.json: {section}.{key}"):
            read_prepare_args(str(tmp_path))
    path.write_text("{not json")
    with pytest.raises(ValueError, match="prepare_args.json: not valid JSON"):
        read_prepare_args(str(tmp_path))


def test_checkpoint_refuses_data_binarized_with_another_dictionary(trained, tmp_path):
    """Issue 12.6: the same test split binarized with a dictionary of the same size but another
    order: fairseq-generate and the hub refuse; a checkpoint without the checksum still loads."""
    import torch
    from fairseq import checkpoint_utils, options
    from fairseq.data import Dictionary
    from fairseq_cli import preprocess

    from fairseq_sum_plugins.data_folder import dictionary_checksum
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    d = Dictionary.load(os.path.join(trained["data"], "dict.src.txt"))
    state = torch.load(trained["ckpt"], map_location="cpu", weights_only=False)
    assert state["cfg"]["model"].src_dict_sha256 == dictionary_checksum(d)
    lines = open(os.path.join(trained["data"], "dict.src.txt"), encoding="utf-8").read().splitlines()
    swapped = tmp_path / "dict.txt"
    swapped.write_text("\n".join(lines[len(lines) // 2:] + lines[: len(lines) // 2]) + "\n", encoding="utf-8")
    other = tmp_path / "other"
    spm = os.path.join(os.path.dirname(trained["data"]), "spm")
    preprocess.main(options.get_preprocessing_parser().parse_args([
        "--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary", "--srcdict", str(swapped),
        "--testpref", f"{spm}/test", "--destdir", str(other), "--workers", "1"]))
    assert len(Dictionary.load(str(other / "dict.src.txt"))) == len(d)
    proc = subprocess.run(
        [cli("fairseq-generate"), str(other), "--user-dir", USER_DIR, "--task", "summarization",
         "--path", trained["ckpt"], "--gen-subset", "test", "--beam", "1", "--max-len-b", "3"],
        capture_output=True, text=True, cwd=REPO, env=repo_env())
    assert proc.returncode != 0 and "trained with another source dictionary" in proc.stderr
    for name in ("spm.model", "prepare_args.json"):
        open(other / name, "wb").write(open(os.path.join(trained["data"], name), "rb").read())
    with pytest.raises(ValueError, match="another source dictionary"):
        SumTransformerModel.from_pretrained(trained["save"], checkpoint_file="checkpoint_best.pt",
                                            data_name_or_path=str(other))
    # a checkpoint saved without the checksums loads (with a warning)
    for key in ("src_dict_sha256", "tgt_dict_sha256"):
        delattr(state["cfg"]["model"], key)
    torch.save(state, tmp_path / "old.pt")
    models, _ = checkpoint_utils.load_model_ensemble([str(tmp_path / "old.pt")], arg_overrides={"data": trained["data"]})
    assert len(models) == 1


def test_mem2mem_hub_encodes_raw_text_as_prepare_args_records(trained, tmp_path):
    """Issue 16.5: Mem2MemModel.from_pretrained takes the tokenizer and BPE of prepare_args.json (its
    raw text does not become <unk>), as SumTransformerModel's hub does."""
    import torch
    from fairseq import options, tasks

    from fairseq_sum_plugins.models.mem2mem.model import Mem2MemModel
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel

    args = options.parse_args_and_arch(options.get_training_parser(), [
        trained["data"], "--task", "summarization", "--arch", "hred_base", "--embed-dim", "8",
        "--encoder-hidden-size", "8", "--decoder-hidden-size", "8", "--attention-dim", "8",
        "--decoder-out-embed-dim", "8", "--optimizer", "adam", "--lr", "0.001"])
    model = tasks.setup_task(args).build_model(args)
    torch.save({"args": args, "model": model.state_dict(), "last_optimizer_state": None,
                "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "FairseqAdam",
                                       "lr_scheduler_state": {"best": None}, "num_updates": 0}],
                "extra_state": {"epoch": 1, "train_iterator": {"epoch": 1, "iterations_in_epoch": 0}}},
               tmp_path / "checkpoint_best.pt")
    hub = Mem2MemModel.from_pretrained(str(tmp_path), checkpoint_file="checkpoint_best.pt",
                                       data_name_or_path=trained["data"])
    text = "The model reads the paper. Attention finds the role."
    tokens = hub.encode(text)
    assert hub.task.source_dictionary.unk() not in tokens.tolist()
    assert hub.task.source_dictionary.index("<sep>") in tokens.tolist()
    reference = SumTransformerModel.from_pretrained(trained["save"], checkpoint_file="checkpoint_best.pt",
                                                    data_name_or_path=trained["data"])
    assert torch.equal(tokens, reference.encode(text))
    assert len(hub.sample([text], beam=1, max_len_b=3)) == 1
