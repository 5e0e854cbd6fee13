"""The inspection stage (inspection/stage.py, ``FeatureSpec.inspect``) and ``fairseq-sum-inspect``.

Every feature's values, read through the stage, equal what a direct forward pass computes (the
module's own recording flag, a hand computation from the layer's inputs, or the encoder's output);
a toy feature registered here with an inspection declaration shows on the page; bad input is refused
by name before any model runs; the page loads in headless Chromium with no network resource.
"""
import dataclasses
import json
import os
import re
import shutil
import subprocess

import pytest
import torch
import torch.nn.functional as F

import test_features
from helpers import DIMS, REPO, build_model, load_script, make_dictionary, save_fresh_checkpoint
from fairseq_sum_plugins.inspection import stage
from fairseq_sum_plugins.inspection.page import cli
from fairseq_sum_plugins.inspection.page import render as page
from fairseq_sum_plugins.inspection.loader import load_checkpoint
from fairseq_sum_plugins.modules.features import FEATURES, Inspection, register_feature

torch.set_num_threads(1)

FEATURE_SET = dict(focus_layers="1", saliency_layers="2", gate=True, pointer_generator=True)


def document(d, n=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(d.nspecial, len(d) - 1, (n,), generator=g)
    src[4] = d.index("<sep>")
    src[-1] = d.eos()
    tgt = torch.randint(d.nspecial, len(d) - 1, (5,), generator=g)
    tgt[-1] = d.eos()
    return src, tgt


def inspected_with_inputs(model, cls, src, tgt, eos):
    """The stage's values of one pass, and ``{module name: its forward's inputs}`` of every module
    of type ``cls`` in that pass (recorded independently of the stage)."""
    seen, handles = {}, []
    for name, m in model.named_modules():
        if isinstance(m, cls):
            handles.append(m.register_forward_hook(
                lambda mod, inputs, out, name=name: seen.__setitem__(name, inputs)))
    try:
        return stage.teacher_forced(model, src, tgt, eos), seen
    finally:
        for h in handles:
            h.remove()


def tiny(arch="tp_transformer_small", **features):
    torch.manual_seed(0)
    model, d = build_model(arch, make_dictionary(), **dict(DIMS["transformer"], **features))
    return model.eval(), d


def test_focus_equals_the_layers_own_record():
    model, d = tiny(**FEATURE_SET)
    src, tgt = document(d)
    values = stage.teacher_forced(model, src, tgt, d.eos())
    from fairseq_sum_plugins.features.etads_focus import FocusBias

    focus, = [m for m in model.encoder.modules() if isinstance(m, FocusBias)]  # --focus-layers 1
    focus.keep_focus = True  # the module's own record of ETADS eq. 6
    with torch.no_grad():
        model.encoder(src[None], torch.tensor([src.numel()]))
    mu, sigma, m = focus.last_focus
    focus.keep_focus, focus.last_focus = False, None
    (name, got), = values["focus"].items()
    assert got == {"mu": mu[0].tolist(), "sigma": sigma[0].tolist(), "m": src.numel()}
    assert len(got["mu"]) == 4 and len(got["mu"][0]) == src.numel()  # heads x positions


@pytest.mark.parametrize("threshold", [0.0, 0.5])
def test_gate_and_removed_tokens_equal_the_encoder_and_algorithm_1(threshold):
    model, d = tiny(**dict(FEATURE_SET, gate_threshold=threshold))
    src, tgt = document(d, n=15)
    values = stage.teacher_forced(model, src, tgt, d.eos())
    gate = model.encoder.info_gate
    from fairseq_sum_plugins.modules.encoder_out import EncoderOut

    gate.threshold = 0.0  # nothing removed: the encoder output holds every position's state
    with torch.no_grad():
        view = EncoderOut.of(model.encoder(src[None], torch.tensor([src.numel()])))
        g = torch.sigmoid(gate.proj(view.enc))[0, :, 0]  # IS eq. 3, one gate
    gate.threshold = threshold
    assert values["gate"] == g.tolist()
    # Algorithm 1 by hand: removed where G <= t, except the document's largest gate
    removed = [int(v <= threshold and i != int(g.argmax())) for i, v in enumerate(g.tolist())]
    assert values["removed"] == removed
    assert (sum(removed) > 0) == (threshold > 0)  # tol: random gates straddle 0.5 on 15 tokens


def test_p_gen_and_copy_source_equal_the_copy_distributions_inputs(monkeypatch):
    from fairseq_sum_plugins.features import copy_mechanism

    model, d = tiny(**dict(FEATURE_SET, saliency_layers="1"))  # the last layer ungated
    src, tgt = document(d)
    seen = {}
    mix = copy_mechanism.mix_copy_distribution

    def spy(logits, p_gen, gamma, src_ids, vocab_size):
        seen.update(p_gen=p_gen, gamma=gamma)
        return mix(logits, p_gen, gamma, src_ids, vocab_size)

    values = stage.teacher_forced(model, src, tgt, d.eos())
    monkeypatch.setattr(copy_mechanism, "mix_copy_distribution", spy)
    prev = torch.cat([tgt.new_tensor([d.eos()]), tgt[:-1]])[None]
    model.decoder.need_attn = True
    with torch.no_grad():
        _, extra = model(src[None], torch.tensor([src.numel()]), prev)
    assert values["p_gen"] == seen["p_gen"][0, :, 0].tolist() and len(values["p_gen"]) == 5
    assert values["copy_source"] == seen["gamma"][0].argmax(-1).tolist()
    # the hover: the top source positions of the last layer's cross-attention
    attn = extra["attn"][0][0]
    assert values["attention"] == stage.top_attention(attn)
    assert [p for p, _ in values["attention"][0]] == attn[0].topk(stage.TOP_K).indices.tolist()


def test_roles_equal_tpt_eq_5_from_each_sublayers_input():
    model, d = tiny(**FEATURE_SET)
    src, tgt = document(d)
    from fairseq_sum_plugins.features.tp_transformer import TPRBinding

    values, inputs = inspected_with_inputs(model, TPRBinding, src, tgt, d.eos())
    fillers = {name: x[0] for name, x in inputs.items()}
    assert set(values["roles"]) == set(fillers) and len(fillers) == 6  # 2 enc + 2 x 2 dec
    for name, filler in fillers.items():
        m = model.get_submodule(name)
        assert not m.keep_role_attn  # switched off after the pass: nothing kept when not inspecting
        by_hand = F.softmax(m.role_proj(filler).unflatten(-1, (m.num_heads, m.num_roles)), -1)
        assert torch.allclose(torch.tensor(values["roles"][name]), by_hand[0], atol=1e-6)  # tol: float32 softmax of the same logits in another order
    last = torch.tensor(values["roles"]["decoder.layers.1.cross_attn_binding"])
    assert values["role"] == last.mean(1).argmax(-1).tolist() and len(values["role"]) == 5


def test_saliency_equals_etads_eq_9_from_the_layers_queries_and_keys():
    model, d = tiny(**FEATURE_SET)
    src, tgt = document(d)
    from fairseq_sum_plugins.features.etads_saliency import SaliencyGate

    values, inputs = inspected_with_inputs(model, SaliencyGate, src, tgt, d.eos())
    seen = [(model.get_submodule(name), x[0], x[1]) for name, x in inputs.items()]

    def heads(mod, lin, x):  # W x on the concatenated heads, split again
        merged = x.transpose(1, 2).flatten(2) @ lin.weight.T
        return merged.unflatten(-1, (mod.num_heads, mod.head_dim)).transpose(1, 2)

    per_layer = [torch.sigmoid(heads(mod, mod.w_h, q) @ heads(mod, mod.w_s, k).transpose(-1, -2))
                 [0].mean((0, 1)) for mod, q, k in seen]
    assert len(seen) == 1  # --saliency-layers 2
    assert torch.allclose(torch.tensor(values["saliency"]), torch.stack(per_layer).mean(0),  # tol: float32 mean over layers in another order
                          atol=1e-6)


def test_the_hover_of_a_saliency_layer_is_the_weights_after_its_gate(monkeypatch):
    """The last decoder layer gated by ETADS saliency (--saliency-layers 2 of 2): the hover's
    weights are ``mean_h(g_h * softmax_h)`` (ETADS eq. 10, the weights the layer uses), by hand from
    the queries, keys, mask and gate that layer's attention received. Was: the softmax before the
    gate (what the backbone returns)."""
    from fairseq_sum_plugins.modules.attention import MultiheadAttention

    model, d = tiny(**FEATURE_SET)
    src, tgt = document(d)
    seen, explicit = [], MultiheadAttention._explicit_attention

    def spy(self, q, k, v, mask, causal, dropout_p, gate=None):
        if gate is not None and q.size(1) == 4:  # the layer's own call, all heads
            seen.append((self.scaling, q, k, mask, gate))
        return explicit(self, q, k, v, mask, causal, dropout_p, gate)

    monkeypatch.setattr(MultiheadAttention, "_explicit_attention", spy)
    values = stage.teacher_forced(model, src, tgt, d.eos())
    (scaling, q, k, mask, gate), = seen
    logits = (q @ k.transpose(-1, -2)).double() * scaling
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool \
            else logits + mask.double()
    by_hand = (logits.softmax(-1) * gate.double()).mean(1)[0]  # (T, S)
    assert values["attention_gated"] is True
    got = values["attention"]
    assert [[p for p, _ in row] for row in got] == by_hand.topk(stage.TOP_K).indices.tolist()
    assert torch.allclose(torch.tensor([[w for _, w in row] for row in got], dtype=torch.double),
                          by_hand.topk(stage.TOP_K).values, atol=1e-6)  # tol: float32 against float64
    ungated = logits.softmax(-1).mean(1)[0]
    assert not torch.allclose(by_hand, ungated, atol=1e-3)  # tol: the gate changes the weights
    assert not model.decoder.layers[-1].cross_attn.__dict__.get("_explicit_attention")  # undone


def test_memory_equals_the_encoders_write_attention():
    torch.manual_seed(0)
    model, d = build_model("mem2mem", make_dictionary(), **DIMS["mem2mem"])
    model.eval()
    src, tgt = document(d)
    values = stage.teacher_forced(model, src, tgt, d.eos())
    with torch.no_grad():
        enc = model.encoder(src[None], torch.tensor([src.numel()]))
        prev = torch.cat([tgt.new_tensor([d.eos()]), tgt[:-1]])[None]
        _, extra = model(src[None], torch.tensor([src.numel()]), prev)
    assert values["memory"] == enc["write_attn"][0, :, :2].tolist()  # 4 slots x 2 sentences
    assert values["memory_read"] == extra["read_attn"][0].tolist()  # 5 steps x 4 slots
    assert len(values["memory_read"]) == 5
    assert stage.exposed(model) == {"memory": "sentence", "memory_read": "output",
                                    "p_gen": "output", "copy_source": "output"}


@pytest.mark.parametrize("arch", ["mem2mem", "hred_base"])
def test_mem2mems_copy_switch_equals_its_copy_distributions_inputs(arch, monkeypatch):
    """Mem2Mem's pointer-generator (on by default, M2M eq. 13-15): ``p_gen`` is the ``z_t`` its
    output distribution mixes with, ``copy_source`` the source position (of ``src_tokens``, past
    capped sentences) of its largest ``gamma``; also without a memory (hred_base). Was: never
    read."""
    from fairseq_sum_plugins.models.mem2mem import model as m2m

    torch.manual_seed(0)  # at most 3 tokens a sentence: gamma's columns are not the positions
    model, d = build_model(arch, make_dictionary(), **dict(DIMS["mem2mem"],
                                                           max_sentence_tokens=3))
    model.eval()
    src, tgt = document(d)
    seen = {}
    mix = m2m.mix_copy_distribution

    def spy(logits, z, gamma, src_ids, vocab_size):
        seen.update(z=z, gamma=gamma)
        return mix(logits, z, gamma, src_ids, vocab_size)

    monkeypatch.setattr(m2m, "mix_copy_distribution", spy)
    values = stage.teacher_forced(model, src, tgt, d.eos())
    assert values["p_gen"] == seen["z"][0, :, 0].tolist() and len(values["p_gen"]) == 5
    # gamma is over the kept tokens; by hand: sentences 0..4 (up to its <sep>) and 5..10, the
    # first 3 tokens of each kept
    kept = [0, 1, 2, 5, 6, 7]
    assert seen["gamma"].size(-1) == len(kept)
    assert values["copy_source"] == [kept[j] for j in seen["gamma"][0].argmax(-1).tolist()]
    assert ("memory" in values) == (arch == "mem2mem")


def test_a_model_without_the_features_exposes_none():
    model, _ = tiny(arch="t5_transformer_small")
    assert stage.exposed(model) == {}
    model, _ = tiny(**FEATURE_SET)
    assert set(stage.exposed(model)) == {"focus", "saliency", "gate", "removed", "p_gen",
                                     "copy_source", "roles", "role"}


# --- a toy feature declares what it shows, and the page shows it -------------------------------


def _watch_norm(model, probe):
    """The toy's inspection: the norm of every row of the encoder output it leaves."""
    from fairseq_sum_plugins.modules.encoder_out import EncoderOut

    if getattr(model.encoder, "toy_drop", None) is not None:
        probe.read(lambda run: {"toy_norm": EncoderOut.of(run.encoder_out).enc[0].norm(
            dim=-1).tolist()})


# tests/test_features.py's toy encoder-output feature (drops each document's last position), with
# an inspection declared
TOY = dataclasses.replace(test_features.DROP,
                          inspect=Inspection({"toy_norm": "token"}, _watch_norm))


@pytest.fixture
def toy_feature():
    register_feature(TOY)
    yield TOY
    FEATURES.pop(TOY.name)


def values_of(page):
    m = re.search(r'<script type="application/json" id="values">(.*?)</script>', page, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def fresh(toy_data, path, arch, *extra):
    return save_fresh_checkpoint(
        [toy_data, "--task", "summarization", "--arch", arch, "--encoder-layers", "2",
         "--decoder-layers", "2", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
         "--encoder-attention-heads", "4", *extra, "--criterion", "summarization_loss",
         "--optimizer", "adam", "--lr", "0.001"], str(path), "SummarizationLoss")


def test_a_new_feature_shows_on_the_page(toy_feature, toy_data, tmp_path):
    ckpt = fresh(toy_data, tmp_path / "toy.pt", "t5_transformer_small", "--toy-drop-last", "True")
    page, out = tmp_path / "p.html", tmp_path / "v.json"
    cli.main([toy_data, "--path", ckpt, "--path", ckpt, "--split", "test", "--documents", "2,0", "--html",
            str(page), "--json", str(out), "--max-len-b", "4", "--beam", "2", "--names", "toy,toy"])
    html = page.read_text()
    docs = json.loads(out.read_text())
    shown = values_of(html)
    for doc in shown:  # the page draws the output run's source layers
        for m in doc["models"]:
            ref = m["runs"]["reference"]["values"]
            assert "toy_norm" not in ref
            ref["toy_norm"] = m["runs"]["output"]["values"]["toy_norm"]
    assert shown == docs and [doc["index"] for doc in docs] == [2, 0]
    assert docs[0]["models"][0]["layers"] == {"toy_norm": "token"}
    assert [m["name"] for m in docs[0]["models"]] == ["toy", "toy (2)"]  # one name each
    assert 'value="0:toy_norm">toy: toy_norm (token)</label>' in html  # a layer to switch on
    model, task = load_checkpoint(ckpt, toy_data, fp32=True)
    task.load_dataset("test")
    item = task.dataset("test")[2]
    with torch.no_grad():
        enc = model.encoder(item["source"][None], torch.tensor([item["source"].numel()]))
    from fairseq_sum_plugins.modules.encoder_out import EncoderOut

    norms = EncoderOut.of(enc).enc[0].norm(dim=-1).tolist()
    assert len(norms) == item["source"].numel() - 1  # the toy dropped the last position
    for run in ("output", "reference"):  # the encoder's, whichever target the decoder reads
        assert docs[0]["models"][0]["runs"][run]["values"]["toy_norm"] == norms
    assert docs[0]["source"] == [task.source_dictionary[int(t)] for t in item["source"]]
    assert docs[0]["models"][0]["runs"]["reference"]["tokens"] == docs[0]["reference"]


# --- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("extra, message", [
    (["--split", "validation"], "--split validation: no binarized split validation in {data} "
     "(it has: test, train, valid)"),
    (["--documents", "0,12"], "--documents 12: the test split of {data} has 12 documents"),
    (["--documents", "-1"], "--documents -1: the test split of {data} has 12 documents"),
    (["--documents", "0,x"], "--documents '0,x': comma-separated document numbers"),
    (["--documents", "3,3"], "--documents '3,3' names a document twice"),
    (["--documents", ","], "--documents: name at least one document"),
    (["--beam", "0"], "--beam 0 / --max-len-b 60 / --min-len 1: at least 1"),
    (["--names", "a,b"], "--names gives 2 names for 1 checkpoints"),
    (["--html", "/no/such/p.html"], "--html /no/such/p.html: its folder does not exist"),
    (["--html", "{data}/test.src-tgt.src.idx"], "--html {data}/test.src-tgt.src.idx lies inside "
     "DATA {data}, which this command reads; nothing written"),
    (["--html", "{ckpt}"], "--html {ckpt} is --path {ckpt}, which this command reads"),
    (["--html", "{tmp}/x", "--json", "{tmp}/x"], "--json {tmp}/x and --html {tmp}/x name one file"),
    ([], "give --html PAGE and/or --json OUT"),
])
def test_bad_input_is_refused_by_name_before_loading(toy_data, tmp_path, extra, message, capsys):
    ckpt = tmp_path / "not-a-checkpoint.pt"
    ckpt.write_text("loading this would fail")
    fmt = dict(data=toy_data, ckpt=ckpt, tmp=tmp_path)
    args = [toy_data, "--path", str(ckpt), "--split", "test"]
    args += [a.format(**fmt) for a in extra]
    if extra and "--html" not in extra:
        args += ["--json", str(tmp_path / "v.json")]
    with pytest.raises(SystemExit):
        cli.main(args)
    assert message.format(**fmt) in capsys.readouterr().err


