"""Shardy's executable global->local tests, run the way its ``run_sdy_interpreter_test.sh`` does.

A file holds ``//--- part1.mlir`` (global functions whose values carry ``sdy.sharding`` on one
or more meshes) and ``//--- part2.mlir`` (a ``@main`` that runs the local programs with
``interpreter.run_parallel`` and checks them). Each part1 function is partitioned by xla-spmd
into the one program every device runs (Shardy's ``sdy-convert-global-to-local``), its
shardings dropped; when part1 names ``@parallel_f`` but no ``@sequential_f``, the unpartitioned
function is added as ``@sequential_f``; then the combined file runs in the interpreter runner.
"""

from __future__ import annotations

import re

from xla_spmd.ir import Module
from xla_spmd.partition.report import strip_shardings
from xla_spmd.pipeline import lower
from xla_spmd.stablehlo import export_stablehlo
from xla_spmd.stablehlo.importer import ModuleImporter
from xla_spmd.stablehlo.interpreter import InterpreterReport, run_text
from xla_spmd.stablehlo.syntax import parse_text

_PART = re.compile(r"^//--- (\S+)\s*$", re.MULTILINE)


def split_file(text: str) -> dict[str, str]:
    """The parts of an LLVM ``split-file`` input, by name."""
    pieces = _PART.split(text)
    return {pieces[i]: pieces[i + 1] for i in range(1, len(pieces) - 1, 2)}


def _functions_text(module: Module, name: str) -> str:
    """The functions of `module` as StableHLO text without the module wrapper or meshes,
    its entry renamed `name`."""
    text = export_stablehlo(module)
    lines = text.splitlines()[1:]
    while lines and not lines[-1].startswith("}"):
        lines.pop()
    body = "\n".join(line for line in lines[:-1] if not line.strip().startswith("sdy.mesh"))
    return body.replace(f"@{module.entry.name}(", f"@{name}(")


def global_to_local(part1: str) -> str:
    """Every function of `part1` partitioned into its per-device program (and, for
    ``@parallel_f`` without ``@sequential_f``, the unpartitioned ``@sequential_f``)."""
    tree = parse_text(part1, "part1.mlir")
    names = [f.name for f in tree.functions]
    out = []
    for name in names:
        importer = ModuleImporter(tree, "part1.mlir")
        module = Module.from_entry(tree.name or "part1", importer.function(name),
                                   importer.header())
        out.append(_functions_text(strip_shardings(lower(module).spmd_module), name))
        sequential = name.replace("parallel_", "sequential_")
        if name.startswith("parallel_") and sequential not in names:
            out.append(_functions_text(strip_shardings(module), sequential))
    return "\n".join(out)


_RENAME = re.compile(r"^// RUN:.*sed 's/(\w+)/(\w+)/g'", re.MULTILINE)


def run_shardy_executable_test(text: str, path: str = "<text>") -> InterpreterReport:
    """Convert part1 global->local, append part2, and run the interpreter's checks. A file
    whose RUN lines rename the converted functions (``sed 's/f/g/g'``, one converted copy
    per option set) gets one renamed copy per rename."""
    parts = split_file(text)
    local = global_to_local(parts["part1.mlir"])
    renames = _RENAME.findall(text)
    if renames:
        local = "\n".join(re.sub(rf"\b{old}\b", new, local) for old, new in renames)
    return run_text(local + "\n" + parts["part2.mlir"], path)
