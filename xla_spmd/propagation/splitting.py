"""Shardy's constant splitting (``sdy-constant-or-scalar-splitter``, the first step of
``sdy-propagation-pipeline``): every use of a constant expression gets its own copy.

A constant expression is a constant or an iota, or a side-effect-free broadcast, reshape,
slice or elementwise op whose operands are all constant expressions. A broadcast of a scalar
(a scalar expansion) is split too. Each operand of a non-constant instruction that is such an
expression is replaced by a fresh copy of the expression's sub-computation (scalars inside
it stay shared: they have no dims to shard), placed just before the original; the originals,
left unused, are removed. A copy of a value in a sharding group joins the group too. So two
users wanting a constant sharded differently each get theirs, and propagation never carries
a sharding from one user of a constant to another through it.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> import numpy as np
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (4,)))
>>> c = b.constant(np.ones(4, np.float32))
>>> out = b.tuple(b.add(c, x), b.multiply(c, x))
>>> split = split_constants(Module.from_entry("m", b.build(out)))
>>> sum(i.opcode == "constant" for i in split.entry.instructions)
2
"""

from __future__ import annotations

from xla_spmd.ir import Computation, Instruction, Module, map_computations, rebind_called
from xla_spmd.ir.custom_calls import GROUPS
from xla_spmd.propagation.rebuild import rebuild_in_order

_SHAPE_OPS = frozenset({"broadcast", "reshape", "slice"})


def split_constants(module: Module) -> Module:
    """`module` with each use of a constant expression given its own copy (module doc)."""
    return map_computations(module, lambda c, replaced: _split(c, replaced))


def _is_group(inst: Instruction) -> bool:
    return getattr(inst.attrs, "custom_call_target", None) in GROUPS


def _is_scalar(inst: Instruction) -> bool:
    return not inst.shape.is_tuple and inst.shape.rank == 0


def _split(computation: Computation, replaced: dict) -> Computation:
    constants: set[Instruction] = set()
    expansions: set[Instruction] = set()
    for inst in computation.instructions:
        op = inst.op
        if inst.opcode in ("constant", "iota"):
            constants.add(inst)
        elif inst.operands and not op.side_effect and not inst.called_computations() and \
                (op.elementwise or inst.opcode in _SHAPE_OPS) and \
                all(o in constants for o in inst.operands):
            constants.add(inst)
        elif inst.opcode == "broadcast" and _is_scalar(inst.operands[0]):
            expansions.add(inst)
    splittable = constants | expansions
    users = computation.users()
    needs = [inst for inst in computation.instructions
             if inst not in splittable and not _is_group(inst)
             and any(o in splittable and not _is_scalar(o) for o in inst.operands)]
    if not needs:
        return _rebound(computation, replaced)
    before: dict[Instruction, list[Instruction]] = {}   # original -> copies placed before it
    rewired: dict[Instruction, Instruction] = {}        # user -> user on the copies
    count = [0]

    def clone(inst: Instruction, mapping: dict) -> Instruction:
        if _is_scalar(inst) or inst not in splittable:
            return inst
        if inst in mapping:
            return mapping[inst]
        operands = tuple(clone(o, mapping) for o in inst.operands)
        count[0] += 1
        copy = inst.replace(name=f"{inst.name}.split{count[0]}", operands=operands)
        mapping[inst] = copy
        before.setdefault(inst, []).append(copy)
        for user in users.get(inst, ()):
            if _is_group(user):
                count[0] += 1
                before[inst].append(user.replace(name=f"{user.name}.split{count[0]}",
                                                 operands=(copy,) + user.operands[1:]))
        return copy

    for inst in needs:
        rewired[inst] = inst.replace(operands=tuple(
            clone(o, {}) if o in splittable and not _is_scalar(o) else o for o in inst.operands))
    # the originals every use left (and the group markers on them) go
    used: set[Instruction] = set()
    new_of = {}
    order: list[Instruction] = []
    for inst in computation.instructions:
        order.extend(before.get(inst, ()))
        order.append(inst)
    for inst in order:
        new_of[inst] = rewired.get(inst, inst)
    for inst in order:
        for operand in new_of[inst].operands:
            used.add(operand)
    root = computation.root
    gone = {inst for inst in order if inst in splittable and inst not in used
            and inst is not root}
    kept = [inst for inst in order if inst not in gone
            and not (_is_group(inst) and inst.operands[0] in gone)]
    # operands point at the rebuilt instructions
    final: dict[Instruction, Instruction] = {}
    instructions = []
    for inst in kept:
        new = rebind_called(new_of[inst], replaced)
        operands = tuple(final.get(o, o) for o in new.operands)
        if operands != new.operands:
            new = new.replace(operands=operands)
        final[inst] = new
        instructions.append(new)
    return Computation(computation.name, tuple(instructions), final[root], computation.extras)


def _rebound(computation: Computation, replaced: dict) -> Computation:
    return rebuild_in_order(computation, replaced, {})
