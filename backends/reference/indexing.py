"""Reference rules of the indexing ops: dynamic-slice, dynamic-update-slice, gather, scatter
(op_semantics §9–§10).

Invariants: dynamic slices and gathers clamp their start indices so they never read out of
bounds; scatter does not clamp, and drops a whole update window when any part of it falls
outside the operand (XLA's rule). Scatter applies updates sequentially, scatter positions in
row-major order and window positions in row-major order within each.

Gather and scatter are vectorized: the per-position start vectors become one integer index
array per operand dim, of shape ``[positions..., window...]``, used with numpy advanced
indexing. Worked example: gathering rows 2 and 0 of a 3x2 operand (offset_dims={1},
collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}) builds
index arrays row=[[2,2],[0,0]] and column=[[0,1],[0,1]], and reads operand[row, column].

Scatter reducers that are a single add/multiply/maximum/minimum/and/or of the two parameters
use the unbuffered ``ufunc.at``; a reducer returning the update is an assignment where the
last write wins; any other reducer is called per element through `ctx.call`.

>>> import numpy as np
>>> from xla_spmd.ir import Builder, ArrayShape, Module, S32
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(S32, (5,)), "x")
>>> start = b.constant(np.int32(4))
>>> m = Module.from_entry("m", b.build(b.dynamic_slice(x, start, dynamic_slice_sizes=(2,))))
>>> from xla_spmd.backends.reference.evaluator import evaluate
>>> evaluate(m, [np.arange(5, dtype=np.int32)])  # start 4 is clamped to 3
array([3, 4], dtype=int32)
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.reference.evaluator import EVALUATE
from xla_spmd.backends.reference.numeric import as_int64_indices
from xla_spmd.ir.reducers import KIND_OPCODES, reducer_kind

# ---------------------------------------------------------------------------------------------
# Dynamic slices


def _start_indices(index_operands, rank: int) -> list[int]:
    """Start indices as ints, from either scalar operands or a single index vector."""
    if len(index_operands) == 1 and np.ndim(index_operands[0]) == 1 and rank != 1:
        return [int(i) for i in as_int64_indices(index_operands[0])]
    if len(index_operands) == 1 and np.ndim(index_operands[0]) == 1:
        return [int(as_int64_indices(index_operands[0])[0])]
    return [int(as_int64_indices(i)) for i in index_operands]


def _clamped_window(starts, sizes, dims) -> tuple[slice, ...]:
    clamped = [min(max(s, 0), n - size) for s, size, n in zip(starts, sizes, dims)]
    return tuple(slice(s, s + size) for s, size in zip(clamped, sizes))


@EVALUATE.register("dynamic-slice")
def dynamic_slice_rule(inst, operands, ctx):
    x = np.asarray(operands[0])
    starts = _start_indices(operands[1:], x.ndim)
    return x[_clamped_window(starts, inst.attrs.dynamic_slice_sizes, x.shape)].copy()


@EVALUATE.register("dynamic-update-slice")
def dynamic_update_slice_rule(inst, operands, ctx):
    x, update = np.asarray(operands[0]), np.asarray(operands[1])
    starts = _start_indices(operands[2:], x.ndim)
    result = x.copy()
    result[_clamped_window(starts, update.shape, x.shape)] = update
    return result


# ---------------------------------------------------------------------------------------------
# Gather


def _index_vectors(indices, index_vector_dim: int, xp=np) -> np.ndarray:
    """The start vectors, with the index vector moved to the last dim: [batch..., k]."""
    indices = as_int64_indices(indices, xp)
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return xp.moveaxis(indices, index_vector_dim, -1)


def _batch_iota(batch_shape, position: int, xp=np) -> np.ndarray:
    shape = [1] * len(batch_shape)
    shape[position] = batch_shape[position]
    return xp.arange(batch_shape[position]).reshape(shape)


def _batch_position(index_dim: int, index_vector_dim: int) -> int:
    return index_dim if index_dim < index_vector_dim else index_dim - 1


def _starts(vectors, operand_dims, index_map, batching_dims, index_batching_dims,
            index_vector_dim, clamp_sizes=None, xp=np) -> list[np.ndarray]:
    """Per operand dim, the start of each position's window (shape = batch shape)."""
    batch_shape = vectors.shape[:-1]
    starts = [xp.zeros(batch_shape, np.int64) for _ in operand_dims]
    for k, d in enumerate(index_map):
        start = vectors[..., k]
        if clamp_sizes is not None:
            start = xp.clip(start, 0, operand_dims[d] - clamp_sizes[d])
        starts[d] = start
    for d, index_dim in zip(batching_dims, index_batching_dims):
        position = _batch_position(index_dim, index_vector_dim)
        starts[d] = starts[d] + _batch_iota(batch_shape, position, xp)
    return [xp.broadcast_to(s, batch_shape) for s in starts]


