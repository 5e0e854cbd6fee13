"""Learning parity on real data: does a cell of this project learn as fast as the implementation a
researcher would otherwise use?

Pairs, each at one shape and from random initialisation:

* ``default``: ``sum_transformer``'s default cell (``t5_transformer_small`` with the given dims) against
  fairseq's own ``transformer`` of the same shape (pre-LN on both sides, all embeddings shared);
* ``t5``: the T5 cell (``t5_small`` with the given dims) against HF transformers'
  ``T5ForConditionalGeneration`` built from the same config (ReLU, tied and d_model^-0.5-scaled head,
  32 buckets up to distance 128, the same dropout), trained with HF's own forward and loss.

Both models of a pair see the same batches in the same order (the ``summarization`` task's iterator
over ``DATA``, ``--max-tokens``, shuffled by ``--seed``), the same optimizer (Adam, betas 0.9/0.98,
``--lr`` with an inverse-square-root schedule after ``--warmup`` linear updates, gradient norm clipped
at 1) and the same loss (mean token NLL, no label smoothing: HF's own ``labels`` loss; the fairseq
models' ``get_normalized_probs``). Every ``--valid-every`` updates the validation NLL (bits per
target token, eval mode, ``</s>`` included) of every model is recorded::

    OMP_NUM_THREADS=1 python benchmarks/learning_parity.py DATA/bin --pairs default,t5 --seeds 1,2 \\
        --updates 1000 --valid-every 100 --json parity.json --png parity.png

The models of one seed train in one process, one update each in turn, so machine load affects
them alike (their losses do not depend on it). A model's own seed sets its initialisation; the
batches depend on ``--seed`` only through the order of the epochs' batches.
"""
import argparse
import filecmp
import glob
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

