"""``summarization``: fairseq's translation task plus per-example side data and ROUGE validation.

Data is what ``fairseq-sum-prepare`` writes: a binarized ``src``/``tgt`` pair with a joined
dictionary, sentences separated by the ``<sep>`` token, and ``spm.model`` beside the binaries.

Side data (``--side-data theta,...``) are arrays ``{split}.{name}.npy`` whose first axis is aligned
with the examples of the split. Each example's row travels with it through filtering, sorting and
batching and reaches the model as ``net_input[name]`` (a ``B x ...`` tensor in batch order); models
that need it after the encoder keep it in ``encoder_out`` so that beam search reorders it. The task
knows no feature: what it needs to know about side data comes from the neutral registry
:mod:`fairseq_sum_plugins.side_data`, where features register it (for raw text,
``fairseq-interactive`` and the hub interface, a provider computing it, or a clear error says that
none is available; the command that writes the file; which models read it: asking a model for side
data it does not read is an error; a check of each loaded file against the models built on the
task).

Dictionaries: the sha256 of the source and target dictionaries is stored in the model args (so in
every checkpoint, ``src_dict_sha256`` / ``tgt_dict_sha256``); a checkpoint rebuilt on data with
another dictionary (``fairseq-generate``, ``-interactive``, the hub), even one of the same size, is
an error. A checkpoint without the checksums loads with a warning.

Raw text (:meth:`SummarizationTask.build_dataset_for_inference`) longer than the model accepts is
truncated to its first ``max_source_positions - 1`` tokens plus the final EOS, as preprocessing
truncated the training sources; the limit is the built models' own ``max_source_positions`` (a
checkpoint trained on 4,001-token documents reads them whole, whatever the task's default), and
every truncation is logged. Empty or whitespace-only inputs are logged as a warning. Without
``--tokenizer`` / ``--bpe``, ``fairseq-interactive`` (which loads no binarized split) takes them
from ``DATA/prepare_args.json`` (only the validated keys, :mod:`fairseq_sum_plugins.data_folder`),
or refuses a dictionary of sentencepiece pieces or GPT-2 ids that would turn the text into
``<unk>``.

``--eval-rouge`` generates summaries during validation and logs ``rouge_1``, ``rouge_2`` and
``rouge_l`` (summary-level ROUGE-L, F1 x 100), so that ``--best-checkpoint-metric rouge_l
--maximize-best-checkpoint-metric`` selects checkpoints by ROUGE. Summaries and references are
turned back into text as ``--eval-rouge-bpe`` says (by default the BPE recorded in
``DATA/prepare_args.json``, i.e. sentencepiece, else GPT-2 BPE for a dictionary of GPT-2 ids such
as BART's, else none), then cleaned and scored like ``fairseq-sum-score`` does, by the same
:class:`fairseq_sum_plugins.scoring.rouge.Scorer`: ``--eval-rouge-scorer`` is its ``--scorer``
(``rouge155-py`` or ``official``), ``--eval-rouge-sentence-sep`` its ``--sentence-sep`` (tokens
separated by spaces); a reference without a word scores 0.
"""
import json
import logging
import os
import time
from argparse import Namespace
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np
import torch
from fairseq import metrics, utils
from fairseq.dataclass import ChoiceEnum
from fairseq.data import BaseWrapperDataset, LanguagePairDataset
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from ..data_folder import dictionary_checksum, read_prepare_args, text_encoding_for
from ..scoring.rouge import (DEFAULT_BACKEND, DOCUMENT_BACKEND_NAMES, MAIN_METRICS, Scorer,
                             separator_tokens)
from ..side_data import (  # noqa: F401  (register_side_data_provider: part of the task's interface)
    GENERATOR_HOOKS,
    SIDE_DATA_CHECKS,
    SIDE_DATA_HINTS,
    SIDE_DATA_PROVIDERS,
    SIDE_DATA_USERS,
    register_side_data_provider,
)

logger = logging.getLogger(__name__)


