"""The StableHLO converter and printer tables, below the modules that fill them.

`CONVERTERS` maps a StableHLO (or chlo, sdy) op name to its converter into HLO instructions;
`PRINTERS` maps an HLO opcode to its StableHLO printer, `NAME_HINTS` to the name its result
prints under (where MLIR names rather than numbers it). The rule modules (importer_ops,
importer_control, importer_sdy; exporter_ops, exporter_control) register into them when the
package ``__init__`` imports them; the importer and exporter drivers only look rules up.
"""

from __future__ import annotations

from xla_spmd.ir import Registry

# The dialects the importer reads ops of; ``check`` and ``interpreter`` ops are those of the
# StableHLO interpreter's test files (interpreter.py registers their converters).
DIALECTS = ("stablehlo", "chlo", "mhlo", "sdy", "func", "check", "interpreter")


def _is_dialect_op(name: str) -> bool:
    return name.split(".", 1)[0] in DIALECTS and "." in name


CONVERTERS = Registry("StableHLO converter", known=_is_dialect_op,
                      what=f"op of the {'/'.join(DIALECTS)} dialects")
PRINTERS = Registry("StableHLO printer")
# HLO opcode -> fn(instruction) giving the name hint MLIR's printer uses for the op's result
# (its getAsmResultNames, e.g. ``cst``; a tuple of one per result for a multi-result op, e.g.
# ``("output_state", "output")``), or None: such results are named, not numbered.
NAME_HINTS = Registry("StableHLO result name")
