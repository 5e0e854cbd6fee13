"""The contract every model of the plugin keeps, over one table of (arch, feature combination) cells:

* incremental decoding equals the full forward (left- and right-padded sources);
* reordering the incremental state and the encoder output as beam search does (within beams, and
  shrinking the batch) equals decoding the reordered batch;
* padding changes no output (each document alone equals its row of a padded batch);
* every parameter gets a finite gradient from one training step (DDP needs each one used), and
  the cell's own parameters a non-zero one;
* bf16 autocast and fp16 give finite outputs; a one-token document gives finite outputs and gradients.

Each paper's own test file keeps its equation tests. To add a model or a feature combination, add
one :class:`Cell` line to ``CELLS``.
"""
import os
import re
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from helpers import DIMS, K, build_model, make_dictionary, random_batch, theta_for

torch.set_num_threads(1)

# Incremental == full, reordered == reordered batch, padded == alone: the same float32 model on other
# blockings (one step against all steps, a batch against one row) differs by rounding only, a few
# ulps of the largest value it passes through (tests/tolerances.py). The cells' outputs are bounded
# here: logits of tiny random models |z| <= ~10, and a copy mixture's log P floored at log 1e-10 =
# -23.03 (an exact constant, not rounded): 1e-5 is >= 8 ulps of 10; measured <= 2e-6 on the
# default, AVX2 and AVX-512 kernel paths; a wrong mask or a lost position moves them by 1e-2 or more.
CONTRACT_TOL = 1e-5
AUX_WEIGHTS = {"gate_l1": 0.1, "mem_comp": 1e-4, "mem_read": 0.01, "coverage": 1.0}  # summarization_loss defaults

ALL = "."  # every parameter
ROLES = r"roles|role_proj"
ETADS = r"\.focus\.|\.saliency\."
GATE = r"info_gate"
COPY = r"copy\."


@dataclass(frozen=True)
class Cell:
    """One row of the contract: ``arch`` with ``features`` (model flags by their ``dest`` names).

    ``family`` picks the dims and the batch (``transformer``, ``bart``: random tokens; ``mem2mem``:
    ``<sep>``-delimited documents); ``nonzero`` is a regex of parameter names whose gradient must be
    non-zero; ``prune``: in eval mode the information gate closes about half of the batch's tokens;
    ``theta``: the Topic Assistant's side data and topic model.
    """

    arch: str
    features: dict = field(default_factory=dict)
    family: str = "transformer"
    nonzero: str = ""
    prune: bool = False
    theta: bool = False

    @property
    def id(self):
        return "-".join([self.arch] + [f"{k}={v}" for k, v in sorted(self.features.items())])


