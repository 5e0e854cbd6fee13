"""The one checkpoint loader of the inspection tools.

Every tool that reads a mechanism (``fairseq-sum-inspect``, ``-roles``, ``-probe``, focus_plot,
topics, implicit_extraction, gate_sweep, source_use, source_curve) loads its checkpoint here, as
fairseq-generate does (``DATA --path CKPT``: fairseq's ``load_model_ensemble_and_task`` with the
data folder as an override), so that a checkpoint loads the same way everywhere and a file that is
not one of this plugin's checkpoints gets one error naming it.
"""
import os


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
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [path], arg_overrides={"data": data, **(overrides or {})})
    except Exception as e:  # noqa: BLE001 (reported with the file it came from)
        raise CheckpointError(f"{path}: not a checkpoint of this plugin for {data} "
                              f"({type(e).__name__}: {e})") from e
    model = models[0]
    if fp32:
        model = model.cpu().float()
    elif cuda:
        model = model.cuda()
    return (model.eval() if eval_mode else model), task
