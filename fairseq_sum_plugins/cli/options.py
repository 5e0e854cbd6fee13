"""The option shapes that the tools reading a checkpoint share, as fairseq-generate's.

``DATA --path CKPT``: the binarized data folder first, the checkpoint after ``--path``
(:func:`add_data_and_path`; a tool that reads one checkpoint refuses a second ``--path`` and,
through its loader, fairseq's colon-separated ensemble). One name per meaning: ``--split``,
``--documents 0,3,7`` (chosen documents), ``--document N`` (the one document a figure shows),
``--max-documents N`` (the first N documents of the split), ``--beam``, ``--lenpen``,
``--max-len-b``, ``--cpu``. ``tests/test_cli_shape.py`` holds every such tool to them.

A renamed option keeps its old spelling for one release (:func:`old_spelling`): hidden from
``--help``, it sets the same value and prints a one-line notice naming the new one.
"""
import argparse
import sys


class _OnePath(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} given twice: this tool reads one checkpoint "
                         "(fairseq-sum-inspect shows several side by side)")
        setattr(namespace, self.dest, values)


def add_data_and_path(parser, path_help="checkpoint (fairseq-generate's --path)"):
    """The positional ``DATA`` and ``--path CKPT`` (one, required) of ``parser``."""
    parser.add_argument("data", metavar="DATA", help="binarized data folder "
                        "(fairseq-sum-prepare's OUT/bin), as fairseq-generate's")
    parser.add_argument("--path", required=True, metavar="CKPT", action=_OnePath, help=path_help)


class _OldSpelling(argparse.Action):
    def __init__(self, option_strings, dest, new=None, note=None, **kwargs):
        self.new, self.note = new, note
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: note: {option_string} is now {self.new}{self.note or ''} (the old "
              "name goes in the next release)", file=sys.stderr)
        setattr(namespace, self.dest, values)


def old_spelling(parser, old, new, note=None, dest=None):
    """Accepts ``old`` as the earlier name of ``parser``'s option ``new`` (same type and
    destination, or ``dest`` when the old one counts in other units: ``note`` says how), hidden
    from the help; a one-line notice on stderr when it is used."""
    action = next(a for a in parser._actions if new in a.option_strings)
    parser.add_argument(old, action=_OldSpelling, new=new, note=note, dest=dest or action.dest,
                        type=action.type, nargs=action.nargs, choices=action.choices,
                        metavar=action.metavar, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
