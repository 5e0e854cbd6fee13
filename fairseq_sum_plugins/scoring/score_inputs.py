"""Inputs of the scorers: ``fairseq-generate`` output, line files, JSONL references, prepared data.

No fairseq import: the scorer (``fairseq-sum-score``), the significance test
(``fairseq-sum-compare``) and the Topic Assistant's analyses read their inputs here, through the
same options (:func:`add_reference_options`) and the same loaders (:func:`generate_inputs`,
:func:`hypothesis_inputs`).

References. ``fairseq-generate`` prints the binarized targets as ``T-`` lines, cut by
``fairseq-sum-prepare --max-tgt-tokens``. ``fairseq-sum-prepare`` therefore writes the untruncated
gold summaries beside the binaries, ``DATA/bin/{split}.ref.jsonl``: line ``i`` is binarized example
``i`` as ``{"id": ..., "file": RAW, "line": N, "summary": [sentences]}``, where ``RAW:N`` is the
source record it came from (so ``--skip-empty`` drops stay aligned). The data folder is ``--data``,
else the absolute path of fairseq's log line ``DATA SPLIT src-tgt N examples`` in the output itself
or in ``GEN.log`` beside it (where ``recipes/common.sh`` keeps generate's stderr); a relative path
there is not resolved (where fairseq-generate ran is unknown), nor is any folder searched. The
folder's split must have the log's ``N`` examples. References come from ``--ref`` / ``--ref-jsonl``
/ the data folder; without any, a generate output is refused unless ``--refs t-lines`` asks for
its ``T-`` lines by name. Loaded references are checked against the ``T-`` lines
(:func:`check_references`): each ``T-`` line, compared on its letters and digits, must start its
reference, else the error names the first sample id that differs (another split, data set or
preparation); a reference that only extends an uncut ``T-`` line cannot be told from a cut one.
``--data`` naming another folder than generate's log must hold the same dictionaries
(``dict.*.txt``) and ``{split}.ref.jsonl``. The folder in the log is read whole, spaces included
(everything between fairseq's logger name and its last three words).

A decoding is matched to a data folder by content, never by the spelling of a path
(:func:`check_decoding_of`, which ``fairseq-sum-probe --eval-generate-output`` uses as the scorer
does): the decoded split, the log's count of examples against the folder's split, the folder of
the log (when it exists) against the given one by dictionaries and references, and the ``T-`` lines
against the folder's references; a relative or vanished folder in the log is not an error.
"""
import argparse
import filecmp
import json
import os
import re
import struct
import sys
import unicodedata

_LINE_RE = re.compile(r"^([THDS])-(\d+)\t(.*)$")
# the data folder is everything between the logger's name and the last three words, so a path with
# spaces is read whole (the longest match: the split and the languages hold no space)
_LOADED_RE = re.compile(r"fairseq\.tasks\.\w+\s*[:|]\s*(.+) (\w+) \S+-\S+ (\d+) examples\s*$")
_SUBSET_RE = re.compile(r"^Generate (\S+) with beam=")
T_LINES = "t-lines"
# in a T- line: an unknown piece as fairseq prints it (escaped), as the dictionary writes it, as
# sentencepiece decodes it; the sentence separator fairseq-sum-prepare inserts
_UNK_RE = re.compile(r"<<unk>>|<unk>|\u2047")
_SEP_TOKEN_RE = re.compile(r"<\s*sep\s*>")


class ScoreInputError(ValueError):
    """Bad scorer input; the message names the file (and line)."""


def warn(msg):
    print(f"warning: {msg}", file=sys.stderr)


