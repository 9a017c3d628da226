"""Launch plans: each step of a program bound once, at compile time, into a closure
``launch(values, ctx) -> value`` that does only what must happen per call.

A small program (the README's transformer: ~250 steps per device, arrays of a few KB) spends
its time in Python, not in kernels, and with N in-process devices that Python runs N times
under one GIL. So everything that depends only on the instruction is decided here: shapes,
dtypes, axes, transposes, reducers, and which kernel to call. What is left per call is
reading the operand slots, allocating the output and calling the kernel.

Generated kernels are called with the addresses of the numpy array objects (``id()``) through
an entry that reads each array's data pointer itself (``emitter.render_object_entry``): taking
``ndarray.ctypes.data`` in Python costs more than a small kernel. Every array passed that way
is a C-contiguous ``numpy.ndarray`` held by a local of the launch for the whole call.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xla_spmd.backends.cpu import indexing, kernels
from xla_spmd.backends.cpu.program import Step
from xla_spmd.backends.cpu.renderer import accumulator_dtype
from xla_spmd.backends.reference.contraction import dot_dimensions
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.backends.reference.reduction import _fast_reduce, binary_reducer

Launch = Callable[[list, object], object]

_asarray = np.asarray
_empty = np.empty


def _contiguous(value) -> np.ndarray:
    """``value`` as a C-contiguous ndarray (0-d kept 0-d; numpy scalars become arrays)."""
    return _asarray(value, order="C")


def fusion_launch(step: Step, function) -> Launch:
    """A generated loop or reduce fusion; ``function`` is its object entry (array ids)."""
    fusion, inst = step.fusion, step.inst
    reads = step.reads
    dims, dtype = inst.shape.dims, inst.shape.dtype.numpy
    if fusion.kind == "loop":
        if inst.shape.num_elements == 0:
            return lambda values, ctx: _empty(dims, dtype)
        if len(reads) == 1:
            (a,) = reads

            def launch_one(values, ctx):
                x = _contiguous(values[a])
                out = _empty(dims, dtype)
                function(id(out), id(x))
                return out
            return launch_one
        if len(reads) == 2:
            a, b = reads

            def launch_two(values, ctx):
                x, y = _contiguous(values[a]), _contiguous(values[b])
                out = _empty(dims, dtype)
                function(id(out), id(x), id(y))
                return out
            return launch_two

        def launch_loop(values, ctx):
            inputs = [_contiguous(values[s]) for s in reads]
            out = _empty(dims, dtype)
            function(id(out), *map(id, inputs))
            return out
        return launch_loop
    work = accumulator_dtype(inst.shape.dtype)
    init_slot = reads[fusion.inputs.index(inst.operands[1])]
    empty_input = inst.operands[0].shape.num_elements == 0

    def launch_reduce(values, ctx):
        accumulator = np.full(dims, values[init_slot], work)
        if not empty_input:
            inputs = [_contiguous(values[s]) for s in reads]
            function(id(accumulator), *map(id, inputs))
        return accumulator if work == dtype else accumulator.astype(dtype)
    return launch_reduce


def _size(dims, shape) -> int:
    return int(np.prod([shape[d] for d in dims], dtype=np.int64))


def dot_launch(step: Step) -> Launch:
    """``kernels.dot`` with its shapes, orders and dtypes decided once."""
    inst = step.inst
    lhs_shape, rhs_shape = (o.shape.dims for o in inst.operands)
    result_dtype = inst.shape.dtype.numpy
    work = compute_dtype(result_dtype)
    lb, lf, lc, rb, rc, rf = dot_dimensions(inst.attrs, len(lhs_shape), len(rhs_shape))
    batch, m, k = (_size(d, lhs_shape) for d in (lb, lf, lc))
    n = _size(rf, rhs_shape)
    left_order, right_order = lb + lf + lc, rb + rc + rf
    left_sorted, right_sorted = left_order == sorted(left_order), right_order == sorted(
        right_order)
    left_shape, right_shape, out_shape = (batch, m, k), (batch, k, n), (batch, m, n)
    dims = inst.shape.dims
    a, b = step.reads
    matmul = np.matmul

    def operand(x, order, in_order, shape):
        # The reference's operand copies (see kernels.dot): an operand already in order is
        # used as it is, any other is transposed into a C-ordered copy.
        if in_order and x.flags.c_contiguous:
            return x.astype(work, copy=False).reshape(shape)
        return np.transpose(x, order).astype(work).reshape(shape)

    def launch_dot(values, ctx):
        left = operand(values[a], left_order, left_sorted, left_shape)
        right = operand(values[b], right_order, right_sorted, right_shape)
        out = _empty(dims, work)
        matmul(left, right, out=out.reshape(out_shape))  # under run()'s errstate
        return out if work == result_dtype else out.astype(result_dtype)
    return launch_dot


def reduce_launch(step: Step) -> Launch:
    """``kernels.reduce`` (numpy's reduction, the reference's own) with its reducer and axes
    decided once."""
    inst = step.inst
    name = binary_reducer(inst.attrs.to_apply)
    axes = tuple(sorted(inst.attrs.dimensions))
    dtype = inst.shape.dtype.numpy
    a, b = step.reads
    if name in ("add", "multiply") and dtype.kind == "f" and compute_dtype(dtype) == dtype:
        # _fast_reduce's steps for a float type computed in itself: its copy of the data
        # (skipped when that copy would have the same layout), numpy's reduction, then the
        # initial value combined first.
        ufunc = np.add if name == "add" else np.multiply

        def launch_float(values, ctx):
            x = values[a]
            if not (type(x) is np.ndarray and x.dtype == dtype and x.flags.c_contiguous):
                x = _asarray(x).astype(dtype)
            return _asarray(ufunc(values[b], ufunc.reduce(x, axis=axes, dtype=dtype)))
        return launch_float

    def launch_reduce(values, ctx):
        return _fast_reduce(name, _asarray(values[a]), _asarray(values[b]), axes, dtype)
    return launch_reduce


def _broadcast_launch(step: Step) -> Launch:
    inst = step.inst
    dims = inst.attrs.dimensions
    placed = [1] * inst.shape.rank
    order = tuple(sorted(range(len(dims)), key=lambda i: dims[i]))
    for i in order:
        placed[dims[i]] = inst.shape.dims[dims[i]]
    placed, shape = tuple(placed), inst.shape.dims
    (a,) = step.reads
    broadcast_to = np.broadcast_to
    if order == tuple(range(len(order))):
        return lambda values, ctx: broadcast_to(_asarray(values[a]).reshape(placed), shape)
    return lambda values, ctx: broadcast_to(
        _asarray(values[a]).transpose(order).reshape(placed), shape)


def kernel_launch(step: Step) -> Launch:
    """A kernel step: data movement bound to its attributes; dot and reduce as above; any
    other kernel through ``kernels.KERNELS`` with the reference calling convention."""
    inst, name, reads = step.inst, step.inst.op.name, step.reads
    if name in ("reshape", "bitcast"):
        (a,) = reads
        dims = inst.shape.dims
        return lambda values, ctx: _asarray(values[a]).reshape(dims)
    if name == "transpose":
        (a,) = reads
        permutation = tuple(inst.attrs.dimensions)
        return lambda values, ctx: _asarray(values[a]).transpose(permutation)
    if name == "slice":
        (a,) = reads
        index = tuple(slice(s.start, s.limit, s.stride) for s in inst.attrs.slice)
        return lambda values, ctx: values[a][index]
    if name == "get-tuple-element":
        (a,) = reads
        element = inst.attrs.index
        return lambda values, ctx: values[a][element]
    if name == "tuple":
        return lambda values, ctx: tuple([values[s] for s in reads])
    if name == "broadcast":
        return _broadcast_launch(step)
    if name == "dot":
        return dot_launch(step)
    if name == "reduce":
        return reduce_launch(step)
    if name in indexing.LAUNCHES:
        return indexing.LAUNCHES[name](step)
    return generic_launch(step, kernels.KERNELS[name])


def generic_launch(step: Step, function) -> Launch:
    """``function(inst, operands, ctx)``: a rule with the reference calling convention."""
    inst, reads = step.inst, step.reads
    return lambda values, ctx: function(inst, [values[s] for s in reads], ctx)
