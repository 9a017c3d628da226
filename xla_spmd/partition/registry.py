"""The partition handler registry: one handler per opcode, many sharing a family handler.

A handler is ``handler(lowering, inst, operands) -> PValue | PTuple``: it reshards its operands
(PValue/PTuple, local values with shardings) as its op needs and emits the op on local shapes.
Opcodes without their own handler get their family's (`FAMILY_DEFAULTS`); an op of a family
with no default fails naming the opcode.

The handler modules register themselves when the package imports them (its ``__init__``);
this module imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xla_spmd.ir import OPS, Family, Instruction, Registry

HANDLERS = Registry("partition handler")
FAMILY_DEFAULTS: dict[Family, Callable[..., Any]] = {}


def handler_for(inst: Instruction) -> Callable[..., Any]:
    handler = HANDLERS.get(inst.opcode)
    if handler is not None:
        return handler
    default = FAMILY_DEFAULTS.get(OPS[inst.opcode].family)
    if default is not None:
        return default
    return HANDLERS.lookup(inst.opcode)
