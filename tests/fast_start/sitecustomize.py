"""The suite's processes start without importing scikit-learn and ``scipy.stats`` (tests only).

``import fairseq`` imports every task and criterion it ships, and two of them import scikit-learn
and ``scipy.stats`` at their top for metrics this project never computes
(``fairseq/criterions/sentence_prediction.py``: F1, Matthews' correlation, Pearson's and
Spearman's; ``fairseq/tasks/audio_classification.py``: ``sklearn.metrics``). Those imports are
about 2.2 of the 5.8 seconds a ``fairseq-train`` takes to start on a 2-core machine, and the suite
starts about 280 fairseq processes (its recipes and command-line round trips): about a fifth of
its time on 2 workers.

``tests/conftest.py`` puts this folder on ``PYTHONPATH`` for the processes the suite starts (where
no other ``sitecustomize`` is on the path), so Python runs this file at their start. It defers
those two modules' imports of scikit-learn and ``scipy.stats``, nothing else: each module is
loaded by its own loader from its own file, and while it runs, ``sys.modules`` holds stand-ins for
the three modules that were not imported yet; every name it takes from them is a
:class:`Deferred` that imports the real module when first called or read. The stand-ins leave
``sys.modules`` when the module has run, so any other import of scikit-learn or SciPy gets the real
package, as does a deferred name when used (tests/test_fast_start.py checks both). A user's
``fairseq-train`` is not touched: nothing here is installed.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys
import types

DEFERRING = ("fairseq.criterions.sentence_prediction", "fairseq.tasks.audio_classification")
STAND_INS = ("sklearn", "sklearn.metrics", "scipy.stats")


class Deferred:
    """``module.name`` (or ``module`` itself) imported at its first call or attribute read."""

    def __init__(self, module, name=None):
        self._module, self._name = module, name

    def _target(self):
        found = importlib.import_module(self._module)
        return found if self._name is None else getattr(found, self._name)

    def __call__(self, *args, **kwargs):
        return self._target()(*args, **kwargs)

    def __getattr__(self, attr):
        return getattr(self._target(), attr)

    def __repr__(self):
        return f"<deferred {self._module}{'.' + self._name if self._name else ''}>"


class StandIn(types.ModuleType):
    """A module not imported yet: each name taken from it is :class:`Deferred` (a submodule of
    :data:`STAND_INS` is deferred as a module)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        sub = f"{self.__name__}.{name}"
        return Deferred(sub) if sub in STAND_INS else Deferred(self.__name__, name)


class _WithStandIns(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        added = [name for name in STAND_INS if name not in sys.modules]
        for name in added:
            sys.modules[name] = StandIn(name)
        try:
            self.loader.exec_module(module)
        finally:
            for name in added:
                if isinstance(sys.modules.get(name), StandIn):
                    del sys.modules[name]


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in DEFERRING:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _WithStandIns(spec.loader)
        return spec


sys.meta_path.insert(0, _Finder())
