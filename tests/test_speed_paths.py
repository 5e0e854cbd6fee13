"""Speed paths against the reference beside them (fp32, forward and backward, the same random
stream): :meth:`MultiheadAttention._matmul_attention` (training with attention dropout on CPU)
against ``F.scaled_dot_product_attention`` (torch's masks) or the explicit path (packed masks)."""
import pytest
import torch
from tolerances import OP_ULPS, fp32_close

from fairseq_sum_plugins.modules.attention import MultiheadAttention

torch.set_num_threads(1)


def _run(attn, fast, seed, x, mem, **kw):
    """Output and gradients (input, parameters, bias) of one training forward + backward."""
    attn.matmul_train_path = fast
    params = [x] + list(attn.parameters()) + [t for t in kw.values() if torch.is_tensor(t)
                                              and t.requires_grad]
    for p in params:
        p.grad = None
    torch.manual_seed(seed)  # the dropout mask
    out, _ = attn(x, mem, **kw)
    out.backward(torch.ones_like(out))
    return [out.detach()] + [p.grad.clone() for p in params]


@pytest.mark.parametrize("mask", ["bernoulli", "packed"])
@pytest.mark.parametrize("kind", ["t5_encoder", "t5_encoder_padding", "all_masked", "causal",
                                  "causal_bias", "cross_bool_padding"])
def test_matmul_training_attention_equals_sdpa(kind, mask):
    """The training path gives the reference's output and gradients with the same dropout mask:
    bit for bit at the T5 cell's scaling 1.0, within float32 rounding at 1/sqrt(d_k). The
    reference is SDPA with torch's masks (``--dropout-mask bernoulli``) and the explicit path
    with the packed masks (the default), which SDPA cannot draw."""
    torch.manual_seed(0)
    t5 = kind.startswith(("t5", "all", "causal_bias"))
    self_attention = not kind.startswith("cross")
    attn = MultiheadAttention(16, 4, dropout=0.3, self_attention=self_attention,
                              bias=not t5, scaling=1.0 if t5 else None).train()
    attn.packed_mask = mask == "packed"
    calls = []
    if mask == "packed":  # the reference run must be the explicit path's
        explicit = attn._explicit_attention
        attn._explicit_attention = lambda *a, **k: calls.append(1) or explicit(*a, **k)
    x = torch.randn(3, 6, 16, requires_grad=True)
    mem = None if self_attention else torch.randn(3, 7, 16)
    s = 6 if self_attention else 7
    pad = torch.zeros(3, s, dtype=torch.bool)
    pad[0, :2] = True
    kw = {}
    if kind.startswith("t5") or kind == "all_masked" or kind == "causal_bias":
        kw["attn_bias"] = torch.randn(1, 4, 6, s, requires_grad=True)
    if kind in ("t5_encoder_padding", "all_masked", "cross_bool_padding"):
        if kind == "all_masked":
            pad[1] = True  # a source of padding only: SDPA gives 0 for those rows
        kw["key_padding_mask"] = pad
    if kind.startswith("causal"):
        kw["causal"] = True
    fast = _run(attn, True, 5, x, mem, **kw)
    assert calls == []
    ref = _run(attn, False, 5, x, mem, **kw)
    assert calls == ([1] if mask == "packed" else [])
    assert len(fast) == len(ref)
    for a, b in zip(fast, ref):
        assert torch.isfinite(a).all()
        if t5:
            assert torch.equal(a, b)
        else:
            assert fp32_close(a, b, b.abs().max() + 1, OP_ULPS)


def test_attention_weights_path_gives_a_fully_masked_row_zero_and_a_finite_gradient():
    """The explicit path (``need_weights``, gates, packed masks without the matmul path): a
    source of padding only gets output 0 and weights 0, as SDPA gives, and the backward stays
    finite. With an additive bias (the T5 cell's positions) the padding becomes ``-inf`` added to
    the logits: softmax then ``nan_to_num`` gave the zeros but a NaN gradient through the NaN row
    (a boolean mask's ``masked_fill`` hid it by zeroing that row's gradient)."""
    torch.manual_seed(0)
    attn = MultiheadAttention(8, 2, dropout=0.0, self_attention=False, scaling=1.0).train()
    x = torch.randn(2, 3, 8, requires_grad=True)
    mem = torch.randn(2, 4, 8, requires_grad=True)
    pad = torch.zeros(2, 4, dtype=torch.bool)
    pad[1] = True
    bias = torch.randn(1, 2, 3, 4)
    out, weights = attn(x, mem, key_padding_mask=pad, attn_bias=bias, need_weights=True)
    assert torch.equal(weights[1], torch.zeros(3, 4)) and torch.isfinite(out).all()
    assert torch.allclose(weights[0].sum(-1), torch.ones(3))  # tol: float32 sum of 4 terms
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(mem.grad).all()
    assert torch.equal(mem.grad[1], torch.zeros(4, 8))  # no weight reaches a masked key


