"""What each paper's mechanism does on a document, read through one inspection stage.

A feature declares what it shows of a document in its spec (``FeatureSpec.inspect``, an
:class:`~..modules.features.Inspection`; a model family without a feature spec, Mem2Mem, in its
model class's ``inspection``): ETADS focus (centre and scope per encoder layer, head and query
position), ETADS saliency (gate per source token), information selection (gate per source token and
whether pruning removed it), the copy mechanism (``p_gen`` and the most-attended source position
per output token), the TP-Transformer (role attention per decoder sublayer and output position) and
Mem2Mem (each memory slot's write attention over the sentences), the Topic Assistant (the
document's top topics, their words read from the data folder's topic model by
:func:`add_topic_words`). :func:`teacher_forced` runs one
document through a model once, with every declared watch on, and returns ``{name: value}``; every
model also gives ``attention``, the last decoder layer's cross-attention (head-averaged, as the
backbone returns it) as the ``TOP_K`` source positions each output token weighs most.
:func:`inspect_documents` does so on the reference and on the model's own beam-search output.
Nothing is recorded when nobody inspects: the watches are forward hooks and flags set for one pass.

``fairseq-sum-inspect CKPT [CKPT ...] --data DATA/bin --split test --documents 0,3,7 --html PAGE
[--json OUT]`` writes one self-contained page (:mod:`.page`'s template, nothing loaded from the
network): per document the source as text, each mechanism a layer the reader switches on (token
shading for the gate, saliency and copy attention; a band for focus centre and scope; sentence marks
for memory extraction), the reference and every model's output with per-token ``p_gen`` and role;
hovering an output token highlights the source tokens it attends to. The values are embedded in the
page as JSON (``<script id="values">``), the same as ``--json`` writes (less what
:func:`html_page` leaves out). ``--text FILE`` takes raw documents instead, one a line, encoded with
the tokenizer and BPE the data folder records (no reference: the beam output only).

:func:`check_documents` refuses, before a checkpoint is loaded, a split the data folder lacks and a
document index outside the split; a checkpoint without a mechanism named in ``--show`` is refused
before any model runs.
"""
import argparse
import json
import math
import os
from argparse import Namespace
from dataclasses import dataclass

import torch

from ..scoring.score_inputs import split_size
from . import page
from .plotting import gpt2_pieces

TOP_K = 5  # source positions kept per output token for the hover
RAW = "raw text"  # the split name of --text's documents
# values a page leaves out (--json has them): TPT's role distributions of every sublayer and
# position (N_r per head; megabytes on a long document); the page shows each output token's role
PAGE_OMITS = ("roles",)
SOURCE = ("token", "band", "sentence")  # the layers drawn on the source


def binarized_splits(data):
    """Names of the splits binarized in ``data`` (``SPLIT.*.idx``), sorted."""
    return sorted({name.split(".", 1)[0] for name in os.listdir(data) if name.endswith(".idx")})


def check_documents(data, split, indices, flag="--index"):
    """The number of documents of ``split`` in the binarized folder ``data``; a ``ValueError``
    naming the flag for a folder that is not one, a split it lacks, or an index of ``indices``
    outside ``0..n-1`` (a negative index is refused: it would name the document by another
    number)."""
    if not os.path.isdir(data):
        raise ValueError(f"{data}: no such data folder")
    # a split is a file name's part before its first dot: 'test.src-tgt' prefixes test's files
    n = split_size(data, split) if split in binarized_splits(data) else None
    if n is None:
        have = ", ".join(binarized_splits(data)) or "none"
        raise ValueError(f"--split {split}: no binarized split {split} in {data} (it has: {have})")
    bad = [i for i in indices if not 0 <= i < n]
    if bad:
        raise ValueError(f"{flag} {bad[0]}: the {split} split of {data} has {n} documents "
                         f"(0..{n - 1})")
    return n


# --------------------------------------------------------------------------- the inspection stage
@dataclass
class Run:
    """One watched forward pass: the document ``src`` ``(S,)``, the encoder's output and the
    decoder's ``extra``."""

    src: torch.Tensor
    encoder_out: object = None
    extra: object = None


