"""Fingerprints of a run: did two machines compute the same numbers?

Two runs with the same data, seed and number of updates end with bitwise-equal parameters only when
every floating-point operation of every step rounded the same way on both. Which way it rounds
depends on the code path a library picks for the CPU it finds: MKL's GEMM kernels and cache
blocking, ATen's AVX-512 / AVX2 / scalar kernels. A fingerprint makes the comparison cheap and
exact:

* ``params``: sha256 over every tensor of the checkpoint's model state in name order (name, dtype,
  shape and raw bytes): one differing bit in one parameter changes it;
* ``optimizer``: sha256 over the optimizer state the checkpoint keeps (tensors and values, in key
  order): after Adam's first update its moments hold every bit of the first gradient, while the
  parameters have moved by ``lr * sign(gradient)`` only and would hide a difference in the backward
  pass;
* ``hypotheses``: sha256 over the ``H-`` lines of a ``fairseq-generate`` output (id, score to
  fairseq's printed precision, tokens) in id order: equal when both decoded the same text with the
  same scores.

``recipes/aclsum/cross_cpu.sh`` compares them across CPU models (this CPU and QEMU's emulation of
others)::

    python -m ledger.fingerprint --path CKPT \\
        [--generate-output OUT] [--json F]
    python -m ledger.fingerprint --compare DIR [--json F]

``--compare`` reads ``DIR/pinned{0,1}/CPU/fingerprint.json`` (and ``code_paths.txt``, the ATen
capability and MKL header that CPU got), prints one table row per run and, per mode, whether every
CPU model computed the same bits as ``host``.
"""
import argparse
import hashlib
import json
import os
import re
import sys

import torch

from fairseq_sum_plugins import compat  # noqa: F401  (allow-lists fairseq's argparse.Namespace)
from fairseq_sum_plugins.cli.outputs import refuse_clobber

_H_LINE = re.compile(r"^H-(\d+)\t")


def _raw_bytes(t):
    """A tensor's bytes as stored, any dtype (bfloat16 too) and any shape (0-dim too)."""
    return t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def params_fingerprint(state):
    """sha256 (hex) of a model state dict: name, dtype, shape and bytes of each tensor, in name
    order."""
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name]
        h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        h.update(_raw_bytes(t))
    return h.hexdigest()


def state_fingerprint(state):
    """sha256 (hex) of a nested state (dicts in key order, lists, tensors by dtype, shape and bytes,
    other values by repr); None for None."""
    if state is None:
        return None
    h = hashlib.sha256()

    def walk(x):
        if torch.is_tensor(x):
            h.update(f"T{x.dtype}{tuple(x.shape)}".encode())
            h.update(_raw_bytes(x))
        elif isinstance(x, dict):
            h.update(b"{")
            for k in sorted(x, key=str):
                h.update(repr(k).encode() + b":")
                walk(x[k])
            h.update(b"}")
        elif isinstance(x, (list, tuple)):
            h.update(b"[")
            for v in x:
                walk(v)
            h.update(b"]")
        else:
            h.update(repr(x).encode() + b",")

    walk(state)
    return h.hexdigest()


def hypotheses_fingerprint(path):
    """(sha256 hex, count) of the ``H-`` lines of a fairseq-generate output, in sample-id order."""
    lines = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            m = _H_LINE.match(line)
            if m:
                sid = int(m.group(1))
                if sid in lines:
                    raise ValueError(
                        f"{path}:{lineno}: a second H- line for sample {sid} (use --nbest 1)")
                lines[sid] = line.rstrip("\n")
    if not lines:
        raise ValueError(f"{path}: no H- lines (is this fairseq-generate output?)")
    h = hashlib.sha256()
    for sid in sorted(lines):
        h.update(lines[sid].encode("utf-8") + b"\n")
    return h.hexdigest(), len(lines)


