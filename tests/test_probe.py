"""Decoder probing (fairseq-sum-probe) and reference-summary perplexity through fairseq-validate."""
import json
import math
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from helpers import REPO, binarize, save_fresh_checkpoint
from tolerances import MODEL_ULPS, OP_ULPS, fp32_close, fp32_tol, printed_tol
from fairseq_sum_plugins.inspection import probe as P

USER_DIR = os.path.join(REPO, "fairseq_sum_plugins")
CHAIN = [f"c{i}" for i in range(12)]


def run(*cmd):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd[:2])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def cli(name):
    return os.path.join(os.path.dirname(sys.executable), name)


STARTS = ["the", "a", "this"]  # all labelled DT: the first word's label is known before it is drawn


def label_of(word):
    """A deterministic function of the word (learnable)."""
    return "DT" if word in STARTS else "ABC"[int(word[1:]) % 3]


def write_chain_data(folder, seed=0):
    """Summaries "<start_j> c_4j c_4j+1 ..." (each word fixes the next); sources: random words."""
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    for split, n in (("train", 60), ("valid", 16), ("test", 4)):
        with open(f"{folder}/{split}.src", "w") as fs, open(f"{folder}/{split}.tgt", "w") as ft:
            for _ in range(n):
                j, m = rng.randrange(3), rng.randint(4, 9)
                fs.write(" ".join(rng.choice(CHAIN + ["x", "y"]) for _ in range(rng.randint(5, 15))) + "\n")
                ft.write(" ".join([STARTS[j]] + [CHAIN[(4 * j + i) % 12] for i in range(m)]) + "\n")


def save_checkpoint(data, arch, path, *extra):
    """A freshly initialised ``arch`` (tiny dims) saved as fairseq-train saves checkpoints."""
    return save_fresh_checkpoint(
        [data, "--task", "summarization", *extra, "--arch", arch, "--encoder-layers", "2", "--decoder-layers", "2",
         "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
         "--tpr-roles", "4", "--dropout", "0", "--criterion", "summarization_loss", "--optimizer", "adam",
         "--lr", "0.001"], path, "SummarizationLoss")


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe")
    write_chain_data(str(root / "raw"))
    data = binarize(str(root / "raw"), str(root / "bin"))
    ckpts = {arch: save_checkpoint(data, arch, str(root / f"{arch}.pt"))
             for arch in ("tp_transformer_small", "t5_transformer_small")}
    return {"data": data, "root": root, **ckpts}


def write_conllu(words_file, path, labeller=label_of, ner=False):
    """CoNLL-U over the lines of ``--write-words``: XPOS / DEPREL / NER from ``labeller``."""
    with open(words_file) as f, open(path, "w") as out:
        for n, line in enumerate(f):
            out.write(f"# sent_id = {n}\n")
            ws = line.split()
            for i, w in enumerate(ws):
                lab = labeller(w)
                # NER: words 2.. form one entity typed by its first word
                misc = f"NER={'B' if i == 1 else 'I'}-{labeller(ws[1])}" if ner and i > 0 else ("NER=O" if ner else "_")
                out.write(f"{i + 1}\t{w}\t_\tX\t{lab}\t_\t{0 if i == 0 else 1}\t{lab}\t_\t{misc}\n")
            out.write("\n")


# -------------------------------------------------------------------------------- unit: word pieces
def test_words_are_represented_by_the_position_predicting_their_first_piece():
    pieces = ["\u2581The", "\u2581cat", "s", "\u2581sat", "\u2581", "<sep>", "\u2581It", "\u2581pur", "red", "\u2581."]
    sents = P.split_words(pieces, "sentencepiece")
    assert sents == [[("The", 0), ("cats", 1), ("sat", 3)], [("It", 6), ("purred", 7), (".", 9)]]
    assert P.split_words(["the", "ca@@", "ts", "sat", "<sep>", "it"], "bpe") == [[("the", 0), ("cats", 1), ("sat", 3)], [("it", 5)]]
    assert P.piece_mode(["<s>", "\u2581the"]) == "sentencepiece" and P.piece_mode(["a@@", "b"]) == "bpe"