class Probe:
    """What the watches of one pass set up (:class:`~..modules.features.Inspection`): forward
    hooks, recording flags and readers; :meth:`close` removes the hooks and clears the flags."""

    def __init__(self):
        self.handles, self.switched, self.readers = [], [], []

    def hook(self, module, fn):
        self.handles.append(module.register_forward_hook(fn))

    def pre_hook(self, module, fn):
        self.handles.append(module.register_forward_pre_hook(fn, with_kwargs=True))

    def switch(self, module, attr):
        setattr(module, attr, True)
        self.switched.append((module, attr))

    def read(self, fn):
        self.readers.append(fn)

    def used(self):
        return bool(self.handles or self.switched or self.readers)

    def close(self):
        for h in self.handles:
            h.remove()
        for module, attr in self.switched:
            setattr(module, attr, False)
        self.handles, self.switched = [], []


def declarations(model):
    """``[(name, Inspection)]``: every registered feature's, then the model class's own."""
    from ..modules.features import FEATURES

    found = [(spec.name, spec.inspect) for spec in FEATURES.values() if spec.inspect is not None]
    own = getattr(type(model), "inspection", None)
    return found + ([(type(model).__name__, own)] if own is not None else [])


def exposed(model):
    """``{value name: layer}`` that ``model`` shows (the declarations whose watch finds a module of
    its feature in it), without running it."""
    names = {}
    for _, inspection in declarations(model):
        probe = Probe()
        try:
            inspection.watch(model, probe)
            if probe.used():
                names.update(inspection.exposes)
        finally:
            probe.close()
    return names


def top_attention(attn, k=TOP_K):
    """``attn`` ``(T, S)`` -> per output token ``[[source position, weight], ...]``, the ``k``
    largest weights first."""
    weights, index = attn.float().topk(min(k, attn.size(-1)), dim=-1)
    return [[[int(i), float(w)] for i, w in zip(ii, ww)]
            for ii, ww in zip(index.tolist(), weights.tolist())]


def teacher_forced(model, src, target, eos, side=None):
    """``{name: value}`` of one document: ``model`` run once on ``src`` ``(S,)`` with ``target``
    ``(T,)`` (ending in EOS) as the decoder's input shifted right, every declared watch on; plus
    ``attention`` (:func:`top_attention`) when the backbone returns its cross-attention. ``side``:
    the document's other model inputs (a collated sample's ``net_input`` side data, e.g. the Topic
    Assistant's ``theta``)."""
    device = next(model.parameters()).device
    src, target = src.to(device), target.to(device)
    prev = torch.cat([target.new_tensor([eos]), target[:-1]])[None]
    probe, run = Probe(), Run(src)
    for _, inspection in declarations(model):
        inspection.watch(model, probe)
    probe.hook(model.encoder, lambda mod, inputs, out: setattr(run, "encoder_out", out))
    need = getattr(model.decoder, "need_attn", None)
    model.decoder.need_attn = True
    model.eval()
    try:
        with torch.no_grad():
            _, run.extra = model(src[None], torch.tensor([src.numel()], device=device), prev,
                                 **{k: v.to(device) for k, v in (side or {}).items()})
        values = {}
        for read in probe.readers:
            values.update(read(run))
    finally:
        probe.close()
        model.decoder.need_attn = need
    attn = run.extra.get("attn") if isinstance(run.extra, dict) else None
    attn = attn[0] if isinstance(attn, (list, tuple)) and attn else attn
    if torch.is_tensor(attn):
        values["attention"] = top_attention(attn[0])
    return values


def beam_output(model, task, sample, beam, max_len_b, **decoding):
    """The model's beam-search output of a one-document ``sample`` (token ids, ending in EOS);
    ``decoding``: more of fairseq-generate's options by their names (``min_len``, ``lenpen``,
    ``no_repeat_ngram_size``), read by the task's generator as fairseq-generate's are."""
    from fairseq import utils

    generator = task.build_generator([model], Namespace(beam=beam, max_len_b=max_len_b,
                                                        **decoding))
    if next(model.parameters()).is_cuda:
        sample = utils.move_to_cuda(sample)
    with torch.no_grad():
        return task.inference_step(generator, [model], sample)[0][0]["tokens"].cpu()