def test_matmul_training_path_is_training_cpu_fp32_with_dropout_only():
    """Eval, no attention dropout, or the path switched off: SDPA as before (the path is not
    called)."""
    attn = MultiheadAttention(16, 4, dropout=0.1)
    calls = []
    attn._matmul_attention = lambda *a: calls.append(1) or torch.zeros(2, 4, 5, 4)
    x = torch.randn(2, 5, 16)
    attn.eval()(x)
    MultiheadAttention(16, 4, dropout=0.0).train()(x)
    attn.train().matmul_train_path = False
    attn(x)
    assert calls == []
    attn.matmul_train_path = True
    attn(x)
    assert calls == [1]


@pytest.mark.parametrize("arch,overrides", [
    ("t5_small", dict(encoder_layers=1, decoder_layers=1, encoder_embed_dim=32,
                      encoder_ffn_embed_dim=64, encoder_attention_heads=4)),
    ("t5_transformer_small", dict(encoder_layers=1, decoder_layers=1)),
    ("tp_transformer_small", dict(encoder_layers=1, decoder_layers=1)),  # padding_idx: no grad
    ("etads_base", dict(encoder_layers=1, decoder_layers=1, encoder_embed_dim=32,
                        encoder_ffn_embed_dim=64, encoder_attention_heads=4)),  # output bias b^o
    ("transformer_ta_small", dict(encoder_layers=1, decoder_layers=1, ta_sia=False,
                                  ta_drm=False)),  # TEMA reads the embeddings: a fourth gradient
])
def test_tied_embedding_gradient_paths_equal_autograd_bit_for_bit(arch, overrides, tmp_path):
    """With the output projection tied to the embeddings, the projection's own weight gradient
    (TiedProjection, on by default) and the sparse lookups summed per token (off by default) give
    plain autograd's gradients (F.linear, dense lookups) bit for bit, with tokens repeated within
    and across the source and the summary and padding in both; every gradient stays dense."""
    from helpers import build_model, make_dictionary, random_batch, write_topic_model

    d, side = make_dictionary(), {}
    if arch.startswith("transformer_ta"):
        overrides = dict(overrides, topic_model=write_topic_model(d, str(tmp_path / "t.npz")))
        side["theta"] = torch.full((3, 6), 1 / 6)
    model, d = build_model(arch, d, **overrides)
    model.train()
    src, lengths, prev = random_batch(d, bsz=3, src_len=9, tgt_len=6)
    src[:, 1:5] = src[0, 6]  # one token four times per source, and in the summaries
    prev[:, 2:4] = src[0, 6]
    src[2, :2], lengths[2] = d.pad(), lengths[2] - 2  # left padding
    prev[1, -1] = d.pad()
    grads = []
    for fresh, sparse in ((False, False), (True, False), (True, True), (False, True)):
        model.decoder.fresh_tied_grad, model.decoder.sparse_embedding_grad = fresh, sparse
        model.zero_grad(set_to_none=True)
        torch.manual_seed(3)  # the same dropout masks
        logits, _ = model(src, lengths, prev, **side)
        logits.float().log_softmax(-1).sum().backward()
        grads.append({n: p.grad for n, p in model.named_parameters() if p.grad is not None})
        assert not model.decoder.embed_tokens.sparse  # restored after the forward
        assert not model.decoder.embed_tokens._forward_hooks  # the hook removed
    weight = model.decoder.embed_tokens.weight
    assert any(g is weight.grad for g in grads[-1].values())  # the tied weight has a gradient
    for other in grads[1:]:
        assert other.keys() == grads[0].keys()
        for name, g in other.items():
            assert g.layout == torch.strided, name
            assert torch.equal(g, grads[0][name]), name


