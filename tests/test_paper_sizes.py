"""The parameter counts the presets' docstrings state beside their papers' (models/bart.py for the
Topic Assistant; TP-Transformer, ETADS and Mem2Mem: their own test files)."""
import re

from helpers import build_model, write_topic_model


def test_topic_assistant_parameters_on_bart_base(tmp_path):
    """TA Table 8 counts the parameters TA adds. At fairseq's bart.base dims, vocab 50,265 and the
    paper's K = 256 topics: SIA's W^v_add (d_m x 64, with bias) and W^a_add (64 x d_m) in each of
    the 6 + 6 + 6 attention blocks, DRM's W_b (K x d_m) in each of the 6 decoder layers (Table 8's
    figures are larger than these equations give: see models/bart.py)."""
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(50265 - 4):
        d.add_symbol(f"w{i}")
    path = write_topic_model(d, str(tmp_path / "topic_model.npz"), k=256)
    model, _ = build_model("bart_base_ta", d, ta_topic_model=path)
    counts = {"sia": 0, "drm": 0, "bart": 0}
    for name, p in model.named_parameters():
        counts[next((k for k in ("sia", "drm") if re.search(rf"\b\w*{k}\b", name)), "bart")] += p.numel()
    sia_block = 768 * 64 + 64 + 64 * 768
    assert counts == {"sia": 18 * sia_block, "drm": 6 * 256 * 768, "bart": 139_420_416}
    assert counts["sia"] + counts["drm"] == 2_950_272
