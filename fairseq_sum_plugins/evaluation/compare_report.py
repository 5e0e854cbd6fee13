"""Report of ``recipes/compare.sh``: a Markdown table and a learning-curve PNG from the runs'
folders.

``python -m fairseq_sum_plugins.evaluation.compare_report OUT LABEL...`` reads, for every label,

* ``OUT/LABEL/checkpoints/train.log`` (fairseq's ``--log-format simple``): the validation loss at
  each ``valid on 'valid' subset`` line, the training loss at each ``train_inner`` line (both
  against ``num_updates``; training points after the last validation, and the first of two points
  logged for one update by a resumed run, are dropped), the parameter count and the last validation
  line's auxiliary terms (``aux_*``, ``gate_sparsity``);
* ``OUT/LABEL/test.out.rouge.json`` (``fairseq-sum-score --json``): ROUGE-1/2/L F1 with their 95%
  bootstrap intervals, and ``meteor`` when the scorer wrote it (headed by its ``meteor_impl``; a
  file without one predates Meteor 1.5 here and holds nltk's);
* ``OUT/LABEL/test.out``: the mean length of the hypotheses in words (after :func:`clean_summary`);
* ``OUT/LABEL/source_use.json`` (:mod:`.source_use`, when present): the source gain (bits per target
  token a summary gains from its own document over another) and the number of distinct summaries; a
  model below ``MIN_GAIN`` bits or writing one text for most documents is named under the table as
  not reading its source, so that its ROUGE is not read as summarization;
* ``OUT/LABEL/wall.txt`` (wall-clock seconds of compare.sh's train step, validation and start-up
  included, and of the decoding, each recorded by the launch that ran the step as soon as it ended;
  :func:`wall_cell` shows "unknown" for a step without a record, ">= N" for a training resumed after
  a killed launch), ``spec.txt``, ``vs_<first label>.txt`` (paired test output, when present) and
  ``OUT/run_info.txt``;

and writes ``OUT/results.md`` and ``OUT/learning_curve.png`` (validation NLL solid, training NLL
faint, one colour per label: the cross-entropy without auxiliary terms, comparable across models). A
label without a score file is an error naming the file. ``results.md`` starts with a SMOKE=1 line
naming the labels whose score file, decoding or checkpoints were made under ``SMOKE=1`` (their spec
records, :func:`fairseq_sum_plugins.cli.run_spec.smoke_note`).
"""
import argparse
import json
import os
import re
import sys

from ..cli import run_spec
from ..cli.outputs import refuse_clobber
from .page import COLORS  # noqa: F401  (part of this module's interface)
from .page import CSS as _CSS
from .page import color as _color
from .page import document

_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_VALID = re.compile(r"valid on '[^']+' subset")
_PARAMS = re.compile(r"num\. (?:shared )?model params: ([\d,]+)")
_AUX = re.compile(r"\| ((?:aux_\w+|gate_sparsity)) " + _NUM)


MIN_GAIN = 0.05  # bits per target token: below this a model is reported as not reading its source
MIN_DISTINCT = 0.5  # share of distinct summaries: below this likewise


def _field(line, name):
    """Value of ``name`` in a simple-format log line (``| name 1.2 |`` or ``name=1.2``), or None."""
    m = re.search(r"(?:\| |\s|^)" + re.escape(name) + r"[= ]" + _NUM, line)
    return float(m.group(1)) if m else None


def parse_train_log(path):
    """{'valid' / 'train': [(update, loss)], 'valid_nll' / 'train_nll': [(update, nll_loss)],
    'params': int|None, 'aux': {name: value}, 'wall': seconds}; ``wall`` is the sum of fairseq's
    ``train_wall`` over the end-of-epoch ``| train |`` lines (seconds spent in training steps,
    without validation and start-up, over every launch in the log; fairseq resets that meter at each
    epoch and at each ``train_inner`` line, so no single line holds the run's total)."""
    out = {"valid": [], "train": [], "valid_nll": [], "train_nll": [], "params": None, "aux": {},
           "wall": None}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = _PARAMS.search(line)
            if m and out["params"] is None:
                out["params"] = int(m.group(1).replace(",", ""))
            upd, loss = _field(line, "num_updates"), _field(line, "loss")
            if upd is None or loss is None:
                continue
            nll = _field(line, "nll_loss")
            if _VALID.search(line):
                out["valid"].append((int(upd), loss))
                out["valid_nll"].append((int(upd), nll))
                out["aux"] = {k: float(v) for k, v in _AUX.findall(line)}
            elif "| train_inner |" in line:
                out["train"].append((int(upd), loss))
                out["train_nll"].append((int(upd), nll))
            elif "| train |" in line and (seconds := _field(line, "train_wall")) is not None:
                out["wall"] = (out["wall"] or 0.0) + seconds
    if out["valid"]:  # a run resumed from an earlier checkpoint logs the updates it redid twice
        last = out["valid"][-1][0]
        for key in ("train", "train_nll"):
            out[key] = sorted({u: v for u, v in out[key] if u <= last}.items())
    return out