def test_a_missing_checkpoint_is_refused_by_name(toy_data, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main([toy_data, "--path", str(tmp_path / "no.pt"), "--json", str(tmp_path / "v.json")])
    assert f"{tmp_path / 'no.pt'}: no such checkpoint file" in capsys.readouterr().err


def test_a_file_that_is_no_checkpoint_is_refused_by_name(toy_data, tmp_path, capsys):
    junk = tmp_path / "junk.pt"
    junk.write_text("junk")  # was fairseq's KeyError traceback
    with pytest.raises(SystemExit):
        cli.main([toy_data, "--path", str(junk), "--json", str(tmp_path / "v.json")])
    assert f"{junk}: not a checkpoint of this plugin for {toy_data} (" in capsys.readouterr().err


def test_a_checkpoint_without_the_asked_feature_is_refused_before_running(
        toy_data, tmp_path, monkeypatch, capsys):
    ckpt = fresh(toy_data, tmp_path / "plain.pt", "t5_transformer_small")

    def run(*args, **kwargs):
        raise AssertionError("a model ran")

    monkeypatch.setattr(cli, "inspect_documents", run)
    with pytest.raises(SystemExit):
        cli.main([toy_data, "--path", ckpt, "--show", "gate", "--json", str(tmp_path / "v.json")])
    assert f"{ckpt} shows no gate (it shows: only attention)" in capsys.readouterr().err


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def long_document(n=3000):
    """A document of ``n`` source tokens with every kind of layer (values made up: the page only
    draws them)."""
    src = [f"w{i % 50}" for i in range(n - 1)] + ["</s>"]
    for i in range(100, n - 1, 200):
        src[i] = "<sep>"
    out = ["w1", "w2", "</s>"]
    attention = [[[i * 7 % n, 0.5]] for i in range(3)]
    values = {"gate": [(i % 10) / 10 for i in range(n)], "removed": [int(i % 10 == 0)
                                                                       for i in range(n)],
              "focus": {"layers.0.focus": {"mu": [[i + 1.0 for i in range(n)]],
                                           "sigma": [[2.0] * n], "m": n}},
              "memory": [[0.1] * 15, [0.9] + [0.0] * 14], "p_gen": [0.9, 0.2, 0.5],
              "copy_source": [3, 5, 7], "role": [0, 1, 2], "attention": attention}
    layers = {"gate": "token", "removed": "token", "focus": "band", "memory": "sentence",
              "p_gen": "output", "copy_source": "output", "role": "output"}
    return {"index": 0, "source": src, "reference": out, "models": [
        {"name": "m</script>", "layers": layers,
         "runs": {"output": {"tokens": out, "values": values},
                  "reference": {"tokens": out, "values": values}}}]}


def test_the_page_escapes_text_and_keeps_its_values():
    doc = long_document(40)
    html = page.html_page([doc])
    shown = values_of(html)[0]  # "</script>" in a name does not end the data
    assert shown["models"][0]["runs"]["output"] == doc["models"][0]["runs"]["output"]
    assert set(shown["models"][0]["runs"]["reference"]["values"]) == {
        "p_gen", "copy_source", "role", "attention"}  # its source layers: the output run's
    run = doc["models"][0]["runs"]["output"]
    run["values"] = dict(run["values"], roles={"decoder.layers.0.self_attn_binding": [[[1.0]]]})
    shown = values_of(page.html_page([doc]))[0]["models"][0]["runs"]["output"]["values"]
    assert "roles" not in shown and shown["role"] == [0, 1, 2]  # --json keeps them
    assert "m&lt;/script&gt;" in html and "m</script>" not in html


def test_the_heading_counts_the_end_of_sentence_and_focus_names_its_encoder_layer():
    """The heading's count is of the source tokens shown, </s> included (the prepared split's
    note counts pieces without it); a focus layer is named "encoder layer 1", not by its module
    ("layer layers.0.focus")."""
    html = page.html_page([long_document(40)])
    assert "(40 source tokens, &lt;/s&gt; included)" in html
    assert ">m&lt;/script&gt;: " in html and "encoder layer 1</label>" in html
    assert "layers.0.focus</label>" not in html
    assert page.band_layer_name("layers.11.focus") == "encoder layer 12"
    assert page.band_layer_name("other") == "other"


@pytest.mark.skipif(CHROMIUM is None,
                    reason="no chromium (Debian: apt-get install chromium) to load the page")
def test_a_long_page_runs_in_a_headless_browser_without_network(tmp_path):
    from test_compare_html import external_references

    path = tmp_path / "p.html"
    html = page.html_page([long_document()])
    path.write_text(html)
    assert external_references(html) == []
    for layer in ("gate", "focus", "memory", "copy_source"):
        proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               "--proxy-server=127.0.0.1:9",
                               "--user-data-dir=" + str(tmp_path / "profile"), "--dump-dom",
                               path.as_uri() + f"#l0=0:{layer}&hover=0,0,output,1"],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "HOME": str(tmp_path)})
        assert proc.returncode == 0, proc.stderr[-2000:]
        dom = proc.stdout
        assert 'data-ready="1"' in dom  # the script ran to its end on 3000 tokens
        assert 'class="t att"' in dom  # the hovered output token's attended source token
        if layer == "focus":  # the legend names the encoder layer, as the switch does
            named, raw = "encoder layer 1" in dom, "layer layers.0.focus" in dom
            assert named and not raw, (named, raw)
        marks = {"gate": "line-through", "focus": "31, 119, 180", "memory": "sm pick",
                 "copy_source": "background: rgba(214, 39, 40"}
        assert marks[layer] in dom, layer


