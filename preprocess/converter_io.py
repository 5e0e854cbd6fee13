"""Converter I/O shared by ``preprocess/*_to_jsonl.py``: the options every converter takes, the papers'
truncations, writing a split atomically, reading JSONL with errors naming ``file:line``, and the
console entry that turns a converter's errors into a one-line message.

Every converter takes the options of :func:`add_arguments`:

* ``--stats``: print the corpus statistics beside the papers' figures (:mod:`preprocess.stats`).
* ``--paper-truncation NAME``: cut documents / summaries to the lengths of a paper
  (:data:`PAPER_TRUNCATION`), in words, keeping whole sentences: the sentence that crosses the
  limit is cut at it, the following ones dropped. ``--max-doc-words`` / ``--max-summary-words``
  set (or override) the limits. A truncated document is written as its list of sentences.
  ``fairseq-sum-prepare --max-src-tokens`` truncates again, in subword pieces.
* ``--sentence-splitter pysbd|regex``: the splitter of :func:`fairseq_sum_plugins.text.split_sentences`
  used for truncation and statistics (the same choice as ``fairseq-sum-prepare``'s).
* ``--target summary|lead``: what each example's ``summary`` is: the corpus's reference summary
  (default), or the document's lead, its first sentence (:func:`lead_sentence`; the document is kept
  whole). The lead is real text whose target is in the source: a small model trained from scratch
  learns to read its source on it within a few hundred updates, where it learns only a language model
  of the reference summaries (``recipes/newsroom/gate_lambda_sweep.sh``, ``results/``). A document
  without text is an error naming the example.

:func:`finish_example` applies the target and the truncation; every converter writes each example
through it.

The sentence splitter is loaded without importing fairseq, so converters run without it.
"""
import contextlib
import json
import os
import sys

from tqdm import tqdm

SPLITS = ("train", "valid", "test")

# name -> (max document words, max summary words, max sections, max words per section, where)
PAPER_TRUNCATION = {
    "etads": (400, 100, 0, 0, "ETADS §4.1: documents <= 400 tokens, summaries <= 100"),
    "mem2mem": (0, 200, 4, 500, "Mem2Mem App. A.2: 4 sections x 500 tokens, summaries <= 200 tokens"),
    "information_selection": (700, 0, 0, 0, "information selection §4.1: documents truncated to 700 tokens"),
    "topic_assistant": (512, 0, 0, 0, "Topic Assistant App. B: the encoder's 512 input tokens (BertSUM)"),
}


def parse_guarded(parser, argv, reads):
    """``parser``'s arguments, once the one output guard
    (:func:`fairseq_sum_plugins.cli.outputs.refuse_clobber`) has refused an ``--out`` whose split
    files are, or lie inside, what the converter reads (``reads(args)``: ``[(flag, path)]``; an
    input folder by its entries)."""
    from fairseq_sum_plugins.cli.outputs import contents, refuse_clobber

    args = parser.parse_args(argv)
    def entries(value):  # a folder by its entries; nargs lists flattened
        found = [contents(p) for p in (value if isinstance(value, list) else [value])]
        return [p for x in found for p in (x if isinstance(x, list) else [x])]

    refuse_clobber(parser, [(flag, entries(value)) for flag, value in reads(args)],
                   [("--out", os.path.join(args.out, f"{split}.jsonl")) for split in SPLITS])
    return args


def add_arguments(parser):
    """The options every converter takes (see the module docstring)."""
    g = parser.add_argument_group("statistics, truncation and target (preprocess/converter_io.py, preprocess/stats.py)")
    g.add_argument("--stats", action="store_true",
                   help="print examples / average words and sentences beside the papers' figures")
    g.add_argument("--paper-truncation", choices=sorted(PAPER_TRUNCATION),
                   help="; ".join(v[-1] for v in PAPER_TRUNCATION.values()))
    g.add_argument("--max-doc-words", type=int, default=None, help="cut documents after N words (0: off)")
    g.add_argument("--max-summary-words", type=int, default=None, help="cut summaries after N words (0: off)")
    g.add_argument("--sentence-splitter", choices=("regex", "pysbd"), default=None,
                   help="sentence splitter for truncation and --stats (default: that of "
                   "fairseq_sum_plugins/text.py, regex); use the one given to fairseq-sum-prepare")
    g.add_argument("--target", choices=("summary", "lead"), default="summary",
                   help="summary: the reference summaries; lead: each document's first sentence (document kept whole)")
    return parser


class ExampleError(ValueError):
    """An example the options asked for cannot be written (the converters report it like their own errors)."""


def limits(args):
    """``(max_doc_words, max_summary_words, max_sections, max_section_words)`` of ``args``."""
    doc, summ, sections, section_words, _ = PAPER_TRUNCATION.get(
        getattr(args, "paper_truncation", None) or "", (0, 0, 0, 0, ""))
    if getattr(args, "max_doc_words", None) is not None:
        doc = args.max_doc_words
    if getattr(args, "max_summary_words", None) is not None:
        summ = args.max_summary_words
    return doc, summ, sections, section_words


