"""`specialize(module, device)`: the SPMD program as device `device` runs it.

partition-id becomes the constant `device`, and offset-table lookups at a constant index fold
to constants, so a reader sees which shard each device touches.

>>> from xla_spmd.ir import Builder, Module
>>> b = Builder("main")
>>> m = Module.from_entry("m", b.build(b.op("partition-id")))
>>> specialize(m, 3).entry.root.attrs.literal.value.tolist()
3
"""

from __future__ import annotations

import numpy as np

from xla_spmd.ir import Literal, Module, map_computations, op_named, rebind_called, rewrite


def specialize(module: Module, device: int) -> Module:
    """`module` with partition-id replaced by `device` and table lookups folded."""

    def fold(inst, operands):
        if inst.opcode == "partition-id":
            return inst.replace(op=_constant_op(), operands=(),
                                attrs=_constant_op().make_attrs(
                                    literal=Literal(np.array(device, dtype=np.uint32))))
        folded = _fold_table(inst, operands)
        if folded is not None:
            return folded
        return None

    def per_computation(computation, replaced):
        return rewrite(computation, lambda i, ops: fold(rebind_called(i, replaced), ops)
                       or _rebound(rebind_called(i, replaced), ops))
    # The header keeps num_partitions: this is one of that many devices, and its collectives
    # still name the others.
    result = map_computations(module, per_computation)
    return Module(result.name, result.computations, result.entry, module.header)


def _rebound(inst, operands):
    return inst if operands == inst.operands else inst.replace(operands=operands)


def _constant_op():
    return op_named("constant")


def _value(inst):
    if inst.opcode == "constant":
        return inst.attrs.literal.value
    return None


def _fold_table(inst, operands):
    """convert(constant), dynamic-slice(constant, constant), reshape(constant) -> constant."""
    if inst.opcode not in ("convert", "dynamic-slice", "reshape"):
        return None
    values = [v for v in map(_value, operands) if v is not None]
    if len(values) != len(operands):
        return None
    if inst.opcode == "convert":
        result = np.asarray(values[0]).astype(inst.shape.dtype.numpy)
    elif inst.opcode == "reshape":
        result = np.asarray(values[0]).reshape(inst.shape.dims)
    else:
        table, *starts = values
        if len(starts) != table.ndim:
            return None
        index = []
        for start, size, extent in zip(starts, inst.attrs.dynamic_slice_sizes, table.shape):
            begin = int(min(max(int(start), 0), extent - size))
            index.append(slice(begin, begin + size))
        result = np.asarray(table[tuple(index)])
    return inst.replace(op=_constant_op(), operands=(), attrs=_constant_op().make_attrs(
        literal=Literal(np.array(result, dtype=inst.shape.dtype.numpy))))