def fingerprint(ckpt_path, generate_output=None):
    """``{'params', 'tensors', 'optimizer', 'hypotheses', 'decoded'}`` of a checkpoint (and a
    decoding)."""
    if not os.path.isfile(ckpt_path):
        raise FileNotFoundError(f"{ckpt_path}: no such checkpoint")
    try:
        state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    # a text file, a cut-short file, a pickle of other classes: torch raises many kinds
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ValueError(
            f"{ckpt_path}: not a readable torch checkpoint ({type(e).__name__}: {first})") from None
    if not isinstance(state, dict) or "model" not in state:
        raise ValueError(f"{ckpt_path}: not a fairseq checkpoint (no 'model' entry)")
    out = {"params": params_fingerprint(state["model"]), "tensors": len(state["model"]),
           "optimizer": state_fingerprint(state.get("last_optimizer_state"))}
    if generate_output is not None:
        out["hypotheses"], out["decoded"] = hypotheses_fingerprint(generate_output)
    return out


def head_data(data, out, n, split="test"):
    """A copy of the data folder ``data`` in ``out`` whose ``split`` holds its first ``n`` examples
    (binaries and ``.ref.jsonl``); every other file is a symbolic link to the original. Returns the
    number of examples kept. (fairseq-generate decodes a whole split: this is how a check decodes a
    few.)"""
    from fairseq.data import Dictionary, data_utils, indexed_dataset

    from fairseq_sum_plugins.cli.outputs import check_clobber

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    # the copy is written beside the data, never into it (its test split would replace the data's)
    check_clobber(reads=[("DATA", data)], writes=[("OUT", out)])
    os.makedirs(out, exist_ok=True)
    prefix = f"{split}."
    for name in sorted(os.listdir(data)):
        if not name.startswith(prefix) and not os.path.exists(os.path.join(out, name)):
            os.symlink(os.path.abspath(os.path.join(data, name)), os.path.join(out, name))
    bins = sorted(f[:-4] for f in os.listdir(data) if f.startswith(prefix) and f.endswith(".bin"))
    if not bins:
        raise ValueError(f"{data}: no {split}.*.bin (is this a fairseq-sum-prepare bin folder?)")
    kept = None
    for stem in bins:
        ds = data_utils.load_indexed_dataset(os.path.join(data, stem), None, "mmap")
        if ds is None:
            raise ValueError(f"{data}/{stem}.bin: not a fairseq mmap dataset")
        kept = min(n, len(ds))
        vocab = len(Dictionary.load(os.path.join(data, f"dict.{stem.rsplit('.', 1)[-1]}.txt")))
        builder = indexed_dataset.make_builder(os.path.join(out, stem + ".bin"), impl="mmap",
                                               vocab_size=vocab)
        for i in range(kept):
            builder.add_item(ds[i])
        builder.finalize(os.path.join(out, stem + ".idx"))
    refs = os.path.join(data, f"{split}.ref.jsonl")
    if os.path.isfile(refs):
        with open(refs, encoding="utf-8") as f, open(os.path.join(out, f"{split}.ref.jsonl"), "w",
                                                     encoding="utf-8") as g:
            for i, line in enumerate(f):
                if i == kept:
                    break
                g.write(line)
    return kept


_MKL_PATH = re.compile(r"for Intel\(R\) 64 architecture (.*?),")
_MKL_CNR = re.compile(r"CNR:(\S+)")


def code_paths(path):
    """``{'aten', 'mkl', 'cnr'}`` from a ``code_paths.txt`` (``ATen CAPABILITY`` and MKL_VERBOSE
    lines)."""
    out = {"aten": "?", "mkl": "?", "cnr": "?"}
    if not os.path.isfile(path):
        return out
    text = open(path, encoding="utf-8", errors="replace").read()
    m = re.search(r"^ATen (\S+)", text, re.M)
    if m:
        out["aten"] = m.group(1)
    m = _MKL_PATH.search(text)
    if m:
        out["mkl"] = re.sub(r"Intel\(R\) ", "", m.group(1)).replace("(Intel(R) ", "(")
    m = _MKL_CNR.search(text)
    if m:
        out["cnr"] = m.group(1)
    return out


