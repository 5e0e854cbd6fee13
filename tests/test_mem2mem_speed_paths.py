"""Mem2Mem's speed paths against the reference beside them (models/mem2mem/model.py, steps.py).

The batched path (``Mem2MemDecoder.batched_path``) computes what does not depend on the
recurrences over all decoding steps at once; in float32 training on the CPU three autograd
functions of models/mem2mem/steps.py run the recurrences (the memory, the coverage attention, the
GRUs) with their own backward. Each function's forward runs the operations it replaces (bit for
bit); the whole model's outputs, auxiliary losses and gradients equal the reference's (every path
off: step by step under autograd, ``nn.GRU`` over packed sequences) within float32 rounding, in
every setting of Table 2 and with each path off alone."""
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from helpers import REPO, build_model, doc_batch, load_script, make_dictionary
from tolerances import MODEL_ULPS, fp32_close

from fairseq_sum_plugins.models.mem2mem import model as m2m
from fairseq_sum_plugins.models.mem2mem.steps import (CoverageAttention, GRURecurrence,
                                                      MemoryRecurrence)

torch.set_num_threads(1)

# each speed path: the modules that have its switch
PATHS = {"batched_path": ("decoder",), "memory_recurrence": ("decoder",),
         "attention_recurrence": ("decoder",), "gru_recurrence": ("encoder", "decoder")}
TINY = dict(embed_dim=16, encoder_hidden_size=8, decoder_hidden_size=12, attention_dim=10,
            memory_attn_dim=6, memory_slots=4)
# wide enough that a product over all steps rounds otherwise than one per step
WIDER = dict(embed_dim=48, encoder_hidden_size=40, decoder_hidden_size=72, attention_dim=56,
             memory_attn_dim=24, memory_slots=6)
SETTINGS = {
    "hred": dict(memory_encoder=False, memory_decoder=False, memory_transfer=False),
    "hred_coverage_loss": dict(memory_encoder=False, memory_decoder=False,
                               memory_transfer=False, coverage_loss=True),
    "hred_no_coverage_no_pointer": dict(memory_encoder=False, memory_decoder=False,
                                        coverage=False, pointer_generator=False),
    "encoder_mem": dict(memory_decoder=False),
    "decoder_mem_from_zeros": dict(memory_encoder=False, memory_transfer=False),
    "no_transfer": dict(memory_transfer=False),
    "full": dict(coverage_loss=True),
}
DOCS = [[3, 4, 2], [5], [2, 2, 2, 2, 6], [1, 3]]


def set_paths(model, on=True, off=()):
    """Every speed path ``on`` (True: the default), but those in ``off``."""
    for name, owners in PATHS.items():
        for owner in owners:
            setattr(getattr(model, owner), name, on and name not in off)


