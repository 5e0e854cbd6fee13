"""Import layering of the plugin, checked from the source (no import is executed).

    python scripts/check_layering.py            # every import, also those inside functions
    python scripts/check_layering.py --top-level-only

Reports, and exits 1 on:

* an import cycle among the modules of ``fairseq_sum_plugins`` and ``preprocess`` (strongly
  connected components of the import graph);
* a plugin module importing ``preprocess`` (``preprocess`` may import the plugin, not the reverse);
* the task (``fairseq_sum_plugins/tasks/``) importing a feature (``modules``, ``models``,
  ``analysis``, ``topic_model``), or a feature module (``modules``) importing the task: features
  register what they need in ``fairseq_sum_plugins/side_data.py``;
* a model or feature module (``models``, ``modules``) importing a checkpoint converter
  (``CONVERTERS``): a converter reads and writes models, a model never knows its converters (the mark
  that an imported checkpoint carries is the model's, ``models/fresh_params.py``).
"""
import argparse
import ast
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("fairseq_sum_plugins", "preprocess")
TASK_MAY_NOT_IMPORT = ("fairseq_sum_plugins.modules", "fairseq_sum_plugins.models", "fairseq_sum_plugins.analysis",
                       "fairseq_sum_plugins.topic_model")
CONVERTERS = ("fairseq_sum_plugins.models.t5_import", "fairseq_sum_plugins.models.t5_export")


def module_files(root=None):
    root = root or REPO
    out = {}
    for pkg in PACKAGES:
        for folder, _, files in os.walk(os.path.join(root, pkg)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    mod = os.path.relpath(path, root)[: -len(".py")].replace(os.sep, ".")
                    out[mod[: -len(".__init__")] if mod.endswith(".__init__") else mod] = path
    return out


def _resolve(mod, path, node):
    """Absolute names imported by an ``import`` / ``from`` node of module ``mod``."""
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names]
    package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1])
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module
    # "from pkg import sub" imports the submodule; "from mod import name" the module
    return [(base, [f"{base}.{a.name}" for a in node.names])]


def imports(mod, path, top_level_only=False):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [(name, node.lineno) for name in _resolve(mod, path, node)]
    return found


def graph(top_level_only=False):
    files = module_files()
    edges = {}
    for mod, path in files.items():
        targets = {}
        for (base, subs), line in imports(mod, path, top_level_only):
            names = [s for s in subs if s in files] or [base]
            for name in names:
                while name and name not in files:  # "pkg.mod.Class" -> "pkg.mod"
                    name = name.rpartition(".")[0]
                # a package above the importing module is loaded before it: no edge
                if name and name != mod and not mod.startswith(name + "."):
                    targets.setdefault(name, line)
        edges[mod] = targets
    return files, edges


def cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def violations(top_level_only=False):
    files, edges = graph(top_level_only)
    problems = []
    for comp in cycles(edges):
        links = [f"{a} -> {b} ({os.path.relpath(files[a], REPO)}:{edges[a][b]})"
                 for a in comp for b in edges[a] if b in comp]
        problems.append("import cycle: " + "; ".join(links))
    for mod, targets in sorted(edges.items()):
        if not mod.startswith("fairseq_sum_plugins"):
            continue
        for target, line in sorted(targets.items()):
            where = f"{os.path.relpath(files[mod], REPO)}:{line}"
            if target.split(".")[0] == "preprocess":
                problems.append(f"plugin -> preprocess: {mod} imports {target} ({where})")
            if mod.startswith("fairseq_sum_plugins.tasks") and target.startswith(TASK_MAY_NOT_IMPORT):
                problems.append(f"the task imports a feature: {mod} imports {target} ({where})")
            if mod.startswith("fairseq_sum_plugins.modules") and target.startswith("fairseq_sum_plugins.tasks"):
                problems.append(f"a feature imports the task: {mod} imports {target} ({where})")
            if (mod.startswith(("fairseq_sum_plugins.models", "fairseq_sum_plugins.modules")) and mod not in CONVERTERS
                    and target in CONVERTERS):
                problems.append(f"a model imports a converter: {mod} imports {target} ({where})")
    return problems


def set_root(root):
    global REPO
    REPO = os.path.abspath(root)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--top-level-only", action="store_true", help="ignore imports inside functions")
    p.add_argument("--root", default=None, help="repository to check (default: this one)")
    args = p.parse_args(argv)
    if args.root:
        set_root(args.root)
    problems = violations(args.top_level_only)
    for line in problems:
        print(line)
    files, _ = graph(args.top_level_only)
    print(f"{len(files)} modules, {len(problems)} problem(s)"
          f"{' (top-level imports only)' if args.top_level_only else ' (every import, also inside functions)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
