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

from xla_spmd.partition.partitioner import PTuple, PValue
from xla_spmd.partition.registry import HANDLERS
from xla_spmd.partition.uneven import zero_padding


@HANDLERS.register("gather")
def gather(low, inst, operands):
    operand, indices = operands
    a = inst.attrs
    target = low.target(inst)
    out_axes = [tuple(d.axes) for d in target.dims]
    out_rank = inst.shape.rank
    batch_out = [d for d in range(out_rank) if d not in a.offset_dims]
    index_dims = [d for d in range(indices.global_shape.rank) if d != a.index_vector_dim]
    index_axes = [()] * indices.global_shape.rank
    achieved = [()] * out_rank
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
    x = low.reshard(operand, low.sharding(operand_axes))
    i = low.reshard(indices, low.sharding(index_axes))
    for op_dim in range(operand.global_shape.rank):
        if operand_axes[op_dim] and op_dim not in a.operand_batching_dims:
            slice_sizes[op_dim] = x.inst.shape.dims[op_dim]
    attrs = dataclasses.replace(a, slice_sizes=tuple(slice_sizes))
    value = low.emit(inst, [x, i], low.sharding(achieved), attrs=attrs)
    return low.reshard(value, target)


def _is_add(computation) -> bool:
    root = computation.root
    return root.opcode == "add" and all(o.opcode == "parameter" for o in root.operands)


@HANDLERS.register("scatter")
def scatter(low, inst, operands):
    n = len(operands) // 2
    inputs, indices, updates = operands[:n], operands[n], operands[n + 1:]
    if any(isinstance(v, PTuple) for v in operands):
        from xla_spmd.partition.handlers_elementwise import generic
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
    adds = n == 1 and _is_add(a.to_apply)
    for index_dim, update_dim in zip(index_dims, scatter_update_dims):
        axes = []
        for axis in indices.sharding.dims[index_dim].axes:
            if any(axis.overlaps(u) for u in used):
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
    from xla_spmd.ir import TupleShape
    local_shape = TupleShape(tuple(low.local_shape(s, compute) for s in inst.shape.elements))
    local = low.em.clone(inst, [v.inst for v in args], local_shape)
    value = low.explode(local, [compute] * n, inst.shape)
    return PTuple(tuple(low.reshard(v, t) for v, t in zip(value.items, targets)))


__all__ = ["PValue", "gather", "scatter"]