def decoded_lines(path):
    """Yield ``(line_number, text)`` of a UTF-8 file; invalid UTF-8 is an error naming the line."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                yield lineno, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise ScoreInputError(f"{path}:{lineno}: not valid UTF-8 ({e.reason} at byte "
                                      f"{e.start})") from None


def read_lines(path, what="summaries"):
    """The lines of a one-item-per-line file; an empty file is an error naming it."""
    lines = [text for _, text in decoded_lines(path)]
    if not lines:
        raise ScoreInputError(f"{path}: empty file (no {what})")
    return lines


def jsonl_objects(path):
    """``(physical line number, parsed value)`` of each non-blank line of a UTF-8 JSONL file; bad
    bytes or bad JSON are a :class:`ScoreInputError` naming the line."""
    for lineno, line in decoded_lines(path):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as e:
            raise ScoreInputError(
                f"{path}:{lineno}: invalid JSON ({e.msg}, column {e.colno})") from None


def read_jsonl_records(path, field):
    """``{physical line number: field value}`` of a JSONL file (blank lines skipped); a list value
    (sentences) is joined with newlines. Bad JSON or a missing field names the line."""
    out = {}
    for lineno, obj in jsonl_objects(path):
        value = obj.get(field) if isinstance(obj, dict) else None
        if value is None:
            raise ScoreInputError(f"{path}:{lineno}: no field {field!r}")
        out[lineno] = "\n".join(value) if isinstance(value, list) else str(value)
    if not out:
        raise ScoreInputError(f"{path}: no JSON records")
    return out


def read_jsonl_field(path, field):
    """The values of ``field``, one per non-blank line, in file order."""
    return list(read_jsonl_records(path, field).values())


# ------------------------------------------------------------------------------ generate output
class GenerateOutput:
    """Parsed ``fairseq-generate`` stdout: ``hyps`` (D- lines, else H-), ``refs`` (T-) and
    ``sources`` (S-) keyed by sample id, ``subset`` (from the closing ``Generate SUBSET`` line),
    ``loaded`` = (data dir, split, number of examples) when fairseq's log line is present, and
    ``size``, the split's number of examples once :func:`generate_inputs` knows it."""

    def __init__(self, path):
        self.path = str(path)
        hyp, det, self.refs, self.sources = {}, {}, {}, {}
        self.subset, self.loaded, self.size = None, None, None
        for _, line in decoded_lines(path):
            m = _LINE_RE.match(line)
            if m:
                kind, idx, rest = m.group(1), int(m.group(2)), m.group(3)
                if kind == "T":
                    self.refs.setdefault(idx, rest)
                elif kind == "S":
                    self.sources.setdefault(idx, rest)
                else:  # H-/D-: "<score>\t<text>"
                    (det if kind == "D" else hyp).setdefault(
                        idx, rest.split("\t", 1)[1] if "\t" in rest else "")
                continue
            self._log_line(line)
        hyp.update(det)
        self.hyps = hyp
        log = self.path + ".log"
        if self.loaded is None and os.path.isfile(log):
            for _, line in decoded_lines(log):
                self._log_line(line)

    def _log_line(self, line):
        m = _SUBSET_RE.match(line)
        if m:
            self.subset = self.subset or m.group(1)
        m = _LOADED_RE.search(line)
        if m and (self.subset is None or m.group(2) == self.subset):
            self.loaded = (m.group(1), m.group(2), int(m.group(3)))


def split_size(data, split):
    """Number of examples of a binarized split (the item count in the header of its ``.idx``)."""
    for name in sorted(os.listdir(data)):
        if name.startswith(split + ".") and name.endswith(".idx"):
            with open(os.path.join(data, name), "rb") as f:
                head = f.read(26)
            if len(head) == 26 and head[:9] == b"MMIDIDX\x00\x00":
                return struct.unpack("<Q", head[18:26])[0]
    return None


