"""Registration with fairseq happens whenever fairseq is used, never before
(fairseq_sum_plugins/__init__.py): the fairseq-free commands (fairseq-sum-score, -compare,
-baselines) run without importing torch, fairseq or Google's rouge_score; the plugin registers in
every order of import (plugin then fairseq, fairseq then plugin, ``--user-dir``, a model module
first as the hub does, a converter first) and never runs a module twice; with fairseq blocked
nothing registers."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import repo_env

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "fairseq", "rouge_score", "nltk")
REPORT = "import json, sys; print(json.dumps(sorted(m for m in %r if m in sys.modules)))" % (HEAVY,)
# what registration makes known to fairseq, read after the imports under test
REGISTERED = """
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY
from fairseq.tasks import TASK_REGISTRY
from fairseq.criterions import CRITERION_REGISTRY
from fairseq.scoring import SCORER_REGISTRY
from fairseq.data.encoders import TOKENIZER_REGISTRY
from fairseq_sum_plugins.modules.features import FEATURES
from fairseq_sum_plugins import Hook, registered
print(json.dumps({
    "arch": "tp_transformer_base" in ARCH_CONFIG_REGISTRY, "task": "summarization" in TASK_REGISTRY,
    "criterion": "summarization_loss" in CRITERION_REGISTRY, "scoring": "rouge" in SCORER_REGISTRY,
    "tokenizer": "sum_moses" in TOKENIZER_REGISTRY, "registered": registered(),
    "hook_left": any(isinstance(f, Hook) for f in sys.meta_path),
    "features": list(FEATURES),
    # torch's compiler stack (1.3 s of a command's start): imported by --compile only
    "compiler_imported": "torch._dynamo" in sys.modules,
}))
"""


def python(code, cwd=REPO):
    env = repo_env(OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()


def light_inputs(tmp):
    (tmp / "a.txt").write_text("the cat sat on the mat\na dog ran home\nrain fell\n")
    (tmp / "b.txt").write_text("a cat sat\nthe dog ran\nrain fell all day\n")
    (tmp / "ref.txt").write_text("the cat lay on the mat\na dog ran fast\nrain fell all day\n")
    docs = ["The cat lay on the mat. It slept. Then it woke.",
            "A dog ran fast. It barked. Everyone heard it.",
            "Rain fell all day. The roads flooded. Schools closed."]
    (tmp / "test.jsonl").write_text("".join(
        json.dumps({"document": d, "summary": r}) + "\n"
        for d, r in zip(docs, (tmp / "ref.txt").read_text().splitlines())))


COMMANDS = {
    "fairseq-sum-score": ("fairseq_sum_plugins.scoring.score",
                          ["--hyp", "a.txt", "--ref", "ref.txt", "--json", "score.json"]),
    "fairseq-sum-compare": ("fairseq_sum_plugins.evaluation.compare",
                            ["a.txt", "b.txt", "--ref", "ref.txt", "--bootstrap-samples", "200"]),
    "fairseq-sum-baselines": ("fairseq_sum_plugins.evaluation.baselines.systems",
                              ["--jsonl", "test.jsonl", "--json", "baselines.json"]),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_fairseq_free_command_runs_without_torch_fairseq_or_rouge_score(command, tmp_path):
    """Its console script's import, then a real run on three documents."""
    module, argv = COMMANDS[command]
    light_inputs(tmp_path)
    code = (f"from {module} import main\n{REPORT}\n"
            f"main({argv!r})\n{REPORT}")
    out = python(code, cwd=tmp_path)
    before, after = out[0], out[-1]
    assert json.loads(before) == [] and json.loads(after) == [], (before, after)


ORDERS = {
    "plugin, then fairseq": "import fairseq_sum_plugins\nimport fairseq",
    "fairseq, then plugin": "import fairseq\nimport fairseq_sum_plugins",
    "plugin, then a fairseq submodule": "import fairseq_sum_plugins\nimport fairseq.models",
    "--user-dir": ("import fairseq.utils, argparse\nfairseq.utils.import_user_module("
                   f"argparse.Namespace(user_dir={str(REPO / 'fairseq_sum_plugins')!r}))"),
    "a model module first (the hub)": (
        "from fairseq_sum_plugins.models.sum_transformer import SumTransformerModel as M\n"
        "from fairseq.models import ARCH_MODEL_REGISTRY\n"
        "assert M in ARCH_MODEL_REGISTRY.values()"),
    "the criterion first": "import fairseq_sum_plugins.criterions.summarization_loss",
    "a converter first": "import fairseq_sum_plugins.convert.t5_import",
    "the scorer, then fairseq": "import fairseq_sum_plugins.scoring.score\nimport fairseq",
}


