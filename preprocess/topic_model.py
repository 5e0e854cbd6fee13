"""Poisson factor analysis (PFA, Zhou et al., 2012) over the summarizer's own vocabulary, for the
Topic Assistant (Topic Assistant paper §3.2, App. B).

Model (eq. 2)::

    b_n ~ Poisson(Phi theta_n),   theta_n ~ Gamma(r, rate),   phi_k ~ Dirichlet(eta)

``b_n`` is document ``n``'s bag of words over the fairseq dictionary (``DATA/bin/dict.src.txt``),
so row ``v`` of ``Phi`` (V x K) belongs to the token whose embedding is row ``v`` of the summarizer's
embedding matrix. Special symbols, ``<sep>``, punctuation
/ number pieces (no letters once ``▁`` is stripped) and English stop words are excluded: they are
not counted and their rows of ``Phi`` are exactly zero (also single-character pieces, which with
sentencepiece are mostly word fragments).

**GPT-2 BPE dictionaries (fairseq's BART).** There the symbols of ``dict.txt`` are GPT-2 BPE ids
(``"1212"``), not text: ``fit --gpt2-encoder-json E --gpt2-vocab-bpe V`` decodes every symbol with
fairseq's GPT-2 encoder (``bpe.decode([int(symbol)])``, the leading space stripped) and applies the
same rules to that text (``" the"`` is a stop word, ``" market"`` is kept). The decoded surfaces,
the encoder files' paths and their sha256 are stored in ``topic_model.npz`` beside the ``keep``
mask, so ``infer``, the task's theta provider for raw text (``--bpe gpt2``: its source tokens are
the same dictionary ids) and the analyses use the mapping of the fit. Fitting a GPT-2 dictionary
without the encoder is an error (every id would be excluded as a "number").

**Inference: MAP-EM on the Poisson augmentation** (the multiplicative updates of the Poisson-Gamma
model). With the augmentation ``b_vn = sum_k x_vkn``, ``x_vkn ~ Poisson(phi_vk theta_kn)``:

* E-step: ``E[x_vkn] = b_vn phi_vk theta_kn / (Phi theta_n)_v``;
* M-step (joint, exact because ``sum_v phi_vk = 1`` decouples Phi and Theta)::

      phi_vk   ∝ sum_n E[x_vkn] + eta - 1                         (Dirichlet mode, kept rows)
      theta_kn = max(sum_v E[x_vkn] + r - 1, 0) / (1 + rate)      (Gamma mode)

Every iteration is two sparse-dense products over the non-zeros of the document-term matrix
(``torch.sparse.sampled_addmm`` for ``(Phi theta)_vn`` at the non-zeros only), and it never
decreases the log posterior ``log p(B | Phi, Theta) + log p(Theta) + log p(Phi)``
(:func:`log_posterior`, tested). ``infer`` runs the same theta updates with ``Phi`` fixed, for a
whole batch of documents at once. The paper uses the autoencoding variational inference of Zhang
et al. (2018); any PFA posterior estimate serves SIA/TEMA/DRM, and this one needs no GPU.

theta written for the summarizer is the normalised topic proportion ``theta_n / sum_k theta_kn``
(float32, N x K). A document with no countable token (empty, or only stop words / punctuation)
has no topic evidence: in the summarizer's side data (``{split}.theta.npy``, the task's raw-text
provider) it gets the prior proportions, never zeros or NaN (:meth:`theta_prior`:
the corpus-mean topic proportions of the training documents, stored in ``topic_model.npz`` as
``theta_mean`` by ``fit``; for a file fitted before that, the uniform ``1/K``, the mean proportions
of the symmetric Gamma prior of theta). TEMA breaks ties between equal proportions by the lower
topic id, so such a document's prefix is deterministic.

**Whole documents** (Topic Assistant paper §5.4: the topic model "extracts global semantics from
all tokens in the document"). The binarized source is what the encoder reads, truncated by the
preprocessing (``fairseq-sum-prepare --max-src-tokens``, ``preprocess.gpt2_bpe --max-src-tokens``).
With ``--full-src DIR`` the bags of words (for the fit and for every theta) are counted over the
untruncated source instead: ``DIR/{split}.src``, one document per line in the dictionary's symbols
(what ``fairseq-preprocess`` reads), encoded with the same dictionary. ``fairseq-sum-prepare
--write-full-src`` writes it to ``OUT/spm_full`` (sentencepiece pieces), ``preprocess.gpt2_bpe
--full-src-out DIR`` for BART (GPT-2 ids). Its lines must be the binarized examples, in the same
order and number, each binarized source being a prefix of its line (checked; a mismatch is an
error naming the file and line), so theta stays aligned 1:1 with the binarized split. Without
``--full-src`` the binarized source is counted, as before (the truncated documents).

CLI::

    python -m preprocess.topic_model fit DATA/bin [--topics 256] [--iters 100] [--full-src DIR]
        [--gpt2-encoder-json E --gpt2-vocab-bpe V]   (BART: dictionary symbols are GPT-2 ids)
        -> DATA/bin/topic_model.npz (Phi, dictionary checksum, corpus-mean theta) and
           DATA/bin/{train,valid,test}.theta.npy
    python -m preprocess.topic_model infer DATA/bin --splits valid,test [--topic-model PATH] [--full-src DIR]
"""
import argparse
import glob
import hashlib
import itertools
import json
import logging
import math
import os
import time
import warnings

