"""One interface between the papers' features and the backbones that host them.

A feature declares, in one :class:`FeatureSpec` registered here, its flags (``add_args``,
``defaults``), its *sites* and how its module is built. A site is the one place a feature's module
sits, under an attribute name that is the same on every backbone (so are the parameter names): a
layer's attention block (``encoder_self``, ``decoder_self``, ``decoder_cross``: :data:`SITES`), the
encoder's output (``encoder_out``), the decoder's output (``decoder_out``) or the model
(``model``). The module then contributes through
any of these methods (duck-typed), with one batch-first layout on every backbone:

* ``score_bias(q, k, inputs) -> (B|1, H|1, T, S)`` or a :class:`~.attention.FactoredBias`: added
  to the attention logits after the ``QK^T`` scaling, before the softmax (ETADS eq. 8:
  ``FocusBias``); ``q`` ``(B, H, T, d_k)`` the projected queries, ``k`` ``(B, H, S, d_k)`` the
  keys of this step;
* ``prob_gate(q, k, inputs) -> (B, H, T, S)`` or a :class:`~.attention.FactoredGate`: multiplies
  the attention probabilities (ETADS eq. 10: ``SaliencyGate``);
* ``head(query, kv, inputs) -> (B, T, C)``: added to the attention block's output, before its
  dropout and residual (an extra head: TA eq. 7, ``SIAHead``; a bias: TA eq. 9, ``DRM``);
  ``query`` ``(B, T, C)`` the block's (normalised) input, ``kv`` ``(B, S, C)`` what it attends to;
* ``bind(x) -> x``: applied to the sublayer's output after its residual (and, post-LN, its norm)
  (TPT eq. 6: ``TPRBinding``);
* ``encoder_output(view)``: transforms the encoder output (:class:`.encoder_out.EncoderOut`) in
  place, for a module on the encoder (site ``encoder_out``; IS eq. 3 and Algorithm 1:
  ``InformationGate``): its rows (``kept_index`` when it removes positions), its per-document
  ``state`` for the decoder, its aux losses in ``view.aux_losses`` (registered with
  :mod:`fairseq_sum_plugins.aux_losses`);
* ``__call__(logits, features, embedded, attn, src_tokens) -> log P``, for a module on the decoder's
  output (site ``decoder_out``; the copy mechanism): the output distribution from the logits, the
  last layer's states and cross-attention (over source positions) and the embedded input tokens;
  ``needs_attention = True`` asks the last layer for its head-averaged cross-attention.

A model-level feature (``build_model_feature(args, task, src_dict, tgt_dict)``, set on the encoder
and the decoder as ``attrs["model"]`` before their layers are built; the Topic Assistant's topic
model) gives the per-forward inputs that need more than one layer: ``encoder_inputs(src_tokens,
padding_mask, head_dim) -> {name: value}`` for ``encoder_self``, and per decoder call
``decoder_call(prev_tokens, new_len, view, head_dim, incremental)``, an object with ``n_prefix`` and
``prefix(embed_weight) -> (B, n, C)`` (a decoder prefix, embedded by the backbone like its tokens,
never emitted: TEMA, TA eq. 8), ``self_mask`` (the decoder self-attention's additive mask
replacing the causal one, or None) and ``site_inputs(site) -> {name: value}``; and
``prefix_length()``, the prefix's length. The model-level module knows its own sizes (e.g. SIA's
``d_k`` from the model args).

A spec may give what the backbones do around their stacks and outputs: ``stack_context(stack)``, a
context manager entered around a stack's layers in every forward (TPT eq. 4: the role dictionaries
normalised once for all sublayers), with ``recompute_context(layer)`` for activation checkpointing
(a factory of context managers that re-creates it when a layer is recomputed in backward); and
``decoder_outputs(view) -> {name: value}``, extra outputs of the decoder (``net_output[1]``) read
from the encoder output (IS: ``gate_counts`` for the criterion's ``gate_sparsity``).

A spec may also give ``cross_inputs(view, values) -> {name: value}``: per-forward values of every
decoder cross-attention computed from the encoder output and the ``values`` the features registered
before it gave (computed once per forward, shared by the layers): ``kv_scale`` ``(B, G|1, S, 1)``
scales the projected key and value rows (IS eq. 6), ``score_bias`` ``(B, G|1, 1, S)`` is added to
the logits, other names are inputs that site's modules declare (several features' scales multiply,
biases add).

``inputs`` is the per-forward dict of the site: the keys of :data:`SITE_INPUTS` (``padding_mask``:
``(B, S)`` True at padding keys, or None; ``incremental_state``; ``kv_scale`` and ``score_bias``,
above) and those the features declare for the site (``FeatureSpec.inputs``, e.g. SIA's
probabilities), None where this forward has none. Giving or reading another key is a ``KeyError``.
The default transformer cell and the T5 cell (:mod:`..models.sum_transformer`) and BART's layers
(:mod:`..models.bart`) build the modules with :func:`attach` and consume them with
:func:`score_bias_fn`, :func:`prob_gate_fn`, :func:`add_heads`, :func:`bind`,
:func:`transform_encoder_output`, :func:`cross_attention_values`, :func:`encoder_inputs`,
:func:`decoder_call`, :func:`stack_context`, :func:`recompute_context`, :func:`transform_output` and
:func:`decoder_outputs`; a preset switches a feature on with :func:`switch_on`. A backbone where a
switched-on feature means nothing is refused by ``spec.refuse(args, backbone)`` with a message
naming the feature. Adding a feature is its module with its spec and flags, and a row of the
contract table (tests/test_model_contract.py); tests/test_features.py adds one that way.

A spec may also say what the feature shows of a document (``inspect``, an :class:`Inspection`:
value names, the page layer of each, and a watch of forward hooks and recording flags set for one
forward pass only), read by :mod:`..inspection.stage` and ``fairseq-sum-inspect``;
tests/test_inspect.py declares one for a toy feature.
"""
import contextlib
from argparse import ArgumentParser, Namespace
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

