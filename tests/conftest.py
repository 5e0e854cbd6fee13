import argparse
import os
import sys

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import fairseq_sum_plugins  # noqa: E402,F401  (registers everything)
from fairseq.data import Dictionary  # noqa: E402
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY  # noqa: E402


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


@pytest.fixture
def tiny_overrides():
    """Small dims so that every arch builds and runs in milliseconds."""
    return dict(
        encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
        decoder_layers=2, tpr_roles=5, dropout=0.0,
    )


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


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory):
    """A small binarized src/tgt data dir with a joined dictionary."""
    root = tmp_path_factory.mktemp("toy")
    write_toy_parallel(str(root / "raw"))
    return binarize(str(root / "raw"), str(root / "bin"))


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


# --- helpers shared by several test files ------------------------------------------------------


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
