"""The committed extracts of fairseq-sum-baselines (``results/TABLE/baselines/NAME.txt``) against
their hashes and their documents, so that an extract edited without moving a score fails.

* **Hashes.** ``TABLE/baselines/SHA256SUMS`` holds one ``HASH  NAME.txt`` line per extract (the
  format of ``sha256sum``, so ``cd TABLE/baselines && sha256sum -c SHA256SUMS`` checks it too);
  every extract needs its line, and every line its extract (:func:`check_sums`).
* **Documents.** Each extract is compared with the table's ``sources.txt`` (the documents as the
  models saw them: :mod:`.decodings`, cut at prepare's ``--max-src-tokens``; sentences joined by
  `` <sep> ``, as in the extracts), by what :mod:`.baselines` picks (:func:`check_documents`):
  ``lead1`` / ``lead3`` / ``leadk`` (``k`` of ``baselines.json``) the document's first k sentences;
  ``random3`` and ``oracle`` sentences of the document in its order; ``generic`` one line for
  every document. The extracts come from the untruncated documents, so a sentence after the cut
  cannot be seen: where the source line ends before the extract does, the sentences past its
  last whole sentence are not compared (the cut one only as a prefix), and counted in the
  summary of the check (chosen: a source cut inside a lead extract's sentence compares the part
  that is there).
"""
import os
import re

from ..decodings import sha256_file, write_lines

SUMS = "SHA256SUMS"
SEP = " <sep> "
LEADS = {"lead1": 1, "lead3": 3}
SUM_LINE = re.compile(r"^([0-9a-f]{64}) [ *](\S+)$")


def write_sums(folder):
    """Writes ``folder/SHA256SUMS`` of every ``NAME.txt`` in ``folder``; returns its path."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".txt"))
    path = os.path.join(str(folder), SUMS)
    # as the extracts are written: through a temporary file, a link in its place replaced
    write_lines(path, [f"{sha256_file(os.path.join(folder, n))}  {n}" for n in names])
    return path


def read_sums(path):
    """{NAME.txt: hash} of a SHA256SUMS file; a malformed line raises ValueError naming it."""
    out = {}
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            m = SUM_LINE.match(line.decode("utf-8", "replace").rstrip("\n"))
            if m is None:
                raise ValueError(f"{path}:{number}: not 'SHA256  NAME.txt'")
            out[m.group(2)] = m.group(1)
    return out


def check_sums(folder):
    """Failures of the extracts of ``folder`` against its SHA256SUMS (missing: a failure)."""
    path = os.path.join(folder, SUMS)
    if not os.path.exists(path):
        return [f"{path} missing: the extracts' hashes (sha256sum *.txt > {SUMS})"]
    if os.path.islink(path) or not os.path.isfile(path):
        return [f"{path}: not a plain file"]
    try:
        sums = read_sums(path)
    except ValueError as e:
        return [str(e)]
    names = sorted(n for n in os.listdir(folder) if n.endswith(".txt"))
    fails = [f"{os.path.join(folder, n)}: no line in {SUMS}" for n in names if n not in sums]
    fails += [f"{path}: names {n}, which is not there" for n in sums if n not in names]
    for n in names:
        if n in sums and sha256_file(os.path.join(folder, n)) != sums[n]:
            fails.append(f"{os.path.join(folder, n)}: sha256 differs from {SUMS}'s (edited?)")
    return fails


def _sentences(line):
    """The sentences of a line, each reduced to its ASCII letters and digits, lower case: the
    sources went through sentencepiece and back, which moves spaces and quotes ("meanings /
    senses", 'phones."') and drops characters it does not know ("c(f, ẽ)"), not words."""
    return [re.sub(r"[^a-z0-9]", "", s.lower()) for s in line.split(SEP) if s.strip()]


NEAR = 20  # characters: a sentence not in the document that begins as one of its sentences


def _lead(ext, doc, k, where, number):
    """(failures, sentences not compared) of a lead-k line."""
    if len(ext) > k:
        return [f"{where}: {len(ext)} sentences, lead-{k} has at most {k}"], 0
    unseen = 0
    for j, sent in enumerate(ext):
        if j < len(doc) and sent == doc[j]:
            continue
        if j == len(doc) - 1 and sent.startswith(doc[j]):  # the source was cut inside it
            unseen += 1
            continue
        if j >= len(doc):
            unseen += 1  # past the cut
            continue
        return [f"{where}: sentence {j + 1} is not the document's sentence {j + 1} "
                f"(sources.txt line {number})"], unseen
    if len(ext) < min(k, len(doc)):
        return [f"{where}: {len(ext)} sentences, the document has {len(doc)}"], unseen
    return [], unseen


def _chosen(ext, doc, where, number):
    """(failures, sentences not compared) of a line of sentences chosen from the document: those in
    the source in its order; one that is not must come after them (past the cut) and must not
    begin as a sentence of the document does (an edited one)."""
    pos, unseen = 0, 0
    for j, sent in enumerate(ext):
        if sent in doc[pos:]:
            if unseen:
                break
            pos = doc.index(sent, pos) + 1
            continue
        if any(d[:NEAR] == sent[:NEAR] for d in doc[:-1]):
            break
        unseen += 1
    else:
        return [], unseen
    return [f"{where}: sentence {j + 1} is not a sentence of the document in its order "
            f"(sources.txt line {number})"], unseen


def check_documents(name, lines, sources, system, path):
    """(failures, sentences not compared) of one extract's lines against the documents."""
    if name == "generic":
        if len(set(lines)) > 1:
            return [f"{path}: {len(set(lines))} different lines; the generic summary is one "
                    "training summary for every document"], 0
        return [], 0
    k = LEADS.get(name) or ((system or {}).get("k") if name == "leadk" else None)
    if name == "leadk" and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        return [f"{path}: baselines.json gives leadk no k"], 0
    fails, unseen = [], 0
    for number, (line, src) in enumerate(zip(lines, sources), 1):
        ext, doc = _sentences(line), _sentences(src)
        where = f"{path}:{number}"
        f, u = _lead(ext, doc, k, where, number) if k else _chosen(ext, doc, where, number)
        fails += f
        unseen += u
    return fails, unseen