def _mean_words(gen_output):
    from fairseq_sum_plugins.scoring.rouge_text import clean_summary
    from fairseq_sum_plugins.scoring.score_inputs import read_generate_output

    _, hyps, _ = read_generate_output(gen_output)
    return sum(len(" ".join(clean_summary(h)).split()) for h in hyps) / max(len(hyps), 1)


def _read(path, default=""):
    return open(path, encoding="utf-8").read().strip() if os.path.exists(path) else default


def collect(out_dir, label):
    """Everything the report shows about one label."""
    run = os.path.join(out_dir, label)
    score_file = os.path.join(run, "test.out.rouge.json")
    if not os.path.exists(score_file):
        raise FileNotFoundError(f"{score_file} missing: run recipes/compare.sh for {label!r} first")
    with open(score_file, encoding="utf-8") as f:
        scores = json.load(f)
    log = parse_train_log(os.path.join(run, "checkpoints", "train.log"))
    wall = dict(kv.partition("=")[::2] for kv in _read(os.path.join(run, "wall.txt")).split())
    use_file = os.path.join(run, "source_use.json")
    use = json.load(open(use_file, encoding="utf-8")) if os.path.exists(use_file) else None
    return {"label": label, "spec": _read(os.path.join(run, "spec.txt"), label), "scores": scores,
            "log": log, "wall": wall, "words": _mean_words(os.path.join(run, "test.out")),
            "source_use": use}


def wall_cell(wall, step):
    """Seconds of ``step`` (train, generate) from wall.txt's ``{key: value}``: "unknown" when no
    launch recorded them (a step killed, or skipped because an older compare.sh's launch ran it),
    ">= N" when the recorded launch resumed a killed training (whose seconds are not in N)."""
    seconds = wall.get(f"{step}_s")
    if seconds is None or not seconds.isdigit():
        return "unknown"
    return f">= {seconds}" if wall.get(f"{step}_resumed") == "1" else seconds


def reads_source(row):
    """False when the row's source_use shows a model that ignores its document, None when
    unmeasured."""
    use = row.get("source_use")
    if not use:
        return None
    distinct = use.get("distinct", 1) / max(use.get("hypotheses", 1), 1)
    return use["gain"] >= MIN_GAIN and distinct >= MIN_DISTINCT


def _ci(scores, key):
    value = 100 * scores[key]
    ci = scores.get(key + "_ci")
    return f"{value:.2f} [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]" if ci else f"{value:.2f}"


