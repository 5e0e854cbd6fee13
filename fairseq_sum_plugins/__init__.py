"""fairseq-sum-plugins: load with ``--user-dir fairseq_sum_plugins`` (or ``import
fairseq_sum_plugins``).

Registration makes known to fairseq the task ``summarization``, the criterion
``summarization_loss``, the transformer family (``tp_transformer_base`` & co.), the ``sum_moses``
tokenizer and the ``--scoring rouge`` scorer of ``fairseq-generate``, makes fairseq checkpoints
loadable under torch >= 2.6 (see :mod:`fairseq_sum_plugins.compat`) and quietens fairseq's start-up
banner (:mod:`fairseq_sum_plugins.quiet`). It happens whenever fairseq is used, never before, so
that the fairseq-free modules (the scorer :mod:`~fairseq_sum_plugins.scoring.rouge`,
:mod:`~fairseq_sum_plugins.text`, ...) and commands (``fairseq-sum-score``, ``-compare``,
``-baselines``) start without importing torch or fairseq.

Registration (:func:`register`, once per process) runs, in this order: the quiet step
(:mod:`.quiet`), ``import fairseq``, :mod:`.compat`, the papers' features
(:func:`.modules.registry.load_features`), the model families, the criterion, the task, the
``sum_moses`` tokenizer (:mod:`.tasks.sum_moses`) and the ``--scoring rouge`` scorer
(:mod:`.scoring.fairseq_scoring`). ``import fairseq_sum_plugins`` calls :func:`arrange`, which
registers

* at once when fairseq is already imported: ``--user-dir`` (fairseq-train, -generate, ...),
  fairseq-hydra-train's ``common.user_dir``, ``import fairseq`` before the plugin;
* else, where fairseq is installed, through a finder on ``sys.meta_path`` (:class:`Hook`, removed
  once registration ran): the quiet step runs before fairseq's package executes and the
  registration right after it (``import fairseq`` after the plugin, in any module); and a plugin
  module that needs fairseq (everything outside :data:`LIGHT`: a model, the criterion, the task,
  the features, a converter; the hub's ``from fairseq_sum_plugins.models.sum_transformer import
  SumTransformerModel``) registers before it executes, so that the module is the one registration
  imports, in the order above, never a half-executed copy (fairseq imported from inside it would
  otherwise register while it is half done);
* never when fairseq is not installed or is blocked (``sys.modules["fairseq"] = None``).

The modules of :data:`LIGHT` are not intercepted: the scorer, the text utilities and the flags
import nothing of fairseq at module level (tests/test_lazy_registration.py imports each alone),
and the inspection tools, which do import fairseq, are imported by no registered module, so
fairseq's import registers while they are half done without harm.
"""
import importlib.util
import sys

__version__ = "0.1.0"  # the package's one version: pyproject.toml reads it from here

PACKAGE = __name__  # fairseq_sum_plugins
# the package's parts (first name under it) that need no registration before they execute
LIGHT = ("quiet", "flags", "text", "data_folder", "side_data", "aux_losses", "scoring", "cli",
         "evaluation", "inspection", "analysis")
# ... except these modules inside them
NEEDS_FAIRSEQ = ("scoring.fairseq_scoring",)

_state = {"done": False, "running": False}


def needs_registration(name):
    """Whether the plugin module ``name`` (a dotted name under the package) needs registration
    before it executes."""
    part = name[len(PACKAGE) + 1:]
    if any(part == m or part.startswith(m + ".") for m in NEEDS_FAIRSEQ):
        return True
    return part.split(".")[0] not in LIGHT


def registered():
    """Whether registration has run in this process."""
    return _state["done"]


def register():
    """Registers the plugin with fairseq (see the module docstring); a no-op once done or while
    running. Returns whether it ran."""
    if _state["done"] or _state["running"]:
        return False
    _state["running"] = True
    try:
        from . import quiet

        quiet.install()  # before fairseq's import logs (hydra warnings, configuration dumps)
        import fairseq  # noqa: F401
        from . import compat  # noqa: F401  (checkpoint loading under torch >= 2.6)
        from .modules.registry import load_features

        load_features()  # every paper's feature, in one fixed order, before the models
        from . import models, criterions, tasks  # noqa: F401
        from .tasks import sum_moses  # noqa: F401
        from .scoring import fairseq_scoring  # noqa: F401
        _state["done"] = True
    finally:
        _state["running"] = False
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, Hook)]
    return True


def fairseq_status():
    """``"imported"``, ``"blocked"`` (None in ``sys.modules``), ``"installed"`` or ``"absent"``."""
    if "fairseq" in sys.modules:
        return "blocked" if sys.modules["fairseq"] is None else "imported"
    return "installed" if importlib.util.find_spec("fairseq") is not None else "absent"


def arrange():
    """Registers now, or when fairseq is first used, or never (see the module docstring)."""
    status = fairseq_status()
    if status == "imported":
        register()
    elif status == "installed" and not any(isinstance(f, Hook) for f in sys.meta_path):
        sys.meta_path.insert(0, Hook())


class Hook:
    """A ``sys.meta_path`` finder: it wraps the loader of ``fairseq`` (:class:`FairseqLoader`) and
    of the plugin modules that need registration (:class:`PluginLoader`); it finds nothing
    itself."""

    def find_spec(self, name, path, target=None):
        if _state["done"]:
            return None
        if name == "fairseq":
            wrapper = FairseqLoader
        elif (name.startswith(PACKAGE + ".") and not _state["running"]
              and needs_registration(name)):
            wrapper = PluginLoader
        else:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = wrapper(spec.loader)
                return spec
        return None

    def invalidate_caches(self):
        pass


class _Wrapped:
    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, attr):  # get_source, is_package, get_resource_reader, ...
        return getattr(self.loader, attr)

    def create_module(self, spec):
        return self.loader.create_module(spec)


class FairseqLoader(_Wrapped):
    """fairseq's loader: the quiet step before fairseq's package executes, registration after."""

    def exec_module(self, module):
        from . import quiet

        quiet.install()
        self.loader.exec_module(module)
        register()


class PluginLoader(_Wrapped):
    """The loader of a plugin module that needs registration: registration runs first and imports
    the module itself (in its order), which then replaces the empty module the import system made;
    a module registration does not import (a converter) executes as usual after it."""

    def exec_module(self, module):
        name = module.__name__
        if not _state["done"] and not _state["running"]:
            del sys.modules[name]
            try:
                register()
            finally:
                if name not in sys.modules:
                    sys.modules[name] = module
            if sys.modules[name] is not module:
                return  # the import system returns sys.modules[name], registration's module
        self.loader.exec_module(module)


arrange()