CELLS = [
    # TP-Transformer (tests/test_tp_transformer.py)
    Cell("t5_transformer_small"),
    Cell("tp_transformer_small", nonzero=ROLES),
    Cell("tp_transformer_continuous_small", nonzero=ROLES),
    Cell("tp_transformer_small", dict(encoder_normalize_before=False), nonzero=ROLES),
    # ETADS (tests/test_etads.py)
    Cell("etads_base", nonzero=ETADS),
    Cell("etads_base", dict(encoder_normalize_before=True), nonzero=ETADS),
    Cell("tp_transformer_small", dict(focus_layers="1", saliency_layers="2"), nonzero=ETADS),
    # information selection (tests/test_information_selection.py)
    Cell("transformer_gated_small", nonzero=GATE, prune=True),
    Cell("transformer_gated_small", dict(gate_per_head=True), nonzero=GATE, prune=True),
    Cell("tp_transformer_gated_small", nonzero=GATE, prune=True),
    Cell("tp_transformer_gated_small", dict(gate_per_head=True), nonzero=GATE, prune=True),
    # Topic Assistant (tests/test_topic_assistant.py)
    Cell("transformer_ta_small", nonzero=ALL, theta=True),
    Cell("transformer_ta_small", dict(ta_tema=False), nonzero=ALL, theta=True),
    Cell("transformer_ta_small", dict(ta_sia=False), nonzero=ALL, theta=True),
    Cell("transformer_ta_small", dict(ta_sia=False, ta_drm=False), nonzero=ALL, theta=True),
    # pointer-generator (features/copy_mechanism.py), alone and with pruning, topics and the T5 cell
    Cell("t5_transformer_small", dict(pointer_generator=True), nonzero=COPY),
    Cell("transformer_gated_small", dict(pointer_generator=True), nonzero=COPY + "|" + GATE, prune=True),
    Cell("transformer_ta_small", dict(pointer_generator=True), nonzero=ALL, theta=True),
    Cell("t5_small", dict(pointer_generator=True), nonzero=ALL),
    # compositions
    Cell("transformer_ta_small", dict(gate=True), nonzero=ALL, prune=True, theta=True),
    Cell("transformer_ta_small", dict(gate=True, gate_per_head=True), nonzero=ALL, prune=True, theta=True),
    Cell("etads_base", dict(gate=True, tpr="discrete"), nonzero=ETADS + "|" + GATE + "|" + ROLES, prune=True),
    # BART (models/bart.py)
    Cell("bart_base_gated", family="bart", nonzero=GATE, prune=True),
    Cell("bart_base_gated", dict(gate_per_head=True), family="bart", nonzero=GATE, prune=True),
    Cell("bart_base_ta", family="bart", nonzero=r"sia|drm", theta=True),
    Cell("bart_base_ta", dict(ta_tema=False), family="bart", nonzero=r"sia|drm", theta=True),
    Cell("bart_base_ta", dict(ta_sia=False, ta_drm=False), family="bart", theta=True),
    Cell("bart_base_ta", dict(gate=True), family="bart", nonzero=r"sia|drm|info_gate", prune=True, theta=True),
    Cell("bart_base_ta", dict(gate=True, gate_per_head=True), family="bart", nonzero=r"sia|drm|info_gate",
         prune=True, theta=True),
    # the layer features (modules/features.py) on BART: TPR, ETADS focus and saliency, with the gate and TA
    Cell("bart_base_gated", dict(gate=False, tpr="discrete"), family="bart", nonzero=ROLES),
    Cell("bart_base_gated", dict(tpr="continuous", gate_per_head=True), family="bart", nonzero=ROLES + "|" + GATE,
         prune=True),
    Cell("bart_base_gated", dict(gate=False, focus_layers="all", saliency_layers="all"), family="bart",
         nonzero=ETADS),
    Cell("bart_base_gated", dict(focus_layers="1", saliency_layers="2"), family="bart", nonzero=ETADS + "|" + GATE,
         prune=True),
    Cell("bart_base_ta", dict(tpr="discrete", focus_layers="all", saliency_layers="all"), family="bart",
         nonzero=ETADS + "|" + ROLES + r"|sia|drm", theta=True),
    # the exact T5 v1.0 cell (--cell t5) with every feature (tests/test_t5_cell.py)
    Cell("t5_small", nonzero=ALL),
    Cell("tp_transformer_base", nonzero=ROLES),  # App. B: + TPT's cross-attention position table
    Cell("tp_transformer_continuous_base", nonzero=ROLES),
    Cell("t5_small_gated", nonzero=GATE, prune=True),
    Cell("t5_transformer_base", dict(gate=True, gate_per_head=True), nonzero=GATE, prune=True),
    Cell("t5_small", dict(focus_layers="all", saliency_layers="all"), nonzero=ETADS),
    Cell("t5_small", dict(ta_sia=True, ta_tema=True, ta_drm=True), nonzero=ALL, theta=True),
    Cell("t5_small", dict(t5_d_kv=12, focus_layers="all", saliency_layers="all"), nonzero=ALL),  # H d_kv != d_m
    # Mem2Mem / HRED: the rows of its Table 2 and the other switches (tests/test_mem2mem.py)
    Cell("hred_base", family="mem2mem", nonzero=ALL),
    Cell("hred_base", dict(coverage_loss=True), family="mem2mem", nonzero=ALL),
    Cell("hred_base", dict(coverage_attention=False, pointer_generator=False), family="mem2mem", nonzero=ALL),
    Cell("mem2mem_base", dict(memory_decoder=False), family="mem2mem", nonzero=ALL),
    Cell("mem2mem_base", dict(memory_encoder=False, memory_transfer=False), family="mem2mem", nonzero=ALL),
    Cell("mem2mem_base", dict(memory_transfer=False), family="mem2mem", nonzero=ALL),
    Cell("mem2mem_base", family="mem2mem", nonzero=ALL),
]
IDS = [c.id for c in CELLS]
assert len(set(IDS)) == len(IDS), "two cells with the same arch and features"


