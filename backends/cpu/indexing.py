"""Launches of the indexing ops: gather, scatter, dynamic-slice and dynamic-update-slice.

Everything that depends only on shapes and attributes is computed once: each window's
element offsets from its start (in the row-major flat operand), the offsets the batching
dims add, which update element lands at each window position, and the result's dim order.
Per call only the start indices are read, clamped (gather, dynamic slices) or bounds-checked
(scatter) as the reference does (``backends/reference/indexing.py``), and turned into flat
offsets; the data moves with one ``numpy.take`` (gather) or the reference's own
``apply_scatter``, so results are bit-identical to the reference's.

Example: gathering rows 2 and 0 of a 3x2 operand (slice_sizes={1,2}) precomputes the window
offsets [[0, 1]]; the starts [2, 0] become flat offsets [4, 0] and the launch takes
operand.flat[[[4, 5], [0, 1]]].
"""

from __future__ import annotations

from typing import overload

import numpy as np

from xla_spmd.backends.cpu.program import Step
from xla_spmd.backends.reference.indexing import (
    _batch_iota,
    _batch_position,
    _clamped_window,
    _index_vectors,
    _start_indices,
    apply_scatter,
)
from xla_spmd.backends.reference.numeric import as_int64_indices


def _strides(dims) -> list[int]:
    """Row-major element strides of ``dims``."""
    strides, step = [], 1
    for n in reversed(dims):
        strides.append(step)
        step *= n
    return strides[::-1]


def _window_offsets(window_sizes, strides) -> np.ndarray:
    """Flat offsets of a window's elements from its start, of shape ``window_sizes``."""
    rank = len(window_sizes)
    offsets = np.zeros(tuple(window_sizes), np.int64)
    for d, (size, stride) in enumerate(zip(window_sizes, strides)):
        shape = [1] * rank
        shape[d] = size
        offsets = offsets + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return offsets


def _batch_offsets(batch_shape, batching_dims, index_batching_dims, index_vector_dim,
                   strides) -> np.ndarray:
    """The flat offset the batching dims add to each position's start."""
    offsets = np.zeros(batch_shape, np.int64)
    for d, index_dim in zip(batching_dims, index_batching_dims):
        position = _batch_position(index_dim, index_vector_dim)
        offsets = offsets + _batch_iota(batch_shape, position) * strides[d]
    return np.broadcast_to(offsets, batch_shape)


def _batch_shape(indices_dims, index_vector_dim: int) -> tuple[int, ...]:
    dims = tuple(indices_dims)
    return dims if index_vector_dim == len(dims) else (
        dims[:index_vector_dim] + dims[index_vector_dim + 1:])


@overload
def _device_offsets(count: None, operand_dims, rank: int) -> int: ...
@overload
def _device_offsets(count: int, operand_dims, rank: int) -> np.ndarray: ...
def _device_offsets(count: int | None, operand_dims, rank: int) -> int | np.ndarray:
    """Each stacked device's flat offset into a ``(count, *operand_dims)`` array, shaped
    to broadcast over ``rank`` more dims (0 for one device's own array)."""
    if count is None:
        return 0
    size = int(np.prod(operand_dims, dtype=np.int64))
    return (np.arange(count, dtype=np.int64) * size).reshape((count,) + (1,) * rank)


