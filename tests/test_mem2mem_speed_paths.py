"""Mem2Mem's speed paths against the reference beside them (models/mem2mem/model.py).

The batched path (``Mem2MemDecoder.batched_path``) computes what does not depend on the
recurrences over all decoding steps at once; the model's outputs, auxiliary losses and gradients
equal the reference's (step by step) within float32 rounding, in every setting of Table 2."""
import pytest
import torch
from helpers import build_model, doc_batch, make_dictionary
from tolerances import MODEL_ULPS, fp32_close


torch.set_num_threads(1)

# each speed path: the modules that have its switch
PATHS = {"batched_path": ("decoder",)}
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