# --- building cells ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def topic_model(tmp_path_factory):
    from helpers import write_topic_model

    return write_topic_model(make_dictionary(), str(tmp_path_factory.mktemp("contract") / "topic_model.npz"), k=K)


def build(cell, topic_model, seed=0):
    torch.manual_seed(seed)
    overrides = dict(DIMS[cell.family], **cell.features)
    if cell.theta:
        overrides["ta_topic_model"] = topic_model
    model, d = build_model(cell.arch, make_dictionary(), **overrides)
    return model, d


def batch(cell, d, left_pad=True, bsz=3):
    """``(src, lengths, prev, side)`` with ragged sources padded on ``left_pad``'s side."""
    if cell.family == "mem2mem":
        from helpers import doc_batch

        docs = [[3, 4, 2], [5], [2, 2, 2], [2, 3]][:bsz]
        src, lengths, prev = doc_batch(d, docs, tgt_len=6, left_pad=left_pad)
        prev[-1, -1] = d.index("w3")  # no padding inside the decoded prefix
    else:
        src, lengths, prev = random_batch(d, bsz=bsz, src_len=12, left_pad_source=left_pad)
    side = {"theta": theta_for(bsz)} if cell.theta else {}
    return src, lengths, prev, side


def select(side, index):
    return {k: v.index_select(0, index) for k, v in side.items()}


