"""The one checkpoint loader of the inspection tools.

Every tool that reads a mechanism (``fairseq-sum-inspect``, ``-roles``, ``-probe``, focus_plot,
topics, implicit_extraction, gate_sweep, source_use, source_curve) loads its checkpoint here, as
fairseq-generate does (``DATA --path CKPT``: fairseq's ``load_model_ensemble_and_task`` with the
data folder as an override), so that a checkpoint loads the same way everywhere and a file that is
not one of this plugin's checkpoints gets one error naming it, in one line (:func:`load_for`:
through the tool's ``parser.error``); so does fairseq's colon-separated ensemble, which no tool
averages.
"""
import os
import re


class CheckpointError(ValueError):
    """A checkpoint that does not exist or does not load for the data folder; the message names
    the file."""


def load_checkpoint(path, data, *, overrides=None, cuda=False, eval_mode=True, fp32=False):
    """``(model, task)`` of the checkpoint ``path`` for the binarized folder ``data``.

    ``overrides``: more of the checkpoint's arguments to replace (e.g. ``{"side_data": ...}``);
    ``cuda``: move the model to the GPU; ``fp32``: as float32 on the CPU (the page's values).
    Raises :class:`CheckpointError` naming ``path`` for a missing file or one that does not load
    (fairseq's own errors name neither the file nor what it expected)."""
    import fairseq_sum_plugins  # noqa: F401  (registers the task and the models)
    from fairseq import checkpoint_utils

    if not os.path.isfile(path):
        if ":" in path and all(os.path.isfile(p) for p in path.split(":")):
            raise CheckpointError(f"--path {path}: fairseq's colon-separated ensemble; these tools "
                                  "read each checkpoint on its own (one --path each)")
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [path], arg_overrides={"data": data, **(overrides or {})})
    except Exception as e:  # noqa: BLE001 (reported with the file it came from)
        why = re.sub(r"\x1b\[[0-9;]*m", "", (str(e).strip().splitlines() or [""])[0]).strip()
        raise CheckpointError(f"{path}: not a checkpoint of this plugin for {data} "
                              f"({type(e).__name__}: {why})") from e
    model = models[0]
    if fp32:
        model = model.cpu().float()
    elif cuda:
        model = model.cuda()
    return (model.eval() if eval_mode else model), task


def load_for(parser, path, data, **kwargs):
    """:func:`load_checkpoint` for a command line: a :class:`CheckpointError` ends it through
    ``parser.error`` (exit 2, one line naming the file)."""
    try:
        return load_checkpoint(path, data, **kwargs)
    except CheckpointError as e:
        parser.error(str(e))