def table(rows):
    """Markdown table, one row per label."""
    meteor = any("meteor" in r["scores"] for r in rows)
    head = ["model", "params", "updates", "valid loss", "valid nll",
            "ROUGE-1", "ROUGE-2", "ROUGE-L"]
    impls = sorted(
        {r["scores"].get("meteor_impl", "nltk")
         for r in rows if "meteor" in r["scores"]})
    head += [f"METEOR ({', '.join(impls)})"] if meteor else []
    use = any(r.get("source_use") for r in rows)
    head += ["source gain (bits)", "distinct"] if use else []
    head += ["words", "aux terms (valid)", "train s (wall)", "train s (steps)", "generate s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        s, log = r["scores"], r["log"]
        last = log["valid"][-1] if log["valid"] else (None, float("nan"))
        nll = (log["valid_nll"][-1][1]
               if log["valid_nll"] and log["valid_nll"][-1][1] is not None else float("nan"))
        cells = [f"`{r['label']}`", f"{log['params'] / 1e6:.2f}M" if log["params"] else "-",
                 str(last[0]), f"{last[1]:.3f}", f"{nll:.3f}",
                 _ci(s, "rouge1"), _ci(s, "rouge2"), _ci(s, "rougeL")]
        mixed = f" ({s.get('meteor_impl', 'nltk')})" if len(impls) > 1 else ""  # label each cell
        cells += [_ci(s, "meteor") + mixed if "meteor" in s else "-"] if meteor else []
        if use:
            u = r.get("source_use") or {}
            cells += [f"{u['gain']:.3f}" if "gain" in u else "-",
                      f"{u['distinct']}/{u['hypotheses']}" if "distinct" in u else "-"]
        aux = ", ".join(f"{k} {v:.3g}" for k, v in sorted(log["aux"].items())) or "-"
        cells += [f"{r['words']:.1f}", aux, wall_cell(r["wall"], "train"),
                  f"{log['wall']:.0f}" if log["wall"] is not None else "-",
                  wall_cell(r["wall"], "generate")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, r in enumerate(rows):
        color = f"C{i}"
        train = [(u, v) for u, v in r["log"]["train_nll"] if v is not None]
        valid = [(u, v) for u, v in r["log"]["valid_nll"] if v is not None]
        if train:
            ax.plot(*zip(*train), color=color, alpha=0.35, linestyle="--", linewidth=1)
        if valid:
            ax.plot(*zip(*valid), color=color, marker="o", label=f"{r['label']} (valid)")
    ax.set_xlabel("updates")
    ax.set_ylabel("NLL per target token (base 2)")
    ax.set_title("validation NLL (solid) and training NLL (dashed)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def write_report(out_dir, labels):
    rows = [collect(out_dir, label) for label in labels]
    plot(rows, os.path.join(out_dir, "learning_curve.png"))
    parts = ["# Comparison", "", "ROUGE F1 x 100 on the test split with 95% bootstrap intervals "
             "(fairseq-sum-score, rouge155-py, ROUGE-L summary-level); `words`: mean hypothesis "
             "length; `valid loss`: the training objective at the last validation (label-smoothed "
             "cross-entropy plus the model's weighted auxiliary terms, base 2), `valid nll`: its "
             "cross-entropy alone, comparable across models; the last validation is the decoded "
             "checkpoint's; `source gain`: bits per summary token gained from its own document "
             "over another (0: the source is ignored), `distinct`: different summaries among the "
             "test documents.", "", table(rows), ""]
    smoke = run_spec.smoke_note({r["label"]: run_spec.run_files(os.path.join(out_dir, r["label"]))
                                 for r in rows})
    if smoke:  # first, above the table: recipes/common.sh step_gate recorded it
        parts[1:1] = ["", smoke]
    blind = [r["label"] for r in rows if reads_source(r) is False]
    if blind:
        parts += [f"**Not reading the source:** {', '.join(f'`{b}`' for b in blind)} (source gain "
                  f"< {MIN_GAIN} bits or fewer than {MIN_DISTINCT:.0%} distinct summaries). Their "
                  "ROUGE is that of a generic summary written whatever the document, and "
                  "differences involving them say nothing about summarization.", ""]
    parts += ["![learning curves](learning_curve.png)", "", "## Models", ""]
    parts += [f"- `{r['spec']}`" for r in rows]
    tests = [(r["label"], _read(os.path.join(out_dir, r["label"], f"vs_{labels[0]}.txt")))
             for r in rows[1:]]
    if any(text for _, text in tests):
        parts += ["", f"## Paired significance against `{labels[0]}` (fairseq-sum-compare)", ""]
        for label, text in tests:
            parts += [f"### {label}", "", "```", text or "(no output)", "```", ""]
    parts += ["", "## Settings and hardware", "",
              "```", _read(os.path.join(out_dir, "run_info.txt")), "```", ""]
    with open(os.path.join(out_dir, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return rows


def cli_main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="the OUT folder of recipes/compare.sh")
    p.add_argument("labels", nargs="+", help="labels in table order (the first is the baseline)")
    args = p.parse_args(argv)
    refuse_clobber(p, reads=[("LABEL", [os.path.join(args.out, label) for label in args.labels]),
                             ("OUT", os.path.join(args.out, "run_info.txt"))],
                   writes=[("OUT", os.path.join(args.out, name))
                           for name in ("results.md", "learning_curve.png")])
    try:
        write_report(args.out, args.labels)
    except (FileNotFoundError, ValueError) as e:
        sys.exit(f"compare_report: {e}")
    print(f"wrote {os.path.join(args.out, 'results.md')} and learning_curve.png")


if __name__ == "__main__":
    cli_main()


# --------------------------------------------------------------------------------- HTML report
COPY_N = 3  # a run of COPY_N words shared by the source and an output counts as copied
_WORD_KEY = re.compile(r"[^\w]+")
SORT_KEYS = (("id", "document order"), ("r2", "largest ROUGE-2 spread between systems"),
             ("r1", "largest ROUGE-1 spread between systems"),
             ("sp", "largest specificity spread between systems"))


def _key(word):
    return _WORD_KEY.sub("", word.lower())


def copied_words(words, other_words, n=COPY_N):
    """Indices of ``words`` inside an n-gram (of non-punctuation words, lower-cased) that also
    occurs in ``other_words``; punctuation between them is marked with them."""
    keyed = [(i, _key(w)) for i, w in enumerate(words) if _key(w)]
    other = [k for k in map(_key, other_words) if k]
    grams = {tuple(other[j:j + n]) for j in range(len(other) - n + 1)}
    marked = set()
    for j in range(len(keyed) - n + 1):
        if tuple(k for _, k in keyed[j:j + n]) in grams:
            marked.update(range(keyed[j][0], keyed[j + n - 1][0] + 1))
    return marked


def _sentences(line):
    from .decodings import JOIN

    return [s for s in line.split(JOIN.strip()) if s.strip()] if line else []


def _words(line):
    return [w for s in _sentences(line) for w in s.split()]


def _marked_html(line, others, n=COPY_N):
    """HTML of a ``<sep>``-joined line, each word a span with classes ``cK`` for the systems ``K``
    (of ``others``: {K: words}) whose text shares an n-gram with it; sentences as paragraphs."""
    from html import escape

    marks = {k: copied_words(_words(line), ws, n) for k, ws in others.items()}
    out, pos = [], 0
    for sent in _sentences(line):
        spans = []
        for w in sent.split():
            cls = " ".join(f"c{k}" for k, m in marks.items() if pos in m)
            spans.append(f'<span class="{cls}">{escape(w)}</span>' if cls else escape(w))
            pos += 1
        out.append("<p>" + " ".join(spans) + "</p>")
    return "".join(out) or "<p><i>(empty)</i></p>"


def specificity_rows(hyp_sents, ref_sents):
    """Per document ``i``: ``M[i, i] - mean_{j != i} M[i, j]`` (ROUGE-2 points; their mean is the
    specificity delta, :mod:`.specificity`)."""
    import numpy as np

    from ..scoring.specificity import BigramMatrix, bigram_counts

    counts = ([bigram_counts(h) for h in hyp_sents], [bigram_counts(r) for r in ref_sents])
    m = BigramMatrix(*counts).matrix()
    diag = np.diag(m)
    return diag - (m.sum(1) - diag) / max(len(hyp_sents) - 1, 1)


def _fmt(x, digits=2, sign=False):
    return "-" if x is None else f"{x:{'+' if sign else ''}.{digits}f}"


def _spec_cell(spec):
    if not spec:
        return "-"
    lower = (f" [&ge; {round(spec['lower'], 9) + 0.0:+.2f}]" if spec.get("lower") is not None
             else "")  # rounded: a float-noise zero prints as +0.00
    return f"{round(spec['delta'], 9) + 0.0:+.2f}{lower} ({spec['p']:.4f})"


def system_summary(name, hyps, refs, scorer, source_use=None, baselines=None, source_use_note=None):
    """What the HTML report shows of one system: corpus and per-document ROUGE-1/2/L F1 x 100,
    specificity and its per-document contributions, distinct outputs and, with ``baselines``
    (fairseq-sum-baselines' JSON), the verdict (:func:`.specificity.verdict`). ``source_use_note``:
    why the system has no source_use figures (a file beside it that is not its own), shown."""
    from ..scoring import specificity as sp

    hyp_sents, ref_sents = scorer.pairs(hyps, refs)
    per = scorer.document_f1(hyps, refs, ("rouge1", "rouge2", "rougeL"))
    spec = sp.specificity(hyp_sents, ref_sents) if len(hyps) > 1 else None
    rows = [float(v) for v in specificity_rows(hyp_sents, ref_sents)] if spec else None
    out = {"name": name, "lines": [" <sep> ".join(s) for s in hyp_sents],
           "per": {m: [100 * float(v) for v in per[m]] for m in per}, "spec": spec,
           "spec_rows": rows, "distinct": len({" ".join(s) for s in hyp_sents}),
           "outputs": len(hyps), "source_use": source_use, "source_use_note": source_use_note}
    out["rouge"] = {m: sum(v) / len(v) for m, v in out["per"].items()}
    if baselines is not None:
        bag = baselines.get("bag_of_pieces") or {}
        use = source_use or {}
        out["verdict"] = sp.verdict(spec, sp.random_mean(baselines), use.get("nll_own"),
                                    bag.get("nll"), use.get("gain"), out["distinct"],
                                    out["outputs"], sp.random_deltas(baselines))
        if source_use_note:
            out["verdict"]["reasons"].append(source_use_note)
    return out


_JS = """
(function(){
  var box=document.getElementById('docs');
  function sortBy(key){
    var docs=Array.prototype.slice.call(box.querySelectorAll('.doc'));
    docs.sort(function(a,b){
      if(key==='id') return (+a.dataset.id)-(+b.dataset.id);
      return (+b.dataset[key])-(+a.dataset[key]) || (+a.dataset.id)-(+b.dataset.id);
    });
    docs.forEach(function(d){box.appendChild(d);});
    var option=document.querySelector('#sort option[value="'+key+'"]');
    document.getElementById('sorted').textContent=option.textContent;
  }
  document.getElementById('sort').addEventListener('change',function(e){sortBy(e.target.value);});
  document.querySelectorAll('input[name=hl]').forEach(function(r){
    r.addEventListener('change',function(){document.body.className='h'+r.value;});
  });
  sortBy(document.getElementById('sort').value);
  document.body.setAttribute('data-ready','1');
})();
"""


def _css(k):
    """The page's style with one highlight rule per system (``body.hK .cK``) and for any system."""
    rules = [f"body.h{i} .c{i}{{background:{_color(i)}33;box-shadow:inset 0 -2px {_color(i)}}}"
             for i in range(k)]
    if k:
        rules.append(",".join(f"body.hall .c{i}" for i in range(k)) + "{background:#ffe08a}")
    return _CSS + "\n".join(rules)


def _table(systems, baselines, pairs):
    """The table of systems (and baselines) as HTML."""
    from html import escape

    from ..scoring.specificity import extract_cell

    k = len(systems)
    head = ["system", "ROUGE-1", "ROUGE-2", "ROUGE-L",
            "ROUGE-2 specificity delta [one-sided 95% lower bound] (permutation p)", "distinct",
            "source gain (bits)"]
    method = next((r.get("method") for r in (pairs or {}).values()), "bootstrap")
    test = "approximate randomization" if method == "ar" else "paired bootstrap"
    head += [f"vs {systems[0]['name']}: ROUGE-2 diff [95% CI], p ({test})"] if k > 1 else []
    head += ["verdict"] if baselines is not None else []
    rows = []
    for s in systems:
        use = s.get("source_use") or {}
        cells = [escape(s["name"])] + [_fmt(s["rouge"][m]) for m in ("rouge1", "rouge2", "rougeL")]
        gain = _fmt(use.get("gain"), 3)
        if s.get("source_use_note"):
            gain = f'<span class="na">not measured: {escape(s["source_use_note"])}</span>'
        cells += [_spec_cell(s["spec"]), f"{s['distinct']}/{s['outputs']}", gain]
        if k > 1:
            r = (pairs or {}).get(s["name"])
            m = r["metrics"]["rouge2"] if r else None
            ci = f"[{100 * m['ci'][0]:+.2f}, {100 * m['ci'][1]:+.2f}]" if m else ""
            cells.append(f"{100 * m['diff']:+.2f} {ci}, p {m['p']:.4f}" if m else "-")
        if baselines is not None:
            v = s.get("verdict")
            cls = ("ok" if v["specific"] is True else "no" if v["specific"] is False
                   else "na") if v else "na"
            why = escape("; ".join(v["reasons"])) if v else ""
            label = escape(v["label"]) if v else "-"
            cells.append(f'<span class="{cls}" title="{why}">{label}</span>')
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    for name, b in ((baselines or {}).get("systems") or {}).items():
        if not b:
            continue
        v = b.get("verdict")
        cells = [f"baseline: {escape(name)}"]
        cells += [_fmt(100 * b[m]) for m in ("rouge1", "rouge2", "rougeL")]
        cells += [_spec_cell(b.get("specificity")), str(b.get("distinct", "-")), "-"]
        cells += ["-"] if k > 1 else []
        cells.append(f'<span class="na">{escape(extract_cell(v))}</span>')
        rows.append('<tr class="base">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return ('<table class="t"><tr>' + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
            + "".join(rows) + "</table>")


def _verdict_note(baselines):
    if baselines is None:
        return ""
    from html import escape

    from ..scoring.specificity import bar_note

    bag = baselines.get("bag_of_pieces") or {}
    return ('<p class="note">Verdict "specific to its document" (what it measures: outputs that '
            "match their own document's reference beyond random extracts, not that they summarize "
            "it): the one-sided 95% document-bootstrap lower bound of the ROUGE-2 specificity "
            f"delta above {escape(bar_note(baselines))}, test NLL below the bag of pieces' "
            f"{_fmt(bag.get('nll'), 3)} bits, and reading (source gain &ge; 0.3 bits, &ge; 90% "
            "distinct); &quot;marginal&quot; where the Monte Carlo bands of the bound and of the "
            "bar overlap. It separates outputs that depend on their document from generic ones "
            "and is no test of summarizing: an extract clears the bar (a baseline's row: its bar "
            "check, as an extract has no test NLL). Hover a verdict for its reasons.</p>")


def _lead3_note(systems, baselines, pairs, vs_lead3, vs_base=None):
    """Under the table: each system's verdict with its paired test against Lead-3 and against its
    baseline model, with p (:func:`.lead3_statement.statement`). ``vs_lead3``: {name: ROUGE points
    {rouge1, rouge2, rougeL: {diff, p}}} (:func:`.lead3_statement.points`), or a string saying why
    it was not measured; nothing without it and without ``baselines``. ``vs_base``: {name:
    (baseline model, ROUGE points)}; without it, the first system by ``pairs``."""
    if vs_lead3 is None and baselines is None:
        return ""
    import re
    from html import escape

    from . import lead3_statement as ls

    if not isinstance(vs_lead3, dict):
        why = vs_lead3 or "no Lead-3 extract given"
        return f'<p class="note">Against Lead-3: not measured ({escape(why)}).</p>'
    method = next((r.get("method") for r in (pairs or {}).values()), "bootstrap")
    test = "approximate randomization" if method == "ar" else "paired bootstrap"
    first = systems[0]["name"]
    items = []
    for s in systems:
        v = s.get("verdict")
        if vs_base is not None:
            base_name, base = vs_base.get(s["name"]) or (None, None)
        else:
            r = (pairs or {}).get(s["name"])
            base_name = first
            base = (ls.points(r["metrics"]) if r and all(k in r["metrics"] for k in ls.KEYS)
                    else None)
        text = ls.statement(s["name"], [v["label"] if v else None], [vs_lead3.get(s["name"])],
                            [base], base_name if base is not None else None)
        items.append("<li>" + re.sub(r"`([^`]*)`", r"<code>\1</code>", escape(text)) + "</li>")
    against = ("its baseline model" if vs_base is not None else escape(first))
    return (f'<div class="note">Per system, the {test} against Lead-3\'s extracts and against '
            f"{against} (significant at p &le; {ls.SIGNIFICANT}):<ul>{''.join(items)}</ul>"
            "</div>")


def _document(i, ref, src, systems, n):
    """One document's card: the source, the reference and every output."""
    from html import escape

    def spread(values):
        return max(values) - min(values) if values else 0.0
    sp_vals = [s["spec_rows"][i] for s in systems if s["spec_rows"]]
    data = (f'data-id="{i}" data-r2="{spread([s["per"]["rouge2"][i] for s in systems]):.4f}" '
            f'data-r1="{spread([s["per"]["rouge1"][i] for s in systems]):.4f}" '
            f'data-sp="{spread(sp_vals):.4f}"')
    boxes = [f'<div class="box"><h4>reference</h4>{_marked_html(ref, {}, n)}</div>']
    src_words = _words(src)
    for j, s in enumerate(systems):
        contrib = _fmt(s["spec_rows"][i], sign=True) if s["spec_rows"] else "-"
        scores = "/".join(f'{s["per"][m][i]:.2f}' for m in ("rouge1", "rouge2", "rougeL"))
        key = f'<span class="key" style="background:{_color(j)}"></span>'
        boxes.append(f'<div class="box"><h4>{key}{escape(s["name"])}</h4>'
                     f'{_marked_html(s["lines"][i], {j: src_words}, n)}'
                     f'<div class="sc">ROUGE-1/2/L {scores}; specificity contribution {contrib}'
                     "</div></div>")
    copies = {j: _words(s["lines"][i]) for j, s in enumerate(systems)}
    return (f'<div class="doc" {data}><h3>document {i}</h3><div class="box src"><h4>source '
            f"(words in an n-gram of {n} copied by the highlighted system marked)</h4>"
            f'{_marked_html(src, copies, n)}</div><div class="grid">{"".join(boxes)}</div></div>')


def html_report(systems, refs, sources, baselines=None, pairs=None,
                title="Summaries side by side", n=COPY_N, max_docs=None, vs_lead3=None,
                vs_base=None):
    """One self-contained HTML page (inline CSS and JS, no external resource): the table of systems
    (and baselines with their verdicts), then per document the source with the n-grams each system
    copied highlighted, the reference and every output with its ROUGE and specificity contribution;
    sortable by where the systems differ most. ``systems``: :func:`system_summary` dicts; ``refs``,
    ``sources``: ``<sep>``-joined lines; ``pairs``: {name: fairseq-sum-compare result against the
    first}; ``max_docs``: show only that many documents, those with the largest ROUGE-2 spread
    between systems (the table is over all); ``vs_lead3`` and ``vs_base``: each system's paired
    tests against Lead-3 and against its baseline model, stated under the table
    (:func:`_lead3_note`)."""
    from html import escape

    k = len(systems)
    shown = list(range(len(refs)))
    if max_docs is not None and len(shown) > max_docs:
        r2 = [[s["per"]["rouge2"][i] for s in systems] for i in shown]
        spread = [max(v) - min(v) for v in r2]
        shown = sorted(sorted(shown, key=lambda i: (-spread[i], i))[:max_docs])
    legend = " ".join(f'<label><input type="radio" name="hl" value="{i}"'
                      f'{" checked" if i == 0 else ""}>'
                      f'<span class="key" style="background:{_color(i)}"></span>{escape(s["name"])}'
                      "</label>" for i, s in enumerate(systems))
    legend += ' <label><input type="radio" name="hl" value="all">any system</label>'
    subset = (f"; the {len(shown)} documents shown below are those with the largest ROUGE-2 spread "
              "between the systems" if len(shown) < len(refs) else "")
    intro = (f'<p class="note">{len(refs)} documents, {k} systems{subset}. ROUGE F1 x 100 '
             "(fairseq-sum-score's scorer, ROUGE-L summary-level); ROUGE-2 specificity: ROUGE-2 "
             "against the document's own reference minus the mean against the other documents' "
             "references (its one-sided 95% document-bootstrap lower bound in brackets, the "
             "permutation p against 0 in parentheses); a document's specificity contribution is "
             "that difference "
             "for it alone (their mean is the delta).</p>")
    options = "".join(f'<option value="{v}">{escape(t)}</option>' for v, t in SORT_KEYS)
    controls = (f'<div class="controls">Sort: <select id="sort">{options}</select> (now: '
                '<span id="sorted">document order</span>) &nbsp; Highlight copies of: '
                f"{legend}</div>")
    docs = "".join(_document(i, refs[i], sources[i], systems, n) for i in shown)
    return document(title, _css(k), [intro, _table(systems, baselines, pairs),
                                     _verdict_note(baselines),
                                     _lead3_note(systems, baselines, pairs, vs_lead3, vs_base),
                                     controls,
                                     f'<div id="docs">{docs}</div>'], _JS, body_class="h0")
