"""Stacked execution: the D in-process devices of a lockstep program run as one.

Every device runs the same SPMD program on values of the same shapes, so each value of all
devices is held as one array of shape ``(D, *shape)`` (a tuple of such for a tuple value:
"stacked"), and each step is launched once for all devices instead of once per device. This
divides the per-step Python cost (the whole cost of a small program, such as the README's
transformer step) by D.

How each step runs stacked:

* a generated fusion: its stacked entry (``emitter.render_stacked_entry``) calls the
  device's own kernel on each device's slice, one after another;
* dot: one ``numpy.matmul`` over ``(D, batch, m, k) @ (D, batch, k, n)``, every matrix laid
  out as in the device's own call, so BLAS makes the same call per matrix;
* reduce, the numpy ufuncs of transcendentals, data movement (reshape, transpose, slice,
  broadcast, concatenate, tuples) and constants: the same numpy operation with a leading
  device axis;
* collectives of named reductions, all-gather, reduce-scatter, all-to-all and
  collective-permute over groups that split the devices evenly: index arithmetic over the
  device axis, reductions as a left fold in group order as the in-process communicator does;
* anything else (indexing ops, control flow, fallbacks, other collectives): each device's own
  launch on its slice (``_DeviceValues``), collectives through the communicators, then the
  results stacked.

Every device's result is bit for bit that of running it alone: each device's elements go
through the same kernels in the same order (the tests compare the three ways of running).

Example: on 8 devices, ``add(x, y)`` of ``f32[4]`` values runs as one call of the stacked
entry on two ``f32[8,4]`` arrays, and an all-reduce over ``{{0,1},{2,3},...}`` as
``x[[0,2,4,6]] + x[[1,3,5,7]]`` scattered back to both members of each group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from xla_spmd.backends.cpu import indexing, kernels, launch
from xla_spmd.backends.cpu.program import Program, Step
from xla_spmd.backends.cpu.renderer import accumulator_dtype
from xla_spmd.backends.reference.collectives import (
    _communicator_op,
    _has_channel,
    _required_group,
)
from xla_spmd.backends.reference.numeric import compute_dtype
from xla_spmd.backends.reference.reduction import _fast_reduce, binary_reducer
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import ArrayShape, Instruction, TupleShape
from xla_spmd.ir.dtypes import reduction_dtype

StackedLaunch = Callable[[list, "Environment"], object]
"""A step bound for stacked values: ``launch(values, env) -> stacked value``."""

_asarray, _empty = np.asarray, np.empty


class Environment:
    """What a stacked run needs per call: each device's context (for the steps each device
    runs on its own slice)."""

    __slots__ = ("contexts",)

    def __init__(self, contexts: Sequence):
        self.contexts = contexts


def stack(values: Sequence) -> object:
    """The stacked value of each device's ``values`` (tuples stacked element by element)."""
    first = values[0]
    if isinstance(first, tuple):
        return tuple(stack([v[k] for v in values]) for k in range(len(first)))
    return np.stack([_asarray(v) for v in values])


def device_slice(value, device: int) -> object:
    """Device ``device``'s value of a stacked ``value``."""
    if isinstance(value, tuple):
        return tuple(device_slice(v, device) for v in value)
    return value[device]


class _DeviceValues:
    """One device's view of the stacked slots: ``view[slot]`` is its slice."""

    __slots__ = ("values", "device")

    def __init__(self, values: list, device: int):
        self.values, self.device = values, device

    def __getitem__(self, slot: int) -> object:
        return device_slice(self.values[slot], self.device)


def stackable(program: Program) -> bool:
    """Whether every value of ``program`` can be stacked: arrays and tuples of arrays."""
    def fits(shape) -> bool:
        if isinstance(shape, TupleShape):
            return all(fits(s) for s in shape.elements)
        return isinstance(shape, ArrayShape) and not shape.is_token
    return all(fits(inst.shape) for inst in program.computation.instructions)


# ---------------------------------------------------------------------------------------------
# Steps


