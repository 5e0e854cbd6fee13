"""Topic Assistant through the CLIs: binarized data -> topic_model fit -> fairseq-train --side-data theta ->
fairseq-generate."""
import json
import os

import numpy as np
import pytest

from helpers import binarize, write_toy_parallel
from tolerances import MODEL_ULPS, OP_ULPS, fp32_close
from fairseq_sum_plugins.features.topic_assistant.topic_model import load_split_tokens
from helpers import USER_DIR, cli, run

K = 8


@pytest.fixture(scope="module")
def ta_trained(tmp_path_factory):
    from preprocess.topic_model import main as topic_model_main

    root = tmp_path_factory.mktemp("ta_roundtrip")
    write_toy_parallel(str(root / "raw"), n_train=40, n_valid=6, n_test=9, seed=3)
    data = binarize(str(root / "raw"), str(root / "bin"))
    topic_model_main(["fit", data, "--topics", str(K), "--iters", "10"])
    save = str(root / "ckpt")
    run(
        cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization", "--arch", "transformer_ta_small",
        "--side-data", "theta", "--ta-topics-n", "3",
        "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
        "--encoder-attention-heads", "2", "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "0.003",
        "--max-tokens", "1000", "--max-update", "3", "--save-dir", save, "--no-epoch-checkpoints", "--log-format", "simple",
        "--disable-validation",
    )
    return {"data": data, "ckpt": os.path.join(save, "checkpoint_last.pt")}


@pytest.mark.slow
def test_fit_writes_topic_model_and_aligned_theta(ta_trained):
    data = ta_trained["data"]
    with np.load(os.path.join(data, "topic_model.npz")) as f:
        assert f["phi"].shape[1] == K and str(f["checksum"])
    for split, n in (("train", 40), ("valid", 6), ("test", 9)):
        theta = np.load(os.path.join(data, f"{split}.theta.npy"))
        assert theta.shape == (n, K) and theta.dtype == np.float32
        # a float32 distribution (rounded terms, summed) or an empty document's 0
        sums = theta.sum(1)
        assert all(fp32_close(s, 1.0, 1.0, OP_ULPS) or s == 0 for s in sums)


@pytest.mark.slow
def test_topic_attention_cli_reads_the_first_documents_of_the_split(ta_trained, tmp_path):
    """``topics attention DATA --path CKPT --max-documents 5``: the share over the split's first 5
    documents, each read on its own (batches of 2 give what one document at a time gives)."""
    from fairseq_sum_plugins.inspection import topics
    from fairseq_sum_plugins.inspection.loader import load_checkpoint

    out = tmp_path / "a.json"
    got = topics.main(["attention", ta_trained["data"], "--path", ta_trained["ckpt"], "--split", "test",
                       "--max-documents", "5", "--batch-size", "2", "--json", str(out)])
    model, task = load_checkpoint(ta_trained["ckpt"], ta_trained["data"])
    task.load_dataset("test")
    ds = task.dataset("test")
    one = topics.topic_attention(model, [ds.collater([ds[i]]) for i in range(5)], task.target_dictionary.pad())
    assert got["tokens"] == one["tokens"] == sum(ds[i]["target"].numel() for i in range(5))
    # each document runs alone through the model either way, and the sums add them in the same order
    assert got["share"] == one["share"] and got["uniform"] == one["uniform"]
    assert json.loads(out.read_text())["tokens"] == got["tokens"]


@pytest.mark.slow
def test_generate(ta_trained):
    common = ["--user-dir", USER_DIR, "--task", "summarization", "--path", ta_trained["ckpt"], "--side-data", "theta",
              "--beam", "2", "--max-len-b", "8"]
    gen = run(cli("fairseq-generate"), ta_trained["data"], "--gen-subset", "test", "--batch-size", "4", *common)
    assert sorted(int(l.split("\t")[0][2:]) for l in gen.stdout.splitlines() if l.startswith("H-")) == list(range(9))
    # raw text through fairseq-interactive (which passes no side data: the task infers theta) is
    # tested in-process in test_topic_assistant.py::test_inference_step_infers_missing_theta


