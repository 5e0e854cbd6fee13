"""The Topic Assistant's topic model at run time: load, infer, bags of words, dictionary check,
prior, and the record that ties every theta file to the Phi it was inferred with.

The model is the Poisson factor analysis (PFA) of the Topic Assistant paper (§3.2, App. B) over the
summarizer's own dictionary: ``b_n ~ Poisson(Phi theta_n)``, ``theta_n ~ Gamma(r, rate)``, so row
``v`` of ``Phi`` (V x K) belongs to token ``v``. Fitting it is ``python -m preprocess.topic_model
fit`` (:mod:`preprocess.topic_model`, MAP-EM); this module is what the summarizer, its raw-text
theta provider and the analyses need, and imports nothing from ``preprocess``.

Equations and where they live::

    b_n = counts of the kept symbols of document n    bag_of_words
    theta_kn <- max(theta_kn sum_v b_vn phi_vk / (Phi theta_n)_v + r - 1, 0) / (1 + rate)
                                                      PoissonFactorAnalysis.infer
                                                      (MAP-EM theta step, Phi fixed)
    theta_n / sum_k theta_kn                          normalised proportions
    prior proportions (no countable token)            PoissonFactorAnalysis.theta_prior

``topic_model.npz`` holds ``phi``, the ``keep`` mask of the counted symbols (fixed at fit time), the
dictionary checksum (:func:`check_dictionary` refuses another dictionary), the hyper-parameters,
the corpus-mean proportions ``theta_mean`` (the prior), and for a GPT-2 BPE dictionary the decoded
surfaces and the GPT-2 encoder files (path and sha256).

**A document with no countable token** (empty, or only stop words / punctuation) has no topic
evidence: ``infer(..., empty="prior")`` gives it :meth:`PoissonFactorAnalysis.theta_prior` (the
corpus mean of the fit, or uniform ``1/K`` for a file without it), never zeros or NaN;
``empty="zero"`` (the semantic similarity of TA eq. 10) gives the zero vector.

**Whole documents.** :func:`split_documents` reads a split's documents for the bags of words: the
binarized source, or with ``full_src`` the untruncated ``DIR/{split}.src`` (checked to be the
binarized examples, in order, each binarized source a prefix of its line).

**Theta records** (:func:`write_theta_file`, :func:`check_theta_file`). Every
``DATA/{split}.theta.npy`` comes with ``DATA/{split}.theta.json``: the sha256 of the Phi it was
inferred with, the sha256 of the theta file itself, its shape, the topic model's path, and the
split with the sha256 of its binarized source (:func:`source_sha256`: the documents it was inferred
for). A theta file without a record, with a record of another file, of another Phi, of another
split or of other documents (copied from another split of the same size, or the data prepared
again) is refused by
:func:`check_theta_file` (the task calls it through the side-data registry for ``--side-data
theta``), naming the command that rewrites it.
"""
import glob
import hashlib
import json
import os
import time

import numpy as np
import torch

from ...data_folder import dictionary_checksum  # noqa: F401  (part of this module's interface)

FIT_COMMAND = "python -m preprocess.topic_model fit DATA"
INFER_COMMAND = "python -m preprocess.topic_model infer DATA --splits SPLIT [--topic-model PATH]"


def phi_checksum(phi):
    """sha256 of Phi (float32, C order, with its shape): identifies the topics a summarizer was
    trained with (stored in the model args, so in checkpoints; see
    features/topic_assistant/layers.py)."""
    phi = np.ascontiguousarray(np.asarray(phi, dtype=np.float32))
    digest = hashlib.sha256(repr(phi.shape).encode("ascii"))
    digest.update(phi.tobytes())
    return digest.hexdigest()


def gpt2_files_info(encoder_json, vocab_bpe):
    """Absolute paths and sha256 of the GPT-2 encoder files, as stored in ``topic_model.npz``."""
    digest = hashlib.sha256()
    for path in (encoder_json, vocab_bpe):
        with open(path, "rb") as f:
            digest.update(f.read())
    return {"encoder_json": os.path.abspath(encoder_json), "vocab_bpe": os.path.abspath(vocab_bpe),
            "sha256": digest.hexdigest()}