def find_data_dir(gen, data=None, split=None):
    """(data dir or None, split, split size or None) of a :class:`GenerateOutput`.

    The folder is ``data`` (``--data``), else the absolute path of fairseq's log line; a relative
    one is left unresolved. ``split`` must be the decoded subset. The size is the folder's (which
    must equal the log's count of examples), else the log's."""
    if split and gen.subset and split != gen.subset:
        raise ScoreInputError(f"--split {split}, but {gen.path} decodes the {gen.subset} split")
    split = split or gen.subset or (gen.loaded[1] if gen.loaded else None) or "test"
    logged = gen.loaded if gen.loaded and gen.loaded[1] == split else None
    explicit = bool(data)
    if data:
        if not os.path.isdir(data):
            raise ScoreInputError(f"--data {data}: no such directory")
    elif logged and os.path.isabs(logged[0]):
        data = logged[0]
        if not os.path.isdir(data):
            raise ScoreInputError(
                f"{gen.path}: generate's log names the data folder {data}, which does "
                "not exist (moved?): pass --data DATA/bin")
    if data is None:
        return None, split, logged[2] if logged else None
    size = split_size(data, split)
    if size is None:
        raise ScoreInputError(f"{data}: no binarized {split} split ({split}.*.idx)")
    if explicit:
        _check_against_log(data, split, logged, gen.path)
    if logged and logged[2] != size:
        raise ScoreInputError(
            f"{data}: the {split} split has {size} examples, but {gen.path} decoded one "
            f"of {logged[2]} (generate's log names {logged[0]}): another data folder, or "
            "prepared again since")
    return data, split, size


def data_differences(data, other, split):
    """The files of two data folders that differ by content: ``{split}.ref.jsonl`` and their
    dictionaries (``dict.*.txt``), in that order (a file in one folder only differs); [] for
    copies."""
    names = sorted({n for d in (data, other) for n in os.listdir(d)
                    if n.startswith("dict.") and n.endswith(".txt")})
    out = []
    for name in [f"{split}.ref.jsonl"] + names:
        ours, theirs = (os.path.join(d, name) for d in (data, other))
        found = [os.path.isfile(f) for f in (ours, theirs)]
        if any(found) and not (all(found) and filecmp.cmp(ours, theirs, shallow=False)):
            out.append(name)
    return out


def _also(differ):
    return f" (and {', '.join(differ[1:])})" if len(differ) > 1 else ""


def _check_against_log(data, split, logged, path):
    """``--data`` and the folder of generate's log must hold the same dictionaries and references
    (a copy is fine; neither holding references is fine too: they then come from ``--ref`` /
    ``--ref-jsonl``)."""
    if not (logged and os.path.isabs(logged[0]) and os.path.isdir(logged[0])):
        return
    if os.path.realpath(logged[0]) == os.path.realpath(data):
        return
    differ = data_differences(data, logged[0], split)
    if differ:
        raise ScoreInputError(
            f"--data {data}, but {path} was decoded from {logged[0]} (generate's log), "
            f"whose {differ[0]} differs{_also(differ)}: pass that folder")


def check_decoding_of(gen, data, split):
    """Raise a :class:`ScoreInputError` unless the :class:`GenerateOutput` ``gen`` decodes the
    ``split`` of the data folder ``data``, matched by content as the scorer matches it (see the
    module docstring), from any working folder; returns the split's size. The message says what
    differs, the caller names the decoding."""
    if gen.subset is not None and gen.subset != split:  # its closing "Generate SPLIT ..." line
        raise ScoreInputError(f"a decoding of the {gen.subset} split, not of {split}")
    logged = gen.loaded if gen.loaded and gen.loaded[1] == split else None
    if logged and os.path.isabs(logged[0]) and os.path.isdir(logged[0]) \
            and os.path.realpath(logged[0]) != os.path.realpath(data):
        differ = data_differences(data, logged[0], split)
        if differ:
            raise ScoreInputError(f"a decoding of {logged[0]} (generate's log), not of {data}: "
                                  f"their {differ[0]} differs{_also(differ)}")
    size = split_size(data, split)
    if logged and size is not None and logged[2] != size:
        raise ScoreInputError(
            f"a decoding of {logged[2]} {split} examples (generate's log names "
            f"{logged[0]}), but the {split} split of {data} has {size}")
    records = read_prepared_references(data, split, size)
    ids = sorted(i for i in gen.refs if records is not None and 0 <= i < len(records))
    if ids:
        check_references(gen.path, ids, [prepared_summary(records[i]) for i in ids],
                         [gen.refs[i] for i in ids], os.path.join(data, f"{split}.ref.jsonl"))
    return size