def test_conll_readers_and_entity_spans(tmp_path):
    conll = tmp_path / "ner.conll"
    conll.write_text("-DOCSTART- -X- O\n\nJohn NNP B-PER\nSmith NNP I-PER\nmet VBD O\nMary NNP B-PER\n\n"
                     "in IN O\nNew NNP LOCATION\nYork NNP LOCATION\n")
    pos = P.read_conll(str(conll), "pos", label_column=2)
    assert [t["label"] for t in pos] == ["NNP", "NNP", "VBD", "NNP", "IN", "NNP", "NNP"]
    assert [(t["sentence"], t["index"]) for t in pos][3:5] == [(0, 3), (1, 0)]
    summaries = [(0, [[("John", 0), ("Smith", 1), ("met", 2), ("Mary", 3)]]), (1, [[("in", 0), ("New", 1), ("York", 2)]])]
    aligned = P.align_labels(summaries, P.read_conll(str(conll), "nel"), str(conll))
    assert P.entity_spans(aligned) == [(0, [0, 1], "PER"), (0, [3], "PER"), (1, [1, 2], "LOCATION")]
    conllu = tmp_path / "dep.conllu"
    conllu.write_text("# text = don't go\n1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
                      "1\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
                      "3\tgo\tgo\tVERB\t_\t_\t0\troot\t_\tNER=O\n")
    dep = P.read_conll(str(conllu), "dep")
    assert [(t["word"], t["label"], t["head"]) for t in dep] == [("do", "aux", 2), ("n't", "advmod", 2), ("go", "root", -1)]
    aligned = P.align_labels([(7, [[("do", 0), ("n't", 1), ("go", 2)]])], dep, str(conllu))
    assert [a[3] for a in aligned] == [(0, 2), (0, 2), (0, 2)]  # the root is paired with itself
    with pytest.raises(ValueError, match=r"dep.conllu:5: no pos label .*--pos-field upos"):
        P.read_conll(str(conllu), "pos")
    assert [t["label"] for t in P.read_conll(str(conllu), "pos", pos_field="upos")] == ["AUX", "PART", "VERB"]


@pytest.mark.slow
def test_hooked_vectors_are_the_decoders_own(chain):
    """The vector of word j is the decoder state at the position whose input is the piece before it
    (recomputed on that prefix alone), and final = R * F + F with the hooked role and filler."""
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([chain["tp_transformer_small"]],
                                                                    arg_overrides={"data": chain["data"]})
    model = models[0].eval()
    summaries = P.summary_words(task, "valid", max_summaries=3)
    feats = P.decoder_features(model, task, "valid", summaries, batch_size=2)
    assert set(feats) == {(layer, rep) for layer in range(2) for rep in P.REPRESENTATIONS}
    ds = task.dataset("valid")
    sample = ds.collater([ds[2]])
    net = sample["net_input"]
    enc = model.encoder(net["src_tokens"], src_lengths=net["src_lengths"])
    row = sum(len(s) for _, sents in summaries[:2] for s in sents)  # first word of summary 2
    words = [w for s in summaries[2][1] for w in s]
    for j, (word, k) in enumerate(words):
        assert task.target_dictionary[sample["target"][0, k]] == word  # position k predicts the word
        captured = {}
        handle = model.decoder.layers[1].cross_attn_binding.register_forward_hook(lambda m, i, o: captured.update(f=i[0], t=o))
        with torch.no_grad():
            model.decoder(net["prev_output_tokens"][:, : k + 1], enc)  # the prefix alone
        handle.remove()
        # the whole batch against the prefix alone: float32 rounding of the vectors' size
        assert fp32_close(feats[(1, "filler")][row + j], captured["f"][0, -1], ulps=MODEL_ULPS)
        assert fp32_close(feats[(1, "final")][row + j], captured["t"][0, -1], ulps=MODEL_ULPS)
    r, f, t = (feats[(0, rep)] for rep in ("role", "filler", "final"))
    assert fp32_close(t, r * f + f, ulps=OP_ULPS)  # TPT eq. 6, one float32 op in another order


@pytest.mark.slow
def test_summaries_with_side_data(chain, tmp_path):
    """A task with --side-data wraps the split (SideDataDataset): words and vectors are read through it."""
    import shutil

    from fairseq import checkpoint_utils

    data = str(tmp_path / "bin")
    shutil.copytree(chain["data"], data)
    for split, n in (("train", 60), ("valid", 16), ("test", 4)):
        np.save(f"{data}/{split}.extra.npy", np.arange(n, dtype=np.float32)[:, None])
    ckpt = save_checkpoint(data, "t5_transformer_small", str(tmp_path / "side.pt"), "--side-data", "extra")
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([ckpt], arg_overrides={"data": data})
    with_side = P.summary_words(task, "valid")
    assert type(task.dataset("valid")).__name__ == "SideDataDataset"
    plain_models, _, plain_task = checkpoint_utils.load_model_ensemble_and_task([chain["t5_transformer_small"]],
                                                                                arg_overrides={"data": chain["data"]})
    assert with_side == P.summary_words(plain_task, "valid")
    feats = P.decoder_features(models[0], task, "valid", with_side)
    assert feats[(1, "filler")].shape == (sum(len(s) for _, sents in with_side for s in sents), 32)


