"""Tiny corpora in the raw formats of the papers' datasets, for the converter and recipe tests.

Every ``write_*`` function takes a folder and the number of examples per split (``sizes``, over
:data:`SPLIT_SIZES`) and returns what a recipe or a converter is given on its command line. The text
is a seeded sequence of news-like sentences; the reference summary repeats the document's lead
sentence, so a model trained for a few updates has something to copy. :data:`STORY` and
:func:`cohan_record` are the fixed examples of the converter tests.
"""
import gzip
import json
import os
import random

from preprocess.cnndm_to_jsonl import hashhex

SPLIT_SIZES = {"train": 24, "valid": 4, "test": 4}

_WORDS = ("council police minister school hospital team club company government report plans "
          "people town city park river bridge road station market year week month season project "
          "money jobs homes water power health safety fans players coach officers residents workers "
          "said announced approved opened closed raised warned agreed found expected reported").split()
_FUNCTION = "the a of to in for on with after before new local".split()


def sentence(rng, n_words=None):
    """One capitalised sentence of ``n_words`` words ending with a period."""
    n = n_words or rng.randint(8, 16)
    words = [rng.choice(_WORDS if i % 2 else _FUNCTION) for i in range(n)]
    return " ".join(words).capitalize() + "."


def document(rng, n_sents=None, n_words=None):
    """A list of sentences."""
    return [sentence(rng, n_words) for _ in range(n_sents or rng.randint(5, 9))]


def example(rng, n_sents=None, n_words=None):
    """``(document sentences, summary)``: the summary repeats the lead sentence."""
    sents = document(rng, n_sents, n_words)
    return sents, sents[0]


def _sizes(sizes):
    return dict(SPLIT_SIZES, **(sizes or {}))


# ------------------------------------------------------------------ XSum


def write_xsum_hf(folder, sizes=None, seed=0):
    """Hugging Face ``xsum`` JSONL: ``train/validation/test.jsonl`` with ``document`` (sentences on
    lines), ``summary`` and an integer ``id`` (as in the released files). Returns the folder."""
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    names = {"train": "train", "valid": "validation", "test": "test"}
    next_id = 30000000
    for split, n in _sizes(sizes).items():
        with open(os.path.join(folder, names[split] + ".jsonl"), "w", encoding="utf-8") as f:
            for _ in range(n):
                sents, summary = example(rng)
                next_id += rng.randint(1, 999)
                f.write(json.dumps({"document": "\n".join(sents), "summary": summary, "id": next_id}) + "\n")
    return str(folder)


RAW_XSUM = """[SN]URL[SN]
http://www.bbc.co.uk/news/{id}

[SN]TITLE[SN]
{title}

[SN]FIRST-SENTENCE[SN]
{summary}

[SN]RESTBODY[SN]
{body}
"""


def write_xsum_raw(folder, sizes=None, seed=0):
    """The raw BBC extraction: ``bbc-summary-data/{id}.summary`` files (``[SN]NAME[SN]`` sections,
    share-widget lines inside the body) and the official split file. Returns ``(raw dir, split file)``."""
    rng = random.Random(seed)
    raw = os.path.join(folder, "bbc-summary-data")
    os.makedirs(raw, exist_ok=True)
    ids = {"train": [], "validation": [], "test": []}
    names = {"train": "train", "valid": "validation", "test": "test"}
    next_id = 35000000
    for split, n in _sizes(sizes).items():
        for _ in range(n):
            next_id += rng.randint(1, 999)
            sents, summary = example(rng)
            body = sents[:2] + ["Share this with", "Email", "Facebook"] + sents[2:]
            with open(os.path.join(raw, f"{next_id}.summary"), "w", encoding="utf-8") as f:
                f.write(RAW_XSUM.format(id=next_id, title=sentence(rng, 5), summary=summary, body="\n".join(body)))
            ids[names[split]].append(str(next_id))
    split_file = os.path.join(folder, "XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json")
    with open(split_file, "w", encoding="utf-8") as f:
        json.dump(ids, f)
    return raw, split_file


# ------------------------------------------------------------------ CNN / Daily Mail

STORY = """(CNN) -- The first paragraph of the story.

A second paragraph. With two sentences.

@highlight

First highlight

@highlight

Second highlight here
"""


def story(sents, highlights):
    """A ``.story`` file: paragraphs of two sentences, then one ``@highlight`` block per highlight."""
    paras = [" ".join(sents[i:i + 2]) for i in range(0, len(sents), 2)]
    return "\n\n".join(paras + [f"@highlight\n\n{h}" for h in highlights]) + "\n"