def read_prepared_references(data, split, size=None):
    """The records of ``DATA/{split}.ref.jsonl`` (see module docstring), or None when absent; with
    the split's ``size``, their count is checked."""
    path = os.path.join(data, f"{split}.ref.jsonl")
    if not os.path.isfile(path):
        return None
    records = []
    for lineno, line in decoded_lines(path):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            rec = None
        if not isinstance(rec, dict) or not isinstance(rec.get("summary"), list):
            raise ScoreInputError(f"{path}:{lineno}: not a reference record of fairseq-sum-prepare")
        records.append(rec)
    if size is not None and len(records) != size:
        raise ScoreInputError(f"{path} has {len(records)} records for {size} binarized examples "
                              "(prepared again since?)")
    return records


def prepared_summary(record):
    """The reference text of one ``{split}.ref.jsonl`` record (sentences joined by newlines)."""
    return "\n".join(record["summary"])


def jsonl_references(path, field, ids, records=None, size=None):
    """References of sample ``ids`` from a raw JSONL: through the reference index ``records`` of
    the data folder when known (records dropped by ``--skip-empty`` stay aligned), else record
    ``i`` for sample ``i`` (then the file must hold the split's ``size`` records when known)."""
    if records is None:
        raw = read_jsonl_field(path, field)
        if (size is not None and len(raw) != size) or ids[-1] >= len(raw):
            of = (f"a split of {size} examples" if size is not None
                  else f"sample ids up to {ids[-1]}")
            raise ScoreInputError(
                f"{path} has {len(raw)} records for {of}: record i cannot be sample i "
                "(pass --data DATA/bin, whose reference index maps examples to records)")
        return [raw[i] for i in ids]
    by_line = read_jsonl_records(path, field)
    names = {os.path.realpath(str(r.get("file", ""))) for r in records}
    if os.path.realpath(path) not in names:
        warn(f"--ref-jsonl {path}: the data was prepared from {sorted(names)}; matching by line "
             "number")
    out = []
    for i in ids:
        line = records[i].get("line")
        if line not in by_line:
            raise ScoreInputError(f"{path}: no record at line {line} (sample {i} came from "
                                  f"{records[i].get('file')}:{line})")
        out.append(by_line[line])
    return out


def line_references(path, ids, size=None):
    """References of sample ``ids`` from a file of one reference per line (line ``i`` = sample
    ``i``)."""
    refs = read_lines(path, "references")
    if (size is not None and len(refs) != size) or ids[-1] >= len(refs):
        of = f"a split of {size} examples" if size is not None else f"sample ids up to {ids[-1]}"
        raise ScoreInputError(f"{path} has {len(refs)} references for {of}")
    return [refs[i] for i in ids]


# ------------------------------------------------------------------------- references vs T- lines
def _comparable(text, t_line=False):
    """Letters and digits of ``text``, NFKC-normalised and lower-cased (what tokenization,
    sentencepiece and detokenization keep). In a ``t_line``, ``<sep>`` is dropped and an unknown
    piece becomes ``\\0``, a wildcard."""
    text = text.replace("\0", "")
    if t_line:
        text = _UNK_RE.sub("\0", _SEP_TOKEN_RE.sub(" ", text))
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(c for c in text if c.isalnum() or c == "\0")


def starts_like(reference, t_line):
    """True when the (possibly cut) ``t_line`` is the start of ``reference`` on
    :func:`_comparable` text; an unknown piece stands for any characters."""
    ref = _comparable(reference)
    first, *rest = _comparable(t_line, t_line=True).split("\0")
    if not ref.startswith(first):
        return False
    pos = len(first)
    for part in rest:  # the leftmost match of each part leaves the most room for the next
        pos = ref.find(part, pos)
        if pos < 0:
            return False
        pos += len(part)
    return True


def check_references(path, ids, refs, t_lines, source):
    """Each ``T-`` line of ``path`` must start its reference from ``source`` (:func:`starts_like`);
    the first sample that differs is an error."""
    for i, ref, t in zip(ids, refs, t_lines):
        if not starts_like(ref, t):
            raise ScoreInputError(
                f"sample {i}: the reference from {source} ({ref[:60]!r}) does not start with the "
                f"T- line of {path} ({t[:60]!r}): references of another split, data set or "
                "preparation")