TOPIC_WORDS = 8  # words shown per topic


def add_topic_words(docs, data, n=TOPIC_WORDS):
    """Each document's ``topic_words``, ``{topic: [word, ...]}``: the ``n`` most relevant whole
    words (:func:`~..features.topic_assistant.words.top_words`, as analysis/topics.py's PNG lists
    them) of every topic a model shows for it (``topics``), from the topic model of the data folder
    ``data``; a note instead (``topic_words_missing``) where the folder has none that loads."""
    shown = [sorted({k for m in doc["models"] for run in m["runs"].values()
                     for k, _ in run["values"].get("topics", [])}) for doc in docs]
    if not any(shown):
        return
    from ..features.topic_assistant.similarity import load_topic_model
    from ..features.topic_assistant.words import top_words, whole_words

    try:
        dictionary, model = load_topic_model(data)
    except (OSError, ValueError, KeyError) as e:
        for doc in docs:
            doc["topic_words_missing"] = f"{data}: no topic model whose words can be read ({e})"
        return
    mask = whole_words(model, dictionary, data)
    words = {k: top_words(model, dictionary, k, n, mask) for k in set().union(*shown)}
    for doc, mine in zip(docs, shown):
        doc["topic_words"] = {str(k): words[k] for k in mine}


def pieces(dictionary, ids):
    return [dictionary[int(i)] for i in ids]


def as_text(docs, convert):
    """Replaces every token list of ``docs`` by ``convert(tokens)`` (e.g. GPT-2 ids as text)."""
    for doc in docs:
        doc["source"], doc["reference"] = convert(doc["source"]), convert(doc["reference"])
        for model in doc["models"]:
            for run in model["runs"].values():
                run["tokens"] = convert(run["tokens"])


def inspect_documents(models, split, indices, beam=4, max_len_b=60, decoding=None):
    """Per document of ``indices`` in ``split``: ``{"index", "source", "reference", "models":
    [{"name", "layers", "runs": {"output": {"tokens", "values"}, "reference": {...}}}]}``, token
    lists as dictionary pieces, ``layers`` the values the model shows (:func:`exposed`);
    ``models``: ``[(name, model, task)]``, each task with ``split`` loaded (its side data, e.g.
    the Topic Assistant's theta), their dictionaries one; ``decoding``: :func:`beam_output`'s."""
    first = models[0][2]
    src_dict, tgt_dict = first.source_dictionary, first.target_dictionary
    docs = []
    for i in indices:
        item = first.dataset(split)[i]
        src, ref = item["source"], item["target"]  # no reference for raw text
        doc = {"index": i, "source": pieces(src_dict, src),
               "reference": [] if ref is None else pieces(tgt_dict, ref), "models": []}
        for name, model, task in models:
            dataset = task.dataset(split)
            sample = dataset.collater([dataset[i]])
            side = {k: v for k, v in sample["net_input"].items()
                    if k not in ("src_tokens", "src_lengths", "prev_output_tokens")}
            hypo = beam_output(model, task, sample, beam, max_len_b, **(decoding or {}))
            runs = {}
            for run, target in (("output", hypo), ("reference", ref))[:1 if ref is None else 2]:
                runs[run] = {"tokens": pieces(tgt_dict, target),
                             "values": teacher_forced(model, src, target, tgt_dict.eos(), side)}
            doc["models"].append({"name": name, "layers": exposed(model), "runs": runs})
        docs.append(doc)
    return docs


# --------------------------------------------------------------------------------------- the page
CSS = """
.src{max-height:24em;overflow:auto;font-size:.93em;line-height:1.7}
.t{border-radius:2px;padding:0 1px;cursor:default}
.t.att{outline:2px solid #d62728}.t.band{box-shadow:inset 0 -3px #1f77b4}
.t.centre{outline:2px solid #1f77b4}
.sm{font-size:.72em;color:#777;border:1px solid #ccc;border-radius:3px;padding:0 2px;margin:0 2px}
.sm.pick{color:#fff;background:#2ca02c;border-color:#2ca02c}
.out{line-height:1.9;overflow-wrap:anywhere}.out .t{border-bottom:1px dotted #999}
.out sup{color:#1f77b4;font-size:.7em}
.layers label{margin-right:.8em;white-space:nowrap}
"""

