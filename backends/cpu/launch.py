"""Launch plans: each step of a program bound once, at compile time, into a closure
``launch(values, ctx) -> value`` that does only what must happen per call.

A small program (the README's transformer: ~250 steps per device, arrays of a few KB) spends
its time in Python, not in kernels, and with N in-process devices that Python runs N times
under one GIL. So everything that depends only on the instruction is decided here: shapes,
dtypes, axes, transposes, reducers, and which kernel to call. What is left per call is
reading the operand slots, allocating the output and calling the kernel.

Generated kernels are called with the addresses of the numpy array objects (``id()``) through
an entry that reads each array's data pointer itself (``emitter.render_stacked_entry``, for
one device: ``n = 1``): taking ``ndarray.ctypes.data`` in Python costs more than a small
kernel. Every array passed that way is a C-contiguous ``numpy.ndarray`` held by a local of
the launch for the whole call.
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.cpu import indexing, kernels, random
from xla_spmd.backends.cpu.convolution import conv_kernel
from xla_spmd.backends.cpu.program import Step, output_allocator
from xla_spmd.backends.cpu.renderer import accumulator_dtype
from xla_spmd.backends.cpu.select_scatter import select_and_scatter_kernel

Launch = kernels.Launch

_asarray = np.asarray
_empty = np.empty


def _contiguous(value) -> np.ndarray:
    """``value`` as a C-contiguous ndarray (0-d kept 0-d; numpy scalars become arrays)."""
    return _asarray(value, order="C")


def fusion_launch(step: Step, function) -> Launch:
    """A generated loop or reduce fusion; ``function(1, out, in0, ...)`` is its stacked
    entry (``emitter.render_stacked_entry``) called with array ids, for one device."""
    fusion, inst = step.fused, step.inst
    reads = step.reads
    if fusion.kind == "rng":
        return _rng_launch(step, function)
    dims, dtype = inst.shape.dims, inst.shape.dtype.array_dtype
    if fusion.kind == "loop":
        if inst.shape.num_elements == 0:
            return lambda values, ctx: _empty(dims, dtype)
        if fusion.inplace is not None:
            return _inplace_launch(reads, fusion.inplace, function)
        allocate = output_allocator(inst)  # a large output is a recycled buffer
        if len(reads) == 1:
            (a,) = reads

            def launch_one(values, ctx):
                x = _contiguous(values[a])
                out = allocate(dims, dtype)
                function(1, id(out), id(x))
                return out
            return launch_one
        if len(reads) == 2:
            a, b = reads

            def launch_two(values, ctx):
                x, y = _contiguous(values[a]), _contiguous(values[b])
                out = allocate(dims, dtype)
                function(1, id(out), id(x), id(y))
                return out
            return launch_two

        def launch_loop(values, ctx):
            inputs = [_contiguous(values[s]) for s in reads]
            out = allocate(dims, dtype)
            function(1, id(out), *map(id, inputs))
            return out
        return launch_loop
    work = accumulator_dtype(inst.shape.dtype)
    init_slot = reads[fusion.inputs.index(inst.operands[1])]
    empty_input = inst.operands[0].shape.num_elements == 0

    def launch_reduce(values, ctx):
        accumulator = np.full(dims, values[init_slot], work)
        if not empty_input:
            inputs = [_contiguous(values[s]) for s in reads]
            function(1, id(accumulator), *map(id, inputs))
        return accumulator if work == dtype else accumulator.astype(dtype)
    return launch_reduce


def _inplace_launch(reads: tuple, position: int, function) -> Launch:
    """A loop fusion written over its input at ``position`` (``Fusion.inplace``): the plan
    made sure that input dies here and no live value shares its buffer."""
    def launch_inplace(values, ctx):
        inputs = [_contiguous(values[s]) for s in reads]
        out = inputs[position]  # a copy if it was not C-contiguous: then written over that
        function(1, id(out), *map(id, inputs))
        return out
    return launch_inplace


def _rng_launch(step: Step, function, count: int | None = None) -> Launch:
    """An rng-bit-generator kernel through its stacked entry ``function``: the bits
    generated, the new state on the host (with ``count``: on stacked values; else on one
    device's)."""
    inst, (a,) = step.inst, step.reads
    shape = inst.shape.elements[1]
    lead, devices = ((), 1) if count is None else ((count,), count)
    dims, unsigned = lead + shape.dims, np.dtype(f"u{shape.dtype.bits // 8}")
    dtype, size = shape.dtype.array_dtype, shape.num_elements
    state_dtype = np.dtype(np.uint64)
    next_state = random.next_state

    def launch_rng(values, ctx):
        state = _asarray(values[a])
        if state.dtype != state_dtype:  # s64: the same bits, as the reference reads them
            state = state.astype(state_dtype)
        state = _asarray(state, order="C")
        bits = _empty(dims, unsigned)
        if size:
            function(devices, id(bits), id(state))
        return next_state(inst, state), bits.view(dtype)
    return launch_rng


def kernel_launch(step: Step, epilogue=None) -> Launch:
    """A kernel step: data movement bound to its attributes; dot and reduce as above; any
    other kernel through ``kernels.KERNELS`` with the reference calling convention.
    ``epilogue``: a dot's epilogue bound (``epilogue.binder``), run by ``dot_kernel``."""
    inst, name, reads = step.inst, step.inst.op.name, step.reads
    if step.folded is not None:  # a dot's transpose, computed as the swapped product
        return kernels.dot_kernel(step.folded, reads, transposed=inst, epilogue=epilogue)
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
        return kernels.broadcast_kernel(inst, reads)
    if name == "dot":
        return kernels.dot_kernel(inst, reads, epilogue=epilogue)
    if name == "reduce":
        return kernels.reduce_kernel(inst, reads)
    if name == "convolution":
        return conv_kernel(inst, reads)
    if name == "select-and-scatter":
        return select_and_scatter_kernel(inst, reads)
    if name == "sort":
        return kernels.sort_kernel(inst, reads)
    if name in indexing.LAUNCHES:
        return indexing.LAUNCHES[name](step)
    return generic_launch(step, kernels.KERNELS[name])


def generic_launch(step: Step, function) -> Launch:
    """``function(inst, operands, ctx)``: a rule with the reference calling convention."""
    inst, reads = step.inst, step.reads
    return lambda values, ctx: function(inst, [values[s] for s in reads], ctx)