def compare_runs(root):
    """Rows (one per ``root/pinnedP/CPU/fingerprint.json``) and, per mode, whether all equal
    host."""
    rows = []
    for mode in ("pinned1", "pinned0"):
        mode_dir = os.path.join(root, mode)
        if not os.path.isdir(mode_dir):
            continue
        cpus = sorted(os.listdir(mode_dir), key=lambda c: (c != "host", c))
        for cpu in cpus:
            fp_path = os.path.join(mode_dir, cpu, "fingerprint.json")
            if not os.path.isfile(fp_path):
                continue
            with open(fp_path, encoding="utf-8") as f:
                fp = json.load(f)
            rows.append({"pinned": int(mode[-1]), "cpu": cpu,
                         **code_paths(os.path.join(mode_dir, cpu, "code_paths.txt")),
                         "params": fp["params"], "optimizer": fp.get("optimizer"),
                         "hypotheses": fp.get("hypotheses"), "decoded": fp.get("decoded")})
    if not rows:
        raise ValueError(f"{root}: no pinned0/ or pinned1/ run with a fingerprint.json")
    verdict = {}
    for pinned in sorted({r["pinned"] for r in rows}, reverse=True):
        mine = [r for r in rows if r["pinned"] == pinned]
        host = next((r for r in mine if r["cpu"] == "host"), None)
        if host is None:
            raise ValueError(f"{root}/pinned{pinned}: no host run to compare with")
        for r in mine:
            keys = ("params", "optimizer", "hypotheses")
            r["same_as_host"] = all(r[k] == host[k] for k in keys)
        verdict[pinned] = {
            "cpus": [r["cpu"] for r in mine],
            "all_equal": all(r["same_as_host"] for r in mine)
        }
    return rows, verdict


def _compare_table(rows, verdict):
    lines = ["| PINNED | CPU | ATen kernels | MKL code path | MKL CNR | parameters (sha256) | "
             "optimizer state | decodings (sha256) | same bits as host |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        hyp = f"{r['hypotheses'][:12]} ({r['decoded']})" if r["hypotheses"] else "-"
        opt = (r["optimizer"] or "-")[:12]
        lines.append(f"| {r['pinned']} | {r['cpu']} | {r['aten']} | {r['mkl']} | {r['cnr']} | "
                     f"{r['params'][:12]} | {opt} | {hyp} | {'yes' if r['same_as_host'] else 'NO'} "
                     "|")
    lines.append("")
    for pinned, v in verdict.items():
        what = "pinned arithmetic" if pinned else "as torch picks for the CPU"
        lines.append(f"PINNED={pinned} ({what}): {len(v['cpus'])} CPU models, " + (
            "every one computed the same bits" if v["all_equal"] else "NOT all the same bits"))
    return "\n".join(lines)


def compare_table_of(data):
    """The table ``--compare`` prints, from the JSON it writes with ``--json`` (whose verdict keys
    are ``pinned1`` / ``pinned0``)."""
    verdict = {int(k[len("pinned"):]): v for k, v in data["verdict"].items()}
    return _compare_table(data["runs"], verdict)


def cli_main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--path", help="fairseq checkpoint")
    p.add_argument("--generate-output", help="fairseq-generate stdout decoded with that checkpoint")
    p.add_argument("--compare", metavar="DIR",
                   help="compare the runs of recipes/aclsum/cross_cpu.sh in DIR")
    p.add_argument("--json", help="also write the fingerprint (or the comparison) here")
    args = p.parse_args(argv)
    runs = [os.path.join(args.compare, mode) for mode in ("pinned1", "pinned0")] if args.compare \
        else None  # what --compare reads: DIR/pinnedP/CPU/ (DIR itself may hold the --json)
    refuse_clobber(p, reads=[("--path", args.path), ("--generate-output", args.generate_output),
                             ("--compare", runs)], writes=[("--json", args.json)], files=True)
    if (args.path is None) == (args.compare is None):
        p.error("give one of --path CKPT or --compare DIR")
    try:
        if args.compare:
            rows, verdict = compare_runs(args.compare)
            fp = {"runs": rows, "verdict": {f"pinned{k}": v for k, v in verdict.items()}}
            text = _compare_table(rows, verdict)
        else:
            fp = fingerprint(args.path, args.generate_output)
            text = json.dumps(fp, indent=1)
    except (OSError, ValueError) as e:
        p.error(str(e))
    print(text)
    text = json.dumps(fp, indent=1)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
