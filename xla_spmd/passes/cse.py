"""Common subexpression elimination: instructions computing the same value become one.

Two instructions are the same value when they have the same opcode, the same (already
deduplicated) operands, the same result type, equal attributes, sharding and frontend
attributes. Operands of commutative ops are put in a canonical order first, so ``add(a, b)``
and ``add(b, a)`` merge. For collectives only whether a channel is present matters (it picks
the group mode), not its number, so two equal all-gathers of one value merge like XLA's
collective CSE does. Parameters, instructions with side effects, random numbers and async
pairs are never merged; neither are calls into computations that have side effects.

One walk per computation with a dict keyed by (opcode, operand identities, attributes):
linear in the number of instructions.

>>> from xla_spmd.ir import parse_hlo
>>> m = parse_hlo('''HloModule m
... ENTRY %e (x: f32[2]) -> f32[2] {
...   %x = f32[2] parameter(0)
...   %a = f32[2] negate(%x)
...   %b = f32[2] negate(%x)
...   ROOT %s = f32[2] add(%a, %b)
... }''')
>>> [str(i.operands[0].name) + "," + i.operands[1].name for i in cse(m).entry.instructions
...  if i.opcode == "add"]
['a,a']
"""

from __future__ import annotations

from xla_spmd.ir import AttrKind, Computation, Family, Instruction, Module
from xla_spmd.ir.module import has_side_effect, rewrite
from xla_spmd.passes.pass_manager import (
    Pass,
    transform_module,
)


def _attr_key(inst: Instruction) -> tuple:
    key = []
    collective = inst.op.family is Family.COLLECTIVE
    for spec in inst.op.attrs:
        value = getattr(inst.attrs, spec.name)
        if spec.kind is AttrKind.COMPUTATION and value is not None:
            value = id(value)
        elif spec.kind is AttrKind.COMPUTATIONS and value is not None:
            value = tuple(id(c) for c in value)
        elif collective and spec.name == "channel_id":
            value = value is not None and value > 0
        key.append(value)
    return tuple(key)


class _Purity:
    """Whether a computation (and what it calls) is free of side effects; memoized."""

    def __init__(self):
        self.pure: dict[int, bool] = {}

    def computation(self, computation: Computation) -> bool:
        known = self.pure.get(id(computation))
        if known is None:
            self.pure[id(computation)] = True  # recursion guard; HLO has no recursion
            known = all(self.instruction(i) for i in computation.instructions)
            self.pure[id(computation)] = known
        return known

    def instruction(self, inst: Instruction) -> bool:
        if has_side_effect(inst) or inst.op.family is Family.ASYNC:
            return False
        return all(self.computation(c) for c in inst.called_computations())


def cse_computation(computation: Computation, purity: _Purity | None = None,
                    respect_shardings: bool = True) -> Computation:
    purity = purity or _Purity()
    seen: dict[tuple, Instruction] = {}

    def visit(inst: Instruction, operands: tuple[Instruction, ...]) -> Instruction | None:
        if inst.op.distinct or not purity.instruction(inst):
            return None
        ids = tuple(id(o) for o in operands)
        if inst.op.commutative:
            ids = tuple(sorted(ids))
        sharding = (str(inst.sharding) if respect_shardings and inst.sharding is not None
                    else None)
        frontend = inst.frontend_attributes if respect_shardings else ()  # may hold shardings
        key = (inst.op, ids, inst.shape, _attr_key(inst), sharding, frontend)
        try:
            hash(key)
        except TypeError:  # an attribute value that cannot be hashed: leave it alone
            return None
        known = seen.get(key)
        if known is not None:
            return known
        new = inst if operands == inst.operands else inst.replace(operands=operands)
        seen[key] = new
        return new

    return rewrite(computation, visit)


def cse(module: Module, respect_shardings: bool = True) -> Module:
    """Merge equal instructions in every computation of `module` (instructions with different
    shardings too when `respect_shardings` is off, as after partitioning)."""
    purity = _Purity()
    return transform_module(module, lambda c: cse_computation(c, purity, respect_shardings))


cse_pass = Pass("cse", cse)
