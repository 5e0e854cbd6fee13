"""Typed values of the plugin's boolean model flags (``--pointer-generator``, ``--gate``,
``--ta-*``, Mem2Mem's switches, ...), and the attributes of renamed flags in saved args.

fairseq's ``utils.eval_bool`` runs its argument through ``eval``: ``--pointer-generator maybe`` ends
in a ``NameError`` traceback and any expression given as the value is executed. :func:`bool_flag`
reads a value as data only: ``True/False``, ``true/false``, ``1/0``, ``yes/no``; anything else is an
argparse error naming the flag and the value.

The layer-list flags (``--focus-layers``, ``--saliency-layers``) take a string on the command line;
a hydra config's YAML gives ``focus_layers: 1`` as an int and ``[1, 2]`` as a list:
:func:`layers_flag` turns both into the flag's string form.
"""
from collections.abc import Mapping, Sequence

import argparse
import logging

logger = logging.getLogger(__name__)
_UNSET = object()
TRUE = ("true", "1", "yes")
FALSE = ("false", "0", "no")


def bool_flag(text):
    """``text`` (a command-line value, or a bool already parsed) as a bool."""
    if isinstance(text, bool):
        return text
    key = str(text).strip().lower()
    if key in TRUE:
        return True
    if key in FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {text!r}")


def layers_flag(value, flag="--layers"):
    """A layer-list flag's value in the string form the flag takes: a string or None as given; an
    int as its digits (``1`` -> ``"1"``); a list or tuple (an omegaconf ListConfig too) of ints and
    strings joined by commas (``[1, 2]`` -> ``"1,2"``; empty: ``"none"``). Anything else (a bool, a
    float, a mapping, a nested list) is a ValueError naming the flag and the value."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, Sequence) and not isinstance(value, Mapping):
        items = list(value)
        if all(isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))
               for v in items):
            return ",".join(str(v) for v in items) or "none"
    raise ValueError(f"{flag}: expected 'all', 'none', 1-based layers like '1,2' or '1-4', an int "
                     f"or a list of them, got {value!r}")


def renamed_flag(args, name, old, default=_UNSET):
    """The one reading of a renamed flag's attribute: ``args.<name>`` (named as the flag) keeps its
    value, else takes the value that args saved before the rename (a checkpoint's, or
    ``--model-overrides``) hold under the ``old`` attribute, else ``default`` (when given and
    ``name`` is absent); ``old`` is then dropped, so the args keep one name. Both given and
    different: the new name wins, with a warning naming both; a new name holding None (argparse's
    value of a flag not given) is not given. The old command-line spelling is an alias of the new
    one (same ``dest``), so only saved args and overrides reach ``old``. Call it before any default
    of ``name`` is set (an arch preset's)."""
    given = getattr(args, name, None) is not None
    if hasattr(args, old):
        value = getattr(args, old)
        delattr(args, old)
        if not given:
            setattr(args, name, value)
        elif getattr(args, name) != value:
            logger.warning(f"{name} = {getattr(args, name)!r} and its earlier name {old} = "
                           f"{value!r} are both given: {name} is taken")
    if not hasattr(args, name) and default is not _UNSET:
        setattr(args, name, default)


def bool_options(add_args):
    """``{dest: flag}`` of the boolean options an ``add_args(parser)`` declares: ``type=bool_flag``
    and argparse's ``store_true`` / ``store_false`` switches (fairseq's own flags); the flag is the
    first long spelling (``--gate`` for ``--gate`` / ``--info-gate``)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_args(parser)
    found = {}
    for action in parser._actions:
        if action.dest in found or action.dest == argparse.SUPPRESS:
            continue
        switch = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
        if switch or getattr(action, "type", None) is bool_flag:
            longs = [s for s in action.option_strings if s.startswith("--")]
            found[action.dest] = (longs or action.option_strings)[0]
    return found


def parse_bool_options(args, add_args):
    """Reads every boolean option of ``add_args`` present in ``args`` (command line, a checkpoint's
    args with ``--model-overrides``, a hydra config) through :func:`bool_flag`: the string
    ``'False'`` is False, not truthy; a value that is not a boolean is an error naming the option.
    None (not given) is left for the defaults."""
    for dest, flag in bool_options(add_args).items():
        value = getattr(args, dest, None)
        if value is None or isinstance(value, bool):
            continue
        try:
            setattr(args, dest, bool_flag(value))
        except argparse.ArgumentTypeError:
            raise ValueError(
                f"model option {dest} ({flag}) {value!r}: expected True or False") from None