JS = r"""
(function(){
  var V=JSON.parse(document.getElementById('values').textContent);
  function toks(d){return document.querySelectorAll('#doc'+d+' .src .t');}
  function clear(d){toks(d).forEach(function(t){t.style.background='';t.title='';
    t.style.textDecoration='';
    t.classList.remove('band','centre','att');});
    document.querySelectorAll('#doc'+d+' .sm').forEach(function(s){s.classList.remove('pick');
      s.title='';});}
  function shade(t,v,rgb){t.style.background='rgba('+rgb+','+Math.max(0,Math.min(1,v))+')';}
  function band(d,m,i,on){var f=focus(d,m);if(!f)return;var ts=toks(d);
    for(var h=0;h<f.mu.length;h++){var mu=f.mu[h][i],s=f.sigma[h][i];
      for(var p=Math.ceil(mu-s);p<=Math.floor(mu+s);p++){if(p>=1&&p<=ts.length)
        ts[p-1].classList.toggle('band',on);}
      var c=Math.round(mu);if(c>=1&&c<=ts.length)ts[c-1].classList.toggle('centre',on);}}
  function focus(d,m){var ms=V[d].models[m],b=Object.keys(ms.layers).filter(function(n){
    return ms.layers[n]==='band';})[0];var f=b&&ms.runs.output.values[b];if(!f)return null;
    var k=Object.keys(f);return f[k[k.length-1]];}
  function layer(d){var r=document.querySelector('input[name=l'+d+']:checked');
    return r?r.value.split(':'):['none'];}
  function draw(d){clear(d);var l=layer(d);if(l[0]==='none')return;var m=+l[0],name=l[1];
    var vals=V[d].models[m].runs.output.values,ts=toks(d);
    var kind=V[d].models[m].layers[name];
    if(name==='copy_source'){var n=new Array(ts.length).fill(0);
      vals.copy_source.forEach(function(j,t){n[j]+=1-vals.p_gen[t];});
      var mx=Math.max.apply(null,n.concat([1e-9]));
      n.forEach(function(v,i){if(ts[i])shade(ts[i],v/mx,'214,39,40');});}
    else if(kind==='token'){var lo=Math.min.apply(null,vals[name]),
      span=Math.max.apply(null,vals[name])-lo||1;
      vals[name].forEach(function(v,i){if(ts[i]){shade(ts[i],(v-lo)/span,'255,170,0');
        ts[i].title=name+' '+v.toFixed(4);}});
      if(name==='gate')(vals.removed||[]).forEach(function(r,i){
        if(r&&ts[i])ts[i].style.textDecoration='line-through';});}
    else if(kind==='band'){var f=focus(d,m),n=new Array(ts.length).fill(0);
      f.mu.forEach(function(row){row.forEach(function(mu){var c=Math.round(mu);
        if(c>=1&&c<=ts.length)n[c-1]+=1;});});var mx=Math.max.apply(null,n.concat([1e-9]));
      n.forEach(function(v,i){shade(ts[i],v/mx,'31,119,180');});}
    else if(kind==='sentence'){var sm=document.querySelectorAll('#doc'+d+' .sm');
      vals[name].forEach(function(row,k){var best=row.indexOf(Math.max.apply(null,row));
        if(sm[best]){sm[best].classList.add('pick');sm[best].title+='slot '+(k+1)+' ';}});
      ts.forEach(function(t){var s=+t.dataset.s,w=0;vals[name].forEach(function(row){
        w=Math.max(w,row[s]||0);});shade(t,w,'44,160,44');});}}
  document.querySelectorAll('.layers input').forEach(function(r){
    r.addEventListener('change',function(){draw(+r.name.slice(1));});});
  document.querySelectorAll('.src .t').forEach(function(t){
    var d=+t.dataset.d;function on(b){var l=layer(d);
      if(l[0]!=='none'&&V[d].models[+l[0]].layers[l[1]]==='band')band(d,+l[0],+t.dataset.i,b);}
    t.addEventListener('mouseenter',function(){on(true);});
    t.addEventListener('mouseleave',function(){on(false);});});
  document.querySelectorAll('.out .t').forEach(function(t){
    var d=+t.dataset.d,m=+t.dataset.m,run=t.dataset.r,i=+t.dataset.i;
    var a=(V[d].models[m].runs[run].values.attention||[])[i]||[];
    function on(b){var ts=toks(d);a.forEach(function(p){if(ts[p[0]])
      ts[p[0]].classList.toggle('att',b);});}
    t.addEventListener('mouseenter',function(){on(true);});
    t.addEventListener('mouseleave',function(){on(false);});});
  // the address can switch layers on and hover a token: #l0=0:gate&hover=0,0,output,3
  location.hash.slice(1).split('&').forEach(function(kv){var p=kv.split('=');
    if(p[0].charAt(0)==='l'){var r=document.querySelector('input[name="'+p[0]+'"][value="'+
      decodeURIComponent(p[1])+'"]');if(r)r.checked=true;}});
  document.querySelectorAll('.layers').forEach(function(l){draw(+l.dataset.d);});
  location.hash.slice(1).split('&').forEach(function(kv){var p=kv.split('=');
    if(p[0]!=='hover')return;var h=decodeURIComponent(p[1]).split(',');
    var t=document.querySelector('.t[data-d="'+h[0]+'"][data-m="'+h[1]+'"][data-r="'+h[2]+
      '"][data-i="'+h[3]+'"]')||document.querySelector('.src .t[data-d="'+h[0]+'"][data-i="'+
      h[1]+'"]');if(t)t.dispatchEvent(new Event('mouseenter'));});
  document.body.setAttribute('data-ready','1');
})();
"""