def check_ids(ids, path, size=None):
    """Warn about sample ids missing from ``path``: gaps, and with the split's ``size`` the ids at
    its end too; an id beyond ``size`` is an error."""
    if size is not None and ids and ids[-1] >= size:
        raise ScoreInputError(f"{path}: sample id {ids[-1]} but the split has {size} examples "
                              "(output of another data set?)")
    expected = range(size if size is not None else ids[-1] + 1)
    missing = sorted(set(expected) - set(ids))
    # e.g. examples dropped by --skip-invalid-size-inputs-valid-test: the score covers fewer
    if missing:
        of = f" of the split's {size}" if size is not None else ""
        warn(f"{len(missing)} sample ids missing from {path} (ids {missing[:10]}); "
             f"scoring the {len(ids)} present{of}")


def read_generate_output(path, size=None):
    """(ids, hyps, refs) from ``fairseq-generate`` stdout, sorted by sample id (``T-`` references).

    D- lines (detokenized) are used when present, else H-. With ``--nbest`` > 1 the first
    hypothesis of each id is kept. Missing ids are warned about (against ``size``, the split's
    number of examples, when given).
    """
    gen = path if isinstance(path, GenerateOutput) else GenerateOutput(path)
    if not gen.hyps:
        raise ScoreInputError(f"{gen.path}: no H-/D- lines (is this fairseq-generate output?)")
    missing = sorted(set(gen.hyps) - set(gen.refs))
    if missing:
        raise ScoreInputError(
            f"{gen.path}: hypotheses without a T- reference line, ids {missing[:10]}")
    extra = sorted(set(gen.refs) - set(gen.hyps))
    if extra:
        warn(f"{len(extra)} references without a hypothesis ignored (ids {extra[:10]})")
    ids = sorted(gen.hyps)
    check_ids(ids, gen.path, size)
    return ids, [gen.hyps[i] for i in ids], [gen.refs[i] for i in ids]


def read_generate_sources(path):
    """{sample id: source text} from the S- lines of ``fairseq-generate`` stdout."""
    return (path if isinstance(path, GenerateOutput) else GenerateOutput(path)).sources


