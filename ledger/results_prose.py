"""The figures of the results' prose against the index: a sentence may state only what the check
recomputes (or what a listed file holds), and "significant" only with its p.

Which prose: ``results/README.md`` (each ``## `` section belongs to the tables its heading links
to, ``[...](TABLE/...)``) and each table folder's ``results.md`` and ``README.md`` (the folder's
table), a sentence that links to a table adding that table to its section; and the pages that quote
results beside the results folder, the checkout's ``README.md`` and every Markdown page under
``docs/`` (:func:`quoting_files`; docs/reference's pages, generated from the commands' help,
included: a help text that quotes a result is read like any page), each sentence there belonging to
every table its page links to (``results/TABLE/...``, ``../results/TABLE/...``) and to those of its
heading and its own links (a figure listed for such a page in ``prose_figures.txt`` is named
``../README.md``, ``../docs/NAME.md``); outside the generated blocks, tables (``|`` lines), fenced
or indented code, headings, inline code spans and link targets.

**The rule** (:func:`check_prose`). A figure is a number with a decimal point (``2.47``, ``+0.12``,
``p 0.001``; integers, which count documents, updates, dims, seeds or dates, are not figures here,
nor is a section number after ``§``).
Every figure of a sentence must be, at the digits it shows and without its sign (prose says
"behind" or "below"), one of the section's index figures (:func:`index_figures`): each run's ROUGE
(x 100), test NLL, source gain, specificity delta and p, each paired test's difference, interval
bounds and p (against the record's first model and against Lead-3), each of these as mean and sd
over the seeds, the specificity's lower bound with its Monte Carlo band and the verdict's bar with
its band, the baselines' figures and the random draws' deltas, mean, min and max
(``baselines.json``), and the verdict's own thresholds (:data:`VERDICT_CONSTANTS`: the level of the
lower bound, the bar's floor and share, the reading check's gain and distinct share, as
compare.sh's verdict legend states them); or be listed for that file in
``results/prose_figures.txt`` (figures that are not the index's: validation NLL and wall times from
training logs, dims, probe accuracies, earlier runs' figures), one ``FILE FIGURE...  # why`` a line;
a listed figure that no sentence of its file needs (one the index holds, or gone from the prose),
or a listed file whose prose is not read, fails, so the list holds only what it must. A sentence's
test-set size ("100 test documents", "100 ACLSum test papers") must be that of one of its section's
tables (the lines of its ``references.txt``), and a seed it names ("seed 1") one of their records'
seeds (:func:`check_counts`; a section without tables is not checked). A sentence that says
"significant" (or "significantly") must show a p-value (``p X``), and one that says it without a
negation ("no", "not", "none", "nor", "without" at most three words before) must show a p of at
most 0.05; a word in double quotes is named, not said. A failure names the file, line and figure.
Every number of a range (``0.983-1.089``), a triple (``18.66/3.00/14.83``) or in e-notation is a
figure; one with a letter attached (a speed-up, ``1.49x``) is not. Chosen: a figure is matched
against every figure of its section, not against the model its sentence names: an edit that turns a
figure into another of the section's values at the digits shown passes (a limit of this rule).
"""
import json
import math
import os
import re

from fairseq_sum_plugins.scoring import specificity as sp

