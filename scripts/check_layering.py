"""Import layering of the plugin, checked from the source (no import is executed).

    python scripts/check_layering.py            # every import, also those inside functions
    python scripts/check_layering.py --top-level-only
    python scripts/check_layering.py --rooms    # the rooms (folders), their floors and the arrows between them

The house has floors; a module may import its own floor and those below, never one above:

    0 base        the package root: flags, text, data_folder, compat, quiet and the two neutral
                  registries (side_data, aux_losses) between the task/criterion and the features
    1 interface   modules/: the feature interface (FeatureSpec), attention, the encoder output, the T5
                  cell's parts, dropout, checkpointing, compilation
    2 features    features/: the papers' mechanisms, each behind the interface
    3 scoring     scoring/: ROUGE, METEOR, specificity, bootstrap, fairseq-sum-score (its
                  ``--topic-model`` reads the Topic Assistant's semantic similarity, features/)
    4 task        tasks/, criterions/: the registries and the scorer, never the interface, a
                  feature or a model (:data:`TASK_MAY_NOT_IMPORT`)
    5 models      models/: the backbones, the presets that switch features on, the Mem2Mem family
    6 convert     convert/: the Hugging Face converters (read and write models; no model imports them)
    7 evaluation  evaluation/: the tools that read decodings and data as text (baselines, compare,
                  LexRank, committed decodings); no torch or fairseq imported at a module's top
    8 inspection  inspection/: the tools that load a checkpoint and read its mechanisms
    9 preprocess  preprocess/ (outside the package): data preparation, may import the plugin
   10 ledger      ledger/ (outside the package): the repository's results ledger

Reports, and exits 1 on:

* an import that runs upward (a floor importing a higher one), e.g. a model importing a converter;
* the task or the criterion importing ``modules/`` or ``features/``;
* a backbone (:data:`BACKBONES`) importing anything of ``features/``: the backbones know only the
  interface (``modules/``) and the registries;
* an import cycle among the modules of ``fairseq_sum_plugins``, ``preprocess`` and ``ledger``
  (strongly connected components of the import graph);
* a module of ``evaluation/`` importing torch or fairseq at its top (:data:`TEXT_ONLY`);
* a room (folder) of the package holding more than :data:`MAX_ROOM_SHARE` of the package's lines.

The package's own ``__init__`` (which loads every floor) and ``modules/registry.py``'s loading of the
features by name are not imports between floors.
"""
import argparse
import ast
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("fairseq_sum_plugins", "preprocess", "ledger")
P = "fairseq_sum_plugins"
FLOORS = (("base", ()), ("interface", (f"{P}.modules",)), ("features", (f"{P}.features",)),
          ("scoring", (f"{P}.scoring",)), ("task", (f"{P}.tasks", f"{P}.criterions")), ("models", (f"{P}.models",)),
          ("convert", (f"{P}.convert",)), ("evaluation", (f"{P}.evaluation",)),
          ("inspection", (f"{P}.inspection",)), ("preprocess", ("preprocess",)), ("ledger", ("ledger",)))
BACKBONES = (f"{P}.models.sum_transformer", f"{P}.models.bart")  # the default and T5 cells, BART
TASK_MAY_NOT_IMPORT = ("interface", "features")  # below the task, but the task knows only the registries
TEXT_ONLY = (f"{P}.evaluation",)  # rooms that read text: no torch or fairseq at a module's top
HEAVY = ("torch", "fairseq")
MAX_ROOM_SHARE = 0.15  # of the package's lines (its .py files), per room
OLD_PATHS = f"{P}.analysis"  # the one-release forwards of the old tool paths: no floor


def floor(mod):
    """``(index, name)`` of the floor of module ``mod`` (None for the package's ``__init__``)."""
    if mod == P or mod == OLD_PATHS or mod.startswith(OLD_PATHS + "."):
        return None
    for i, (name, prefixes) in enumerate(FLOORS):
        if any(mod == q or mod.startswith(q + ".") for q in prefixes):
            return i, name
    return (0, "base") if mod.startswith(P + ".") else None


