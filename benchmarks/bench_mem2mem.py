"""Training throughput and peak memory of ``hred_base`` and ``mem2mem_base`` vs fairseq's ``lstm``.

PubMed-shaped batches (default 4 documents x 500 source tokens in ~25-token sentences separated by
``<sep>``, 200 summary tokens, a 50k dictionary), all models in one process through fairseq's own
training path: the ``summarization`` task, batches collated by ``LanguagePairDataset`` (left-padded
sources), the ``summarization_loss`` criterion (plain ``label_smoothed_cross_entropy`` for the
baseline; no label smoothing, as in App. A.2), Adam at 2e-4 with clipping at 2, and
``Trainer.train_step``. The baseline is ``lstm`` of about the same size: embeddings 128 (encoder and
decoder tables, the decoder's tied with its output layer), a single-layer bi-LSTM encoder of 2 x 128
(the width of our bi-GRUs), an LSTM decoder of 256 with attention (and input feeding), output
embedding 128.

Timed steps are interleaved in rounds over the models after a warm-up of each; each training ratio
carries a 95% interval by a paired bootstrap over the rounds (``bench_train.round_interval``), and
the header names the CPU model and the load average. Peak memory is, on
CUDA, the allocator's peak during a model's warm-up minus what was allocated before it was built; on
CPU, the growth of the process's peak resident set (``VmHWM``, reset through
``/proc/self/clear_refs``) during the warm-up over the resident set before it (approximate: the
allocator may reuse memory freed by a previous model). Throughput counts target tokens.

    python benchmarks/bench_mem2mem.py                       # CPU, 4 x 500 -> 200
    python benchmarks/bench_mem2mem.py --device cuda --batch-size 16 --steps 30 --json out.json

``--ablate reference,memory_recurrence,...`` also runs each arch with that speed path of the model
off (``reference``: all of them), in the same rounds. ``--profile FILE`` adds, besides the op
tables, the time of each component per step, forward + backward: the sentence (token) and
document encoders, the memory's compression, write and read, the word decoder, the token
attention with coverage, the sentence attention, the output layer, the pointer-generator, the
losses, the optimizer (profiler ranges around each, backward nodes charged to the range of their
forward op).
"""
import argparse
import contextlib
import ctypes
import gc
import json
import logging
import os
import sys
import tempfile
import time

import torch
from fairseq import options
from fairseq.data import Dictionary, LanguagePairDataset
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.trainer import Trainer

from fairseq_sum_plugins.tasks.summarization import SummarizationTask  # also registers the models

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the scripts beside this one
from bench_train import cpu_name, fmt_interval, round_interval  # noqa: E402
from profile_breakdown import breakdown, gemm_ceiling, table as breakdown_table  # noqa: E402

BASELINE = "lstm"
# --ablate NAME: the attributes of Mem2Mem's encoder / decoder that switch a speed path (True: on,
# the default; models/mem2mem/model.py), off where a module has them
SPEED_PATHS = {name: [name] for name in ("batched_path", "memory_recurrence",
                                         "attention_recurrence", "gru_recurrence")}
