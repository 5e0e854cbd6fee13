"""Where a step's time goes: a profile's ATen ops grouped into kinds of work, ms per step.

``bench_train.py --profile`` and ``bench_mem2mem.py --profile`` use it to say what a gap between two
models is made of. Each ATen op of a profile is charged its self time (its own time, without the
ops it calls), under the first kind of work that claims it:

* **optimizer**: any op run inside ``Optimizer.step`` / ``Optimizer.zero_grad`` (torch's optimizers
  record those ranges; fairseq's Adam is one);
* **GEMM**: matrix products (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``addmv``, ``mv``, ``dot``);
* **attention kernel**: SDPA's fused kernels, forward and backward;
* **softmax**: ``_softmax`` / ``_safe_softmax`` and its backward (attention probabilities outside the
  fused kernel: SDPA's math path, the explicit paths);
* **log-softmax + loss**: the output distribution and the criterion (``_log_softmax`` and its
  backward, ``nll_loss``, ``gather``, ``scatter``);
* **dropout masks**: drawing random numbers (``bernoulli_``, ``native_dropout``, ``random_``,
  ``uniform_``, ``normal_``);
* **normalisation**: layer norm and RMS norm kernels and vector norms (the gradient-norm clip's
  included);
* **memory**: copies, fills, concatenation, indexing, embedding lookups (and the self time of
  views and of composite ops such as ``linear``, whose work is in the ops they call);
* **elementwise + reductions**: everything else (additions, products, activations, sums, ...).

Times are self CPU time (on CUDA: the ops' kernels' device time), per step. What the ATen ops do
not cover of the profiled pass's wall time per step is reported as **other (outside ATen ops)**:
the interpreter, module calls, the autograd engine's and the profiler's own bookkeeping and, on a
loaded machine, time the process waited (on CUDA: the time the GPU ran no kernel of these ops). The wall time of the benchmark's timed (unprofiled)
rounds is shown beside it: interleaving models in rounds costs each some cache warm-up, so it can
exceed the profiled pass's.

**The profiler can slow ops down.** Under ``torch.profiler`` an op over a large tensor can take
several times its unprofiled time, in some steps and not others: the label-smoothed loss's
``_log_softmax`` on ``(8, 64, 32000)`` logits took 32-33 ms in each of 8 unprofiled training
steps, and 31-34 ms or 209-232 ms (its backward likewise) in profiled ones, for
t5_transformer_small and transformer_ta_small alike (2026-12-06, Intel Xeon, 1 thread). One such step moves a kind of
work by 200 ms and the profiled pass's wall time with it. Compare the **wall, timed rounds**
(unprofiled) before reading a kind's gap as the model's, and re-time a suspect op alone.

The **GEMM ceiling** of a model over a peer is ``peer wall / model GEMM time`` (both from the
profiled passes): the ratio the model would reach if everything but its matrix products took no
time at all. Below a target, no change short of fewer FLOPs or faster GEMMs reaches it.
"""
KINDS = ("optimizer", "GEMM", "attention kernel", "softmax", "log-softmax + loss", "dropout masks",
         "normalisation", "memory", "elementwise + reductions")
OTHER = "other (outside ATen ops)"

_NAMES = {
    "GEMM": "mm addmm bmm baddbmm addbmm addmv mv dot _addmm_activation",
    "softmax": "_softmax _safe_softmax _softmax_backward_data",
    "log-softmax + loss": """_log_softmax _log_softmax_backward_data nll_loss_forward nll_loss_backward
        nll_loss nll_loss_nd cross_entropy_loss gather scatter scatter_ scatter_add scatter_add_""",
    "dropout masks": """bernoulli_ bernoulli native_dropout native_dropout_backward _fused_dropout
        random_ uniform_ normal_""",
    "normalisation": """native_layer_norm native_layer_norm_backward _fused_rms_norm
        _fused_rms_norm_backward linalg_vector_norm norm _foreach_norm rsqrt""",
    "memory": """copy_ fill_ zero_ zeros zeros_like ones ones_like full full_like cat stack clone
        index index_select index_put_ _index_put_impl_ index_add_ index_copy_ embedding
        embedding_dense_backward embedding_backward masked_fill masked_fill_ masked_select repeat
        repeat_interleave where _unsafe_index arange triu tril new_zeros new_empty_strided""",
}
_KIND_OF = {f"aten::{n}": kind for kind, names in _NAMES.items() for n in names.split()}
_KIND_OF.update({f"aten::{n}": "memory" for n in """view view_as reshape _reshape_alias _unsafe_view
    as_strided t transpose permute expand expand_as unsqueeze squeeze flatten unflatten select slice
    narrow split chunk unbind alias detach detach_ lift_fresh empty empty_like empty_strided resize_
    resolve_conj resolve_neg numpy_T mT matrix_H contiguous size stride dim result_type is_nonzero
    to _to_copy linear matmul""".split()})
_ATTENTION_PREFIXES = ("aten::_scaled_dot_product", "aten::_flash_attention",
                       "aten::_efficient_attention", "aten::_cudnn_attention")


def kind_of(event):
    """The kind of work of one ATen op event (see the module docstring)."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith(("Optimizer.step#", "Optimizer.zero_grad#")):
            return "optimizer"
        parent = parent.cpu_parent
    if event.name.startswith(_ATTENTION_PREFIXES):
        return "attention kernel"
    return _KIND_OF.get(event.name, "elementwise + reductions")


def breakdown(events, steps, wall_ms=None, device=False):
    """``{kind: ms per step}`` over the ATen ops among ``events`` (a profile of ``steps`` steps),
    with ``OTHER`` = ``wall_ms`` (the profiled pass's, per step) minus the ops' sum when ``wall_ms``
    is given. ``device``: each op's kernels' device time (CUDA) instead of its self CPU time."""
    if steps < 1:
        raise ValueError(f"steps {steps}: at least 1")
    ms = dict.fromkeys(KINDS, 0.0)
    for e in (e for e in events if e.name.startswith("aten::")):
        us = e.self_device_time_total if device else e.self_cpu_time_total
        ms[kind_of(e)] += us / 1e3 / steps
    if wall_ms is not None:
        ms[OTHER] = max(0.0, wall_ms - sum(ms[k] for k in KINDS))
    return ms


def gemm_ceiling(model_ms, peer_wall_ms):
    """The ratio over a peer a model would reach if all but its GEMMs took no time:
    ``peer wall / model GEMM``; None without a GEMM time."""
    gemm = model_ms.get("GEMM") if model_ms else None
    return peer_wall_ms / gemm if gemm and peer_wall_ms else None


def table(columns, walls, title, unprofiled=None):
    """A Markdown table of ``{model: breakdown}``: ms per step and share of ``walls[model]`` (the
    profiled pass's wall time per step), with the unprofiled wall time (``unprofiled[model]``, the
    timed rounds) as a last row when given."""
    names = list(columns)
    lines = [f"{title}", "", "| kind of work | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    kinds = [k for k in KINDS + (OTHER,) if any(columns[n].get(k) for n in names)]
    for kind in kinds:
        cells = []
        for n in names:
            ms, wall = columns[n].get(kind, 0.0), walls.get(n)
            share = f" ({100 * ms / wall:.0f}%)" if wall else ""
            cells.append(f"{ms:,.1f}{share}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    for label, values in (("wall, profiled pass", walls), ("wall, timed rounds", unprofiled)):
        if values is not None:
            lines.append(f"| {label} | " + " | ".join(
                f"{values[n]:,.1f}" if values.get(n) else "-" for n in names) + " |")
    return "\n".join(lines)
