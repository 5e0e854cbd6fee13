"""Inputs of the scorers: ``fairseq-generate`` output, line files, JSONL references, prepared data.

No fairseq import: the scorer (``fairseq-sum-score``), the significance test and the Topic
Assistant's analyses read their inputs here.

References. ``fairseq-generate`` prints the binarized targets as ``T-`` lines, cut by
``fairseq-sum-prepare --max-tgt-tokens``. ``fairseq-sum-prepare`` therefore writes the untruncated
gold summaries beside the binaries, ``DATA/bin/{split}.ref.jsonl``: line ``i`` is binarized example
``i`` as ``{"id": ..., "file": RAW, "line": N, "summary": [sentences]}``, where ``RAW:N`` is the
source record it came from (so ``--skip-empty`` drops stay aligned). :func:`find_data_dir` finds
``DATA/bin`` and the split of a generate output from fairseq's log line ``DATA SPLIT src-tgt N
examples`` in the output itself or in ``GEN.log`` beside it (where ``recipes/common.sh`` keeps
generate's stderr).
"""
import json
import os
import re
import struct
import sys

_LINE_RE = re.compile(r"^([THDS])-(\d+)\t(.*)$")
_LOADED_RE = re.compile(r"fairseq\.tasks\.\w+\s*[:|]\s*(\S+) (\w+) \S+-\S+ (\d+) examples\s*$")
_SUBSET_RE = re.compile(r"^Generate (\S+) with beam=")


class ScoreInputError(ValueError):
    """Bad scorer input; the message names the file (and line)."""


def warn(msg):
    print(f"warning: {msg}", file=sys.stderr)


def _decoded_lines(path):
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
    lines = [text for _, text in _decoded_lines(path)]
    if not lines:
        raise ScoreInputError(f"{path}: empty file (no {what})")
    return lines


def read_jsonl_records(path, field):
    """``{physical line number: field value}`` of a JSONL file (blank lines skipped); a list value
    (sentences) is joined with newlines. Bad JSON or a missing field names the line."""
    out = {}
    for lineno, line in _decoded_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ScoreInputError(f"{path}:{lineno}: invalid JSON ({e.msg}, column {e.colno})") from None
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
    and ``loaded`` = (data dir, split, number of examples) when fairseq's log line is present."""

    def __init__(self, path):
        self.path = str(path)
        hyp, det, self.refs, self.sources = {}, {}, {}, {}
        self.subset, self.loaded = None, None
        for _, line in _decoded_lines(path):
            m = _LINE_RE.match(line)
            if m:
                kind, idx, rest = m.group(1), int(m.group(2)), m.group(3)
                if kind == "T":
                    self.refs.setdefault(idx, rest)
                elif kind == "S":
                    self.sources.setdefault(idx, rest)
                else:  # H-/D-: "<score>\t<text>"
                    (det if kind == "D" else hyp).setdefault(idx, rest.split("\t", 1)[1] if "\t" in rest else "")
                continue
            self._log_line(line)
        hyp.update(det)
        self.hyps = hyp
        log = self.path + ".log"
        if self.loaded is None and os.path.isfile(log):
            for _, line in _decoded_lines(log):
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
    """(data dir, split) of a :class:`GenerateOutput`: ``data``/``split`` when given, else the
    log line's (a relative path is tried from the working directory, then from the output's folder).
    (None, split) when unknown."""
    split = split or gen.subset or (gen.loaded[1] if gen.loaded else None) or "test"
    if data:
        if not os.path.isdir(data):
            raise ScoreInputError(f"--data {data}: no such directory")
        return data, split
    if gen.loaded:
        for base in (os.getcwd(), os.path.dirname(os.path.abspath(gen.path))):
            path = os.path.join(base, gen.loaded[0])
            if os.path.isdir(path):
                return path, split
    return None, split


def read_prepared_references(data, split):
    """The records of ``DATA/{split}.ref.jsonl`` (see module docstring), or None when absent."""
    path = os.path.join(data, f"{split}.ref.jsonl")
    if not os.path.isfile(path):
        return None
    records = []
    for lineno, line in _decoded_lines(path):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            rec = None
        if not isinstance(rec, dict) or not isinstance(rec.get("summary"), list):
            raise ScoreInputError(f"{path}:{lineno}: not a reference record of fairseq-sum-prepare")
        records.append(rec)
    return records


def check_ids(ids, path, size=None):
    """Warn about sample ids missing from ``path``: gaps, and with the split's ``size`` the ids at
    its end too; an id beyond ``size`` is an error."""
    if size is not None and ids and ids[-1] >= size:
        raise ScoreInputError(f"{path}: sample id {ids[-1]} but the split has {size} examples "
                              "(output of another data set?)")
    expected = range(size if size is not None else ids[-1] + 1)
    missing = sorted(set(expected) - set(ids))
    if missing:  # e.g. examples dropped by --skip-invalid-size-inputs-valid-test: the score covers fewer
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
        raise ScoreInputError(f"{gen.path}: hypotheses without a T- reference line, ids {missing[:10]}")
    extra = sorted(set(gen.refs) - set(gen.hyps))
    if extra:
        warn(f"{len(extra)} references without a hypothesis ignored (ids {extra[:10]})")
    ids = sorted(gen.hyps)
    check_ids(ids, gen.path, size)
    return ids, [gen.hyps[i] for i in ids], [gen.refs[i] for i in ids]


def read_generate_sources(path):
    """{sample id: source text} from the S- lines of ``fairseq-generate`` stdout."""
    return (path if isinstance(path, GenerateOutput) else GenerateOutput(path)).sources