def test_tied_projection_gradient_is_added_into_in_place():
    """The point of TiedProjection: autograd sums the two lookups' gradients into the
    projection's weight gradient in place (two add_ over the vocabulary x d_m weight, no
    out-of-place add, which allocates a fresh one); with F.linear the first sum is out of place."""
    from helpers import build_model, random_batch
    from torch.profiler import profile

    model, d = build_model("t5_transformer_small", encoder_layers=1, decoder_layers=1)
    model.train()
    src, lengths, prev = random_batch(d)
    shape = list(model.decoder.embed_tokens.weight.shape)
    counts = []
    for fresh in (True, False):
        model.decoder.fresh_tied_grad = fresh
        model.zero_grad(set_to_none=True)
        loss = model(src, lengths, prev)[0].sum()
        with profile(record_shapes=True) as prof:
            loss.backward()
        counts.append({e.key: e.count for e in prof.key_averages(group_by_input_shape=True)
                       if e.key in ("aten::add", "aten::add_") and e.input_shapes[:2] == [shape] * 2})
    assert counts == [{"aten::add_": 2}, {"aten::add": 1, "aten::add_": 1}]


def test_rows_per_token_sums_a_tokens_rows_before_they_meet_the_dense_gradient():
    """By hand: token 2 looked up twice with rows 2^-24 each, beside a dense gradient 1.0 for it.
    The dense lookup's backward adds the rows first (2^-23), then the sum to 1.0: 1 + 2^-23. Added
    one by one, each 2^-24 rounds away (1.0 + 2^-24 is a tie, to even: 1.0). rows_per_token gives
    the first; nn.Embedding(sparse=True)'s rows the second."""
    from fairseq_sum_plugins.modules.tied_embedding import rows_per_token

    weight = torch.zeros(4, 1, requires_grad=True)
    tokens = torch.tensor([2, 0, 2])
    rows = torch.tensor([[2.0**-24], [0.5], [2.0**-24]])
    sparse = torch.ops.aten.embedding_sparse_backward(rows, tokens, 4, -1, False)
    dense = torch.tensor([[0.0], [0.0], [1.0], [0.0]])
    summed = rows_per_token(sparse)
    assert summed.is_coalesced() and summed._indices().tolist() == [[0, 2]]
    assert (dense + summed).flatten().tolist() == [0.5, 0.0, 1.0 + 2.0**-23, 0.0]
    assert (dense + sparse).flatten().tolist() == [0.5, 0.0, 1.0, 0.0]
    assert torch.equal(dense + summed, dense + torch.ops.aten.embedding_dense_backward(
        rows, tokens, 4, -1, False))
    assert weight.grad is None and rows_per_token(None) is None
    assert rows_per_token(summed) is summed  # already one row per token


def test_sparse_embedding_gradient_only_when_tied_training_cpu_fp32():
    """With the sparse lookups switched on: an untied output projection, evaluation, no gradient
    or a float64 model keep them dense (the flag is never set); and they are off by default."""
    from helpers import build_model, random_batch
    from fairseq_sum_plugins.models.sum_transformer import SumTransformerDecoder

    assert SumTransformerDecoder.sparse_embedding_grad is False
    seen = []
    for arch, overrides, train, dtype in (
            ("t5_transformer_small", dict(encoder_layers=1, decoder_layers=1,
                                          share_all_embeddings=False,
                                          share_decoder_input_output_embed=False), True,
             torch.float32),
            ("t5_transformer_small", dict(encoder_layers=1, decoder_layers=1), False,
             torch.float32),
            ("t5_transformer_small", dict(encoder_layers=1, decoder_layers=1), True,
             torch.float64)):
        model, d = build_model(arch, **overrides)
        model.to(dtype).train(train)
        model.decoder.sparse_embedding_grad = True
        emb = model.decoder.embed_tokens
        emb.register_forward_pre_hook(lambda m, _: seen.append(m.sparse))
        src, lengths, prev = random_batch(d)
        model(src, lengths, prev)
    assert len(seen) == 5 and not any(seen)  # the untied decoder is looked up once
    model.float().train()  # the control: tied, training, CPU fp32
    model(src, lengths, prev)
    assert seen[-2:] == [True, True]


def test_bench_beam_grid_runs_at_tiny_shapes(tmp_path):
    """benchmarks/bench_beam.py: one row per (beam, batch) point, both models timed."""
    import json
    import subprocess
    import sys

    root = __import__("os").path.dirname(__import__("os").path.dirname(__file__))
    out = tmp_path / "beam.json"
    subprocess.run([sys.executable, f"{root}/benchmarks/bench_beam.py", "--threads", "1",
                    "--src-len", "8", "--tgt-len", "3", "--dict-size", "64", "--grid", "1x2",
                    "2x1", "--rounds", "1", "--json", str(out)], check=True, cwd=root,
                   capture_output=True)
    rows = json.loads(out.read_text())["rows"]
    assert [(r["beam"], r["batch"]) for r in rows] == [(1, 2), (2, 1)]
    assert all(len(r["ms_per_step"]) == 2 and min(r["ms_per_step"].values()) > 0 for r in rows)


