"""Circles in the import graph between the project's files.

Reads every module of the package (the folders pyproject maps into ``xla_spmd``) with `ast`,
draws an edge A -> B for each ``import``/``from ... import`` of a project module B in A (an
``from package import module`` names the module), and prints the strongly connected
components with more than one file: each is a circle.

Two graphs: imports at module level (what runs when a file loads) and every import, including
those inside functions (a lazy import hides a circle, it does not remove it). The registry
pattern (a package ``__init__`` imports its rule modules, which register into a registry
below them) is how a package assembles itself: a circle is of that kind only when it lies
inside one package and is gone once the package ``__init__`` files in it no longer import
their own modules. A circle that leaves the package (``cli_tools`` -> ``bench`` ->
``bench.runner`` -> ``cli_tools``) is a real one, whoever's ``__init__`` it passes through.
The script counts both kinds and, with ``-v``, lists each circle under its kind.

    python scripts/import_cycles.py          # summary
    python scripts/import_cycles.py -v       # the files of each circle
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = {package: ROOT / folder for package, folder in config["package-dir"].items()}
    found: dict[str, Path] = {}
    for package, folder in sorted(mapping.items(), key=lambda item: len(item[0])):
        for path in folder.rglob("*.py"):
            relative = path.relative_to(folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if package == "xla_spmd" and any(
                    (ROOT / f).resolve() == (folder / relative.parts[0]).resolve()
                    for p, f in config["package-dir"].items() if p != "xla_spmd"):
                continue  # a mapped folder is read under its own package name
            found.setdefault(name, path)
    return found


def _imports(path: Path, name: str, known: set[str], top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    type_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                 and "TYPE_CHECKING" in ast.unparse(block.test)
                 for n in ast.walk(block)}  # `if TYPE_CHECKING:` never runs
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(_longest_known(alias.name, known))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in known else _longest_known(base, known))
    found.discard("")
    found.discard(name)
    return found & known


def _longest_known(name: str, known: set[str]) -> str:
    parts = name.split(".")
    while parts:
        if ".".join(parts) in known:
            return ".".join(parts)
        parts.pop()
    return ""


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), those with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


def _made_by_package_init(component: list[str], graph: dict[str, set[str]],
                          modules: dict[str, Path]) -> bool:
    """Whether `component` is the registry pattern's circle: every file of it inside the
    package of one of its ``__init__`` files, and no circle left once each ``__init__`` in it
    stops importing its own package's modules."""
    inits = [name for name in component if modules[name].name == "__init__.py"]
    if not any(all(m == p or m.startswith(p + ".") for m in component) for p in inits):
        return False
    members = set(component)
    inner = {name: {t for t in graph[name] & members
                    if not (name in inits and t.startswith(name + "."))}
             for name in component}
    return not _components(inner)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    modules = _modules()
    known = set(modules)
    for top_level_only in (True, False):
        graph = {name: _imports(path, name, known, top_level_only)
                 for name, path in modules.items()}
        every = _components(graph)
        registry = [c for c in every if _made_by_package_init(c, graph, modules)]
        strict = [c for c in every if c not in registry]
        what = "module-level imports" if top_level_only else "all imports (lazy ones too)"
        print(f"{what}: {len(modules)} files, {sum(map(len, graph.values()))} edges; "
              f"{len(every)} circle(s) in all, {len(strict)} not made by a package __init__ "
              f"importing its own modules")
        if args.verbose:
            for component in strict:
                print("  circle:", ", ".join(component))
            for component in registry:
                print("  registry circle (package __init__):", ", ".join(component))
    return 0


if __name__ == "__main__":
    sys.exit(main())
