"""Import layering, checked from the source by scripts/check_layering.py (nothing is imported)."""
import os
import sys

import pytest

from helpers import REPO

sys.path.insert(0, os.path.join(REPO, "scripts"))
import check_layering  # noqa: E402


def test_layering_holds_counting_imports_inside_functions():
    """No import cycle (also through imports inside functions), no plugin -> preprocess import, the task
    imports no feature, no feature imports the task, and no model imports a converter."""
    assert check_layering.violations() == []


def test_the_checker_sees_a_cycle_and_every_import_that_runs_up_a_floor(tmp_path):
    for rel, text in {"fairseq_sum_plugins/__init__.py": "", "fairseq_sum_plugins/a.py": "from . import b\n",
                      "fairseq_sum_plugins/b.py": "def f():\n    from .a import x\n",
                      "fairseq_sum_plugins/tasks/__init__.py": "",
                      "fairseq_sum_plugins/tasks/t.py": "from ..modules import m\n",
                      "fairseq_sum_plugins/modules/__init__.py": "", "fairseq_sum_plugins/modules/m.py": "",
                      "preprocess/__init__.py": "", "preprocess/p.py": "",
                      "fairseq_sum_plugins/c.py": "import preprocess.p\n",
                      "fairseq_sum_plugins/models/__init__.py": "",
                      "fairseq_sum_plugins/convert/__init__.py": "",
                      "fairseq_sum_plugins/convert/t5_import.py": "from ..models.fresh_params import MARK\n",
                      "fairseq_sum_plugins/models/fresh_params.py": "MARK = 1\n",
                      "fairseq_sum_plugins/models/net.py": "def load():\n    from ..convert.t5_import import x\n",
                      "fairseq_sum_plugins/features/__init__.py": "",
                      "fairseq_sum_plugins/features/paper.py": "from ..modules import m\n",
                      "fairseq_sum_plugins/models/bart.py": "from ..features.paper import X\n",
                      "fairseq_sum_plugins/models/presets.py": "from ..features.paper import X\n",
                      "fairseq_sum_plugins/modules/attention.py": "from ..scoring import rouge\n",
                      "fairseq_sum_plugins/scoring/__init__.py": "", "fairseq_sum_plugins/scoring/rouge.py": ""}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    old = check_layering.REPO
    check_layering.set_root(str(tmp_path))
    try:
        problems = check_layering.violations()
        top = check_layering.violations(top_level_only=True)
    finally:
        check_layering.set_root(old)
    where = lambda *p: os.path.join("fairseq_sum_plugins", *p)  # noqa: E731
    assert any(p.startswith("import cycle") and "fairseq_sum_plugins.a" in p for p in problems)
    assert not any(p.startswith("import cycle") for p in top)  # b imports a inside a function
    assert sorted(p for p in problems if not p.startswith("import cycle")) == sorted([
        f"upward import (base -> preprocess): fairseq_sum_plugins.c imports preprocess.p ({where('c.py')}:1)",
        "the task imports a feature or the interface: fairseq_sum_plugins.tasks.t imports "
        f"fairseq_sum_plugins.modules.m ({where('tasks', 't.py')}:1)",
        "upward import (models -> convert): fairseq_sum_plugins.models.net imports fairseq_sum_plugins.convert.t5_import "
        f"({where('models', 'net.py')}:2)",
        "a backbone imports a feature: fairseq_sum_plugins.models.bart imports fairseq_sum_plugins.features.paper "
        f"({where('models', 'bart.py')}:1)",
        "upward import (interface -> scoring): fairseq_sum_plugins.modules.attention imports "
        f"fairseq_sum_plugins.scoring.rouge ({where('modules', 'attention.py')}:1)"])  # presets may import features


def test_the_rooms_are_the_folders_on_their_floors():
    names, arrows = check_layering.rooms()
    assert names["features/topic_assistant"] == "features" and names["scoring"] == "scoring"
    assert names["models/mem2mem"] == "models" and names["(root)"] == "base"
    floors = [f for f, _ in check_layering.FLOORS]
    assert all(floors.index(names[a]) >= floors.index(names[b]) for a, b in arrows)  # no arrow runs up