@pytest.mark.parametrize("arch", ["tp_transformer_small", "t5_transformer_small"])
def test_the_default_paths_train_the_reference_bits(arch):
    """On the quickstart's configuration (dropout 0.1, no attention dropout) the paths on by
    default leave a training step's gradients bit for bit those of the reference paths (SDPA,
    autograd's tied projection): the pinned figures of the quickstart rest on it (with attention
    dropout the matmul path is within float32 rounding of SDPA,
    test_matmul_training_attention_equals_sdpa)."""
    from helpers import build_model, random_batch

    model, d = build_model(arch, encoder_layers=1, decoder_layers=2, dropout=0.1,
                           attention_dropout=0.0)
    model.train()
    src, lengths, prev = random_batch(d, bsz=3, src_len=9, tgt_len=6)
    prev[:, 2:4] = prev[0, 1]  # a repeated token: its embedding rows add up
    grads = []
    for reference in (False, True):
        if reference:
            model.decoder.fresh_tied_grad = False
            for m in model.modules():
                if isinstance(m, MultiheadAttention):
                    m.matmul_train_path = False
        model.zero_grad(set_to_none=True)
        torch.manual_seed(3)
        logits, _ = model(src, lengths, prev)
        logits.float().log_softmax(-1).sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    for name, g in grads[0].items():
        assert torch.equal(g, grads[1][name]), name


@pytest.mark.parametrize("epsilon", [0.1, 0.0])
def test_label_smoothed_loss_gradient_in_one_pass_equals_fairseqs(epsilon):
    """LabelSmoothedNLL: fairseq's label_smoothed_nll_loss forward, and its gradient with respect
    to the log-probabilities bit for bit (padding rows 0), written by hand: -eps_i at every word,
    -(1 - eps - eps_i) - eps_i at the target."""
    from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
    from fairseq_sum_plugins.criterions.summarization_loss import LabelSmoothedNLL

    torch.manual_seed(0)
    logits = torch.randn(7, 11, requires_grad=True)
    target = torch.tensor([3, 1, 0, 10, 1, 1, 5])  # 1 = padding
    outs, grads = [], []
    for fused in (True, False):
        logits.grad = None
        lprobs = logits.log_softmax(-1)
        lprobs.retain_grad()
        loss, nll = (LabelSmoothedNLL.apply(lprobs, target, epsilon, 1) if fused else
                     label_smoothed_nll_loss(lprobs, target, epsilon, 1, True))
        (loss * 3.0).backward()
        outs.append((loss.detach(), nll.detach()))
        grads.append((lprobs.grad, logits.grad))
    assert all(torch.equal(a, b) for a, b in zip(*outs))
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])
    eps_i = epsilon / 10
    hand = torch.full((7, 11), -3.0 * eps_i)
    hand[torch.arange(7), target] = -3.0 * (1 - epsilon - eps_i) - 3.0 * eps_i
    hand[target == 1] = 0.0
    assert torch.allclose(grads[0][0], hand, atol=1e-6, rtol=0)  # tol: hand values from doubles


def test_criterion_training_step_with_the_one_pass_gradient_equals_fairseqs():
    """summarization_loss on a model: every parameter's gradient of one training step is the same
    bit for bit with the one-pass loss gradient and with fairseq's (SummarizationLoss.fused_backward
    False); the reference runs where the loss is not reduced."""
    from argparse import Namespace

    from helpers import build_model, random_batch
    from fairseq_sum_plugins.criterions.summarization_loss import SummarizationLoss

    model, d = build_model("t5_transformer_small", encoder_layers=1, decoder_layers=1)
    model.train()
    src, lengths, prev = random_batch(d, bsz=3, src_len=9, tgt_len=6)
    target = torch.cat([prev[:, 1:], torch.full((3, 1), d.eos())], 1)
    target[0, -2:] = d.pad()
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": target, "ntokens": int(target.ne(d.pad()).sum())}
    crit = SummarizationLoss(Namespace(target_dictionary=d), False, 0.1)
    grads = []
    for fused in (True, False):
        crit.fused_backward = fused
        model.zero_grad(set_to_none=True)
        torch.manual_seed(3)
        loss, _, log = crit(model, sample)
        loss.backward()
        grads.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                                      if p.grad is not None}))
    assert torch.equal(grads[0][0], grads[1][0])
    for name, g in grads[0][1].items():
        assert torch.equal(g, grads[1][1][name]), name