@pytest.mark.parametrize("arch, family, extra", [
    ("t5_small", "transformer", {}),  # the T5 cell
    ("bart_base_gated", "bart", dict(encoder_normalize_before=False,
                                     decoder_normalize_before=False)),
])
def test_every_backbone_shows_its_gate_and_roles(arch, family, extra):
    """BART's layers run time-first: the values are still one per source token and output token."""
    from fairseq_sum_plugins.features.tp_transformer import TPRBinding
    from fairseq_sum_plugins.modules.encoder_out import EncoderOut

    torch.manual_seed(0)
    feats = dict(gate=True, gate_threshold=0.0, tpr="discrete", tpr_roles=5, **extra)
    model, d = build_model(arch, make_dictionary(), **dict(DIMS[family], **feats))
    model.eval()
    src, tgt = document(d)
    values, inputs = inspected_with_inputs(model, TPRBinding, src, tgt, d.eos())
    fillers = {name: x[0] for name, x in inputs.items()}
    with torch.no_grad():
        view = EncoderOut.of(model.encoder(src[None], torch.tensor([src.numel()])))
        g = torch.sigmoid(model.encoder.info_gate.proj(view.enc))[0, :, 0]
    assert values["gate"] == g.tolist() and len(values["gate"]) == src.numel()
    last = [n for n in fillers if n.startswith("decoder.")][-1]
    m = model.get_submodule(last)
    by_hand = F.softmax(m.role_proj(fillers[last]).unflatten(-1, (m.num_heads, m.num_roles)), -1)
    assert torch.allclose(torch.tensor(values["roles"][last]), by_hand.reshape(5, 4, 5), atol=1e-6)  # tol: float32 softmax of the same logits in another order
    assert len(values["role"]) == 5 and len(values["attention"]) == 5