from ..flags import layers_flag, parse_bool_options
from .attention import materialised

SITES = ("encoder_self", "decoder_self", "decoder_cross")
ENCODER_OUT = "encoder_out"  # modules on the encoder, transforming its output
DECODER_OUT = "decoder_out"  # modules on the decoder, transforming its output distribution
# a model-level module on the encoder and the decoder (per-forward inputs, a decoder prefix)
MODEL = "model"
SITE_INPUTS = ("padding_mask", "incremental_state", "kv_scale", "score_bias")
BACKBONES = ("default", "t5", "bart")  # sum_transformer's cells (--cell) and bart_sum


@dataclass(frozen=True)
class SiteDims:
    """What a feature's builder knows of its place: ``layer`` (0-based) of ``num_layers`` in the
    stack, ``embed_dim`` ``d_m``, ``attn_dim`` ``H * d_k`` and ``heads``."""

    layer: int
    num_layers: int
    embed_dim: int
    attn_dim: int
    heads: int


# how a page draws an inspected value (fairseq-sum-inspect): a shade per source token, a band of
# source positions (a centre and a scope), marks on source sentences, a value per output token,
# values of the whole document
LAYERS = ("token", "band", "sentence", "output", "document")


@dataclass(frozen=True)
class Inspection:
    """What a feature shows of one document (:mod:`..inspection.stage`, ``fairseq-sum-inspect``).

    ``exposes``: name -> the layer a page draws it as (:data:`LAYERS`); ``watch(model, probe)``
    prepares one teacher-forced forward pass of one document on ``model`` and does nothing where
    the feature has no module in it: ``probe.hook(module, fn)`` calls ``fn(module, inputs,
    output)`` at the module's forward (a hook that lives for the pass only: nothing runs when nobody
    inspects), ``probe.pre_hook(module, fn)`` calls ``fn(module, args, kwargs)`` before it (and may
    return changed ``(args, kwargs)``), ``probe.switch(module, attr)`` sets a module's recording
    flag for the pass, and ``probe.read(fn)`` calls ``fn(run)`` after it (``run``: the document's
    ``src`` ``(S,)``, the ``encoder_out`` and the decoder's ``extra``), which returns ``{name:
    value}`` of JSON types."""

    exposes: Dict[str, str]
    watch: Callable


