"""reduce, reduce-window, select-and-scatter and sort.

reduce: kept dims take the result's axes; reduced dims keep the axes the operand already has
there (when free), so the op reduces locally (padding masked with the init value, the
reducer's identity) and one all-reduce with the op's own reducer combines the partial results
over the axes of the reduced dims. A variadic reduce (argmax: (value, index) pairs) reduces
locally too; since an all-reduce combines each operand alone, the partial results of each
device are all-gathered along a new minor dim and reduced again with the op's own reducer
(as XLA does): (n-1) x the partial result instead of gathering the operand. JAX's argmax and
argmin reducers are recognised and combined with one all-reduce of packed (value, index)
pairs instead (argreduce.py): 2(n-1)/n x the pairs.

Windowed ops keep a sharded windowed dim sharded with a halo exchange (halo.py) when that moves
fewer bytes than gathering it; sort keeps its sorted dim replicated, its axes parked on another
dim when two all-to-alls move less than gathering it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from xla_spmd.ir import TupleShape, reducer_kind
from xla_spmd.mesh import overlaps_any
from xla_spmd.partition.argreduce import FLOAT_ARG_VALUES, arg_kind, combine_arg_partials
from xla_spmd.partition.halo import cheaper_than_gather, exchange, local_window, plan_window
from xla_spmd.partition.handlers_windowed import select_and_scatter_halo
from xla_spmd.partition.park import moved_bytes, park
from xla_spmd.partition.registry import HANDLERS
from xla_spmd.partition.reshard import axes_size
from xla_spmd.partition.uneven import mask_padding
from xla_spmd.partition.values import PTuple, PValue, array_shape, unflatten

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PartValue


@HANDLERS.register("reduce")
def reduce(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    half = len(operands) // 2
    inputs, inits = operands[:half], operands[half:]
    targets = low.targets(inst)
    target = targets[0]
    reduced = tuple(inst.attrs.dimensions)
    rank = inputs[0].global_shape.rank
    kept = [d for d in range(rank) if d not in reduced]
    out_axes = [tuple(d.axes) for d in target.dims]
    used = {a for axes in out_axes for a in axes}
    operand_axes = [()] * rank
    for k, d in enumerate(kept):
        operand_axes[d] = out_axes[k]
    partial = []
    current = inputs[0].sharding
    for d in reduced:
        axes = []
        for axis in current.dims[d].axes:
            if overlaps_any(axis, used) or overlaps_any(axis, partial):
                break
            axes.append(axis)
        operand_axes[d] = tuple(axes)
        partial.extend(axes)
    wanted = low.sharding(operand_axes)
    args = []
    for x, init in zip(inputs, inits):
        x = low.reshard(x, wanted)
        init = low.replicate(init)
        args.append(mask_padding(low, x, reduced, init.inst))
    args += [low.replicate(i) for i in inits]
    local_sharding = low.sharding(out_axes)
    shardings = [local_sharding] * half
    if isinstance(inst.shape, TupleShape):
        local_shape = TupleShape(tuple(low.local_shape(array_shape(s), local_sharding)
                                       for s in inst.shape.elements))
        local = low.em.clone(inst, [a.inst for a in args], local_shape)
        if partial:
            local = _combine_partials(low, inst, local, partial, args[half:])
        value = low.explode(local, shardings, inst.shape)
        assert isinstance(value, PTuple)  # a tuple-shaped reduce
        flat = [low.reshard(v, t) for v, t in zip(value.items, targets)]
        return unflatten(inst.shape, flat)
    value = low.emit(inst, args, local_sharding)
    if partial:
        # Partial results stay unreduced only where the target sums them as the reducer does
        # (partial sums); partial maxima (or products) are finished here, whatever the target.
        keeps = reducer_kind(inst.attrs.to_apply) == "add" and target.reduction == "sum"
        kept_unreduced = [a for a in partial if keeps and a in target.unreduced]
        resolve = [a for a in partial if a not in kept_unreduced]
        inst_reduced = value.inst
        if resolve:
            inst_reduced = low.em.all_reduce(value.inst, resolve, inst.attrs.to_apply,
                                             sharding=local_sharding)
        value = PValue(inst_reduced, low.sharding(out_axes, kept_unreduced), inst.shape)
    return low.reshard(value, target)


def _values_unused(low, inst) -> bool:
    """Whether only the indices of the arg-reduce `inst` are used (``jnp.argmax``): the packed
    all-reduce returns a winning -0.0 as +0.0 and a NaN as the canonical NaN, where the
    reducer's own fold keeps whichever its order meets, so a used float value keeps the
    all-gather and the bits of the unpartitioned reduce."""
    def used(value) -> bool:
        return value is low.root or bool(low.uses.get(value))

    return inst is not low.root and all(
        user.opcode == "get-tuple-element" and (user.attrs.index != 0 or not used(user))
        for user in low.uses.get(inst, ()))


def _combine_partials(low, inst, local, partial, inits):
    """The variadic reduce `inst` finished across the devices of `partial` axes: each
    result's partial values all-gathered along a new minor dim, then reduced again."""
    em = low.em
    kind = arg_kind(inst.attrs.to_apply)
    if kind is not None and (_values_unused(low, inst)
                             or local.shape.elements[0].dtype not in FLOAT_ARG_VALUES):
        return combine_arg_partials(em, local, partial, kind)
    gathered = []
    for index, shape in enumerate(local.shape.elements):
        part = em.op("get-tuple-element", local, index=index)
        part = em.reshape(part, shape.dims + (1,))
        gathered.append(em.all_gather(part, shape.rank, partial))
    rank = local.shape.elements[0].rank
    return em.op("reduce", *gathered, *[i.inst for i in inits], shape=local.shape,
                 dimensions=(rank,), to_apply=inst.attrs.to_apply)


