"""Dead while-loop carries: a loop element that nothing observes is passed through unchanged,
so the work that computed it (collectives included) becomes dead code (XLA's
WhileLoopSimplifier removes such elements; passing them through keeps every signature).

An element k of a while's tuple is observed when a get-tuple-element of the while's result
reads it, when the condition reads it, or when the body computes an observed element (or an
instruction with side effects) from it; the observed set is closed under the body's data flow.
A body called by several whiles is left alone, as is a while whose result or parameters are
used other than through get-tuple-element, or whose body root is not a tuple.

Example: a scan that also stacks a per-step loss nobody reads: the loss's all-reduce inside the
body is removed, and the stacked element keeps its initial value.
"""

from __future__ import annotations

from xla_spmd.ir import (
    Computation,
    Instruction,
    Module,
    TupleShape,
    make_instruction,
    op_named,
)
from xla_spmd.ir.builder import NameGenerator
from xla_spmd.ir.module import has_side_effect
from xla_spmd.passes.pass_manager import Pass, rebuild, transform_module


def _gte_indices(computation: Computation, value: Instruction, uses) -> set[int] | None:
    """Indices read from `value` by get-tuple-elements; None when it is used otherwise."""
    indices = set()
    for user in uses.get(value, ()):
        if user.opcode != "get-tuple-element":
            return None
        indices.add(user.attrs.index)
    if value is computation.root:
        return None
    return indices


def _reaches(starts) -> set[int]:
    seen: set[int] = set()
    stack = list(starts)
    while stack:
        inst = stack.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        stack.extend(inst.operands)
    return seen


def _observed(loop: Instruction, indices: set[int], size: int) -> set[int] | None:
    """The observed elements of `loop` (of `size` elements) given those read after it;
    None: all of them."""
    body, condition = loop.attrs.body, loop.attrs.condition
    if body.root.opcode != "tuple" or len(body.parameters) != 1:
        return None
    in_condition = _gte_indices(condition, condition.parameters[0], condition.users())
    body_uses = body.users()
    if in_condition is None or _gte_indices(body, body.parameters[0], body_uses) is None:
        return None
    reads = {}
    for user in body_uses[body.parameters[0]]:
        reads.setdefault(user.attrs.index, []).append(user)
    side_effects = [i for i in body.instructions if has_side_effect(i)]
    live = set(indices) | in_condition
    live |= {k for k, gtes in reads.items()
             if any(id(g) in _reaches(side_effects) for g in gtes)}
    pending = list(live)
    while pending:
        reached = _reaches([body.root.operands[pending.pop()]])
        for k, gtes in reads.items():
            if k not in live and any(id(g) in reached for g in gtes):
                live.add(k)
                pending.append(k)
    return live if len(live) < size else None


def _pass_through(body: Computation, dead: set[int]) -> Computation:
    param = body.parameters[0]
    reads = {u.attrs.index: u for u in body.users()[param]
             if u.opcode == "get-tuple-element"}
    names = NameGenerator(i.name for i in body.instructions)
    gte = op_named("get-tuple-element")
    operands = list(body.root.operands)
    changed = False
    for k in sorted(dead):
        current = operands[k]
        if current.opcode == "get-tuple-element" and current.operands[0] is param \
                and current.attrs.index == k:
            continue
        operands[k] = reads.get(k) or make_instruction(names(f"{param.name}.{k}"), gte,
                                                       (param,), gte.make_attrs(index=k))
        changed = True
    if not changed:
        return body
    root = body.root.replace(operands=tuple(operands))
    keep = [i for i in body.instructions if has_side_effect(i)]
    return rebuild(body, root, keep)


def pass_through_dead_carries(module: Module) -> Module:
    """Unobserved while-loop elements passed through their bodies (see the module doc)."""
    callers: dict[str, list] = {}
    for computation in module.computations:
        uses = None
        for inst in computation.instructions:
            if inst.opcode != "while":
                continue
            uses = uses or computation.users()
            callers.setdefault(inst.attrs.body.name, []).append(
                (inst, _gte_indices(computation, inst, uses)))
    dead = {}
    for name, loops in callers.items():
        if len(loops) != 1 or loops[0][1] is None:
            continue
        loop, indices = loops[0]
        if not isinstance(loop.shape, TupleShape):
            continue  # an array carry is a single element: nothing to pass through
        size = len(loop.shape.elements)
        live = _observed(loop, indices, size)
        if live is not None:
            dead[name] = set(range(size)) - live
    if not dead:
        return module
    return transform_module(module, lambda c: _pass_through(c, dead[c.name])
                            if c.name in dead else c)


pass_through_dead_carries_pass = Pass("pass-through-dead-carries", pass_through_dead_carries)
