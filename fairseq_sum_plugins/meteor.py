"""METEOR of summaries (``fairseq-sum-score --meteor``; TP-Transformer Table 2): nltk's METEOR
with WordNet read from the local WordNet 3.0 database of Debian's ``wordnet-base`` package.

Per pair, with unigram matches in stages exact -> Porter stem -> WordNet synonym (nltk
``meteor_score``, alpha 0.9, beta 3, gamma 0.5)::

    P = m / |hyp|, R = m / |ref|, Fmean = P R / (alpha P + (1 - alpha) R)
    penalty = gamma (chunks / m)^beta,  METEOR = Fmean (1 - penalty)

Words are the lower-cased letters/digits runs of :func:`fairseq_sum_plugins.rouge.rouge_words`
(punctuation is not a word); the sentences of a summary are joined. The corpus score is the mean
over summaries. WordNet comes from ``$WORDNET_DIR`` or ``/usr/share/wordnet`` (``apt-get install
wordnet-base``, done by ``scripts/install.sh``): nothing is downloaded. That package ships no
``lexnames`` file, which nltk's reader opens; its fixed content (WordNet's 45 lexicographer file
names) is supplied here. nltk opens corpora only under its data path, so the folder is appended
to ``nltk.data.path``. A missing WordNet is an error saying how to install it.
"""
import functools
import io
import os

from .rouge import rouge_words

WORDNET_DIR = "/usr/share/wordnet"
_LEXNAMES = """adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute
noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group
noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession
noun.process noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body
verb.change verb.cognition verb.communication verb.competition verb.consumption verb.contact
verb.creation verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative
verb.weather adj.ppl""".split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_NEEDED = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb", "index.adj",
           "index.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc")


def wordnet_dir():
    """The WordNet database folder; raises a clear error when it is missing."""
    path = os.environ.get("WORDNET_DIR") or WORDNET_DIR
    missing = [f for f in _NEEDED if not os.path.isfile(os.path.join(path, f))]
    if missing:
        raise RuntimeError(f"METEOR needs the WordNet database in {path} (missing {', '.join(missing)}): "
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


def meteor_scores(hyps, refs):
    """Per-pair METEOR of parallel lists."""
    wordnet = load_wordnet()
    return [meteor_pair(h, r, wordnet) for h, r in zip(hyps, refs)]
