"""Information selection: gate layer (IS eq. 3), gated cross-attention (IS eq. 6), L1 gate loss (IS eq. 8-9),
thresholding and pruning at inference (Algorithm 1), sparsity reporting."""
import logging
import math

import pytest
import torch
import torch.nn.functional as F

from helpers import build_model, random_batch
from tolerances import MODEL_ULPS, OP_ULPS, fp32_close, fp32_tol, printed_tol
from fairseq_sum_plugins.features import information_selection as gates_mod
from fairseq_sum_plugins.modules.attention import MultiheadAttention
from fairseq_sum_plugins.features.information_selection import InformationGate

GATED = ["transformer_gated_small", "tp_transformer_gated_small"]


def gated(arch="transformer_gated_small", overrides=None, seed=0, **kw):
    torch.manual_seed(seed)
    model, d = build_model(arch, **{**(overrides or {}), **kw})
    return model, d


def set_gate(model, weight=0.0, bias=0.0):
    with torch.no_grad():
        model.encoder.info_gate.proj.weight.fill_(weight)
        model.encoder.info_gate.proj.bias.fill_(bias)


def median_threshold(model, src, lengths):
    """A threshold removing about half of the source positions of this batch."""
    gate = model.encoder.info_gate
    t0, gate.threshold = gate.threshold, -1.0  # nothing closed: the raw scores
    with torch.no_grad():
        out = model.encoder(src, lengths)
    gate.threshold = t0
    g = out["feature_state"]["gates"][~out["enc_padding_mask"]].max(-1).values  # a position goes when all heads close
    return float(g.median())


# --- IS eq. 6 -----------------------------------------------------------------------------------


def test_gated_attention_matches_equation_6():
    """alpha_j = softmax(q . g_j K_j / sqrt(d_k)), c = sum_j alpha_j g_j V_j, per head, by hand."""
    torch.manual_seed(0)
    d, h = 8, 2
    attn = MultiheadAttention(d, h, self_attention=False).eval()
    x, y = torch.randn(1, 3, d), torch.randn(1, 5, d)
    g = torch.rand(1, 5)
    out, _ = attn(x, y, kv_scale=g[:, None, :, None])
    q = attn.q_proj(x)
    k, v = attn.kv_proj(y).chunk(2, -1)
    heads = []
    for i in range(h):
        s = slice(i * 4, (i + 1) * 4)
        alpha = F.softmax(q[..., s] @ (g[..., None] * k[..., s]).transpose(1, 2) / math.sqrt(4), -1)
        heads.append(alpha @ (g[..., None] * v[..., s]))
    assert fp32_close(out, attn.out_proj(torch.cat(heads, -1)), ulps=OP_ULPS)
    # per-head gates scale each head's rows with its own gate
    gh = torch.rand(1, h, 5, 1)
    out_h, _ = attn(x, y, kv_scale=gh)
    explicit, _ = attn(x, y, kv_scale=gh, need_weights=True)
    assert fp32_close(out_h, explicit, ulps=OP_ULPS)


def test_gates_equal_one_give_standard_attention_exactly(tiny_overrides):
    plain, d = gated("t5_transformer_small", tiny_overrides)
    model, _ = gated("transformer_gated_small", tiny_overrides, seed=1)
    missing, unexpected = model.load_state_dict(plain.state_dict(), strict=False)
    assert sorted(missing) == ["encoder.info_gate.proj.bias", "encoder.info_gate.proj.weight"] and not unexpected
    set_gate(model, 0.0, 100.0)  # sigmoid(100) == 1.0 exactly in fp32
    plain.eval(), model.eval()
    src, lengths, prev = random_batch(d)
    with torch.no_grad():
        a, _ = plain(src, lengths, prev)
        b, extra = model(src, lengths, prev)
    assert torch.equal(a, b)
    assert extra["aux_losses"]["gate_l1"] == 1.0