def registration_after(imports):
    return json.loads(python("import json, sys\n" + imports + REGISTERED)[-1])


@pytest.fixture(scope="module")
def feature_order():
    """The features in registry order (modules/registry.py's FEATURE_MODULES)."""
    code = ("import json; from fairseq_sum_plugins.modules.registry import load_features; "
            "print(json.dumps(list(load_features())))")
    return json.loads(python(code)[-1])


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_the_plugin_registers_in_every_order_of_import(order, feature_order):
    out = registration_after(ORDERS[order])
    assert out == {"arch": True, "task": True, "criterion": True, "scoring": True,
                   "tokenizer": True, "registered": True, "hook_left": False,
                   "features": feature_order, "compiler_imported": False}, out


def test_a_module_registration_imports_runs_once():
    """The hub's first import of a model module is registration's: one class, one module."""
    code = ("import sys\nfrom fairseq_sum_plugins.models import sum_transformer as a\n"
            "import fairseq_sum_plugins.models.sum_transformer as b\n"
            "print(a is b is sys.modules['fairseq_sum_plugins.models.sum_transformer'], "
            "a is sys.modules['fairseq_sum_plugins.models'].sum_transformer)")
    assert python(code)[-1] == "True True"


def test_with_fairseq_blocked_nothing_registers_and_the_scorer_imports():
    code = ("import sys; sys.modules['fairseq'] = None\nimport fairseq_sum_plugins\n"
            "import fairseq_sum_plugins.scoring.score\n"
            "from fairseq_sum_plugins import Hook, registered\n"
            "print(registered(), any(isinstance(f, Hook) for f in sys.meta_path))")
    assert python(code)[-1] == "False False"


def test_the_fairseq_free_modules_import_no_fairseq():
    """Every module of registration's LIGHT parts but those marked as needing fairseq (and the
    inspection tools, which load checkpoints, and the old paths that forward to them) imports
    alone: the evaluation tools among them."""
    code = f"""
import importlib, json, pathlib, sys
import fairseq_sum_plugins as r
root = pathlib.Path(r.__file__).parent
names = [".".join(("fairseq_sum_plugins",) + p.relative_to(root).with_suffix("").parts)
         .removesuffix(".__init__") for p in sorted(root.rglob("*.py"))]
light = [n for n in names if not r.needs_registration(n)
         and not any(f"fairseq_sum_plugins.{{p}}" in n for p in ("analysis", "inspection"))
         and n != "fairseq_sum_plugins.cli.safe_load"]  # torch's by design: the next test
for n in light:
    importlib.import_module(n)
{REPORT}
print(json.dumps(light))"""
    heavy, light = python(code)[-2:]
    assert json.loads(heavy) == [], heavy
    assert {"fairseq_sum_plugins.scoring.rouge", "fairseq_sum_plugins.evaluation.compare",
            "fairseq_sum_plugins.evaluation.baselines.systems"} <= set(json.loads(light))


def test_reading_a_checkpoints_parameters_imports_torch_and_not_fairseq(tmp_path):
    """``ledger.paper_tables params`` loads a checkpoint under the plugin's allow-list
    (fairseq_sum_plugins/cli/safe_load.py: ``argparse.Namespace`` only) without importing fairseq, whose
    import is most of a process's start; a pickled class outside the list is still refused."""
    import argparse

    import torch

    ckpt, bad = tmp_path / "checkpoint_best.pt", tmp_path / "other.pt"
    torch.save({"model": {"w": torch.zeros(2, 3), "b": torch.zeros(4), "step": torch.tensor(1)},
                "args": argparse.Namespace(arch="x")}, ckpt)
    torch.save({"model": {"w": torch.zeros(1)}, "args": argparse.FileType("r")}, bad)
    code = f"""
import json, sys
from ledger.paper_tables import parameter_count
print(json.dumps(parameter_count({str(ckpt)!r})["params_k"]))
try:
    parameter_count({str(bad)!r})
except ValueError as e:
    print(json.dumps(str(e)))
print(json.dumps(sorted(m for m in ("torch", "fairseq") if m in sys.modules)))"""
    params, refused, imported = python(code)[-3:]
    assert json.loads(params) == 10 / 1000  # floating point tensors: 6 + 4
    assert str(bad) in json.loads(refused) and "not a readable fairseq checkpoint" in refused
    assert json.loads(imported) == ["torch"]