def prepare(cell, model, src, lengths, side):
    """Eval mode; with ``prune``, a gate threshold that removes about half of this batch's positions."""
    model.eval()
    if cell.prune:
        gate = model.encoder.info_gate
        gate.threshold = -1.0  # nothing closed: the raw scores
        with torch.no_grad():
            out = model.encoder(src, lengths, **side)
        from fairseq_sum_plugins.modules.encoder_out import EncoderOut

        view = EncoderOut.of(out)
        g = view.state["gates"][~view.padding_mask].max(-1).values.sort().values  # a position goes when all heads close
        gate.threshold = float(g[len(g) // 2 - 1 : len(g) // 2 + 1].mean())  # between two gates: no ties
    return model


def decode_incrementally(model, enc, prev, state, start=0):
    return [model.decoder(prev[:, : t + 1], enc, incremental_state=state)[0] for t in range(start, prev.size(1))]


def training_loss(model, src, lengths, prev, side):
    out, extra = model(src, lengths, prev, **side)
    lprobs = model.get_normalized_probs((out, extra), log_probs=True)
    target = torch.cat([prev[:, 1:], prev[:, :1]], dim=1)  # the next tokens
    loss = -lprobs.gather(2, target.unsqueeze(-1)).float().mean()
    for name, value in (extra.get("aux_losses") or {}).items():
        loss = loss + AUX_WEIGHTS[name] * value.float()
    return loss, out


# --- the contract ------------------------------------------------------------------------------


@pytest.mark.parametrize("cell", CELLS, ids=IDS)
@pytest.mark.parametrize("left_pad", [True, False])
def test_incremental_decoding_equals_full_forward(cell, left_pad, topic_model):
    model, d = build(cell, topic_model)
    src, lengths, prev, side = batch(cell, d, left_pad, bsz=4)
    prepare(cell, model, src, lengths, side)
    with torch.no_grad():
        full, _ = model(src, lengths, prev, **side)
        steps = decode_incrementally(model, model.encoder(src, lengths, **side), prev, {})
    assert (torch.cat(steps, dim=1) - full).abs().max() < CONTRACT_TOL


@pytest.mark.parametrize("cell", CELLS, ids=IDS)
@pytest.mark.parametrize("order", [[1, 0, 3, 3, 5, 4], [5, 4, 1]])  # within beams; batch shrinking
def test_beam_reordering_of_incremental_state(cell, order, topic_model):
    """Decode 3 steps, reorder the state and the encoder output by ``order`` as beam search does,
    decode the rest: equal to the full forward of the reordered batch."""
    model, d = build(cell, topic_model)
    src, lengths, prev, side = batch(cell, d)
    beam = torch.arange(3).repeat_interleave(2)  # 3 sentences x 2 hypotheses, like SequenceGenerator
    src, lengths, side = src[beam], lengths[beam], select(side, beam)
    prev = prev[beam]
    prev[:, 1:] = prev[:, 1:] + torch.arange(6)[:, None] % 2  # hypotheses of a sentence differ
    prepare(cell, model, src, lengths, side)
    order, steps = torch.tensor(order), 3
    with torch.no_grad():
        enc, state = model.encoder(src, lengths, **side), {}
        decode_incrementally(model, enc, prev[:, :steps], state)
        model.decoder.reorder_incremental_state_scripting(state, order)
        enc = model.encoder.reorder_encoder_out(enc, order)
        prev_r = prev.index_select(0, order)
        rest = decode_incrementally(model, enc, prev_r, state, start=steps)
        full, _ = model(src.index_select(0, order), lengths.index_select(0, order), prev_r, **select(side, order))
    assert (torch.cat(rest, dim=1) - full[:, steps:]).abs().max() < CONTRACT_TOL


@pytest.mark.parametrize("cell", CELLS, ids=IDS)
@pytest.mark.parametrize("left_pad", [True, False])
def test_padding_does_not_change_outputs(cell, left_pad, topic_model):
    model, d = build(cell, topic_model)
    src, lengths, prev, side = batch(cell, d, left_pad)
    prepare(cell, model, src, lengths, side)
    with torch.no_grad():
        batched, _ = model(src, lengths, prev, **side)
        for b in range(src.size(0)):
            n = int(lengths[b])
            alone = src[b : b + 1, src.size(1) - n :] if left_pad else src[b : b + 1, :n]
            single, _ = model(alone, lengths[b : b + 1], prev[b : b + 1], **select(side, torch.tensor([b])))
            assert (single - batched[b : b + 1]).abs().max() < CONTRACT_TOL


@pytest.mark.parametrize("cell", CELLS, ids=IDS)
def test_every_parameter_gets_a_gradient(cell, topic_model):
    """DDP safety: no parameter is unused in a training step (gates thresholded as in training)."""
    model, d = build(cell, topic_model)
    src, lengths, prev, side = batch(cell, d)
    if cell.prune:
        model.encoder.info_gate.threshold = 0.5
    model.train()
    loss, _ = training_loss(model, src, lengths, prev, side)
    loss.backward()
    bad = [n for n, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not bad
    if cell.nonzero:
        own = [(n, p) for n, p in model.named_parameters() if re.search(cell.nonzero, n)]
        assert own and not [n for n, p in own if p.grad.abs().sum() == 0]


def cpu_half_missing():
    """The first op the models use that has no CPU float16 kernel in this torch build, with its error,
    or None: then a model's float16 forward must run."""
    x = torch.randn(2, 3, 8).half()
    ops = {"linear": lambda: torch.nn.functional.linear(x, torch.randn(4, 8).half()),
           "softmax": lambda: x.softmax(-1), "log_softmax": lambda: x.log_softmax(-1),
           "layer_norm": lambda: torch.nn.functional.layer_norm(x, (8,)),
           "scaled_dot_product_attention": lambda: torch.nn.functional.scaled_dot_product_attention(x, x, x),
           "gru": lambda: torch.nn.GRU(8, 4, batch_first=True).half()(x)}
    for name, op in ops.items():
        try:
            op()
        except RuntimeError as e:
            return f"{name} ({e})"
    return None


def test_cpu_half_missing_finds_no_missing_kernel_in_this_build():
    """torch >= 2.1 has CPU float16 kernels for every op above; the skip below is for other builds."""
    from packaging.version import Version

    assert Version(torch.__version__.split("+")[0]) < Version("2.1") or cpu_half_missing() is None


@pytest.mark.parametrize("cell", CELLS, ids=IDS)
def test_half_precision_and_bf16_autocast(cell, topic_model):
    model, d = build(cell, topic_model)
    src, lengths, prev, side = batch(cell, d)
    prepare(cell, model, src, lengths, side)

    def check(out, extra):
        assert torch.isfinite(out).all()
        if extra.get("gate_counts") is not None:  # every document keeps a token
            assert (extra["gate_counts"][:, 1] > extra["gate_counts"][:, 0]).all()

    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        check(*model(src, lengths, prev, **side))
    missing = cpu_half_missing()
    if missing:  # detected on the bare ops: any other RuntimeError of the model fails the test
        pytest.skip(f"this torch build has no CPU float16 kernel for {missing}")
    half = model.half()
    with torch.no_grad():
        out, extra = half(src, lengths, prev, **{k: v.half() for k, v in side.items()})
    # Mem2Mem and the pointer-generator return float32 log-probabilities of their copy mixture
    assert out.dtype == torch.float16 or cell.family == "mem2mem" or cell.features.get("pointer_generator")
    check(out, extra)


@pytest.mark.parametrize("cell", CELLS, ids=IDS)
def test_one_token_document_gives_finite_outputs_and_gradients(cell, topic_model):
    model, d = build(cell, topic_model)
    src, prev = torch.tensor([[d.eos()]]), torch.tensor([[d.eos(), 5]])
    side = {"theta": theta_for(1)} if cell.theta else {}
    model.train()
    loss, out = training_loss(model, src, torch.tensor([1]), prev, side)
    loss.backward()
    assert torch.isfinite(out).all() and torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_the_table_covers_every_registered_arch_family():
    """Every model registered by the plugin has at least one cell."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    import fairseq_sum_plugins

    ours = {a for a, m in ARCH_MODEL_REGISTRY.items() if m.__module__.startswith(fairseq_sum_plugins.__name__)}
    models = {ARCH_MODEL_REGISTRY[a] for a in ours}
    covered = {ARCH_MODEL_REGISTRY[c.arch] for c in CELLS}
    assert models == covered
    assert np.all([c.arch in ours for c in CELLS])


PRUNED = [c for c in CELLS if c.prune]


@pytest.mark.parametrize("cell", PRUNED, ids=[c.id for c in PRUNED])
@pytest.mark.parametrize("left_pad", [True, False])
def test_pruned_documents_equal_the_document_alone_on_both_padding_sides(cell, left_pad, topic_model):
    """Pruning (a gate threshold in eval mode) with left- or right-padded sources: at thresholds that
    remove 10% to 95% of the batch's positions (each between two gates: no ties), every document's
    log-probabilities, from the full forward and from incremental decoding (the generator's path),
    equal those of the document decoded alone. Tolerance: the batch and the single document run the
    same float32 kernels on other blockings (CONTRACT_TOL; observed <= 2e-6); a position pruned on
    one side only moves them by 1e-2 or more."""
    from fairseq_sum_plugins.modules.encoder_out import EncoderOut

    model, d = build(cell, topic_model)
    src, lengths, prev, side = batch(cell, d, left_pad, bsz=4)
    model.eval()
    gate = model.encoder.info_gate
    gate.threshold = -1.0
    with torch.no_grad():
        view = EncoderOut.of(model.encoder(src, lengths, **side))
    g = view.state["gates"][~view.padding_mask].max(-1).values.sort().values  # a position goes when all heads close
    for q in (0.1, 0.5, 0.95):
        i = max(1, int(len(g) * q))
        gate.threshold = float(g[i - 1 : i + 1].mean())

        def log_probs(s, n, p, side_):  # full forward and incremental decoding
            full = model.get_normalized_probs(model(s, n, p, **side_), log_probs=True)
            steps = decode_incrementally(model, model.encoder(s, n, **side_), p, {})
            return full, model.get_normalized_probs((torch.cat(steps, dim=1), None), log_probs=True)

        with torch.no_grad():
            batched = log_probs(src, lengths, prev, side)
            for b in range(src.size(0)):
                n = int(lengths[b])
                alone = src[b : b + 1, src.size(1) - n :] if left_pad else src[b : b + 1, :n]
                single = log_probs(alone, lengths[b : b + 1], prev[b : b + 1], select(side, torch.tensor([b])))
                for one, many in zip(single, batched):
                    assert (one - many[b : b + 1]).abs().max() < CONTRACT_TOL, (q, b)

# --- activation checkpointing (fairseq's --checkpoint-activations; modules/checkpointing.py) ------------


def attention_calls(model):
    """A counter of the forward calls of every layer's self-attention (recomputation calls them again)."""
    calls = []
    for m in model.modules():
        if hasattr(m, "precheckpoint_forward") or type(m).__name__.endswith("Layer"):
            attn = getattr(m, "self_attn", None)
            if attn is not None:
                attn.register_forward_pre_hook(lambda *a: calls.append(1))
    return calls


@pytest.mark.parametrize("cell", [c for c in CELLS if c.family != "mem2mem"],
                         ids=[c.id for c in CELLS if c.family != "mem2mem"])
def test_activation_checkpointing_gives_the_gradients_without_it(cell, topic_model):
    """``--checkpoint-activations`` (and ``--offload-activations``, the same on a CPU) recompute every
    layer in backward, with dropout on (the random state is restored: the same masks), and give the
    gradients of the model without it, bit for bit: the recomputation runs the same kernels on the
    same inputs in the same order (torch.equal holds on the default, AVX2 and AVX-512 kernel paths;
    it had rtol 1e-5, atol 1e-7)."""
    import dataclasses

    grads, calls = [], []
    for option in (None, "checkpoint_activations", "offload_activations"):
        features = dict(cell.features, dropout=0.1, **({option: True} if option else {}))
        model, d = build(dataclasses.replace(cell, features=features), topic_model)
        if option:
            layers = list(model.encoder.layers) + list(model.decoder.layers)
            assert all(hasattr(layer, "precheckpoint_forward") for layer in layers)
        src, lengths, prev, side = batch(cell, d)
        counted = attention_calls(model)
        model.train()
        torch.manual_seed(1)
        loss, _ = training_loss(model, src, lengths, prev, side)
        loss.backward()
        calls.append(len(counted))
        grads.append({n: p.grad for n, p in model.named_parameters()})
    assert calls[1] == calls[2] == 2 * calls[0] > 0  # each layer ran again in backward
    for checkpointed in grads[1:]:
        assert list(checkpointed) == list(grads[0])
        for name, g in grads[0].items():
            assert (g is None) == (checkpointed[name] is None), name
            if g is not None:
                assert torch.equal(checkpointed[name], g), name


# --- the contract compiled (--compile, modules/compiled.py) ------------------------------------
# A representative subset: the T5 cell, TPR bindings, the pruning gate, ETADS's focus and saliency.
# Compiled and eager layers differ only by the backend's reassociation of fp32 sums: COMPILED_TOL.
COMPILED = [
    Cell("t5_small", dict(compile=True), nonzero=ALL),
    Cell("tp_transformer_small", dict(compile=True), nonzero=ROLES),
    Cell("transformer_gated_small", dict(compile=True), nonzero=GATE, prune=True),
    Cell("etads_base", dict(compile=True), nonzero=ETADS),
]
COMPILED_IDS = [c.id for c in COMPILED]
COMPILED_TOL = 1e-4


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("FAIRSEQ_SUM_TEST_COMPILE") != "1",
    reason="compiles every layer: the four cells took 95 s on an idle 2-core CPU with an empty "
           "compile cache and 17 min for one cell under heavy load; FAIRSEQ_SUM_TEST_COMPILE=1 "
           "runs them")
@pytest.mark.parametrize("cell", COMPILED, ids=COMPILED_IDS)
def test_compiled_cell_keeps_the_contract_and_matches_eager(cell, topic_model):
    """With ``--compile``: incremental == full forward, beam reordering, finite gradients on every
    parameter (the eager contract's own checks), and the compiled full forward and gradients equal
    the eager model's of the same weights within ``COMPILED_TOL`` (dropout off: a compiled graph
    draws its own random numbers). Each cell compiles from an empty dynamo cache, captures graphs,
    and never reaches dynamo's recompile limit (past it dynamo runs a function eagerly without an
    error: the ETADS cell did, at the default limit)."""
    import logging

    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    dynamo_log = logging.getLogger("torch._dynamo")
    dynamo_log.addHandler(handler)
    try:
        _compiled_cell_checks(cell, topic_model)
    finally:
        dynamo_log.removeHandler(handler)
    assert counters["stats"]["unique_graphs"] > 0
    assert not [r.getMessage() for r in records if "recompile_limit" in r.getMessage()]


def _compiled_cell_checks(cell, topic_model):
    test_incremental_decoding_equals_full_forward(cell, True, topic_model)
    test_beam_reordering_of_incremental_state(cell, [1, 0, 3, 3, 5, 4], topic_model)
    test_beam_reordering_of_incremental_state(cell, [5, 4, 1], topic_model)
    test_every_parameter_gets_a_gradient(cell, topic_model)
    import dataclasses

    no_dropout = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    eager_features = {k: v for k, v in cell.features.items() if k != "compile"}
    results = []
    for c in (dataclasses.replace(cell, features=dict(cell.features, **no_dropout)),
              dataclasses.replace(cell, features=dict(eager_features, **no_dropout))):
        model, d = build(c, topic_model)
        src, lengths, prev, side = batch(c, d)
        if c.prune:
            model.encoder.info_gate.threshold = 0.5
        model.train()
        torch.manual_seed(0)
        loss, out = training_loss(model, src, lengths, prev, side)
        loss.backward()
        if "compile" in c.features:  # no layer fell back to eager
            layers = [*model.encoder.layers, *model.decoder.layers]
            assert all(layer._compiled_call_impl is not None for layer in layers)
        results.append((out.detach(), {n: p.grad for n, p in model.named_parameters()}))
    (out_c, grads_c), (out_e, grads_e) = results
    assert (out_c - out_e).abs().max() < COMPILED_TOL
    assert max((grads_c[n] - grads_e[n]).abs().max() for n in grads_e) < COMPILED_TOL


def test_compiling_leaves_the_untraced_methods_out_of_the_graphs(monkeypatch):
    """A method that a class names in ``untraced`` (the attention's beam group size, an int read
    from the rows' values) is wrapped by ``torch.compiler.disable`` when a layer holding it is
    compiled, once, and computes what it did; not at import (tests/test_lazy_registration.py)."""
    import inspect

    from fairseq_sum_plugins.modules.attention import MultiheadAttention
    from fairseq_sum_plugins.modules.compiled import compile_layers

    # undecorated for this test (a layer compiled earlier in this process wrapped it), put back
    plain = inspect.unwrap(inspect.getattr_static(MultiheadAttention, "_beam_group_size").__func__)
    monkeypatch.setattr(MultiheadAttention, "_beam_group_size", staticmethod(plain))
    assert not hasattr(plain, "_torchdynamo_disable")
    model, _ = build_model("t5_transformer_small", make_dictionary(), **DIMS["transformer"])
    compile_layers(model.decoder.layers, "decoder", backend="eager")
    wrapped = inspect.getattr_static(MultiheadAttention, "_beam_group_size")
    assert isinstance(wrapped, staticmethod) and wrapped.__func__._torchdynamo_disable
    compile_layers(model.encoder.layers, "encoder", backend="eager")
    assert inspect.getattr_static(MultiheadAttention, "_beam_group_size") is wrapped
    rows = torch.arange(6.0).view(3, 2).repeat_interleave(2, dim=0)  # 3 sources, 2 beams each
    assert MultiheadAttention._beam_group_size(rows) == 2
    assert MultiheadAttention._beam_group_size(rows.flip(1)[[0, 2, 1, 3, 4, 5]]) == 1


def test_compile_flag_compiles_layers_and_names_eager_features(caplog):
    """``--compile``: every layer compiled in place (parameter names unchanged); a layer carrying an
    :data:`EAGER_FEATURES` entry (activation checkpointing) stays eager, a logged line naming it."""
    import logging

    import torch._dynamo

    from fairseq_sum_plugins.modules.compiled import RECOMPILE_LIMIT

    dims = DIMS["transformer"]
    default_limit = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 8  # dynamo's default: a function past it runs eagerly
    try:
        model, _ = build_model("t5_transformer_small", make_dictionary(), **dims, compile=True)
        assert torch._dynamo.config.recompile_limit == RECOMPILE_LIMIT
    finally:
        torch._dynamo.config.recompile_limit = default_limit
    layers = [*model.encoder.layers, *model.decoder.layers]
    assert all(layer._compiled_call_impl is not None for layer in layers)
    eager, _ = build_model("t5_transformer_small", make_dictionary(), **dims)
    assert list(model.state_dict()) == list(eager.state_dict())
    from fairseq_sum_plugins.modules.compiled import compile_layers

    layer = eager.decoder.layers[1]
    layer.precheckpoint_forward = layer.forward  # as checkpointing.checkpoint_layer marks it
    with caplog.at_level(logging.INFO, logger="fairseq_sum_plugins.modules.compiled"):
        assert compile_layers(eager.decoder.layers, "decoder") == [0]
    assert eager.decoder.layers[1]._compiled_call_impl is None
    assert "decoder layer 1 runs eagerly: checkpoint_activations" in caplog.text
