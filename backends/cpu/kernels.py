"""Kernels of the ops the CPU backend runs outside generated fusions: data movement as numpy
views and copies, dot through BLAS into a preallocated output, and the collectives split
into a start (at the communicator) and a wait.

``KERNELS`` maps an opcode to ``kernel(inst, operands, ctx) -> value`` with the reference
evaluator's calling convention; ``kernel_for(inst)`` says whether one applies to a particular
instruction (dtypes and layouts included). An op with no kernel runs the reference rule and is
counted as a fallback by the executable.

Dot: operands are moved to ``(batch, free, contracting)`` and ``(batch, contracting, free)``
order, converted to the accumulation type (f32 for f16/bf16; integers in their own type, which
numpy's matmul wraps without BLAS) and multiplied by ``numpy.matmul`` into the output buffer:
the reference's computation, with the output preallocated.
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.reference.collectives import (
    _communicator_op,
    _has_channel,
    _required_group,
)
from xla_spmd.backends.reference.contraction import dot_dimensions
from xla_spmd.backends.reference.evaluator import EVALUATE
from xla_spmd.backends.reference.indexing import _reducer_kind
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.backends.reference.reduction import _fast_reduce, binary_reducer
from xla_spmd.ir import ArrayShape, Instruction
from xla_spmd.ir.dtypes import PRED

# ---------------------------------------------------------------------------------------------
# Data movement


def _default_layout(shape) -> bool:
    return shape.layout is None or tuple(shape.layout) == tuple(range(shape.rank - 1, -1, -1))


KERNELS = {
    "reshape": lambda inst, ops, ctx: np.reshape(ops[0], inst.shape.dims),
    "bitcast": lambda inst, ops, ctx: np.reshape(ops[0], inst.shape.dims),
    "transpose": lambda inst, ops, ctx: np.transpose(ops[0], inst.attrs.dimensions),
    "slice": lambda inst, ops, ctx: ops[0][tuple(slice(s.start, s.limit, s.stride)
                                                 for s in inst.attrs.slice)],
    "concatenate": lambda inst, ops, ctx: np.concatenate(ops, axis=inst.attrs.dimensions[0]),
    "tuple": lambda inst, ops, ctx: tuple(ops),
    "get-tuple-element": lambda inst, ops, ctx: ops[0][inst.attrs.index],
    "partition-id": lambda inst, ops, ctx: np.array(ctx.partition_id, np.uint32),
    "replica-id": lambda inst, ops, ctx: np.array(ctx.replica_id, np.uint32),
    "copy": lambda inst, ops, ctx: ops[0] if isinstance(ops[0], tuple) else ops[0].copy(),
}


def _broadcast(inst, operands, ctx):
    (x,) = operands
    dims = inst.attrs.dimensions
    placed = [1] * inst.shape.rank
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    for i in order:
        placed[dims[i]] = inst.shape.dims[dims[i]]
    return np.broadcast_to(np.transpose(x, order).reshape(placed), inst.shape.dims)


KERNELS["broadcast"] = _broadcast


# ---------------------------------------------------------------------------------------------
# Dot


def _size(dims, shape) -> int:
    return int(np.prod([shape[d] for d in dims], dtype=np.int64))


def _ordered(x: np.ndarray, order: list, work: np.dtype) -> np.ndarray:
    if order == sorted(order) and x.flags.c_contiguous:
        return x.astype(work, copy=False)
    return np.transpose(x, order).astype(work)


def dot(inst: Instruction, operands: list, ctx) -> np.ndarray:
    lhs, rhs = operands
    attrs = inst.attrs
    result_dtype = inst.shape.dtype.numpy
    work = compute_dtype(result_dtype)
    lb, lf, lc, rb, rc, rf = dot_dimensions(attrs, lhs.ndim, rhs.ndim)
    batch, m, k = _size(lb, lhs.shape), _size(lf, lhs.shape), _size(lc, lhs.shape)
    n = _size(rf, rhs.shape)
    # The reference's operand copies (astype keeps a transposed memory order), so BLAS sees
    # the same layouts and sums in the same order: results agree bit for bit. An operand
    # already in order is used as it is (the reference's copy of it is C-ordered too).
    left = _ordered(lhs, lb + lf + lc, work).reshape(batch, m, k)
    right = _ordered(rhs, rb + rc + rf, work).reshape(batch, k, n)
    out = np.empty(inst.shape.dims, work)
    with np.errstate(all="ignore"):
        np.matmul(left, right, out=out.reshape(batch, m, n))
    return out if work == result_dtype else out.astype(result_dtype)


KERNELS["dot"] = dot


def reduce(inst: Instruction, operands: list, ctx) -> np.ndarray:
    """A reduce with a plain binary reducer: numpy's ufunc reduction (pairwise for sums),
    the reference's own kernel, so sums agree bit for bit."""
    x, init = operands
    return _fast_reduce(binary_reducer(inst.attrs.to_apply), x, np.asarray(init),
                        tuple(sorted(inst.attrs.dimensions)), inst.shape.dtype.numpy)


