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


def gather_launch(step: Step):
    """``gather``: clamped starts to flat offsets, then one ``take``."""
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
    gathered_shape, expand = batch_shape + kept, batch_shape + (1,) * rank
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


def scatter_launch(step: Step):
    """``scatter``: bounds-checked starts to flat targets, then the reference's
    ``apply_scatter`` (its reducers, duplicate handling and sequential order)."""
    inst = step.inst
    attrs = inst.attrs
    count = len(inst.operands) // 2
    operand_dims = inst.operands[0].shape.dims
    update_dims = inst.operands[count + 1].shape.dims
    rank = len(operand_dims)
    strides = _strides(operand_dims)
    ivd = attrs.index_vector_dim
    batch_shape = _batch_shape(inst.operands[count].shape.dims, ivd)
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

    def launch_scatter(values, ctx):
        operands = [values[s] for s in reads]
        vectors = _index_vectors(operands[count], ivd)
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


def dynamic_slice_launch(step: Step):
    """``dynamic-slice``: the clamped window, copied."""
    inst = step.inst
    sizes = inst.attrs.dynamic_slice_sizes
    dims = inst.operands[0].shape.dims
    a, *index_slots = step.reads
    rank = len(dims)

    def launch_dynamic_slice(values, ctx):
        starts = _start_indices([values[s] for s in index_slots], rank)
        return np.asarray(values[a])[_clamped_window(starts, sizes, dims)].copy()
    return launch_dynamic_slice


def dynamic_update_slice_launch(step: Step):
    """``dynamic-update-slice``: a copy of the operand with the clamped window written."""
    inst = step.inst
    dims = inst.operands[0].shape.dims
    sizes = inst.operands[1].shape.dims
    a, u, *index_slots = step.reads
    rank = len(dims)

    def launch_dynamic_update_slice(values, ctx):
        starts = _start_indices([values[s] for s in index_slots], rank)
        result = np.array(values[a], order="C")
        result[_clamped_window(starts, sizes, dims)] = values[u]
        return result
    return launch_dynamic_update_slice


LAUNCHES = {"gather": gather_launch, "scatter": scatter_launch,
            "dynamic-slice": dynamic_slice_launch,
            "dynamic-update-slice": dynamic_update_slice_launch}
"""Opcode -> ``launch(step)`` building the step's closure."""