def room(mod, files=None):
    """The folder of ``mod``: ``fairseq_sum_plugins.models.mem2mem.model`` -> ``models/mem2mem``
    (a package's ``__init__`` is in its own folder)."""
    parts = mod.split(".") + (["__init__"] if files and files[mod].endswith("__init__.py") else [])
    if parts[0] == P:
        return "/".join(parts[1:-1]) or "(root)"
    return "/".join(parts[:-1]) or parts[0]


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
        here = floor(mod)
        for target, line in sorted(targets.items()):
            there = floor(target)
            if here is None or there is None:
                continue
            where = f"{os.path.relpath(files[mod], REPO)}:{line}"
            if there[0] > here[0]:
                problems.append(f"upward import ({here[1]} -> {there[1]}): {mod} imports {target} ({where})")
            if here[1] == "task" and there[1] in TASK_MAY_NOT_IMPORT:
                problems.append(f"the task imports a feature or the interface: {mod} imports {target} ({where})")
            if mod in BACKBONES and there[1] == "features":
                problems.append(f"a backbone imports a feature: {mod} imports {target} ({where})")
    return problems + heavy_top_imports()


def heavy_top_imports():
    """Problems: a module of a text-only room (:data:`TEXT_ONLY`) importing torch or fairseq at
    its top."""
    problems = []
    for mod, path in sorted(module_files().items()):
        if not any(mod == r or mod.startswith(r + ".") for r in TEXT_ONLY):
            continue
        for (base, _), line in imports(mod, path, top_level_only=True):
            if base.split(".")[0] in HEAVY:
                problems.append(f"a text-only module imports {base} at its top: {mod} "
                                f"({os.path.relpath(path, REPO)}:{line})")
    return problems


def room_lines():
    """``{room: lines}`` of the package's rooms (every .py file of the folder, not its subfolders)."""
    lines = {}
    for mod, path in module_files().items():
        if mod.split(".")[0] == P and floor(mod) is not None or mod == P:
            with open(path, encoding="utf-8") as f:
                n = sum(1 for _ in f)
            files = {mod: path}
            lines[room(mod, files)] = lines.get(room(mod, files), 0) + n
    return lines


def oversized_rooms():
    lines = room_lines()
    total = sum(lines.values()) or 1
    return [f"room {r} holds {n} of the package's {total} lines ({n / total:.0%} > "
            f"{MAX_ROOM_SHARE:.0%})" for r, n in sorted(lines.items()) if n > MAX_ROOM_SHARE * total]


def rooms(top_level_only=False):
    """``({room: floor name}, {(room, room): imports})`` of the package and preprocess."""
    files, edges = graph(top_level_only)
    names, arrows = {}, {}
    for mod in files:
        if floor(mod) is not None:
            names[room(mod, files)] = floor(mod)[1]
    for mod, targets in edges.items():
        for target in targets:
            a, b = room(mod, files), room(target, files)
            if floor(mod) is None or floor(target) is None or a == b:
                continue
            arrows[a, b] = arrows.get((a, b), 0) + 1
    return names, arrows


def set_root(root):
    global REPO
    REPO = os.path.abspath(root)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--top-level-only", action="store_true", help="ignore imports inside functions")
    p.add_argument("--root", default=None, help="repository to check (default: this one)")
    p.add_argument("--rooms", action="store_true", help="print the rooms, their floors and the arrows between them")
    args = p.parse_args(argv)
    if args.root:
        set_root(args.root)
    if not os.path.isfile(os.path.join(REPO, "fairseq_sum_plugins", "__init__.py")):
        p.error(f"--root {REPO}: no fairseq_sum_plugins package there (nothing to check)")
    if args.rooms:
        names, arrows = rooms(args.top_level_only)
        for name in sorted(names, key=lambda r: ([f for f, _ in FLOORS].index(names[r]), r)):
            out = sorted(b for a, b in arrows if a == name)
            print(f"{names[name]:<10} {name:<28} -> {', '.join(out) or '-'}")
        floors = len({names[r] for r in names})
        print(f"{len(names)} rooms on {floors} floors, {len(arrows)} arrows between rooms")
        return 0
    problems = violations(args.top_level_only) + oversized_rooms()
    for line in problems:
        print(line)
    files, _ = graph(args.top_level_only)
    print(f"{len(files)} modules, {len(problems)} problem(s)"
          f"{' (top-level imports only)' if args.top_level_only else ' (every import, also inside functions)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
