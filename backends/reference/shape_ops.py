"""Reference rules of leaves and data-movement ops: constant, iota, partition-id, replica-id,
after-all, broadcast, reshape, bitcast, transpose, reverse, slice, concatenate, pad and
get-dimension-size (op_semantics §9).

All are exact (no arithmetic), so each is one or two numpy calls. `bitcast` is the one
layout-aware op: it reinterprets the operand's physical (minor-to-major) element order.

>>> import numpy as np
>>> from xla_spmd.ir import Builder, ArrayShape, Module, F32, PadDim
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (2,)), "x")
>>> zero = b.constant(np.float32(0))
>>> m = Module.from_entry("m", b.build(b.pad(x, zero, padding=(PadDim(1, -1, 1),))))
>>> from xla_spmd.backends.reference.evaluator import evaluate
>>> evaluate(m, [np.array([5, 6], np.float32)])
array([0., 5., 0.], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.reference.evaluator import EVALUATE, TOKEN_VALUE
from xla_spmd.backends.reference.numeric import to_storage

# ---------------------------------------------------------------------------------------------
# Leaves


def _literal_value(literal):
    if literal.is_tuple:
        return tuple(_literal_value(element) for element in literal.value)
    return literal.value


@EVALUATE.register("constant")
def constant_rule(inst, operands, ctx):
    # Literal arrays are read-only, so sharing them between evaluations is safe.
    return _literal_value(inst.attrs.literal)


@EVALUATE.register("iota")
def iota_rule(inst, operands, ctx):
    dims = inst.shape.dims
    if not dims:
        return np.zeros((), inst.shape.dtype.numpy)
    dimension = inst.attrs.iota_dimension
    along = np.arange(dims[dimension], dtype=np.int64)
    along = along.reshape([-1 if d == dimension else 1 for d in range(len(dims))])
    return np.asarray(np.broadcast_to(to_storage(along, inst.shape.dtype), dims), order="C")


@EVALUATE.register("partition-id")
def partition_id_rule(inst, operands, ctx):
    return np.array(ctx.partition_id, np.uint32)


@EVALUATE.register("replica-id")
def replica_id_rule(inst, operands, ctx):
    return np.array(ctx.replica_id, np.uint32)


@EVALUATE.register("after-all")
def after_all_rule(inst, operands, ctx):
    return TOKEN_VALUE


# ---------------------------------------------------------------------------------------------
# Data movement


@EVALUATE.register("broadcast")
def broadcast_rule(inst, operands, ctx):
    (x,) = operands
    dims = inst.attrs.dimensions
    # Order the operand's dims like their target dims, then insert the new dims as size 1.
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = np.transpose(x, order)
    placed = [1] * len(inst.shape.dims)
    for i in order:
        placed[dims[i]] = inst.shape.dims[dims[i]]
    return np.asarray(np.broadcast_to(x.reshape(placed), inst.shape.dims), order="C")


@EVALUATE.register("reshape")
def reshape_rule(inst, operands, ctx):
    return np.reshape(operands[0], inst.shape.dims)


def _minor_to_major(shape) -> tuple[int, ...]:
    return shape.layout if shape.layout is not None else tuple(range(shape.rank - 1, -1, -1))


@EVALUATE.register("bitcast")
def bitcast_rule(inst, operands, ctx):
    (x,) = operands
    operand_shape, result_shape = inst.operands[0].shape, inst.shape
    # Physical order: major-to-minor = reversed minor-to-major.
    operand_order = _minor_to_major(operand_shape)[::-1]
    physical = np.asarray(np.transpose(x, operand_order), order="C").reshape(-1)
    # A bitcast may also change the element type (same width): reinterpret the bytes.
    physical = physical.view(result_shape.dtype.numpy)
    result_order = _minor_to_major(result_shape)[::-1]
    physical_dims = [result_shape.dims[d] for d in result_order]
    result = physical.reshape(physical_dims)
    return np.transpose(result, np.argsort(result_order))


@EVALUATE.register("transpose")
def transpose_rule(inst, operands, ctx):
    return np.transpose(operands[0], inst.attrs.dimensions)


@EVALUATE.register("reverse")
def reverse_rule(inst, operands, ctx):
    (x,) = operands
    return np.flip(x, axis=tuple(inst.attrs.dimensions)) if inst.attrs.dimensions else x


@EVALUATE.register("slice")
def slice_rule(inst, operands, ctx):
    (x,) = operands
    return x[tuple(slice(s.start, s.limit, s.stride) for s in inst.attrs.slice)]


@EVALUATE.register("concatenate")
def concatenate_rule(inst, operands, ctx):
    return np.concatenate(operands, axis=inst.attrs.dimensions[0])


def pad(x: np.ndarray, value, padding, xp=np) -> np.ndarray:
    """HLO pad: interior padding first, then edges, which may be negative (cutting); ``xp``
    is the array module of ``x`` (numpy, or CuPy on the GPU backend)."""
    grown = [max(p.low, 0) + n + max(n - 1, 0) * p.interior + max(p.high, 0)
             for p, n in zip(padding, x.shape)]
    result = xp.empty(grown, dtype=x.dtype)
    result[...] = value
    placed = tuple(slice(max(p.low, 0), max(p.low, 0) + max(n - 1, 0) * (p.interior + 1) + 1,
                         p.interior + 1) if n else slice(0, 0)
                   for p, n in zip(padding, x.shape))
    result[placed] = x
    cut = tuple(slice(max(-p.low, 0), size - max(-p.high, 0))
                for p, size in zip(padding, grown))
    return result[cut]


@EVALUATE.register("pad")
def pad_rule(inst, operands, ctx):
    x, value = operands
    return pad(np.asarray(x), value, inst.attrs.padding)


@EVALUATE.register("get-dimension-size")
def get_dimension_size_rule(inst, operands, ctx):
    (x,) = operands
    return np.array(np.shape(x)[inst.attrs.dimensions[0]], inst.shape.dtype.numpy)