def _window_indices(starts, window_sizes, xp=np) -> tuple[np.ndarray, ...]:
    """Full index arrays of shape batch + window_sizes, one per operand dim."""
    batch_rank, rank = starts[0].ndim, len(starts)
    full = []
    for d, (start, size) in enumerate(zip(starts, window_sizes)):
        offset_shape = [1] * rank
        offset_shape[d] = size
        offsets = xp.arange(size).reshape(offset_shape)
        full.append(start.reshape(start.shape + (1,) * rank) + offsets.reshape(
            (1,) * batch_rank + tuple(offset_shape)))
    return tuple(full)


@EVALUATE.register("gather")
def gather_rule(inst, operands, ctx):
    return gather(inst, np.asarray(operands[0]), operands[1])


def gather(inst, operand, indices, xp=np):
    """``gather`` of ``operand`` at ``indices`` by fancy indexing; ``xp`` is their array
    module (numpy, or CuPy on the GPU backend)."""
    attrs = inst.attrs
    vectors = _index_vectors(indices, attrs.index_vector_dim, xp)
    sizes = attrs.slice_sizes
    starts = _starts(vectors, operand.shape, attrs.start_index_map, attrs.operand_batching_dims,
                     attrs.start_indices_batching_dims, attrs.index_vector_dim, sizes, xp)
    batch_shape = vectors.shape[:-1]
    gathered = operand[_window_indices(starts, sizes, xp)] if operand.size else xp.zeros(
        batch_shape + tuple(sizes), operand.dtype)
    # Drop collapsed and batching dims, keeping the offset dims in operand order.
    dropped = set(attrs.collapsed_slice_dims) | set(attrs.operand_batching_dims)
    kept = [d for d in range(operand.ndim) if d not in dropped]
    gathered = gathered.reshape(batch_shape + tuple(sizes[d] for d in kept))
    # Result dims: offset dims at OD positions, batch dims in order elsewhere.
    batch_axes = iter(range(len(batch_shape)))
    offset_axes = iter(range(len(batch_shape), len(batch_shape) + len(kept)))
    permutation = [next(offset_axes) if r in attrs.offset_dims else next(batch_axes)
                   for r in range(len(inst.shape.dims))]
    return xp.asarray(xp.transpose(gathered, permutation), order="C")


# ---------------------------------------------------------------------------------------------
# Scatter

_UFUNC_REDUCERS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
                   "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or}


def _reducer_kind(computation) -> str | None:
    """'update', 'current', a key of `_UFUNC_REDUCERS`, or None (call the computation)."""
    kind = reducer_kind(computation)
    return {"set": "update", "keep": "current"}.get(kind) or KIND_OPCODES.get(kind)