def test_topics_and_topic_share_equal_theta_and_a_hand_computation(tmp_path, tiny_overrides):
    """The Topic Assistant: the document's top topics are theta's largest (TEMA's n = 3 of this
    model); with every decoder self-attention query projection zeroed, output position t (1-based)
    attends uniformly to the n topics and its t visible positions (TA Fig. 3(b)), so its share on
    the topics is n / (n + t) in every layer."""
    from helpers import theta_for, write_topic_model

    d = make_dictionary()
    torch.manual_seed(0)
    model, _ = build_model("transformer_ta_small", d, **dict(
        tiny_overrides, topic_model=write_topic_model(d, str(tmp_path / "phi.npz"))))
    model.eval()
    src, tgt = document(d)
    theta = theta_for(1)
    values = stage.teacher_forced(model, src, tgt, d.eos(), side={"theta": theta})
    top = theta[0].sort(descending=True, stable=True)
    n = model.decoder.topic.n
    assert values["topics"] == [[int(k), float(v)] for k, v in zip(top.indices[:n],
                                                                    top.values[:n])]
    with torch.no_grad():
        for layer in model.decoder.layers:
            inner = layer.self_attn.in_proj.out_features // 3
            layer.self_attn.in_proj.weight[:inner] = 0
            layer.self_attn.in_proj.bias[:inner] = 0
    share = stage.teacher_forced(model, src, tgt, d.eos(), side={"theta": theta})["topic_share"]
    hand = [n / (n + t) for t in range(1, 6)]
    assert len(share) == 2 and all(layer == pytest.approx(hand, rel=1e-6) for layer in share)  # tol: float32 softmax sums against the float64 hand share
    assert values["topic_share"][0] != pytest.approx(hand, rel=1e-3)  # tol: a share that differs, not a rounding; random weights give another share