def _moving(window) -> set[int]:
    return {d for d, w in enumerate(window.dims)
            if (w.size, w.stride, w.padding_low, w.padding_high, w.lhs_dilation,
                w.rhs_dilation) != (1, 1, 0, 0, 1, 1)}


def _halo_plans(low, values, compute, window, out_dims, rounds=1) -> dict:
    """Window dims sharded in `compute` that keep their axes with a halo exchange (cheaper
    than gathering them), with their plans."""
    plans = {}
    for d in sorted(_moving(window)):
        axes = compute.dims[d].axes
        if not axes:
            continue
        plan = plan_window(d, window.dims[d], values[0].global_shape.dims[d], out_dims[d],
                           axes_size(low.mesh, axes))
        if plan is not None and cheaper_than_gather(low, values, compute, plan, rounds):
            plans[d] = plan
    return plans


def _windowed(low, inst, operands, window, count):
    """First `count` operands sharded like the result; windowed dims keep their axes with a
    halo exchange (padding filled with the init value) or are gathered; rest replicated."""
    targets = low.targets(inst)
    target = targets[0]
    wanted = target.replace(unreduced=())
    first = inst.shape.elements[0] if isinstance(inst.shape, TupleShape) else inst.shape
    out_dims = first.dims
    plans = _halo_plans(low, operands[:count], wanted, window, out_dims)
    compute = wanted.replace(dims=[[] if d in _moving(window) and d not in plans
                                   else list(s.axes) for d, s in enumerate(wanted.dims)])
    args = [low.reshard(o, compute) for o in operands[:count]]
    inits = [low.replicate(o) for o in operands[count:]]
    attrs = None
    if plans:
        for k, (x, init) in enumerate(zip(args, inits)):
            inst_x = x.inst
            for plan in plans.values():
                inst_x = exchange(low, inst_x, compute, plan, init.inst)
            args[k] = PValue(inst_x, compute, x.global_shape)
        attrs = dataclasses.replace(inst.attrs, window=local_window(window, plans))
    args += inits
    if isinstance(inst.shape, TupleShape):
        local_shape = TupleShape(tuple(low.local_shape(s, compute) for s in inst.shape.elements))
        local = low.em.clone(inst, [a.inst for a in args], local_shape, attrs=attrs)
        value = low.explode(local, [compute] * len(inst.shape.elements), inst.shape)
        return unflatten(inst.shape, [low.reshard(v, t) for v, t in zip(value.items, targets)])
    return low.reshard(low.emit(inst, args, compute, attrs=attrs), target)


@HANDLERS.register("reduce-window")
def reduce_window(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    return _windowed(low, inst, operands, inst.attrs.window, len(operands) // 2)


@HANDLERS.register("select-and-scatter")
def select_and_scatter(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    operand, source, init = operands
    target = low.target(inst)
    window = inst.attrs.window
    result = select_and_scatter_halo(low, inst, operands, _halo_plans)
    if result is not None:
        return result
    moving = _moving(window)
    compute = target.replace(dims=[[] if d in moving else list(s.axes)
                                   for d, s in enumerate(target.dims)], unreduced=())
    args = [low.reshard(operand, compute), low.reshard(source, compute), low.replicate(init)]
    return low.reshard(low.emit(inst, args, compute), target)


@HANDLERS.register("sort")
def sort(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    targets = low.targets(inst)
    target = targets[0]
    (dim,) = inst.attrs.dimensions
    compute = target.replace(dims=[[] if d == dim else list(s.axes)
                                   for d, s in enumerate(target.dims)], unreduced=())
    results = [(o.global_shape, t) for o, t in zip(operands, targets)]
    parked = park(low, operands[0], compute, dim)
    if parked is not None and (moved_bytes(operands, parked, results)
                               < moved_bytes(operands, compute, results)):
        compute = parked
    args = [low.reshard(o, compute) for o in operands]
    if isinstance(inst.shape, TupleShape):
        local_shape = TupleShape(tuple(low.local_shape(array_shape(s), compute)
                                       for s in inst.shape.elements))
        local = low.em.clone(inst, [a.inst for a in args], local_shape)
        value = low.explode(local, [compute] * len(inst.shape.elements), inst.shape)
        assert isinstance(value, PTuple)  # a tuple-shaped sort
        return unflatten(inst.shape, [low.reshard(v, t) for v, t in zip(value.items, targets)])
    return low.reshard(low.emit(inst, args, compute), target)
