"""The page of ``fairseq-sum-inspect``: one self-contained HTML file of the documents of
:func:`.stage.inspect_documents` (the template of :mod:`fairseq_sum_plugins.evaluation.page`,
nothing loaded from the network).

Per document the source with a switch of source layers, the reference, and per model its outputs
(beam output and reference, each run teacher-forced) with a switch of output shades. Each drawn
quantity is named at its layer by what is drawn and has a colour bar with numbers
(``assets/layers.json``, :data:`SPECS`): a fixed range is shaded as it is (a gate of 0.35: 0.35), a
count or sum from 0 to the document's largest (at least 1). A source layer computed from the
decoder (saliency, copy) is drawn from one run, said at its bar (a switch; hovering an output token
draws its own run's). Mem2Mem's read weights are a table per run; TPT's role is raised after each
token; hovering an output token outlines the source tokens its last decoder layer's
cross-attention weighs most (after the saliency gate where it has one). The pieces of a word touch;
a source or reference at the data folder's cut is said to be cut.

The values are embedded as JSON (``<script id="values">``), ``--json``'s less :data:`PAGE_OMITS` and
the reference run's source layers equal to the beam output run's. The script and style are
package data: ``assets/inspect.js``, ``assets/inspect.css``.
"""
import json
import re
from html import escape
from importlib import resources

from fairseq_sum_plugins.evaluation import page

from ..stage import TOP_K

# values a page leaves out (--json has them): TPT's role distributions of every sublayer and
# position (N_r per head; megabytes on a long document); the page shows each output token's role
PAGE_OMITS = ("roles",)
SOURCE = ("token", "band", "sentence")  # the layers drawn on the source


def _asset(name):
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


CSS = _asset("inspect.css")

JS = _asset("inspect.js")

# what each layer draws: its label, its sentence, its scale ([lo, hi] fixed; "count": 0 to the
# document's largest, at least 1; "range": the document's smallest to its largest), its colour and
# whether it is computed from the decoder (one value per run); "unknown": a feature's this page
# does not know ({name}, {kind} filled in)
SPECS = json.loads(_asset("layers.json"))
SOURCE_LAYERS, OUTPUT_SHADES = SPECS["source"], SPECS["output"]
RED, GREEN, PURPLE = (OUTPUT_SHADES["p_gen"]["rgb"], SOURCE_LAYERS["memory"]["rgb"],
                      OUTPUT_SHADES["topic_share"]["rgb"])


def source_spec(name, kind):
    """The spec of a source layer (:data:`SPECS`)."""
    spec = SOURCE_LAYERS.get(name) or SPECS["unknown"]
    return {k: v.format(name=name, kind=kind) if isinstance(v, str) else v
            for k, v in spec.items()}


def word_text(piece, marked):
    """How a piece reads inside the text: with sentencepiece's word marks (``marked``), the mark
    as a space and a piece without one joined to the word before; else every token a word."""
    if marked:
        return piece.replace("\u2581", " ") if piece.startswith("\u2581") else piece
    return " " + piece


def sentencepiece_marked(doc):
    """Whether the document's pieces carry sentencepiece's word mark."""
    return any(p.startswith("\u2581") for p in doc["source"])


def _token(text, attrs, inner_end=""):
    """A token's span with the word's leading space outside it: the pieces of one word touch (no
    shaded space, no gap between them)."""
    body = text.lstrip(" ")
    lead = text[:len(text) - len(body)]
    if not body:  # a piece that is only a word mark
        lead, body = "", text
    return f"{escape(lead)}<span {attrs}>{escape(body)}{inner_end}</span>"


def _source_html(d, doc, sep="<sep>"):
    marked = sentencepiece_marked(doc)
    out, sent = ['<span class="sm" data-k="0">1</span>'], 0
    for i, p in enumerate(doc["source"]):
        if p == sep:
            sent += 1
            out.append(f' <span class="sm" data-k="{sent}">{sent + 1}</span>')
            continue
        out.append(_token(word_text(p, marked), f'class="t" data-d="{d}" data-i="{i}" '
                                                f'data-s="{sent}"'))
    return "".join(out)


def colour_bar(rgb, lo, hi):
    """A colour bar from ``lo`` to ``hi`` with its numbers at both ends and the middle."""
    mid = (lo + hi) / 2
    return (f'<span class="cb"><span class="n">{lo:g}</span><span class="grad" style="background:'
            f'linear-gradient(to right,rgba({rgb},0),rgba({rgb},1))"><span class="mid">{mid:g}'
            f'</span></span><span class="n">{hi:g}</span></span>')


def output_shades(values):
    """``[(key, spec, per-token values)]`` an output run can be shaded by."""
    out = []
    if "p_gen" in values:
        out.append(("p_gen", OUTPUT_SHADES["p_gen"], [1 - v for v in values["p_gen"]]))
    for k, row in enumerate(values.get("topic_share", [])):
        spec = dict(OUTPUT_SHADES["topic_share"])
        spec["label"] = spec["label"].format(k=k + 1)
        out.append((f"topic_share:{k}", spec, row))
    return out