SPEED_PATHS["reference"] = [name for names in list(SPEED_PATHS.values()) for name in names]
LSTM_DIMS = ["--encoder-embed-dim", "128", "--encoder-hidden-size", "128", "--encoder-bidirectional",
             "--decoder-embed-dim", "128", "--decoder-hidden-size", "256", "--decoder-out-embed-dim", "128",
             "--share-decoder-input-output-embed", "--dropout", "0.0"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--archs", nargs="+", default=["hred_base", "mem2mem_base"])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--fp16", action="store_true", help="fairseq --fp16 (CUDA only)")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--src-len", type=int, default=500, help="source tokens incl. <sep> and EOS")
    p.add_argument("--sent-len", type=int, default=25, help="tokens per source sentence")
    p.add_argument("--tgt-len", type=int, default=200)
    p.add_argument("--dict-size", type=int, default=50000)
    p.add_argument("--steps", type=int, default=None, help="timed steps per model (CPU 4, CUDA 20)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--warmup-steps", type=int, default=None, help="untimed steps per model (CPU 1, CUDA 5)")
    p.add_argument("--threads", type=int)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--profile", metavar="FILE",
                   help="write, per model, torch.profiler op tables, each module class's "
                        "forward time and each component's time (forward + backward) of "
                        "--profile-steps training steps here")
    p.add_argument("--profile-steps", type=int, default=2, help="training steps per profiled pass")
    p.add_argument("--ablate", default="", metavar="PATHS",
                   help="comma-separated speed paths of the Mem2Mem model (known: "
                        f"{', '.join(SPEED_PATHS)}; reference: all of them): each arch also runs "
                        "with that path off, a model named 'ARCH, PATH off', in the same rounds")
    a = p.parse_args()
    a.ablate = [name for name in a.ablate.split(",") if name]
    unknown = sorted(set(a.ablate) - set(SPEED_PATHS))
    if unknown:
        p.error(f"--ablate: unknown speed path(s) {unknown}; known: {', '.join(SPEED_PATHS)}")
    if a.profile_steps < 1:
        p.error(f"--profile-steps {a.profile_steps}: at least 1")
    cpu = a.device == "cpu"
    if a.fp16 and cpu:
        p.error("--fp16 needs --device cuda")
    a.steps = a.steps or (4 if cpu else 20)
    a.warmup_steps = a.warmup_steps if a.warmup_steps is not None else (1 if cpu else 5)
    return a


def make_dictionary(size):
    d = Dictionary()
    d.add_symbol("<sep>")
    for i in range(size - len(d)):
        d.add_symbol(f"w{i}")
    return d


def make_batches(d, a, n=2):
    g = torch.Generator().manual_seed(0)
    sep = d.index("<sep>")

    def seq(length, sent_len=0):
        toks = torch.randint(d.nspecial + 1, len(d), (length,), generator=g)
        if sent_len:
            toks[sent_len::sent_len + 1] = sep
        toks[-1] = d.eos()
        return toks

    src = [seq(a.src_len, a.sent_len) for _ in range(n * a.batch_size)]
    tgt = [seq(a.tgt_len) for _ in range(n * a.batch_size)]
    data = LanguagePairDataset(src, [len(s) for s in src], d, tgt, [len(t) for t in tgt], d, shuffle=False)
    return [data.collater([data[i] for i in range(b * a.batch_size, (b + 1) * a.batch_size)]) for b in range(n)]


def fairseq_cfg(arch, a):
    argv = ["unused", "--task", "summarization", "--arch", arch, "--optimizer", "adam", "--lr", "2e-4",
            "--clip-norm", "2", "--seed", "1", "--batch-size", str(a.batch_size),
            "--criterion", "label_smoothed_cross_entropy" if arch == BASELINE else "summarization_loss",
            "--save-dir", tempfile.gettempdir(), "--max-source-positions", str(a.src_len + 1),
            "--max-target-positions", str(a.tgt_len + 1)]
    argv += LSTM_DIMS if arch == BASELINE else []
    argv += ["--fp16"] if a.fp16 else []
    argv += ["--cpu"] if a.device == "cpu" else []
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_cpu_peak():
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
    except OSError:
        return None
    return _status_kib("VmRSS")


def run_steps(m, batches, steps, cuda):
    if cuda:
        torch.cuda.synchronize()
    start, words = time.perf_counter(), 0
    for i in range(steps):
        batch = batches[i % len(batches)]
        m["trainer"].train_step([batch])
        words += batch["ntokens"]
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start, words