def gather_launch(step: Step, count: int | None = None):
    """``gather``: clamped starts to flat offsets, then one ``take``. With ``count``, the
    launch takes stacked values of ``count`` devices (``backends/cpu/stacked.py``): one take
    for all, each device's offsets into its own operand."""
    inst = step.inst
    attrs = inst.attrs
    operand_dims = inst.operands[0].shape.dims
    rank = len(operand_dims)
    sizes = tuple(attrs.slice_sizes)
    strides = _strides(operand_dims)
    ivd = attrs.index_vector_dim
    batch_shape = _batch_shape(inst.operands[1].shape.dims, ivd)
    window = _window_offsets(sizes, strides)
    base = _batch_offsets(batch_shape, attrs.operand_batching_dims,
                          attrs.start_indices_batching_dims, ivd, strides)
    starts = [(k, operand_dims[d] - sizes[d], strides[d])
              for k, d in enumerate(attrs.start_index_map)]
    dropped = set(attrs.collapsed_slice_dims) | set(attrs.operand_batching_dims)
    kept = tuple(sizes[d] for d in range(rank) if d not in dropped)
    batch_axes = iter(range(len(batch_shape)))
    offset_axes = iter(range(len(batch_shape), len(batch_shape) + len(kept)))
    permutation = tuple(next(offset_axes) if r in attrs.offset_dims else next(batch_axes)
                        for r in range(inst.shape.rank))
    lead = () if count is None else (count,)
    if count is not None:
        ivd += 1
        permutation = (0, *(p + 1 for p in permutation))
        base = base + _device_offsets(count, operand_dims, len(batch_shape))
    gathered_shape, expand = lead + batch_shape + kept, lead + batch_shape + (1,) * rank
    dtype, empty = inst.shape.dtype.numpy, 0 in operand_dims
    a, b = step.reads
    clip, ravel, asarray = np.clip, np.ravel, np.asarray

    def launch_gather(values, ctx):
        vectors = _index_vectors(values[b], ivd)
        flat = base
        for k, high, stride in starts:
            flat = flat + clip(vectors[..., k], 0, high) * stride
        if empty:
            gathered = np.zeros(gathered_shape, dtype)
        else:
            gathered = ravel(values[a]).take(flat.reshape(expand) + window)
        return asarray(gathered.reshape(gathered_shape).transpose(permutation), order="C")
    return launch_gather


def scatter_launch(step: Step, count: int | None = None):
    """``scatter``: bounds-checked starts to flat targets, then the reference's
    ``apply_scatter`` (its reducers, duplicate handling and sequential order). With
    ``count``, on stacked values: every device's targets (offset into its own operand, in
    its own order, device after device) in one ``apply_scatter``; devices touch disjoint
    elements, so each gets what its own scatter gives."""
    inst = step.inst
    attrs = inst.attrs
    count_operands = len(inst.operands) // 2
    operand_dims = inst.operands[0].shape.dims
    update_dims = inst.operands[count_operands + 1].shape.dims
    rank = len(operand_dims)
    strides = _strides(operand_dims)
    ivd = attrs.index_vector_dim
    batch_shape = _batch_shape(inst.operands[count_operands].shape.dims, ivd)
    window_dims = [d for d in range(rank) if d not in attrs.inserted_window_dims
                   and d not in attrs.input_batching_dims]
    window_sizes = [1] * rank
    for operand_dim, update_dim in zip(window_dims, attrs.update_window_dims):
        window_sizes[operand_dim] = update_dims[update_dim]
    window = _window_offsets(window_sizes, strides).reshape(-1)
    # Batch starts are iotas: always in bounds of a batching dim of the same size.
    base = _batch_offsets(batch_shape, attrs.input_batching_dims,
                          attrs.scatter_indices_batching_dims, ivd, strides).reshape(-1)
    starts = [(k, operand_dims[d] - window_sizes[d], strides[d])
              for k, d in enumerate(attrs.scatter_dims_to_operand_dims)]
    scatter_dims = [d for d in range(len(update_dims)) if d not in attrs.update_window_dims]
    order = scatter_dims + list(attrs.update_window_dims)
    sources = np.arange(int(np.prod(update_dims, dtype=np.int64))).reshape(update_dims)
    sources = np.transpose(sources, order).reshape(len(base), window.size)
    reads = step.reads
    in_window = window.size
    if count is not None:
        operand_offsets = _device_offsets(count, operand_dims, 1)       # (count, 1)
        update_offsets = _device_offsets(count, update_dims, 2)         # (count, 1, 1)
        stacked_sources = sources[None] + update_offsets                # (count, B, W)

        def launch_stacked(values, ctx):
            operands = [values[s] for s in reads]
            vectors = _index_vectors(operands[count_operands], ivd + 1)
            vectors = vectors.reshape(count, len(base), vectors.shape[-1])
            flat = base + operand_offsets
            in_bounds = np.ones((count, len(base)), bool)
            for k, high, stride in starts:
                start = vectors[:, :, k]
                in_bounds &= (start >= 0) & (start <= high)
                flat = flat + start * stride
            targets = (flat[in_bounds][:, None] + window).reshape(-1)
            return apply_scatter(inst, operands, targets,
                                 stacked_sources[in_bounds].reshape(-1), ctx)
        return launch_stacked

    def launch_scatter(values, ctx):
        operands = [values[s] for s in reads]
        vectors = _index_vectors(operands[count_operands], ivd)
        vectors = vectors.reshape(len(base), vectors.shape[-1])
        flat = base
        in_bounds = np.ones(len(base), bool)
        for k, high, stride in starts:
            start = vectors[:, k]
            in_bounds &= (start >= 0) & (start <= high)
            flat = flat + start * stride
        positions = np.flatnonzero(in_bounds)
        targets = (flat[positions][:, None] + window).reshape(-1)
        return apply_scatter(inst, operands, targets,
                             sources[positions].reshape(len(positions) * in_window), ctx)
    return launch_scatter


