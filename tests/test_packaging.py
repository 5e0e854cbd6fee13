"""Packaging: pyproject.toml and setup.py give one set of metadata (MIT license file, the version of
``fairseq_sum_plugins.__version__``, no bare torch requirement), and the wheel installs namespaced
top-level names only (``fairseq_sum_plugins``, ``fairseq_sum_plugins_preprocess``), importable outside
the checkout, while ``python -m preprocess.xxx`` keeps working from the repository root."""
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEEL_NAMES = {"fairseq_sum_plugins", "fairseq_sum_plugins_preprocess"}


def _pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_version_at_run_time_is_the_one_pyproject_reads():
    import fairseq_sum_plugins

    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?(a|b|rc|dev|post)\d+)?", fairseq_sum_plugins.__version__)
    project = _pyproject()
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "fairseq_sum_plugins.__version__"}
    with open(os.path.join(REPO, "setup.py"), encoding="utf-8") as f:
        assert "version=" not in f.read()  # one source of truth


def test_license_file_and_declared_license_agree():
    project = _pyproject()["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    with open(os.path.join(REPO, "LICENSE"), encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
    assert _pyproject()["build-system"]["build-backend"] == "setuptools.build_meta"


def test_python_m_preprocess_still_runs_from_the_checkout():
    """README and recipes run ``python -m preprocess.xxx`` from the repository root; the modules import
    each other relatively, so the same files work under the installed name as well."""
    proc = subprocess.run([sys.executable, "-m", "preprocess.cnndm_to_jsonl", "--help"], cwd=REPO,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--stories-dir" in proc.stdout


def _build_wheel(tmp_path):
    """The wheel of a copy of the sources (setup.py, pyproject.toml, README, LICENSE, the two packages):
    ``pip wheel --no-deps --no-build-isolation`` writes nothing into the checkout."""
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(os.path.join(REPO, name), src / name)
    for name in ("fairseq_sum_plugins", "preprocess"):
        shutil.copytree(os.path.join(REPO, name), src / name, ignore=ignore)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("fairseq_sum_plugins-*.whl")
    return wheel


@pytest.mark.slow
def test_wheel_installs_namespaced_names_that_import_outside_the_checkout(tmp_path):
    import fairseq_sum_plugins

    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        top = {n.split("/")[0] for n in names}
        dist_info = f"fairseq_sum_plugins-{fairseq_sum_plugins.__version__}.dist-info"
        assert top == WHEEL_NAMES | {dist_info}, top  # no generic `preprocess`
        metadata = z.read(f"{dist_info}/METADATA").decode()
        entry_points = z.read(f"{dist_info}/entry_points.txt").decode()
    assert f"{dist_info}/licenses/LICENSE" in names
    assert "fairseq_sum_plugins/scoring/data/wordnet-2.0-exceptions.txt" in names
    # the page's script and style are package data; the results ledger stays in the checkout
    assert {"fairseq_sum_plugins/inspection/page/assets/inspect.js",
            "fairseq_sum_plugins/inspection/page/assets/inspect.css"} <= set(names)
    assert not [n for n in names if n.startswith("ledger/") or "/results_index" in n
                and not n.startswith("fairseq_sum_plugins/analysis/")], names
    assert f"\nVersion: {fairseq_sum_plugins.__version__}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires and not [r for r in requires if re.match(r"(torch|fairseq)\b", r)], requires
    scripts = dict(re.findall(r"^(\S+) = (\S+)$", entry_points, flags=re.M))
    assert scripts["fairseq-sum-prepare"] == "fairseq_sum_plugins_preprocess.prepare:cli_main"
    for target in scripts.values():  # every console script names a module of the wheel
        assert target.split(":")[0].replace(".", "/") + ".py" in names, target

    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
                           str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (site / "preprocess").exists()
    code = ("import os, sys, fairseq_sum_plugins, fairseq_sum_plugins_preprocess.cnndm_to_jsonl as c\n"
            "import fairseq_sum_plugins_preprocess.prepare\n"
            "print(fairseq_sum_plugins.__version__)\n"
            "print(os.path.dirname(fairseq_sum_plugins.__file__))\n"
            "print(os.path.dirname(c.__file__))\n"
            "print(c.ConvertError.__module__)\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site))
    proc = subprocess.run([sys.executable, "-c", code], cwd=outside, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    version, plugin_dir, preprocess_dir, error_module = proc.stdout.split("\n")[:4]
    assert version == fairseq_sum_plugins.__version__
    assert plugin_dir == str(site / "fairseq_sum_plugins")  # the wheel's files, not the checkout's
    assert preprocess_dir == str(site / "fairseq_sum_plugins_preprocess")
    assert error_module == "fairseq_sum_plugins_preprocess.xsum_to_jsonl"  # relative imports stay inside
    proc = subprocess.run([sys.executable, "-m", "fairseq_sum_plugins_preprocess.xsum_to_jsonl", "--help"],
                          cwd=outside, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "--jsonl" in proc.stdout, proc.stderr[-2000:]
    proc = subprocess.run([str(site / "bin" / "fairseq-sum-prepare"), "--help"], cwd=outside, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "--jsonl-dir" in proc.stdout, proc.stderr[-2000:]
    # the page module reads its assets from the installed package
    proc = subprocess.run([sys.executable, "-c", "from fairseq_sum_plugins.inspection.page import render as page; "
                           "print(len(page.JS) > 1000, 'body' in page.CSS or '.t{' in page.CSS)"],
                          cwd=outside, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.split() == ["True", "True"], proc.stderr[-2000:]
    # an old path of a ledger tool says where it went, in one line, instead of a traceback
    proc = subprocess.run([sys.executable, "-m", "fairseq_sum_plugins.analysis.results_index",
                           "--check", "results"], cwd=outside, env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 1 and "has moved to ledger.results_index" in proc.stderr
    assert "run it from the repository root" in proc.stderr and "Traceback" not in proc.stderr
