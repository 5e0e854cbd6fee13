"""The page of ``fairseq-sum-inspect``: one self-contained HTML file of the documents of
:func:`.stage.inspect_documents` (the template of :mod:`fairseq_sum_plugins.evaluation.page`,
nothing loaded from the network).

Per document the source as text, each mechanism a layer the reader switches on (token shading for
the gate, saliency and copy attention; a band for focus centre and scope; sentence marks for memory
extraction), the reference and every model's output with per-token ``p_gen`` and role; hovering an
output token highlights the source tokens it attends to. The values are embedded in the page as
JSON (``<script id="values">``), the same as ``--json`` writes (less what :func:`html_page` leaves
out). The page's script and style are package data: ``assets/inspect.js``, ``assets/inspect.css``.
"""
import json
from importlib import resources

from fairseq_sum_plugins.evaluation import page

from .stage import TOP_K

# values a page leaves out (--json has them): TPT's role distributions of every sublayer and
# position (N_r per head; megabytes on a long document); the page shows each output token's role
PAGE_OMITS = ("roles",)
SOURCE = ("token", "band", "sentence")  # the layers drawn on the source


def _asset(name):
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


CSS = _asset("inspect.css")

JS = _asset("inspect.js")

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
        if topics:  # the document's topics (0-based, as inspection/topics.py numbers them)
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


