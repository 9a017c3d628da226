"""Shardy's pipeline steps around function calls (conservative mode, the default).

- `drop_unused_private` (``symbol-dce``): private functions nothing calls are gone.
- `flatten_calls` (``sdy-flatten-call-graph``): walking the calls callees first, the second
  and later calls of a function call a fresh copy of it (its callees copied too), named as
  MLIR's symbol table names them (``bar_0``, then the next number); so every call site
  propagates on its own.
- `unflatten_calls` (``sdy-unflatten-call-graph``): the copies of one function whose
  argument and result shardings came out equal are one function again (the first met
  walking the module's functions in order); copies no call needs are dropped.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> f = Builder("f")
>>> f_x = f.parameter(ArrayShape(F32, (4,)))
>>> callee = f.build(f.negate(f_x))
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (4,)))
>>> two = b.tuple(b.call(x, to_apply=callee), b.call(x, to_apply=callee))
>>> flat = flatten_calls(Module.from_entry("m", b.build(two)))
>>> sorted(c.name for c in flat.computations)
['f', 'f_0', 'main']
>>> sorted(c.name for c in unflatten_calls(flat).computations)
['f', 'main']
"""

from __future__ import annotations

import dataclasses

from xla_spmd.ir import Computation, Instruction, Module
from xla_spmd.ir.custom_calls import FUNC_RESULT_SHARDING, MANUAL_BODY
from xla_spmd.ir.hlo_printer import FUNCTION_ORDER
from xla_spmd.sharding import TensorSharding, is_unconstrained

ORIGINAL_NAME = "sdy.original_func_name"   # extras of a copy: the function it copies
VISIBILITY = "visibility"                  # the StableHLO importer's mark of a public function
_LAST = 10 ** 6                            # copies print after every function of the text


def is_function_call(inst: Instruction) -> bool:
    """Whether `inst` is a call of a function of the program (not a manual computation's or
    a named computation's body, nor a composite's decomposition)."""
    return inst.opcode == "call" and not (
        inst.attrs.to_apply.name.startswith(MANUAL_BODY) or inst.attrs.is_composite
        or inst.frontend_attribute("xla.sdy.named_computation") is not None)


def _functions(module: Module) -> list[Computation]:
    """The module's functions: the entry, what function calls call, what nothing calls."""
    called, regions = set(), set()
    for c in module.computations:
        for inst in c.instructions:
            for callee in inst.called_computations():
                (called if is_function_call(inst) else regions).add(callee.name)
    return [c for c in module.computations if c is module.entry or c.name in called
            or c.name not in regions]


def _public(module: Module, computation: Computation) -> bool:
    return computation is module.entry or (VISIBILITY, "public") in computation.extras


def _rebuild(module: Module, roots: list[Computation], target, into_callees: bool = True,
             extras=None) -> Module:
    """The module of `roots` (the entry first) with each function call's callee replaced by
    `target(inst)` (or kept, for None); each computation rebuilt once (shared regions stay
    shared), function callees too when `into_callees`; `extras(computation)` gives a rebuilt
    computation's extras."""
    done: dict[int, Computation] = {}

    def build(c: Computation) -> Computation:
        if id(c) in done:
            return done[id(c)]
        new: dict[Instruction, Instruction] = {}
        for inst in c.instructions:
            changes = {}
            for spec in inst.op.attrs:
                value = getattr(inst.attrs, spec.name, None)
                if isinstance(value, Computation):
                    if is_function_call(inst):
                        callee = target(inst) or value
                        rebuilt = build(callee) if into_callees else callee
                    else:
                        rebuilt = build(value)
                    if rebuilt is not value:
                        changes[spec.name] = rebuilt
                elif isinstance(value, tuple) and value and isinstance(value[0], Computation):
                    rebuilt = tuple(build(v) for v in value)
                    if any(a is not b for a, b in zip(rebuilt, value)):
                        changes[spec.name] = rebuilt
            operands = tuple(new.get(o, o) for o in inst.operands)
            if changes:
                new[inst] = inst.replace(attrs=dataclasses.replace(inst.attrs, **changes),
                                         operands=operands)
            elif operands != inst.operands:
                new[inst] = inst.replace(operands=operands)
            else:
                new[inst] = inst
        kept = extras(c) if extras is not None else c.extras
        if kept == c.extras and all(new[i] is i for i in c.instructions):
            done[id(c)] = c
        else:
            done[id(c)] = Computation(c.name, tuple(new.values()), new[c.root], kept)
        return done[id(c)]
    entry, *others = [build(r) for r in roots]
    return Module.from_entry(module.name, entry, module.header, others)


def drop_unused_private(module: Module) -> Module:
    """`module` without the private functions nothing calls (MLIR's symbol DCE)."""
    roots = [module.entry] + [c for c in _functions(module)
                              if c is not module.entry and _public(module, c)]
    return Module.from_entry(module.name, roots[0], module.header, roots[1:])


def _with_order(module: Module) -> dict[str, int]:
    """Each function's print order (its text order, or the exporter's default one)."""
    functions = _functions(module)
    orders = {c.name: int(v) for c in functions for k, v in c.extras if k == FUNCTION_ORDER}
    if len(orders) == len(functions):
        return orders
    default = [module.entry] + [c for c in functions if c is not module.entry]
    return {c.name: i for i, c in enumerate(default)}