# --- the topic model counts whole documents (--full-src), the encoder reads truncated ones ----------------

HEAD_WORDS = ("cat dog horse bird mouse fish".split(), "bank market rates price shares money".split())


def write_truncated_corpus(root, head=5, tail=12, seed=0, sizes=(("train", 30), ("valid", 4), ("test", 5))):
    """``raw/{split}.src``: the first ``head`` words of each document (what the encoder gets, as a
    recipe's --max-src-tokens leaves it); ``full/{split}.src``: the whole document, whose tail
    (``tail`` words) is about the other topic. Targets hold words of both topics (joined dictionary)."""
    import random

    rng = random.Random(seed)
    for d in ("raw", "full"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for split, n in sizes:
        with open(os.path.join(root, "raw", f"{split}.src"), "w") as fr, \
                open(os.path.join(root, "full", f"{split}.src"), "w") as ff, \
                open(os.path.join(root, "raw", f"{split}.tgt"), "w") as ft:
            for i in range(n):
                first, second = HEAD_WORDS[i % 2], HEAD_WORDS[1 - i % 2]
                words = [rng.choice(first) for _ in range(head)] + [rng.choice(second) for _ in range(tail)]
                fr.write(" ".join(words[:head]) + "\n")
                ff.write(" ".join(words) + "\n")
                ft.write(" ".join(HEAD_WORDS[0][:3] + HEAD_WORDS[1][:3]) + "\n")
    return os.path.join(root, "raw"), os.path.join(root, "full")


@pytest.fixture(scope="module")
def truncated_data(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("ta_full_src"))
    raw, full = write_truncated_corpus(root)
    return binarize(raw, os.path.join(root, "bin")), full


def test_fit_and_theta_count_the_untruncated_documents(truncated_data, tmp_path):
    """§5.4: theta comes from all tokens of the document (--full-src), one row per binarized example;
    without --full-src the binarized (truncated) source is counted, as before."""
    import shutil

    from fairseq_sum_plugins.features.topic_assistant.topic_model import PoissonFactorAnalysis, bag_of_words, load_dictionary, load_split_tokens
    from preprocess.topic_model import main as topic_model_main

    data, full = truncated_data
    topic_model_main(["fit", data, "--topics", "2", "--iters", "30", "--full-src", full])
    d = load_dictionary(data)
    model = PoissonFactorAnalysis.load(os.path.join(data, "topic_model.npz"), d)
    for split, n in (("train", 30), ("valid", 4), ("test", 5)):
        with open(os.path.join(full, f"{split}.src")) as f:
            whole = [d.encode_line(line, add_if_not_exist=False).numpy() for line in f]
        binarized = load_split_tokens(data, split, d)
        assert all(len(b) == 6 and np.array_equal(w[:5], b[:5]) for w, b in zip(whole, binarized))  # truncated
        theta = np.load(os.path.join(data, f"{split}.theta.npy"))
        assert theta.shape == (n, 2)
        # the CLI infers in its own batches: float32 rounding of values <= 1, through the iterations
        assert fp32_close(theta,
                          model.infer(bag_of_words(whole, len(d), model.keep), empty="prior"), 1.0,
                          MODEL_ULPS)
        truncated = model.infer(bag_of_words(binarized, len(d), model.keep))
        # the tail (the other topic, most of the document) decides the top topic, not the first words
        assert (theta.argmax(1) != truncated.argmax(1)).all()
    # the old behaviour without --full-src: the binarized source
    topic_model_main(["infer", data, "--splits", "test"])
    assert fp32_close(np.load(os.path.join(data, "test.theta.npy")),
                      model.infer(bag_of_words(load_split_tokens(data, "test", d), len(d),
                                               model.keep),
                                  empty="prior"), 1.0, MODEL_ULPS)
    # misaligned untruncated files are an error naming the file
    bad = str(tmp_path / "bad")
    shutil.copytree(full, bad)
    lines = open(os.path.join(full, "test.src")).read().splitlines(True)
    open(os.path.join(bad, "test.src"), "w").write("".join(lines[:-1]))
    with pytest.raises(ValueError, match=r"test.src has 4 lines but the binarized test split has 5"):
        topic_model_main(["infer", data, "--splits", "test", "--full-src", bad])
    open(os.path.join(bad, "test.src"), "w").write("".join([lines[1], lines[0]] + lines[2:]))
    with pytest.raises(ValueError, match=r"test.src:1 is not the untruncated form of binarized test example 0"):
        topic_model_main(["infer", data, "--splits", "test", "--full-src", bad])
    with pytest.raises(FileNotFoundError, match="--write-full-src"):
        topic_model_main(["infer", data, "--splits", "test", "--full-src", str(tmp_path / "none")])


@pytest.mark.parametrize("argv,message", [
    (["fit", "--topics", "0"], "argument --topics/-k: '0': must be >= 1"),
    (["fit", "--topics", "-3"], "argument --topics/-k: '-3': must be >= 1"),
    (["fit", "--r", "nan"], "argument --r: 'nan': must be >= 1"),
    (["fit", "--iters", "0"], "argument --iters: '0': must be >= 1"),
    (["infer", "--splits", "tets"], "--splits tets: no binarized split tets in DATA (it has: test, train, valid)"),
    (["fit", "--splits", "train,valid,tets"], "no binarized split tets in DATA (it has: test, train, valid)"),
])
def test_topic_model_cli_refuses_bad_numbers_and_unknown_splits(truncated_data, capsys, argv, message):
    """--topics 0 / -3 gave tracebacks and `infer --splits tets` exited 0 having written nothing:
    argparse errors naming the flag (and the splits DATA has)."""
    from preprocess.topic_model import main as topic_model_main

    data, _ = truncated_data
    before = sorted(os.listdir(data))
    with pytest.raises(SystemExit) as exit_info:
        topic_model_main([argv[0], data, *argv[1:]])
    assert exit_info.value.code == 2
    assert message.replace("DATA", data) in capsys.readouterr().err
    assert sorted(os.listdir(data)) == before


def test_prepare_and_gpt2_bpe_write_aligned_untruncated_sources(tmp_path):
    """The producers of --full-src: fairseq-sum-prepare --write-full-src (OUT/spm_full) and
    preprocess.gpt2_bpe --full-src-out: untruncated lines whose prefix is the truncated one."""
    from preprocess import gpt2_bpe
    from preprocess.topic_model import main as topic_model_main
    from helpers import encoder_of, write_gpt2_files, write_hf_xsum
    from helpers import make_corpus, read, run_prepare

    out = tmp_path / "prep"
    run_prepare(make_corpus(str(tmp_path / "jsonl")), out, "--write-full-src")
    for split in ("train", "valid", "test"):
        cut, whole = read(out / "spm" / f"{split}.src"), read(out / "spm_full" / f"{split}.src")
        assert len(cut) == len(whole) and all(w.split()[: len(c.split())] == c.split() for c, w in zip(cut, whole))
        assert any(len(w.split()) > 40 for w in whole)  # some documents are longer than --max-src-tokens 40
    topic_model_main(["fit", str(out / "bin"), "--topics", "3", "--iters", "3", "--full-src", str(out / "spm_full")])
    assert np.load(out / "bin" / "train.theta.npy").shape == (40, 3)

    paths = write_gpt2_files(str(tmp_path / "gpt2"))
    jsonl = write_hf_xsum(str(tmp_path / "xsum"))
    os.replace(os.path.join(jsonl, "validation.jsonl"), os.path.join(jsonl, "valid.jsonl"))
    gpt2_bpe.main(["--jsonl-dir", jsonl, "--out", str(tmp_path / "bpe"), "--encoder-json", paths["encoder.json"],
                   "--vocab-bpe", paths["vocab.bpe"], "--max-src-tokens", "7", "--langs", "src,tgt",
                   "--full-src-out", str(tmp_path / "bpe_full")])
    bpe = encoder_of(paths)
    for split in ("train", "valid", "test"):
        cut, whole = read(tmp_path / "bpe" / f"{split}.src"), read(tmp_path / "bpe_full" / f"{split}.src")
        docs = [json.loads(line)["document"] for line in open(os.path.join(jsonl, f"{split}.jsonl"))]
        assert whole == [" ".join(map(str, bpe.encode(" ".join(doc.split())))) for doc in docs]
        assert cut == [" ".join(w.split()[:7]) for w in whole]


def test_prepare_again_keeps_valid_topic_files_and_refuses_to_drop_stale_ones(tmp_path, capsys):
    """Re-running fairseq-sum-prepare with another --max-tgt-tokens rebuilt OUT/bin and deleted the
    topic model and theta: they are kept (same source side and dictionary) and still load. Another
    --max-src-tokens changes the documents: refused, naming the files and --overwrite, which deletes them."""
    import hashlib

    from fairseq_sum_plugins.features.topic_assistant.topic_model import PoissonFactorAnalysis, check_theta_file, load_dictionary
    from preprocess.prepare import PrepareError
    from preprocess.topic_model import main as topic_model_main
    from helpers import make_corpus, run_prepare

    corpus, out = make_corpus(str(tmp_path / "jsonl")), tmp_path / "prep"
    data = str(out / "bin")
    run_prepare(corpus, out)
    topic_model_main(["fit", data, "--topics", "3", "--iters", "3"])
    (out / "bin" / "notes.txt").write_text("mine\n")
    topic = sorted(["topic_model.npz"] + [f"{s}.theta.{e}" for s in ("test", "train", "valid") for e in ("json", "npy")])

    def digests():
        return {n: hashlib.sha256((out / "bin" / n).read_bytes()).hexdigest() for n in sorted(os.listdir(data))}

    def check_topic_files():
        tm = PoissonFactorAnalysis.load(os.path.join(data, "topic_model.npz"), load_dictionary(data))
        for split in ("train", "valid", "test"):
            check_theta_file(os.path.join(data, f"{split}.theta.npy"), tm.phi_sha256, os.path.join(data, "topic_model.npz"),
                             split)

    before = digests()
    capsys.readouterr()
    run_prepare(corpus, out, "--max-tgt-tokens", "8")
    after = digests()
    assert after["train.src-tgt.tgt.bin"] != before["train.src-tgt.tgt.bin"]  # OUT/bin was binarized again
    assert all(after[n] == before[n] for n in topic + ["notes.txt", "train.src-tgt.src.bin"])
    assert f"kept {', '.join(sorted(topic + ['notes.txt']))} of the previous {data} (the source side and dictionary are unchanged)" \
        in capsys.readouterr().err
    check_topic_files()

    with pytest.raises(PrepareError, match=rf"{data}: this run changes the binarized source of test, train, valid, "
                                           rf"so {', '.join(topic)} \(made from the previous data\) would no longer "
                                           r"fit: .* --overwrite to delete them \(then refit: `python -m "
                                           r"preprocess.topic_model fit"):
        run_prepare(corpus, out, "--max-tgt-tokens", "8", "--max-src-tokens", "30")
    assert digests() == after  # OUT/bin untouched
    check_topic_files()
    run_prepare(corpus, out, "--max-tgt-tokens", "8", "--max-src-tokens", "30", "--overwrite")
    assert f"removed {', '.join(topic)} from {data}" in capsys.readouterr().err
    left = set(os.listdir(data))
    assert "notes.txt" in left and not left & set(topic)
    assert json.loads((out / "bin" / "prepare_args.json").read_text())["options"]["max_src_tokens"] == 30


# --- semantic similarity reads the detokenized hypotheses ------------------------------------------------


@pytest.mark.slow
def test_semantic_similarity_reads_d_lines(ta_trained, tmp_path):
    """TA eq. 10 of fairseq-generate output through its one command line, fairseq-sum-score --topic-model:
    hypotheses from the D- lines (detokenized, as the T- references), the H- lines only when there
    is no D- line."""
    from fairseq_sum_plugins.features.topic_assistant import similarity as topics

    data = ta_trained["data"]
    lines = ["S-0\tthe cat sat on mat", "T-0\tcat sat on mat", "H-0\t-0.5\tblue sky ball park",
             "D-0\t-0.5\tcat sat mat", "P-0\t-0.5 -0.5", "S-1\tdog ran fast", "T-1\tdog ran",
             "H-1\t-0.5\tred red red", "D-1\t-0.5\tdog ran fast in park"]
    gen = tmp_path / "gen.out"
    gen.write_text("\n".join(lines) + "\n")
    from fairseq_sum_plugins.scoring import score

    common = ["--refs", "t-lines", "--topic-model", os.path.join(data, "topic_model.npz"), "--bootstrap-samples", "0"]
    got = score.main(["--generate-output", str(gen)] + common)
    dictionary, model = topics.load_topic_model(data)
    encode = topics._encoder(data, dictionary, model)
    docs = ["the cat sat on mat", "dog ran fast"]  # the S- lines
    expect = topics.summary_similarities(model, encode, ["cat sat mat", "dog ran fast in park"], docs,
                                         ["cat sat on mat", "dog ran"])
    assert (got["ss_sum_doc"], got["ss_sum_gold"]) == (expect["ss_sum_doc"], expect["ss_sum_gold"])
    h_only = tmp_path / "h.out"
    h_only.write_text("\n".join(l for l in lines if not l.startswith("D-")) + "\n")
    got = score.main(["--generate-output", str(h_only)] + common)
    expect = topics.summary_similarities(model, encode, ["blue sky ball park", "red red red"], docs,
                                         ["cat sat on mat", "dog ran"])
    assert (got["ss_sum_doc"], got["ss_sum_gold"]) == (expect["ss_sum_doc"], expect["ss_sum_gold"])


# --- checkpoints record Phi's checksum ------------------------------------------------------------------


@pytest.mark.slow
def test_checkpoint_records_phi_and_rejects_a_refit_topic_model(ta_trained, tmp_path):
    import torch
    from fairseq import checkpoint_utils

    from fairseq_sum_plugins.features.topic_assistant.topic_model import PoissonFactorAnalysis, load_dictionary

    data, ckpt = ta_trained["data"], ta_trained["ckpt"]
    d = load_dictionary(data)
    tm = PoissonFactorAnalysis.load(os.path.join(data, "topic_model.npz"), d)
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    model_args = state["cfg"]["model"]
    assert model_args.ta_phi_sha256 == tm.phi_sha256  # in the checkpoint's cfg, Phi itself is not
    assert not [k for k in state["model"] if "phi" in k]
    models, _ = checkpoint_utils.load_model_ensemble([ckpt], arg_overrides={"data": data})  # the same Phi: fine
    # a refit topic model (same dictionary and K, other Phi) is an error naming both files and checksums
    other = str(tmp_path / "refit.npz")
    phi = np.random.default_rng(5).gamma(0.3, 1.0, tm.phi.shape).astype(np.float32)
    phi[~tm.keep] = 0
    PoissonFactorAnalysis(phi / phi.sum(0), tm.keep, tm.checksum).save(other)
    refit = PoissonFactorAnalysis.load(other)
    with pytest.raises(ValueError) as err:
        checkpoint_utils.load_model_ensemble([ckpt], arg_overrides={"data": data, "ta_topic_model": other})
    msg = str(err.value)
    assert other in msg and os.path.join(data, "topic_model.npz") in msg
    assert tm.phi_sha256[:16] in msg and refit.phi_sha256[:16] in msg


# --- recipe: App. B's 4 GPUs x gradient accumulation every six iterations -----------------------------------


def recipe_update_freq(**env):
    """--update-freq of recipes/topic_assistant_run.sh: its PAPER_GPUS / PAPER_ACCUM lines, then
    common.sh's gpu_setup as the recipe calls it (VISIBLE_GPUS fakes the node's GPUs)."""
    import re
    import subprocess

    from helpers import REPO

    with open(os.path.join(REPO, "recipes", "topic_assistant_run.sh")) as f:
        script = f.read()
    assert '--update-freq "$UPDATE_FREQ"' in script
    lines = re.findall(r"^(?:PAPER_GPUS|PAPER_ACCUM)=.*$|^gpu_setup .*$", script, re.M)
    assert len(lines) == 3, lines
    common = os.path.join(REPO, "recipes", "common.sh")
    clean = {k: v for k, v in os.environ.items()
             if k not in ("NGPU", "NNODES", "PAPER_GPUS", "PAPER_ACCUM", "UPDATE_FREQ", "VISIBLE_GPUS")}
    env = dict(env, VISIBLE_GPUS=env.get("NGPU", "0"))
    proc = subprocess.run(["bash", "-c", "\n".join([f'source "{common}"'] + lines + ['echo "$UPDATE_FREQ"'])],
                          env=dict(clean, **env), capture_output=True, text=True, check=True)
    return int(proc.stdout.strip().splitlines()[-1])


def test_recipe_update_freq_is_paper_gpus_times_six_over_ngpu():
    assert recipe_update_freq() == 24  # 4 GPUs x 6 accumulated iterations, on one worker (CPU)
    assert recipe_update_freq(NGPU="1") == 24  # one GPU
    assert recipe_update_freq(NGPU="4") == 6
    assert recipe_update_freq(NGPU="8") == 3
    assert recipe_update_freq(NGPU="5") == 5  # rounded up
    assert recipe_update_freq(PAPER_ACCUM="1", NGPU="2") == 2


# --- BART with information selection and the Topic Assistant together ----------------------------------


@pytest.mark.slow
def test_bart_with_gate_and_topic_assistant_restores_fine_tunes_generates(tmp_path):
    """A tiny fairseq ``bart_base`` checkpoint fine-tuned as ``bart_base_ta --info-gate True`` through
    fairseq-train --restore-file (the new parameters initialised fresh), then generation with a
    gate threshold; pruning the closed positions gives the output of masking them."""
    import re
    from argparse import Namespace

    import torch
    from fairseq import checkpoint_utils

    from helpers import save_bart_checkpoint
    from preprocess.topic_model import main as topic_model_main

    write_toy_parallel(str(tmp_path / "raw"), n_train=24, n_valid=4, n_test=5, seed=5)
    data = binarize(str(tmp_path / "raw"), str(tmp_path / "bin"))
    topic_model_main(["fit", data, "--topics", str(K), "--iters", "5"])
    dims = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
            "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
            "--decoder-attention-heads", "2", "--max-source-positions", "64", "--max-target-positions", "64"]
    bart = save_bart_checkpoint(data, str(tmp_path / "model.pt"), dims)
    save = str(tmp_path / "ft")
    proc = run(cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization", "--arch", "bart_base_ta",
               "--info-gate", "True", "--gate-per-head", "True", "--side-data", "theta", "--ta-topics-n", "3", *dims,
               "--restore-file", bart, "--reset-optimizer", "--reset-dataloader", "--reset-meters",
               "--reset-lr-scheduler", "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "0.003",
               "--max-tokens", "1000", "--max-update", "3", "--save-dir", save, "--no-epoch-checkpoints",
               "--log-format", "simple", "--log-interval", "1", "--disable-validation")
    log = proc.stderr + proc.stdout
    for fresh in ("encoder.info_gate.proj.weight", "encoder.layers.0.self_attn.sia.v_add.weight",
                  "decoder.layers.0.encoder_attn.drm.w_b.weight"):
        assert f"initialising {fresh} fresh" in log
    assert re.search(r"aux_gate_l1 [0-9.]+", log)

    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [os.path.join(save, "checkpoint_last.pt")], arg_overrides={"gate_threshold": 0.5, "data": data})
    model = models[0].eval()
    task.load_dataset("test")
    ds = task.dataset("test")
    sample = ds.collater([ds[i] for i in range(len(ds))])
    with torch.no_grad():
        hypos = task.inference_step(task.build_generator([model], Namespace(beam=2, max_len_b=6)), [model], sample)
        assert len(hypos) == len(ds) and all(len(h[0]["tokens"]) > 0 for h in hypos)
        net_input = dict(sample["net_input"])
        gate = model.encoder.info_gate
        gate.threshold = -1.0
        view_enc = model.encoder(**net_input)
        g = view_enc["feature_state"]["gates"][~view_enc["encoder_padding_mask"][0]].max(-1).values.sort().values
        gate.threshold = float(g[len(g) // 2 - 1 : len(g) // 2 + 1].mean())
        gate.prune = False
        masked, _ = model(**net_input)
        gate.prune = True
        pruned, _ = model(**net_input)
        enc = model.encoder(**net_input)
    assert enc["encoder_out"][0].size(0) < net_input["src_tokens"].size(1)  # positions were removed
    assert fp32_close(pruned, masked, ulps=MODEL_ULPS)  # shorter keys: other blockings only
# --- theta is tied to the topic model it was inferred with ------------------------------------------------


def _copy_data(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return str(dst)


def _refit_phi(data, path, seed=5):
    """A topic model over the same dictionary and K with another Phi (a refit)."""
    from fairseq_sum_plugins.features.topic_assistant.topic_model import PoissonFactorAnalysis, load_dictionary

    tm = PoissonFactorAnalysis.load(os.path.join(data, "topic_model.npz"), load_dictionary(data))
    phi = np.random.default_rng(seed).gamma(0.3, 1.0, tm.phi.shape).astype(np.float32)
    phi[~tm.keep] = 0
    PoissonFactorAnalysis(phi / phi.sum(0), tm.keep, tm.checksum).save(path)
    return path


def _fails(*cmd):
    import subprocess
    import sys

    from helpers import REPO, repo_env

    env = repo_env()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode != 0, f"{cmd[0]} succeeded:\n{proc.stderr[-2000:]}"
    return proc.stderr


@pytest.mark.slow
def test_train_refuses_theta_of_another_topic_model(ta_trained, tmp_path):
    """Issue 12.5: Phi replaced (a fit killed after writing topic_model.npz) beside the old theta:
    fairseq-train stops, naming the theta file and the command that rewrites it."""
    data = _copy_data(ta_trained["data"], tmp_path / "bin")
    _refit_phi(data, os.path.join(data, "topic_model.npz"))
    err = _fails(
        cli("fairseq-train"), data, "--user-dir", USER_DIR, "--task", "summarization", "--arch", "transformer_ta_small",
        "--side-data", "theta", "--ta-topics-n", "3", "--encoder-layers", "1", "--decoder-layers", "1",
        "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
        "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "0.003", "--max-tokens", "1000",
        "--max-update", "1", "--save-dir", str(tmp_path / "ckpt"), "--log-format", "simple")
    assert "valid.theta.npy was inferred with the topic model" in err
    assert "python -m preprocess.topic_model infer" in err


@pytest.mark.slow
def test_generate_with_the_training_topic_model_refuses_theta_of_a_refit(ta_trained, tmp_path):
    """Issue 12.5: after a refit of DATA, following the checkpoint error's advice
    (--model-overrides "{'ta_topic_model': PATH}") decodes with theta of the other fit: refused; theta
    rewritten with that topic model (the command the error names) is accepted."""
    from fairseq_sum_plugins.features.topic_assistant.topic_model import PoissonFactorAnalysis, check_theta_file
    from preprocess.topic_model import main as topic_model_main

    data = _copy_data(ta_trained["data"], tmp_path / "bin")
    trained_with = str(tmp_path / "trained_with.npz")
    os.replace(os.path.join(data, "topic_model.npz"), trained_with)
    topic_model_main(["fit", data, "--topics", str(K), "--iters", "3", "--seed", "7"])  # a refit in DATA
    err = _fails(cli("fairseq-generate"), data, "--user-dir", USER_DIR, "--task", "summarization",
                 "--path", ta_trained["ckpt"], "--side-data", "theta", "--gen-subset", "test", "--beam", "1",
                 "--max-len-b", "3", "--model-overrides", f"{{'ta_topic_model': '{trained_with}'}}")
    assert "test.theta.npy was inferred with the topic model" in err and trained_with in err
    topic_model_main(["infer", data, "--splits", "test", "--topic-model", trained_with])
    check_theta_file(os.path.join(data, "test.theta.npy"), PoissonFactorAnalysis.load(trained_with).phi_sha256,
                     trained_with, "test")


@pytest.mark.slow
def test_a_killed_fit_never_leaves_new_phi_beside_old_theta(ta_trained, tmp_path, monkeypatch):
    """topic_model fit interrupted at every file operation (np.save, os.replace, os.remove): never the
    new Phi with an old theta file; what is left is refused or consistent."""
    import hashlib
    import shutil

    from fairseq_sum_plugins.features.topic_assistant.topic_model import PoissonFactorAnalysis, check_theta_file
    from preprocess.topic_model import main as topic_model_main

    def sha(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    orig = {"save": np.save, "replace": os.replace, "remove": os.remove}
    splits = ("train", "valid", "test")
    k, finished = 0, False
    while not finished:
        data = str(tmp_path / f"bin{k}")
        shutil.copytree(ta_trained["data"], data)
        old_phi = sha(os.path.join(data, "topic_model.npz"))
        old_theta = {s: sha(os.path.join(data, f"{s}.theta.npy")) for s in splits}
        calls = [0]

        def killer(name):
            def op(*a, **kw):
                calls[0] += 1
                if calls[0] == k + 1:
                    raise KeyboardInterrupt(f"killed at {name} #{k + 1}")
                return orig[name](*a, **kw)
            return op

        monkeypatch.setattr(np, "save", killer("save"))
        monkeypatch.setattr(os, "replace", killer("replace"))
        monkeypatch.setattr(os, "remove", killer("remove"))
        try:
            topic_model_main(["fit", data, "--topics", str(K), "--iters", "3", "--seed", "9"])
            finished = True
        except KeyboardInterrupt:
            pass
        finally:
            monkeypatch.undo()
        phi_path = os.path.join(data, "topic_model.npz")
        new_phi = sha(phi_path) != old_phi
        for s in splits:
            path = os.path.join(data, f"{s}.theta.npy")
            if not os.path.exists(path):
                continue
            assert not (new_phi and sha(path) == old_theta[s]), f"killed at operation {k + 1}: new Phi, old {s} theta"
            try:  # whatever is left is either consistent with the Phi in DATA or refused
                check_theta_file(path, PoissonFactorAnalysis.load(phi_path).phi_sha256, phi_path, s)
            except ValueError as err:
                assert "rewrite it" in str(err)
        k += 1
    assert k > 5  # every operation of the fit was interrupted once