def ta_checkpoint(toy_data, tmp_path):
    """A copy of the toy data with a 4-topic model and its theta, and a fresh Topic Assistant
    checkpoint (TEMA's n = 2) that reads it: ``(data, checkpoint)``."""
    from preprocess.topic_model import main as topic_model_main

    data = str(tmp_path / "bin")
    shutil.copytree(toy_data, data)
    topic_model_main(["fit", data, "--topics", "4", "--iters", "5"])
    return data, fresh(data, tmp_path / "ta.pt", "transformer_ta_small", "--side-data", "theta",
                       "--ta-topics-n", "2")


def test_each_checkpoint_reads_the_split_with_its_own_side_data(toy_data, tmp_path):
    """A plain model first, then a Topic Assistant model that reads theta: the second is run with
    its own task's data (the first's has no theta; was the Topic Assistant's 'need the document's
    topic proportions' error), and its topics are the document's theta."""
    import numpy as np

    data, ta = ta_checkpoint(toy_data, tmp_path)
    plain = fresh(data, tmp_path / "plain.pt", "t5_transformer_small")
    out = tmp_path / "v.json"
    cli.main([data, "--path", plain, "--path", ta, "--documents", "3", "--json", str(out), "--beam", "1",
            "--max-len-b", "3"])
    values = json.loads(out.read_text())[0]["models"][1]["runs"]["output"]["values"]
    theta = torch.from_numpy(np.load(os.path.join(data, "test.theta.npy"))[3])
    top = theta.sort(descending=True, stable=True)
    assert values["topics"] == [[int(k), float(v)] for k, v in zip(top.indices[:2],
                                                                    top.values[:2])]


def test_raw_text_documents_are_encoded_as_the_data_records_and_shown(toy_data, tmp_path):
    """--text: a word-level data folder records no tokenizer or BPE, so a line's words are its
    tokens; no reference, so only the beam output is run; the values equal a direct pass."""
    ckpt = fresh(toy_data, tmp_path / "gate.pt", "transformer_gated_small")
    text = tmp_path / "docs.txt"
    text.write_text("the cat sat on mat\n\nred ball in park\n")
    out, page = tmp_path / "v.json", tmp_path / "p.html"
    cli.main([toy_data, "--path", ckpt, "--text", str(text), "--documents", "2", "--json", str(out),
            "--html", str(page), "--beam", "1", "--max-len-b", "3"])
    doc, = json.loads(out.read_text())
    assert doc["index"] == 2 and doc["source"] == ["red", "ball", "in", "park", "</s>"]
    assert doc["reference"] == [] and list(doc["models"][0]["runs"]) == ["output"]
    model, task = load_checkpoint(ckpt, toy_data, fp32=True)
    d = task.source_dictionary
    run = doc["models"][0]["runs"]["output"]
    direct = stage.teacher_forced(model, torch.tensor([d.index(p) for p in doc["source"]]),
                              torch.tensor([d.index(p) for p in run["tokens"]]), d.eos())
    assert run["values"] == direct and "gate" in direct
    assert "<h4>reference</h4>" not in page.read_text()


@pytest.mark.parametrize("documents, content, message", [
    ("1", "a b\n\nc d\n", "line 2 (document 1) is empty"),
    ("3", "a b\nc d\n", "--documents 3: {text} has 2 lines (0..1)"),
    ("0", b"\xff\xfe bad", "--text {text}: 'utf-8' codec can't decode"),
])
def test_bad_raw_text_is_refused_by_name_before_loading(toy_data, tmp_path, documents, content,
                                                        message, capsys):
    text = tmp_path / "docs.txt"
    text.write_bytes(content if isinstance(content, bytes) else content.encode())
    ckpt = tmp_path / "not-a-checkpoint.pt"
    ckpt.write_text("loading this would fail")
    with pytest.raises(SystemExit):
        cli.main([toy_data, "--path", str(ckpt), "--text", str(text), "--documents", documents,
                "--json", str(tmp_path / "v.json")])
    assert message.format(text=text) in capsys.readouterr().err


def test_raw_text_is_refused_for_a_model_that_reads_side_data(toy_data, tmp_path, capsys):
    data, ta = ta_checkpoint(toy_data, tmp_path)
    text = tmp_path / "docs.txt"
    text.write_text("the cat sat\n")
    with pytest.raises(SystemExit):  # was the Topic Assistant's ValueError while running
        cli.main([data, "--path", ta, "--text", str(text), "--json", str(tmp_path / "v.json")])
    assert f"{ta} reads side data (theta), which --text documents do not have" in \
        capsys.readouterr().err


def test_the_page_lists_each_topic_with_the_words_of_the_data_folders_topic_model(toy_data, tmp_path):
    """The Topic Assistant's topics come with their words (inspection/topics.py's top_words over the
    data folder's topic model), in the JSON and on the page; a data folder whose topic model is
    gone says so instead."""
    from fairseq_sum_plugins.inspection.topics import load_topic_model, top_words, whole_words

    data, ta = ta_checkpoint(toy_data, tmp_path)
    out, page_path = tmp_path / "v.json", tmp_path / "p.html"
    cli.main([data, "--path", ta, "--documents", "3", "--json", str(out), "--html", str(page_path),
            "--beam", "1", "--max-len-b", "3"])
    doc = json.loads(out.read_text())[0]
    topics = [k for k, _ in doc["models"][0]["runs"]["output"]["values"]["topics"]]
    dictionary, model = load_topic_model(data)
    mask = whole_words(model, dictionary, data)
    assert doc["topic_words"] == {str(k): top_words(model, dictionary, k, stage.TOPIC_WORDS, mask)
                                  for k in sorted(topics)}
    assert all(doc["topic_words"][str(k)] for k in topics)
    html = page_path.read_text()
    k = topics[0]
    assert f"{k} (" in html and " ".join(doc["topic_words"][str(k)]) in html
    # the model loads its topic model where it was trained; a data folder given without one
    del doc["topic_words"]
    stage.add_topic_words([doc], str(tmp_path))
    assert "topic_words" not in doc and "no topic model whose words can be read" in doc["topic_words_missing"]
    assert "no topic model whose words" in page.html_page([doc])