def test_a_root_without_the_package_is_an_error_not_a_pass(tmp_path, capsys):
    old = check_layering.REPO
    try:
        with pytest.raises(SystemExit) as e:
            check_layering.main(["--root", str(tmp_path)])
    finally:
        check_layering.set_root(old)
    assert e.value.code == 2 and "no fairseq_sum_plugins package there" in capsys.readouterr().err


def test_the_package_root_holds_at_most_eight_modules():
    root = os.path.join(REPO, "fairseq_sum_plugins")
    modules = sorted(n for n in os.listdir(root) if n.endswith(".py"))
    assert len(modules) <= 8, modules


def test_every_line_of_the_package_is_at_most_100_characters():
    root = os.path.join(REPO, "fairseq_sum_plugins")
    long = [f"{os.path.relpath(os.path.join(d, name), REPO)}:{i}"
            for d, _, files in os.walk(root) for name in sorted(files) if name.endswith(".py")
            for i, line in enumerate(open(os.path.join(d, name), encoding="utf-8"), 1)
            if len(line.rstrip("\n")) > 100]
    assert not long, long


def private_names_used_across_modules(root=None):
    """``from M import _name`` and ``M._name`` of a plugin module ``M`` in another module (``__dunder__`` aside)."""
    import ast

    found = []
    for mod, path in check_layering.module_files(root).items():
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        plugin = set()  # local names bound to plugin modules or their members
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in check_layering.PACKAGES):
                for a in node.names:
                    plugin.add(a.asname or a.name)
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        found.append(f"{mod}:{node.lineno} imports {a.name}")
            elif isinstance(node, ast.Import):
                plugin.update(a.asname or a.name.split(".")[0] for a in node.names
                              if a.name.split(".")[0] in check_layering.PACKAGES)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in plugin
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append(f"{mod}:{node.lineno} uses {node.value.id}.{node.attr}")
    return found


def test_no_private_name_is_used_across_modules(tmp_path):
    assert private_names_used_across_modules() == []
    for rel, text in {"fairseq_sum_plugins/__init__.py": "", "fairseq_sum_plugins/a.py": "_x = 1\n",
                      "fairseq_sum_plugins/b.py": "from .a import _x\nfrom . import a\ny = a._x\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert private_names_used_across_modules(str(tmp_path)) == [
        "fairseq_sum_plugins.b:1 imports _x", "fairseq_sum_plugins.b:3 uses a._x"]


def test_no_room_holds_more_than_its_share_of_the_package():
    """No folder of the package above 15% of its lines (analysis/ held 42% in one flat folder)."""
    assert check_layering.oversized_rooms() == []
    lines = check_layering.room_lines()
    assert {"evaluation", "evaluation/baselines", "inspection", "models"} <= set(lines)


def test_a_text_only_module_importing_torch_at_its_top_is_reported(tmp_path):
    """evaluation/ reads decodings as text: torch or fairseq at a module's top is reported, inside a
    function it is not (those tools start without loading a model library)."""
    for rel, text in {"fairseq_sum_plugins/__init__.py": "",
                      "fairseq_sum_plugins/evaluation/__init__.py": "",
                      "fairseq_sum_plugins/evaluation/a.py": "import torch\n",
                      "fairseq_sum_plugins/evaluation/b.py": "def f():\n    from fairseq import utils\n",
                      "fairseq_sum_plugins/evaluation/c.py": "from fairseq.data import Dictionary\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    old = check_layering.REPO
    check_layering.set_root(str(tmp_path))
    try:
        problems = check_layering.heavy_top_imports()
    finally:
        check_layering.set_root(old)
    assert [p.split(":")[0] for p in problems] == ["a text-only module imports torch at its top",
                                                  "a text-only module imports fairseq.data at its top"]
    assert "fairseq_sum_plugins.evaluation.a" in problems[0]


def test_the_ledger_stays_out_of_the_wheel_and_no_package_module_imports_it():
    """The results ledger is a tool of the checkout (ledger/), not of the installed package."""
    files, edges = check_layering.graph()
    assert "ledger.results_index" in files
    assert not any(t.startswith("ledger") for m, ts in edges.items()
                   if m.startswith("fairseq_sum_plugins") for t in ts)