class SideDataDataset(BaseWrapperDataset):
    """Adds aligned per-example arrays to a :class:`LanguagePairDataset`'s items and batches."""

    def __init__(self, dataset, side: Dict[str, np.ndarray]):
        super().__init__(dataset)
        for name, arr in side.items():
            if len(arr) != len(dataset):
                raise ValueError(
                    f"side data {name!r} has {len(arr)} rows but the dataset has {len(dataset)} "
                    "examples; it must be written for exactly the same (binarized) examples, in "
                    "order")
        self.side = side

    def __getitem__(self, index):
        item = self.dataset[index]
        for name, arr in self.side.items():
            item[name] = torch.from_numpy(np.array(arr[index]))  # copy out of the memory map
        return item

    def collater(self, samples):
        batch = self.dataset.collater(samples)
        if len(samples) == 0 or "id" not in batch:
            return batch
        by_id = {int(s["id"]): s for s in samples}  # collate re-sorts by length: follow batch["id"]
        for name in self.side:
            batch["net_input"][name] = torch.stack([by_id[int(i)][name] for i in batch["id"]])
        return batch


@dataclass
class SummarizationConfig(TranslationConfig):
    side_data: str = field(
        default="",
        metadata={"help": "comma-separated side-data names, loaded from DATA/{split}.{name}.npy"},
    )
    eval_rouge: bool = field(default=False,
                             metadata={"help": "generate and score ROUGE during validation"})
    eval_rouge_args: str = field(
        default="{}",
        metadata={"help": 'generation args for --eval-rouge as JSON, e.g. \'{"beam": 4, '
                          '"max_len_b": 100}\''},
    )
    eval_rouge_bpe: str = field(
        default="auto",
        metadata={"help": "how --eval-rouge decodes token ids into text: a fairseq --bpe name "
                          "(sentencepiece, subword_nmt, gpt2, ...), 'none' (word-level data; "
                          "sentencepiece and @@ marks are still undone by the ROUGE cleanup), or "
                          "'auto': the BPE recorded in DATA/prepare_args.json, else gpt2 for a "
                          "dictionary of GPT-2 BPE ids (BART), else none"},
    )
    eval_rouge_bpe_args: str = field(
        default="{}",
        metadata={"help": 'args of --eval-rouge-bpe as JSON, e.g. \'{"gpt2_encoder_json": "E", '
                          '"gpt2_vocab_bpe": "V"}\''},
    )
    eval_rouge_print_samples: bool = field(
        default=False, metadata={"help": "log one summary per validation batch"})
    eval_rouge_scorer: ChoiceEnum(DOCUMENT_BACKEND_NAMES) = field(
        default=DEFAULT_BACKEND,
        metadata={"help": "ROUGE backend of --eval-rouge, as fairseq-sum-score --scorer"})
    eval_rouge_sentence_sep: Optional[str] = field(
        default=None, metadata={"help": "extra sentence separator tokens of --eval-rouge, "
                                        "space-separated (e.g. '<q>'), as fairseq-sum-score "
                                        "--sentence-sep"})
    # GNMT penalties in beam search (Wu et al., 2016; ETADS §4.1), see
    # fairseq_sum_plugins/tasks/sequence_generator.py
    lenpen_gnmt: Optional[float] = field(
        default=None,
        metadata={"help": "rank finished hypotheses by log P / ((5 + |Y|) / 6) ** ALPHA instead "
                          "of --lenpen"},
    )
    coverage_penalty: float = field(
        default=0.0,
        metadata={"help": "add BETA * sum_j log(min(sum_i a_ij, 1)) over the source tokens "
                          "(last-layer cross-attention)"},
    )
    coverage_penalty_type: str = field(
        default="wu",
        metadata={"help": "wu: the GNMT coverage penalty; summary: OpenNMT-py's -BETA * sum_j "
                          "(max(sum_i a_ij, 1) - 1)"},
    )


def parse_dict_flag(flag, text):
    """A dict flag's value as JSON (``{"beam": 4}``) or a Python literal (``{'beam': 4}``, the style
    of ``--model-overrides``; read with ``ast.literal_eval``, never evaluated as code)."""
    import ast

    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError) as err:
            raise ValueError(
                f"{flag} {text!r}: not a JSON or Python dict literal ({err})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag} {text!r}: expected a dict such as '{{\"beam\": 4}}'")
    return value


def refuse_cpu_half_precision(cfg):
    """``--fp16`` / ``--memory-efficient-fp16`` need a CUDA GPU: refused up front on CPU."""
    # memory-efficient first: fairseq sets fp16 for --memory-efficient-fp16 too
    for flag in ("memory_efficient_fp16", "fp16"):
        if getattr(cfg, flag, False) and (getattr(cfg, "cpu", False)
                                          or not torch.cuda.is_available()):
            raise ValueError(
                f"--{flag.replace('_', '-')} needs a CUDA GPU and none is in use: drop it to train "
                "in float32 on CPU")