@pytest.mark.slow
def test_the_beam_output_is_fairseq_generates_hypothesis_under_the_same_options(toy_data, tmp_path):
    """--beam, --max-len-b, --min-len, --lenpen and --no-repeat-ngram-size are fairseq-generate's:
    the page's beam output of each document is the H- line of fairseq-generate run with them."""
    import sys

    ckpt = fresh(toy_data, tmp_path / "m.pt", "tp_transformer_small")
    options = ["--beam", "3", "--max-len-b", "9", "--min-len", "6", "--lenpen", "0.5",
               "--no-repeat-ngram-size", "2"]
    out = tmp_path / "v.json"
    cli.main([toy_data, "--path", ckpt, "--documents", "0,1,2,3", "--json", str(out), "--html",
            str(tmp_path / "p.html"), "--title", "Seed <1>", *options])
    assert "<h1>Seed &lt;1&gt;</h1>" in (tmp_path / "p.html").read_text()
    docs = json.loads(out.read_text())
    assert ("Beam output: fairseq-generate's --beam 3 --max-len-b 9 --min-len 6 --lenpen 0.5 "
            "--no-repeat-ngram-size 2.") in (tmp_path / "p.html").read_text()
    gen = subprocess.run([sys.executable, "-m", "fairseq_cli.generate", toy_data, "--user-dir",
                          os.path.join(REPO, "fairseq_sum_plugins"), "--task", "summarization",
                          "--path", ckpt, "--gen-subset", "test", "--batch-size", "1", "--cpu",
                          *options], capture_output=True, text=True, cwd=str(tmp_path))
    assert gen.returncode == 0, gen.stderr[-2000:]
    hyps = {line.split("\t")[0][2:]: line.split("\t")[2] for line in gen.stdout.splitlines()
            if line.startswith("H-")}
    for doc in docs:
        tokens = doc["models"][0]["runs"]["output"]["tokens"]
        assert tokens[-1] == "</s>" and " ".join(tokens[:-1]) == hyps[str(doc["index"])]
        assert len(tokens) - 1 >= 6  # --min-len held
    # the options change the output (else this test would hold for any options)
    cli.main([toy_data, "--path", ckpt, "--documents", "0,1,2,3", "--json", str(out), "--beam", "3",
            "--max-len-b", "9"])
    plain = [d["models"][0]["runs"]["output"]["tokens"] for d in json.loads(out.read_text())]
    assert plain != [d["models"][0]["runs"]["output"]["tokens"] for d in docs]


@pytest.mark.parametrize("flags, message", [
    (["--min-len", "0"], "--min-len 0: at least 1"),
    (["--min-len", "70"], "--min-len 70 is above --max-len-b 60"),
    (["--no-repeat-ngram-size", "-1"], "--no-repeat-ngram-size -1 (0: off)"),
    (["--lenpen", "nan"], "--lenpen nan: a count >= 0 and a finite number")])
def test_bad_decoding_options_are_refused_by_name(toy_data, tmp_path, capsys, flags, message):
    ckpt = tmp_path / "c.pt"
    ckpt.write_bytes(b"x")
    with pytest.raises(SystemExit):
        cli.main([toy_data, "--path", str(ckpt), "--json", str(tmp_path / "v.json"), *flags])
    assert message in capsys.readouterr().err


# --- the data folder's cuts -----------------------------------------------------------------------


def with_limits(toy_data, tmp_path, **options):
    """A copy of the toy data whose prepare_args.json records ``options`` (as fairseq-sum-prepare
    writes them: word-level, no tokenizer or BPE)."""
    data = str(tmp_path / "bin")
    shutil.copytree(toy_data, data)
    with open(os.path.join(data, "prepare_args.json"), "w", encoding="utf-8") as f:
        json.dump({"options": options}, f)
    return data


def test_raw_text_is_cut_at_the_data_folders_source_limit_and_the_page_says_so(toy_data, tmp_path):
    """--text: a line is cut where fairseq-sum-prepare cut the folder's splits (its
    --max-src-tokens, 3 here), not at the model's positions; the page says from how many pieces.
    Was: 'red ball in park' given whole."""
    data = with_limits(toy_data, tmp_path, max_src_tokens=3, max_tgt_tokens=64)
    ckpt = fresh(data, tmp_path / "gate.pt", "transformer_gated_small")
    text = tmp_path / "docs.txt"
    text.write_text("the cat sat on mat\nred ball\n")
    out, page_path = tmp_path / "v.json", tmp_path / "p.html"
    cli.main([data, "--path", ckpt, "--text", str(text), "--documents", "0,1", "--json", str(out),
              "--html", str(page_path), "--beam", "1", "--max-len-b", "3"])
    long, short = json.loads(out.read_text())
    assert long["source"] == ["the", "cat", "sat", "</s>"] and long["source_cut"] == [5, 3]
    assert short["source"] == ["red", "ball", "</s>"] and "source_cut" not in short
    assert "cut from 5 to 3 pieces as fairseq-sum-prepare cut its splits (--max-src-tokens 3)" in \
        page_path.read_text()


def test_the_cut_is_fairseq_sum_prepares():
    from preprocess.prepare import SENT_SEP, WORD_BOUNDARY, truncate

    g = torch.Generator().manual_seed(0)
    alphabet = ["a", "b", SENT_SEP, WORD_BOUNDARY]
    for _ in range(300):
        n = int(torch.randint(0, 12, (1,), generator=g))
        pieces = [alphabet[int(i)] for i in torch.randint(0, 4, (n,), generator=g)]
        limit = int(torch.randint(-1, 12, (1,), generator=g))
        assert cli.cut_pieces(list(pieces), limit) == truncate(list(pieces), limit), (pieces, limit)


def test_a_reference_at_the_folders_limit_is_said_to_be_cut(toy_data, tmp_path):
    """A reference of the split with as many pieces as fairseq-sum-prepare's --max-tgt-tokens is
    said (most likely) cut; a shorter one is not. Was: shown as whole."""
    plain = fresh(toy_data, tmp_path / "plain.pt", "t5_transformer_small")
    model, task = load_checkpoint(plain, toy_data, fp32=True)
    task.load_dataset("test")
    n = [task.dataset("test")[i]["target"].numel() - 1 for i in range(2)]  # pieces without EOS
    data = with_limits(toy_data, tmp_path, max_src_tokens=400, max_tgt_tokens=max(n))
    out, page_path = tmp_path / "v.json", tmp_path / "p.html"
    cli.main([data, "--path", plain, "--documents", "0,1", "--json", str(out), "--html",
              str(page_path), "--beam", "1", "--max-len-b", "2"])
    docs = json.loads(out.read_text())
    longest = n.index(max(n))
    assert docs[longest].get("reference_at_limit") is True
    html = page_path.read_text()
    assert (f"reference (the prepared split&#x27;s {max(n)} pieces: fairseq-sum-prepare kept at "
            f"most {max(n)} (--max-tgt-tokens {max(n)}), so it is most likely cut there)") in html
    if min(n) < max(n) - 1:
        assert "reference_at_limit" not in docs[1 - longest]