# --------------------------------------------------------------------------------------- CLI runs
@pytest.mark.slow
def test_probe_learns_a_function_of_the_word_and_not_shuffled_labels(chain, tmp_path, capsys):
    words = tmp_path / "words.txt"
    run(cli("fairseq-sum-probe"), chain["data"], "--path", chain["tp_transformer_small"], "--write-words", str(words))
    assert words.read_text().splitlines()[0].split()[0] in STARTS
    write_conllu(words, tmp_path / "train.conllu")
    P.main([chain["data"], "--path", chain["tp_transformer_small"], "--task", "pos", "--labels",
            str(tmp_path / "train.conllu"), "--png", str(tmp_path / "grid.png"), "--json", str(tmp_path / "grid.json"),
            "--epochs", "60"])
    out = capsys.readouterr().out
    assert re.search(r"^\s+2\s+\S+\s+\S+\s+\S+", out, re.M), out
    grid = json.loads((tmp_path / "grid.json").read_text())
    assert set(grid["cells"]) == {f"{layer}/{rep}" for layer in (1, 2) for rep in P.REPRESENTATIONS}
    for layer in (1, 2):
        assert grid["cells"][f"{layer}/filler"]["f1"] > 0.9, grid
    assert (tmp_path / "grid.png").stat().st_size > 1000

    # the same labels shuffled over the tokens: nothing to learn beyond the majority class
    rng = random.Random(0)
    pool = [label_of(w) for w in words.read_text().split()]
    rng.shuffle(pool)
    it = iter(pool)
    write_conllu(words, tmp_path / "shuffled.conllu", labeller=lambda w: next(it))
    res = P.main([chain["data"], "--path", chain["tp_transformer_small"], "--labels", str(tmp_path / "shuffled.conllu"),
                  "--epochs", "60"])
    for (layer, rep), cell in res["cells"].items():
        assert cell["f1"] < res["majority"] + 0.12, (layer, rep, cell, res["majority"])


@pytest.mark.slow
def test_dep_and_nel_on_a_model_without_roles(chain, tmp_path):
    words = tmp_path / "words.txt"
    P.main([chain["data"], "--path", chain["t5_transformer_small"], "--write-words", str(words), "--split", "valid"])
    write_conllu(words, tmp_path / "v.conllu", ner=True)
    P.main([chain["data"], "--path", chain["t5_transformer_small"], "--write-words", str(tmp_path / "tw.txt")])
    write_conllu(tmp_path / "tw.txt", tmp_path / "t.conllu", ner=True)
    for task in ("dep", "nel"):
        res = P.main([chain["data"], "--path", chain["t5_transformer_small"], "--task", task, "--labels",
                      str(tmp_path / "t.conllu"), "--eval-split", "valid", "--eval-labels", str(tmp_path / "v.conllu"),
                      "--epochs", "30", *(["--eval-data", chain["data"]] if task == "nel" else [])])
        assert {rep for _, rep in res["cells"]} == {"filler", "final"}  # no roles without TPR
        for layer in range(2):
            assert res["cells"][(layer, "final")] == res["cells"][(layer, "filler")]
        if task == "dep":
            assert res["cells"][(1, "filler")]["f1"] > 0.9
        else:  # one span per summary (words 2..), typed by its first word: the span mean must carry it
            assert res["n_eval"] == 16
            assert res["cells"][(1, "filler")]["f1"] > 0.9, res


@pytest.mark.slow
def test_labels_that_disagree_with_the_summaries_are_an_error(chain, tmp_path):
    words = tmp_path / "words.txt"
    P.main([chain["data"], "--path", chain["t5_transformer_small"], "--write-words", str(words)])
    text = words.read_text().split("\n")
    text[3] = "WRONG " + text[3].split(" ", 1)[1]
    words.write_text("\n".join(text))
    write_conllu(words, tmp_path / "bad.conllu", labeller=lambda w: "X")
    with pytest.raises(SystemExit, match=r"bad.conllu:\d+: token 'WRONG' does not match word 0 of summary 3"):
        P.main([chain["data"], "--path", chain["t5_transformer_small"], "--labels", str(tmp_path / "bad.conllu")])


