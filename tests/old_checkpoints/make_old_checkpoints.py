"""Train tiny checkpoints with the code of another worktree and save, for a fixed batch, the
full-forward log-probabilities and a beam search's outputs (expected.json).

    python3 tests/old_checkpoints/make_old_checkpoints.py OLD_WORKTREE OUT_DIR

ARCH.generate.txt holds the H- lines of that code's fairseq-generate on the toy data's test split
(tests/helpers.write_toy_parallel, binarized): PYTHONPATH=OLD_WORKTREE fairseq-generate BIN
--user-dir OLD_WORKTREE/fairseq_sum_plugins --task summarization --path OUT_DIR/ARCH.pt
--gen-subset test --beam 2 --max-len-b 6 --batch-size 4 --cpu | grep ^H- | sort -t- -k2 -n"""
import json, os, shutil, subprocess, sys
import torch

OLD = sys.argv[1]      # worktree of the code that makes the checkpoints
OUT = sys.argv[2]      # fixture folder
sys.path.insert(0, os.path.join(OLD, "tests"))
sys.path.insert(0, OLD)
from helpers import write_toy_parallel, binarize

work = "/tmp/mkold/work"
shutil.rmtree(work, ignore_errors=True)
write_toy_parallel(work + "/raw")
binarize(work + "/raw", work + "/bin")
bindir = os.path.dirname(sys.executable)
env = dict(os.environ, PYTHONPATH=OLD, OMP_NUM_THREADS="1")
TINY = ["--encoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--encoder-layers", "1",
        "--encoder-attention-heads", "2"]
RUNS = {
    "tp_transformer_base": TINY + ["--tpr-roles", "3", "--tpr-role-dim", "8"],
    "etads_base": TINY,
}
os.makedirs(OUT, exist_ok=True)
shutil.copy(work + "/bin/dict.src.txt", OUT + "/dict.src.txt")
shutil.copy(work + "/bin/dict.tgt.txt", OUT + "/dict.tgt.txt")
expected = {}
for arch, flags in RUNS.items():
    save = f"{work}/{arch}"
    subprocess.run([os.path.join(bindir, "fairseq-train"), work + "/bin", "--user-dir",
                    os.path.join(OLD, "fairseq_sum_plugins"), "--task", "summarization", "--arch", arch,
                    *flags, "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "0.01",
                    "--max-tokens", "1000", "--max-update", "2", "--save-dir", save, "--no-epoch-checkpoints",
                    "--no-save-optimizer-state", "--seed", "1", "--log-format", "simple", "--cpu"],
                   check=True, env=env)
    shutil.copy(f"{save}/checkpoint_last.pt", f"{OUT}/{arch}.pt")
    from fairseq import checkpoint_utils
    import fairseq_sum_plugins  # noqa: registers the old code's models
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [f"{OUT}/{arch}.pt"], arg_overrides={"data": OUT, "source_lang": "src", "target_lang": "tgt"})
    model = models[0].eval()
    d = task.source_dictionary
    src = torch.tensor([[d.index(w) for w in "the cat sat on the mat in park".split()] + [d.eos()],
                        [d.pad()] * 4 + [d.index(w) for w in "a big red ball".split()] + [d.eos()]])
    lengths = src.ne(d.pad()).sum(1)
    prev = torch.tensor([[d.eos()] + [d.index(w) for w in "the cat sat".split()]] * 2)
    with torch.no_grad():
        logits, _ = model(src, lengths, prev)
        lprobs = model.get_normalized_probs((logits, None), log_probs=True)
    gen = task.build_generator([model], __import__("argparse").Namespace(beam=2, max_len_b=6))
    with torch.no_grad():
        hypos = gen.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
    expected[arch] = {
        "saved_args": {k: v for k, v in vars(cfg.model).items() if k in ("arch", "cell", "output_bias")},
        "src_tokens": src.tolist(), "prev_output_tokens": prev.tolist(),
        "lprobs": lprobs.tolist(),
        "beam": [[{"tokens": h["tokens"].tolist(), "score": h["score"].item()} for h in b] for b in hypos],
    }
json.dump(expected, open(OUT + "/expected.json", "w"), indent=1)
print({a: e["saved_args"] for a, e in expected.items()})