def test_a_bad_prepare_args_is_refused_by_name_before_loading(toy_data, tmp_path, capsys):
    data = with_limits(toy_data, tmp_path, max_src_tokens="many")
    ckpt = tmp_path / "c.pt"
    ckpt.write_bytes(b"x")
    with pytest.raises(SystemExit):
        cli.main([data, "--path", str(ckpt), "--json", str(tmp_path / "v.json")])
    assert (f"{data}/prepare_args.json: options.max_src_tokens = 'many' is not a whole number"
            in capsys.readouterr().err)


# --- what each colour means, and how large ------------------------------------------------------


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium (Debian: apt-get install chromium) to load the page")


def browse(html, tmp_path, address="", measure=""):
    """The DOM of the page ``html`` after its script ran in headless Chromium (no network), opened
    at ``#address``; ``measure``: a script run after the page's, which may write to the DOM."""
    path = tmp_path / "browse.html"
    if measure:
        html = html.replace("</body></html>", f"<script>{measure}</script></body></html>")
    path.write_text(html)
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--proxy-server=127.0.0.1:9",
                           "--window-size=1300,2000", "--user-data-dir=" + str(tmp_path / "prof"),
                           "--dump-dom", path.as_uri() + ("#" + address if address else "")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'data-ready="1"' in proc.stdout
    return proc.stdout