@pytest.mark.slow
def test_labels_for_another_number_of_summaries_are_refused(chain, tmp_path):
    """Labels of 20 summaries for the 16 of the valid split were cut silently under the default
    --max-documents: refused, naming both sentence counts. Labels of the whole split with a smaller
    --max-documents stay accepted (cut to the summaries used)."""
    ckpt = chain["t5_transformer_small"]
    words = tmp_path / "valid.txt"
    P.main([chain["data"], "--path", ckpt, "--write-words", str(words), "--split", "valid"])
    lines = words.read_text().splitlines()
    assert len(lines) == 16  # one sentence per summary
    (tmp_path / "more.txt").write_text("\n".join(lines + lines[:4]) + "\n")
    write_conllu(tmp_path / "more.txt", tmp_path / "more.conllu")
    with pytest.raises(SystemExit, match=r"more.conllu: 20 labelled sentences, but the 16 summaries of split "
                                         r"'valid' used \(--max-documents 2000\) have 16 sentences"):
        P.main([chain["data"], "--path", ckpt, "--split", "valid", "--labels", str(tmp_path / "more.conllu")])
    (tmp_path / "fewer.txt").write_text("\n".join(lines[:10]) + "\n")
    write_conllu(tmp_path / "fewer.txt", tmp_path / "fewer.conllu")
    with pytest.raises(SystemExit, match=r"10 labelled sentences, .* have 16 sentences"):
        P.main([chain["data"], "--path", ckpt, "--split", "valid", "--labels", str(tmp_path / "fewer.conllu")])
    with pytest.raises(SystemExit, match=r"10 labelled sentences, but the 5 summaries .* have 5 sentences "
                                         r"\(16 in the whole split\)"):  # not the whole split either
        P.main([chain["data"], "--path", ckpt, "--split", "valid", "--max-documents", "5",
                "--labels", str(tmp_path / "fewer.conllu")])
    write_conllu(words, tmp_path / "valid.conllu")
    res = P.main([chain["data"], "--path", ckpt, "--split", "valid", "--max-documents", "10", "--epochs", "2",
                  "--labels", str(tmp_path / "valid.conllu")])
    assert res["n_train"] + res["n_eval"] == sum(len(line.split()) for line in lines[:10])


@pytest.mark.slow
def test_spacy_labeller(chain):
    spacy = pytest.importorskip("spacy")
    try:
        spacy.load("en_core_web_sm")
    except OSError:
        pytest.skip("spaCy model en_core_web_sm not installed")
    res = P.main([chain["data"], "--path", chain["t5_transformer_small"], "--spacy-model", "en_core_web_sm",
                  "--epochs", "5"])
    assert 0 <= res["cells"][(0, "filler")]["f1"] <= 1


# ------------------------------------------------------------------------------------- perplexity
@pytest.mark.slow
def test_validate_perplexity_equals_exp_of_the_mean_token_nll(chain):
    """fairseq-validate's ppl on the reference summaries = exp(mean NLL per target token, </s> included)."""
    from fairseq import checkpoint_utils

    out = run(cli("fairseq-validate"), chain["data"], "--user-dir", USER_DIR, "--task", "summarization",
              "--path", chain["tp_transformer_small"],
              "--valid-subset", "valid", "--max-tokens", "4000")
    log = out.stdout + out.stderr
    ppl = float(re.search(r"\| ppl ([0-9.]+)", log).group(1))
    nll_bits = float(re.search(r"\| nll_loss ([0-9.]+)", log).group(1))  # base 2, as fairseq logs it
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([chain["tp_transformer_small"]],
                                                                    arg_overrides={"data": chain["data"]})
    model = models[0].eval()
    task.load_dataset("valid")
    ds = task.dataset("valid")
    total, count, largest = 0.0, 0, 0.0
    with torch.no_grad():
        for i in range(len(ds)):
            sample = ds.collater([ds[i]])
            logits, _ = model(**sample["net_input"])
            largest = max(largest, logits.abs().max().item())
            logp = torch.log_softmax(logits.double(), -1)[0]
            target = sample["target"][0]
            total -= logp.gather(-1, target[:, None]).sum().item()
            count += len(target)
    assert count == sum(len(ds.tgt[i]) for i in range(len(ds)))
    # fairseq logs nll_loss rounded to 3 decimals and ppl = 2 ** (unrounded nll) to 2; its batches
    # give float32 log-probs rounded to ulps of the logits (d exp(x) = exp(x) dx for the ppl)
    rounding = fp32_tol(largest, MODEL_ULPS)
    assert nll_bits == pytest.approx(total / count / math.log(2), abs=printed_tol(3) + rounding)
    assert ppl == pytest.approx(math.exp(total / count),
                                abs=printed_tol(2) + math.exp(total / count) * rounding)