def _set_extra(c: Computation, key: str, value: str) -> Computation:
    extras = tuple((k, v) for k, v in c.extras if k != key) + ((key, value),)
    return Computation(c.name, c.instructions, c.root, extras)


def _post_order(module: Module, functions: list[Computation]) -> list[Computation]:
    """Functions callees first, from the entry and then the other roots, calls in order."""
    order: list[Computation] = []
    seen: set[str] = set()

    def calls(c: Computation):
        for inst in c.instructions:
            for callee in inst.called_computations():
                if is_function_call(inst):
                    yield callee
                else:
                    yield from calls(callee)

    def visit(c: Computation):
        if c.name in seen:
            return
        seen.add(c.name)
        for callee in calls(c):
            visit(callee)
        order.append(c)
    for c in [module.entry] + functions:
        visit(c)
    return order


def flatten_calls(module: Module) -> Module:
    """Every call site of a function called more than once calls its own copy (module
    doc)."""
    functions = _functions(module)
    orders = _with_order(module)
    taken = {c.name for c in module.computations}
    counter = [0]
    copies: list[Computation] = []
    current: dict[str, Computation] = {}
    seen: set[str] = set()

    def fresh(base: str, separator: str = "_") -> str:
        while True:
            name = f"{base}{separator}{counter[0]}"
            counter[0] += 1
            if name not in taken:
                taken.add(name)
                return name

    def copy(c: Computation, is_function: bool) -> Computation:
        """`c` under a new name, every function it calls (and region it holds) copied."""
        new: dict[Instruction, Instruction] = {}
        for inst in c.instructions:
            changes = {}
            for spec in inst.op.attrs:
                value = getattr(inst.attrs, spec.name, None)
                if isinstance(value, Computation):
                    changes[spec.name] = copy(value, is_function_call(inst))
                elif isinstance(value, tuple) and value and isinstance(value[0], Computation):
                    changes[spec.name] = tuple(copy(v, False) for v in value)
            operands = tuple(new.get(o, o) for o in inst.operands)
            attrs = dataclasses.replace(inst.attrs, **changes) if changes else inst.attrs
            new[inst] = inst.replace(operands=operands, attrs=attrs)
        name = fresh(c.name) if is_function else fresh(c.name, ".")
        extras = c.extras
        if is_function:
            original = next((v for k, v in c.extras if k == ORIGINAL_NAME), c.name)
            extras = tuple((k, v) for k, v in c.extras
                           if k not in (ORIGINAL_NAME, FUNCTION_ORDER))
            extras += ((ORIGINAL_NAME, original), (FUNCTION_ORDER, str(_LAST + counter[0])))
        result = Computation(name, tuple(new.values()), new[c.root], extras)
        if is_function:
            copies.append(result)
        return result

    def target(inst: Instruction) -> Computation:
        name = inst.attrs.to_apply.name
        callee = current.get(name, inst.attrs.to_apply)
        if name in seen:
            return copy(callee, True)
        seen.add(name)
        return callee

    for function in _post_order(module, functions):
        function = _set_extra(function, FUNCTION_ORDER, str(orders.get(function.name, _LAST)))
        current[function.name] = _rebuild(Module.from_entry(module.name, function), [function],
                                          target, into_callees=False).entry
    roots = [current[module.entry.name]] + [current[c.name] for c in functions
                                            if c is not module.entry and c.name in current]
    return Module.from_entry(module.name, roots[0], module.header, roots[1:] + copies)


def _key(c: Computation) -> tuple:
    def text(sharding) -> str:
        if not isinstance(sharding, TensorSharding) or is_unconstrained(sharding):
            return ""
        return sharding.to_text()
    root = c.root
    results = root.operands if root.opcode == "tuple" else (root,)
    return (next((v for k, v in c.extras if k == ORIGINAL_NAME), c.name),
            tuple(text(p.sharding) for p in c.parameters),
            tuple(text(r.sharding) if r.opcode == "custom-call"
                  and r.attrs.custom_call_target == FUNC_RESULT_SHARDING else "" for r in results))


def unflatten_calls(module: Module) -> Module:
    """Copies of a function with equal argument and result shardings are one again, the
    first in print order kept; copies no call needs are dropped (module doc)."""
    orders = _with_order(module)
    functions = sorted(_functions(module), key=lambda c: orders.get(c.name, _LAST))
    first: dict[tuple, Computation] = {}

    def walk(c: Computation):
        for inst in c.instructions:
            for callee in inst.called_computations():
                if is_function_call(inst):
                    first.setdefault(_key(callee), callee)
                else:
                    walk(callee)
    for function in functions:
        walk(function)
    roots = [module.entry] + [c for c in functions if c is not module.entry
                              and _public(module, c)]
    # the copies' marks are spent
    return _rebuild(module, roots, lambda inst: first.get(_key(inst.attrs.to_apply)),
                    extras=lambda c: tuple((k, v) for k, v in c.extras if k != ORIGINAL_NAME))
