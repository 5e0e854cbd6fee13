"""The inspection stage: one document through a model once, every declared watch on.

A feature declares what it shows of a document in its spec (``FeatureSpec.inspect``, an
:class:`~..modules.features.Inspection`; a model family without a feature spec, Mem2Mem, in its
model class's ``inspection``): ETADS focus (centre and scope per encoder layer, head and query
position), ETADS saliency (gate per source token), information selection (gate per source token and
whether pruning removed it), the copy mechanism (``p_gen`` and the most-attended source position
per output token), the TP-Transformer (role attention per decoder sublayer and output position) and
Mem2Mem (each memory slot's write attention over the sentences, the read attention, its copy
switch), the Topic Assistant (the
document's top topics, their words read from the data folder's topic model by
:func:`add_topic_words`). :func:`teacher_forced` runs one document through a model once, with every
declared watch on, and returns ``{name: value}``; every model also gives ``attention``, the last
decoder layer's cross-attention (head-averaged, as the backbone returns it; after the saliency gate
where that layer has one: :func:`watch_gated_attention`) as the ``TOP_K`` source positions each
output token weighs most. :func:`inspect_documents` does so on the reference and on
the model's own beam-search output. Nothing is recorded when nobody inspects: the watches are
forward hooks and flags set for one pass.

:func:`check_documents` refuses, before a checkpoint is loaded, a split the data folder lacks and a
document index outside the split. The per-paper tools (roles, focus_plot, topics, probe, gate_sweep,
implicit_extraction, source_use) import this stage, never a command line.
"""
import os
from argparse import Namespace
from dataclasses import dataclass

import torch

from ..scoring.score_inputs import split_size

TOP_K = 5  # source positions kept per output token for the hover
RAW = "raw text"  # the split name of --text's documents


def binarized_splits(data):
    """Names of the splits binarized in ``data`` (``SPLIT.*.idx``), sorted."""
    return sorted({name.split(".", 1)[0] for name in os.listdir(data) if name.endswith(".idx")})


def check_documents(data, split, indices, flag="--index"):
    """The number of documents of ``split`` in the binarized folder ``data``; a ``ValueError``
    naming the flag for a folder that is not one, a split it lacks, or an index of ``indices``
    outside ``0..n-1`` (a negative index is refused: it would name the document by another
    number)."""
    if not os.path.isdir(data):
        raise ValueError(f"{data}: no such data folder")
    # a split is a file name's part before its first dot: 'test.src-tgt' prefixes test's files
    n = split_size(data, split) if split in binarized_splits(data) else None
    if n is None:
        have = ", ".join(binarized_splits(data)) or "none"
        raise ValueError(f"--split {split}: no binarized split {split} in {data} (it has: {have})")
    bad = [i for i in indices if not 0 <= i < n]
    if bad:
        raise ValueError(f"{flag} {bad[0]}: the {split} split of {data} has {n} documents "
                         f"(0..{n - 1})")
    return n


# --------------------------------------------------------------------------- the inspection stage
@dataclass
class Run:
    """One watched forward pass: the document ``src`` ``(S,)``, the encoder's output and the
    decoder's ``extra``."""

    src: torch.Tensor
    encoder_out: object = None
    extra: object = None


class Probe:
    """What the watches of one pass set up (:class:`~..modules.features.Inspection`): forward
    hooks, recording flags and readers; :meth:`close` removes the hooks and clears the flags."""

    def __init__(self):
        self.handles, self.switched, self.readers = [], [], []

    def hook(self, module, fn):
        self.handles.append(module.register_forward_hook(fn))

    def pre_hook(self, module, fn):
        self.handles.append(module.register_forward_pre_hook(fn, with_kwargs=True))

    def switch(self, module, attr):
        setattr(module, attr, True)
        self.switched.append((module, attr))

    def read(self, fn):
        self.readers.append(fn)

    def used(self):
        return bool(self.handles or self.switched or self.readers)

    def close(self):
        for h in self.handles:
            h.remove()
        for module, attr in self.switched:
            setattr(module, attr, False)
        self.handles, self.switched = [], []


def declarations(model):
    """``[(name, Inspection)]``: every registered feature's, then the model class's own."""
    from ..modules.features import FEATURES

    found = [(spec.name, spec.inspect) for spec in FEATURES.values() if spec.inspect is not None]
    own = getattr(type(model), "inspection", None)
    return found + ([(type(model).__name__, own)] if own is not None else [])