# --profile's components: what each scope is called in the table, one row per label; a label's
# time is the forward inside its scopes (less the scopes nested in them) and the backward of the
# ops run there (autograd nodes matched to their forward op by sequence number)
ENC_TOKENS, ENC_DOC = "encoder: tokens (bi-RNN)", "encoder: document (bi-GRU)"
MEM_COMP = "memory: compression (M2M eq. 5-6)"
MEM_WRITE, MEM_READ = "memory: write (M2M eq. 8-10)", "memory: read (M2M eq. 7)"
MEM_LOOP = "memory: write + read, one loop (eq. 7-10)"
DECODER, TOKEN_ATTN = "word decoder (RNN, embeddings)", "token attention (+ coverage, eq. 16-17)"
SENT_ATTN = "sentence attention + copy weights (eq. 3)"
OUTPUT = "output layer (readout, vocabulary)"
POINTER, AUX, LOSS = "pointer-generator (eq. 13-15)", "aux losses (eq. 6, 11)", "loss (criterion)"
OPTIMIZER, BACKWARD_REST = "optimizer (Adam, clipping)", "backward: engine, grad accumulation"
STEP_REST = "rest of the step (outside these)"
COMPONENTS = (ENC_TOKENS, ENC_DOC, MEM_COMP, MEM_WRITE, MEM_READ, MEM_LOOP, DECODER, TOKEN_ATTN,
              SENT_ATTN, OUTPUT, POINTER, AUX, LOSS, OPTIMIZER, BACKWARD_REST, STEP_REST)
_SCOPE = "@ "  # prefix of the profiler ranges the scopes open
_OPTIMIZER_RANGES = ("reduce-grads", "multiply-grads", "clip-grads", "optimizer",
                     "Optimizer.zero_grad")


def component_scopes(model, criterion):
    """``(target, label)`` pairs: a module (its forward), or ``(object, method name)``."""
    scopes = [(criterion, LOSS)]
    enc, dec = model.encoder, model.decoder
    if hasattr(dec, "memory_slots"):  # Mem2Mem / HRED
        scopes += [(enc, ENC_TOKENS), (enc.doc_rnn, ENC_DOC), (enc.init_proj, ENC_DOC),
                   (dec, DECODER), ((dec, "_recurrent_steps"), TOKEN_ATTN),
                   ((dec, "_sentence_attention"), SENT_ATTN),
                   ((dec, "_output_distribution"), POINTER), (dec.readout, OUTPUT),
                   ((dec, "_aux_losses"), AUX)]
        scopes += [(dec.output_projection, OUTPUT)] if dec.output_projection is not None else []
        scopes += [(enc.compression, MEM_COMP)] if enc.compression is not None else []
        scopes += [(dec.writer, MEM_WRITE)] if dec.writer is not None else []
        scopes += [(dec.reader, MEM_READ)] if dec.reader is not None else []
        # the batched path's parts (models/mem2mem/model.py), where the model has them
        for method, label in (("_batched_steps", TOKEN_ATTN), ("_memory_steps", MEM_LOOP)):
            if hasattr(dec, method):
                scopes.append(((dec, method), label))
        if dec.reader is not None and hasattr(dec.reader, "combine"):
            scopes.append(((dec.reader, "combine"), MEM_READ))
    else:  # fairseq's lstm
        scopes += [(enc, ENC_TOKENS), (dec, DECODER), (dec.attention, TOKEN_ATTN),
                   ((dec, "output_layer"), OUTPUT)]
        scopes += [(dec.additional_fc, OUTPUT)] if hasattr(dec, "additional_fc") else []
    return scopes