def bind(step: Step, device_launch, entry, contexts: Sequence) -> StackedLaunch:
    """``step`` bound for stacked values of ``len(contexts)`` devices; ``device_launch`` is
    its launch for one device, ``entry(fusion)`` a fusion's stacked entry, ``contexts`` each
    device's context (for collective groups)."""
    kind, count = step.kind, len(contexts)
    if kind == "fusion":
        return fusion_launch(step, entry(step.fusion), count)
    if kind == "constant":
        value = stack([step.value] * count)
        return lambda values, env: value
    if kind == "wait":  # the start computed the result
        slot = step.slot
        return lambda values, env: values[slot]
    if kind == "start":
        return collective_launch(step, contexts) or collective_per_device(step)
    if kind == "kernel":
        return kernel_launch(step, count, device_launch)
    if kind == "ufunc":  # numpy's elementwise ufunc, the device axis in front
        function, inst, reads = step.function, step.inst, step.reads
        return lambda values, env: function(inst, [values[s] for s in reads], None)
    return per_device(device_launch)  # control flow and fallbacks: each device on its own


def per_device(launch) -> StackedLaunch:
    """``launch(values, ctx)`` (a device's own launch) run for each device on its slices."""
    def launch_each(values, env):
        return stack([launch(_DeviceValues(values, d), ctx)
                      for d, ctx in enumerate(env.contexts)])
    return launch_each


def fusion_launch(step: Step, function, count: int) -> StackedLaunch:
    """A generated fusion through its stacked entry ``function(n, out, in0, ...)``."""
    fusion, inst, reads = step.fusion, step.inst, step.reads
    assert fusion is not None  # a fusion step
    if fusion.kind == "rng":
        return launch._rng_launch(step, function, count)
    dims = (count, *inst.shape.dims)
    dtype = inst.shape.dtype.numpy
    if inst.shape.num_elements == 0:
        return lambda values, env: _empty(dims, dtype)
    if fusion.kind == "loop":
        position = fusion.inplace

        def launch_loop(values, env):
            inputs = [_asarray(values[s], order="C") for s in reads]
            # over the input the plan lets it write over (its stacked value is as fresh)
            out = _empty(dims, dtype) if position is None else inputs[position]
            function(count, id(out), *map(id, inputs))
            return out
        return launch_loop
    work = accumulator_dtype(inst.shape.dtype)
    init_slot = reads[fusion.inputs.index(inst.operands[1])]
    init_shape = (count,) + (1,) * inst.shape.rank
    empty_input = inst.operands[0].shape.num_elements == 0

    def launch_reduce(values, env):
        # np.full's own steps: an empty buffer, the fill value copied in unsafely
        accumulator = _empty(dims, work)
        np.copyto(accumulator, _asarray(values[init_slot]).reshape(init_shape),
                  casting="unsafe")
        if not empty_input:
            inputs = [_asarray(values[s], order="C") for s in reads]
            function(count, id(accumulator), *map(id, inputs))
        return accumulator if work == dtype else accumulator.astype(dtype)
    return launch_reduce


def _shifted(axes) -> tuple[int, ...]:
    return tuple(a + 1 for a in axes)


def kernel_launch(step: Step, count: int, device_launch) -> StackedLaunch:
    """A kernel step stacked where the kernel has a stacked form, else ``device_launch`` per
    device."""
    inst, name, reads = step.inst, step.inst.op.name, step.reads
    if step.folded is not None:  # a dot's transpose, computed as the swapped product
        return kernels.dot_kernel(step.folded, reads, count, transposed=inst)
    if name in ("reshape", "bitcast"):
        (a,) = reads
        dims = (count, *inst.shape.dims)
        return lambda values, env: _asarray(values[a]).reshape(dims)
    if name == "transpose":
        (a,) = reads
        permutation = (0, *_shifted(inst.attrs.dimensions))
        return lambda values, env: _asarray(values[a]).transpose(permutation)
    if name == "slice":
        (a,) = reads
        index = (slice(None),) + tuple(slice(s.start, s.limit, s.stride)
                                       for s in inst.attrs.slice)
        return lambda values, env: values[a][index]
    if name == "get-tuple-element":
        (a,) = reads
        element = inst.attrs.index
        return lambda values, env: values[a][element]
    if name == "tuple":
        return lambda values, env: tuple([values[s] for s in reads])
    if name == "concatenate":
        axis = inst.attrs.dimensions[0] + 1
        return lambda values, env: np.concatenate([values[s] for s in reads], axis=axis)
    if name == "partition-id":
        return lambda values, env: np.arange(count, dtype=np.uint32)
    if name == "broadcast":
        return _broadcast(inst, reads, count)
    if name == "dot":
        return kernels.dot_kernel(inst, reads, count)
    if name == "reduce":
        return _reduce(inst, reads, count)
    if name in indexing.STACKED:
        bound = indexing.LAUNCHES[name](step, count)
        return lambda values, env: bound(values, None)
    return per_device(device_launch)