def _output_html(d, m, run, tokens, values, marked, shade):
    """Output tokens, shaded by ``shade`` (a key of :func:`output_shades`), every shade's value and
    the role (1-based, also raised after the token) in the title."""
    shades = output_shades(values)
    spans = []
    for i, p in enumerate(tokens):
        notes, style, sup = [], "", ""
        for key, spec, row in shades:
            notes.append(f"{spec['label']} {row[i]:.3f}")
            if key == shade:
                style = f' style="background:rgba({spec["rgb"]},{min(max(row[i], 0), 1):.3f})"'
        if "role" in values:
            notes.append(f"role {values['role'][i] + 1}")
            sup = f"<sup>{values['role'][i] + 1}</sup>"
        spans.append(_token(word_text(p, marked),
                            f'class="t" data-d="{d}" data-m="{m}" data-r="{run}" data-i="{i}" '
                            f'title="{escape("; ".join(notes))}"{style}', sup))
    return "".join(spans)


def _memory_read_html(tokens, read, marked):
    """Mem2Mem's read weights ``Psi`` (output tokens x slots) as a table: a column per output
    token, a row per slot, each cell shaded on [0, 1]."""
    head = "".join(f"<th>{escape(word_text(p, marked).strip() or p)}</th>" for p in tokens)
    rows = "".join(
        f"<tr><td>slot {k + 1}</td>" + "".join(
            f'<td style="background:rgba({GREEN},{min(max(row[k], 0), 1):.3f})" '
            f'title="{escape(word_text(tokens[t], marked).strip())}: slot {k + 1} {row[k]:.3f}">'
            "</td>" for t, row in enumerate(read)) + "</tr>"
        for k in range(len(read[0]) if read else 0))
    return f'<div class="mr"><table><tr><th></th>{head}</tr>{rows}</table></div>'


def _limit_note(doc, key, flag):
    limit = doc.get("limits", {}).get("src" if key == "source" else "tgt")
    if doc.get(f"{key}_at_limit"):
        return (f" (the prepared split's {len(doc[key]) - 1} pieces: fairseq-sum-prepare kept at "
                f"most {limit} ({flag} {limit}), so it is most likely cut there)")
    return ""


def _model_box(d, m, model, marked):
    key = f'<span class="key" style="background:{page.color(m)}"></span>'
    runs = model["runs"]
    out_values = runs["output"]["values"]
    shades = output_shades(out_values)
    default = shades[0][0] if shades else None
    parts = []
    if shades:
        radios = [f'<label><input type="radio" name="o{d}-{m}" value="none"'
                  f'{"" if default else " checked"}>no shade</label>']
        for key_, spec, _ in shades:
            scale = spec["scale"]
            radios.append(
                f'<label title="{escape(spec["what"])}"><input type="radio" name="o{d}-{m}" '
                f'value="{key_}"{" checked" if key_ == default else ""}>{escape(spec["label"])} '
                f'{colour_bar(spec["rgb"], *scale)}</label>')
        what = "; ".join(f"{spec['label']}: {spec['what']}" for _, spec, _ in shades[:2])
        parts.append(f'<div class="oshade" data-d="{d}" data-m="{m}">Shade outputs by: '
                     f'{"".join(radios)}<div class="what">{escape(what)}</div></div>')
    if "role" in out_values:
        parts.append('<p class="what">raised number: the token\'s TPT role, 1-based (argmax of the '
                     "last decoder sublayer's head-averaged role attention)</p>")
    topics = out_values.get("topics")
    if topics:  # the document's topics (0-based, as inspection/topics.py numbers them)
        words = model.get("_topic_words", {})
        parts.append('<p class="sc">topics (theta): ' + "; ".join(
            f"{k} ({v:.2f})" + (f": {escape(' '.join(words[str(k)]))}"
                                if str(k) in words else "") for k, v in topics)
            + (f" ({escape(model['_topic_words_missing'])})"
               if "_topic_words_missing" in model else "") + "</p>")
    for run, label in (("output", "beam output"), ("reference", "reference, teacher-forced")):
        if run not in runs:
            continue
        values = runs[run]["values"]
        parts.append(f'<p class="out"><b>{label}:</b> '
                     + _output_html(d, m, run, runs[run]["tokens"], values, marked, default)
                     + "</p>")
        if values.get("memory_read"):
            parts.append(
                f'<details class="mem" open><summary>{label}: Mem2Mem memory read Psi (M2M eq. 7) '
                f'{colour_bar(GREEN, 0, 1)}</summary><div class="what">each output token\'s '
                "read weights over the r memory slots (a column per output token, a row per "
                "slot; each column sums to 1)</div>"
                + _memory_read_html(runs[run]["tokens"], values["memory_read"], marked)
                + "</details>")
    gated = " (after its saliency gate)" if out_values.get("attention_gated") else ""
    parts.append(f'<p class="what">hover an output token: the {TOP_K} source tokens its last '
                 f"decoder layer's cross-attention{gated} weighs most, outlined red (that run's "
                 "own weights)</p>")
    return f'<div class="box"><h4>{key}{escape(model["name"])}</h4>{"".join(parts)}</div>'


