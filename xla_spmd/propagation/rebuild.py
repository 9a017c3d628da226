"""Rebuilding a computation in place: every instruction kept, in the program's order.

Propagation writes shardings and the pipeline's steps swap ops, but they never remove what
the program says: an unused call or constant stays, where it was (IR's ``rewrite`` keeps
only what the root reaches, operands first).

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Computation
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (4,)))
>>> unused, out = b.negate(x), b.add(x, x)
>>> c = Computation("main", (x, unused, out), out)
>>> [i.opcode for i in rewrite_in_place(c, lambda inst, operands: inst.replace(
...     operands=operands, frontend_attributes=(("k", "v"),))).instructions]
['parameter', 'negate', 'add']
"""

from __future__ import annotations

from collections.abc import Callable

from xla_spmd.ir import Computation, Instruction, rebind_called


def rewrite_in_place(computation: Computation, fn: Callable[
        [Instruction, tuple[Instruction, ...]], Instruction | None]) -> Computation:
    """`fn(inst, new_operands)` (None: keep, re-made on the new operands) for every
    instruction, in order; none dropped. `computation` itself when nothing changed."""
    final: dict[Instruction, Instruction] = {}
    instructions = []
    for inst in computation.instructions:
        operands = tuple(final.get(o, o) for o in inst.operands)
        new = fn(inst, operands)
        if new is None:
            new = inst if operands == inst.operands else inst.replace(operands=operands)
        final[inst] = new
        instructions.append(new)
    if all(final[i] is i for i in computation.instructions):
        return computation
    return Computation(computation.name, tuple(instructions), final[computation.root],
                       computation.extras)


def rebuild_in_order(computation: Computation, replaced: dict,
                     changed: dict[Instruction, Instruction]) -> Computation:
    """`computation` with each instruction in `changed` replaced (its users rewired), the
    called computations rebuilt (`replaced`, as map_computations gives), order kept."""
    return rewrite_in_place(computation, lambda inst, operands: _on(
        rebind_called(changed.get(inst, inst), replaced), operands, inst))


def _on(new: Instruction, operands, old: Instruction) -> Instruction:
    if new.operands == old.operands and operands != old.operands:
        return new.replace(operands=operands)
    return new