ALLOWED = "prose_figures.txt"
FIGURE = re.compile(r"(?<![\w.§])[-+]?\d+\.\d+(?:e[-+]?\d+)?(?![\w]|\.\d)")
P_SHOWN = re.compile(r"\bp\s*(?:=|<=|<|>)?\s*(\d+\.\d+)")
SIGNIFICANT = re.compile(r"\b(significant|significantly|significance)\b", re.I)
NEGATION = re.compile(r"\b(no|not|none|nor|without)\s+(\S+\s+){0,3}$", re.I)
TEST_COUNT = re.compile(r"\b(\d[\d,]*) (?:XSum |ACLSum |ACL )?test (?:documents|papers)\b")
SEED_SHOWN = re.compile(r"\bseed (\d+)\b")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*`\[])")
TABLE_LINK = re.compile(r"\]\(([\w.+-]+)/")
BLOCK_BEGIN = "<!-- BEGIN results_index"
BLOCK_END = "<!-- END results_index -->"
# definitions of the verdict, not results: figures of every section
VERDICT_CONSTANTS = (sp.LEVEL, sp.BAR_FLOOR, sp.BAR_RANDOM_SHARE, sp.READ_GAIN, sp.READ_DISTINCT)


def _spread(values):
    """mean and sd (n - 1) of a list of numbers, as the tables show them."""
    values = [v for v in values if isinstance(v, (int, float))]
    if len(values) < 2:
        return []
    mean = sum(values) / len(values)
    return [mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))]


def _paired_figures(pairs):
    out = []
    for pair in pairs or []:
        for metric in ("rouge1", "rouge2", "rougeL"):
            v = (pair or {}).get(metric)
            if v:
                out += [v["diff"], *v["ci"], v["p"]]
    for metric in ("rouge1", "rouge2", "rougeL"):
        out += _spread([(p or {}).get(metric, {}).get("diff") for p in pairs or []])
    return out


def index_figures(index, tables, root):
    """Every figure the index (and the tables' baselines.json) holds for ``tables``."""
    out = list(VERDICT_CONSTANTS)
    for r in index["records"]:
        if r["table"] not in tables or r["paper"] == "parity":
            continue
        for f in r["models"].values():
            for key in ("rouge1", "rouge2", "rougeL", "nll", "source_gain"):
                values = f.get(key) or []
                out += [v for v in values if isinstance(v, (int, float))] + _spread(values)
            specs = [s for s in f.get("specificity") or [] if s]
            out += [s[k] for s in specs for k in ("own", "other", "delta", "lower", "p") if k in s]
            out += [x for s in specs for x in s.get("lower_band") or []]
            out += [v for b in f.get("bar") or [] if b for v in b.values()]
            out += _spread([s["delta"] for s in specs])
            out += _paired_figures(f.get("vs_first")) + _paired_figures(f.get("vs_lead3"))
        for b in (r.get("baselines") or {}).values():
            out += [b[k] for k in ("rouge1", "rouge2", "rougeL", "nll", "source_gain")
                    if isinstance(b.get(k), (int, float))]
            for v in (b.get("specificity") or {}).values():
                out += v if isinstance(v, list) else [v]
    for table in tables:
        path = os.path.join(root, table, "baselines.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            draws = data.get("random_draws") or {}
            out += [data[k] for k in ("bar", "random_delta")
                    if isinstance(data.get(k), (int, float))]
            out += [draws[k] for k in ("mean", "min", "max") if k in draws]
            out += list(draws.get("deltas") or [])
    out = [v for v in out if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return out


def index_counts(index, tables, root):
    """({test documents of each of ``tables``: the lines of its references.txt}, {every seed of
    their records}): the counts a sentence of their section may state (module docstring)."""
    sizes, seeds = set(), set()
    for table in tables:
        path = os.path.join(root, table, "references.txt")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                sizes.add(sum(1 for _ in f))
    for r in index["records"]:
        if r["table"] in tables:
            seeds.update(int(s) for s in r.get("seeds") or [])
    return sizes, seeds


def check_counts(sentence, counts, where):
    """Failures of a sentence's test-set size ("100 test documents") and seeds ("seed 1") against
    its section's tables (:func:`index_counts`); none for a section without tables."""
    sizes, seeds = counts
    fails = []
    for m in TEST_COUNT.finditer(sentence):
        n = int(m.group(1).replace(",", ""))
        if sizes and n not in sizes:
            fails.append(f"{where}: {m.group(0)!r}, the section's tables have "
                         f"{', '.join(map(str, sorted(sizes)))} test documents")
    for m in SEED_SHOWN.finditer(sentence):
        if seeds and int(m.group(1)) not in seeds:
            fails.append(f"{where}: {m.group(0)!r} is not a seed of the section's tables "
                         f"({', '.join(map(str, sorted(seeds)))})")
    return fails


def read_allowed(root):
    """{file relative to ``root``: {figure as shown}} of ``root/prose_figures.txt``."""
    path = os.path.join(root, ALLOWED)
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path}:{number}: not UTF-8 text") from None
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) < 2 or not all(FIGURE.fullmatch(w) for w in words[1:]):
                raise ValueError(f"{path}:{number}: not 'FILE FIGURE...  # why'")
            out.setdefault(os.path.normpath(words[0]), set()).update(
                w.lstrip("+-") for w in words[1:])
    return out


def prose_lines(text):
    """[(line number, text)] of the prose of a Markdown text (module docstring), each line with
    its inline code and link targets removed, and the heading of each line's ``## `` section."""
    out, fenced, generated, heading = [], False, False, ""
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(BLOCK_BEGIN):
            generated = True
        if line.startswith(BLOCK_END):
            generated = False
            continue
        if line.startswith("```"):
            fenced = not fenced
            continue
        if line.startswith("## "):
            heading = line
        if (generated or fenced or line.startswith(("#", "|", "    ", "\t", "![", "<!--"))
                or not line.strip()):
            out.append((number, None, heading))
            continue
        line = re.sub(r"`[^`]*`", "`", line)
        line = re.sub(r"\]\(([\w.+-]+/)?[^)]*\)", lambda m: f"]({m.group(1) or ''})", line)
        out.append((number, line, heading))
    return out