def test_gate_scores_are_equation_3_and_zero_at_padding(tiny_overrides):
    model, d = gated(overrides=tiny_overrides)
    model.eval()
    src, lengths, prev = random_batch(d)
    gate = model.encoder.info_gate
    gate.threshold = -1.0  # nothing closed: the raw scores
    with torch.no_grad():
        out = model.encoder(src, lengths)
        # recompute H: the encoder output before selection is unchanged when nothing is removed
        expected = torch.sigmoid(out["enc"] @ gate.proj.weight.T + gate.proj.bias)
    pad = src.eq(d.pad())
    assert out["feature_state"]["gates"].shape == (3, src.size(1), 1)
    # logits of enc's size
    assert fp32_close(out["feature_state"]["gates"][~pad], expected[~pad], out["enc"], OP_ULPS)
    assert (out["feature_state"]["gates"][pad] == 0).all()


# --- IS eq. 8-9: the L1 gate loss ----------------------------------------------------------------


@pytest.mark.parametrize("per_head", [False, True])
def test_gate_l1_is_mean_gate_per_source_token(per_head, tiny_overrides):
    model, d = gated(overrides=tiny_overrides, gate_per_head=per_head)
    model.train()
    src, lengths, prev = random_batch(d)
    _, extra = model(src, lengths, prev)
    model.encoder.info_gate.threshold = -1.0
    model.eval()  # the same scores (no dropout in these dims), nothing closed
    with torch.no_grad():
        out = model.encoder(src, lengths)
    pad = src.eq(d.pad())
    g = out["feature_state"]["gates"][~pad]  # (N_src, G)
    assert g.size(-1) == (4 if per_head else 1)
    assert extra["aux_losses"]["gate_l1"].item() == pytest.approx(g.mean().item(),
                                                                  abs=fp32_tol(1.0, OP_ULPS))
    assert extra["aux_losses"]["gate_l1"].requires_grad


def test_criterion_adds_lambda_times_gate_l1(toy_data, tiny_overrides):
    from helpers import load_task
    from fairseq_sum_plugins.criterions.summarization_loss import SummarizationLoss

    task = load_task(toy_data)
    task.load_dataset("train")
    ds = task.dataset("train")
    sample = ds.collater([ds[i] for i in range(8)])
    model, _ = gated(overrides=tiny_overrides, dictionary=task.source_dictionary, gate_threshold=0.5)
    model.eval()
    base, sample_size, _ = SummarizationLoss(task, False, 0.1, gate_l1_weight=0.0)(model, sample)
    loss, _, log = SummarizationLoss(task, False, 0.1, gate_l1_weight=0.1)(model, sample)
    l1 = float(log["aux_gate_l1"]) / sample_size
    assert 0 < l1 < 1
    # float32 sums over the batch's tokens, in another order: ulps of the total
    assert loss.item() == pytest.approx(base.item() + 0.1 * l1 * sample_size,
                                        abs=fp32_tol(loss, MODEL_ULPS))
    assert 0 < log["gate_dropped"] < log["gate_tokens"] == int(sample["net_input"]["src_lengths"].sum())

    from fairseq import metrics

    with metrics.aggregate() as agg:
        SummarizationLoss.reduce_metrics([log, log])
    # logged rounded to 2 decimals
    assert agg.get_smoothed_values()["gate_sparsity"] == pytest.approx(
        100 * log["gate_dropped"] / log["gate_tokens"], abs=printed_tol(2))


# --- Algorithm 1: thresholding and pruning ----------------------------------------------------