@contextlib.contextmanager
def scoped(model, criterion):
    """Opens a profiler range ``@ LABEL`` around each of :func:`component_scopes`; also around
    Mem2Mem's ``compression_loss`` (M2M eq. 6, a function of its module)."""
    from fairseq_sum_plugins.models.mem2mem import model as m2m

    undo = []

    def wrap(fn, label):
        def inner(*args, **kwargs):
            with torch.autograd.profiler.record_function(_SCOPE + label):
                return fn(*args, **kwargs)
        return inner

    for target, label in component_scopes(model, criterion):
        if isinstance(target, tuple):
            obj, name = target
            obj.__dict__[name] = wrap(getattr(obj, name), label)
            undo.append(lambda obj=obj, name=name: obj.__dict__.pop(name))
        else:
            def enter(mod, _, label=label):
                ranges = mod.__dict__.setdefault("_bench_scopes", [])
                ranges.append(torch.autograd.profiler.record_function(_SCOPE + label).__enter__())

            def leave(mod, *_):
                mod._bench_scopes.pop().__exit__(None, None, None)

            handles = (target.register_forward_pre_hook(enter), target.register_forward_hook(leave))
            undo.append(lambda handles=handles: [h.remove() for h in handles])
    fn, bigru = m2m.compression_loss, getattr(m2m, "run_bigru", None)
    m2m.compression_loss = wrap(fn, MEM_COMP)
    undo.append(lambda: setattr(m2m, "compression_loss", fn))
    if bigru is not None and hasattr(model.encoder, "doc_rnn"):  # the encoders' bi-GRUs
        doc_rnn = model.encoder.doc_rnn

        def run_bigru(rnn, *args):
            label = ENC_DOC if rnn is doc_rnn else ENC_TOKENS
            with torch.autograd.profiler.record_function(_SCOPE + label):
                return bigru(rnn, *args)
        m2m.run_bigru = run_bigru
        undo.append(lambda: setattr(m2m, "run_bigru", bigru))
    try:
        yield
    finally:
        for u in reversed(undo):
            u()


def components(events, steps, wall_ms):
    """``{label: (forward ms, backward ms)}`` per step from a profile taken under :func:`scoped`:
    a scope's forward is its range's time less that of the scopes nested in it; its backward, the
    autograd nodes of the ops it ran (matched by sequence number); the optimizer ranges of the
    Trainer; the backward's time outside those nodes; and what remains of ``wall_ms``."""
    fwd, bwd = {}, {}
    seq_label = {}  # sequence number of a forward op -> the label of its scope

    def scope_of(e):
        p = e.cpu_parent
        while p is not None and not p.name.startswith(_SCOPE):
            p = p.cpu_parent
        return p

    nodes, backward = [], 0.0
    for e in events:
        if e.name.startswith(_SCOPE):
            label = e.name[len(_SCOPE):]
            fwd[label] = fwd.get(label, 0.0) + e.cpu_time_total
            outer = scope_of(e)
            if outer is not None:
                olabel = outer.name[len(_SCOPE):]
                fwd[olabel] = fwd.get(olabel, 0.0) - e.cpu_time_total
        elif e.name.startswith("autograd::engine::evaluate_function: "):
            nodes.append(e)
        elif e.sequence_nr >= 0:  # an op or an autograd function's forward
            s = scope_of(e)
            if s is not None:
                seq_label.setdefault(e.sequence_nr, s.name[len(_SCOPE):])
        if e.cpu_parent is None:
            if e.name == "backward":
                backward += e.cpu_time_total
            elif e.name.startswith(_OPTIMIZER_RANGES):
                fwd[OPTIMIZER] = fwd.get(OPTIMIZER, 0.0) + e.cpu_time_total
    charged = 0.0
    for e in nodes:
        label = seq_label.get(e.sequence_nr)
        if label is not None:
            bwd[label] = bwd.get(label, 0.0) + e.cpu_time_total
            charged += e.cpu_time_total
    bwd[BACKWARD_REST] = backward - charged
    out = {k: (fwd.get(k, 0.0) / 1e3 / steps, bwd.get(k, 0.0) / 1e3 / steps) for k in COMPONENTS}
    out[STEP_REST] = (wall_ms - sum(f + b for f, b in out.values()), 0.0)
    return out