def bag_of_words(token_lists, vocab_size, keep):
    """Sparse CSR document-term counts (N x V) over the kept symbols (``token_lists``: any iterable
    of id arrays, e.g. a generator)."""
    import scipy.sparse as sp

    rows, cols = [], []
    n_docs = 0
    for n, toks in enumerate(token_lists):
        n_docs = n + 1
        toks = np.asarray(toks, dtype=np.int64)
        toks = toks[(toks >= 0) & (toks < vocab_size)]
        toks = toks[keep[toks]]
        rows.append(np.full(len(toks), n, dtype=np.int64))
        cols.append(toks)
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    bow = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n_docs, vocab_size))
    bow.sum_duplicates()
    return bow


def progress_bar(iterable, desc, enabled):
    if not enabled:
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return iterable
    return tqdm(iterable, desc=desc, leave=False)


class PoissonFactorAnalysis:
    """A fitted PFA (see the module docstring). ``phi``: V x K, columns sum to one over kept rows.
    ``preprocess.topic_model.PoissonFactorAnalysis`` adds the fit."""

    def __init__(self, phi, keep, checksum="", r=1.05, rate=1.0, eta=1.01, surfaces=None, gpt2=None,
                 theta_mean=None):
        self.phi = np.asarray(phi, dtype=np.float32)
        self.keep = np.asarray(keep, dtype=bool)
        self.checksum = str(checksum)
        self.r, self.rate, self.eta = float(r), float(rate), float(eta)
        # text of each symbol (GPT-2)
        self.surfaces = list(surfaces) if surfaces is not None else None
        # gpt2_files_info of the encoder the surfaces come from
        self.gpt2 = dict(gpt2) if gpt2 else None
        # corpus-mean topic proportions of the training documents (fit); None for older files
        self.theta_mean = None if theta_mean is None else np.asarray(theta_mean, dtype=np.float32)

    @property
    def phi_sha256(self):
        return phi_checksum(self.phi)

    def theta_prior(self):
        """Topic proportions (K,) of a document with no countable token: the corpus mean of the fit
        when the file has it, else uniform (the mean proportions of the symmetric Gamma prior)."""
        k = self.num_topics
        mean = self.theta_mean
        if mean is not None and mean.shape == (k,) and np.isfinite(mean).all() and mean.sum() > 0:
            return (mean / mean.sum()).astype(np.float32)
        return np.full(k, 1.0 / k, dtype=np.float32)

    def surface(self, index, dictionary):
        """The text of symbol ``index`` (decoded GPT-2 id, or the symbol without ``▁``)."""
        return self.surfaces[index] if self.surfaces is not None else dictionary[index].replace(
            "\u2581", "")

    def gpt2_encoder(self):
        """fairseq's GPT-2 ``Encoder`` of the fit (``None`` for a dictionary of text pieces); the
        files must still be those of the fit (sha256)."""
        if not self.gpt2:
            return None
        from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

        info = self.gpt2
        for key in ("encoder_json", "vocab_bpe"):
            if not os.path.isfile(info[key]):
                raise FileNotFoundError(
                    f"{info[key]}: GPT-2 file of the topic model not found (moved?); "
                    "refit with --gpt2-encoder-json / --gpt2-vocab-bpe")
        if gpt2_files_info(info["encoder_json"], info["vocab_bpe"])["sha256"] != info["sha256"]:
            raise ValueError(f"{info['encoder_json']} / {info['vocab_bpe']} changed since the "
                             "topic model was fit")
        return get_encoder(info["encoder_json"], info["vocab_bpe"])

    @property
    def num_topics(self):
        return self.phi.shape[1]

    def infer(self, bow, iters=50, progress=False, normalize=True, batch_size=256, empty="zero"):
        """Topic proportions of new documents with Phi fixed (N x K, float32).

        The theta updates of MAP-EM, vectorised over a batch of documents: each document's distinct
        tokens' rows of Phi are gathered once into a padded ``(B, L, K)`` tensor, then every
        iteration is two batched matrix products. A document with no countable token gets the
        zero vector (``empty="zero"``: no topic evidence, what the semantic similarity of TA eq. 10
        scores as 0) or, with ``empty="prior"`` (the summarizer's side data: ``write_theta``, the
        task's raw-text provider), :meth:`theta_prior` (normalised output only).
        """
        if empty not in ("prior", "zero"):
            raise ValueError(f"empty={empty!r}: 'prior' or 'zero'")
        bow = bow.tocsr()
        phi = torch.from_numpy(self.phi)
        k = self.num_topics
        out = np.zeros((bow.shape[0], k), dtype=np.float32)
        starts = range(0, bow.shape[0], batch_size)
        for s in progress_bar(starts, "PFA infer", progress and len(starts) > 1):
            part = bow[s : s + batch_size]
            nnz = np.diff(part.indptr)
            width = max(1, int(nnz.max()) if len(nnz) else 1)
            ids = torch.zeros(part.shape[0], width, dtype=torch.long)
            counts = torch.zeros(part.shape[0], width)
            for i in range(part.shape[0]):
                a, b = part.indptr[i], part.indptr[i + 1]
                ids[i, : b - a] = torch.from_numpy(part.indices[a:b].astype(np.int64))
                counts[i, : b - a] = torch.from_numpy(part.data[a:b].astype(np.float32))
            rows = phi[ids]  # (B, L, K); padding has count 0
            lengths = counts.sum(1)
            theta = (lengths[:, None] / k).expand(-1, k).clone() + 1e-3
            for _ in range(iters):
                # (Phi theta)_v
                lam = torch.bmm(rows, theta[:, :, None]).squeeze(-1).clamp_min(1e-30)
                # sum_v E[x_vk]
                s_theta = theta * torch.bmm((counts / lam)[:, None, :], rows).squeeze(1)
                theta = (s_theta + (self.r - 1)).clamp_min(0) / (1.0 + self.rate)
            theta[lengths == 0] = 0  # nothing countable: no topic evidence
            if normalize:
                theta = theta / theta.sum(1, keepdim=True).clamp_min(1e-30)
                if empty == "prior":
                    theta[theta.sum(1) <= 0] = torch.from_numpy(self.theta_prior())
            out[s : s + len(theta)] = theta.numpy()
        return out

    def infer_tokens(self, token_lists, iters=50, empty="zero"):
        return self.infer(bag_of_words(token_lists, len(self.phi), self.keep), iters=iters,
                          empty=empty)

    def save(self, path):
        """Write ``topic_model.npz`` to exactly ``path`` (numpy would add ``.npz`` to other
        names)."""
        extra = {}
        if self.surfaces is not None:
            extra["surfaces"] = np.array(json.dumps(self.surfaces, ensure_ascii=False))
        if self.gpt2:
            extra["gpt2"] = np.array(json.dumps(self.gpt2))
        if self.theta_mean is not None:
            extra["theta_mean"] = np.asarray(self.theta_mean, dtype=np.float32)
        with open(path, "wb") as f:
            np.savez(f, phi=self.phi, keep=self.keep, checksum=np.array(self.checksum),
                     hyper=np.array([self.r, self.rate, self.eta], dtype=np.float64), **extra)

    @classmethod
    def load(cls, path, dictionary=None):
        """Load ``topic_model.npz``; with ``dictionary``, check that Phi's rows are its symbols."""
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"topic model {path} not found: fit it with `{FIT_COMMAND}`"
            )
        with np.load(path, allow_pickle=False) as f:
            surfaces = json.loads(str(f["surfaces"])) if "surfaces" in f.files else None
            gpt2 = json.loads(str(f["gpt2"])) if "gpt2" in f.files else None
            theta_mean = f["theta_mean"] if "theta_mean" in f.files else None
            model = cls(f["phi"], f["keep"], str(f["checksum"]), *f["hyper"].tolist(),
                        surfaces=surfaces, gpt2=gpt2, theta_mean=theta_mean)
        if dictionary is not None:
            check_dictionary(model, dictionary, path)
        return model