@pytest.mark.parametrize("per_head", [False, True])
@pytest.mark.parametrize("arch", GATED)
def test_pruning_equals_masking_closed_gates(arch, per_head, tiny_overrides):
    """Removing positions with g <= t gives the output of keeping them with g = 0 (masked)."""
    model, d = gated(arch, tiny_overrides, gate_per_head=per_head)
    model.eval()
    src, lengths, prev = random_batch(d, bsz=4, src_len=12)
    gate = model.encoder.info_gate
    gate.threshold = median_threshold(model, src, lengths)
    with torch.no_grad():
        gate.prune = False
        kept_out, extra_k = model(src, lengths, prev)
        enc_k = model.encoder(src, lengths)
        gate.prune = True
        pruned_out, extra_p = model(src, lengths, prev)
        enc_p = model.encoder(src, lengths)
    assert torch.equal(extra_k["gate_counts"], extra_p["gate_counts"])
    dropped = int(extra_p["gate_counts"][:, 0].sum())
    assert dropped > 0
    assert enc_p["enc"].size(1) < enc_k["enc"].size(1)  # keys/values really got shorter
    assert int((~enc_p["enc_padding_mask"]).sum()) == int((~enc_k["enc_padding_mask"]).sum())
    assert fp32_close(pruned_out, kept_out, ulps=MODEL_ULPS)  # shorter keys: other blockings only
    if not per_head:  # shared gates: every kept position has g > t, every removed one g <= t
        live = ~enc_p["enc_padding_mask"]
        assert (enc_p["feature_state"]["gates"][live] > gate.threshold).all() or (enc_p["feature_state"]["gates"][live] > 0).all()


def test_masking_equals_zero_gates_by_hand(tiny_overrides):
    """Algorithm 1 literally: G_hat = (G > t) * G, closed keys/values zeroed and masked out."""
    model, d = gated(overrides=tiny_overrides)
    model.eval()
    src, lengths, prev = random_batch(d)
    gate = model.encoder.info_gate
    t = median_threshold(model, src, lengths)
    with torch.no_grad():
        gate.threshold = -1.0
        raw = model.encoder(src, lengths)
        g = raw["feature_state"]["gates"]
        closed = (g[..., 0] <= t) & ~raw["enc_padding_mask"]
        best = g[..., 0].masked_fill(raw["enc_padding_mask"], -1).argmax(1)
        closed[torch.arange(len(best)), best] = False
        raw["feature_state"]["gates"] = g.masked_fill(closed[..., None], 0.0)
        raw["enc_padding_mask"] = raw["enc_padding_mask"] | closed
        by_hand, _ = model.decoder(prev, raw)
        gate.threshold = t
        ours, _ = model(src, lengths, prev)
    assert fp32_close(ours, by_hand, ulps=MODEL_ULPS)


def test_attention_is_returned_over_source_positions_after_pruning(tiny_overrides):
    model, d = gated(overrides=tiny_overrides)
    model.eval()
    model.decoder.need_attn = True
    src, lengths, prev = random_batch(d, src_len=12)
    model.encoder.info_gate.threshold = median_threshold(model, src, lengths)
    with torch.no_grad():
        enc = model.encoder(src, lengths)
        _, extra = model.decoder(prev, enc)
    attn = extra["attn"][0]
    assert attn.shape == (3, prev.size(1), src.size(1))
    # softmax rows (averaged over heads) sum to 1 up to the rounding of <= S terms of size <= 1
    assert fp32_close(attn.sum(-1), torch.ones(3, prev.size(1)), src.size(1), OP_ULPS)
    live = (~enc["enc_padding_mask"]).long()
    kept = torch.zeros(src.shape, dtype=torch.long).scatter_add_(1, enc["kept_index"], live) > 0
    removed = ~kept & ~src.eq(d.pad())
    assert removed.any()
    assert (attn.masked_select(removed[:, None, :].expand_as(attn)) == 0).all()
    assert (attn.masked_select(src.eq(d.pad())[:, None, :].expand_as(attn)) == 0).all()


def test_gate_gets_a_gradient_from_the_likelihood_alone(tiny_overrides):
    """IS eq. 6 makes the gate part of the attention: CE alone trains it, not just the L1 term."""
    model, d = gated(overrides=tiny_overrides)
    model.train()
    src, lengths, prev = random_batch(d)
    logits, _ = model(src, lengths, prev)
    logits.float().log_softmax(-1).mean().backward()
    assert model.encoder.info_gate.proj.weight.grad.abs().sum() > 0


