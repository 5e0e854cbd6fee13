"""One dropout function for every dropout (modules/dropout.py): the default, ``--dropout-mask
packed``, draws four 16-bit integers per 64-bit random number; ``bernoulli`` is torch's F.dropout bit
for bit."""
import argparse

import pytest
import torch
import torch.nn.functional as F

from helpers import build_model, make_dictionary, random_batch
from fairseq_sum_plugins.modules import dropout as dropout_module
from fairseq_sum_plugins.modules.dropout import check_dropout_mask, dropout, packed_keep_mask


def test_bernoulli_mask_is_torch_dropout_bit_for_bit():
    x = torch.randn(7, 33)
    torch.manual_seed(3)
    ours = dropout(x, 0.1, True)
    torch.manual_seed(3)
    assert torch.equal(ours, F.dropout(x, 0.1, True))
    assert dropout(x, 0.1, False) is x and dropout(x, 0.0, True) is x


def test_packed_mask_by_hand():
    """p = 0.1: 6554 of the 65536 16-bit values drop (those below -32768 + 6554 = -26214), so
    p' = 6554 / 65536 and the kept ones are scaled by 65536 / 58982. Nine elements take three 64-bit
    draws; element i is bits 16 (i % 4) to 16 (i % 4) + 15 of draw i // 4 (little end first), read
    as a signed 16-bit integer: computed here with Python's integers, not with a tensor view."""
    torch.manual_seed(0)
    draws = torch.empty(3, dtype=torch.int64).random_(-(1 << 63), None).tolist()
    lanes = [(d >> (16 * j)) & 0xFFFF for d in draws for j in range(4)][:9]
    r = torch.tensor([v - (1 << 16) if v >= 1 << 15 else v for v in lanes]).view(3, 3)
    expected = (r >= -26214).float() * (65536 / 58982)
    torch.manual_seed(0)
    got = packed_keep_mask((3, 3), 0.1, "cpu", torch.float32)
    assert torch.equal(got, expected)
    assert torch.equal(got.ne(0).view(-1), torch.tensor(lanes[:9]).view(-1).sub(1 << 15).remainder(
        1 << 16).sub(1 << 15).ge(-26214))  # the same by the signed reading's other spelling


def test_packed_mask_draws_a_quarter_of_the_random_numbers():
    """After one packed mask of n elements the generator stands where ceil(n / 4) 64-bit draws
    leave it (torch's ``bernoulli_`` would have drawn n numbers)."""
    for n in (1, 4, 5, 1000):
        torch.manual_seed(11)
        packed_keep_mask((n,), 0.1, "cpu", torch.float32)
        after = torch.empty(1, dtype=torch.int64).random_(-(1 << 63), None)
        torch.manual_seed(11)
        torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(1 << 63), None)
        assert torch.equal(after, torch.empty(1, dtype=torch.int64).random_(-(1 << 63), None))


def test_packed_mask_at_a_p_that_rounds_to_one_or_out_of_range():
    """p = 0.999995 rounds to 65536 / 65536: F.dropout's (everything dropped), not a division by
    zero; p = 0.99999 rounds to 65535 / 65536 and keeps its scale 65536; p outside [0, 1] is
    F.dropout's error."""
    x = torch.ones(64)
    assert torch.equal(dropout(x, 0.999995, True, packed=True), torch.zeros(64))
    torch.manual_seed(0)
    kept = dropout(torch.ones(1 << 16), 0.99999, True, packed=True)
    assert set(kept.unique().tolist()) <= {0.0, 65536.0}
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            dropout(x, p, True, packed=True)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_packed_mask_drops_p_and_keeps_the_expectation(p):
    """Over 2**20 elements the dropped share is p' = round(p * 2**16) / 2**16 within 5 binomial
    standard deviations (5 * sqrt(p'(1-p')/n) <= 0.0025), and every kept element is x / (1 - p')
    exactly (one float32 multiplication by the same scale as the mask's)."""
    n = 1 << 20
    x = torch.full((n,), 3.0)
    torch.manual_seed(1)
    y = dropout(x, p, True, packed=True)
    p_ = round(p * 65536) / 65536
    dropped = float((y == 0).double().mean())
    assert abs(dropped - p_) <= 5 * (p_ * (1 - p_) / n) ** 0.5
    scale = torch.tensor(65536 / (65536 - round(p * 65536)), dtype=torch.float32)
    assert torch.equal(y[y != 0], torch.full_like(y[y != 0], 3.0) * scale)


def test_packed_mask_gradient_is_the_mask():
    x = torch.randn(64, 16, requires_grad=True)
    torch.manual_seed(2)
    y = dropout(x, 0.25, True, packed=True)
    y.sum().backward()
    torch.manual_seed(2)
    assert torch.equal(x.grad, packed_keep_mask(x.shape, 0.25, "cpu", torch.float32))


def test_a_bad_mask_name_is_refused_by_flag():
    with pytest.raises(ValueError, match=r"--dropout-mask 'fast': choose one of bernoulli, packed"):
        check_dropout_mask(argparse.Namespace(dropout_mask="fast"))
    with pytest.raises(ValueError, match="--dropout-mask"):
        build_model("t5_transformer_small", dropout_mask="fast")


DROPPING = dict(encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
                decoder_layers=2, tpr_roles=5, dropout=0.1, attention_dropout=0.1, activation_dropout=0.1)
ARCHS = [
    ("t5_transformer_small", {}),
    ("t5_small", {}),
    ("tp_transformer_small", {}),
    ("transformer_gated_small", {}),
    ("etads_base", {}),
]