def _scatter_targets(inst, operand_shape, indices, update_shape):
    """Flat target indices of every in-bounds update element, and the matching flat update
    positions, both in sequential (row-major position, then row-major window) order."""
    attrs = inst.attrs
    rank = len(operand_shape)
    vectors = _index_vectors(indices, attrs.index_vector_dim)
    starts = _starts(vectors, operand_shape, attrs.scatter_dims_to_operand_dims,
                     attrs.input_batching_dims, attrs.scatter_indices_batching_dims,
                     attrs.index_vector_dim)
    window_dims = [d for d in range(rank) if d not in attrs.inserted_window_dims
                   and d not in attrs.input_batching_dims]
    window_sizes = [1] * rank
    for operand_dim, update_dim in zip(window_dims, attrs.update_window_dims):
        window_sizes[operand_dim] = update_shape[update_dim]
    in_bounds = np.ones(vectors.shape[:-1], bool)
    for d in range(rank):
        in_bounds &= (starts[d] >= 0) & (starts[d] <= operand_shape[d] - window_sizes[d])
    positions = np.flatnonzero(in_bounds)
    starts = [s.reshape(-1)[positions] for s in starts]
    full = _window_indices(starts, window_sizes)
    targets = np.ravel_multi_index(full, operand_shape) if full[0].size else np.zeros(
        full[0].shape, np.int64)
    # Update elements in the same order: scatter dims first, then window dims (UWD order).
    scatter_dims = [d for d in range(len(update_shape)) if d not in attrs.update_window_dims]
    order = scatter_dims + list(attrs.update_window_dims)
    update_index = np.arange(int(np.prod(update_shape, dtype=np.int64))).reshape(update_shape)
    update_index = np.transpose(update_index, order).reshape(
        (-1,) + tuple(update_shape[d] for d in attrs.update_window_dims))[positions]
    # `full` has a window axis per operand dim (size 1 where inserted), in operand order, and
    # the update window dims are in the same order, so both flatten to the same sequence.
    return targets.reshape(-1), update_index.reshape(-1)


def _scatter_loop(computation, outputs, updates, targets, sources, ctx):
    flat_outputs = [o.reshape(-1) for o in outputs]
    flat_updates = [np.asarray(u).reshape(-1) for u in updates]
    for target, source in zip(targets.tolist(), sources.tolist()):
        args = [o[target].copy() for o in flat_outputs] + [u[source].copy()
                                                           for u in flat_updates]
        args = [np.asarray(a) for a in args]
        value = ctx.call(computation, args)
        values = value if isinstance(value, tuple) else (value,)
        for flat, v in zip(flat_outputs, values):
            flat[target] = v


@EVALUATE.register("scatter")
def scatter_rule(inst, operands, ctx):
    count = len(operands) // 2
    indices, updates = operands[count], operands[count + 1:]
    targets, sources = _scatter_targets(inst, np.shape(operands[0]), indices,
                                        np.shape(updates[0]))
    return apply_scatter(inst, operands, targets, sources, ctx)


def apply_scatter(inst, operands, targets: np.ndarray, sources: np.ndarray, ctx):
    """Scatter's result from its flat ``targets`` in the operand and the matching flat
    ``sources`` in the updates (in sequential order, in-bounds windows only)."""
    count = len(operands) // 2
    inputs, updates = operands[:count], operands[count + 1:]
    result_shapes = inst.shape.elements if count > 1 else (inst.shape,)
    # C order: the flat targets index it row-major, and its flat view must be a view (an
    # operand in another layout, a transpose, would otherwise take the writes in a copy)
    outputs = [np.array(x, dtype=s.dtype.numpy, order="C") for x, s in zip(inputs, result_shapes)]
    kind = _reducer_kind(inst.attrs.to_apply) if count == 1 else None
    if kind == "current" or targets.size == 0:
        pass
    elif kind == "update":
        # Last write wins: keep the final occurrence of each target.
        last = len(targets) - 1 - np.unique(targets[::-1], return_index=True)[1]
        outputs[0].reshape(-1)[targets[last]] = np.asarray(updates[0]).reshape(-1)[sources[last]]
    elif kind is not None and outputs[0].dtype == np.asarray(updates[0]).dtype:
        flat = outputs[0].reshape(-1)
        with np.errstate(all="ignore"):
            _UFUNC_REDUCERS[kind].at(flat, targets, np.asarray(updates[0]).reshape(-1)[sources])
    else:
        _scatter_loop(inst.attrs.to_apply, outputs, updates, targets, sources, ctx)
    return tuple(outputs) if count > 1 else outputs[0]
