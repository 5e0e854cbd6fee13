"""``summarization``: fairseq's translation task plus per-example side data and ROUGE validation.

Data is what ``fairseq-sum-prepare`` writes: a binarized ``src``/``tgt`` pair with a joined
dictionary, sentences separated by the ``<sep>`` token, and ``spm.model`` beside the binaries.

Side data (``--side-data theta,...``) are arrays ``{split}.{name}.npy`` whose first axis is aligned
with the examples of the split. Each example's row travels with it through filtering, sorting and
batching and reaches the model as ``net_input[name]`` (a ``B x ...`` tensor in batch order); models
that need it after the encoder keep it in ``encoder_out`` so that beam search reorders it. For raw
text (``fairseq-interactive``, the hub interface) side data is computed by a provider registered
with :func:`register_side_data_provider`, or a clear error says that none is available.

Raw text (:meth:`SummarizationTask.build_dataset_for_inference`) longer than the model accepts is
truncated to its first ``max_source_positions - 1`` tokens plus the final EOS, as preprocessing
truncated the training sources.

``--eval-rouge`` generates summaries during validation and logs ``rouge_1``, ``rouge_2`` and
``rouge_l`` (summary-level ROUGE-L, F1 x 100), so that ``--best-checkpoint-metric rouge_l
--maximize-best-checkpoint-metric`` selects checkpoints by ROUGE. Summaries and references are
turned back into text as ``--eval-rouge-bpe`` says (by default the BPE recorded in
``DATA/prepare_args.json``, i.e. sentencepiece, else GPT-2 BPE for a dictionary of GPT-2 ids such
as BART's, else none), then cleaned like ``fairseq-sum-score`` does
(:func:`fairseq_sum_plugins.rouge.clean_summary`).
"""
import json
import logging
import os
from argparse import Namespace
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

import numpy as np
import torch
from fairseq import metrics, utils
from fairseq.data import BaseWrapperDataset, LanguagePairDataset
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

logger = logging.getLogger(__name__)

# name -> fn(task, list of 1-D source token tensors) -> np.ndarray aligned with them
SIDE_DATA_PROVIDERS: Dict[str, Callable] = {}


def register_side_data_provider(name):
    """Register ``fn(task, src_tokens_list) -> np.ndarray`` computing side data for raw text."""

    def wrapper(fn):
        SIDE_DATA_PROVIDERS[name] = fn
        return fn

    return wrapper


