"""The old home of the tools, kept for one release: ``python -m fairseq_sum_plugins.analysis.X``
and ``from fairseq_sum_plugins.analysis import X`` still work, with a one-line notice naming the
new module. The tools now live by what they read: ``inspection/`` (a checkpoint), ``evaluation/``
(decodings as text) and, outside the installed package, the repository's ``ledger/`` (results/).
"""
import importlib
import runpy
import sys
import warnings

E, I = "fairseq_sum_plugins.evaluation", "fairseq_sum_plugins.inspection"
MOVED = {
    **{m: f"{E}.{m}" for m in ("compare", "compare_report", "decodings", "lead3_statement",
                               "plotting", "page")},
    "baselines": f"{E}.baselines.systems", "baseline_extracts": f"{E}.baselines.extracts",
    "baseline_table": f"{E}.baselines.table", "lexrank": f"{E}.baselines.lexrank",
    **{m: f"{I}.{m}" for m in ("roles", "focus_plot", "topics", "implicit_extraction", "probe",
                               "gate_sweep", "source_use", "source_curve")},
    "inspect": f"{I}.page.cli",
    **{m: f"ledger.{m}" for m in ("results_index", "results_paths", "results_prose",
                                  "fingerprint", "paper_evidence", "paper_tables")},
}


def forward(old, as_main):
    """Runs (``python -m``) or imports the module that ``old`` became, after a one-line notice."""
    name = old.rsplit(".", 1)[1]
    new = MOVED[name]
    notice = (f"{old} has moved to {new}: run python -m {new} (the old path goes in the next "
              "release)")
    if new.startswith("ledger."):
        notice += "; it is a tool of the repository's checkout, not of the installed package"
    if as_main:
        print(notice, file=sys.stderr)
        try:
            runpy.run_module(new, run_name="__main__", alter_sys=True)
        except ImportError as e:
            if not new.startswith("ledger."):
                raise
            sys.exit(f"{old}: {e} (run it from the repository root: python -m {new})")
        return
    warnings.warn(notice, DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