def exposed(model):
    """``{value name: layer}`` that ``model`` shows (the declarations whose watch finds a module of
    its feature in it), without running it."""
    names = {}
    for _, inspection in declarations(model):
        probe = Probe()
        try:
            inspection.watch(model, probe)
            if probe.used():
                names.update(inspection.exposes)
        finally:
            probe.close()
    return names


def top_attention(attn, k=TOP_K):
    """``attn`` ``(T, S)`` -> per output token ``[[source position, weight], ...]``, the ``k``
    largest weights first."""
    weights, index = attn.float().topk(min(k, attn.size(-1)), dim=-1)
    return [[[int(i), float(w)] for i, w in zip(ii, ww)]
            for ii, ww in zip(index.tolist(), weights.tolist())]


def watch_gated_attention(model, probe):
    """Where the last decoder layer's cross-attention is this plugin's
    (:class:`~..modules.attention.MultiheadAttention`) and gates its probabilities (the saliency
    of ETADS eq. 10), a reader of ``{"gated": (1, T', S')}``: the weights that layer uses, ``gate
    * softmax`` of every head (each head's softmax from the module's own explicit path, run once
    more per head), averaged over the heads, as the backbone averages its returned softmax. Returns
    the dict it fills (empty where the layer has no gate)."""
    from ..modules.attention import MultiheadAttention

    kept = {}
    layers = getattr(model.decoder, "layers", None)
    attn = getattr(layers[-1], "cross_attn", None) if layers else None
    if not isinstance(attn, MultiheadAttention):
        return kept
    original = attn._explicit_attention

    def explicit(q, k, v, mask, causal, dropout_p, gate=None):
        out = original(q, k, v, mask, causal, dropout_p, gate)
        if gate is not None:
            b, h, t, s = gate.shape
            one = (lambda x: x.flatten(0, 1).unsqueeze(1))  # (B, H, ., .) -> (B*H, 1, ., .)
            per_mask = None if mask is None else one(mask.expand(b, h, t, s))
            _, probs = original(one(q), one(k), one(v), per_mask, causal, 0.0)
            kept["gated"] = (probs.view(b, h, t, s) * gate.type_as(probs)).mean(1)
        return out

    attn._explicit_attention = explicit
    probe.handles.append(_Restore(lambda: attn.__dict__.pop("_explicit_attention", None)))
    return kept


class _Restore:
    """A probe handle that undoes an instance attribute set for one pass."""

    def __init__(self, undo):
        self.remove = undo


def teacher_forced(model, src, target, eos, side=None):
    """``{name: value}`` of one document: ``model`` run once on ``src`` ``(S,)`` with ``target``
    ``(T,)`` (ending in EOS) as the decoder's input shifted right, every declared watch on; plus
    ``attention`` (:func:`top_attention`) when the backbone returns its cross-attention: the
    weights the last decoder layer uses, i.e. after its saliency gate where it has one
    (:func:`watch_gated_attention`; ``attention_gated`` then true)."""
    device = next(model.parameters()).device
    src, target = src.to(device), target.to(device)
    prev = torch.cat([target.new_tensor([eos]), target[:-1]])[None]
    probe, run = Probe(), Run(src)
    for _, inspection in declarations(model):
        inspection.watch(model, probe)
    gated = watch_gated_attention(model, probe)
    probe.hook(model.encoder, lambda mod, inputs, out: setattr(run, "encoder_out", out))
    need = getattr(model.decoder, "need_attn", None)
    model.decoder.need_attn = True
    model.eval()
    try:
        with torch.no_grad():
            _, run.extra = model(src[None], torch.tensor([src.numel()], device=device), prev,
                                 **{k: v.to(device) for k, v in (side or {}).items()})
        values = {}
        for read in probe.readers:
            values.update(read(run))
    finally:
        probe.close()
        model.decoder.need_attn = need
    attn = run.extra.get("attn") if isinstance(run.extra, dict) else None
    attn = attn[0] if isinstance(attn, (list, tuple)) and attn else attn
    if "gated" in gated:  # over the kept rows, with a decoder prefix (TEMA) in front
        from ..modules.encoder_out import EncoderOut

        attn = EncoderOut.of(run.encoder_out).restore_attention(gated["gated"])[:, -prev.size(1):]
        values["attention_gated"] = True
    if torch.is_tensor(attn):
        values["attention"] = top_attention(attn[0])
    return values


