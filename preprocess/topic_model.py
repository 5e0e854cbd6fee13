"""Poisson factor analysis (PFA, Zhou et al., 2012) over the summarizer's own vocabulary, for the
Topic Assistant (Topic Assistant paper §3.2, App. B).

Model (TA eq. 2)::

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
(:func:`log_posterior`, tested). The paper uses the autoencoding variational inference of Zhang
et al. (2018); any PFA posterior estimate serves SIA/TEMA/DRM, and this one needs no GPU.

This module fits. Inference with ``Phi`` fixed (the same theta updates, batched over documents),
the prior of a document without countable tokens, the bags of words and the data readers are the
runtime part, :mod:`fairseq_sum_plugins.features.topic_assistant.topic_model`, which the summarizer uses.

**Writing a fit** (``fit``): Phi and every split's theta are computed first; then the old
``{split}.theta.npy`` files and their records are removed, ``topic_model.npz`` is replaced
atomically, and each theta file is written with its record (the sha256 of Phi and of the file, the
split and the sha256 of its binarized source,
:func:`fairseq_sum_plugins.features.topic_assistant.topic_model.write_theta_file`). A fit killed at any point leaves the old
topic model with its theta, or no theta at all, or the new topic model with (some of) its own theta:
never a new Phi with old topic proportions, and the task refuses any theta file whose record names
another Phi or another file. ``infer`` rewrites theta files (with records) for a fixed Phi.

Whole documents: ``--full-src DIR`` counts the untruncated ``DIR/{split}.src`` (``fairseq-sum-prepare
--write-full-src`` -> ``OUT/spm_full``, ``preprocess.gpt2_bpe --full-src-out DIR``) instead of the
binarized, truncated source (see :func:`fairseq_sum_plugins.features.topic_assistant.topic_model.split_documents`).

CLI::

    python -m preprocess.topic_model fit DATA/bin [--topics 256] [--iters 100] [--full-src DIR]
        [--gpt2-encoder-json E --gpt2-vocab-bpe V]   (BART: dictionary symbols are GPT-2 ids)
        -> DATA/bin/topic_model.npz (Phi, dictionary checksum, corpus-mean theta) and
           DATA/bin/{split}.theta.npy for every binarized split, each with its record {split}.theta.json
    python -m preprocess.topic_model infer DATA/bin --splits valid,test [--topic-model PATH] [--full-src DIR]

``--splits`` defaults to every binarized split of DATA; a name DATA has not binarized, a number of
topics or iterations below 1, a non-finite prior or ``--r`` / ``--eta`` below 1 (no MAP mode) is an
argparse error naming the flag.
"""
import argparse
import itertools
import logging
import math
import os
import sys
import time
import warnings

import numpy as np
import torch

from fairseq_sum_plugins.data_folder import looks_like_gpt2_ids
from fairseq_sum_plugins.features.topic_assistant.topic_model import PoissonFactorAnalysis as _RuntimePFA
from fairseq_sum_plugins.features.topic_assistant.topic_model import (  # the runtime part this module fits for
    bag_of_words,
    binarized_splits,
    dictionary_checksum,
    gpt2_files_info,
    load_dictionary,
    progress_bar,
    split_documents,
    write_theta_file,
)

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


class PoissonFactorAnalysis(_RuntimePFA):
    """The runtime PFA (:class:`fairseq_sum_plugins.features.topic_assistant.topic_model.PoissonFactorAnalysis`) plus its fit."""

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
        for it in progress_bar(range(iters), "PFA fit", progress):
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

def compute_theta(model, data_dir, splits, iters, dictionary, full_src=None, bows=None):
    """``{split: theta}`` (N x K float32, one row per binarized example) for every binarized split:
    bags of words of the untruncated documents with ``full_src``, else of the binarized source;
    ``bows``: ``{split: (n, bag of words)}`` already counted the same way (the train split of the fit)."""
    out = {}
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
        logger.info(f"{split} theta: {theta.shape}{' (untruncated documents)' if full_src else ''}, "
                    f"{1000 * (time.time() - t0) / max(1, n):.2f} ms/document")
        out[split] = theta.astype(np.float32)
    return out