@register_task("summarization", dataclass=SummarizationConfig)
class SummarizationTask(TranslationTask):
    cfg: SummarizationConfig

    def __init__(self, cfg, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        # the task's own state (features keep theirs: the task holds none)
        self._side_data_paths = {}  # split -> {side data name: .npy path}
        self._inference_side = {}  # side data of raw-text sources (fairseq-interactive, hub)
        self._model_max_source_positions = []  # of every model built on the task
        self.rouge_decoder = self.sequence_generator = None  # --eval-rouge

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        from ..compat import refuse_fully_sharded_in_task_setup

        # fairseq-hydra-train: before fairscale's wrapping context of fully_sharded
        refuse_fully_sharded_in_task_setup(cfg)
        return super().setup_task(cfg, **kwargs)

    @property
    def side_data_names(self):
        return [n.strip() for n in self.cfg.side_data.split(",") if n.strip()]

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        if self.side_data_names:
            paths = utils.split_paths(self.cfg.data)
            # the folder fairseq's translation task read this split from
            data_path = paths[(epoch - 1) % len(paths)] if split == getattr(
                self.cfg, "train_subset", "train") else paths[0]
            side = {}
            for name in self.side_data_names:
                path = os.path.join(data_path, f"{split}.{name}.npy")
                if not os.path.exists(path):
                    raise FileNotFoundError(
                        f"--side-data {name}: {path} not found "
                        f"({SIDE_DATA_HINTS.get(name, 'written by the preprocessing step')})")
                side[name] = np.load(path, mmap_mode="r")
            self.datasets[split] = SideDataDataset(self.datasets[split], side)
            self._side_data_paths = {
                **self._side_data_paths, split: {
                    name: os.path.join(data_path, f"{split}.{name}.npy")
                    for name in side
                }
            }
            if self._model_max_source_positions:  # models built: check the files now
                self.check_side_data(split)

    def filter_indices_by_size(self, indices, dataset, max_positions=None,
                               ignore_invalid_inputs=False):
        """fairseq's filter (examples longer than ``max_positions`` are skipped with a warning in
        training, an error elsewhere); when it skips every example of a split, an error naming the
        flags and the count, instead of fairseq's ``IndexError`` in ``batch_by_size``."""
        n = len(indices)
        kept = super().filter_indices_by_size(indices, dataset, max_positions,
                                              ignore_invalid_inputs)
        if n > 0 and len(kept) == 0:
            raise ValueError(self._nothing_fits(indices, dataset, max_positions))
        return kept

    def _nothing_fits(self, indices, dataset, max_positions):
        split = next((name for name, d in self.datasets.items() if d is dataset), "the")
        pair = isinstance(max_positions, (tuple, list))
        limits = tuple(max_positions) if pair else (max_positions, max_positions)
        limits = tuple(np.inf if lim is None else lim for lim in limits)
        sizes = np.array([np.broadcast_to(np.asarray(dataset.size(i)), (2,)) for i in indices])
        flags = (self.cfg.max_source_positions, self.cfg.max_target_positions)
        over_flag = sizes > np.array(flags)
        over_limit = sizes > np.array(limits)
        parts = [f"all {len(indices)} examples of the {split} split are skipped as longer than the "
                 f"model accepts (source, target limit {limits[0]}, {limits[1]} tokens)"]
        if over_flag[:, 0].any():
            parts.append(f"{int(over_flag[:, 0].sum())} sources are longer than "
                         f"--max-source-positions {flags[0]}: raise it or add --truncate-source "
                         "(cuts each source to its first max-source-positions - 1 tokens and EOS)")
        if over_flag[:, 1].any():
            parts.append(f"{int(over_flag[:, 1].sum())} targets are longer than "
                         f"--max-target-positions {flags[1]}: raise it")
        other = int((over_limit & ~over_flag).any(axis=1).sum())
        if other:
            parts.append(f"{other} examples are within those flags but over the limit, which comes "
                         "from --max-tokens (a batch holds at least one whole example) or the "
                         "model's own positions: raise --max-tokens")
        return "; ".join(parts)

    def check_side_data(self, split):
        """The registered checks of the side-data files of ``split`` (e.g. theta against Phi)."""
        for name, path in self._side_data_paths.get(split, {}).items():
            if name in SIDE_DATA_CHECKS:
                SIDE_DATA_CHECKS[name](self, split, path)

    def check_model_data(self, cfg, model, from_checkpoint=False):
        """After building ``model``: the dictionaries are those of training (checksums in ``cfg``,
        the model args), every ``--side-data`` name is read by the model, and the side-data files
        already loaded pass their checks."""
        for side, d, lang in (("src", self.source_dictionary, self.cfg.source_lang),
                              ("tgt", self.target_dictionary, self.cfg.target_lang)):
            key, got = f"{side}_dict_sha256", dictionary_checksum(d)
            stored = getattr(cfg, key, None)
            if stored and stored != got:
                where = os.path.join(utils.split_paths(self.cfg.data)[0], f"dict.{lang}.txt")
                raise ValueError(
                    "the checkpoint was trained with another "
                    f"{'source' if side == 'src' else 'target'} dictionary than {where} (sha256 "
                    f"{stored[:16]} vs {got[:16]}, {len(d)} symbols here): its token ids mean "
                    "other words in this data; binarize it with the training dictionary "
                    "(fairseq-preprocess --srcdict/--tgtdict TRAINING_DATA/dict.*.txt)")
            if not stored:
                if from_checkpoint and side == "src":
                    logger.warning(
                        "the checkpoint records no dictionary checksum: cannot check that the data "
                        "was binarized with the training dictionary")
                try:
                    from omegaconf import OmegaConf, open_dict

                    if OmegaConf.is_config(cfg):  # a hydra model config: record it there too
                        with open_dict(cfg):
                            setattr(cfg, key, got)
                    else:
                        setattr(cfg, key, got)
                except Exception:  # a structured config without the key: nothing to record in
                    pass
        for name in self.side_data_names:
            reads, feature = SIDE_DATA_USERS.get(name, (None, None))
            if reads is not None and not reads(model):
                raise ValueError(f"--side-data {name}: this model "
                                 f"({getattr(cfg, 'arch', type(model).__name__)}) does not read "
                                 f"it; {name} feeds {feature}. Drop --side-data {name} or use such "
                                 "a model")
        for split in self._side_data_paths:
            self.check_side_data(split)

    def max_inference_source_tokens(self):
        """The longest source (tokens, EOS included) that every model built by :meth:`build_model`
        accepts (their own ``max_source_positions``); before any model is built, the task's
        ``--max-source-positions``."""
        limits = [m for m in self._model_max_source_positions if m is not None]
        return min(limits) if limits else self.cfg.max_source_positions

    def max_positions(self):
        """``(source, target)`` limits: once models are built, the source limit is theirs (so that
        ``fairseq-interactive`` and the hub, whose task is set up with the default 1,024, accept
        what the checkpoint was trained on)."""
        if self._model_max_source_positions:
            return (self.max_inference_source_tokens(), self.cfg.max_target_positions)
        return super().max_positions()

    def _raw_text_mode(self):
        """``fairseq-interactive`` loads no binarized split before building its tokenizer and BPE
        (``fairseq-generate`` does)."""
        return not self.datasets

    def _text_encoding(self, tokenizer_given, bpe_given):
        data = utils.split_paths(self.cfg.data)[0]
        return text_encoding_for(data, self.source_dictionary, tokenizer_given, bpe_given)

    def build_tokenizer(self, args):
        """Raw text without ``--tokenizer``: the one recorded in ``DATA/prepare_args.json``."""
        tokenizer = getattr(args, "_name", getattr(args, "tokenizer", None))
        if self._raw_text_mode() and tokenizer is None:
            recorded, _ = self._text_encoding(tokenizer_given=False, bpe_given=True)
            if recorded:
                logger.info(f"raw text: --tokenizer {recorded['tokenizer']} {recorded} from "
                            "DATA/prepare_args.json")
                from fairseq.data import encoders

                from .. import text  # noqa: F401  (registers sum_moses)

                return encoders.build_tokenizer(Namespace(**recorded))
        return super().build_tokenizer(args)

    def build_bpe(self, args):
        """Raw text without ``--bpe``: the BPE recorded in ``DATA/prepare_args.json``; none recorded
        for a dictionary of sentencepiece pieces or GPT-2 ids is an error naming the flags."""
        if self._raw_text_mode() and getattr(args, "_name", getattr(args, "bpe", None)) is None:
            _, recorded = self._text_encoding(tokenizer_given=True, bpe_given=False)
            if recorded:
                logger.info(
                    f"raw text: --bpe {recorded['bpe']} {recorded} from DATA/prepare_args.json")
                from fairseq.data import encoders

                return encoders.build_bpe(Namespace(**recorded))
        return super().build_bpe(args)

    def _log_raw_text(self, src_tokens, limit):
        """Warn about empty inputs, sources that are mostly ``<unk>``, and truncated sources."""
        d = self.source_dictionary
        blank = {d.bos(), d.eos(), d.pad()}
        for i, t in enumerate(src_tokens):
            ids = t.tolist()
            if all(x in blank for x in ids):
                logger.warning(f"raw-text input {i} is empty or whitespace only: its summary is "
                               "generated from an empty document")
            elif sum(x == d.unk() for x in ids) * 2 > len(ids):
                logger.warning(
                    f"raw-text input {i}: {sum(x == d.unk() for x in ids)} of {len(ids)} tokens "
                    "are <unk>: the text is not encoded like the training data (--tokenizer / "
                    "--bpe)")
            if len(ids) > limit:
                logger.warning(f"raw-text input {i}: {len(ids)} tokens, truncated to the model's "
                               f"limit of {limit} (its first {limit - 1} tokens and EOS)")

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        """Raw-text sources (``fairseq-interactive``, the hub). A source longer than
        :meth:`max_inference_source_tokens` is truncated to its first ``limit - 1`` tokens plus its
        final EOS, as preprocessing truncated the training sources (instead of fairseq's "Size of
        sample is invalid" error). Side data is computed by its provider from the whole, untruncated
        sources (for the topic model's theta: the whole document)."""
        limit = self.max_inference_source_tokens()
        full_tokens = list(src_tokens)
        self._log_raw_text(full_tokens, limit)
        src_tokens = [
            t if len(t) <= limit else torch.cat([t[:limit - 1], t[-1:]]) for t in full_tokens
        ]
        src_lengths = [len(t) for t in src_tokens]
        dataset = LanguagePairDataset(
            src_tokens, src_lengths, self.source_dictionary, tgt_dict=self.target_dictionary,
            constraints=constraints,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
        )
        if not self.side_data_names:
            return dataset
        side = {name: self.provide_side_data(name, full_tokens) for name in self.side_data_names}
        # fairseq-interactive keeps only src_tokens/src_lengths: inference_step finds these rows
        # again
        self._inference_side = {
            (tuple(t.tolist()), name): side[name][i]
            for i, t in enumerate(src_tokens)
            for name in side
        }
        return SideDataDataset(dataset, side)

    def provide_side_data(self, name, src_tokens):
        """Side data ``name`` for raw-text sources (a list of 1-D token tensors) from its
        provider."""
        if name not in SIDE_DATA_PROVIDERS:
            raise ValueError(
                f"this model needs side data {name!r}, which cannot be computed for raw text: "
                f"no provider is registered (available: {sorted(SIDE_DATA_PROVIDERS) or 'none'})"
            )
        return np.asarray(SIDE_DATA_PROVIDERS[name](self, src_tokens))

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq-interactive rebuilds ``net_input`` from ``src_tokens``/``src_lengths`` only: side
        data missing there is the row :meth:`build_dataset_for_inference` computed for that source
        (from the whole, untruncated text), else computed by its provider from the (unpadded) source
        tokens."""
        net_input = sample["net_input"]
        missing = [name for name in self.side_data_names if name not in net_input]
        if missing:
            src = net_input["src_tokens"]
            tokens = [utils.strip_pad(t, self.source_dictionary.pad()).cpu() for t in src]
            known = self._inference_side
            for name in missing:
                keys = [(tuple(t.tolist()), name) for t in tokens]
                if all(k in known for k in keys):
                    rows = np.stack([np.asarray(known[k]) for k in keys])
                else:
                    rows = self.provide_side_data(name, tokens)
                net_input[name] = torch.from_numpy(rows).to(src.device)
        return super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens,
                                      constraints=constraints)

    def build_generator(self, models, args, **kwargs):
        """fairseq's generator; asks the decoders for attention only when it will be printed or
        scored. ``--lenpen-gnmt`` / ``--coverage-penalty`` (task flags, or the same names in
        ``args``, e.g. ``--eval-rouge-args``) select
        :class:`~fairseq_sum_plugins.tasks.sequence_generator.GNMTSequenceGenerator`."""
        lenpen_gnmt = getattr(args, "lenpen_gnmt", self.cfg.lenpen_gnmt)
        coverage = getattr(args, "coverage_penalty", self.cfg.coverage_penalty)
        if getattr(args, "print_alignment", False) or coverage:
            for model in models:
                if hasattr(model.decoder, "need_attn"):
                    model.decoder.need_attn = True
        if (lenpen_gnmt is not None or coverage) and kwargs.get("seq_gen_cls") is None:
            from .sequence_generator import GNMTSequenceGenerator

            kwargs["seq_gen_cls"] = GNMTSequenceGenerator
            kwargs["extra_gen_cls_kwargs"] = dict(
                kwargs.get("extra_gen_cls_kwargs") or {},
                lenpen_gnmt=lenpen_gnmt,
                coverage_penalty=coverage,
                coverage_penalty_type=getattr(args, "coverage_penalty_type",
                                              self.cfg.coverage_penalty_type),
            )
        # fairseq-generate/interactive --fp16 halve the models before this hook
        for model in models:
            if any(p.dtype == torch.float16 and p.device.type == "cpu" for p in model.parameters()):
                raise ValueError(
                    "--fp16 needs a CUDA GPU: on CPU the model would decode in half precision "
                    "(different scores); drop --fp16 to decode in float32")
        for hook in GENERATOR_HOOKS:  # registered by features (side_data.register_generator_hook)
            hook(models)
        return super().build_generator(models, args, **kwargs)

    # --- ROUGE during validation -----------------------------------------------------------------

    def build_model(self, cfg, from_checkpoint=False):
        if not from_checkpoint:  # fairseq-train: fail before building anything for --fp16 on CPU
            refuse_cpu_half_precision(cfg)
            for flag in ("max_source_positions", "max_target_positions"):
                value = getattr(self.cfg, flag)
                if value is not None and value < 1:
                    raise ValueError(f"--{flag.replace('_', '-')} {value}: a number of tokens, "
                                     "at least 1")
        model = super().build_model(cfg, from_checkpoint)
        max_positions = model.max_positions()
        source_limit = max_positions
        if isinstance(max_positions, (tuple, list)):
            source_limit = max_positions[0]
        self._model_max_source_positions = self._model_max_source_positions + [source_limit]
        self.check_model_data(cfg, model, from_checkpoint)
        if self.cfg.eval_rouge:
            # ROUGE-1.5.5 missing: an error now, not after the first epoch
            self.rouge_scorer().check()
            self.rouge_decoder = self.build_rouge_decoder()
            gen_args = parse_dict_flag("--eval-rouge-args", self.cfg.eval_rouge_args)
            self.sequence_generator = self.build_generator([model], Namespace(**gen_args))
        return model

    def resolve_rouge_bpe(self):
        """``(name, args)`` of the BPE that ``--eval-rouge`` undoes (``name`` None: none)."""
        name, args = self.cfg.eval_rouge_bpe, parse_dict_flag("--eval-rouge-bpe-args",
                                                              self.cfg.eval_rouge_bpe_args)
        if name == "auto":
            data = utils.split_paths(self.cfg.data)[0]
            # validated: only the keys fairseq-sum-prepare writes
            prepared = read_prepare_args(data)
            if prepared is not None:
                recorded = dict(prepared["bpe"])
                name = recorded.pop("bpe", None)
                args = {**recorded, **args}
            else:
                # GPT-2 BPE ids, e.g. BART's dict.txt
                syms = self.tgt_dict.symbols[self.tgt_dict.nspecial:]
                name = "gpt2" if syms and sum(s.isdigit() for s in syms) > len(syms) / 2 else None
        return (None if name in (None, "", "none") else name), args

    def rouge_scorer(self):
        """The :class:`~fairseq_sum_plugins.scoring.rouge.Scorer` of ``--eval-rouge-scorer`` /
        ``--eval-rouge-sentence-sep``."""
        return Scorer(str(self.cfg.eval_rouge_scorer or DEFAULT_BACKEND),
                      separator_tokens(self.cfg.eval_rouge_sentence_sep))

    def build_rouge_decoder(self):
        """``tokens -> list of sentences`` for ``--eval-rouge``. sentencepiece / subword-nmt marks
        are undone by ``Dictionary.string`` (as fairseq's ``--eval-bleu-remove-bpe``); any other BPE
        (e.g. GPT-2) by fairseq's BPE decoder, its text then split into sentences like
        ``fairseq-sum-score --split-sentences``. Then
        :meth:`~fairseq_sum_plugins.scoring.rouge.Scorer.sentences` (``<sep>`` and
        ``--eval-rouge-sentence-sep`` boundaries, special tokens, Moses detokenization)."""
        scorer = self.rouge_scorer()
        name, args = self.resolve_rouge_bpe()
        symbol = {"sentencepiece": "sentencepiece", "subword_nmt": "subword_nmt"}.get(name)
        bpe = None
        if name is not None and symbol is None:
            from fairseq.data import encoders

            bpe = encoders.build_bpe(Namespace(bpe=name, **args))
            if bpe is None:
                raise ValueError(f"--eval-rouge-bpe {name!r}: not a fairseq BPE")
            scorer = Scorer(scorer.backend, scorer.seps, splitter="regex")  # as --split-sentences

        def decode(tokens):
            text = self.tgt_dict.string(tokens.int().cpu(), symbol)
            if name == "gpt2":  # only GPT-2 ids decode: drop specials (<s>) and madeupword0000
                text = " ".join(t for t in text.split() if t.isdigit())
            return scorer.sentences(text if bpe is None else bpe.decode(text))

        return decode

    def valid_step(self, sample, model, criterion):
        loss, sample_size, logging_output = super().valid_step(sample, model, criterion)
        if self.cfg.eval_rouge:
            decode = self.rouge_decoder or self.build_rouge_decoder()
            gen_out = self.inference_step(self.sequence_generator, [model], sample,
                                          prefix_tokens=None)
            hyps, refs = [], []
            for i, hypos in enumerate(gen_out):
                hyps.append(decode(hypos[0]["tokens"]))
                refs.append(decode(utils.strip_pad(sample["target"][i], self.tgt_dict.pad())))
                if self.cfg.eval_rouge_print_samples and i == 0:
                    logger.info(f"example summary: {hyps[-1]}\nexample reference: {refs[-1]}")
            per = self.rouge_scorer().documents(hyps, refs, wordless_zero=True) if hyps else {}
            for key, m in zip(("rouge_1", "rouge_2", "rouge_l"), MAIN_METRICS):
                logging_output[f"_{key}_sum"] = float(sum(per[m][:, 2])) if hyps else 0.0
            logging_output["_rouge_n"] = len(gen_out)
            self.rouge_progress(len(gen_out))
        return loss, sample_size, logging_output

    ROUGE_PROGRESS_SECONDS = 30

    def rouge_progress(self, n):
        """Logs, every :data:`ROUGE_PROGRESS_SECONDS`, how many validation summaries
        ``--eval-rouge`` has generated (fairseq's validation loop is silent until it ends); counted
        from the first batch after the last :meth:`reduce_metrics` of a validation."""
        now = time.monotonic()
        state = self.__dict__.setdefault("_rouge_progress", {"start": now, "last": now, "n": 0})
        state["n"] += n
        if now - state["last"] >= self.ROUGE_PROGRESS_SECONDS:
            state["last"] = now
            total = sum(len(d) for name, d in self.datasets.items() if name.startswith("valid"))
            logger.info(f"--eval-rouge: {state['n']} of {total} validation summaries generated "
                        f"in {now - state['start']:.0f}s")

    def reduce_metrics(self, logging_outputs, criterion):
        super().reduce_metrics(logging_outputs, criterion)
        if not self.cfg.eval_rouge:
            return
        n = sum(log.get("_rouge_n", 0) for log in logging_outputs)
        if n == 0:
            return
        self.__dict__.pop("_rouge_progress", None)  # the next validation counts from zero
        # summed over workers the values are tensors: log plain numbers (round() needs them)
        metrics.log_scalar("_rouge_n", float(utils.item(n)))
        for key in ("rouge_1", "rouge_2", "rouge_l"):
            total = sum(log.get(f"_{key}_sum", 0) for log in logging_outputs)
            metrics.log_scalar(f"_{key}_sum", float(utils.item(total)))
            metrics.log_derived(
                key,
                lambda meters, k=key: round(
                    100 * meters[f"_{k}_sum"].sum / meters["_rouge_n"].sum, 2))