@dataclass(frozen=True)
class FeatureSpec:
    """One feature (see the module docstring).

    ``attrs``: site (a layer site, ``encoder_out`` or ``model``) -> attribute name of its module on
    the layer, encoder or decoder; ``build(args, site, dims)``: the module of a site, or None where
    it is off; ``stage``: ``"attention"`` (built before the site's attention), ``"head"`` (after
    it), ``"binding"`` (after its residual), ``"encoder"`` (on the encoder, after its layers),
    ``"output"`` (on the decoder, after its output projection) or ``"model"`` (one module per model,
    built by ``build_model_feature``, e.g. the Topic Assistant's topic model); ``inputs``: site ->
    the per-forward input names its modules read; ``refuse(args, backbone)``: a message when the
    feature is on and means nothing there, else None; ``on(args)``: the settings that switch it on
    in ``args`` (``("--gate True",)``; empty: off; without it, any of its flags set,
    :func:`features_on`); ``defaults(args, on=False)`` fills its flags (``on``: a preset's switch,
    :func:`switch_on`); ``cross_inputs``, ``build_model_feature``, ``stack_context``,
    ``recompute_context`` and ``decoder_outputs``: see the module docstring; ``inspect``: what
    the feature shows of a document (:class:`Inspection`)."""

    name: str
    attrs: Dict[str, str]
    build: Optional[Callable] = None
    stage: str = "attention"
    add_args: Optional[Callable] = None
    defaults: Optional[Callable] = None
    refuse: Optional[Callable] = None
    inputs: Dict[str, tuple] = field(default_factory=dict)
    cross_inputs: Optional[Callable] = None
    build_model_feature: Optional[Callable] = None
    on: Optional[Callable] = None
    stack_context: Optional[Callable] = None
    recompute_context: Optional[Callable] = None
    decoder_outputs: Optional[Callable] = None
    inspect: Optional[Inspection] = None


FEATURES: Dict[str, FeatureSpec] = {}


def register_feature(spec: FeatureSpec):
    bad = set(spec.attrs) - set(SITES) - {ENCODER_OUT, DECODER_OUT, MODEL}
    if bad:
        raise ValueError(
            f"feature {spec.name!r}: unknown sites {sorted(bad)} (sites: {', '.join(SITES)})")
    FEATURES[spec.name] = spec
    return spec


def parse_layers(spec, num_layers, flag="--layers"):
    """``"all"``, ``"none"``/``""``, or 1-based indices and ranges (``"1,2"``, ``"1-2"``,
    ``"[1-4]"``; a hydra config's int or list: :func:`~fairseq_sum_plugins.flags.layers_flag`) ->
    sorted set of 0-based layer indices."""
    spec = (layers_flag(spec, flag) or "none").strip().strip("[]").strip().lower()
    if spec == "all":
        return set(range(num_layers))
    if spec in ("none", "", "-"):
        return set()
    layers, bad = set(), set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            lo, hi = (int(x) for x in part.split("-", 1)) if "-" in part else (int(part),) * 2
        except ValueError:
            raise ValueError(
                f"{flag} {spec!r}: expected 'all', 'none' or 1-based layers like '1,2' or '1-4'"
            ) from None
        if lo > hi:  # was: no layer, silently
            raise ValueError(f"{flag} {spec!r}: the range {part!r} runs backwards")
        bad.update(i for i in (lo, hi) if not 1 <= i <= num_layers)  # ends only: '1-10**9'
        layers.update(range(max(lo, 1), min(hi, num_layers) + 1))
    if bad:
        raise ValueError(f"{flag} {spec!r}: layers {sorted(bad)} are outside 1..{num_layers}")
    return {i - 1 for i in layers}


def layers_feature(name, flag, site, attr, module, help, inspect=None):
    """Registers the feature ``"NAME (FLAG)"``: ``module(attn_dim, heads)`` as ``attr`` at ``site``
    of the layers that ``FLAG`` lists (:func:`parse_layers`; default ``none``), with what it shows
    of a document (``inspect``, :class:`Inspection`)."""
    dest = flag[2:].replace("-", "_")

    def build(args, site_, dims):
        on = dims.layer in parse_layers(getattr(args, dest), dims.num_layers, flag)
        return module(dims.attn_dim, dims.heads) if on else None

    def add_args(parser):
        parser.add_argument(flag, type=str, metavar="LAYERS",
                            help=f"{help}: 'all', 'none', or 1-based layers like '1,2' / '1-2'")

    def defaults(args):  # a hydra config's int or list in the flag's string form
        setattr(args, dest, layers_flag(getattr(args, dest, "none"), flag))

    def on(args):
        depth = args.encoder_layers if site.startswith("encoder") else args.decoder_layers
        value = getattr(args, dest)
        return (f"{flag} {value}",) if parse_layers(value, depth, flag) else ()

    return register_feature(FeatureSpec(f"{name} ({flag})", {site: attr}, build, add_args=add_args,
                                        defaults=defaults, on=on, inspect=inspect))


def flags_set(args, *dests):
    """``("--flag value", ...)`` of the ``dests`` that ``args`` sets to something other than off
    (None, False, 0, ``""``, ``"none"``): a spec's ``on`` (:class:`FeatureSpec`)."""
    return tuple(f"--{d.replace('_', '-')} {getattr(args, d)}" for d in dests
                 if getattr(args, d, None) not in (None, False, 0, "", "none"))


def add_feature_args(parser):
    for spec in FEATURES.values():
        if spec.add_args is not None:
            spec.add_args(parser)