import numpy as np
import torch

logger = logging.getLogger(__name__)

# a standard English stop list (NLTK's, plus a few contraction remnants of sentencepiece pieces)
STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
it its itself they them their theirs themselves what which who whom this that these those am is are was were be
been being have has had having do does did doing a an the and but if or because as until while of at by for with
about against between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other some such no nor not
only own same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn
hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn also would could said says mr mrs ms one
us may might must shall n't 's 're 've 'll 'd
""".split())


def dictionary_checksum(dictionary):
    """sha256 of the dictionary's symbols in index order: Phi's rows are only valid for it."""
    return hashlib.sha256("\n".join(dictionary.symbols).encode("utf-8")).hexdigest()


def phi_checksum(phi):
    """sha256 of Phi (float32, C order, with its shape): identifies the topics a summarizer was
    trained with (stored in the model args, so in checkpoints; see modules/topic.py)."""
    phi = np.ascontiguousarray(np.asarray(phi, dtype=np.float32))
    digest = hashlib.sha256(repr(phi.shape).encode("ascii"))
    digest.update(phi.tobytes())
    return digest.hexdigest()


def looks_like_gpt2_ids(dictionary):
    """True when most non-special symbols are integers: a GPT-2 BPE dictionary (BART's ``dict.txt``)."""
    syms = dictionary.symbols[dictionary.nspecial:]
    return bool(syms) and sum(s.isdigit() for s in syms) > len(syms) / 2


def gpt2_surfaces(dictionary, bpe):
    """The text of every symbol of a GPT-2 BPE dictionary, decoded with fairseq's GPT-2 ``Encoder``
    ``bpe`` (leading / trailing whitespace stripped); other symbols (specials, ``madeupword0000``,
    ids the encoder does not know) are kept as they are."""
    if not looks_like_gpt2_ids(dictionary):
        raise ValueError("the GPT-2 encoder was given, but the dictionary's symbols are not GPT-2 BPE ids")
    out = []
    for i, sym in enumerate(dictionary.symbols):
        if i >= dictionary.nspecial and sym.isdigit() and int(sym) in bpe.decoder:
            out.append(bpe.decode([int(sym)]).strip())
        else:
            out.append(sym)
    return out


def gpt2_files_info(encoder_json, vocab_bpe):
    """Absolute paths and sha256 of the GPT-2 encoder files, as stored in ``topic_model.npz``."""
    digest = hashlib.sha256()
    for path in (encoder_json, vocab_bpe):
        with open(path, "rb") as f:
            digest.update(f.read())
    return {"encoder_json": os.path.abspath(encoder_json), "vocab_bpe": os.path.abspath(vocab_bpe),
            "sha256": digest.hexdigest()}


def excluded_symbols(dictionary, surfaces=None):
    """Boolean mask (V,): specials, ``<...>`` symbols, pieces without letters, stop words.

    ``surfaces``: the text of every symbol (:func:`gpt2_surfaces` for a GPT-2 BPE dictionary);
    by default the symbol itself, sentencepiece's ``▁`` removed.
    """
    if surfaces is None and looks_like_gpt2_ids(dictionary):
        raise ValueError(
            "the dictionary's symbols are GPT-2 BPE ids (BART's dict.txt), not text: pass the GPT-2 encoder "
            "(`python -m preprocess.topic_model fit DATA --gpt2-encoder-json encoder.json --gpt2-vocab-bpe vocab.bpe`)"
        )
    if surfaces is not None and len(surfaces) != len(dictionary):
        raise ValueError(f"{len(surfaces)} surfaces for {len(dictionary)} symbols")
    mask = np.zeros(len(dictionary), dtype=bool)
    for i, sym in enumerate(dictionary.symbols):
        surface = (sym.replace("\u2581", "") if surfaces is None else surfaces[i]).lower()
        mask[i] = (
            i < dictionary.nspecial
            or (sym.startswith("<") and sym.endswith(">"))
            or sym.startswith("madeupword")
            or not any(c.isalpha() for c in surface)
            or len(surface) == 1  # single letters / word pieces carry no topic
            or surface in STOP_WORDS
        )
    return mask


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


class _Sparse:
    """The non-zeros of a CSR matrix and of its transpose, in torch, for the EM updates."""

    def __init__(self, bow):
        with warnings.catch_warnings():  # torch: "sparse CSR support is in beta"
            warnings.simplefilter("ignore", UserWarning)
            self._build(bow)

    def _build(self, bow):
        bow = bow.tocsr()
        bow.sort_indices()
        n, v = bow.shape
        self.shape = (n, v)
        self.crow = torch.from_numpy(bow.indptr.astype(np.int64))
        self.col = torch.from_numpy(bow.indices.astype(np.int64))
        self.val = torch.from_numpy(bow.data.astype(np.float32))
        order = bow.copy()
        order.data = np.arange(bow.nnz, dtype=np.float64) + 1  # +1: explicit zeros would be dropped
        t = order.T.tocsr()
        t.sort_indices()
        self.t_crow = torch.from_numpy(t.indptr.astype(np.int64))
        self.t_col = torch.from_numpy(t.indices.astype(np.int64))
        self.t_perm = torch.from_numpy(t.data.astype(np.int64) - 1)
        self.pattern = torch.sparse_csr_tensor(self.crow, self.col, torch.ones_like(self.val), self.shape)

    def rate_at_nonzeros(self, theta, phi):
        """``(Theta Phi^T)_nv`` at the non-zeros only (N x K, V x K)."""
        if self.val.numel() == 0:
            return self.val.clone()
        out = torch.sparse.sampled_addmm(self.pattern, theta, phi.t().contiguous(), beta=0.0)
        return out.values()

    def matmul(self, values, dense):
        """``R @ dense`` with ``R`` the CSR matrix with ``values`` at the non-zeros (N x V @ V x K)."""
        m = torch.sparse_csr_tensor(self.crow, self.col, values, self.shape)
        return m @ dense

    def t_matmul(self, values, dense):
        """``R^T @ dense`` (V x N @ N x K)."""
        m = torch.sparse_csr_tensor(self.t_crow, self.t_col, values[self.t_perm], (self.shape[1], self.shape[0]))
        return m @ dense


def _progress(iterable, desc, enabled):
    if not enabled:
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return iterable
    return tqdm(iterable, desc=desc, leave=False)


def log_posterior(sparse, theta, phi, r, rate, eta, keep):
    """``log p(B|Phi,Theta) + log p(Theta) + log p(Phi)`` up to constants (uses ``sum_v phi_vk = 1``)."""
    lam = sparse.rate_at_nonzeros(theta, phi).clamp_min(1e-30)
    ll = (sparse.val * lam.log()).sum() - theta.sum()
    lp_theta = ((r - 1) * theta.clamp_min(1e-30).log() - rate * theta).sum() if r != 1 else -rate * theta.sum()
    lp_phi = ((eta - 1) * phi[keep].clamp_min(1e-30).log()).sum() if eta != 1 else 0.0
    return float(ll + lp_theta + lp_phi)


def _theta_step(sparse, theta, phi, r, rate):
    lam = sparse.rate_at_nonzeros(theta, phi).clamp_min(1e-30)
    ratio = sparse.val / lam
    s_theta = theta * sparse.matmul(ratio, phi)  # sum_v E[x_vkn]
    return (s_theta + (r - 1)).clamp_min(0) / (1.0 + rate), ratio


class PoissonFactorAnalysis:
    """PFA with MAP-EM (see the module docstring). ``phi``: V x K, columns sum to one over kept rows."""

    def __init__(self, phi, keep, checksum="", r=1.05, rate=1.0, eta=1.01, surfaces=None, gpt2=None,
                 theta_mean=None):
        self.phi = np.asarray(phi, dtype=np.float32)
        self.keep = np.asarray(keep, dtype=bool)
        self.checksum = str(checksum)
        self.r, self.rate, self.eta = float(r), float(rate), float(eta)
        self.surfaces = list(surfaces) if surfaces is not None else None  # text of each symbol (GPT-2)
        self.gpt2 = dict(gpt2) if gpt2 else None  # gpt2_files_info of the encoder the surfaces come from
        # corpus-mean topic proportions of the training documents (fit); None for older files
        self.theta_mean = None if theta_mean is None else np.asarray(theta_mean, dtype=np.float32)

    @property
    def phi_sha256(self):
        return phi_checksum(self.phi)

    def theta_prior(self):
        """Topic proportions (K,) of a document with no countable token: the corpus mean of the
        fit when the file has it, else uniform (the mean proportions of the symmetric Gamma prior)."""
        k = self.num_topics
        mean = self.theta_mean
        if mean is not None and mean.shape == (k,) and np.isfinite(mean).all() and mean.sum() > 0:
            return (mean / mean.sum()).astype(np.float32)
        return np.full(k, 1.0 / k, dtype=np.float32)

    def surface(self, index, dictionary):
        """The text of symbol ``index`` (decoded GPT-2 id, or the symbol without ``▁``)."""
        return self.surfaces[index] if self.surfaces is not None else dictionary[index].replace("\u2581", "")

    def gpt2_encoder(self):
        """fairseq's GPT-2 ``Encoder`` of the fit (``None`` for a dictionary of text pieces); the
        files must still be those of the fit (sha256)."""
        if not self.gpt2:
            return None
        from preprocess.gpt2_bpe import load_encoder

        info = self.gpt2
        for key in ("encoder_json", "vocab_bpe"):
            if not os.path.isfile(info[key]):
                raise FileNotFoundError(f"{info[key]}: GPT-2 file of the topic model not found (moved?); "
                                        "refit with --gpt2-encoder-json / --gpt2-vocab-bpe")
        if gpt2_files_info(info["encoder_json"], info["vocab_bpe"])["sha256"] != info["sha256"]:
            raise ValueError(f"{info['encoder_json']} / {info['vocab_bpe']} changed since the topic model was fit")
        return load_encoder(info["encoder_json"], info["vocab_bpe"])

    @property
    def num_topics(self):
        return self.phi.shape[1]

    @classmethod
    def fit(cls, bow, keep, num_topics=256, iters=100, r=1.05, rate=1.0, eta=1.01, seed=0, checksum="",
            progress=True, history=None):
        if r < 1 or eta < 1:
            raise ValueError("MAP-EM needs r >= 1 and eta >= 1 (the Gamma / Dirichlet modes must exist)")
        torch.manual_seed(seed)
        g = torch.Generator().manual_seed(seed)
        sparse = _Sparse(bow)
        n, v = sparse.shape
        keep_t = torch.from_numpy(np.asarray(keep, dtype=bool))
        phi = torch.rand(v, num_topics, generator=g) + 0.5
        phi[~keep_t] = 0
        phi = phi / phi.sum(0, keepdim=True).clamp_min(1e-30)
        lengths = sparse.matmul(sparse.val, torch.ones(v, 1)).squeeze(1)
        theta = (lengths[:, None] / num_topics) * (torch.rand(n, num_topics, generator=g) + 0.5) + 1e-3
        prior_phi = (eta - 1) * keep_t.float()[:, None]
        for it in _progress(range(iters), "PFA fit", progress):
            lam = sparse.rate_at_nonzeros(theta, phi).clamp_min(1e-30)
            ratio = sparse.val / lam
            s_theta = theta * sparse.matmul(ratio, phi)
            s_phi = phi * sparse.t_matmul(ratio, theta)
            theta = (s_theta + (r - 1)).clamp_min(0) / (1.0 + rate)
            phi = s_phi + prior_phi
            phi = phi / phi.sum(0, keepdim=True).clamp_min(1e-30)
            if history is not None:
                history.append(log_posterior(sparse, theta, phi, r, rate, eta, keep_t))
        model = cls(phi.numpy(), keep, checksum, r, rate, eta)
        model.train_theta = theta.numpy()
        # the prior of theta_prior(): the mean normalised theta of the documents with topic evidence
        counted = (lengths > 0) & (theta.sum(1) > 0)
        if bool(counted.any()):
            props = theta[counted] / theta[counted].sum(1, keepdim=True)
            model.theta_mean = props.mean(0).numpy().astype(np.float32)
        return model

    def infer(self, bow, iters=50, progress=False, normalize=True, batch_size=256, empty="zero"):
        """Topic proportions of new documents with Phi fixed (N x K, float32).

        The theta updates of MAP-EM, vectorised over a batch of documents: each document's distinct
        tokens' rows of Phi are gathered once into a padded ``(B, L, K)`` tensor, then every
        iteration is two batched matrix products. A document with no countable token gets the
        zero vector (``empty="zero"``: no topic evidence, what the semantic similarity of eq. 10
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
        for s in _progress(starts, "PFA infer", progress and len(starts) > 1):
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
                lam = torch.bmm(rows, theta[:, :, None]).squeeze(-1).clamp_min(1e-30)  # (Phi theta)_v
                s_theta = theta * torch.bmm((counts / lam)[:, None, :], rows).squeeze(1)  # sum_v E[x_vk]
                theta = (s_theta + (self.r - 1)).clamp_min(0) / (1.0 + self.rate)
            theta[lengths == 0] = 0  # nothing countable: no topic evidence
            if normalize:
                theta = theta / theta.sum(1, keepdim=True).clamp_min(1e-30)
                if empty == "prior":
                    theta[theta.sum(1) <= 0] = torch.from_numpy(self.theta_prior())
            out[s : s + len(theta)] = theta.numpy()
        return out

    def infer_tokens(self, token_lists, iters=50, empty="zero"):
        return self.infer(bag_of_words(token_lists, len(self.phi), self.keep), iters=iters, empty=empty)

    def save(self, path):
        extra = {}
        if self.surfaces is not None:
            extra["surfaces"] = np.array(json.dumps(self.surfaces, ensure_ascii=False))
        if self.gpt2:
            extra["gpt2"] = np.array(json.dumps(self.gpt2))
        if self.theta_mean is not None:
            extra["theta_mean"] = np.asarray(self.theta_mean, dtype=np.float32)
        np.savez(path, phi=self.phi, keep=self.keep, checksum=np.array(self.checksum),
                 hyper=np.array([self.r, self.rate, self.eta], dtype=np.float64), **extra)

    @classmethod
    def load(cls, path, dictionary=None):
        """Load ``topic_model.npz``; with ``dictionary``, check that Phi's rows are its symbols."""
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"topic model {path} not found: fit it with `python -m preprocess.topic_model fit DATA/bin`"
            )
        with np.load(path, allow_pickle=False) as f:
            surfaces = json.loads(str(f["surfaces"])) if "surfaces" in f.files else None
            gpt2 = json.loads(str(f["gpt2"])) if "gpt2" in f.files else None
            theta_mean = f["theta_mean"] if "theta_mean" in f.files else None
            model = cls(f["phi"], f["keep"], str(f["checksum"]), *f["hyper"].tolist(), surfaces=surfaces, gpt2=gpt2,
                        theta_mean=theta_mean)
        if dictionary is not None:
            check_dictionary(model, dictionary, path)
        return model