# --------------------------------------------------------------------------- the shared loaders
def int_at_least(low):
    """argparse type: an integer >= ``low``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value
    return parse


def add_reference_options(p):
    """The reference options of ``fairseq-sum-score`` and ``fairseq-sum-compare`` (the scoring
    options: :func:`fairseq_sum_plugins.scoring.rouge.add_scorer_options`)."""
    refs = p.add_mutually_exclusive_group()
    refs.add_argument("--ref", metavar="FILE",
                      help="references, one per line (line i = hypothesis line i / sample id i)")
    refs.add_argument(
        "--ref-jsonl", metavar="FILE",
        help="references from the raw JSONL records (through --data's reference index "
        "when it has one, else record i = hypothesis line i / sample id i)")
    refs.add_argument(
        "--refs", choices=[T_LINES],
        help="t-lines: score a generate output against its T- lines, the binarized targets "
        "cut by fairseq-sum-prepare --max-tgt-tokens (default: the untruncated "
        "references of --data, --ref or --ref-jsonl)")
    p.add_argument("--ref-field", default="summary",
                   help="JSONL field of the reference (default: summary)")
    p.add_argument("--data", metavar="DIR",
                   help="binarized data dir of fairseq-sum-prepare (untruncated references "
                        "SPLIT.ref.jsonl, reference index, split size); default: the absolute path "
                        "in the generate output's log (OUT.log), if any")
    p.add_argument("--split", help="split of --data (default: the generate output's, else test)")


def _warn_truncated_targets(path, data, split):
    """Warn that the T- lines are scored, unless prepare_args.json shows they were not cut."""
    if data:
        try:
            with open(os.path.join(data, "prepare_args.json"), encoding="utf-8") as f:
                stats = json.load(f)["stats"]["encode"][split]
            if stats.get("tgt_truncated") == 0:
                return
        except (OSError, ValueError, KeyError, TypeError):
            pass
    warn(f"scoring against the T- lines of {path} (--refs t-lines): they are the binarized "
         "targets, cut where fairseq-sum-prepare --max-tgt-tokens truncated the summaries")


def _no_references(gen, data, split):
    why = f"{data} has no {split}.ref.jsonl" if data else "no data folder"
    if data is None and gen.loaded and not os.path.isabs(gen.loaded[0]):
        why += (f" (generate's log names {gen.loaded[0]!r}, relative to where fairseq-generate "
                "ran: pass it as --data)")
    return (
        f"{gen.path}: no references ({why}): pass --data DATA/bin (the untruncated summaries of "
        "fairseq-sum-prepare), --ref-jsonl RAW.jsonl or --ref FILE, or score the T- lines, cut by "
        "--max-tgt-tokens, with --refs t-lines")


def generate_inputs(path, args):
    """(ids, hyps, refs, :class:`GenerateOutput`) of a ``fairseq-generate`` output, references as
    ``args`` (:func:`add_reference_options`) say; see the module docstring."""
    gen = GenerateOutput(path)
    data, split, size = find_data_dir(gen, args.data, args.split)
    gen.size = size
    ids, hyps, t_lines = read_generate_output(gen, size)
    if args.refs == T_LINES:
        _warn_truncated_targets(gen.path, data, split)
        if size is None:
            warn(f"{gen.path}: the split's size is unknown (no --data, no generate log): sample "
                 f"ids missing after {ids[-1]} cannot be reported")
        return ids, hyps, t_lines, gen
    records = read_prepared_references(data, split, size) if data else None
    if args.ref:
        refs, source = line_references(args.ref, ids, size), args.ref
    elif args.ref_jsonl:
        refs, source = jsonl_references(args.ref_jsonl, args.ref_field, ids, records,
                                        size), args.ref_jsonl
    elif records is not None:
        refs, source = [prepared_summary(records[i])
                        for i in ids], os.path.join(data, f"{split}.ref.jsonl")
    else:
        raise ScoreInputError(_no_references(gen, data, split))
    check_references(gen.path, ids, refs, t_lines, source)
    return ids, hyps, refs, gen


def hypothesis_inputs(path, args):
    """(ids, hyps, refs) of a file of one hypothesis per line (line ``i`` = id ``i``). With
    ``--data`` the file must cover its split; references from ``--ref``, ``--ref-jsonl`` or
    ``--data``."""
    hyps = read_lines(path, "hypotheses")
    ids = list(range(len(hyps)))
    if args.refs == T_LINES:
        raise ScoreInputError(
            f"--refs t-lines needs a fairseq-generate output ({path} has no T- lines)")
    records = size = None
    if args.data:
        split = args.split or "test"
        if not os.path.isdir(args.data):
            raise ScoreInputError(f"--data {args.data}: no such directory")
        size = split_size(args.data, split)
        if size is None:
            raise ScoreInputError(f"{args.data}: no binarized {split} split ({split}.*.idx)")
        if len(hyps) != size:
            raise ScoreInputError(
                f"{path} has {len(hyps)} hypotheses, but the {split} split of {args.data} "
                f"has {size} examples (line i = example i)")
        records = read_prepared_references(args.data, split, size)
    if args.ref:
        refs = read_lines(args.ref, "references")
    elif args.ref_jsonl:
        refs = jsonl_references(args.ref_jsonl, args.ref_field, ids, records, len(hyps))
    elif records is not None:
        refs = [prepared_summary(r) for r in records]
    else:
        raise ScoreInputError(
            f"{path}: no references: pass --ref FILE, --ref-jsonl FILE or --data DATA/bin")
    if len(hyps) != len(refs):
        raise ScoreInputError(
            f"line count mismatch: {len(hyps)} hypotheses vs {len(refs)} references")
    return ids, hyps, refs