def _defaults(args):
    for spec in FEATURES.values():
        if spec.defaults is not None:
            spec.defaults(args)
    # after the defaults: an earlier name (info_gate) too
    parse_bool_options(args, add_feature_args)


def feature_defaults(args, backbone):
    """Every feature's defaults, its boolean options read as booleans
    (``--model-overrides "{'gate': 'no'}"`` is False), then the refusal of a feature that means
    nothing on ``backbone``."""
    _defaults(args)
    for spec in FEATURES.values():
        message = spec.refuse(args, backbone) if spec.refuse is not None else None
        if message:
            raise ValueError(message)


def features_on(args):
    """``[(spec, settings)]`` of the registered features switched on in ``args`` (a model's args,
    e.g. a checkpoint's; read on a copy with every feature's defaults and earlier flag names
    applied), in registration order: ``settings`` from ``spec.on``, or for a spec without one the
    flags its ``add_args`` declares that are set (:func:`flags_set`)."""
    items = args.items() if hasattr(args, "items") else vars(args).items()  # DictConfig, Namespace
    args = Namespace(**dict(items))
    _defaults(args)
    found = []
    for spec in FEATURES.values():
        if spec.on is not None:
            settings = tuple(spec.on(args))
        else:
            parser = ArgumentParser(add_help=False)
            if spec.add_args is not None:
                spec.add_args(parser)
            settings = flags_set(args, *dict.fromkeys(a.dest for a in parser._actions))
        if settings:
            found.append((spec, settings))
    return found


def attach(layer, args, site, stage, dims):
    """Builds the ``stage`` modules of ``site`` and sets them on ``layer`` under their attribute
    names (None where a feature is off); returns the modules built."""
    built = []
    for spec in FEATURES.values():
        attr = spec.attrs.get(site)
        if attr is None or spec.stage != stage or spec.build is None:
            continue
        module = spec.build(args, site, dims)
        setattr(layer, attr, module)
        if module is not None:
            built.append(module)
    return built


def site_modules(layer, site):
    """The feature modules of ``site`` on ``layer``, in registration order."""
    found = (getattr(layer, spec.attrs[site], None) for spec in FEATURES.values()
             if site in spec.attrs)
    return [m for m in found if m is not None]


def fresh_names():
    """Parameter-name fragments of every feature's modules (``.attr.``): what a plain BART
    checkpoint lacks."""
    return sorted({f".{a}." for spec in FEATURES.values() for a in spec.attrs.values()})


def site_input_names(site):
    """The per-forward input names of ``site``: :data:`SITE_INPUTS` and the features' declared
    ones."""
    declared = [n for spec in FEATURES.values() for n in spec.inputs.get(site, ())]
    return tuple(SITE_INPUTS) + tuple(dict.fromkeys(n for n in declared if n not in SITE_INPUTS))


def add_heads(modules, out, query, kv, inputs):
    """``out`` ``(B, T, C)`` plus every module's ``head`` contribution, in registration order."""
    for m in modules:
        if hasattr(m, "head"):
            out = out + m.head(query, kv, inputs).type_as(out)
    return out


def build_model_features(args, task, src_dict, tgt_dict):
    """``{attr: module}`` of the model-level features switched on (at most one)."""
    built = {}
    for spec in FEATURES.values():
        module = (spec.build_model_feature(args, task, src_dict, tgt_dict)
                  if spec.build_model_feature else None)
        if module is not None:
            built[spec.attrs[MODEL]] = module
    if len(built) > 1:
        raise ValueError(f"model-level features {sorted(built)} together: one per model")
    return built


def set_model_features(host, built):
    """Sets the model-level feature modules on the encoder or decoder ``host`` (under their
    attributes)."""
    for attr, module in built.items():
        setattr(host, attr, module)
    host.model_features = list(built.values())


def encoder_inputs(modules, src_tokens, padding_mask):
    values = {}
    for m in modules:
        values.update(m.encoder_inputs(src_tokens, padding_mask))
    return values


class NoCall:
    """A decoder call without a model-level feature: no prefix, the causal mask, no inputs."""

    n_prefix = 0
    self_mask = None

    def site_inputs(self, site):
        return {}


def decoder_call(modules, prev_tokens, new_len, view, incremental):
    """The model-level feature's inputs of this decoder call (:class:`NoCall` without one)."""
    for m in modules:
        return m.decoder_call(prev_tokens, new_len, view, incremental)
    return NoCall()


def prefix_length(modules):
    return sum(m.prefix_length() for m in modules)


def transform_encoder_output(modules, view):
    """Every ``encoder_out`` module's ``encoder_output(view)``, in registration order."""
    for m in modules:
        m.encoder_output(view)
    return view