def train_step(model, src, lens, prev, seed=3):
    """Scores, aux losses and every gradient of one training forward + backward."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)  # the same dropout masks
    out, extra = model(src, lens, prev)
    lprobs = model.get_normalized_probs((out, extra), log_probs=True)
    loss = -lprobs[:, :-1].gather(2, prev[:, 1:].unsqueeze(-1)).mean()
    weights = {"mem_comp": 1e-4, "mem_read": 0.01, "coverage": 1.0}
    for name, value in extra["aux_losses"].items():
        loss = loss + weights[name] * value
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return out.detach(), {k: v.detach() for k, v in extra["aux_losses"].items()}, grads


def assert_close(fast, ref):
    """Two :func:`train_step` results within float32 rounding: scores and losses within
    MODEL_ULPS of their largest magnitude, each gradient within MODEL_ULPS of its own (gradients
    summed over the steps in another order)."""
    (out_f, aux_f, g_f), (out_r, aux_r, g_r) = fast, ref
    assert fp32_close(out_f, out_r, out_r, MODEL_ULPS)
    assert aux_f.keys() == aux_r.keys()
    for name in aux_r:
        assert fp32_close(aux_f[name], aux_r[name], aux_r[name], MODEL_ULPS), name
    assert g_f.keys() == g_r.keys()
    for name, g in g_r.items():
        assert torch.isfinite(g_f[name]).all(), name
        assert fp32_close(g_f[name], g, g, MODEL_ULPS), name


@pytest.mark.parametrize("dims", ["tiny", "wider"])
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_speed_paths_train_as_the_reference(setting, dims):
    torch.manual_seed(0)
    model, d = build_model("mem2mem_base", make_dictionary(60), dropout=0.1,
                           **(TINY if dims == "tiny" else WIDER), **SETTINGS[setting])
    model.train()
    src, lens, prev = doc_batch(d, DOCS, tgt_len=9)
    set_paths(model, on=False)
    ref = train_step(model, src, lens, prev)
    set_paths(model)
    assert_close(train_step(model, src, lens, prev), ref)


@pytest.mark.parametrize("path", list(PATHS))
def test_each_speed_path_off_alone_trains_the_same(path):
    """Any combination of the switches is the same model: here each one off with the rest on."""
    torch.manual_seed(0)
    model, d = build_model("mem2mem_base", make_dictionary(60), **WIDER, coverage_loss=True)
    model.train()
    src, lens, prev = doc_batch(d, DOCS, tgt_len=9, left_pad=False)
    set_paths(model, on=False)
    ref = train_step(model, src, lens, prev)
    set_paths(model, off=(path,))
    assert_close(train_step(model, src, lens, prev), ref)


def test_copy_markers_and_the_floor_train_as_the_reference():
    """Source-position markers (the padded vocabulary of M2M eq. 15) and probabilities under the
    1e-10 floor."""
    d = make_dictionary(40)
    for i in range(3):
        d.add_symbol(f"<unk-{i}>")
    torch.manual_seed(0)
    model, _ = build_model("mem2mem_base", d, **TINY)
    model.train()
    src, lens, prev = doc_batch(d, DOCS[:2], tgt_len=6)
    src[0, -2] = d.index("<unk-1>")
    set_paths(model, on=False)
    ref = train_step(model, src, lens, prev)
    assert (ref[0] <= torch.log(torch.tensor(1e-10)) + 1e-6).any()  # tol: the floor is reached
    set_paths(model)
    assert_close(train_step(model, src, lens, prev), ref)


# --- each function's forward: the operations it replaces, bit for bit ---------------------------


def test_gru_recurrence_is_nn_gru():
    torch.manual_seed(0)
    gru = torch.nn.GRU(24, 40, batch_first=True)
    x, h0 = torch.randn(3, 11, 24), torch.randn(1, 3, 40)
    gi = F.linear(x.transpose(0, 1), gru.weight_ih_l0, gru.bias_ih_l0)
    states = GRURecurrence.apply(gi.unsqueeze(1), h0, gru.weight_hh_l0.unsqueeze(0),
                                 gru.bias_hh_l0.unsqueeze(0))
    out, h_n = gru(x, h0)
    assert torch.equal(states[:, 0].transpose(0, 1), out) and torch.equal(states[-1], h_n)


@pytest.mark.parametrize("lengths", [[7, 7, 7], [7, 1, 4, 6]])
def test_padded_bigru_is_the_packed_bigru(lengths):
    """run_bigru's fast path (both directions in one recurrence, the sequences sorted by length
    as packing sorts them, the backward direction reversed within each length) against nn.GRU over
    packed sequences: outputs (zeros past each length), final states and gradients."""
    torch.manual_seed(0)
    gru = torch.nn.GRU(16, 24, batch_first=True, bidirectional=True)
    lengths = torch.tensor(lengths)
    x = torch.randn(len(lengths), 7, 16)
    x = x * (torch.arange(7) < lengths.unsqueeze(1)).unsqueeze(-1)  # zeros past each length
    runs = []
    for fast in (True, False):
        gru.zero_grad()
        xg = x.clone().requires_grad_()
        with torch.enable_grad():
            out, h_n = m2m.run_bigru(gru, xg, lengths, fast)
            (out.pow(2).sum() + h_n.sin().sum()).backward()
        runs.append([out.detach(), h_n.detach(), xg.grad] + [p.grad for p in gru.parameters()])
    for a, b in zip(*runs):
        assert fp32_close(a, b, b, MODEL_ULPS)
    past = torch.arange(7) >= lengths.unsqueeze(1)
    assert (runs[0][0][past] == 0).all() and (runs[0][2][past] == 0).all()


def test_memory_and_attention_functions_repeat_the_module_loop():
    """MemoryRecurrence and CoverageAttention (training) give the values of the batched path's
    loop over the writer, the reader and _token_scores (their own switches off)."""
    torch.manual_seed(0)
    model, d = build_model("mem2mem_base", make_dictionary(60), **WIDER, coverage_loss=True)
    model.train()
    src, lens, prev = doc_batch(d, DOCS, tgt_len=9)
    outs = []
    for on in (True, False):
        model.decoder.memory_recurrence = model.decoder.attention_recurrence = on
        out, extra = model(src, lens, prev)
        outs.append([out, extra["alpha"], extra["read_attn"], extra["aux_losses"]["coverage"]])
    for a, b in zip(*outs):
        assert torch.equal(a, b)


def test_the_functions_gradients_are_autograds():
    """Each function's backward against autograd through its own forward operations (float64:
    the written-out gradients themselves, not rounding)."""
    torch.manual_seed(0)
    dt = torch.float64
    b, t, r, d, a, s = 2, 5, 3, 4, 6, 7

    def check(fn, inputs):
        assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7)  # tol: float64 gradcheck

    h_part, query = torch.randn(b, t, 2 * d, dtype=dt), torch.randn(b, t, d, dtype=dt)
    memory, w_m, w_s = (torch.randn(b, r, d, dtype=dt), torch.randn(2 * d, d, dtype=dt) / 2,
                        torch.randn(2 * d, d, dtype=dt) / 2)
    leaves = [x.requires_grad_() for x in (h_part, query, memory, w_m, w_s)]
    check(lambda h, q, m, wm, ws: MemoryRecurrence.apply(h, q, m, None, wm, ws), leaves)
    read = torch.randn(b, d, dtype=dt, requires_grad=True)
    check(lambda h, m, m0, wm, ws: MemoryRecurrence.apply(h, None, m, m0, wm, ws),
          [h_part, memory, read, w_m, w_s])

    keys, q = torch.randn(b, s, a, dtype=dt), torch.randn(b, t, a, dtype=dt)
    cov, w_c, v = torch.rand(b, s, dtype=dt), torch.randn(a, dtype=dt), torch.randn(a, dtype=dt)
    pad = torch.zeros(b, s, dtype=torch.bool)
    pad[1, 5:] = True
    keep = (~pad).to(dt)
    leaves = [x.requires_grad_() for x in (keys, q, cov, w_c, v)]
    for loss in (True, False):
        check(lambda k, qq, c, wc, vv: CoverageAttention.apply(k, qq, c, wc, vv, pad, keep,
                                                               loss), leaves)

    gi, h0 = torch.randn(t, 2, b, 3 * d, dtype=dt), torch.randn(2, b, d, dtype=dt)
    w_hh, b_hh = torch.randn(2, 3 * d, d, dtype=dt) / 2, torch.randn(2, 3 * d, dtype=dt)
    check(GRURecurrence.apply, [x.requires_grad_() for x in (gi, h0, w_hh, b_hh)])
    check(lambda g, h, w, bb: GRURecurrence.apply(g, h, w, bb, [2, 2, 1, 1, 0]),
          [gi, h0, w_hh, b_hh])  # a packed batch: the second row's length is 2
    check(GRURecurrence.apply, [x[:, :1].detach().requires_grad_() if x is gi else
                                x[:1].detach().requires_grad_() for x in (gi, h0, w_hh, b_hh)])


def test_coverage_attention_keeps_no_step_by_source_activation():
    """The coverage recurrence keeps no B x T x S x A tensor for backward (the reference keeps one
    tanh per step, or recomputes it above RECOMPUTE_ABOVE): it makes the tanh again in backward."""
    torch.manual_seed(0)
    model, d = build_model("hred_base", make_dictionary(60), **WIDER)
    model.train()
    src, lens, prev = doc_batch(d, DOCS, tgt_len=9)
    enc = model.encoder(src, lens)
    state = model.decoder._initial_state(enc)
    keys, query = state["keys"], torch.randn(len(DOCS), 9, WIDER["attention_dim"])
    sizes = []

    def pack(x):
        sizes.append(x.numel())
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        model.decoder._attention_steps(keys, query, state["coverage"], enc["token_mask"],
                                       torch.float32)
    assert max(sizes) < keys.numel() * query.size(1)
    assert max(sizes) <= keys.numel() + query.numel()


def test_paths_apply_in_float32_training_only(monkeypatch):
    """Evaluation and bfloat16 autocast run the modules (the reference operations): the writer and
    reader hooks see every step, nn.GRU runs."""
    torch.manual_seed(0)
    model, d = build_model("mem2mem_base", make_dictionary(60), **TINY)
    src, lens, prev = doc_batch(d, DOCS, tgt_len=5)
    applied = []
    for fn in (MemoryRecurrence, CoverageAttention, GRURecurrence):
        monkeypatch.setattr(fn, "apply", lambda *a, fn=fn, apply=fn.apply: applied.append(
            fn.__name__) or apply(*a))
    model.eval()
    with torch.no_grad():
        model(src, lens, prev)
    assert applied == []
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(src, lens, prev)
    assert applied == []
    model(src, lens, prev)
    assert sorted(set(applied)) == ["CoverageAttention", "GRURecurrence", "MemoryRecurrence"]


def test_bench_ablates_each_path_and_names_the_components(tmp_path):
    """benchmarks/bench_mem2mem.py at tiny shapes: --ablate adds 'ARCH, PATH off' rows, --profile
    the table by component (memory, pointer-generator, encoders, ...); each ratio over lstm has its
    interval over the rounds."""
    out = tmp_path / "m2m.json"
    subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "bench_mem2mem.py"),
                    "--device", "cpu", "--threads", "1", "--batch-size", "2", "--src-len", "24",
                    "--sent-len", "5", "--tgt-len", "6", "--dict-size", "200", "--steps", "2",
                    "--rounds", "2", "--warmup-steps", "1", "--archs", "mem2mem_base",
                    "--ablate", "reference", "--profile", str(tmp_path / "p.txt"),
                    "--profile-steps", "1", "--json", str(out)], check=True, cwd=REPO,
                   capture_output=True)
    result = json.loads(out.read_text())
    rows = {r["model"]: r for r in result["results"]}
    assert list(rows) == ["lstm", "mem2mem_base", "mem2mem_base, reference (every path off)"]
    parts = rows["mem2mem_base"]["components_ms"]
    assert parts["memory: write + read, one loop (eq. 7-10)"][0] > 0
    assert parts["pointer-generator (eq. 13-15)"][0] > 0
    reference = rows["mem2mem_base, reference (every path off)"]
    assert reference["components_ms"]["memory: write (M2M eq. 8-10)"][0] > 0
    assert "by component" in result["table"]
    # each ratio over lstm with its interval over the 2 rounds; the header names the CPU and load
    lo, hi = rows["mem2mem_base"]["train_interval"]
    assert lo <= rows["mem2mem_base"]["train_x"] <= hi and len(rows["lstm"]["rounds"]) == 2
    bench_train = load_script("benchmarks", "bench_train.py")
    assert result["env"].startswith(bench_train.cpu_name() + ", 1 threads")
    assert "2 timed steps per model in 2 interleaved rounds; load average" in result["env"]