LN2 = math.log(2)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", help="fairseq-sum-prepare's bin/ folder (joined dictionary)")
    p.add_argument("--pairs", default="default,t5", help="comma-separated: default, t5")
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--updates", type=int, default=1000)
    p.add_argument("--valid-every", type=int, default=100)
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--embed-dim", type=int, default=128)
    p.add_argument("--ffn-dim", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--max-source-positions", type=int, default=408)
    p.add_argument("--max-target-positions", type=int, default=80)
    p.add_argument("--json")
    p.add_argument("--png")
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="no training: merge the curves of earlier runs' --json files (e.g. one per seed or "
                        "pair, run in parallel) into --json / --png")
    a = p.parse_args(argv)
    for name in ("updates", "valid_every", "max_tokens", "warmup", "embed_dim", "ffn_dim", "layers", "heads",
                 "max_source_positions", "max_target_positions"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(a, name)}")
    if a.embed_dim % a.heads:
        p.error(f"--embed-dim {a.embed_dim} is not divisible by --heads {a.heads}")
    if not 0 <= a.dropout < 1:
        p.error(f"--dropout must be in [0, 1), got {a.dropout}")
    if not 0 < a.lr < math.inf:
        p.error(f"--lr must be a positive number, got {a.lr}")
    a.pairs = [x for x in a.pairs.split(",") if x]
    if not a.pairs or set(a.pairs) - {"default", "t5"}:
        p.error(f"--pairs takes default and/or t5, got {','.join(a.pairs)}")
    try:
        a.seeds = [int(s) for s in a.seeds.split(",") if s]
    except ValueError:
        p.error(f"--seeds takes integers, got {a.seeds!r}")
    if not a.seeds:
        p.error("--seeds is empty")
    for flag, values in (("--pairs", a.pairs), ("--seeds", a.seeds)):
        if len(set(values)) < len(values):
            p.error(f"{flag} names a value twice: {','.join(map(str, values))}")
    if not a.merge:  # --merge reads finished runs' JSON only
        if not os.path.exists(os.path.join(a.data, "dict.src.txt")):
            p.error(f"{a.data}: no dict.src.txt (a fairseq-sum-prepare bin/ folder)")
        dicts = [os.path.join(a.data, f"dict.{side}.txt") for side in ("src", "tgt")]
        if not os.path.isfile(dicts[1]) or not filecmp.cmp(*dicts, shallow=False):
            p.error(f"{a.data}: dict.src.txt and dict.tgt.txt differ; both pairs share all embeddings and need a "
                    "joined dictionary (fairseq-sum-prepare, or fairseq-preprocess --joined-dictionary)")
        for split in ("train", "valid"):
            if not glob.glob(os.path.join(glob.escape(a.data), f"{split}.*-*.*.idx")):
                p.error(f"{a.data}: no binarized {split} split ({split}.SRC-TGT.*.idx)")
    for flag, path in (("--json", a.json), ("--png", a.png)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            p.error(f"{flag} {path}: its folder does not exist")
    return a


def check_batches(task, a):
    """Exits naming the flags unless the train and valid splits give a batch at these limits (an
    empty train split would loop over empty epochs forever)."""
    limits = (f"--max-tokens {a.max_tokens}, --max-source-positions {a.max_source_positions}, "
              f"--max-target-positions {a.max_target_positions}")
    for split in ("train", "valid"):
        try:  # not through the task's iterator cache, which would move the training's epochs on
            found = list(task.get_batch_iterator(
                task.dataset(split), max_tokens=a.max_tokens, num_workers=0, ignore_invalid_inputs=True,
                max_positions=(a.max_source_positions, a.max_target_positions),
                disable_iterator_cache=True).next_epoch_itr(shuffle=False))
        except (AssertionError, ValueError) as e:  # batch_by_size: an example over --max-tokens;
            # the task: every example of the split over the position limits
            sys.exit(f"learning_parity.py: error: {split}: {e} ({limits})")
        if not found:
            sys.exit(f"learning_parity.py: error: {split}: no example fits {limits}")


def load_task(a):
    from fairseq import tasks

    import fairseq_sum_plugins  # noqa: F401
    from fairseq_sum_plugins.tasks.summarization import SummarizationConfig

    cfg = SummarizationConfig(data=a.data, dataset_impl="mmap", train_subset="train", required_seq_len_multiple=1,
                              max_source_positions=a.max_source_positions,
                              max_target_positions=a.max_target_positions)
    task = tasks.get_task("summarization").setup_task(cfg)
    for split in ("train", "valid"):
        task.load_dataset(split)
    return task


def fairseq_model(task, a, arch, extra, seed):
    from fairseq import options

    argv = [a.data, "--task", "summarization", "--arch", arch, "--encoder-embed-dim", str(a.embed_dim),
            "--decoder-embed-dim", str(a.embed_dim), "--encoder-ffn-embed-dim", str(a.ffn_dim),
            "--decoder-ffn-embed-dim", str(a.ffn_dim), "--encoder-layers", str(a.layers),
            "--decoder-layers", str(a.layers), "--encoder-attention-heads", str(a.heads),
            "--decoder-attention-heads", str(a.heads), "--dropout", str(a.dropout),
            "--max-source-positions", str(a.max_source_positions),
            "--max-target-positions", str(a.max_target_positions), *extra]
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    torch.manual_seed(seed)
    return task.build_model(args)


def hf_t5(task, a, seed):
    from transformers import T5Config, T5ForConditionalGeneration

    d = task.target_dictionary
    cfg = T5Config(vocab_size=len(d), d_model=a.embed_dim, d_kv=a.embed_dim // a.heads, d_ff=a.ffn_dim,
                   num_layers=a.layers, num_decoder_layers=a.layers, num_heads=a.heads,
                   relative_attention_num_buckets=32, relative_attention_max_distance=128,
                   dropout_rate=a.dropout, feed_forward_proj="relu", tie_word_embeddings=True,
                   pad_token_id=d.pad(), eos_token_id=d.eos(), decoder_start_token_id=d.pad())
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    return T5ForConditionalGeneration(cfg)


def build_pair(name, task, a, seed):
    """``[(label, model, kind)]``: kind ``fairseq`` or ``hf``."""
    if name == "default":
        return [("default cell", fairseq_model(task, a, "t5_transformer_small", [], seed), "fairseq"),
                ("fairseq transformer", fairseq_model(task, a, "transformer", [
                    "--share-all-embeddings", "--encoder-normalize-before", "--decoder-normalize-before"], seed),
                 "fairseq")]
    t5_extra = ["--attention-dropout", str(a.dropout), "--activation-dropout", str(a.dropout)]
    return [("T5 cell", fairseq_model(task, a, "t5_small", t5_extra, seed), "fairseq"),
            ("HF T5", hf_t5(task, a, seed), "hf")]


def hf_inputs(sample, pad):
    """HF's right-padded ``input_ids``/``attention_mask`` and ``labels`` (-100 at padding) of a
    fairseq batch (left-padded sources, right-padded targets ending in ``</s>``)."""
    src = sample["net_input"]["src_tokens"]
    lengths = src.ne(pad).sum(1)
    ids = torch.full_like(src, pad)
    for i, n in enumerate(lengths.tolist()):
        ids[i, :n] = src[i][src[i].ne(pad)]
    labels = sample["target"].masked_fill(sample["target"].eq(pad), -100)
    return dict(input_ids=ids, attention_mask=ids.ne(pad).long(), labels=labels)


def nll_sum(model, kind, sample, pad):
    """Summed NLL (nats) of the sample's target tokens and their count."""
    target = sample["target"]
    mask = target.ne(pad)
    if kind == "hf":
        logits = model(**hf_inputs(sample, pad)).logits
        lprobs = F.log_softmax(logits.float(), dim=-1)
    else:
        out = model(**sample["net_input"])
        lprobs = model.get_normalized_probs(out, log_probs=True).float()
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return nll[mask].sum(), int(mask.sum())


def lr_at(step, a):
    """Inverse square root after a linear warm-up (fairseq's ``inverse_sqrt`` with init lr 0)."""
    return a.lr * min(step / a.warmup, math.sqrt(a.warmup / step))


def validate(model, kind, batches, pad):
    model.eval()
    total = count = 0
    with torch.no_grad():
        for sample in batches:
            s, n = nll_sum(model, kind, sample, pad)
            total, count = total + float(s), count + n
    model.train()
    return total / count / LN2


def batches_of(task, split, a, seed, epoch):
    it = task.get_batch_iterator(task.dataset(split), max_tokens=a.max_tokens, seed=seed, num_workers=0,
                                 max_positions=(a.max_source_positions, a.max_target_positions),
                                 ignore_invalid_inputs=True, epoch=epoch)
    return list(it.next_epoch_itr(shuffle=split == "train"))


def run_seed(task, a, seed, on_validation=lambda curves: None):
    pad = task.target_dictionary.pad()
    valid = batches_of(task, "valid", a, seed, 1)
    models = [m for name in a.pairs for m in build_pair(name, task, a, seed)]
    opts = [torch.optim.Adam(m.parameters(), lr=a.lr, betas=(0.9, 0.98)) for _, m, _ in models]
    curves = {label: [] for label, _, _ in models}
    train_nll = {label: [] for label, _, _ in models}
    step, epoch, start = 0, 1, time.time()
    for _, m, _ in models:
        m.train()
    while step < a.updates:
        for sample in batches_of(task, "train", a, seed, epoch):
            step += 1
            for (label, m, kind), opt in zip(models, opts):
                for group in opt.param_groups:
                    group["lr"] = lr_at(step, a)
                opt.zero_grad()
                s, n = nll_sum(m, kind, sample, pad)
                (s / n).backward()
                torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
                opt.step()
                train_nll[label].append(s.item() / n / LN2)
            if step % a.valid_every == 0 or step == a.updates:
                line = [f"seed {seed} update {step} ({time.time() - start:.0f}s)"]
                for label, m, kind in models:
                    v = validate(m, kind, valid, pad)
                    curves[label].append({"updates": step, "valid_nll": v})
                    line.append(f"{label} {v:.3f}")
                print(" | ".join(line), flush=True)
                on_validation(curves)
            if step == a.updates:
                break
        epoch += 1
    return curves


def plot(results, a, png):
    """Validation NLL of each pair (top) and the project cell minus its peer with the +-0.05-bit band (bottom)."""
    from fairseq_sum_plugins.evaluation.plotting import pyplot, save

    plt = pyplot()
    fig, axes = plt.subplots(2, len(a.pairs), figsize=(5.5 * len(a.pairs), 6.5), squeeze=False,
                             gridspec_kw={"height_ratios": [2, 1]})
    labels = {"default": ("default cell", "fairseq transformer"), "t5": ("T5 cell", "HF T5")}
    for col, pair in enumerate(a.pairs):
        ax, diff = axes[0][col], axes[1][col]
        for k, (seed, curves) in enumerate(sorted(results.items())):
            style = ("-", "--", ":", "-.")[k % 4]
            for j, label in enumerate(labels[pair]):
                pts = curves.get(label, [])
                ax.plot([p["updates"] for p in pts], [p["valid_nll"] for p in pts], color=f"C{j}", ls=style,
                        marker="o", ms=2.5, label=f"{label}, seed {seed}")
            own, peer = ({p["updates"]: p["valid_nll"] for p in curves.get(lbl, [])} for lbl in labels[pair])
            ups = sorted(own.keys() & peer.keys())
            diff.plot(ups, [own[u] - peer[u] for u in ups], color="C2", ls=style, marker="o", ms=2.5,
                      label=f"seed {seed}")
        ax.set(ylabel="validation NLL (bits / token)", title=" vs ".join(labels[pair]))
        ax.legend(fontsize=7)
        diff.axhspan(-0.05, 0.05, color="grey", alpha=0.2, lw=0)
        diff.axhline(0, color="grey", lw=0.8)
        diff.set(xlabel="updates", ylabel=f"{labels[pair][0]} - peer (bits)")
        diff.legend(fontsize=7)
    save(fig, png)


def merge(a):
    """The seeds' curves of several ``--json`` files, one summary (their settings must agree)."""
    results, first = {}, None
    for path in a.merge:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        settings = {k: v for k, v in data["args"].items() if k not in ("pairs", "seeds", "merge", "data")}
        if first is None:
            first = settings
        elif settings != first:
            changed = sorted(k for k in settings.keys() | first.keys() if settings.get(k) != first.get(k))
            sys.exit(f"learning_parity: {path} was run with other settings ({', '.join(changed)})")
        for seed, curves in data["seeds"].items():
            results.setdefault(int(seed), {}).update(curves)
    a.pairs = [p for p in ("default", "t5") if any(lbl in c for c in results.values()
                                                  for lbl in {"default": ("default cell",), "t5": ("T5 cell",)}[p])]
    return {"args": dict(first, pairs=a.pairs, seeds=sorted(results)), "seeds": dict(sorted(results.items()))}


def main(argv=None):
    a = parse_args(argv)
    if a.merge:
        summary = merge(a)
        if a.json:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump(summary, f, indent=2)
        if a.png:
            plot(summary["seeds"], a, a.png)
        return summary
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    task = load_task(a)
    check_batches(task, a)
    results = {}
    summary = {"args": {k: v for k, v in vars(a).items() if k not in ("json", "png")}, "seeds": results}

    def write(curves=None):  # after every validation, so that an interrupted run keeps its curves
        if a.json:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump(summary, f, indent=2)

    for seed in a.seeds:
        results[seed] = {}
        results[seed] = run_seed(task, a, seed, on_validation=lambda curves, seed=seed: (
            results.__setitem__(seed, curves), write()))
    write()
    if a.png:
        plot(results, a, a.png)
    return summary


if __name__ == "__main__":
    main()