def check_dictionary(model, dictionary, path="topic model"):
    got = dictionary_checksum(dictionary)
    if model.phi.shape[0] != len(dictionary) or model.checksum != got:
        raise ValueError(
            f"{path} does not match the dictionary ({model.phi.shape[0]} rows, checksum "
            f"{model.checksum[:12]} vs {len(dictionary)} symbols, checksum {got[:12]}): Phi's rows "
            f"must be this dictionary's symbols; refit it with `{FIT_COMMAND}`")


# --- data ----------------------------------------------------------------------------------------


def load_dictionary(data_dir):
    from fairseq.data import Dictionary

    for name in ("dict.src.txt", "dict.txt"):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return Dictionary.load(path)
    raise FileNotFoundError(f"no dict.src.txt in {data_dir}")


def split_prefix(data_dir, split, lang="src"):
    hits = sorted(glob.glob(os.path.join(data_dir, f"{split}.*-*.{lang}.idx")))
    return hits[0][: -len(".idx")] if hits else None


def binarized_splits(data_dir, lang="src"):
    """Names of the splits binarized in ``data_dir`` (``{split}.*-*.{lang}.idx``), sorted."""
    suffix = f".{lang}.idx"
    names = {os.path.basename(p)[: -len(suffix)].rsplit(".", 1)[0]
             for p in glob.glob(os.path.join(data_dir, f"*.*-*{suffix}"))}
    return sorted(names)


