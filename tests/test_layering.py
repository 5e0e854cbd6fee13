"""Import layering, checked from the source by scripts/check_layering.py (nothing is imported)."""
import os
import sys

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "scripts"))
import check_layering  # noqa: E402


def test_plugin_never_imports_preprocess_and_task_knows_no_feature():
    """No plugin -> preprocess import, the task imports no feature and no feature imports the task,
    counting imports inside functions too."""
    problems = [p for p in check_layering.violations() if not p.startswith("import cycle")]
    assert problems == []


def test_no_import_cycle_at_module_level():
    assert check_layering.violations(top_level_only=True) == []


def test_the_checker_sees_a_cycle_and_a_plugin_to_preprocess_import(tmp_path):
    for rel, text in {"fairseq_sum_plugins/__init__.py": "", "fairseq_sum_plugins/a.py": "from . import b\n",
                      "fairseq_sum_plugins/b.py": "def f():\n    from .a import x\n",
                      "fairseq_sum_plugins/tasks/__init__.py": "",
                      "fairseq_sum_plugins/tasks/t.py": "from ..modules import m\n",
                      "fairseq_sum_plugins/modules/__init__.py": "", "fairseq_sum_plugins/modules/m.py": "",
                      "preprocess/__init__.py": "", "preprocess/p.py": "",
                      "fairseq_sum_plugins/c.py": "import preprocess.p\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    old = check_layering.REPO
    check_layering.set_root(str(tmp_path))
    try:
        problems = check_layering.violations()
        top = check_layering.violations(top_level_only=True)
    finally:
        check_layering.set_root(old)
    assert any(p.startswith("import cycle") and "fairseq_sum_plugins.a" in p for p in problems)
    assert not any(p.startswith("import cycle") for p in top)  # b imports a inside a function
    assert any("plugin -> preprocess: fairseq_sum_plugins.c imports preprocess.p" in p for p in problems)
    assert any("the task imports a feature" in p for p in problems)