def split_sentences(text, splitter=None):
    """:func:`fairseq_sum_plugins.text.split_sentences` by ``splitter`` (None: its default); imported
    when first needed (it imports without fairseq)."""
    from fairseq_sum_plugins.text import DEFAULT_SENTENCE_SPLITTER
    from fairseq_sum_plugins.text import split_sentences as split

    return split(text, splitter or DEFAULT_SENTENCE_SPLITTER)


def truncate_sentences(sents, max_words):
    """The leading sentences of ``sents`` holding at most ``max_words`` words (0: all); the
    sentence crossing the limit is cut at it."""
    if not max_words:
        return list(sents)
    out, left = [], max_words
    for s in sents:
        words = s.split()
        if not words:
            continue
        if len(words) >= left:
            out.append(" ".join(words[:left]))
            break
        out.append(s)
        left -= len(words)
    return out


def truncate_text(text, max_words, splitter=None):
    """``text`` (string or list of sentences) cut after ``max_words`` words; unchanged when
    ``max_words`` is 0 or the text is short enough, else the list of kept sentences."""
    if not max_words:
        return text
    sents = split_sentences(text, splitter)
    if sum(len(s.split()) for s in sents) <= max_words:
        return text
    return truncate_sentences(sents, max_words)


def _first_text(document):
    """The first non-blank string of a document given as a string, or a list of sentences or sections."""
    if isinstance(document, str):
        return document
    for part in document or ():
        text = _first_text(part)
        if text.strip():
            return text
    return ""


def lead_sentence(document, splitter=None):
    """The first sentence of the document's first non-blank paragraph, or None if it has no text."""
    text = _first_text(document).strip()
    sents = split_sentences(text.split("\n")[0], splitter) if text else []
    return sents[0] if sents else None


def finish_example(example, args, doc_field="document", summary_field="summary"):
    """``example`` with its summary replaced by the document's lead under ``--target lead``, then its
    document / summary cut to the limits of ``args`` (in place)."""
    doc, summ, _, _ = limits(args)
    splitter = getattr(args, "sentence_splitter", None)
    if getattr(args, "target", "summary") == "lead":
        lead = lead_sentence(example[doc_field], splitter)
        if lead is None:
            raise ExampleError(f"--target lead: example {example.get('id', '?')} has no document text to take a lead sentence from")
        example[summary_field] = lead
    if doc:
        example[doc_field] = truncate_text(example[doc_field], doc, splitter)
    if summ:
        example[summary_field] = truncate_text(example[summary_field], summ, splitter)
    return example


@contextlib.contextmanager
def open_split(path):
    """``path`` opened for writing (UTF-8) under a temporary name that replaces ``path`` only when
    the block ends without an error. An interrupted converter thus leaves no partial split: the
    recipes skip conversion when ``test.jsonl`` (written last) exists, and must not find a
    truncated one."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            yield f
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    os.replace(tmp, path)


def write_split(args, split, examples, note=""):
    """Writes ``OUT/{split}.jsonl`` (each example truncated as asked), reports it, returns the count."""
    path = os.path.join(args.out, f"{split}.jsonl")
    with open_split(path) as f:
        for example in tqdm(examples, desc=f"write {split}", unit="ex", mininterval=1, leave=False):
            f.write(json.dumps(finish_example(example, args), ensure_ascii=False) + "\n")
    print(f"| {path}: {len(examples)} examples{note}")
    return len(examples)


def iter_jsonl(path, error, progress=True):
    """Yields ``(line number, where, object)`` for the non-blank lines of a JSONL file; a line that is not valid
    UTF-8 JSON (e.g. a truncated file) or not an object raises ``error`` naming ``path:line``. With
    ``progress`` a bar on stderr shows the share of the file read."""
    with open(path, "rb") as f, tqdm(total=os.path.getsize(path), desc=f"read {os.path.basename(path)}",
                                     unit="B", unit_scale=True, mininterval=1, leave=False,
                                     disable=not progress) as bar:
        for lineno, raw in enumerate(f, 1):
            bar.update(len(raw))
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                obj = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise error(f"{where}: invalid JSON line (truncated file?): {e}") from None
            if not isinstance(obj, dict):
                raise error(f"{where}: expected a JSON object")
            yield lineno, where, obj


def run_converter(name, main, errors):
    """Console entry of a converter: its errors become a one-line message and exit status 1."""
    try:
        main()
    except (errors, ExampleError) as e:
        sys.exit(f"{name}: error: {e}")


def read_jsonl_dir(directory):
    """``{split: examples}`` of a converter's output directory (missing splits are skipped)."""
    splits = {}
    for split in SPLITS:
        path = os.path.join(directory, split + ".jsonl")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                splits[split] = [json.loads(line) for line in f if line.strip()]
    return splits