def _indexed_split(data_dir, split, dictionary, lang="src"):
    from fairseq.data import data_utils

    prefix = split_prefix(data_dir, split, lang)
    return None if prefix is None else data_utils.load_indexed_dataset(prefix, dictionary)


def load_split_tokens(data_dir, split, dictionary, lang="src"):
    """Token id arrays of a binarized split, in dataset order (None if the split does not exist)."""
    ds = _indexed_split(data_dir, split, dictionary, lang)
    return None if ds is None else [ds[i].numpy() for i in range(len(ds))]


def _count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def full_split_tokens(full_src, data_dir, split, dictionary, lang="src"):
    """``(n, iterator)`` over the untruncated source of a binarized split: the lines of
    ``full_src/{split}.{lang}`` encoded with ``dictionary`` as ``fairseq-preprocess`` encodes them
    (``</s>`` appended), ``n`` the number of binarized examples (``(0, None)`` if the split is not
    binarized). Checked to be the binarized examples, in order: as many lines, and every binarized
    source (``</s>`` aside) a prefix of its line; anything else is a ``ValueError`` naming the
    line."""
    ds = _indexed_split(data_dir, split, dictionary, lang)
    if ds is None:
        return 0, None
    path = os.path.join(full_src, f"{split}.{lang}")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"--full-src: {path} not found (the untruncated source of the binarized {split} split, "
            "one document per line in the dictionary's symbols: `fairseq-sum-prepare "
            "--write-full-src` writes OUT/spm_full, `python -m preprocess.gpt2_bpe --full-src-out "
            "DIR` the GPT-2 ids)")
    n = len(ds)
    lines = _count_lines(path)
    if lines != n:
        raise ValueError(f"--full-src: {path} has {lines} lines but the binarized {split} split "
                         f"has {n} examples: it must hold the same documents in the same order")
    eos = dictionary.eos()

    def tokens():
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                full = dictionary.encode_line(line, add_if_not_exist=False, append_eos=True).numpy()
                binarized = ds[i].numpy()
                head = binarized[:-1] if len(binarized) and binarized[-1] == eos else binarized
                if len(head) > len(full) or not np.array_equal(full[: len(head)], head):
                    raise ValueError(
                        f"--full-src: {path}:{i + 1} is not the untruncated form of binarized "
                        f"{split} example {i} (its binarized source is not a prefix of the line): "
                        "the files are not aligned"
                    )
                yield full

    return n, tokens()


def split_documents(data_dir, split, dictionary, full_src=None):
    """``(n, token arrays)`` of a split's documents for the bags of words: the untruncated source
    with ``full_src`` (:func:`full_split_tokens`), else the binarized source; ``(0, None)`` when the
    split is not binarized."""
    if full_src:
        return full_split_tokens(full_src, data_dir, split, dictionary)
    toks = load_split_tokens(data_dir, split, dictionary)
    return (0, None) if toks is None else (len(toks), toks)



# --- theta files and their records --------------------------------------------------------------


def theta_record_path(theta_path):
    """``DATA/{split}.theta.json`` beside ``DATA/{split}.theta.npy``."""
    base = theta_path[: -len(".npy")] if theta_path.endswith(".npy") else theta_path
    return base + ".json"