# the labels of the shipped features' layers (another feature's layer is labelled by its name)
LAYER_NAMES = {"gate": "information-selection gate (shade: from the document's smallest to its "
                       "largest; struck out: removed)",
               "saliency": "ETADS saliency (shade: from the document's smallest to its largest)",
               "copy_source": "copy attention (1 - p_gen)",
               "focus": "ETADS focus (hover a token: its band)",
               "memory": "Mem2Mem memory extraction (green marks: a slot's sentence)"}


def word_text(piece, marked):
    """How a piece reads inside the text: with sentencepiece's word marks (``marked``), the mark
    as a space and a piece without one joined to the word before; else every token a word."""
    if marked:
        return piece.replace("\u2581", " ") if piece.startswith("\u2581") else piece
    return " " + piece


def sentencepiece_marked(doc):
    """Whether the document's pieces carry sentencepiece's word mark."""
    return any(p.startswith("\u2581") for p in doc["source"])


def _source_html(d, doc, sep="<sep>"):
    from html import escape

    marked = sentencepiece_marked(doc)
    out, sent = [f'<span class="sm">1</span>'], 0
    for i, p in enumerate(doc["source"]):
        if p == sep:
            sent += 1
            out.append(f' <span class="sm">{sent + 1}</span>')
            continue
        out.append(f'<span class="t" data-d="{d}" data-i="{i}" data-s="{sent}">'
                   f"{escape(word_text(p, marked))}</span>")
    return "".join(out)


def _output_html(d, m, run, tokens, values, marked):
    """Output tokens: shaded red by their copy share ``1 - p_gen``, their role (1-based) raised
    after them, both in the title."""
    from html import escape

    spans = []
    for i, p in enumerate(tokens):
        notes, style, sup = [], "", ""
        if "p_gen" in values:
            notes.append(f"p_gen {values['p_gen'][i]:.3f}")
            style = f' style="background:rgba(214,39,40,{1 - values["p_gen"][i]:.3f})"'
        if "topic_share" in values:
            notes.append(f"last layer's self-attention on topics "
                         f"{values['topic_share'][-1][i]:.3f}")
        if "role" in values:
            notes.append(f"role {values['role'][i] + 1}")
            sup = f"<sup>{values['role'][i] + 1}</sup>"
        spans.append(f'<span class="t" data-d="{d}" data-m="{m}" data-r="{run}" data-i="{i}" '
                     f'title="{escape("; ".join(notes))}"{style}>'
                     f"{escape(word_text(p, marked))}{sup}</span>")
    return "".join(spans)