# --- degenerate inputs ------------------------------------------------------------------------


@pytest.mark.parametrize("per_head", [False, True])
def test_all_gates_under_threshold_keep_one_token_per_document(per_head, tiny_overrides):
    model, d = gated(overrides=tiny_overrides, gate_per_head=per_head)
    set_gate(model, 0.0, -5.0)  # every gate = sigmoid(-5) ~ 0.0067
    model.encoder.info_gate.threshold = 0.5
    model.eval()
    src, lengths, prev = random_batch(d)
    with torch.no_grad():
        enc = model.encoder(src, lengths)
        out, extra = model.decoder(prev, enc)
    assert enc["enc"].size(1) == 1 and not enc["enc_padding_mask"].any()
    assert (enc["feature_state"]["gates"] > 0).all()
    assert torch.isfinite(out).all()
    assert extra["gate_counts"][:, 0].tolist() == (lengths - 1).tolist()


def test_one_token_document(tiny_overrides):
    model, d = gated(overrides=tiny_overrides, gate_threshold=0.99)
    model.eval()
    with torch.no_grad():
        out, extra = model(torch.tensor([[d.eos()]]), torch.tensor([1]), torch.tensor([[d.eos(), 5]]))
    assert torch.isfinite(out).all()
    assert extra["gate_counts"].tolist() == [[0, 1]]


def test_gate_underflow_to_zero_is_not_an_empty_document(tiny_overrides):
    model, d = gated(overrides=tiny_overrides, gate_per_head=True)
    set_gate(model, 0.0, -200.0)  # sigmoid underflows to exactly 0
    model.eval()
    src, lengths, prev = random_batch(d)
    with torch.no_grad():
        out, _ = model(src, lengths, prev)
    assert torch.isfinite(out).all()


def test_threshold_is_not_applied_in_training(tiny_overrides):
    model, d = gated(overrides=tiny_overrides, gate_threshold=0.99)
    model.train()
    src, lengths, prev = random_batch(d)
    enc = model.encoder(src, lengths)
    assert enc["enc"].size(1) == src.size(1) and enc["kept_index"] is None
    assert (enc["feature_state"]["gate_counts"][:, 0] == enc["feature_state"]["gate_counts"][:, 1] - 1).all()  # reported as would-be removed


# --- sparsity reporting -----------------------------------------------------------------------


def test_sparsity_counters_and_exit_log(tiny_overrides, caplog):
    model, d = gated(overrides=tiny_overrides)
    model.eval()
    src, lengths, prev = random_batch(d, bsz=4, src_len=12)
    gate = model.encoder.info_gate
    gate.threshold = median_threshold(model, src, lengths)
    gates_mod.report_sparsity_at_exit([model])  # resets the counters
    with torch.no_grad():
        enc = model.encoder(src, lengths)
        model.encoder(src, lengths)
    dropped, total = gate.sparsity()
    assert total == 2 * int(lengths.sum()) and dropped == 2 * int(enc["feature_state"]["gate_counts"][:, 0].sum()) > 0
    with caplog.at_level(logging.INFO, logger=gates_mod.__name__):
        gates_mod._log_sparsity(gate)
    assert f"sparsity rate {100 * dropped / total:.2f}%" in caplog.text


def test_gate_args_parse_and_presets():
    from fairseq.models import ARCH_CONFIG_REGISTRY
    import argparse

    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY["transformer_gated_base"](args)
    assert args.gate and not args.gate_per_head and args.gate_threshold == 0.0
    assert (args.encoder_layers, args.decoder_layers, args.encoder_embed_dim, args.encoder_attention_heads) == (6, 6, 512, 8)
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY["tp_transformer_gated_base"](args)
    assert args.gate and args.tpr == "discrete"
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY["t5_transformer_base"](args)
    assert not args.gate


