"""Typed values of the plugin's boolean model flags (``--pointer-generator``, ``--gate``, ``--ta-*``,
Mem2Mem's switches, ...), and the attributes of renamed flags in saved args.

fairseq's ``utils.eval_bool`` runs its argument through ``eval``: ``--pointer-generator maybe`` ends
in a ``NameError`` traceback and any expression given as the value is executed. :func:`bool_flag`
reads a value as data only: ``True/False``, ``true/false``, ``1/0``, ``yes/no``; anything else is an
argparse error naming the flag and the value.
"""
import argparse

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


def renamed_flag(args, name, old, default):
    """Sets ``args.<name>`` (a flag's attribute, named as the flag) to its value, else to the value that a
    checkpoint saved before the rename holds under the ``old`` attribute, else to ``default``. The old
    command-line spelling is an alias of the new one (same ``dest``), so only saved args need this."""
    setattr(args, name, getattr(args, name, getattr(args, old, default)))