class SideDataDataset(BaseWrapperDataset):
    """Adds aligned per-example arrays to a :class:`LanguagePairDataset`'s items and batches."""

    def __init__(self, dataset, side: Dict[str, np.ndarray]):
        super().__init__(dataset)
        for name, arr in side.items():
            if len(arr) != len(dataset):
                raise ValueError(
                    f"side data {name!r} has {len(arr)} rows but the dataset has {len(dataset)} examples; "
                    "it must be written for exactly the same (binarized) examples, in order"
                )
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
    eval_rouge: bool = field(default=False, metadata={"help": "generate and score ROUGE during validation"})
    eval_rouge_args: str = field(
        default="{}",
        metadata={"help": 'generation args for --eval-rouge as JSON, e.g. \'{"beam": 4, "max_len_b": 100}\''},
    )
    eval_rouge_bpe: str = field(
        default="auto",
        metadata={"help": "how --eval-rouge decodes token ids into text: a fairseq --bpe name (sentencepiece, "
                          "subword_nmt, gpt2, ...), 'none' (word-level data; sentencepiece and @@ marks are still "
                          "undone by the ROUGE cleanup), or 'auto': the BPE recorded in DATA/prepare_args.json, "
                          "else gpt2 for a dictionary of GPT-2 BPE ids (BART), else none"},
    )
    eval_rouge_bpe_args: str = field(
        default="{}",
        metadata={"help": 'args of --eval-rouge-bpe as JSON, e.g. \'{"gpt2_encoder_json": "E", "gpt2_vocab_bpe": "V"}\''},
    )
    eval_rouge_print_samples: bool = field(default=False, metadata={"help": "log one summary per validation batch"})
    # GNMT penalties in beam search (Wu et al., 2016; ETADS §4.1), see fairseq_sum_plugins/sequence_generator.py
    lenpen_gnmt: Optional[float] = field(
        default=None,
        metadata={"help": "rank finished hypotheses by log P / ((5 + |Y|) / 6) ** ALPHA instead of --lenpen"},
    )
    coverage_penalty: float = field(
        default=0.0,
        metadata={"help": "add BETA * sum_j log(min(sum_i a_ij, 1)) over the source tokens (last-layer cross-attention)"},
    )
    coverage_penalty_type: str = field(
        default="wu",
        metadata={"help": "wu: the GNMT coverage penalty; summary: OpenNMT-py's -BETA * sum_j (max(sum_i a_ij, 1) - 1)"},
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
            raise ValueError(f"{flag} {text!r}: not a JSON or Python dict literal ({err})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag} {text!r}: expected a dict such as '{{\"beam\": 4}}'")
    return value


def refuse_cpu_half_precision(cfg):
    """``--fp16`` / ``--memory-efficient-fp16`` need a CUDA GPU: refused up front on CPU."""
    for flag in ("fp16", "memory_efficient_fp16"):
        if getattr(cfg, flag, False) and (getattr(cfg, "cpu", False) or not torch.cuda.is_available()):
            raise ValueError(f"--{flag.replace('_', '-')} needs a CUDA GPU and none is in use: drop it to train "
                             "in float32 on CPU")


@register_task("summarization", dataclass=SummarizationConfig)
class SummarizationTask(TranslationTask):
    cfg: SummarizationConfig

    @property
    def side_data_names(self):
        return [n.strip() for n in self.cfg.side_data.split(",") if n.strip()]

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        if self.side_data_names:
            paths = utils.split_paths(self.cfg.data)
            # the folder fairseq's translation task read this split from
            data_path = paths[(epoch - 1) % len(paths)] if split == getattr(self.cfg, "train_subset", "train") else paths[0]
            side = {}
            for name in self.side_data_names:
                path = os.path.join(data_path, f"{split}.{name}.npy")
                if not os.path.exists(path):
                    raise FileNotFoundError(f"--side-data {name}: {path} not found (written by the preprocessing step)")
                side[name] = np.load(path, mmap_mode="r")
            self.datasets[split] = SideDataDataset(self.datasets[split], side)

    def max_inference_source_tokens(self):
        """The longest source (tokens, EOS included) that the task and every model built by
        :meth:`build_model` accept."""
        limit = self.cfg.max_source_positions
        for model_limit in getattr(self, "_model_max_source_positions", []):
            if model_limit is not None:
                limit = min(limit, model_limit)
        return limit

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        """Raw-text sources (``fairseq-interactive``, the hub). A source longer than
        :meth:`max_inference_source_tokens` is truncated to its first ``limit - 1`` tokens plus its
        final EOS, as preprocessing truncated the training sources (instead of fairseq's "Size of
        sample is invalid" error). Side data is computed by its provider from the whole, untruncated
        sources (for the topic model's theta: the whole document)."""
        limit = self.max_inference_source_tokens()
        full_tokens = list(src_tokens)
        src_tokens = [t if len(t) <= limit else torch.cat([t[: limit - 1], t[-1:]]) for t in full_tokens]
        src_lengths = [len(t) for t in src_tokens]
        dataset = LanguagePairDataset(
            src_tokens, src_lengths, self.source_dictionary, tgt_dict=self.target_dictionary, constraints=constraints,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
        )
        if not self.side_data_names:
            return dataset
        side = {name: self.provide_side_data(name, full_tokens) for name in self.side_data_names}
        # fairseq-interactive keeps only src_tokens/src_lengths: inference_step finds these rows again
        self._inference_side = {
            (tuple(t.tolist()), name): side[name][i] for i, t in enumerate(src_tokens) for name in side
        }
        return SideDataDataset(dataset, side)

    def provide_side_data(self, name, src_tokens):
        """Side data ``name`` for raw-text sources (a list of 1-D token tensors) from its provider."""
        if name not in SIDE_DATA_PROVIDERS:
            raise ValueError(
                f"this model needs side data {name!r}, which cannot be computed for raw text: "
                f"no provider is registered (available: {sorted(SIDE_DATA_PROVIDERS) or 'none'})"
            )
        return np.asarray(SIDE_DATA_PROVIDERS[name](self, src_tokens))

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq-interactive rebuilds ``net_input`` from ``src_tokens``/``src_lengths`` only: side data
        missing there is the row :meth:`build_dataset_for_inference` computed for that source (from
        the whole, untruncated text), else computed by its provider from the (unpadded) source tokens."""
        net_input = sample["net_input"]
        missing = [name for name in self.side_data_names if name not in net_input]
        if missing:
            src = net_input["src_tokens"]
            tokens = [utils.strip_pad(t, self.source_dictionary.pad()).cpu() for t in src]
            known = getattr(self, "_inference_side", {})
            for name in missing:
                keys = [(tuple(t.tolist()), name) for t in tokens]
                if all(k in known for k in keys):
                    rows = np.stack([np.asarray(known[k]) for k in keys])
                else:
                    rows = self.provide_side_data(name, tokens)
                net_input[name] = torch.from_numpy(rows).to(src.device)
        return super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)

    def build_generator(self, models, args, **kwargs):
        """fairseq's generator; asks the decoders for attention only when it will be printed or
        scored. ``--lenpen-gnmt`` / ``--coverage-penalty`` (task flags, or the same names in ``args``,
        e.g. ``--eval-rouge-args``) select :class:`~fairseq_sum_plugins.sequence_generator.GNMTSequenceGenerator`."""
        lenpen_gnmt = getattr(args, "lenpen_gnmt", self.cfg.lenpen_gnmt)
        coverage = getattr(args, "coverage_penalty", self.cfg.coverage_penalty)
        if getattr(args, "print_alignment", False) or coverage:
            for model in models:
                if hasattr(model.decoder, "need_attn"):
                    model.decoder.need_attn = True
        if (lenpen_gnmt is not None or coverage) and kwargs.get("seq_gen_cls") is None:
            from ..sequence_generator import GNMTSequenceGenerator

            kwargs["seq_gen_cls"] = GNMTSequenceGenerator
            kwargs["extra_gen_cls_kwargs"] = dict(
                kwargs.get("extra_gen_cls_kwargs") or {},
                lenpen_gnmt=lenpen_gnmt,
                coverage_penalty=coverage,
                coverage_penalty_type=getattr(args, "coverage_penalty_type", self.cfg.coverage_penalty_type),
            )
        for model in models:  # fairseq-generate/interactive --fp16 halve the models before this hook
            if any(p.dtype == torch.float16 and p.device.type == "cpu" for p in model.parameters()):
                raise ValueError("--fp16 needs a CUDA GPU: on CPU the model would decode in half precision "
                                 "(different scores); drop --fp16 to decode in float32")
        from ..modules.gates import report_sparsity_at_exit

        report_sparsity_at_exit(models)  # information selection: log the gate sparsity rate at the end
        return super().build_generator(models, args, **kwargs)

    # --- ROUGE during validation -----------------------------------------------------------------

    def build_model(self, cfg, from_checkpoint=False):
        if not from_checkpoint:  # fairseq-train: fail before building anything for --fp16 on CPU
            refuse_cpu_half_precision(cfg)
        model = super().build_model(cfg, from_checkpoint)
        max_positions = model.max_positions()
        source_limit = max_positions[0] if isinstance(max_positions, (tuple, list)) else max_positions
        self._model_max_source_positions = getattr(self, "_model_max_source_positions", []) + [source_limit]
        if self.cfg.eval_rouge:
            self.rouge_decoder = self.build_rouge_decoder()
            gen_args = parse_dict_flag("--eval-rouge-args", self.cfg.eval_rouge_args)
            self.sequence_generator = self.build_generator([model], Namespace(**gen_args))
        return model

    def resolve_rouge_bpe(self):
        """``(name, args)`` of the BPE that ``--eval-rouge`` undoes (``name`` None: none)."""
        name, args = self.cfg.eval_rouge_bpe, parse_dict_flag("--eval-rouge-bpe-args", self.cfg.eval_rouge_bpe_args)
        if name == "auto":
            data = utils.split_paths(self.cfg.data)[0]
            prepared = os.path.join(data, "prepare_args.json")
            if os.path.exists(prepared):
                with open(prepared) as f:
                    recorded = dict(json.load(f).get("bpe", {}))
                name = recorded.pop("bpe", None)
                if recorded.get("sentencepiece_model") and not os.path.isabs(recorded["sentencepiece_model"]):
                    recorded["sentencepiece_model"] = os.path.join(data, recorded["sentencepiece_model"])
                args = {**recorded, **args}
            else:
                syms = self.tgt_dict.symbols[self.tgt_dict.nspecial:]  # GPT-2 BPE ids, e.g. BART's dict.txt
                name = "gpt2" if syms and sum(s.isdigit() for s in syms) > len(syms) / 2 else None
        return (None if name in (None, "", "none") else name), args

    def build_rouge_decoder(self):
        """``tokens -> list of sentences`` for ``--eval-rouge``. sentencepiece / subword-nmt marks are
        undone by ``Dictionary.string`` (as fairseq's ``--eval-bleu-remove-bpe``); any other BPE
        (e.g. GPT-2) by fairseq's BPE decoder, its text then split into sentences like
        ``fairseq-sum-score --split-sentences``. Then :func:`~fairseq_sum_plugins.rouge.clean_summary`
        (``<sep>`` boundaries, special tokens, Moses detokenization)."""
        from ..rouge import clean_summary
        from ..text import split_sentences

        name, args = self.resolve_rouge_bpe()
        symbol = {"sentencepiece": "sentencepiece", "subword_nmt": "subword_nmt"}.get(name)
        bpe = None
        if name is not None and symbol is None:
            from fairseq.data import encoders

            bpe = encoders.build_bpe(Namespace(bpe=name, **args))
            if bpe is None:
                raise ValueError(f"--eval-rouge-bpe {name!r}: not a fairseq BPE")

        def decode(tokens):
            text = self.tgt_dict.string(tokens.int().cpu(), symbol)
            if bpe is None:
                return clean_summary(text)
            if name == "gpt2":  # only GPT-2 ids decode: drop specials (<s>) and madeupword0000
                text = " ".join(t for t in text.split() if t.isdigit())
            return [s for sent in split_sentences(bpe.decode(text)) for s in clean_summary(sent)]

        return decode

    def valid_step(self, sample, model, criterion):
        loss, sample_size, logging_output = super().valid_step(sample, model, criterion)
        if self.cfg.eval_rouge:
            from ..rouge import rouge_pair

            decode = getattr(self, "rouge_decoder", None) or self.build_rouge_decoder()
            gen_out = self.inference_step(self.sequence_generator, [model], sample, prefix_tokens=None)
            totals = np.zeros(3)
            for i, hypos in enumerate(gen_out):
                hyp = decode(hypos[0]["tokens"])
                ref = decode(utils.strip_pad(sample["target"][i], self.tgt_dict.pad()))
                totals += rouge_pair(hyp, ref)
                if self.cfg.eval_rouge_print_samples and i == 0:
                    logger.info(f"example summary: {hyp}\nexample reference: {ref}")
            for key, value in zip(("rouge_1", "rouge_2", "rouge_l"), totals):
                logging_output[f"_{key}_sum"] = float(value)
            logging_output["_rouge_n"] = len(gen_out)
        return loss, sample_size, logging_output

    def reduce_metrics(self, logging_outputs, criterion):
        super().reduce_metrics(logging_outputs, criterion)
        if not self.cfg.eval_rouge:
            return
        n = sum(log.get("_rouge_n", 0) for log in logging_outputs)
        if n == 0:
            return
        # summed over workers the values are tensors: log plain numbers (round() needs them)
        metrics.log_scalar("_rouge_n", float(utils.item(n)))
        for key in ("rouge_1", "rouge_2", "rouge_l"):
            total = sum(log.get(f"_{key}_sum", 0) for log in logging_outputs)
            metrics.log_scalar(f"_{key}_sum", float(utils.item(total)))
            metrics.log_derived(key, lambda meters, k=key: round(100 * meters[f"_{k}_sum"].sum / meters["_rouge_n"].sum, 2))
