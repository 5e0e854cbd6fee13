"""A neutral registry between the ``summarization`` task and the features that need something from
it.

The task knows no paper: a feature registers here what it needs, at import time, and the task asks
the registry (``fairseq_sum_plugins/tasks/summarization.py``); the feature modules import this
module, never the task.

Side data (``--side-data NAME``: arrays ``DATA/{split}.NAME.npy`` aligned with a split) may register

* ``provider(task, src_tokens) -> np.ndarray``: the rows for raw-text sources (1-D token tensors),
  for ``fairseq-interactive`` and the hub, which have no binarized split;
* ``hint``: the command that writes ``DATA/{split}.NAME.npy`` (named when the file is missing);
* ``used_by(model) -> bool``: whether a built model reads it (asking for side data that the model
  does not read is an error naming the feature that does, ``feature``);
* ``check(task, split, path)``: validates a loaded file against the models built on the task
  (called when a split is loaded after the models are built, and for splits already loaded when a
  model is built).

Generator hooks ``fn(models)`` run whenever the task builds a sequence generator (e.g. a feature
logging a statistic of the decoding at the end).
"""
from typing import Callable, Dict, List

# name -> fn(task, list of 1-D source token tensors) -> np.ndarray aligned with them
SIDE_DATA_PROVIDERS: Dict[str, Callable] = {}
SIDE_DATA_HINTS: Dict[str, str] = {}
SIDE_DATA_USERS: Dict[str, tuple] = {}  # name -> (used_by(model) -> bool, feature description)
SIDE_DATA_CHECKS: Dict[str, Callable] = {}
GENERATOR_HOOKS: List[Callable] = []


def register_side_data(name, provider=None, hint=None, used_by=None, feature=None, check=None):
    """Register what the task needs to know about side data ``name`` (see the module docstring)."""
    if provider is not None:
        SIDE_DATA_PROVIDERS[name] = provider
    if hint is not None:
        SIDE_DATA_HINTS[name] = hint
    if used_by is not None:
        SIDE_DATA_USERS[name] = (used_by, feature or name)
    if check is not None:
        SIDE_DATA_CHECKS[name] = check


def register_side_data_provider(name):
    """Decorator registering ``fn(task, src_tokens_list) -> np.ndarray`` computing side data for raw
    text."""

    def wrapper(fn):
        SIDE_DATA_PROVIDERS[name] = fn
        return fn

    return wrapper


def register_generator_hook(fn):
    """Run ``fn(models)`` whenever the task builds a sequence generator."""
    if fn not in GENERATOR_HOOKS:
        GENERATOR_HOOKS.append(fn)
    return fn
