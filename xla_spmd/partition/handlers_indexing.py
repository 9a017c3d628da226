"""gather and scatter.

gather: the index batch dims pass through to the output batch dims (indices sharded like the
output there), explicit operand batching dims are sharded like their index dims, and operand
dims the gather takes whole (not indexed, full slice) pass through to the output offset dims;
every other operand dim is replicated (all-gather). scatter: the operand dims the updates
cover whole and do not index pass through (operand, updates and result sharded alike); the
indices and the other dims are replicated, so every device applies every update.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from xla_spmd.ir import S32, ArrayShape, ComparisonDirection, SliceDim, TupleShape, reducer_kind
from xla_spmd.mesh import AxisRef, overlaps_any
from xla_spmd.partition.handlers_elementwise import generic
from xla_spmd.partition.registry import HANDLERS
from xla_spmd.partition.reshard import axes_size
from xla_spmd.partition.uneven import zero_padding
from xla_spmd.partition.values import PTuple, PValue, array_shape

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PartValue


@HANDLERS.register("gather")
def gather(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    operand, indices = operands
    a = inst.attrs
    target = low.target(inst)
    out_axes = [tuple(d.axes) for d in target.dims]
    out_rank = inst.shape.rank
    batch_out = [d for d in range(out_rank) if d not in a.offset_dims]
    index_dims = [d for d in range(indices.global_shape.rank) if d != a.index_vector_dim]
    index_axes: list[tuple[AxisRef, ...]] = [()] * indices.global_shape.rank
    achieved: list[tuple[AxisRef, ...]] = [()] * out_rank
    for out_dim, index_dim in zip(batch_out, index_dims):
        index_axes[index_dim] = out_axes[out_dim]
        achieved[out_dim] = out_axes[out_dim]
    operand_axes = [()] * operand.global_shape.rank
    for op_dim, index_dim in zip(a.operand_batching_dims, a.start_indices_batching_dims):
        operand_axes[op_dim] = index_axes[index_dim]
    skipped = set(a.collapsed_slice_dims) | set(a.operand_batching_dims)
    window = [d for d in range(operand.global_shape.rank) if d not in skipped]
    slice_sizes = list(a.slice_sizes)
    for out_dim, op_dim in zip(a.offset_dims, window):
        whole = slice_sizes[op_dim] == operand.global_shape.dims[op_dim]
        if whole and op_dim not in a.start_index_map and out_axes[out_dim]:
            operand_axes[op_dim] = out_axes[out_dim]
            achieved[out_dim] = out_axes[out_dim]
    partial = _index_sharded_dims(low, inst, operand, operand_axes, index_axes, achieved)
    for op_dim, axes in partial.items():
        operand_axes[op_dim] = axes
    x = low.reshard(operand, low.sharding(operand_axes))
    i = low.reshard(indices, low.sharding(index_axes))
    # Dims taken whole pass through sharded: each device's slice is its whole local dim.
    for op_dim in range(operand.global_shape.rank):
        if operand_axes[op_dim] and op_dim not in a.operand_batching_dims and \
                op_dim not in partial:
            slice_sizes[op_dim] = x.inst.shape.dims[op_dim]
    attrs = dataclasses.replace(a, slice_sizes=tuple(slice_sizes))
    if partial:
        return _masked_gather(low, inst, attrs, x, i, partial, achieved, batch_out, target)
    value = low.emit(inst, [x, i], low.sharding(achieved), attrs=attrs)
    return low.reshard(value, target)


def _index_sharded_dims(low, inst, operand, operand_axes, index_axes, achieved) -> dict:
    """Indexed operand dims to keep sharded (the operand's own axes there): each device
    gathers what it holds, masks the rest to zero, and an all-reduce sums the pieces. Chosen
    when that all-reduce moves fewer bytes than all-gathering the operand."""
    a = inst.attrs
    if not operand.global_shape.dtype.is_float and not operand.global_shape.dtype.is_integer:
        return {}
    used = [x for axes in (*operand_axes, *index_axes, *achieved) for x in axes]
    chosen = {}
    for op_dim in a.start_index_map:
        if a.slice_sizes[op_dim] != 1 or op_dim not in a.collapsed_slice_dims:
            continue
        axes = []
        for axis in operand.sharding.dims[op_dim].axes:
            if overlaps_any(axis, used):
                break
            axes.append(axis)
        if axes:
            chosen[op_dim] = tuple(axes)
            used.extend(axes)
    if not chosen:
        return {}
    n = axes_size(low.mesh, [x for axes in chosen.values() for x in axes])
    out_bytes = inst.shape.byte_size / max(1, axes_size(low.mesh, [x for y in achieved
                                                                    for x in y]))
    operand_bytes = operand.global_shape.byte_size / max(1, axes_size(
        low.mesh, [x for y in operand_axes for x in y]))
    if 2 * (n - 1) / n * out_bytes >= (n - 1) / n * operand_bytes:
        return {}
    return chosen


def _masked_gather(low, inst, attrs, x, i, partial, achieved, batch_out, target):
    em = low.em
    a = inst.attrs
    idx = i.inst
    index_shape = idx.shape
    vector_dim = a.index_vector_dim
    implicit = vector_dim == index_shape.rank
    mask = None
    for op_dim, axes in partial.items():
        k = a.start_index_map.index(op_dim)
        local = x.inst.shape.dims[op_dim]
        offset = em.op("convert", em.axes_value(axes, local),
                       shape=ArrayShape(index_shape.dtype, ()))
        limit = em.scalar(x.global_shape.dims[op_dim] - 1, index_shape.dtype)
        zero = em.scalar(0, index_shape.dtype)
        if implicit:
            component = idx
        else:
            component = em.op("slice", idx, slice=tuple(
                SliceDim(k, k + 1) if d == vector_dim else SliceDim(0, n)
                for d, n in enumerate(index_shape.dims)))
            component = em.reshape(component, [n for d, n in enumerate(index_shape.dims)
                                               if d != vector_dim])
        dims = component.shape.dims
        clamped = em.op("clamp", zero, component, limit)
        shifted = em.op("subtract", clamped, em.broadcast_scalar(offset, dims))
        inside = em.op("and", em.op("compare", shifted, em.broadcast_scalar(zero, dims),
                                    direction=ComparisonDirection.GE),
                       em.op("compare", shifted, em.broadcast_scalar(
                           em.scalar(local, index_shape.dtype), dims),
                             direction=ComparisonDirection.LT))
        mask = inside if mask is None else em.op("and", mask, inside)
        if implicit:
            idx = shifted
        else:  # only component k is clamped and shifted; the others keep their values
            is_k = em.op("compare", em.op("iota", shape=ArrayShape(S32, index_shape.dims),
                                          iota_dimension=vector_dim),
                         em.broadcast_scalar(em.scalar(k, S32), index_shape.dims),
                         direction=ComparisonDirection.EQ)
            moved = em.op("subtract", em.op("clamp", em.broadcast_scalar(zero, index_shape.dims),
                                            idx, em.broadcast_scalar(limit, index_shape.dims)),
                          em.broadcast_scalar(offset, index_shape.dims))
            idx = em.op("select", is_k, moved, idx)
    out_sharding = low.sharding(achieved, [x for axes in partial.values() for x in axes])
    value = low.emit(inst, [x.inst, idx], out_sharding, attrs=attrs)
    local_dims = value.inst.shape.dims
    assert mask is not None  # at least one batch dim is compared
    wide = em.op("broadcast", mask, shape=ArrayShape(mask.shape.dtype, local_dims),
                 dimensions=tuple(batch_out))
    zeros = em.broadcast_scalar(em.scalar(0, inst.shape.dtype), local_dims)
    masked = em.op("select", wide, value.inst, zeros, sharding=out_sharding)
    return low.reshard(PValue(masked, out_sharding, inst.shape), target)


@HANDLERS.register("scatter")
def scatter(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    n = len(operands) // 2
    inputs, indices, updates = operands[:n], operands[n], operands[n + 1:]
    if any(isinstance(v, PTuple) for v in operands):
        return generic(low, inst, operands)
    a = inst.attrs
    targets = low.targets(inst)
    target = targets[0]
    rank = inputs[0].global_shape.rank
    skipped = set(a.inserted_window_dims) | set(a.input_batching_dims)
    window = [d for d in range(rank) if d not in skipped]
    update_rank = updates[0].global_shape.rank
    operand_axes = [()] * rank
    update_axes = [()] * update_rank
    used = []
    for update_dim, op_dim in zip(a.update_window_dims, window):
        whole = updates[0].global_shape.dims[update_dim] == inputs[0].global_shape.dims[op_dim]
        axes = tuple(target.dims[op_dim].axes)
        if whole and op_dim not in a.scatter_dims_to_operand_dims and axes:
            operand_axes[op_dim] = axes
            update_axes[update_dim] = axes
            used.extend(axes)
    # Index dims: explicit batching dims shard the operand alike; other index dims may stay
    # sharded when the combiner adds (each device scatters its updates into a partial sum).
    index_rank = indices.global_shape.rank
    index_dims = [d for d in range(index_rank) if d != a.index_vector_dim]
    scatter_update_dims = [d for d in range(update_rank) if d not in a.update_window_dims]
    batching = dict(zip(a.scatter_indices_batching_dims, a.input_batching_dims))
    index_axes = [()] * index_rank
    partial = []
    adds = n == 1 and reducer_kind(a.to_apply) == "add"
    for index_dim, update_dim in zip(index_dims, scatter_update_dims):
        axes = []
        for axis in indices.sharding.dims[index_dim].axes:
            if overlaps_any(axis, used):
                break
            axes.append(axis)
        axes = tuple(axes)
        if index_dim in batching:
            operand_axes[batching[index_dim]] = axes
        elif not adds:
            axes = ()
        else:
            partial.extend(axes)
        index_axes[index_dim] = axes
        update_axes[update_dim] = axes
        used.extend(axes)
    compute = low.sharding(operand_axes, partial)
    xs = [low.reshard(x, compute) for x in inputs]
    idx = low.reshard(indices, low.sharding(index_axes))
    us = [low.reshard(u, low.sharding(update_axes)) for u in updates]
    if partial:  # padded updates would add garbage into the partial sums
        us = [zero_padding(low, u, scatter_update_dims) for u in us]
    args = xs + [idx] + us
    if n == 1:
        return low.reshard(low.emit(inst, args, compute), target)
    local_shape = TupleShape(tuple(low.local_shape(array_shape(s), compute)
                                   for s in inst.shape.elements))
    local = low.em.clone(inst, [v.inst for v in args], local_shape)
    value = low.explode(local, [compute] * n, inst.shape)
    assert isinstance(value, PTuple)  # n results
    return PTuple(tuple(low.reshard(v, t) for v, t in zip(value.items, targets)))


__all__ = ["PValue", "gather", "scatter"]