KERNELS["reduce"] = reduce


# The indexing ops run through precomputed launches (``indexing.LAUNCHES``); the reference
# rule is their kernel with the reference calling convention.
INDEXING = ("gather", "scatter", "dynamic-slice", "dynamic-update-slice")
KERNELS.update({name: EVALUATE.lookup(name) for name in INDEXING})


def kernel_for(inst: Instruction):
    """The kernel that runs ``inst``, or None (the reference rule runs it)."""
    name = inst.op.name
    if name == "bitcast" and not (_default_layout(inst.shape)
                                  and _default_layout(inst.operands[0].shape)):
        return None
    if name == "dot":
        dtype = inst.shape.dtype
        if dtype is PRED or dtype.is_complex or dtype.numpy is None or dtype.bits < 8:
            return None
    if name == "copy" and isinstance(inst.shape, ArrayShape) and inst.shape.dtype.bits < 8:
        return None
    if name == "reduce" and (len(inst.operands) != 2
                             or binary_reducer(inst.attrs.to_apply) is None):
        return None
    if name == "scatter" and (len(inst.operands) != 3 or inst.operands[0].shape.dtype
                              != inst.operands[2].shape.dtype
                              or _reducer_kind(inst.attrs.to_apply) is None):
        return None  # a reducer called per element: the reference's loop
    return KERNELS.get(name)


# ---------------------------------------------------------------------------------------------
# Collectives: start at the communicator now, wait later

ASYNC_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                     "collective-permute")


_VARIADIC = ("all-reduce", "all-gather", "reduce-scatter")


def can_start(inst: Instruction) -> bool:
    """Whether ``inst`` runs as start/wait pairs: array operands, one array result each
    (several operands only for all-reduce, all-gather and reduce-scatter)."""
    if inst.op.name not in ASYNC_COLLECTIVES or not inst.operands:
        return False
    if any(not isinstance(o.shape, ArrayShape) for o in inst.operands):
        return False
    if len(inst.operands) > 1:
        return inst.op.name in _VARIADIC and all(
            isinstance(s, ArrayShape) for s in getattr(inst.shape, "elements", ()))
    if not isinstance(inst.shape, ArrayShape):
        return False
    return inst.op.name != "all-to-all" or bool(inst.attrs.dimensions)


class _Handles:
    """The handles of a collective's operands; ``wait()`` gives the tuple of results."""

    def __init__(self, handles: list):
        self.handles = handles

    def wait(self) -> tuple:
        return tuple(handle.wait() for handle in self.handles)


def start(inst: Instruction, operands: list, ctx, groups: dict):
    """Start collective ``inst``; returns a handle whose ``wait()`` gives the result (groups
    and reductions as the reference evaluator forms them; ``groups`` caches each device's
    group of ``inst``)."""
    if len(operands) > 1:
        return _Handles([_start_one(inst, x, ctx, groups) for x in operands])
    return _start_one(inst, operands[0], ctx, groups)


def _group(inst: Instruction, ctx, groups: dict) -> list[int]:
    """The device's group, from ``groups`` (device -> group) once computed: expanding iota
    replica groups costs more than a small collective."""
    group = groups.get(ctx.device_id)
    if group is None:
        group = groups[ctx.device_id] = _required_group(inst, ctx, inst.op.name)
    return group


def _start_one(inst: Instruction, operand: np.ndarray, ctx, groups: dict):
    name, attrs, communicator = inst.op.name, inst.attrs, ctx.communicator
    x = np.asarray(operand, order="C")  # keeps 0-d arrays 0-d
    if name == "collective-permute":
        partitions = ctx.num_partitions
        if _has_channel(attrs):
            def device(i):
                return ctx.replica_id * partitions + i
        else:
            def device(i):
                return i * partitions + ctx.partition_id
        pairs = [(device(s), device(t)) for s, t in attrs.source_target_pairs]
        return communicator.collective_permute_start(x, pairs)
    group = _group(inst, ctx, groups)
    if name == "all-reduce":
        return communicator.all_reduce_start(x, group, _communicator_op(inst, ctx))
    (dim,) = attrs.dimensions
    if name == "all-gather":
        return communicator.all_gather_start(x, group, dim)
    if name == "reduce-scatter":
        return communicator.reduce_scatter_start(x, group, dim, _communicator_op(inst, ctx))
    return communicator.all_to_all_start(x, group, dim, dim)