def band_layer_name(layer):
    """A band layer's module (``layers.0.focus``: ETADS focus sits in the encoder's
    self-attention) as a reader names it: ``encoder layer 1``."""
    found = re.match(r"layers\.(\d+)\.", layer)
    return f"encoder layer {int(found.group(1)) + 1}" if found else layer


def layer_options(model):
    """``[(value, spec)]`` of a model's source layers (value ``name`` or ``focus:LAYER``), those
    its beam output's run has values of."""
    values = model["runs"]["output"]["values"]
    out = []
    for name, kind in model["layers"].items():
        if name not in values or not (kind in SOURCE and name != "removed"
                                      or name == "copy_source"):
            continue
        if kind == "band":
            for i, layer in enumerate(values[name]):
                spec = source_spec(name, kind)
                spec["label"] += f", {band_layer_name(layer)}"
                out.append((f"{name}:{layer}", spec))
        else:
            out.append((name, source_spec(name, kind)))
    return out


def _document_html(d, doc):
    marked = sentencepiece_marked(doc)
    radios = [f'<label><input type="radio" name="l{d}" value="none" checked>none</label>']
    for m, model in enumerate(doc["models"]):
        for value, spec in layer_options(model):
            radios.append(f'<label title="{escape(spec["what"])}"><input type="radio" '
                          f'name="l{d}" value="{m}:{value}">{escape(model["name"])}: '
                          f'{escape(spec["label"])}</label>')
    has_ref = any("reference" in m["runs"] for m in doc["models"])
    runs = (f'<div class="runs">Source layers of a run (saliency, copy): <label><input '
            f'type="radio" name="r{d}" value="output" checked>beam output\'s run</label><label>'
            f'<input type="radio" name="r{d}" value="reference">reference run</label> '
            "(hovering an output token draws its own run's)</div>") if has_ref else ""
    ref_note = escape(_limit_note(doc, "reference", "--max-tgt-tokens"))
    ref = escape("".join(word_text(p, marked) for p in doc["reference"]))
    boxes = [f'<div class="box"><h4>reference{ref_note}</h4><p>{ref}</p></div>'
             ] if doc["reference"] else []
    for m, model in enumerate(doc["models"]):
        model = dict(model, _topic_words=doc.get("topic_words", {}))
        if "topic_words_missing" in doc:
            model["_topic_words_missing"] = doc["topic_words_missing"]
        boxes.append(_model_box(d, m, model, marked))
    cut = doc.get("source_cut")
    note = (f", cut from {cut[0]} to {cut[1]} pieces as fairseq-sum-prepare cut its splits "
            f"(--max-src-tokens {doc.get('limits', {}).get('src', cut[1])})" if cut
            else _limit_note(doc, "source", "--max-src-tokens"))
    return (f'<div class="doc" id="doc{d}"><h3>document {doc["index"]} '
            f'({len(doc["source"])} source tokens, &lt;/s&gt; included{escape(note)})</h3>'
            f'<div class="layers" data-d="{d}">Source layer: {"".join(radios)}</div>{runs}'
            f'<div class="legend" id="legend{d}"></div>'
            f'<div class="box src"><h4>source</h4>{_source_html(d, doc)}</div>'
            f'<div class="grid">{"".join(boxes)}</div></div>')


def shown_values(docs):
    """The values the page embeds: ``--json``'s less :data:`PAGE_OMITS` and the reference run's
    source layers that equal the beam output run's (the encoder's, e.g. the gate)."""
    def kept(m, r, k, v):
        if k in PAGE_OMITS:
            return False
        return not (r == "reference" and m["layers"].get(k) in SOURCE
                    and m["runs"]["output"]["values"].get(k) == v)

    return [dict(doc, models=[dict(m, runs={r: dict(run, values={
        k: v for k, v in run["values"].items() if kept(m, r, k, v)})
        for r, run in m["runs"].items()}) for m in doc["models"]]) for doc in docs]


def html_page(docs, title="Mechanisms at work", decoding=""):
    """The page of :func:`inspect_documents`' ``docs``, its values embedded as JSON
    (:func:`shown_values`); ``decoding``: the beam output's options, said in the page's
    introduction."""
    data = json.dumps(shown_values(docs)).replace("</", "<\\/")
    specs = json.dumps(SPECS).replace("</", "<\\/")
    intro = ('<p class="note">Per document: switch a source layer on to see a mechanism on the '
             "source (its colour bar, numbers and what is drawn appear above the source; a "
             "token's title gives its value); switch the shade of a model's outputs in its box. "
             "Values: each model run teacher-forced on its beam output and on the reference "
             "(the two runs), embedded below as JSON (without "
             f"{', '.join(PAGE_OMITS)}: fairseq-sum-inspect --json has them)."
             + (f" Beam output: {escape(decoding, quote=False)}." if decoding else "") + "</p>")
    parts = [intro, f'<script type="application/json" id="values">{data}</script>',
             f'<script type="application/json" id="specs">{specs}</script>',
             "".join(_document_html(d, doc) for d, doc in enumerate(docs))]
    return page.document(title, page.CSS + CSS, parts, JS)