def count_draws(monkeypatch):
    """Counts the packed draws, and fails on any mask drawn elsewhere (F.dropout, SDPA's dropout)."""
    calls = {"packed": 0}
    real_packed, real_sdpa = dropout_module.packed_keep_mask, F.scaled_dot_product_attention

    def packed(*a, **k):
        calls["packed"] += 1
        return real_packed(*a, **k)

    def no_dropout(*a, **k):
        raise AssertionError("a dropout mask drawn outside modules/dropout.py's packed mask")

    def sdpa(*a, dropout_p=0.0, **k):
        assert dropout_p == 0.0, "SDPA drew an attention-dropout mask"
        return real_sdpa(*a, dropout_p=dropout_p, **k)

    monkeypatch.setattr(dropout_module, "packed_keep_mask", packed)
    monkeypatch.setattr(dropout_module.F, "dropout", no_dropout)
    monkeypatch.setattr(F, "scaled_dot_product_attention", sdpa)
    return calls


@pytest.mark.parametrize("arch,features", ARCHS, ids=[a for a, _ in ARCHS])
def test_every_dropout_draws_the_packed_mask(arch, features, monkeypatch):
    """With ``--dropout-mask packed`` a training step draws no mask anywhere else (F.dropout and
    SDPA's internal dropout would fail), and gives finite gradients."""
    torch.manual_seed(0)
    model, d = build_model(arch, make_dictionary(), dropout_mask="packed", **DROPPING, **features)
    src, lengths, prev = random_batch(d, bsz=3, src_len=12)
    calls = count_draws(monkeypatch)
    model.train()
    out, _ = model(src, lengths, prev)
    out.float().logsumexp(-1).mean().backward()
    assert calls["packed"] > 0
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())


def test_mem2mem_dropouts_draw_the_packed_mask(monkeypatch):
    from helpers import doc_batch

    torch.manual_seed(0)
    model, d = build_model("mem2mem_base", make_dictionary(), dropout_mask="packed", dropout=0.3, embed_dim=16,
                           encoder_hidden_size=8, decoder_hidden_size=12, attention_dim=10, memory_attn_dim=6,
                           memory_slots=4)
    src, lengths, prev = doc_batch(d, [[3, 4, 2], [5], [2, 3]], tgt_len=6)
    calls = count_draws(monkeypatch)
    model.train()
    out, _ = model(src, lengths, prev)
    out.float().logsumexp(-1).mean().backward()
    assert calls["packed"] == 3  # source and target embeddings, the readout


def test_default_mask_is_packed_and_bernoulli_draws_only_torchs_masks(monkeypatch):
    """A training step with the default mask equals one with ``--dropout-mask packed`` named; with
    ``bernoulli`` named no packed mask is drawn (every mask is F.dropout's or SDPA's: the quickstart's
    pinned figures were measured with it), and the step differs from the default's."""
    outs = []
    for extra in ({}, {"dropout_mask": "packed"}, {"dropout_mask": "bernoulli"}):
        torch.manual_seed(0)
        model, d = build_model("t5_small", make_dictionary(), **DROPPING, **extra)
        src, lengths, prev = random_batch(d, bsz=3, src_len=12)
        model.train()
        packed = [m.packed_mask for m in model.modules() if isinstance(m, dropout_module.Drops)]
        assert packed and all(packed) == (extra.get("dropout_mask") != "bernoulli") == any(packed)
        calls = {"packed": 0}
        real = dropout_module.packed_keep_mask

        def counted(*a, **k):
            calls["packed"] += 1
            return real(*a, **k)

        monkeypatch.setattr(dropout_module, "packed_keep_mask", counted)
        torch.manual_seed(5)
        outs.append(model(src, lengths, prev)[0])
        monkeypatch.setattr(dropout_module, "packed_keep_mask", real)
        assert (calls["packed"] > 0) == (extra.get("dropout_mask") != "bernoulli")
    assert torch.equal(outs[0], outs[1]) and not torch.equal(outs[0], outs[2])


def test_the_quickstart_trains_with_torchs_masks():
    """The quickstart's pinned figures (recipes/aclsum/quickstart_check.py) were measured with
    torch's F.dropout masks: its training flags name ``--dropout-mask bernoulli``."""
    import re
    from pathlib import Path

    flags = (Path(__file__).resolve().parents[1] / "recipes/aclsum/quickstart_flags.sh").read_text()
    train = re.search(r"QUICKSTART_TRAIN=\((.*?)\)\n", flags, re.S).group(1)
    assert re.search(r"--dropout-mask bernoulli\b", train)


def test_packed_mask_with_checkpointing_gives_the_gradients_without_it():
    """--checkpoint-activations restores the random state before recomputing a layer: the packed
    masks are drawn again equal, so the gradients are the same bits."""
    grads = []
    for ckpt in (False, True):
        torch.manual_seed(0)
        model, d = build_model("t5_small", make_dictionary(), dropout_mask="packed", checkpoint_activations=ckpt,
                               **DROPPING)
        src, lengths, prev = random_batch(d, bsz=3, src_len=12)
        model.train()
        torch.manual_seed(7)
        model(src, lengths, prev)[0].float().logsumexp(-1).mean().backward()
        grads.append([p.grad for p in model.parameters()])
    for a, b in zip(*grads):
        assert (a is None) == (b is None)
        if a is not None:
            assert torch.equal(a, b)


def test_packed_mask_off_cpu_is_torchs_mask(monkeypatch):
    """Not on a CPU (a meta tensor here, CUDA in use) the packed mask is F.dropout's: the flag's
    default must not change what a GPU run draws."""
    seen = []
    real = dropout_module.F.dropout
    monkeypatch.setattr(dropout_module.F, "dropout", lambda *a, **k: seen.append(a[1]) or real(*a, **k))
    x = torch.empty(4, 4, device="meta")
    y = dropout(x, 0.1, True, packed=True)
    assert y.shape == x.shape and y.device.type == "meta" and seen == [0.1]