def _stacked_starts(index_values: list, rank: int) -> list[np.ndarray]:
    """``_start_indices`` of every stacked device at once: per dim, a ``(count,)`` int64."""
    if len(index_values) == 1 and np.ndim(index_values[0]) == 2:
        vectors = as_int64_indices(index_values[0])
        return [vectors[:, k] for k in range(rank)]
    return [as_int64_indices(i) for i in index_values]


def _stacked_windows(dims, sizes, count: int):
    """For stacked dynamic slices: each device's base offset, the window's offsets, and per
    dim ``(highest start, stride)``."""
    strides = _strides(dims)
    window = _window_offsets(sizes, strides)
    bases = _device_offsets(count, dims, 0).reshape(-1)
    limits = [(n - size, stride) for n, size, stride in zip(dims, sizes, strides)]
    return bases, window, limits


def _stacked_flat(starts, bases, window, limits, count: int) -> np.ndarray:
    """The flat positions of every device's clamped window, ``(count, *window)``."""
    flat = bases
    for start, (high, stride) in zip(starts, limits):
        flat = flat + np.clip(start, 0, high) * stride
    return flat.reshape((count,) + (1,) * window.ndim) + window


def dynamic_slice_launch(step: Step, count: int | None = None):
    """``dynamic-slice``: the clamped window, copied (with ``count``: every stacked device's
    window in one take)."""
    inst = step.inst
    sizes = inst.attrs.dynamic_slice_sizes
    dims = inst.operands[0].shape.dims
    a, *index_slots = step.reads
    rank = len(dims)
    if count is not None:
        bases, window, limits = _stacked_windows(dims, sizes, count)

        def launch_stacked(values, ctx):
            starts = _stacked_starts([values[s] for s in index_slots], rank)
            flat = _stacked_flat(starts, bases, window, limits, count)
            return np.ravel(values[a]).take(flat)
        return launch_stacked

    def launch_dynamic_slice(values, ctx):
        starts = _start_indices([values[s] for s in index_slots], rank)
        return np.asarray(values[a])[_clamped_window(starts, sizes, dims)].copy()
    return launch_dynamic_slice


def dynamic_update_slice_launch(step: Step, count: int | None = None):
    """``dynamic-update-slice``: a copy of the operand with the clamped window written (with
    ``count``: every stacked device's window written at once)."""
    inst = step.inst
    dims = inst.operands[0].shape.dims
    sizes = inst.operands[1].shape.dims
    a, u, *index_slots = step.reads
    rank = len(dims)
    if count is not None:
        bases, window, limits = _stacked_windows(dims, sizes, count)

        def launch_stacked(values, ctx):
            starts = _stacked_starts([values[s] for s in index_slots], rank)
            result = np.array(values[a], order="C")
            result.reshape(-1)[_stacked_flat(starts, bases, window, limits, count)] = (
                values[u])
            return result
        return launch_stacked

    def launch_dynamic_update_slice(values, ctx):
        starts = _start_indices([values[s] for s in index_slots], rank)
        result = np.array(values[a], order="C")
        result[_clamped_window(starts, sizes, dims)] = values[u]
        return result
    return launch_dynamic_update_slice


STACKED = ("gather", "scatter", "dynamic-slice", "dynamic-update-slice")
"""The ops whose launch takes a device ``count`` for stacked values."""

LAUNCHES = {"gather": gather_launch, "scatter": scatter_launch,
            "dynamic-slice": dynamic_slice_launch,
            "dynamic-update-slice": dynamic_update_slice_launch}
"""Opcode -> ``launch(step)`` building the step's closure."""