def write_theta(model, data_dir, thetas, topic_model_path, full_src=None):
    """``DATA/{split}.theta.npy`` with its record for every ``{split: theta}``."""
    documents = f"untruncated ({os.path.abspath(full_src)})" if full_src else "binarized"
    for split, theta in thetas.items():
        path = os.path.join(data_dir, f"{split}.theta.npy")
        write_theta_file(path, theta, model, topic_model_path, documents, split)
        logger.info(f"wrote {path} ({theta.shape[0]} x {theta.shape[1]}) and its record")


def commit_fit(model, path, data_dir, thetas, full_src=None):
    """Replace the topic model and its theta files so that no new Phi ever sits beside old theta:
    old theta files (and records) of the data folder go first, then Phi (atomic rename), then the
    new theta files, each with its record."""
    for name in os.listdir(data_dir):
        if name.endswith(".theta.npy") or name.endswith(".theta.json"):
            os.remove(os.path.join(data_dir, name))
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        model.save(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    logger.info(f"wrote {path}")
    write_theta(model, data_dir, thetas, path, full_src)


def _number(kind, minimum, strict=False):
    """argparse type: a finite ``kind`` (int / float) ``>= minimum`` (``> minimum`` with ``strict``)."""
    bound = f"{'>' if strict else '>='} {minimum}"

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise argparse.ArgumentTypeError(f"{text!r}: must be {bound}")
        return value

    return parse


def get_parser():
    p = argparse.ArgumentParser(prog="python -m preprocess.topic_model", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit", help="fit Phi on the train split and write theta for every split")
    f.add_argument("data", help="DATA/bin (dict.src.txt and the binarized splits)")
    f.add_argument("--topics", "-k", type=_number(int, 1), default=256,
                   help="number of topics K, the columns of Phi (default: %(default)s)")
    f.add_argument("--iters", type=_number(int, 1), default=100, help="EM iterations for Phi")
    f.add_argument("--max-docs", type=_number(int, 0), default=0, help="fit on the first N train documents (0: all)")
    f.add_argument("--seed", type=int, default=0,
                   help="seed of the random start of Phi and theta (default: %(default)s)")
    f.add_argument("--r", type=_number(float, 1), default=1.05, help="Gamma shape of theta (>= 1: MAP-EM needs its mode)")
    f.add_argument("--rate", type=_number(float, 0, strict=True), default=1.0, help="Gamma rate of theta")
    f.add_argument("--eta", type=_number(float, 1), default=1.01,
                   help="Dirichlet concentration of the topics (>= 1: MAP-EM needs its mode)")
    f.add_argument("--gpt2-encoder-json", metavar="E",
                   help="GPT-2 encoder.json: the dictionary's symbols are GPT-2 BPE ids (fairseq's BART)")
    f.add_argument("--gpt2-vocab-bpe", metavar="V", help="GPT-2 vocab.bpe (with --gpt2-encoder-json)")
    i = sub.add_parser("infer", help="write DATA/bin/{split}.theta.npy with Phi fixed")
    i.add_argument("data", help="DATA/bin (dict.src.txt, the binarized splits, topic_model.npz)")
    for q in (f, i):
        q.add_argument("--splits", default=None,
                       help="comma-separated binarized splits to write theta for (default: every one of DATA)")
        q.add_argument("--topic-model", default=None, help="default DATA/bin/topic_model.npz")
        q.add_argument("--infer-iters", type=_number(int, 1), default=50,
                       help="MAP-EM iterations of each split's theta, Phi fixed "
                            "(default: %(default)s)")
        q.add_argument("--full-src", metavar="DIR",
                       help="count the bags of words over the untruncated source DIR/{split}.src (one document "
                            "per line in the dictionary's symbols, aligned with the binarized split: "
                            "fairseq-sum-prepare --write-full-src -> OUT/spm_full, preprocess.gpt2_bpe "
                            "--full-src-out); default: the binarized source, as truncated by the preprocessing")
    return p


def fit_command(args, dictionary):
    """``fit``: ``(model, bows)``, the fitted PFA and the train split's counts (not read twice)."""
    n_docs, toks = split_documents(args.data, "train", dictionary, args.full_src)
    if toks is None:
        raise FileNotFoundError(f"no binarized train split in {args.data}")
    if args.max_docs:
        toks = itertools.islice(toks, args.max_docs)
        n_docs = min(n_docs, args.max_docs)
    surfaces = gpt2 = None
    if args.gpt2_encoder_json:
        from .gpt2_bpe import load_encoder

        surfaces = gpt2_surfaces(dictionary, load_encoder(args.gpt2_encoder_json, args.gpt2_vocab_bpe))
        gpt2 = gpt2_files_info(args.gpt2_encoder_json, args.gpt2_vocab_bpe)
    keep = ~excluded_symbols(dictionary, surfaces)
    bow = bag_of_words(toks, len(dictionary), keep)
    t0 = time.time()
    model = PoissonFactorAnalysis.fit(bow, keep, args.topics, args.iters, args.r, args.rate, args.eta, args.seed,
                                      checksum=dictionary_checksum(dictionary))
    model.surfaces, model.gpt2 = surfaces, gpt2
    logger.info(f"fit K={args.topics} on {n_docs} {'untruncated' if args.full_src else 'binarized'} documents "
                f"({bow.nnz} non-zeros, {int(keep.sum())} kept symbols) in {time.time() - t0:.1f}s")
    return model, (None if args.max_docs else {"train": (n_docs, bow)})


def _splits(parser, args):
    """``--splits`` as a list: every binarized split of DATA by default; a name DATA has not
    binarized is an error naming the ones it has (nothing is skipped silently)."""
    available = binarized_splits(args.data)
    if args.splits is None:
        return available
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    unknown = [s for s in splits if s not in available]
    if unknown or not splits:
        parser.error(f"--splits {args.splits}: no binarized split {', '.join(unknown) or '(none named)'} in "
                     f"{args.data} (it has: {', '.join(available) or 'none'})")
    return splits


def _reads_and_writes(args):
    """``(reads, writes)`` for the one output guard: DATA's dictionaries, binarized splits and
    records (not the whole folder, which holds the outputs), ``--full-src``, the GPT-2 files and
    (infer) the topic model read; the topic model (fit) and each split's theta written."""
    data = args.data
    names = sorted(os.listdir(data)) if os.path.isdir(data) else []
    read = [os.path.join(data, n) for n in names if n.startswith("dict") or n.endswith((".bin", ".idx"))
            or n in ("prepare_args.json", "spm.model")] or [data]
    model = args.topic_model or os.path.join(data, "topic_model.npz")
    thetas = [os.path.join(data, f"{s}.theta.npy") for s in binarized_splits(data)] if names else []
    reads = [("DATA", read), ("--full-src", args.full_src)]
    if args.cmd == "fit":
        reads += [("--gpt2-encoder-json", args.gpt2_encoder_json), ("--gpt2-vocab-bpe", args.gpt2_vocab_bpe)]
        return reads, [("--topic-model", model), ("DATA", thetas)]
    return reads + [("--topic-model", model)], [("DATA", thetas)]


def main(argv=None):
    from fairseq_sum_plugins.cli.outputs import refuse_clobber

    p = get_parser()
    args = p.parse_args(argv)
    refuse_clobber(p, *_reads_and_writes(args), files=True)
    if args.cmd == "fit" and bool(args.gpt2_encoder_json) != bool(args.gpt2_vocab_bpe):
        p.error("--gpt2-encoder-json and --gpt2-vocab-bpe go together")
    if not os.path.isdir(args.data):
        p.error(f"{args.data}: no such directory")
    splits = _splits(p, args)
    if args.cmd == "fit" and "train" not in binarized_splits(args.data):
        p.error(f"{args.data}: no binarized train split to fit on")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s")
    dictionary = load_dictionary(args.data)
    path = args.topic_model or os.path.join(args.data, "topic_model.npz")
    if args.cmd == "fit":
        model, bows = fit_command(args, dictionary)
        thetas = compute_theta(model, args.data, splits, args.infer_iters, dictionary, args.full_src, bows)
        commit_fit(model, path, args.data, thetas, args.full_src)
    else:
        model = PoissonFactorAnalysis.load(path, dictionary)
        thetas = compute_theta(model, args.data, splits, args.infer_iters, dictionary, args.full_src)
        write_theta(model, args.data, thetas, path, args.full_src)


def cli_main():
    """``main`` for the command line: a missing or misaligned input is one error line, not a traceback."""
    try:
        main()
    except (OSError, ValueError) as e:
        sys.exit(f"python -m preprocess.topic_model: error: {e}")


if __name__ == "__main__":
    cli_main()