def test_spacy_conllu_writes_what_the_probe_reads(tmp_path):
    """preprocess/spacy_conllu.py keeps the words of each line as they are and writes UPOS, XPOS,
    HEAD (1-based, 0 at the root), DEPREL and NER= in MISC; the probe's reader gets back, per task,
    the labels and heads of a spaCy-like Doc (duck-typed here: spaCy is not a dependency)."""
    from types import SimpleNamespace as NS

    from preprocess.spacy_conllu import conllu_lines

    words = [("Ann", "PROPN", "NNP", "nsubj", 1, "PERSON"), ("sleeps", "VERB", "VBZ", "ROOT", 1, ""),
             (".", "PUNCT", ".", "punct", 1, "")]
    toks = []
    for i, (w, pos, tag, dep, head, ent) in enumerate(words):
        toks.append(NS(i=i, text=w, lemma_=w.lower(), pos_=pos, tag_=tag, dep_=dep, ent_type_=ent))
    for t, (*_, head, _) in zip(toks, words):
        t.head = toks[head]
    path = tmp_path / "labels.conllu"
    path.write_text("# sent_id = 1\n" + "\n".join(conllu_lines(toks)) + "\n\n", encoding="utf-8")
    pos = P.read_conll(str(path), "pos")
    assert [(t["word"], t["label"]) for t in pos] == [("Ann", "NNP"), ("sleeps", "VBZ"), (".", ".")]
    assert [t["label"] for t in P.read_conll(str(path), "pos", pos_field="upos")] == ["PROPN", "VERB", "PUNCT"]
    dep = P.read_conll(str(path), "dep")
    assert [(t["label"], t["head"]) for t in dep] == [("nsubj", 1), ("ROOT", -1), ("punct", 1)]
    assert [t["label"] for t in P.read_conll(str(path), "nel")] == ["PERSON", "O", "O"]