def cross_attention_values(view):
    """The features' per-forward values of the decoder cross-attention
    (``FeatureSpec.cross_inputs``)."""
    values = {}
    for spec in FEATURES.values():
        for name, value in (spec.cross_inputs(view, dict(values))
                            if spec.cross_inputs is not None else {}).items():
            if value is None:
                continue
            if name in values and name not in ("kv_scale", "score_bias"):
                raise ValueError(f"two features give the cross-attention input {name!r}")
            old = values.get(name)
            values[name] = (value if old is None
                            else old * value if name == "kv_scale"
                            else old + value)
    return values


def score_bias_fn(modules, inputs):
    """``f(q, k)``: the sum of the modules' score biases, or None when none contributes one."""
    biased = [m for m in modules if hasattr(m, "score_bias")]
    if not biased:
        return None

    def f(q, k):
        if len(biased) == 1:  # as it comes: a tensor or a FactoredBias (modules/attention.py)
            return biased[0].score_bias(q, k, inputs)
        total = None
        for m in biased:
            b = materialised(m.score_bias(q, k, inputs))
            total = b if total is None else total + b
        return total

    return f


def prob_gate_fn(modules, inputs):
    """``g(q, k)``: the modules' probability gate (their product when several), or None."""
    gated = [m for m in modules if hasattr(m, "prob_gate")]
    if not gated:
        return None
    if len(gated) == 1:
        def one(q, k):
            return gated[0].prob_gate(q, k, inputs)

        # keys shared by a source's beams (modules/attention.py) where the gate applies to them
        one.per_source = getattr(gated[0], "per_source", False)
        return one

    def g(q, k):
        total = None
        for m in gated:
            gate = m.prob_gate(q, k, inputs)
            gate = gate.gate() if hasattr(gate, "gate") else gate
            total = gate if total is None else total * gate
        return total

    return g


def bind(modules, x):
    for m in modules:
        if hasattr(m, "bind"):
            x = m.bind(x)
    return x


def layer_inputs(site, padding_mask=None, incremental_state=None, **values):
    """The per-forward inputs of ``site`` (:func:`site_input_names`; None for those not given)."""
    names = site_input_names(site)
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise KeyError(
            f"unknown inputs {unknown} of site {site}: its inputs are {', '.join(names)}")
    inputs = dict.fromkeys(names)
    inputs.update(values, padding_mask=padding_mask, incremental_state=incremental_state)
    return inputs


@contextlib.contextmanager
def stack_context(stack):
    """Every feature's ``stack_context(stack)``, entered in registration order around a stack's
    layers."""
    with contextlib.ExitStack() as entered:
        for spec in FEATURES.values():
            if spec.stack_context is not None:
                entered.enter_context(spec.stack_context(stack))
        yield


def recompute_context(layer):
    """For activation checkpointing (:mod:`.checkpointing`): what :func:`stack_context` has set on
    ``layer``, captured now, as a factory of context managers that sets it again when the layer is
    recomputed in backward (after the stack's context has closed)."""
    factories = [
        spec.recompute_context(layer) for spec in FEATURES.values()
        if spec.recompute_context is not None
    ]

    @contextlib.contextmanager
    def restore():
        with contextlib.ExitStack() as entered:
            for factory in factories:
                entered.enter_context(factory())
            yield

    return restore


def decoder_outputs(view):
    """``{name: value}`` the features add to the decoder's ``net_output[1]`` (None values left
    out)."""
    out = {}
    for spec in FEATURES.values():
        if spec.decoder_outputs is not None:
            out.update((k, v) for k, v in spec.decoder_outputs(view).items() if v is not None)
    return out


def needs_attention(modules):
    """Whether an output module reads the last layer's cross-attention (``needs_attention``)."""
    return any(getattr(m, "needs_attention", False) for m in modules)


def transform_output(modules, logits, features, embedded, attn, src_tokens):
    """The decoder's output through every ``decoder_out`` module (the logits when there is none)."""
    for m in modules:
        logits = m(logits, features, embedded, attn, src_tokens)
    return logits


def switch_on(args, name):
    """A preset's switch: the feature called ``name`` (its spec's name before `` (--``) gets its
    defaults with ``on=True``, so it is on unless ``args`` (a command line, a checkpoint's args,
    or one under an earlier flag name) say otherwise."""
    for spec in FEATURES.values():
        if spec.name.split(" (--")[0] == name:
            spec.defaults(args, on=True)
            return args
    raise KeyError(f"no feature {name!r}: {', '.join(s.name for s in FEATURES.values())}")
