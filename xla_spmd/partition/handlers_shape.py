"""Shape ops: broadcast, transpose, reshape, dynamic-slice, iota, constant (slice, pad,
concatenate, reverse and dynamic-update-slice: handlers_windowed.py).

Each computes the operand sharding that makes the op local (dims it moves data along are
replicated, GSPMD's ``HandleElementwiseWithDimsToReplicate``), runs the op on local shapes and
reshards the result to the wanted sharding (a local slice when it only adds axes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xla_spmd.ir import S32, ArrayShape
from xla_spmd.mesh import AxisRef, merge_sub_axes
from xla_spmd.partition.registry import HANDLERS
from xla_spmd.partition.reshard import plan_reshard
from xla_spmd.partition.values import PValue, array_shape

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction
    from xla_spmd.mesh import Mesh
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PartValue
    from xla_spmd.sharding import TensorSharding


def _clear(sharding, dims):
    """`sharding` without axes on `dims` and without unreduced axes."""
    return sharding.replace(dims=[[] if d in dims else list(s.axes)
                                  for d, s in enumerate(sharding.dims)], unreduced=())


def _dims_axes(sharding):
    return [tuple(d.axes) for d in sharding.dims]


@HANDLERS.register("broadcast")
def broadcast(low: Lowering, inst: Instruction, operands: list,
              target: TensorSharding | None = None) -> PartValue:
    (operand,) = operands
    target = target or low.target(inst)
    compute = target.replace(unreduced=())
    x = low.reshard(operand, _broadcast_operand(low, inst, compute))
    value = low.emit(inst, [x], compute)

    def cost(new_target):
        wanted = _broadcast_operand(low, inst, new_target)
        return plan_reshard(operand.sharding, wanted, operand.global_shape.dims,
                            operand.global_shape.dtype.itemsize).bytes
    low.recompute[value.inst] = (lambda t: broadcast(low, inst, operands, t), cost)
    return low.reshard(value, target)


def _broadcast_operand(low, inst, sharding):
    axes = _dims_axes(sharding)
    return low.sharding([axes[d] for d in inst.attrs.dimensions])


@HANDLERS.register("transpose")
def transpose(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    (operand,) = operands
    target = low.target(inst)
    perm = inst.attrs.dimensions
    axes = _dims_axes(target)
    wanted: list[tuple[AxisRef, ...]] = [()] * len(perm)
    for k, p in enumerate(perm):
        wanted[p] = axes[k]
    x = low.reshard(operand, low.sharding(wanted, target.unreduced))
    return low.emit(inst, [x], target)


def _local_op(low, inst, operands, cleared_dims, extra_operands=(), local_attrs=None):
    """Operands resharded to the target minus `cleared_dims`; the op is local.
    `local_attrs(local operand dims)` gives the attributes for local shapes, if they differ."""
    target = low.target(inst)
    compute = _clear(target, cleared_dims)
    args = [low.reshard(o, compute) for o in operands]
    args += [low.replicate(o) for o in extra_operands]
    attrs = None if local_attrs is None else local_attrs(args[0].inst.shape.dims)
    return low.reshard(low.emit(inst, args, compute, attrs=attrs), target)


@HANDLERS.register("dynamic-slice")
def dynamic_slice(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    operand, *indices = operands
    if len(indices) == 1 and operand.global_shape.rank != 1:
        return _local_op(low, inst, [operand], set(range(operand.global_shape.rank)), indices)
    dims = {d for d, n in enumerate(inst.attrs.dynamic_slice_sizes)
            if n != operand.global_shape.dims[d]}

    def local_attrs(local):
        return dataclasses.replace(inst.attrs, dynamic_slice_sizes=tuple(
            n if d in dims else local[d] for d, n in enumerate(inst.attrs.dynamic_slice_sizes)))
    return _local_op(low, inst, [operand], dims, indices, local_attrs)


@HANDLERS.register("iota")
def iota(low: Lowering, inst: Instruction, operands: list,
         wanted: TensorSharding | None = None) -> PartValue:
    wanted = wanted or low.target(inst)
    target = wanted.replace(unreduced=())
    value = low.emit(inst, [], target)
    low.recompute[value.inst] = (lambda t: iota(low, inst, operands, t), lambda t: 0.0)
    dim = inst.attrs.iota_dimension
    axes = target.dims[dim].axes if inst.shape.rank else ()
    if not axes:
        return low.reshard(value, wanted)
    em = low.em
    local = value.inst.shape
    offset = em.axes_value(axes, local.dims[dim])
    if local.dtype is not S32:
        offset = em.op("convert", offset, shape=ArrayShape(local.dtype, ()))
    shifted = em.op("add", value.inst, em.broadcast_scalar(offset, local.dims),
                    sharding=target)
    result = PValue(shifted, target, array_shape(inst.shape))
    low.recompute[shifted] = low.recompute[value.inst]
    return low.reshard(result, wanted)


@HANDLERS.register("constant")
def constant(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    replicated = low.replicated(inst.shape.rank)
    value = low.emit(inst, [], replicated)
    low.recompute[value.inst] = (lambda t: low.reshard(value, t.replace(unreduced=())),
                                 lambda t: 0.0)
    return low.reshard(value, low.target(inst))


# ---------------------------------------------------------------------------------------------
# reshape


def reshape_groups(in_dims: Sequence[int], out_dims: Sequence[int]
                   ) -> list[tuple[list[int], list[int]]]:
    """Groups of consecutive input and output dims with equal products, in order."""
    groups, i, j = [], 0, 0
    while i < len(in_dims) or j < len(out_dims):
        gi, go, pi, pj = [], [], 1, 1
        if i < len(in_dims):
            gi.append(i)
            pi *= in_dims[i]
            i += 1
        if j < len(out_dims):
            go.append(j)
            pj *= out_dims[j]
            j += 1
        while pi != pj:
            if (pi < pj and i < len(in_dims)) or j >= len(out_dims):
                if i >= len(in_dims):
                    return [(list(range(len(in_dims))), list(range(len(out_dims))))]
                gi.append(i)
                pi *= in_dims[i]
                i += 1
            else:
                go.append(j)
                pj *= out_dims[j]
                j += 1
        groups.append((gi, go))
    return groups


def _pieces(mesh, axes):
    """Axes as (name, pre_size, size, full_size) digits."""
    result = []
    for axis in axes:
        full = mesh.shape[axis.name]
        result.append((axis.name, axis.pre_size, mesh.axis_size(axis), full))
    return result


def _ref(name, pre, size, full):
    if pre == 1 and size == full:
        return AxisRef(name)
    return AxisRef(name, (pre, size))


def distribute(mesh: Mesh, axes: Sequence[AxisRef], sizes: Sequence[int]
               ) -> list[tuple[AxisRef, ...]] | None:
    """Assign `axes` (major to minor) to dims of `sizes` so the shards are contiguous blocks:
    each dim but the last sharded one fully split. None when that is impossible."""
    result = [[] for _ in sizes]
    k, used = 0, [1] * len(sizes)
    for name, pre, size, full in _pieces(mesh, axes):
        while size > 1:
            if k >= len(sizes):
                return None
            if sizes[k] % used[k]:
                return None
            capacity = sizes[k] // used[k]
            if capacity == 1:
                k += 1
                continue
            if capacity % size == 0:
                result[k].append((name, pre, size, full))
                used[k] *= size
                size = 1
            elif size % capacity == 0:
                result[k].append((name, pre, capacity, full))
                used[k] *= capacity
                pre, size = pre * capacity, size // capacity
                k += 1
            else:
                return None
    return [merge_sub_axes(mesh, [_ref(*p) for p in pieces]) for pieces in result]


def _canonical(mesh, axes):
    return merge_sub_axes(mesh, axes)


@HANDLERS.register("reshape")
def reshape(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    (operand,) = operands
    target = low.target(inst)
    mesh = low.mesh
    in_dims, out_dims = operand.global_shape.dims, inst.shape.dims
    out_axes = _dims_axes(target)
    operand_axes: list[tuple[AxisRef, ...]] = [()] * len(in_dims)
    achieved = list(out_axes)
    for gi, go in reshape_groups(in_dims, out_dims):
        axes = tuple(a for o in go for a in out_axes[o])
        ok = False
        if axes:
            on_in = distribute(mesh, axes, [in_dims[i] for i in gi])
            on_out = distribute(mesh, axes, [out_dims[o] for o in go])
            ok = (on_in is not None and on_out is not None and all(
                on_out[n] == _canonical(mesh, out_axes[o]) for n, o in enumerate(go)))
            if ok and on_in is not None:
                for n, i in enumerate(gi):
                    operand_axes[i] = on_in[n]
        if not ok:
            for o in go:
                achieved[o] = ()
    x = low.reshard(operand, low.sharding(operand_axes))
    compute = low.sharding(achieved)
    value = low.emit(inst, [x], compute)
    return low.reshard(value, target)