def beam_output(model, task, sample, beam, max_len_b, **decoding):
    """The model's beam-search output of a one-document ``sample`` (token ids, ending in EOS);
    ``decoding``: more of fairseq-generate's options by their names (``min_len``, ``lenpen``,
    ``no_repeat_ngram_size``), read by the task's generator as fairseq-generate's are."""
    from fairseq import utils

    generator = task.build_generator([model], Namespace(beam=beam, max_len_b=max_len_b,
                                                        **decoding))
    if next(model.parameters()).is_cuda:
        sample = utils.move_to_cuda(sample)
    with torch.no_grad():
        return task.inference_step(generator, [model], sample)[0][0]["tokens"].cpu()


TOPIC_WORDS = 8  # words shown per topic


def add_topic_words(docs, data, n=TOPIC_WORDS):
    """Each document's ``topic_words``, ``{topic: [word, ...]}``: the ``n`` most relevant whole
    words (:func:`~..features.topic_assistant.words.top_words`, as inspection/topics.py's PNG lists
    them) of every topic a model shows for it (``topics``), from the topic model of the data folder
    ``data``; a note instead (``topic_words_missing``) where the folder has none that loads."""
    shown = [sorted({k for m in doc["models"] for run in m["runs"].values()
                     for k, _ in run["values"].get("topics", [])}) for doc in docs]
    if not any(shown):
        return
    from ..features.topic_assistant.similarity import load_topic_model
    from ..features.topic_assistant.words import top_words, whole_words

    try:
        dictionary, model = load_topic_model(data)
    except (OSError, ValueError, KeyError) as e:
        for doc in docs:
            doc["topic_words_missing"] = f"{data}: no topic model whose words can be read ({e})"
        return
    mask = whole_words(model, dictionary, data)
    words = {k: top_words(model, dictionary, k, n, mask) for k in set().union(*shown)}
    for doc, mine in zip(docs, shown):
        doc["topic_words"] = {str(k): words[k] for k in mine}


def pieces(dictionary, ids):
    return [dictionary[int(i)] for i in ids]


def as_text(docs, convert):
    """Replaces every token list of ``docs`` by ``convert(tokens)`` (e.g. GPT-2 ids as text)."""
    for doc in docs:
        doc["source"], doc["reference"] = convert(doc["source"]), convert(doc["reference"])
        for model in doc["models"]:
            for run in model["runs"].values():
                run["tokens"] = convert(run["tokens"])


def inspect_documents(models, split, indices, beam=4, max_len_b=60, decoding=None):
    """Per document of ``indices`` in ``split``: ``{"index", "source", "reference", "models":
    [{"name", "layers", "runs": {"output": {"tokens", "values"}, "reference": {...}}}]}``, token
    lists as dictionary pieces, ``layers`` the values the model shows (:func:`exposed`);
    ``models``: ``[(name, model, task)]``, each task with ``split`` loaded (its side data, e.g.
    the Topic Assistant's theta), their dictionaries one; ``decoding``: :func:`beam_output`'s."""
    first = models[0][2]
    src_dict, tgt_dict = first.source_dictionary, first.target_dictionary
    docs = []
    for i in indices:
        item = first.dataset(split)[i]
        src, ref = item["source"], item["target"]  # no reference for raw text
        doc = {"index": i, "source": pieces(src_dict, src),
               "reference": [] if ref is None else pieces(tgt_dict, ref), "models": []}
        for name, model, task in models:
            dataset = task.dataset(split)
            sample = dataset.collater([dataset[i]])
            side = {k: v for k, v in sample["net_input"].items()
                    if k not in ("src_tokens", "src_lengths", "prev_output_tokens")}
            hypo = beam_output(model, task, sample, beam, max_len_b, **(decoding or {}))
            runs = {}
            for run, target in (("output", hypo), ("reference", ref))[:1 if ref is None else 2]:
                runs[run] = {"tokens": pieces(tgt_dict, target),
                             "values": teacher_forced(model, src, target, tgt_dict.eos(), side)}
            doc["models"].append({"name": name, "layers": exposed(model), "runs": runs})
        docs.append(doc)
    return docs
