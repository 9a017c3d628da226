"""Count public functions lacking full type annotations, per package.

A function is *public* when neither it nor its enclosing class starts with ``_``
(dunder methods such as ``__init__`` are skipped). It is *fully annotated* when
it has a return annotation and every parameter other than a leading
``self``/``cls`` (including ``*args``/``**kwargs``) has one.

Example::

    python scripts/annotation_coverage.py                 # partition, frontend, sharding, ir
    python scripts/annotation_coverage.py -v frontend     # list the offenders too
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "xla_spmd"
DEFAULT_PACKAGES = ("partition", "frontend", "sharding", "ir")

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def _public_functions(tree: ast.Module) -> Iterator[tuple[FunctionNode, bool]]:
    """Yield (function, is_method) for public module-level functions and methods."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not node.name.startswith("_"):
                yield node, False
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if not item.name.startswith("_"):
                        yield item, True


def _fully_annotated(fn: FunctionNode, is_method: bool) -> bool:
    args = fn.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if is_method and params and params[0].arg in ("self", "cls"):
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod"
                     for d in fn.decorator_list)
        if not static:
            params = params[1:]
    if args.vararg is not None:
        params.append(args.vararg)
    if args.kwarg is not None:
        params.append(args.kwarg)
    return fn.returns is not None and all(p.annotation is not None for p in params)


def count(package: str, verbose: bool = False) -> tuple[int, int]:
    """Return (unannotated, total) public functions in ``xla_spmd/<package>`` (dir or module)."""
    missing = total = 0
    base = ROOT / package
    paths = sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        for fn, is_method in _public_functions(tree):
            total += 1
            if not _fully_annotated(fn, is_method):
                missing += 1
                if verbose:
                    print(f"  {path.relative_to(ROOT.parent)}:{fn.lineno} {fn.name}")
    return missing, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("packages", nargs="*", default=list(DEFAULT_PACKAGES))
    parser.add_argument("-v", "--verbose", action="store_true", help="list offenders")
    ns = parser.parse_args(argv)
    for pkg in ns.packages:
        missing, total = count(pkg, ns.verbose)
        print(f"{pkg:10s} {missing:4d} of {total:4d} public functions lack full annotations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
