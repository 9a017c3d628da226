"""Kernels of the ops the GPU backend runs outside generated fusions, written once over the
array module ``rt.xp`` (CuPy on a GPU, numpy in the host-only check): data movement, dot
through ``xp.matmul`` (cuBLAS on a GPU, batch dims as a batched GEMM), and the float sums
and products of ``reduce``.

``kernel_for(inst)`` is the kernel ``kernel(rt, inst, operands, ctx) -> value`` of an
instruction, or None: the executable then runs the reference rule on the host (operands
copied down, the result copied up) and counts the fallback.

Dot: operands are moved to ``(batch, free, contracting)`` and ``(batch, contracting, free)``
order, widened to the accumulation type (f32 for f16/bf16, integers in their own type, which
wraps) and multiplied by ``xp.matmul``: the reference's computation.
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.cpu.kernels import _default_layout, _size
from xla_spmd.backends.gpu.renderer import SUPPORTED
from xla_spmd.backends.reference.contraction import dot_dimensions
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.backends.reference.reduction import binary_reducer
from xla_spmd.ir import ArrayShape, Instruction
from xla_spmd.ir.dtypes import PRED


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
    if not isinstance(inst.shape, ArrayShape):
        return None
    dtype = inst.shape.dtype
    if dtype is PRED or dtype not in SUPPORTED:
        return None
    if name == "dot":
        return dot
    if (name == "reduce" and len(inst.operands) == 2 and dtype.is_float
            and binary_reducer(inst.attrs.to_apply) in ("add", "multiply")):
        return reduce
    return None