def write_cnndm_stories(folder, sizes=None, seed=0):
    """The raw release: ``cnn/stories`` and ``dailymail/stories`` (``{sha1(url)}.story``) plus
    abisee's ``url_lists/all_{train,val,test}.txt``. Returns ``(stories dirs, url lists dir)``."""
    rng = random.Random(seed)
    dirs = [os.path.join(folder, "cnn", "stories"), os.path.join(folder, "dailymail", "stories")]
    lists = os.path.join(folder, "url_lists")
    for d in dirs + [lists]:
        os.makedirs(d, exist_ok=True)
    names = {"train": "all_train", "valid": "all_val", "test": "all_test"}
    for split, n in _sizes(sizes).items():
        urls = []
        for i in range(n):
            site = i % 2
            url = (f"http://www.cnn.com/2014/{split}/{i}/story.html" if site == 0 else
                   f"http://www.dailymail.co.uk/news/article-{split}-{i}/story.html")
            sents = document(rng)
            with open(os.path.join(dirs[site], hashhex(url) + ".story"), "w", encoding="utf-8") as f:
                f.write(story(sents, [sents[0].rstrip("."), sentence(rng, 6).rstrip(".")]))
            urls.append(url)
        with open(os.path.join(lists, names[split] + ".txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(urls) + "\n")
    return dirs, lists


# ------------------------------------------------------------------ arXiv / PubMed (Cohan et al.)


def cohan_record(i, empty=False):
    """One line of the released ``pubmed-dataset`` / ``arxiv-dataset`` files (fixed text)."""
    return {
        "article_id": f"PMC{i}",
        "article_text": [] if empty else ["first sentence of the article .", "a second one , with @xmath0 ."],
        "abstract_text": ["<S> the abstract says this . </S>", "<S> and that . </S>"],
        "labels": None,
        "section_names": ["introduction", "methods"],
        "sections": [] if empty else [["first sentence of the article ."], ["a second one , with @xmath0 ."]],
    }


def write_cohan(folder, sizes=None, seed=0):
    """``train.txt`` / ``val.txt`` / ``test.txt``, one JSON object per line with sections and an
    abstract in ``<S> ... </S>`` sentences (lower-cased, tokenized, as released). Returns the folder."""
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    names = {"train": "train", "valid": "val", "test": "test"}
    for split, n in _sizes(sizes).items():
        with open(os.path.join(folder, names[split] + ".txt"), "w", encoding="utf-8") as f:
            for i in range(n):
                sections = [[s.lower()[:-1] + " ." for s in document(rng, rng.randint(2, 4))] for _ in range(3)]
                article = [s for sec in sections for s in sec]
                abstract = [f"<S> {article[0]} </S>", f"<S> {article[1]} </S>"]
                f.write(json.dumps({"article_id": f"PMC{split}{i}", "article_text": article, "abstract_text": abstract,
                                    "labels": None, "section_names": ["introduction", "methods", "results"],
                                    "sections": sections}) + "\n")
    return str(folder)


# ------------------------------------------------------------------ Newsroom


def write_newsroom(folder, sizes=None, seed=0, doc_words=110):
    """The release: ``train/dev/test.jsonl.gz`` with ``url``, ``archive``, ``title``, ``date``,
    ``text`` (paragraphs separated by blank lines), ``summary``, ``density`` and its bins. Documents
    hold at least ``doc_words`` words and summaries at least 10 (the information selection filter).
    Returns the folder."""
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    names = {"train": "train", "valid": "dev", "test": "test"}
    bins = ("abstractive", "mixed", "extractive")
    for split, n in _sizes(sizes).items():
        with gzip.open(os.path.join(folder, names[split] + ".jsonl.gz"), "wt", encoding="utf-8") as f:
            for i in range(n):
                sents = []
                while sum(len(s.split()) for s in sents) < doc_words:
                    sents.append(sentence(rng, 12))
                paras = [" ".join(sents[j:j + 3]) for j in range(0, len(sents), 3)]
                density_bin = bins[i % 3]
                f.write(json.dumps({
                    "url": f"http://www.example.com/{split}/{i}", "archive": f"http://web.archive.org/{split}/{i}",
                    "title": sentence(rng, 5), "date": "20150101000000", "text": "\n\n".join(paras),
                    "summary": sents[0], "compression": 10.0, "coverage": 0.9,
                    "density": {"abstractive": 1.0, "mixed": 4.0, "extractive": 12.0}[density_bin],
                    "compression_bin": "medium", "coverage_bin": "high", "density_bin": density_bin,
                }) + "\n")
    return str(folder)


def prepared_jsonl_work(root, seed=0):
    """JSONL splits of SPLIT_SIZES under ``root`` prepared by fairseq-sum-prepare into ``root/work``
    (~110 sentencepiece pieces, sources cut at 128, summaries at 32); returns ``root/work``."""
    import json

    from preprocess import prepare

    rng = random.Random(seed)
    for split, n in SPLIT_SIZES.items():
        with open(os.path.join(root, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            for _ in range(n):
                sents, summary = example(rng)
                f.write(json.dumps({"document": "\n".join(sents), "summary": summary}) + "\n")
    prepare.main(["--jsonl-dir", str(root), "--out", os.path.join(root, "work"), "--vocab-size", "150",
                  "--max-src-tokens", "128", "--max-tgt-tokens", "32", "--workers", "1", "--num-threads", "1"])
    return root / "work" if hasattr(root, "joinpath") else os.path.join(root, "work")