def _broadcast(inst: Instruction, reads: tuple, count: int) -> StackedLaunch:
    dims = inst.attrs.dimensions
    placed = [1] * inst.shape.rank
    order = tuple(sorted(range(len(dims)), key=lambda i: dims[i]))
    for i in order:
        placed[dims[i]] = inst.shape.dims[dims[i]]
    placed, shape = (count, *placed), (count, *inst.shape.dims)
    permutation = (0, *_shifted(order))
    (a,) = reads
    # A new C-contiguous array, as kernels.broadcast_kernel (each device's slice is then
    # laid out as the reference's broadcast: dots and sums over it give its bits).
    return lambda values, env: _asarray(np.broadcast_to(
        _asarray(values[a]).transpose(permutation).reshape(placed), shape), order="C")


def _reduce(inst: Instruction, reads: tuple, count: int) -> StackedLaunch:
    """``kernels.reduce_kernel`` with a device axis in front (the reduced axes shifted, the
    initial value broadcast along the kept dims)."""
    name = binary_reducer(inst.attrs.to_apply)
    assert name is not None  # kernels.kernel_for takes only a plain binary reducer's reduce
    axes = _shifted(sorted(inst.attrs.dimensions))
    dtype = inst.shape.dtype.array_dtype
    init_shape = (count,) + (1,) * inst.shape.rank
    a, b = reads
    if name in ("add", "multiply") and dtype.kind == "f" and compute_dtype(dtype) == dtype:
        ufunc = np.add if name == "add" else np.multiply

        def launch_float(values, env):
            x = values[a]
            if not (type(x) is np.ndarray and x.dtype == dtype and x.flags.c_contiguous):
                x = _asarray(x).astype(dtype)
            return ufunc(_asarray(values[b]).reshape(init_shape),
                         ufunc.reduce(x, axis=axes, dtype=dtype))
        return launch_float

    def launch_reduce(values, env):
        init = _asarray(values[b]).reshape(init_shape)
        return _fast_reduce(name, _asarray(values[a]), init, axes, dtype)
    return launch_reduce


# ---------------------------------------------------------------------------------------------
# Collectives


def _even_groups(inst: Instruction, contexts: Sequence) -> np.ndarray | None:
    """The groups of ``inst`` as a ``(groups, members)`` array of device indices, when they
    split the devices into groups of one size that every member agrees on; else None."""
    count = len(contexts)
    try:
        mine = [tuple(_required_group(inst, ctx, inst.op.name)) for ctx in contexts]
    except XlaSpmdError:  # a device in no group: its own start says so, located
        return None
    groups = sorted(set(mine))
    if any(len(g) != len(groups[0]) for g in groups):
        return None
    if sorted(d for g in groups for d in g) != list(range(count)):
        return None
    if any(d not in g for d, g in enumerate(mine)):
        return None
    return np.array(groups, dtype=np.intp)


_NAMED_REDUCERS = {"sum": np.add, "prod": np.multiply, "and": np.bitwise_and,
                   "or": np.bitwise_or}
"""The in-process communicator's reducers of the names ``_communicator_op`` gives (this layer
may not import ``collectives``; the tests compare both folds bit for bit)."""


def _fold(x: np.ndarray, groups: np.ndarray, op) -> np.ndarray:
    """The communicator's left fold in group order over each group's members at once:
    ``(groups, *shape)``."""
    dtype = x.dtype
    compute = reduction_dtype(dtype)
    acc = np.array(x[groups[:, 0]], dtype=compute, copy=True)
    for j in range(1, groups.shape[1]):
        item = x[groups[:, j]]
        value = item if compute == dtype else item.astype(compute)
        if isinstance(op, str):
            _NAMED_REDUCERS[op](acc, value, out=acc)
        else:
            acc = np.asarray(op(acc, value), dtype=compute)
    return acc if acc.dtype == dtype else acc.astype(dtype)