def test_gate_parameter_count(tiny_overrides):
    plain, _ = gated("t5_transformer_small", tiny_overrides)
    shared, _ = gated("transformer_gated_small", tiny_overrides)
    per_head, _ = gated("transformer_gated_small", tiny_overrides, gate_per_head=True)
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert n(shared) - n(plain) == 32 + 1  # w in R^{d_model}, b
    assert n(per_head) - n(plain) == 4 * (32 + 1)


def test_information_gate_module_alone():
    gate = InformationGate(8, 1, threshold=0.5).eval()
    h = torch.randn(2, 5, 8)
    pad = torch.tensor([[False] * 5, [True, True, False, False, False]])
    sel = gate.select(h, pad)
    assert sel["h"].size(1) == int(sel["counts"][:, 1].sub(sel["counts"][:, 0]).max())
    kept_rows = (~sel["padding_mask"]).sum(1)
    assert (kept_rows >= 1).all()
    assert torch.equal(kept_rows, sel["counts"][:, 1] - sel["counts"][:, 0])
    # kept rows are the original states, in order
    for b in range(2):
        idx = sel["index"][b][~sel["padding_mask"][b]] if sel["index"] is not None else torch.arange(5)
        assert torch.equal(sel["h"][b][~sel["padding_mask"][b]], h[b, idx])
        assert (idx[1:] > idx[:-1]).all()


# --- Newsroom converter (paper §4.1 filter) ------------------------------------------------------