def _document_html(d, doc):
    from html import escape

    marked = sentencepiece_marked(doc)
    radios = [f'<label><input type="radio" name="l{d}" value="none" checked>none</label>']
    for m, model in enumerate(doc["models"]):
        for name, kind in model["layers"].items():
            if kind in SOURCE and name != "removed" or \
                    name == "copy_source":
                label = LAYER_NAMES.get(name, f"{name} ({kind})")
                radios.append(f'<label><input type="radio" name="l{d}" value="{m}:{name}">'
                              f'{escape(model["name"])}: {escape(label)}</label>')
    boxes = [f'<div class="box"><h4>reference</h4><p>'
             f'{escape("".join(word_text(p, marked) for p in doc["reference"]))}</p></div>'
             ] if doc["reference"] else []
    for m, model in enumerate(doc["models"]):
        key = f'<span class="key" style="background:{page.color(m)}"></span>'
        runs = model["runs"]
        rows = "".join(
            f'<p class="out"><b>{label}:</b> '
            + _output_html(d, m, run, runs[run]["tokens"], runs[run]["values"], marked) + "</p>"
            for run, label in (("output", "beam output"),
                               ("reference", "reference, teacher-forced")) if run in runs)
        topics = runs["output"]["values"].get("topics")
        if topics:  # the document's topics (0-based, as analysis/topics.py numbers them)
            words = doc.get("topic_words", {})
            rows = ('<p class="sc">topics (theta): ' + "; ".join(
                f"{k} ({v:.2f})" + (f": {escape(' '.join(words[str(k)]))}"
                                    if str(k) in words else "") for k, v in topics)
                + (f" ({escape(doc['topic_words_missing'])})"
                   if "topic_words_missing" in doc else "") + "</p>" + rows)
        boxes.append(f'<div class="box"><h4>{key}{escape(model["name"])}</h4>{rows}</div>')
    return (f'<div class="doc" id="doc{d}"><h3>document {doc["index"]} '
            f'({len(doc["source"])} source tokens)</h3>'
            f'<div class="layers" data-d="{d}">Layer: {"".join(radios)}</div>'
            f'<div class="box src"><h4>source</h4>{_source_html(d, doc)}</div>'
            f'<div class="grid">{"".join(boxes)}</div></div>')


def html_page(docs, title="Mechanisms at work", decoding=""):
    """The page of :func:`inspect_documents`' ``docs``, its values embedded as JSON except those of
    :data:`PAGE_OMITS` and the source layers of the reference run (the page draws the source layers
    of the output run; ``--json`` has them all); ``decoding``: the beam output's options, said in
    the page's introduction."""
    from html import escape

    def kept(m, r, k):
        return k not in PAGE_OMITS and not (r == "reference" and m["layers"].get(k) in SOURCE)

    shown = [dict(doc, models=[dict(m, runs={r: dict(run, values={
        k: v for k, v in run["values"].items() if kept(m, r, k)})
        for r, run in m["runs"].items()}) for m in doc["models"]]) for doc in docs]
    data = json.dumps(shown).replace("</", "<\\/")
    intro = ('<p class="note">Per document: switch a layer on to see a mechanism on the source; '
             "hover an output token to outline (red) the source tokens its last-layer "
             f"cross-attention weighs most (top {TOP_K}). Output tokens are shaded red by their "
             "copy share 1 - p_gen and carry their role raised (argmax of the last decoder "
             "sublayer's head-averaged role attention) where the model has them (title: values). "
             "Values: the model run teacher-forced on its beam output and on "
             f"the reference, embedded below as JSON (without {', '.join(PAGE_OMITS)} and, "
             "for the reference run, the source layers: fairseq-sum-inspect --json has "
             "them)." + (f" Beam output: {escape(decoding, quote=False)}." if decoding else "")
             + "</p>")
    parts = [intro, f'<script type="application/json" id="values">{data}</script>',
             "".join(_document_html(d, doc) for d, doc in enumerate(docs))]
    return page.document(title, page.CSS + CSS, parts, JS)