def file_sha256(path, chunk=1 << 22):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def _replace_atomically(path, write):
    """``write(tmp)`` then rename onto ``path``: a reader sees the old file or the whole new one."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def source_sha256(data_dir, split, lang="src"):
    """sha256 of a split's binarized source (the sha256 of its ``.idx`` and of its ``.bin``): the
    documents a theta file was inferred for; None when the split is not binarized."""
    prefix = split_prefix(data_dir, split, lang)
    if prefix is None:
        return None
    digest = hashlib.sha256()
    for ext in (".idx", ".bin"):
        digest.update(_cached_sha256(prefix + ext).encode("ascii"))
    return digest.hexdigest()


def _split_of(theta_path):
    """``SPLIT`` of ``DATA/SPLIT.theta.npy``."""
    name = os.path.basename(theta_path)
    return name[: -len(".theta.npy")] if name.endswith(".theta.npy") else name.split(".")[0]


def write_theta_file(path, theta, model, topic_model_path, documents="binarized", split=None):
    """Write ``theta`` (N x K float32) to ``path`` with its record (:func:`theta_record_path`): the
    sha256 of Phi and of the file, and the ``split`` (default: from the file name) with the sha256
    of its binarized source in the folder of ``path`` (:func:`source_sha256`), the documents it
    belongs to.

    The record goes first, then the array, each replaced atomically: a process killed in between
    leaves a record that names another file (refused by :func:`check_theta_file`), never an
    unrecorded theta file."""
    theta = np.ascontiguousarray(np.asarray(theta, dtype=np.float32))

    def write_array(tmp):
        with open(tmp, "wb") as f:
            np.save(f, theta)

    staged = f"{path}.staged{os.getpid()}"
    try:
        write_array(staged)
        split = split or _split_of(path)
        record = {"phi_sha256": model.phi_sha256, "theta_sha256": file_sha256(staged),
                  "shape": list(theta.shape), "split": split,
                  "source_sha256": source_sha256(os.path.dirname(os.path.abspath(path)), split),
                  "topic_model": os.path.abspath(topic_model_path), "documents": documents,
                  "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

        def write_record(tmp):
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(record, f, indent=2)
                f.write("\n")

        _replace_atomically(theta_record_path(path), write_record)
        os.replace(staged, path)
    finally:
        if os.path.exists(staged):
            os.remove(staged)
    return record


_SHA_CACHE = {}


def _cached_sha256(path):
    """sha256 of a file, computed once per (path, size, mtime) (theta files and binarized
    sources)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        if len(_SHA_CACHE) >= 64:
            _SHA_CACHE.clear()
        _SHA_CACHE[key] = file_sha256(path)
    return _SHA_CACHE[key]


def check_theta_file(path, phi_sha256, topic_model_path, split=None):
    """Refuse ``path`` unless its record says it is this very file, inferred with the Phi whose
    sha256 is ``phi_sha256`` (that of ``topic_model_path``, the topic model the summarizer uses),
    for ``split`` (default: from the file name) and the documents of its binarized source beside it:
    a theta file copied from another split, or left from a data folder prepared again with other
    documents, is refused even when its shape fits."""
    split = split or _split_of(path)
    record_path = theta_record_path(path)
    data = os.path.dirname(os.path.abspath(path))
    redo = (f"rewrite it with `python -m preprocess.topic_model infer {data} --splits {split} "
            f"--topic-model {topic_model_path}` (or refit: `python -m preprocess.topic_model fit "
            f"{data}`)")
    if not os.path.isfile(record_path):
        raise ValueError(f"{path} has no record of the topic model it was inferred with "
                         f"({record_path} not found): its topics cannot be checked against "
                         f"{topic_model_path}; {redo}")
    try:
        with open(record_path, encoding="utf-8") as f:
            record = json.load(f)
        recorded_theta, recorded_phi = str(record["theta_sha256"]), str(record["phi_sha256"])
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{record_path}: not a theta record ({err}); {redo}") from None
    if recorded_theta != _cached_sha256(path):
        raise ValueError(
            f"{path} is not the file its record {record_path} describes (sha256 differs: the theta "
            f"file was replaced or a write was interrupted); {redo}")
    if recorded_phi != phi_sha256:
        raise ValueError(
            f"{path} was inferred with the topic model {record.get('topic_model', '?')} (Phi "
            f"sha256 {recorded_phi[:16]}), but the summarizer uses {topic_model_path} (Phi sha256 "
            f"{phi_sha256[:16]}): its topic proportions belong to other topics; {redo}")
    if "split" not in record or "source_sha256" not in record:
        raise ValueError(
            f"{record_path} names no split and documents (written by an older version): which "
            f"documents {path} belongs to cannot be checked; {redo}")
    if record["split"] != split:
        raise ValueError(f"{path} was inferred for the {record['split']!r} split, not {split!r} "
                         f"(copied from another split?); {redo}")
    source = source_sha256(data, split)
    if record["source_sha256"] != source:
        raise ValueError(
            f"{path} was inferred for other documents than the binarized {split} source in {data} "
            f"(source sha256 {str(record['source_sha256'])[:16]} in the record, {str(source)[:16]} "
            f"now: the data was prepared again or the file comes from another data folder); {redo}")
    return record