def every_layer(n=300):
    """:func:`long_document` with saliency (other values in the reference run), the copy share of
    two output tokens on one source token, the Topic Assistant's topic share of two layers and
    Mem2Mem's read weights."""
    doc = long_document(n)
    model = doc["models"][0]
    values = model["runs"]["output"]["values"]
    values.update(gate=[0.3 + (i % 11) / 100 for i in range(n)], saliency=[0.2] * n,
                  p_gen=[0.1, 0.2, 0.5], copy_source=[3, 3, 7],
                  topic_share=[[0.1, 0.5, 0.9], [0.25, 0.3, 0.4]],
                  memory_read=[[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
    model["layers"].update(saliency="token", topic_share="output", memory_read="output")
    model["runs"]["reference"]["values"] = dict(values, saliency=[0.7] * n, p_gen=[0.6, 0.6, 0.6])
    return doc


def shade_of(dom, i, rgb):
    """The alpha of source token ``i``'s background of colour ``rgb`` in the DOM."""
    m = re.search(rf'<span class="t[^"]*" data-d="0" data-i="{i}" data-s="\d+"[^>]* style="[^"]*'
                  rf'background: rgba\({rgb}, ([0-9.]+)\)', dom)
    if m is None:  # alpha 1 is written rgb(...)
        m = re.search(rf'data-i="{i}" data-s="\d+"[^>]* style="[^"]*background: rgb\({rgb}\)',
                      dom)
        return 1.0 if m else None
    return float(m.group(1))


def legend(dom):
    return re.search(r'<div class="legend" id="legend0">(.*?)</div></div>', dom, re.S).group(1)


@needs_chromium
@pytest.mark.parametrize("layer, numbers, words", [
    ("gate", ("0", "0.5", "1"), "largest over the gate's heads"),
    ("saliency", ("0", "0.5", "1"), "mean over the heads, the output positions of the run"),
    ("focus", ("0", "0.5", "1"), "how many (head, query position) pairs"),  # one centre each
    ("memory", ("0", "0.5", "1"), "the largest write weight of its sentence over the r slots"),
    ("copy_source", ("0", "0.85", "1.7"), "the sum of the copy shares 1 - p_gen"),  # 0.9 + 0.8
])
def test_every_source_layer_has_a_colour_bar_with_numbers_and_says_what_it_draws(
        tmp_path, layer, numbers, words):
    dom = browse(page.html_page([every_layer()]), tmp_path, f"l0=0:{layer}")
    got = legend(dom)
    lo, mid, hi = numbers
    assert (f'<span class="n">{lo}</span><span class="grad"' in got
            and f'<span class="mid">{mid}</span></span><span class="n">{hi}</span>' in got), got
    assert words in got


def test_every_output_shade_has_a_colour_bar_on_its_fixed_scale():
    html = page.html_page([every_layer()])
    bar = page.colour_bar(page.RED, 0, 1)
    assert f"copy share 1 - p_gen {bar}" in html
    for k in (1, 2):  # each decoder layer of the topic share
        assert f'value="topic_share:{k - 1}">topic share, decoder layer {k} ' \
               f"{page.colour_bar(page.PURPLE, 0, 1)}" in html
    assert '<span class="n">0</span>' in bar and '<span class="mid">0.5</span></span>' \
        '<span class="n">1</span>' in bar


@needs_chromium
def test_a_gate_is_shaded_on_its_fixed_scale_and_each_token_after_a_sentence_mark_its_own(
        tmp_path):
    """Gates of 0.30-0.40: a gate of 0.35 is shaded 0.35 (was: stretched to the document's range,
    0.5); the token after a <sep> (position 101) gets its own gate, 0.32 (was: its neighbour's,
    the page counted tokens without the sentence marks)."""
    dom = browse(page.html_page([every_layer()]), tmp_path, "l0=0:gate")
    assert shade_of(dom, 5, "255, 127, 14") == 0.35  # 0.3 + 5/100
    assert shade_of(dom, 101, "255, 127, 14") == 0.32  # 0.3 + (101 % 11)/100
    assert shade_of(dom, 0, "255, 127, 14") == 0.3


@needs_chromium
def test_a_layer_of_the_decoder_is_drawn_from_the_run_said_at_its_bar(tmp_path):
    """Saliency is 0.2 in the beam output's run and 0.7 in the reference run: each is drawn from
    its own run, said at the colour bar; hovering a reference token draws the reference run's
    (was: the beam output's, under the reference run's attention)."""
    html = page.html_page([every_layer()])
    dom = browse(html, tmp_path, "l0=0:saliency")
    assert shade_of(dom, 5, "255, 127, 14") == 0.2
    assert "drawn from the beam output's run" in legend(dom)
    dom = browse(html, tmp_path, "l0=0:saliency&r0=reference")
    assert shade_of(dom, 5, "255, 127, 14") == 0.7
    assert "drawn from the reference run" in legend(dom)
    dom = browse(html, tmp_path, "l0=0:saliency&hover=0,0,reference,1")
    assert shade_of(dom, 5, "255, 127, 14") == 0.7
    assert "drawn from the reference run" in legend(dom)
    # the copy share of the reference run: its own p_gen (0.4 each: 0.8 on token 3)
    dom = browse(html, tmp_path, "l0=0:copy_source&r0=reference")
    assert shade_of(dom, 3, "214, 39, 40") == 0.8  # on the scale 0..1 (the output run's: 1.7)
    # the encoder's gate is one value for both runs, said so
    dom = browse(html, tmp_path, "l0=0:gate&r0=reference")
    assert "the encoder's: the same for both runs" in legend(dom)


@needs_chromium
def test_every_layer_of_the_topic_share_shades_the_outputs(tmp_path):
    html = page.html_page([every_layer()])
    for k, share in enumerate([[0.1, 0.5, 0.9], [0.25, 0.3, 0.4]]):
        dom = browse(html, tmp_path, f"o0-0=topic_share:{k}")
        for i, v in enumerate(share):
            assert re.search(rf'data-r="output" data-i="{i}"[^>]*background: rgba\(148, 103, 189, '
                             rf'{v}\)', dom), (k, i)


def test_memory_read_weights_are_drawn_as_a_table_on_0_1():
    html = page.html_page([every_layer()])
    read = [[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]]  # output tokens x slots
    assert html.count("Mem2Mem memory read Psi (M2M eq. 7)") == 2  # both runs
    for t, row in enumerate(read):
        for k, v in enumerate(row):
            assert f'style="background:rgba({page.GREEN},{v:.3f})" title="w{t + 1}: slot {k + 1} ' \
                   f'{v:.3f}"' in html.replace("&lt;/s&gt;", "w3")


def test_the_copy_share_shades_the_outputs_of_each_run():
    html = page.html_page([every_layer()])
    for run, p_gen in (("output", [0.1, 0.2, 0.5]), ("reference", [0.6] * 3)):
        for i, p in enumerate(p_gen):
            assert re.search(rf'data-r="{run}" data-i="{i}" title="[^"]*" style="background:'
                             rf'rgba\({page.RED},{1 - p:.3f}\)"', html), (run, i)


@needs_chromium
def test_the_pieces_of_a_word_touch(tmp_path):
    """'agree' + 'd' read 'agreed': the second piece starts where the first ends, in the source and
    in an output (was: a gap, each token's padding)."""
    doc = every_layer(40)
    doc["source"][10:13] = ["\u2581agree", "d", "\u2581to"]
    doc["models"][0]["runs"]["output"]["tokens"] = ["\u2581agree", "d", "</s>"]
    doc["models"][0]["runs"]["output"]["values"].pop("role")
    measure = """
      function gap(a,b){return b.getBoundingClientRect().left-a.getBoundingClientRect().right;}
      var s=document.querySelector('.src .t[data-i="10"]'),t=document.querySelector(
        '.src .t[data-i="11"]'),u=document.querySelector('.src .t[data-i="12"]');
      var o=document.querySelector('.out .t[data-r="output"][data-i="0"]'),
        p=document.querySelector('.out .t[data-r="output"][data-i="1"]');
      document.body.setAttribute('data-gaps',[gap(s,t),gap(t,u),gap(o,p)].join(','));"""
    dom = browse(page.html_page([doc]), tmp_path, "", measure)
    gaps = [float(g) for g in re.search(r'data-gaps="([^"]+)"', dom).group(1).split(",")]
    assert abs(gaps[0]) < 0.5 and abs(gaps[2]) < 0.5, gaps  # tol: subpixel layout
    assert gaps[1] > 2, gaps  # a word's space before 'to'
    assert re.search(r'data-i="10" data-s="0"[^>]*>agree</span><span class="t" data-d="0" '
                     r'data-i="11" data-s="0"[^>]*>d</span> <span', dom)


def test_mem2mem_outputs_are_shaded_by_their_copy_share(toy_data, tmp_path):
    """A Mem2Mem checkpoint (pointer-generator on by default): its outputs carry p_gen, shaded
    1 - p_gen, its copy layer and its read weights are on the page (was: unshaded)."""
    from helpers import save_fresh_checkpoint

    ckpt = save_fresh_checkpoint(
        [toy_data, "--task", "summarization", "--arch", "mem2mem_base", "--embed-dim", "16",
         "--encoder-hidden-size", "8", "--decoder-hidden-size", "12", "--memory-slots", "3",
         "--criterion", "summarization_loss", "--optimizer", "adam", "--lr", "0.001"],
        str(tmp_path / "m2m.pt"), "SummarizationLoss")
    out, page_path = tmp_path / "v.json", tmp_path / "p.html"
    cli.main([toy_data, "--path", ckpt, "--documents", "0", "--json", str(out), "--html",
              str(page_path), "--beam", "1", "--max-len-b", "3"])
    values = json.loads(out.read_text())[0]["models"][0]["runs"]["output"]["values"]
    html = page_path.read_text()
    for i, p in enumerate(values["p_gen"]):
        assert re.search(rf'data-r="output" data-i="{i}" title="copy share 1 - p_gen '
                         rf'{1 - p:.3f}[^"]*" style="background:rgba\({page.RED},{1 - p:.3f}\)"',
                         html), i
    assert 'value="0:copy_source">' in html and 'value="0:memory">' in html
    assert "Mem2Mem memory read Psi" in html and len(values["memory_read"][0]) == 3


# --- the committed pages ----------------------------------------------------------------------------


def make_pages():
    return load_script("docs", "inspect", "make_pages.py")


@pytest.mark.parametrize("name", ["quickstart.html", "xsum-papers.html"])
def test_a_committed_page_is_as_new_as_its_generator(name):
    """docs/inspect's pages record the digest of what made them (make_pages.py, the page's code and
    assets); a change to any of them without making the pages again fails here."""
    tool = make_pages()
    with open(os.path.join(REPO, "docs", "inspect", name), encoding="utf-8") as f:
        recorded = tool.recorded_digest(f.read())
    assert recorded == tool.generator_digest(), (
        f"docs/inspect/{name} is older than its generator: make it again with "
        "OMP_NUM_THREADS=1 python docs/inspect/make_pages.py --xsum-sample XSUM_TEST.jsonl")


def test_the_digest_changes_with_each_generator_file(tmp_path):
    tool = make_pages()
    for rel in tool.GENERATOR_FILES:
        os.makedirs(tmp_path / os.path.dirname(rel), exist_ok=True)
        shutil.copy(os.path.join(REPO, rel), tmp_path / rel)
    digest = tool.generator_digest(str(tmp_path))
    assert digest == tool.generator_digest()
    for rel in tool.GENERATOR_FILES:
        with open(tmp_path / rel, "a", encoding="utf-8") as f:
            f.write(" ")
        assert tool.generator_digest(str(tmp_path)) != digest, rel
        digest = tool.generator_digest(str(tmp_path))
    html = '<html lang="en"><head><meta charset="utf-8"><title>'
    page_path = tmp_path / "p.html"
    page_path.write_text(html)
    tool.stamp(str(page_path))
    assert tool.recorded_digest(page_path.read_text()) == tool.generator_digest()
    assert tool.recorded_digest(html) is None
