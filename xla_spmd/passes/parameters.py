"""Flatten the entry computation's tuple parameters into array parameters.

A program written with ``use_tuple_args`` takes one tuple; running it on devices places each
array on its devices, so each leaf becomes a parameter of its own (numbered in order, its
element sharding kept) and a ``tuple`` of them stands where the old parameter was
(``get-tuple-element`` of it folds away in `simplify`).

>>> from xla_spmd.ir import parse_hlo
>>> m = flatten_tuple_parameters(parse_hlo('''HloModule m
... ENTRY e {
...   p = (f32[2], s32[]) parameter(0)
...   ROOT a = f32[2] get-tuple-element(p), index=0
... }'''))
>>> [str(p.shape) for p in m.entry.parameters]
['f32[2]', 's32[]']
"""

from __future__ import annotations

from xla_spmd.ir import Computation, Module, TupleShape, make_instruction, op_named


def _leaf_shardings(sharding, count: int) -> list:
    """Per-leaf shardings of a tuple parameter (a tuple of them, an HLO tuple sharding, or one
    sharding for every leaf)."""
    if isinstance(sharding, tuple) and len(sharding) == count:
        return list(sharding)
    elements = getattr(sharding, "elements", None)
    if getattr(sharding, "is_tuple", False) and elements is not None and len(elements) == count:
        return list(elements)
    return [sharding] * count


def flatten_tuple_parameters(module: Module) -> Module:
    """`module` with every tuple parameter of its entry split into its array leaves."""
    entry = module.entry
    if not any(isinstance(p.shape, TupleShape) for p in entry.parameters):
        return module
    mapping, order, number = {}, [], 0
    parameter_op = op_named("parameter")
    for inst in entry.instructions:
        if inst.opcode != "parameter":
            new = inst.replace(operands=tuple(mapping.get(o, o) for o in inst.operands))
            mapping[inst] = new
            order.append(new)
            continue
        leaves = inst.shape.leaves()
        shardings = _leaf_shardings(inst.sharding, len(leaves))
        made = []
        for index, (leaf, sharding) in enumerate(zip(leaves, shardings)):
            name = inst.name if len(leaves) == 1 and not inst.shape.is_tuple \
                else f"{inst.name}.{index}"
            made.append(make_instruction(name, parameter_op, (), parameter_op.make_attrs(
                parameter_number=number), leaf, sharding=sharding))
            number += 1
        order.extend(made)
        if not inst.shape.is_tuple:
            mapping[inst] = made[0]
            continue
        mapping[inst] = _rebuild(inst.shape, iter(made), inst.name, order)
    root = mapping[entry.root]
    header = tuple((k, v) for k, v in module.header if k != "entry_computation_layout")
    flat = Computation(entry.name, tuple(order), root, entry.extras)
    return Module.from_entry(module.name, flat, header)


def _rebuild(shape, leaves, name: str, order: list):
    """A (nested) tuple of the new parameters shaped like `shape`."""
    if not isinstance(shape, TupleShape):
        return next(leaves)
    elements = [_rebuild(e, leaves, name, order) for e in shape.elements]
    tuple_op = op_named("tuple")
    inst = make_instruction(f"{name}.tuple{len(order)}", tuple_op, elements,
                            tuple_op.make_attrs())
    order.append(inst)
    return inst
