"""Kernels of the ops the GPU backend runs outside generated fusions, written once over the
array module ``rt.xp`` (CuPy on a GPU, numpy in the host-only check): data movement (pad and
dynamic slices too, their start indices read on the host; gather by fancy indexing), dot
through ``xp.matmul`` (cuBLAS on a GPU, batch dims as a batched GEMM), convolution as a GEMM
per kernel tap, the float sums and products of ``reduce``, sort by stable argsorts, and the
rng-bit-generator.

``kernel_for(inst)`` is the kernel ``kernel(rt, inst, operands, ctx) -> value`` of an
instruction, or None: the executable then runs the reference rule on the host (operands
copied down, the result copied up) and counts the fallback. A kernel that finds at run time
that it cannot decide (a sort key holding NaN) returns ``NotImplemented``: the same fallback.

Dot: operands are moved to ``(batch, free, contracting)`` and ``(batch, contracting, free)``
order, widened to the accumulation type (f32 for f16/bf16, integers in their own type, which
wraps) and multiplied by ``xp.matmul``: the reference's computation.
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.comparators import recognize_comparator
from xla_spmd.backends.cpu.kernels import _default_layout, _size
from xla_spmd.backends.gpu.renderer import SUPPORTED
from xla_spmd.backends.reference import contraction, indexing, random
from xla_spmd.backends.reference.contraction import dot_dimensions
from xla_spmd.backends.reference.indexing import _clamped_window, _start_indices
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.backends.reference.reduction import binary_reducer
from xla_spmd.backends.reference.shape_ops import pad
from xla_spmd.ir import ArrayShape, Instruction
from xla_spmd.ir.attributes import ComparisonType
from xla_spmd.ir.dtypes import PRED
from xla_spmd.ir.opdefs import default_comparison_type


def _broadcast(rt, inst, operands, ctx):
    (x,) = operands
    dims = inst.attrs.dimensions
    placed = [1] * inst.shape.rank
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    for i in order:
        placed[dims[i]] = inst.shape.dims[dims[i]]
    return rt.xp.broadcast_to(rt.xp.transpose(x, order).reshape(placed), inst.shape.dims)


def _index(rt, inst, operands, ctx, value: int):
    return rt.xp.asarray(np.array(value, np.uint32))


KERNELS = {
    "reshape": lambda rt, inst, ops, ctx: rt.xp.reshape(ops[0], inst.shape.dims),
    "bitcast": lambda rt, inst, ops, ctx: rt.xp.reshape(ops[0], inst.shape.dims),
    "transpose": lambda rt, inst, ops, ctx: rt.xp.transpose(ops[0], inst.attrs.dimensions),
    "reverse": lambda rt, inst, ops, ctx: rt.xp.flip(ops[0], tuple(inst.attrs.dimensions)),
    "slice": lambda rt, inst, ops, ctx: ops[0][tuple(slice(s.start, s.limit, s.stride)
                                                     for s in inst.attrs.slice)],
    "concatenate": lambda rt, inst, ops, ctx: rt.xp.concatenate(
        ops, axis=inst.attrs.dimensions[0]),
    "tuple": lambda rt, inst, ops, ctx: tuple(ops),
    "get-tuple-element": lambda rt, inst, ops, ctx: ops[0][inst.attrs.index],
    "partition-id": lambda rt, inst, ops, ctx: _index(rt, inst, ops, ctx, ctx.partition_id),
    "replica-id": lambda rt, inst, ops, ctx: _index(rt, inst, ops, ctx, ctx.replica_id),
    "copy": lambda rt, inst, ops, ctx: ops[0] if isinstance(ops[0], tuple) else ops[0].copy(),
    "broadcast": _broadcast,
}


def _window(rt, inst: Instruction, index_operands: list, sizes) -> tuple[slice, ...]:
    """The clamped window of a dynamic slice (its few start indices read on the host)."""
    host = [rt.to_host(x, o.shape) for x, o in zip(index_operands, inst.operands[-len(
        index_operands):])]
    dims = inst.operands[0].shape.dims
    return _clamped_window(_start_indices(host, len(dims)), sizes, dims)


def _dynamic_slice(rt, inst, operands, ctx):
    window = _window(rt, inst, operands[1:], inst.attrs.dynamic_slice_sizes)
    return operands[0][window].copy()


def _dynamic_update_slice(rt, inst, operands, ctx):
    x, update = operands[:2]
    result = x.copy()
    result[_window(rt, inst, operands[2:], update.shape)] = update
    return result


KERNELS["dynamic-slice"] = _dynamic_slice
KERNELS["dynamic-update-slice"] = _dynamic_update_slice
KERNELS["gather"] = lambda rt, inst, ops, ctx: indexing.gather(inst, ops[0], ops[1], rt.xp)
KERNELS["pad"] = lambda rt, inst, ops, ctx: pad(ops[0], ops[1], inst.attrs.padding, rt.xp)


def _ordered(rt, x, order: list, dtype, work: np.dtype):
    x = rt.widen(x, dtype)
    if order != sorted(order):
        x = rt.xp.transpose(x, order)
    return rt.xp.ascontiguousarray(x.astype(work, copy=False))


def dot(rt, inst: Instruction, operands: list, ctx):
    """``dot`` as one (batched) ``xp.matmul`` in the accumulation type."""
    lhs, rhs = operands
    dtype = inst.shape.dtype
    work = compute_dtype(dtype.numpy)
    lb, lf, lc, rb, rc, rf = dot_dimensions(inst.attrs, lhs.ndim, rhs.ndim)
    batch, m, k = _size(lb, lhs.shape), _size(lf, lhs.shape), _size(lc, lhs.shape)
    n = _size(rf, rhs.shape)
    left = _ordered(rt, lhs, lb + lf + lc, inst.operands[0].shape.dtype, work)
    right = _ordered(rt, rhs, rb + rc + rf, inst.operands[1].shape.dtype, work)
    product = rt.xp.matmul(left.reshape(batch, m, k), right.reshape(batch, k, n))
    return rt.narrow(product.reshape(inst.shape.dims), dtype)


def convolution(rt, inst: Instruction, operands: list, ctx):
    """``convolution`` as the reference computes it (a GEMM per kernel tap, ``xp.matmul``:
    cuBLAS on a GPU) in the accumulation type."""
    lhs, rhs = (rt.widen(x, o.shape.dtype) for x, o in zip(operands, inst.operands))
    work = compute_dtype(inst.shape.dtype.numpy)
    return rt.narrow(contraction.convolution(inst, lhs, rhs, work, rt.xp), inst.shape.dtype)


def reduce(rt, inst: Instruction, operands: list, ctx):
    """A float sum or product over ``dimensions`` in the accumulation type, then the init."""
    x, init = operands
    dtype = inst.shape.dtype
    work = compute_dtype(dtype.numpy)
    axes = tuple(sorted(inst.attrs.dimensions))
    xc = rt.widen(x, inst.operands[0].shape.dtype).astype(work, copy=False)
    ic = rt.widen(init, inst.operands[1].shape.dtype).astype(work, copy=False)
    fold = rt.xp.sum if binary_reducer(inst.attrs.to_apply) == "add" else rt.xp.prod
    total = fold(xc, axis=axes, dtype=work)
    combined = ic + total if fold is rt.xp.sum else ic * total
    return rt.narrow(rt.xp.asarray(combined, work), dtype)


# ---------------------------------------------------------------------------------------------
# Sort: a recognised lexicographic comparator over the operands themselves becomes stable
# argsorts, minor key first (each sort keeps the order of the previous one among its ties).


def _sort_values(rt, key, operand, dtype):
    """The values ``key`` orders ``operand`` by, or None (the host rule decides)."""
    xp = rt.xp
    kind = key.comparison or default_comparison_type(dtype)
    values = rt.widen(operand, dtype)
    if dtype.is_float:
        values = values.astype(np.float64 if dtype.bits == 64 else np.float32, copy=False)
        if kind is ComparisonType.TOTALORDER:
            signed = values.view(np.int64 if dtype.bits == 64 else np.int32)
            mask = np.iinfo(signed.dtype).max
            return xp.where(signed < 0, signed ^ signed.dtype.type(mask), signed)
        # NaN under a FLOAT compare is no strict weak order: the reference's rule decides.
        return None if bool(xp.isnan(values).any()) else values
    if kind is ComparisonType.SIGNED and not dtype.is_signed and dtype is not PRED:
        return values.view(f"i{dtype.bits // 8}")
    if kind is ComparisonType.UNSIGNED and dtype.is_signed:
        return values.view(f"u{dtype.bits // 8}")
    return values


def _stable_argsort(xp, values, axis: int, descending: bool):
    if not descending:
        return xp.argsort(values, axis=axis, kind="stable")
    # Descending with ties in input order: sort the reversed slice ascending, map back.
    n = values.shape[axis]
    order = xp.argsort(xp.flip(values, axis=axis), axis=axis, kind="stable")
    return xp.flip(n - 1 - order, axis=axis)


def sort(rt, inst: Instruction, operands: list, ctx):
    """``sort`` by argsorts (see ``_sortable``); NotImplemented sends it to the host rule."""
    xp = rt.xp
    (axis,) = inst.attrs.dimensions
    order = None
    if operands[0].ndim and operands[0].shape[axis] > 1:
        keys = recognize_comparator(inst.attrs.to_apply)
        assert keys is not None  # chosen for a recognized comparator only (_sortable)
        for key in reversed(keys):
            values = _sort_values(rt, key, operands[key.operand],
                                  inst.operands[key.operand].shape.dtype)
            if values is None:
                return NotImplemented
            if order is not None:
                values = xp.take_along_axis(values, order, axis=axis)
            step = _stable_argsort(xp, values, axis, key.descending)
            order = step if order is None else xp.take_along_axis(order, step, axis=axis)
    results = [x.copy() if order is None else xp.take_along_axis(x, order, axis=axis)
               for x in operands]
    return tuple(results) if len(inst.operands) > 1 or not isinstance(
        inst.shape, ArrayShape) else results[0]


def rng_bit_generator(rt, inst: Instruction, operands: list, ctx):
    """XLA's Threefry/Philox expansions, bit-exact with the reference (its own code over
    ``xp``); the small state is read on the host."""
    state = rt.to_host(operands[0], inst.operands[0].shape)
    new_state, bits = random.rng_bit_generator(inst, state, rt.xp)
    out = inst.shape.elements[1].dtype
    return rt.to_device(new_state, inst.shape.elements[0]), bits.view(rt.storage(out))


def _sortable(inst: Instruction) -> bool:
    """A sort whose comparator is a lexicographic LT/GT of the operands themselves."""
    keys = recognize_comparator(inst.attrs.to_apply)
    return keys is not None and all(
        key.expression is key.parameter and inst.operands[key.operand].shape.dtype in SUPPORTED
        for key in keys)


def kernel_for(inst: Instruction):
    """The kernel that runs ``inst`` on the device, or None (a counted host fallback)."""
    name = inst.op.name
    if name == "bitcast" and not (_default_layout(inst.shape)
                                  and _default_layout(inst.operands[0].shape)):
        return None
    if name in KERNELS:
        if name == "copy" and isinstance(inst.shape, ArrayShape) and inst.shape.dtype.bits < 8:
            return None
        return KERNELS[name]
    if name == "sort":
        return sort if _sortable(inst) else None
    if name == "rng-bit-generator":
        return rng_bit_generator if inst.shape.elements[1].dtype in SUPPORTED else None
    if not isinstance(inst.shape, ArrayShape):
        return None
    dtype = inst.shape.dtype
    if dtype is PRED or dtype not in SUPPORTED:
        return None
    if name == "dot":
        return dot
    if name == "convolution":
        return convolution
    if (name == "reduce" and len(inst.operands) == 2 and dtype.is_float
            and binary_reducer(inst.attrs.to_apply) in ("add", "multiply")):
        return reduce
    return None