def check_dictionary(model, dictionary, path="topic model"):
    got = dictionary_checksum(dictionary)
    if model.phi.shape[0] != len(dictionary) or model.checksum != got:
        raise ValueError(
            f"{path} does not match the dictionary ({model.phi.shape[0]} rows, checksum {model.checksum[:12]} vs "
            f"{len(dictionary)} symbols, checksum {got[:12]}): Phi's rows must be this dictionary's symbols; "
            "refit it with `python -m preprocess.topic_model fit DATA/bin`"
        )


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
    source (``</s>`` aside) a prefix of its line; anything else is a ``ValueError`` naming the line."""
    ds = _indexed_split(data_dir, split, dictionary, lang)
    if ds is None:
        return 0, None
    path = os.path.join(full_src, f"{split}.{lang}")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"--full-src: {path} not found (the untruncated source of the binarized {split} split, one "
            "document per line in the dictionary's symbols: `fairseq-sum-prepare --write-full-src` writes "
            "OUT/spm_full, `python -m preprocess.gpt2_bpe --full-src-out DIR` the GPT-2 ids)"
        )
    n = len(ds)
    lines = _count_lines(path)
    if lines != n:
        raise ValueError(f"--full-src: {path} has {lines} lines but the binarized {split} split has {n} examples: "
                         "it must hold the same documents in the same order")
    eos = dictionary.eos()

    def tokens():
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                full = dictionary.encode_line(line, add_if_not_exist=False, append_eos=True).numpy()
                binarized = ds[i].numpy()
                head = binarized[:-1] if len(binarized) and binarized[-1] == eos else binarized
                if len(head) > len(full) or not np.array_equal(full[: len(head)], head):
                    raise ValueError(
                        f"--full-src: {path}:{i + 1} is not the untruncated form of binarized {split} example {i} "
                        "(its binarized source is not a prefix of the line): the files are not aligned"
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


def write_theta(model, data_dir, splits, iters, dictionary, full_src=None, bows=None):
    """``DATA/{split}.theta.npy`` for every binarized split, one row per binarized example (bags of
    words of the untruncated documents with ``full_src``, else of the binarized source; ``bows``:
    ``{split: (n, bag of words)}`` already counted the same way, e.g. the train split of the fit)."""
    written = {}
    for split in splits:
        t0 = time.time()
        if bows and split in bows:
            n, bow = bows[split]
        else:
            n, toks = split_documents(data_dir, split, dictionary, full_src)
            if toks is None:
                continue
            bow = bag_of_words(toks, len(dictionary), model.keep)
        theta = model.infer(bow, iters=iters, progress=True, empty="prior")
        if theta.shape[0] != n:  # pragma: no cover (full_split_tokens checks the alignment)
            raise ValueError(f"{split}: {theta.shape[0]} theta rows for {n} binarized examples")
        path = os.path.join(data_dir, f"{split}.theta.npy")
        np.save(path, theta.astype(np.float32))
        dt = time.time() - t0
        logger.info(f"{path}: {theta.shape}{' (untruncated documents)' if full_src else ''}, "
                    f"{1000 * dt / max(1, n):.2f} ms/document")
        written[split] = (path, theta.shape, dt)
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit", help="fit Phi on the train split and write theta for every split")
    f.add_argument("data", help="DATA/bin (dict.src.txt and the binarized splits)")
    f.add_argument("--topics", "-k", type=int, default=256)
    f.add_argument("--iters", type=int, default=100, help="EM iterations for Phi")
    f.add_argument("--max-docs", type=int, default=0, help="fit on the first N train documents (0: all)")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--r", type=float, default=1.05, help="Gamma shape of theta")
    f.add_argument("--rate", type=float, default=1.0, help="Gamma rate of theta")
    f.add_argument("--eta", type=float, default=1.01, help="Dirichlet concentration of the topics")
    f.add_argument("--gpt2-encoder-json", metavar="E",
                   help="GPT-2 encoder.json: the dictionary's symbols are GPT-2 BPE ids (fairseq's BART)")
    f.add_argument("--gpt2-vocab-bpe", metavar="V", help="GPT-2 vocab.bpe (with --gpt2-encoder-json)")
    i = sub.add_parser("infer", help="write DATA/bin/{split}.theta.npy with Phi fixed")
    i.add_argument("data")
    for q in (f, i):
        q.add_argument("--splits", default="train,valid,test")
        q.add_argument("--topic-model", default=None, help="default DATA/bin/topic_model.npz")
        q.add_argument("--infer-iters", type=int, default=50)
        q.add_argument("--full-src", metavar="DIR",
                       help="count the bags of words over the untruncated source DIR/{split}.src (one document "
                            "per line in the dictionary's symbols, aligned with the binarized split: "
                            "fairseq-sum-prepare --write-full-src -> OUT/spm_full, preprocess.gpt2_bpe "
                            "--full-src-out); default: the binarized source, as truncated by the preprocessing")
    args = p.parse_args(argv)
    if args.cmd == "fit" and bool(args.gpt2_encoder_json) != bool(args.gpt2_vocab_bpe):
        p.error("--gpt2-encoder-json and --gpt2-vocab-bpe go together")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s")
    dictionary = load_dictionary(args.data)
    path = args.topic_model or os.path.join(args.data, "topic_model.npz")
    if args.cmd == "fit":
        n_docs, toks = split_documents(args.data, "train", dictionary, args.full_src)
        if toks is None:
            raise FileNotFoundError(f"no binarized train split in {args.data}")
        if args.max_docs:
            toks = itertools.islice(toks, args.max_docs)
            n_docs = min(n_docs, args.max_docs)
        surfaces = gpt2 = None
        if args.gpt2_encoder_json:
            from preprocess.gpt2_bpe import load_encoder

            surfaces = gpt2_surfaces(dictionary, load_encoder(args.gpt2_encoder_json, args.gpt2_vocab_bpe))
            gpt2 = gpt2_files_info(args.gpt2_encoder_json, args.gpt2_vocab_bpe)
        keep = ~excluded_symbols(dictionary, surfaces)
        bow = bag_of_words(toks, len(dictionary), keep)
        t0 = time.time()
        model = PoissonFactorAnalysis.fit(bow, keep, args.topics, args.iters, args.r, args.rate, args.eta, args.seed,
                                          checksum=dictionary_checksum(dictionary))
        model.surfaces, model.gpt2 = surfaces, gpt2
        logger.info(f"fit K={args.topics} on {n_docs} {'untruncated' if args.full_src else 'binarized'} documents "
                    f"({bow.nnz} non-zeros, {int(keep.sum())} kept symbols) "
                    f"in {time.time() - t0:.1f}s")
        model.save(path)
        logger.info(f"wrote {path}")
        bows = None if args.max_docs else {"train": (n_docs, bow)}  # the fit's counts: not read twice
    else:
        model = PoissonFactorAnalysis.load(path, dictionary)
        bows = None
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    write_theta(model, args.data, splits, args.infer_iters, dictionary, args.full_src, bows)


if __name__ == "__main__":
    main()