def sentences(lines):
    """[(first line number, sentence)] of :func:`prose_lines`: paragraphs (runs of prose lines)
    split at sentence ends."""
    out, para = [], []

    def flush():
        text, starts = "", []
        for number, line in para:
            starts.append((len(text), number))
            text += line + " "
        pos = 0
        for piece in SENTENCE_END.split(text):
            start = text.index(piece, pos)
            pos = start + len(piece)
            if piece.strip():
                out.append((max(n for s, n in starts if s <= start), piece))
        para.clear()

    for number, line, _ in lines:
        if line is not None:
            para.append((number, line))
        elif para:
            flush()
    if para:
        flush()
    return out


def _matches(shown, figures):
    digits = len(shown.partition(".")[2])
    target = abs(float(shown))
    return any(abs(float(f"{abs(v):.{digits}f}") - target) < 1e-12 for v in figures)


def check_sentence(sentence, figures, allowed, where, used=None):
    """Failures of one sentence (module docstring); the listed figures it needs go to ``used``."""
    fails = []
    for m in FIGURE.finditer(sentence):
        shown = m.group(0)
        if _matches(shown, figures):
            continue
        if shown.lstrip("+-") in allowed:
            if used is not None:
                used.add(shown.lstrip("+-"))
            continue
        fails.append(f"{where}: {shown} is not a figure of this section's index (nor listed in "
                     f"{ALLOWED})")
    unquoted = re.sub(r'"[^"]*"', '""', sentence)  # a word in quotes is named, not said
    said = list(SIGNIFICANT.finditer(unquoted))
    if said:
        ps = [float(p) for p in P_SHOWN.findall(sentence)]
        affirmed = [m for m in said if not NEGATION.search(unquoted[:m.start()])]
        if not ps:
            fails.append(f"{where}: says {said[0].group(0)!r} without its p (p X)")
        elif affirmed and not any(p <= 0.05 for p in ps):
            fails.append(f"{where}: says {affirmed[0].group(0)!r} with no p at or below 0.05 "
                         f"(shows p {', '.join(f'{p:g}' for p in ps)})")
    return fails


QUOTING = ("README.md", "docs")  # beside results/: the pages that quote results (module docstring)
RESULTS_LINK = re.compile(r"\]\((?:\.\./)?results/")


def quoting_files(root):
    """The checkout's ``README.md`` and the Markdown pages under ``docs/`` (its subfolders
    included) beside the results folder ``root``."""
    top = os.path.dirname(os.path.abspath(root))
    out = [os.path.join(top, QUOTING[0])]
    docs = os.path.join(top, QUOTING[1])
    for folder, dirs, names in sorted(os.walk(docs)) if os.path.isdir(docs) else ():
        dirs.sort()
        out += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".md")]
    return [p for p in out if os.path.isfile(p)]


def _files(root, index):
    """([(path, its table as a set, or None for a page whose sections and sentences name theirs)],
    every table)."""
    tables = list(dict.fromkeys(r["table"] for r in index["records"]))
    out = [(os.path.join(root, "README.md"), None)]
    out += [(path, None) for path in quoting_files(root)]
    for table in sorted(set(tables)):
        for name in ("results.md", "README.md"):
            path = os.path.join(root, table, name)
            if os.path.exists(path):
                out.append((path, {table}))
    return out, set(tables)


def check_prose(root, index):
    """Failures of every prose figure of the results (module docstring)."""
    allowed = read_allowed(root)
    files, known = _files(root, index)
    fails, cache, used = [], {}, {}
    for path, tables in files:
        if not os.path.exists(path):
            continue
        rel = os.path.normpath(os.path.relpath(path, root))
        listed = allowed.get(rel, set())
        used[rel] = set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        page = set()
        if os.path.dirname(os.path.abspath(path)) != os.path.abspath(root) and tables is None:
            text = RESULTS_LINK.sub("](", text)  # results/TABLE/... links name their tables
            page = {t for t in TABLE_LINK.findall(text) if t in known}  # a page quoting them
        lines = prose_lines(text)
        by_heading = {}
        for number, line, heading in lines:
            by_heading[number] = heading
        for first, sentence in sentences(lines):
            section = set(tables) if tables is not None else page | {
                t for t in TABLE_LINK.findall(by_heading[first]) if t in known}
            key = frozenset(section | {t for t in TABLE_LINK.findall(sentence) if t in known})
            if key not in cache:
                cache[key] = (index_figures(index, key, root), index_counts(index, key, root))
            fails += check_sentence(sentence, cache[key][0], listed, f"{rel}:{first}", used[rel])
            fails += check_counts(sentence, cache[key][1], f"{rel}:{first}")
    outside = not quoting_files(root)  # a results folder copied out of its checkout
    for rel, figures in sorted(allowed.items()):  # the list only holds what the prose needs
        if outside and rel.startswith(os.pardir + os.sep):
            continue  # a page beside the results, not there to read
        if rel not in used:
            fails.append(f"{ALLOWED} lists {rel}, whose prose the check does not read")
            continue
        fails += [f"{ALLOWED} lists {figure} for {rel}, which no sentence there needs (an index "
                  "figure, or gone)" for figure in sorted(figures - used[rel])]
    return fails