# ----------------------------------------------------------------------------------------- the CLI
def parse_documents(text):
    """``"0,3,7"`` -> ``[0, 3, 7]``; a ``ValueError`` naming ``--documents`` otherwise."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--documents {text!r}: comma-separated document numbers, such as "
                         "0,3,7") from None
    if not out:
        raise ValueError("--documents: name at least one document")
    if len(set(out)) < len(out):
        raise ValueError(f"--documents {text!r} names a document twice")
    return out


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-sum-inspect", description=__doc__.split("\n")[0])
    p.add_argument("checkpoints", nargs="+", metavar="CKPT")
    p.add_argument("--data", required=True, help="binarized data folder (DATA/bin)")
    p.add_argument("--text", help="raw documents, one a line (encoded as DATA records; no "
                   "references): --documents are its line numbers, 0-based")
    p.add_argument("--split", default="test")
    p.add_argument("--documents", default="0", help="document numbers of the split: 0,3,7")
    p.add_argument("--html", help="write the page here")
    p.add_argument("--json", help="write the values here")
    p.add_argument("--names", help="comma-separated model names (default: checkpoint files)")
    p.add_argument("--title", default="Mechanisms at work", help="the page's title")
    p.add_argument("--show", help="mechanisms every checkpoint must show, e.g. gate,focus "
                   "(default: what each has)")
    p.add_argument("--gpt2-encoder-json", help="with --gpt2-vocab-bpe: BART's GPT-2 ids as text")
    p.add_argument("--gpt2-vocab-bpe")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--max-len-b", type=int, default=60)
    p.add_argument("--min-len", type=int, default=1, help="as fairseq-generate's (the beam "
                   "output equals its hypothesis under the same options)")
    p.add_argument("--lenpen", type=float, default=1.0)
    p.add_argument("--no-repeat-ngram-size", type=int, default=0)
    return p


def _check_args(parser, args):
    if not (args.html or args.json):
        parser.error("give --html PAGE and/or --json OUT")
    if args.beam < 1 or args.max_len_b < 1 or args.min_len < 1:
        parser.error(f"--beam {args.beam} / --max-len-b {args.max_len_b} / --min-len "
                     f"{args.min_len}: at least 1")
    if args.min_len > args.max_len_b:
        parser.error(f"--min-len {args.min_len} is above --max-len-b {args.max_len_b}")
    if args.no_repeat_ngram_size < 0 or not math.isfinite(args.lenpen):
        parser.error(f"--no-repeat-ngram-size {args.no_repeat_ngram_size} (0: off) / --lenpen "
                     f"{args.lenpen}: a count >= 0 and a finite number")
    for path in args.checkpoints:
        if not os.path.isfile(path):
            parser.error(f"{path}: no such checkpoint file")
    outs = [getattr(args, f) for f in ("html", "json") if getattr(args, f)]
    for flag in ("html", "json"):
        path = getattr(args, flag)
        if not path:
            continue
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            parser.error(f"--{flag} {path}: its folder does not exist")
        if os.path.isdir(path):
            parser.error(f"--{flag} {path} is a folder")
        inputs = [*args.checkpoints, args.data]
        if any(os.path.realpath(path) == os.path.realpath(x) for x in inputs) or \
                os.path.realpath(path).startswith(os.path.realpath(args.data) + os.sep):
            parser.error(f"--{flag} {path}: a checkpoint or inside the data folder (an input)")
    gpt2 = [args.gpt2_encoder_json, args.gpt2_vocab_bpe]
    if any(gpt2) and not all(f and os.path.isfile(f) for f in gpt2):
        parser.error("--gpt2-encoder-json and --gpt2-vocab-bpe: give both, as existing files")
    if len(outs) == 2 and os.path.realpath(outs[0]) == os.path.realpath(outs[1]):
        parser.error("--html and --json name one file")
    names = args.names.split(",") if args.names else [os.path.basename(os.path.dirname(
        os.path.abspath(c))) + "/" + os.path.basename(c) for c in args.checkpoints]
    if len(names) != len(args.checkpoints):
        parser.error(f"--names gives {len(names)} names for {len(args.checkpoints)} checkpoints")
    names = [n if names.index(n) == i else f"{n} ({i + 1})" for i, n in enumerate(names)]
    try:
        docs = parse_documents(args.documents)
        if args.text:
            texts = read_texts(args.text, docs)
        else:
            texts = None
            check_documents(args.data, args.split, docs, "--documents")
    except ValueError as e:
        parser.error(str(e))
    return names, docs, texts


def read_texts(path, indices):
    """The lines ``indices`` (0-based) of the raw-text file ``path``, one document a line; a
    ``ValueError`` naming the file for a line it lacks, an empty line or a file that is not
    UTF-8."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"--text {path}: {e}") from None
    bad = [i for i in indices if not 0 <= i < len(lines)]
    if bad:
        raise ValueError(f"--documents {bad[0]}: {path} has {len(lines)} lines "
                         f"(0..{len(lines) - 1})")
    empty = [i for i in indices if not lines[i].strip()]
    if empty:
        raise ValueError(f"--text {path}: line {empty[0] + 1} (document {empty[0]}) is empty")
    return {i: lines[i] for i in indices}