def test_newsroom_converter_paper_filter_and_fields(tmp_path):
    import gzip
    import json

    from preprocess import newsroom_to_jsonl

    def row(i, n_doc, n_sum, density):
        return {"url": f"http://x/{i}", "title": f"T{i}", "text": " ".join(["w"] * n_doc), "summary": " ".join(["s"] * n_sum),
                "density": density, "coverage": 0.5, "compression": n_doc / max(n_sum, 1)}

    rows = [row(0, 120, 12, 1.0), row(1, 99, 12, 1.0), row(2, 150, 9, 1.0), row(3, 100, 10, 9.0)]
    d = tmp_path / "release"
    d.mkdir()
    for name in ("train", "dev"):
        (d / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with gzip.open(d / "test.jsonl.gz", "wt") as f:
        f.write("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "jsonl"
    stats = newsroom_to_jsonl.convert(newsroom_to_jsonl.get_parser().parse_args(
        ["--in", str(d), "--out", str(out), "--min-doc-tokens", "100", "--min-summary-tokens", "10",
         "--density-bin", "abstractive", "--density-bin-splits", "test"]))
    read = lambda p: [json.loads(l) for l in open(p)]  # noqa: E731
    train, test = read(out / "train.jsonl"), read(out / "test.jsonl")
    assert [r["id"] for r in train] == ["http://x/0", "http://x/3"]  # < 100 doc / < 10 summary tokens dropped
    assert [r["id"] for r in test] == ["http://x/0"]  # density 9.0 is extractive
    assert set(train[0]) >= {"document", "summary", "title", "density", "coverage", "compression", "density_bin"}
    assert train[0]["density_bin"] == "abstractive" and train[1]["density_bin"] == "extractive"
    assert stats["valid"] == {"kept": 2, "dropped": 2}


@pytest.mark.parametrize("per_head", [False, True])
def test_document_gate_loss_is_equations_7_to_9_by_hand(per_head, toy_data, tiny_overrides):
    """--gate-l1-norm document: (1/|D|) sum_docs [ -sum_t log p(y_t) + lambda sum_i g_i ] (IS eq. 7-9),
    computed here from the model's log-probabilities and gates; the logged NLL stays per token."""
    from helpers import load_task
    from fairseq_sum_plugins.criterions.summarization_loss import SummarizationLoss

    task = load_task(toy_data)
    task.load_dataset("train")
    ds = task.dataset("train")
    sample = ds.collater([ds[i] for i in range(8)])
    model, _ = gated(overrides=tiny_overrides, dictionary=task.source_dictionary, gate_per_head=per_head)
    model.eval()
    model.encoder.info_gate.threshold = -1.0  # nothing closed: the raw gates
    lam = 0.3
    crit = SummarizationLoss(task, False, 0.0, gate_l1_weight=lam, gate_l1_norm="document")
    loss, sample_size, log = crit(model, sample)
    with torch.no_grad():
        net = sample["net_input"]
        lprobs = torch.log_softmax(model(**net)[0].double(), -1)
        enc = model.encoder(net["src_tokens"], net["src_lengths"])
    target = sample["target"]
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1).masked_fill(target.eq(task.target_dictionary.pad()), 0)
    gsum = enc["feature_state"]["gates"].double().mean(-1).masked_fill(enc["enc_padding_mask"], 0).sum(1)  # per document
    expected = (nll.sum(1) + lam * gsum).mean()
    assert sample_size == target.size(0) == 8
    # float32 sums over the batch against float64 ones: ulps of the totals
    assert loss.item() / sample_size == pytest.approx(expected.item(),
                                                      abs=fp32_tol(expected, MODEL_ULPS))
    assert float(log["nll_loss"]) == pytest.approx(nll.sum().item(),
                                                   abs=fp32_tol(nll.sum(), MODEL_ULPS))
    assert float(log["aux_gate_l1"]) == pytest.approx(gsum.sum().item(),
                                                      abs=fp32_tol(gsum.sum(), MODEL_ULPS))
    # the default reading: CE per target token + lambda x mean gate per source token
    tok_loss, tok_size, _ = SummarizationLoss(task, False, 0.0, gate_l1_weight=lam)(model, sample)
    n_src = (~enc["enc_padding_mask"]).sum()
    assert tok_size == sample["ntokens"]
    per_token = (nll.sum() / tok_size + lam * gsum.sum() / n_src).item()
    assert tok_loss.item() / tok_size == pytest.approx(per_token,
                                                       abs=fp32_tol(per_token, MODEL_ULPS))
    with pytest.raises(ValueError, match="--gate-l1-norm"):
        SummarizationLoss(task, False, 0.0, gate_l1_norm="sentence")


def test_gate_warmup_holds_the_gates_open_then_hands_over(tiny_overrides):
    """--gate-warmup-updates N: in training, gates of 1, no gate loss and zero gate gradients for the
    first N updates (counted by fairseq's model.set_num_updates), then IS eq. 3-9; eval mode uses g."""
    model, d = gated(overrides=tiny_overrides, gate_warmup_updates=10)
    src, lengths, prev = random_batch(d)
    gate = model.encoder.info_gate
    model.eval()
    with torch.no_grad():
        raw = model.encoder(src, lengths)
    pad, g = raw["enc_padding_mask"], raw["feature_state"]["gates"]
    model.train()
    for updates, warm in ((0, True), (9, True), (10, False), (25, False)):
        model.set_num_updates(updates)
        assert gate.num_updates == updates
        model.zero_grad()
        out = model.encoder(src, lengths)
        expected = torch.ones_like(g) if warm else g
        assert fp32_close(out["feature_state"]["gates"][~pad], expected[~pad], 1.0, OP_ULPS)  # sigmoid, <= 1
        assert (out["feature_state"]["gates"][pad] == 0).all()
        l1 = out["aux_losses"]["gate_l1"]
        assert l1.item() == pytest.approx(0.0 if warm else g[~pad].mean().item(),
                                          abs=fp32_tol(1.0, OP_ULPS))
        (model(src, lengths, prev)[0].sum() + l1).backward()
        grad = gate.proj.weight.grad
        assert grad is not None and (grad.abs().sum() == 0) == warm  # zero (not None: DDP) while held open
    off, _ = gated(overrides=tiny_overrides)
    assert not off.encoder.info_gate.in_warmup()  # default: the paper's gate from the start
