"""``--compile``: the transformer layers under ``torch.compile`` with dynamic sequence lengths.

Each encoder and decoder layer is compiled in place (``nn.Module.compile(dynamic=True)``): parameter
names do not change, so checkpoints load with or without the flag, and the same compiled layers
serve training, fairseq-generate's incremental decoding (the layer reads and writes its incremental
state as in eager mode; the state's reordering between steps stays eager) and the hub, which builds
the model from the checkpoint's args. The embedding, the stack-level features (information gate,
topic model, the T5 cell's position bias) and the output projection stay eager.

Sequence lengths are dynamic (one graph for every length >= 2: torch specialises lengths 0 and 1),
so a beam search compiles its first steps, then reuses them. Layers of one class share their code,
and dynamo keeps at most ``recompile_limit`` graphs per function (8 by default) before it runs the
function eagerly without an error: training, validation and the decoding steps of layers with and
without a feature (ETADS's saliency layers) need more, so compiling raises the limit to
:data:`RECOMPILE_LIMIT`. A layer carrying a feature in
:data:`EAGER_FEATURES` is left eager, with one logged line naming the feature; a layer whose
compilation fails at its first call (a dynamo or backend error) falls back to eager the same way,
the error named in the log, and the call is run again eagerly. A method that a class names in its
``untraced`` attribute (data-dependent Python values read from tensors) runs eagerly inside a
compiled layer (:func:`leave_untraced`). Compiled and eager layers compute the
same function up to the backend's floating-point reassociation (tests/test_model_contract.py runs
the contract compiled, within 1e-4).
"""
import logging

import torch

from .features import FEATURES

logger = logging.getLogger(__name__)

# graphs per function before dynamo silently runs it eagerly (its default, 8, was reached by one
# ETADS model: training, evaluation and incremental steps of layers with and without saliency)
RECOMPILE_LIMIT = 64

# feature (or layer wrapper) -> why its layers run eagerly
EAGER_FEATURES = {
    "checkpoint_activations": "activation checkpointing replaces the layer's forward",
}


def layer_features(layer):
    """Names of the features attached to ``layer`` (``modules/features.py``), plus its wrappers."""
    names = {name for name, spec in FEATURES.items()
             if any(getattr(layer, attr, None) is not None for attr in spec.attrs.values())}
    if hasattr(layer, "precheckpoint_forward"):
        names.add("checkpoint_activations")
    return sorted(names)


def _falls_back(layer, where):
    compiled = layer._compiled_call_impl

    def call(*args, **kwargs):
        try:
            return compiled(*args, **kwargs)
        except torch._dynamo.exc.TorchDynamoException as e:  # Unsupported, BackendCompilerFailed
            features = ", ".join(layer_features(layer)) or "no feature"
            first_line = str(e).splitlines()[0] if str(e) else ""
            logger.warning("--compile: %s runs eagerly (%s; %s: %s)", where, features,
                           type(e).__name__, first_line)
            layer._compiled_call_impl = None
            return layer._call_impl(*args, **kwargs)

    layer._compiled_call_impl = call


def raise_recompile_limit():
    """Dynamo's graphs per function (and in all) raised to at least :data:`RECOMPILE_LIMIT`, for
    every layer compiled in this process (the plugin's and, in benchmarks, its peers')."""
    config = torch._dynamo.config
    config.recompile_limit = max(config.recompile_limit, RECOMPILE_LIMIT)
    config.accumulated_recompile_limit = max(config.accumulated_recompile_limit,
                                             16 * RECOMPILE_LIMIT)


def leave_untraced(module):
    """The methods that a class in ``module`` names in its ``untraced`` attribute wrapped by
    ``torch.compiler.disable`` (dynamo runs them eagerly, a graph break), once per defining class.
    Done here, when layers are compiled, not by the decorator at the class: applying it imports
    ``torch._dynamo``, which took 1.3 s of every fairseq command's start with the plugin."""
    for cls in {type(m) for m in module.modules()}:
        for name in getattr(cls, "untraced", ()):
            owner = next(c for c in cls.__mro__ if name in c.__dict__)
            method = owner.__dict__[name]
            bound = isinstance(method, (staticmethod, classmethod))
            fn = method.__func__ if bound else method
            if getattr(fn, "_torchdynamo_disable", False):  # done before
                continue
            fn = torch.compiler.disable(fn)
            setattr(owner, name, type(method)(fn) if bound else fn)


def compile_layers(layers, where, backend="inductor"):
    """Compiles each layer of ``layers`` in place unless it carries an :data:`EAGER_FEATURES` entry;
    ``where`` names the stack in the log. Returns the indices of the compiled layers."""
    raise_recompile_limit()
    compiled = []
    for i, layer in enumerate(layers):
        eager = [f for f in layer_features(layer) if f in EAGER_FEATURES]
        if eager:
            logger.info("--compile: %s layer %d runs eagerly: %s", where, i,
                        "; ".join(f"{f} ({EAGER_FEATURES[f]})" for f in eager))
            continue
        leave_untraced(layer)
        layer.compile(dynamic=True, backend=backend)
        _falls_back(layer, f"{where} layer {i}")
        compiled.append(i)
    return compiled