def test_spacy_conllu_without_spacy_or_with_an_empty_line_says_so(tmp_path, capsys, monkeypatch):
    from preprocess import spacy_conllu

    words = tmp_path / "words.txt"
    words.write_text("A sentence .\n\nAnother .\n", encoding="utf-8")
    with pytest.raises(SystemExit):  # the probe aligns sentences one to one: no empty line
        spacy_conllu.main([str(words), str(tmp_path / "out.conllu")])
    assert f"{words}:2: empty line" in capsys.readouterr().err
    words.write_text("A sentence .\nAnother .\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy -> ImportError
    with pytest.raises(SystemExit):
        spacy_conllu.main([str(words), str(tmp_path / "out.conllu")])
    assert "needs spaCy" in capsys.readouterr().err
    assert not (tmp_path / "out.conllu").exists()


def write_decoding(path, summaries):
    """A fairseq-generate output of the valid split whose hypotheses are ``summaries`` (by id)."""
    with open(path, "w") as f:
        for i, text in summaries.items():
            f.write(f"S-{i}\tx y\nT-{i}\tref\nH-{i}\t-0.5\t{text}\nD-{i}\t-0.5\t{text}\nP-{i}\t-0.5\n")


@pytest.mark.slow
def test_probes_are_evaluated_on_the_models_own_summaries_of_a_decoding(chain, tmp_path):
    """Table 4's evaluation set: the model's dev summaries (--eval-generate-output, a decoding of
    --eval-split): --write-words writes their words, the probes are evaluated on them (their word
    count, not the references'), and the JSON says so; a decoding of another split is refused."""
    valid = open(os.path.join(os.path.dirname(chain["data"]), "raw", "valid.tgt")).read().splitlines()
    # the model's "summaries": each reference's chain started from another first word
    own = {i: " ".join([STARTS[(STARTS.index(s.split()[0]) + 1) % 3]] + s.split()[1:-1])
           for i, s in enumerate(valid)}
    gen = tmp_path / "valid.out"
    write_decoding(gen, own)
    ckpt = chain["tp_transformer_small"]
    common = [chain["data"], "--path", ckpt, "--eval-split", "valid", "--eval-generate-output", str(gen)]
    P.main(common + ["--write-words", str(tmp_path / "own.txt")])
    assert (tmp_path / "own.txt").read_text().splitlines() == [own[i] for i in range(len(valid))]
    P.main([chain["data"], "--path", ckpt, "--write-words", str(tmp_path / "train.txt")])
    write_conllu(tmp_path / "train.txt", tmp_path / "train.conllu")
    write_conllu(tmp_path / "own.txt", tmp_path / "own.conllu")
    res = P.main(common + ["--labels", str(tmp_path / "train.conllu"), "--eval-labels", str(tmp_path / "own.conllu"),
                           "--epochs", "30", "--json", str(tmp_path / "grid.json")])
    assert res["n_eval"] == sum(len(s.split()) for s in own.values()) != sum(len(s.split()) for s in valid)
    # the word's label, learned from the references, carries over to the model's own summaries,
    # past the majority class (not to 0.9: the second word of these follows another first word)
    assert res["cells"][(1, "filler")]["f1"] > res["majority"] + 0.2, res
    record = json.loads((tmp_path / "grid.json").read_text())
    assert record["trained_on"] == "train" and record["evaluated_on"].startswith("the model's own valid summaries")
    # refused by name: a decoding that misses a document, another split's, no --eval-split
    write_decoding(gen, {i: own[i] for i in range(len(valid) - 1)})
    with pytest.raises(SystemExit, match=r"not a decoding of the valid split .* no hypothesis for ids \[15\]"):
        P.main(common + ["--eval-labels", str(tmp_path / "own.conllu"), "--labels", str(tmp_path / "train.conllu")])
    write_decoding(gen, own)  # the closing line of a decoding of the test split
    with open(gen, "a") as f:
        f.write("Generate test with beam=4: BLEU4 = 1.00, 1/1/1/1 (BP=1.0, ratio=1.0, syslen=1, reflen=1)\n")
    with pytest.raises(SystemExit, match=r"a decoding of the test split, not of --eval-split valid"):
        P.main(common + ["--write-words", str(tmp_path / "w.txt")])
    write_decoding(gen, own)  # fairseq's log line of another data folder (matched by content:
    (tmp_path / "other").mkdir()  # its dictionary differs)
    (tmp_path / "other" / "dict.tgt.txt").write_text("other 1\n")
    (tmp_path / "valid.out.log").write_text(
        f"INFO:fairseq.tasks.translation:{tmp_path}/other valid src-tgt {len(valid)} examples\n")
    with pytest.raises(SystemExit, match=rf"a decoding of {tmp_path}/other \(generate's log\), not of "
                                         r".*: their dict.\w+.txt differs"):
        P.main(common + ["--write-words", str(tmp_path / "w.txt")])
    with pytest.raises(SystemExit, match=r"--eval-split train is --split too"):
        P.main([chain["data"], "--path", ckpt, "--eval-split", "train", "--eval-generate-output", str(gen),
                "--labels", str(tmp_path / "train.conllu"), "--eval-labels", str(tmp_path / "own.conllu")])
    with pytest.raises(SystemExit, match=r"--eval-generate-output needs --eval-split"):
        P.main([chain["data"], "--path", ckpt, "--eval-generate-output", str(gen), "--labels",
                str(tmp_path / "train.conllu")])


@pytest.mark.slow
def test_a_real_decoding_of_the_dev_split_is_read_as_the_models_summaries(chain, tmp_path):
    """fairseq-generate's own output of the valid split (its H- lines) becomes the evaluation set."""
    gen = run(sys.executable, "-m", "fairseq_cli.generate", chain["data"], "--user-dir", USER_DIR, "--task",
              "summarization", "--path", chain["tp_transformer_small"], "--gen-subset", "valid", "--beam", "2",
              "--max-len-b", "6", "--min-len", "3", "--batch-size", "4", "--cpu").stdout
    (tmp_path / "valid.out").write_text(gen)
    hyps = {int(line.split("\t")[0][2:]): line.split("\t")[2] for line in gen.splitlines() if line.startswith("H-")}
    P.main([chain["data"], "--path", chain["tp_transformer_small"], "--eval-split", "valid",
            "--eval-generate-output", str(tmp_path / "valid.out"), "--write-words", str(tmp_path / "own.txt")])
    assert (tmp_path / "own.txt").read_text().splitlines() == [hyps[i] for i in range(len(hyps))]