def raw_text_dataset(task, data, texts):
    """A dataset of the raw ``texts`` ({index: line}), encoded as the data folder records it
    (:func:`~..data_folder.text_encoder`: its tokenizer and BPE), without references."""
    from ..data_folder import text_encoder

    encode = text_encoder(data, task.source_dictionary)
    tokens = [encode(texts[i]) for i in sorted(texts)]
    return task.build_dataset_for_inference(tokens, [t.numel() for t in tokens]), sorted(texts)


def load(path, data):
    import fairseq_sum_plugins  # noqa: F401  (registers the task and models)
    from fairseq import checkpoint_utils

    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [path], arg_overrides={"data": data})
    return models[0].cpu().float().eval(), task


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    names, indices, texts = _check_args(parser, args)
    show = [s.strip() for s in (args.show or "").split(",") if s.strip()]
    models, task = [], None
    for name, path in zip(names, args.checkpoints):
        try:
            model, model_task = load(path, args.data)
        except Exception as e:  # fairseq's errors name neither the file nor what it expected
            parser.error(f"{path}: not a checkpoint of this plugin for {args.data} "
                         f"({type(e).__name__}: {e})")
        has = exposed(model)
        missing = [s for s in show if s not in has]
        if missing:
            parser.error(f"{path} shows no {', '.join(missing)} (it shows: "
                         f"{', '.join(has) or 'only attention'})")
        if task is not None and \
                model_task.source_dictionary.symbols != task.source_dictionary.symbols:
            parser.error(f"{path}: another dictionary than {args.checkpoints[0]}")
        task = task or model_task
        if texts is None:
            model_task.load_dataset(args.split)  # with the side data this model reads
        elif getattr(model_task, "side_data_names", None):
            parser.error(f"{path} reads side data ({', '.join(model_task.side_data_names)}), "
                         "which --text documents do not have: inspect a prepared split")
        else:
            try:
                dataset, order = raw_text_dataset(model_task, args.data, texts)
            except ValueError as e:
                parser.error(f"--text {args.text}: {e}")
            model_task.datasets[RAW] = dataset
        models.append((name, model, model_task))
    decoding = dict(min_len=args.min_len, lenpen=args.lenpen,
                    no_repeat_ngram_size=args.no_repeat_ngram_size)
    if texts is None:
        docs = inspect_documents(models, args.split, indices, args.beam, args.max_len_b, decoding)
    else:  # the raw dataset holds the documents in line order
        docs = inspect_documents(models, RAW, range(len(order)), args.beam, args.max_len_b,
                                 decoding)
        for doc, line in zip(docs, order):
            doc["index"] = line
    add_topic_words(docs, args.data)
    if args.gpt2_encoder_json:
        as_text(docs, lambda ids: gpt2_pieces(ids, args.gpt2_encoder_json, args.gpt2_vocab_bpe))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(docs, f)
        print(f"wrote {args.json}")
    if args.html:
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(html_page(docs, args.title, decoding=(
                f"fairseq-generate's --beam {args.beam} --max-len-b {args.max_len_b} --min-len "
                f"{args.min_len} --lenpen {args.lenpen:g} --no-repeat-ngram-size "
                f"{args.no_repeat_ngram_size}")))
        print(f"wrote {args.html} ({len(docs)} documents, {len(models)} models)")


def cli_main():
    main()


if __name__ == "__main__":
    main()
