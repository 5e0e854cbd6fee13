"""Less banner noise on fairseq's command lines, applied when the plugin registers
(``--user-dir``), and before fairseq's package executes where the plugin is imported first
(:mod:`fairseq_sum_plugins`).

* Hydra's deprecation warnings, which fairseq 0.12 triggers on every start (``hydra.experimental``,
  ``version_base``, ``@package _group_``, schema matching, the ``strict`` flag), are ignored.
* The configuration dump that ``fairseq-train`` / ``-generate`` / ``-interactive`` / ``-validate``
  log at start (one line of several thousand characters) and ``fairseq-train``'s module tree are
  replaced by one short line; the model's name and parameter counts are still logged by fairseq.
* Importing fairseq leaves the root logger at DEBUG (``fairseq.tasks.text_to_speech`` calls
  ``logging.basicConfig(level=DEBUG)``), so that matplotlib, used by the plugin's figures, logs
  every font it considers (~150 lines per figure), and Hugging Face ``datasets``
  (``fairseq-sum-prepare --hf-dataset``) with ``fsspec`` and ``filelock`` log every file they open:
  their loggers are set to WARNING.
* The same module logs "Please install tensorboardX" at import (INFO), which a command line that
  imports the plugin and then fairseq would print first, into the reports it writes: that module's
  logger is set to WARNING as well, which takes effect when the plugin is imported before fairseq
  (fairseq's own command lines import fairseq first; ``fairseq-sum-score``, ``-compare`` and
  ``-baselines`` import no fairseq at all).

``FAIRSEQ_SUM_VERBOSE=1`` keeps fairseq's output unchanged.
"""
import logging
import os
import warnings

HYDRA_WARNINGS = (
    r"hydra\.experimental\.\w+\(\) is no longer experimental",
    r"\s*The version_base parameter is not specified",
    r"In '[\w/]+': Usage of deprecated keyword in package header",
    r"\s*'[\w/]+' is validated against ConfigStore schema",
    r"\s*The strict flag in the compose API is deprecated",
)
CHATTY_LOGGERS = ("matplotlib", "PIL", "fairseq.tasks.text_to_speech", "fsspec", "datasets",
                  "filelock")
CLI_LOGGERS = ("fairseq_cli.train", "fairseq_cli.generate", "fairseq_cli.interactive",
               "fairseq_cli.validate")


def verbose():
    return os.environ.get("FAIRSEQ_SUM_VERBOSE", "") not in ("", "0")


class BannerFilter(logging.Filter):
    """Shortens the configuration dump and the module tree that fairseq's command lines log."""

    def filter(self, record):
        msg = record.msg
        if (type(msg).__name__ == "DictConfig"
                or (isinstance(msg, str) and msg.startswith("{'_name':"))):
            record.msg, record.args = (
                "configuration not printed (FAIRSEQ_SUM_VERBOSE=1 prints it)", ())
        elif hasattr(msg, "named_modules"):  # an nn.Module: its repr is the whole module tree
            record.msg, record.args = (
                f"{type(msg).__name__}: module tree not printed "
                "(FAIRSEQ_SUM_VERBOSE=1 prints it)", ())
        return True


def install():
    """Idempotently installs the warning filters and the log filter (nothing with
    FAIRSEQ_SUM_VERBOSE=1)."""
    if verbose():
        return
    for message in HYDRA_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=UserWarning)
    for name in CLI_LOGGERS:
        log = logging.getLogger(name)
        if not any(isinstance(f, BannerFilter) for f in log.filters):
            log.addFilter(BannerFilter())
    for name in CHATTY_LOGGERS:
        if logging.getLogger(name).level == logging.NOTSET:  # a level the user set is kept
            logging.getLogger(name).setLevel(logging.WARNING)


install()