def collective_launch(step: Step, contexts: Sequence) -> StackedLaunch | None:
    """The stacked form of collective start ``step``, or None where it has none (groups
    that do not split the devices evenly, a reducer that is not a plain binary op)."""
    inst = step.inst
    name, attrs = inst.op.name, inst.attrs
    count = len(contexts)
    if name == "collective-permute":
        return _permute(step, contexts)
    groups = _even_groups(inst, contexts)
    if groups is None:
        return None
    members = groups.reshape(-1)
    position = np.empty(count, np.intp)  # device -> its group's row
    position[members] = np.repeat(np.arange(len(groups)), groups.shape[1])
    parts = groups.shape[1]
    reads = step.reads
    if name in ("all-reduce", "reduce-scatter"):
        if binary_reducer(attrs.to_apply) is None:
            return None
        op = _communicator_op(inst, contexts[0])
        if isinstance(op, str) and op not in _NAMED_REDUCERS:
            return None
    if name == "all-reduce":
        def one(x: np.ndarray) -> np.ndarray:
            if isinstance(op, str) and op in ("and", "or") and x.dtype.kind not in "biu":
                raise XlaSpmdError(f"{inst.name}: reduction {op!r} needs boolean or integer "
                                   f"data, got {x.dtype}")
            return _fold(x, groups, op)[position]
    elif name == "all-gather":
        (dim,) = attrs.dimensions

        def one(x: np.ndarray) -> np.ndarray:
            gathered = np.moveaxis(x[groups], 1, dim + 1)  # (groups, ..., parts, n_dim, ...)
            shape = gathered.shape
            merged = shape[:dim + 1] + (parts * shape[dim + 2],) + shape[dim + 3:]
            return gathered.reshape(merged)[position]
    elif name == "reduce-scatter":
        (dim,) = attrs.dimensions

        def one(x: np.ndarray) -> np.ndarray:
            total = _fold(x, groups, op)  # (groups, *shape)
            shape = total.shape
            chunk = shape[dim + 1] // parts
            split = total.reshape(shape[:dim + 1] + (parts, chunk) + shape[dim + 2:])
            out = _empty((count,) + shape[1:dim + 1] + (chunk,) + shape[dim + 2:], x.dtype)
            out[members] = np.moveaxis(split, dim + 1, 1).reshape((-1,) + out.shape[1:])
            return out
    elif name == "all-to-all":
        (dim,) = attrs.dimensions

        def one(x: np.ndarray) -> np.ndarray:
            sent = x[groups]  # (groups, sender, *shape)
            shape = sent.shape
            chunk = shape[dim + 2] // parts
            split = sent.reshape(shape[:dim + 2] + (parts, chunk) + shape[dim + 3:])
            # (groups, receiver, ..., sender, chunk, ...): the receiver's pieces in order
            moved = np.moveaxis(np.moveaxis(split, dim + 2, 1), 2, dim + 2)
            received = moved.reshape(moved.shape[:dim + 2] + (parts * chunk,)
                                     + moved.shape[dim + 4:])
            out = _empty((count,) + x.shape[1:], x.dtype)
            out[members] = received.reshape((-1,) + x.shape[1:])
            return out
    else:
        return None
    if len(inst.operands) > 1:
        return lambda values, env: tuple(one(_asarray(values[s])) for s in reads)
    (a,) = reads
    return lambda values, env: one(_asarray(values[a]))


def _permute(step: Step, contexts: Sequence) -> StackedLaunch | None:
    inst = step.inst
    count = len(contexts)
    pairs: list[tuple[int, int]] | None = None
    for ctx in contexts:
        partitions = ctx.num_partitions
        if _has_channel(inst.attrs):
            mine = [(ctx.replica_id * partitions + s, ctx.replica_id * partitions + t)
                    for s, t in inst.attrs.source_target_pairs]
        else:
            mine = [(s * partitions + ctx.partition_id, t * partitions + ctx.partition_id)
                    for s, t in inst.attrs.source_target_pairs]
        if pairs is not None and mine != pairs:
            return None
        pairs = mine
    if pairs is None:  # no devices
        return None
    sources = np.array([s for s, _ in pairs], np.intp)
    targets = np.array([t for _, t in pairs], np.intp)
    in_range = all(0 <= d < count for d in (*sources, *targets))
    if not in_range or len(set(targets.tolist())) != len(targets) or len(
            set(sources.tolist())) != len(sources):
        return None
    (a,) = step.reads

    def permute(values, env):
        x = _asarray(values[a])
        out = np.zeros_like(x)
        out[targets] = x[sources]
        return out
    return permute


def collective_per_device(step: Step) -> StackedLaunch:
    """A collective through the communicators: every device starts it, then every device
    waits (as ``run_together`` does), the results stacked."""
    inst, reads, cache = step.inst, step.reads, step.cache

    def launch_each(values, env):
        handles = [kernels.start(inst, [device_slice(values[s], d) for s in reads], ctx, cache)
                   for d, ctx in enumerate(env.contexts)]
        return stack([handle.wait() for handle in handles])
    return launch_each
