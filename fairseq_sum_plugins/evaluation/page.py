"""The template of the project's self-contained HTML pages (``fairseq-sum-compare --html``,
``fairseq-sum-inspect``): one style sheet, the systems' colours and the document around a page's
parts. A page loads nothing from the network: its style and script are inline, every text in it is
escaped, and it names no external resource (the tests scan every page for one).
"""
from html import escape

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.2em 2em;
  color:#222}
h1{font-size:1.35em;margin:.2em 0}h2{font-size:1.1em;margin:1.2em 0 .4em}
table.t{border-collapse:collapse;margin:.4em 0}
table.t td,table.t th{border:1px solid #ccc;padding:3px 8px;text-align:right}
table.t td:first-child,table.t th:first-child{text-align:left}
tr.base td{color:#555;background:#f6f6f6}
.ok{color:#176d1b;font-weight:600}.no{color:#b3261e;font-weight:600}.na{color:#777}
.doc{border:1px solid #bbb;border-radius:6px;margin:1em 0;padding:.5em .8em}
.doc h3{font-size:1em;margin:.2em 0 .5em}
.grid{display:grid;gap:.6em;grid-template-columns:repeat(auto-fit,minmax(260px,1fr))}
.box{background:#fafafa;border:1px solid #e2e2e2;border-radius:4px;padding:.3em .6em}
.box h4{margin:.1em 0 .3em;font-size:.92em}.box p{margin:.25em 0}
.src{max-height:16em;overflow:auto;font-size:.93em}
.sc{font-size:.85em;color:#444}
.controls{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ddd;
  z-index:1}
.key{display:inline-block;width:.9em;height:.9em;border-radius:2px;vertical-align:middle;
  margin-right:.2em}
.note{color:#555;font-size:.9em;max-width:70em}
"""
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
          "#bcbd22", "#7f7f7f")  # tab10: ten systems before a colour repeats


def color(i):
    """The colour of the ``i``-th system (they repeat after ten)."""
    return COLORS[i % len(COLORS)]


def document(title, css, parts, js, body_class=""):
    """The page: ``<head>`` with ``title`` and the inline style ``css``, ``<body>`` (of class
    ``body_class``) with the heading, the HTML ``parts`` in order and the inline script ``js``."""
    body = f' class="{body_class}"' if body_class else ""
    page = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{escape(title)}</title><style>{css}</style></head>", f"<body{body}>",
            f"<h1>{escape(title)}</h1>", *parts, f"<script>{js}</script>", "</body></html>"]
    return "\n".join(page)