def components_table(columns):
    """Markdown: ms per step of each component (forward + backward) per model."""
    names = list(columns)
    lines = ["Where the time goes by component: ms per training step, forward + backward "
             "(profiled pass)", "", "| component | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for label in COMPONENTS:
        cells = []
        for n in names:
            f, b = columns[n].get(label, (0.0, 0.0))
            cells.append("-" if abs(f) + abs(b) < 0.05 else f"{f + b:,.1f} ({f:,.1f} + {b:,.1f})")
        if any(c != "-" for c in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    totals = [sum(f + b for f, b in columns[n].values()) for n in names]
    lines.append("| total (profiled wall) | " + " | ".join(f"{t:,.1f}" for t in totals) + " |")
    return "\n".join(lines)


def profile(m, batches, out, steps, cuda):
    """Op tables (by device time on CUDA, by self CPU time) of ``steps`` training steps, then the
    forward time of each module class (``bench_train.module_ranges``: nested classes overlap)."""
    from bench_train import module_ranges  # bench_train's hooks

    activity = torch.profiler.ProfilerActivity
    acts = [activity.CPU] + ([activity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=acts) as prof:
        seconds, _ = run_steps(m, batches, steps, cuda)
    wall = 1e3 * m["time"] / m["words"] * batches[0]["ntokens"]
    out.write(f"\n===== {m['name']}: wall {wall:.1f} ms/step unprofiled =====\n")
    m["wall_ms"], m["profiled_ms"] = wall, 1e3 * seconds / steps
    m["breakdown_ms"] = breakdown(prof.events(), steps, m["profiled_ms"], device=cuda)
    for key in (["self_device_time_total"] if cuda else []) + ["self_cpu_time_total"]:
        out.write(f"\n----- {m['name']}: top ops by {key} over {steps} steps -----\n")
        out.write(prof.key_averages().table(sort_by=key, row_limit=25, max_name_column_width=70))
    with module_ranges(m["trainer"].model), torch.profiler.profile(activities=acts) as prof:
        run_steps(m, batches, steps, cuda)
    out.write(f"\n----- {m['name']}: forward of each module class, per step "
              "(nested classes overlap) -----\n")
    rows = [e for e in prof.key_averages() if e.key.startswith("## ")]
    for e in sorted(rows, key=lambda e: -e.cpu_time_total):
        ms = e.cpu_time_total / 1e3 / steps
        out.write(f"{e.key:34s} calls/step {e.count // steps:4d}   CPU {ms:8.2f} ms\n")
    trainer = m["trainer"]
    with scoped(trainer.model, trainer.criterion), torch.profiler.profile(activities=acts) as prof:
        seconds, _ = run_steps(m, batches, steps, cuda)
    m["components_ms"] = components(prof.events(), steps, 1e3 * seconds / steps)
    out.write(f"\n----- {m['name']}: by component, ms per step, forward + backward "
              f"({1e3 * seconds / steps:.1f} ms per step in this pass) -----\n")
    for label, (f, b) in m["components_ms"].items():
        out.write(f"{label:44s} {f + b:8.2f}  ({f:7.2f} + {b:7.2f})\n")


def main():
    a = parse_args()
    logging.getLogger("fairseq").setLevel(logging.WARNING)
    if a.threads:
        torch.set_num_threads(a.threads)
    cuda = a.device == "cuda"
    d = make_dictionary(a.dict_size)
    batches = make_batches(d, a)
    models = []
    runs = [(BASELINE, None)] + [(arch, None) for arch in a.archs]
    runs += [(arch, path) for arch in a.archs for path in a.ablate
             if not (path == "memory_recurrence" and arch == "hred_base")]  # HRED: no memory
    for arch, path in runs:  # build and warm up one at a time, so each peak is the model's own
        cfg = fairseq_cfg(arch, a)
        rss_before = None if cuda else _reset_cpu_peak()
        mem_before = torch.cuda.memory_allocated() if cuda else 0
        task = SummarizationTask(cfg.task, d, d)
        model = task.build_model(cfg.model)
        if path is not None:  # off in the encoder and the decoder, where they have it
            owners = [(mod, name) for mod in (model.encoder, model.decoder)
                      for name in SPEED_PATHS[path] if hasattr(mod, name)]
            if not owners:
                raise SystemExit(f"--ablate {path}: {arch} has no such path")
            for mod, name in owners:
                setattr(mod, name, False)
        trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
        trainer.cuda_env = None
        name = arch if path is None else f"{arch}, {path} off"
        name = f"{arch}, reference (every path off)" if path == "reference" else name
        m = dict(name=name, trainer=trainer, params=sum(p.numel() for p in model.parameters()),
                 time=0.0, words=0, rounds=[])
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        run_steps(m, batches, a.warmup_steps, cuda)
        if cuda:
            m["peak_gib"] = (torch.cuda.max_memory_allocated() - mem_before) / 2**30
        else:
            m["peak_gib"] = (_status_kib("VmHWM") - rss_before) / 2**20 if rss_before is not None else None
        models.append(m)
    per_round = max(1, a.steps // a.rounds)
    for _ in range(a.rounds):
        for m in models:
            seconds, words = run_steps(m, batches, per_round, cuda)
            m["time"] += seconds
            m["words"] += words
            m["rounds"].append((seconds, words))

    base = models[0]
    rows = []
    for m in models:
        wps = m["words"] / m["time"]
        rows.append(dict(model=m["name"], params_m=m["params"] / 1e6, train_wps=wps, train_x=wps / (base["words"] / base["time"]),
                         train_interval=None if m is base else round_interval(m["rounds"], base["rounds"]),
                         rounds=m["rounds"],
                         peak_gib=m["peak_gib"], mem_x=(m["peak_gib"] / base["peak_gib"]) if m["peak_gib"] and base["peak_gib"] else None))
    device = torch.cuda.get_device_name() if cuda else f"{cpu_name()}, {torch.get_num_threads()} threads"
    head = (f"{device}; torch {torch.__version__}; batch {a.batch_size} x {a.src_len} source tokens "
            f"({a.sent_len}-token sentences) -> {a.tgt_len} target tokens; dictionary {len(d)}; "
            f"{a.rounds * per_round} timed steps per model in {a.rounds} interleaved rounds"
            f"{' (fp16)' if a.fp16 else ''}; load average "
            + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    lines = ["| model | params (M) | train tgt words/s | vs lstm [95% over rounds] | peak mem (GiB) | vs lstm |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        mem = "-" if r["peak_gib"] is None else f"{r['peak_gib']:.2f}"
        mem_x = "-" if r["mem_x"] is None else f"{r['mem_x']:.2f}x"
        train_x = fmt_interval(r["train_x"], r["train_interval"])
        lines.append(f"| {r['model']} | {r['params_m']:.1f} | {r['train_wps']:,.0f} | {train_x} | {mem} | {mem_x} |")
    table = "\n".join(lines)
    print(head + "\n\n" + table)
    if a.profile:
        with open(a.profile, "w") as out:
            out.write(head + "\n")
            for m in models:
                profile(m, batches, out, a.profile_steps, cuda)
        table += "\n\n" + breakdown_table({m["name"]: m["breakdown_ms"] for m in models},
                                           {m["name"]: m["profiled_ms"] for m in models},
                                           "Where the time goes: ms per training step (self time of "
                                           "ATen ops in a profiled pass; share of its wall time)",
                                           unprofiled={m["name"]: m["wall_ms"] for m in models})
        for m, r in zip(models[1:], rows[1:]):
            r["breakdown_ms"], r["gemm_ceiling"] = m["breakdown_ms"], gemm_ceiling(
                m["breakdown_ms"], base["profiled_ms"])
            ceiling = "-" if r["gemm_ceiling"] is None else f"{r['gemm_ceiling']:.2f}x"
            table += f"\n- {m['name']} over {BASELINE}: measured {r['train_x']:.2f}x, GEMM ceiling {ceiling}"
        rows[0]["breakdown_ms"] = base["breakdown_ms"]
        for m, r in zip(models, rows):
            r["components_ms"] = m["components_ms"]
        table += "\n\n" + components_table({m["name"]: m["components_ms"] for m in models})
        print("\n" + table[table.index("Where the time goes"):])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(env=head, args=vars(a), results=rows, table=table), f, indent=2)


if __name__ == "__main__":
    main()
