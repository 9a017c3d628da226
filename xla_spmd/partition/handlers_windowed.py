"""Data movement along sharded dims without gathering them: slice, pad, concatenate, reverse,
dynamic-update-slice, and select-and-scatter's halo scheme.

slice and pad are windowed ops with a window of one element (slice: stride and negative low
padding; pad: edge padding and interior padding as base dilation), so each keeps a sharded
dim sharded with a halo exchange (halo.py) when that moves fewer bytes than gathering it.
concatenate pads every operand to the result's extent that way and selects by position.
reverse mirrors shards with one collective-permute, reverses locally, and shifts by the
uneven padding with a halo. dynamic-update-slice keeps the operand sharded, on the dims it
updates and on those it does not (XLA's KeepPartitionedNonSlicedDimension): along each sharded
updated dim, each device cuts the (replicated along updated dims) update to its shard at its
own offset (a rotation of 2 shards' worth, never a pad to the whole dim) and selects where the
update covers its shard; unsharded updated dims are written by a local dynamic-update-slice at
the global index. select-and-scatter exchanges operand halos, scatters locally into
the extended window input and sends the halo contributions back to their owners (a reverse
halo exchange), GSPMD's scheme, except that the local op selects on wider keys (f32 as f64,
s32 as s64) whose sentinel marks the positions outside the operand and is never selected (XLA
skips a window's padding; no padding value of the operand's own type does that for every
value: a -inf padding under GE was kept over a real -inf, and replaced a NaN).

Example: slice [1:8] of f32[8] on x=4 keeps x: device i needs elements 2i+1, 2i+2, one from
its right neighbour (8 bytes moved instead of a 24-byte all-gather).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from xla_spmd.ir import (
    F64,
    S32,
    S64,
    ArrayShape,
    Builder,
    ComparisonDirection,
    PadDim,
    SliceDim,
    WindowDim,
    reducer_kind,
)
from xla_spmd.partition.halo import (
    cheaper_than_gather,
    exchange,
    halo_bytes,
    index_pairs,
    local_window,
    mask_outside,
    plan_from_starts,
    plan_window,
)
from xla_spmd.partition.park import moved_bytes, park
from xla_spmd.partition.registry import HANDLERS
from xla_spmd.partition.reshard import axes_size, plan_reshard, shard_dims
from xla_spmd.partition.tiles import concat_rounds, lower_rounds, tile_bytes
from xla_spmd.partition.uneven import mask_padding
from xla_spmd.partition.values import PValue, array_shape

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction
    from xla_spmd.partition.halo import HaloPlan
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PartValue


def _with_dims(sharding, keep, cleared):
    """`sharding` (unreduced dropped) with `cleared` dims not in `keep` replicated."""
    return sharding.replace(dims=[[] if d in cleared and d not in keep else list(s.axes)
                                  for d, s in enumerate(sharding.dims)], unreduced=())


def _unit_window_plans(low, operand, wanted, windows: dict, out_dims) -> dict:
    """dim -> HaloPlan for the one-element windows `windows` (dim -> WindowDim) worth it."""
    plans = {}
    for d, w in windows.items():
        axes = wanted.dims[d].axes
        if not axes:
            continue
        plan = plan_window(d, w, operand.global_shape.dims[d], out_dims[d],
                           axes_size(low.mesh, axes))
        if plan is not None and cheaper_than_gather(low, [operand], wanted, plan):
            plans[d] = plan
    return plans


@HANDLERS.register("slice")
def slice_(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    (operand,) = operands
    target = low.target(inst)
    dims = operand.global_shape.dims
    moved = {d: s for d, s in enumerate(inst.attrs.slice) if (s.start, s.limit, s.stride)
             != (0, dims[d], 1)}
    windows = {d: WindowDim(1, s.stride, -s.start, 0) for d, s in moved.items()}
    plans = _unit_window_plans(low, operand, target.replace(unreduced=()), windows,
                               inst.shape.dims)
    compute = _with_dims(target, plans, moved)
    x = low.reshard(operand, compute)
    local = x.inst
    for plan in plans.values():
        local = exchange(low, local, compute, plan)
    attrs = dataclasses.replace(inst.attrs, slice=tuple(
        SliceDim(0, plans[d].length, s.stride) if d in plans
        else s if d in moved else SliceDim(0, local.shape.dims[d], 1)
        for d, s in enumerate(inst.attrs.slice)))
    return low.reshard(low.emit(inst, [local], compute, attrs=attrs), target)


@HANDLERS.register("pad")
def pad(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    operand, value = operands
    target = low.target(inst)
    moved = {d: p for d, p in enumerate(inst.attrs.padding)
             if (p.low, p.high, p.interior) != (0, 0, 0)}
    windows = {d: WindowDim(1, 1, p.low, p.high, lhs_dilation=p.interior + 1)
               for d, p in moved.items()}
    plans = _unit_window_plans(low, operand, target.replace(unreduced=()), windows,
                               inst.shape.dims)
    compute = _with_dims(target, plans, moved)
    x = low.reshard(operand, compute)
    fill = low.replicate(value)
    local = x.inst
    for plan in plans.values():
        local = exchange(low, local, compute, plan, fill.inst)
    attrs = dataclasses.replace(inst.attrs, padding=tuple(
        PadDim(plans[d].window.padding_low, plans[d].window.padding_high, p.interior)
        if d in plans else p for d, p in enumerate(inst.attrs.padding)))
    return low.reshard(low.emit(inst, [local, fill], compute, attrs=attrs), target)


@HANDLERS.register("concatenate")
def concatenate(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    (dim,) = inst.attrs.dimensions
    target = low.target(inst)
    wanted = target.replace(unreduced=())
    axes = wanted.dims[dim].axes
    plans, offsets, offset = [], [], 0
    for operand in operands:
        size = operand.global_shape.dims[dim]
        offsets.append(offset)
        if axes:
            w = WindowDim(1, 1, offset, inst.shape.dims[dim] - offset - size)
            plans.append(plan_window(dim, w, size, inst.shape.dims[dim],
                                     axes_size(low.mesh, axes)))
        offset += size
    compute = _with_dims(target, (), {dim})
    results = [(inst.shape, target)]
    cost = moved_bytes(operands, compute, results)
    parked = park(low, operands[0], compute, dim) if axes else None
    if parked is not None and moved_bytes(operands, parked, results) < cost:
        compute, cost = parked, moved_bytes(operands, parked, results)
    halo = (float("inf") if not axes or any(p is None for p in plans)
            else _halo_bytes(low, operands, wanted, plans))
    pieces = _concat_pieces(low, inst, operands, wanted, dim) if axes else None
    if pieces is not None and pieces[0] < min(cost, halo):
        return pieces[1]()
    if halo > cost:
        args = [low.reshard(o, compute) for o in operands]
        return low.reshard(low.emit(inst, args, compute), target)
    em = low.em
    pieces = [exchange(low, low.reshard(o, wanted).inst, wanted, p)
              for o, p in zip(operands, plans)]
    local = pieces[0].shape.dims
    chunk = local[dim]
    position = em.op("add", em.op("iota", shape=ArrayShape(S32, local), iota_dimension=dim),
                     em.broadcast_scalar(em.axes_value(axes, chunk), local))
    result = pieces[0]
    for piece, start in zip(pieces[1:], offsets[1:]):
        inside = em.op("compare", position, em.broadcast_scalar(em.scalar(start, S32), local),
                       direction=ComparisonDirection.GE)
        result = em.op("select", inside, piece, result)
    return low.reshard(PValue(result, wanted, array_shape(inst.shape)), target)


def _concat_pieces(low, inst, operands, wanted, dim):
    """(bytes, build) for a concatenate along sharded `dim` assembled from pieces of the
    operands' tiles (tiles.py: each device receives only what it lacks), or None."""
    local = shard_dims(low.mesh, tuple(d.axes for d in wanted.dims), inst.shape.dims)
    found = concat_rounds(low.mesh, wanted, dim, [o.global_shape.dims[dim] for o in operands],
                          local)
    if found is None:
        return None
    piece, rounds = found
    cost = tile_bytes(piece, rounds, inst.shape.dtype.itemsize) + sum(
        plan_reshard(o.sharding, wanted, o.global_shape.dims,
                     o.global_shape.dtype.itemsize).bytes for o in operands)

    def build():
        em = low.em
        tiles = [low.reshard(o, wanted).inst for o in operands]
        x = tiles[0] if len(tiles) == 1 else em.op("concatenate", *tiles, dimensions=(dim,))
        value = lower_rounds(em, x, low.mesh, piece, local, rounds, dim)
        return low.reshard(PValue(value, wanted, inst.shape), low.target(inst))
    return cost, build


def _halo_bytes(low, operands, wanted, plans) -> float:
    """Bytes of resharding `operands` to `wanted` and exchanging their halos by `plans`."""
    total = 0.0
    for operand, plan in zip(operands, plans):
        shape = operand.global_shape
        total += plan_reshard(operand.sharding, wanted, shape.dims, shape.dtype.itemsize).bytes
        total += halo_bytes(low, shape, wanted, plan)
    return total


@HANDLERS.register("reverse")
def reverse(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    (operand,) = operands
    target = low.target(inst)
    wanted = target.replace(unreduced=())
    dims = set(inst.attrs.dimensions)
    mirrored = {}
    for d in sorted(dims):
        axes = wanted.dims[d].axes
        if not axes:
            continue
        n = axes_size(low.mesh, axes)
        size = operand.global_shape.dims[d]
        c = -(-size // n)
        shift = plan_from_starts(d, n * c, n, [i * c + n * c - size for i in range(n)], c)
        mirror = dataclasses.replace(shift, left=0, right=c)  # the mirror moves a whole shard
        if cheaper_than_gather(low, [operand], wanted, shift,
                               extra=halo_bytes(low, operand.global_shape, wanted, mirror)):
            mirrored[d] = shift
    compute = _with_dims(target, mirrored, dims)
    x = low.reshard(operand, compute)
    local = x.inst
    for d in mirrored:
        n = axes_size(low.mesh, compute.dims[d].axes)
        local = low.em.op("collective-permute", local, channel_id=low.em.state.channel(),
                          source_target_pairs=index_pairs(low.mesh, compute, d,
                                                          lambda j, n=n: n - 1 - j))
    value = low.emit(inst, [local], compute)
    local = value.inst
    for plan in mirrored.values():
        if plan.starts[0]:  # uneven: the mirrored shards sit `starts[0]` too far left
            local = exchange(low, local, compute, plan)
    return low.reshard(PValue(local, compute, array_shape(inst.shape)), target)


@HANDLERS.register("dynamic-update-slice")
def dynamic_update_slice(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    operand, update, *indices = operands
    target = low.target(inst)
    dims = operand.global_shape.dims
    updated = {d for d, n in enumerate(update.global_shape.dims) if n != dims[d]}
    compute = target.replace(unreduced=())
    if len(indices) != len(dims) or not any(compute.dims[d].axes for d in updated):
        compute = _with_dims(target, (), updated)
        args = [low.reshard(operand, compute), low.reshard(update, compute)]
        args += [low.replicate(i) for i in indices]
        return low.reshard(low.emit(inst, args, compute), target)
    em = low.em
    x = low.reshard(operand, compute)
    u = low.reshard(update, _with_dims(compute, (), updated)).inst
    local = x.inst.shape.dims
    # sharded updated dims: each shard slices the padded update at its own offset and selects
    # where the update covers it; unsharded updated dims keep the update's extent and are
    # written with a local dynamic-update-slice at the global index (no padding to the dim)
    window = tuple(size if d in updated and not compute.dims[d].axes else local[d]
                   for d, size in enumerate(update.global_shape.dims))
    at, mask = {}, None
    for d in sorted(updated):
        size, c = update.global_shape.dims[d], local[d]
        index = em.op("convert", low.replicate(indices[d]).inst, shape=ArrayShape(S32, ()))
        begin = em.op("clamp", em.scalar(0, S32), index, em.scalar(dims[d] - size, S32))
        if not compute.dims[d].axes:
            at[d] = begin
            continue
        offset = em.axes_value(compute.dims[d].axes, c)
        u = _update_piece(em, u, d, c, em.op("subtract", offset, begin))
        position = em.op("add", em.op("iota", shape=ArrayShape(S32, window), iota_dimension=d),
                         em.broadcast_scalar(offset, window))
        inside = em.op("and", em.op("compare", position, em.broadcast_scalar(begin, window),
                                    direction=ComparisonDirection.GE),
                       em.op("compare", position, em.broadcast_scalar(
                           em.op("add", begin, em.scalar(size, S32)), window),
                             direction=ComparisonDirection.LT))
        mask = inside if mask is None else em.op("and", mask, inside)
    placed = u
    assert mask is not None  # at least one updated dim is sharded
    if not at:
        result = em.op("select", mask, placed, x.inst, sharding=compute)
    else:
        old = em.dynamic_slice(x.inst, at, window)
        merged = em.op("select", mask, placed, old)
        zero = em.scalar(0, S32)
        result = em.op("dynamic-update-slice", x.inst, merged,
                       *[at.get(d, zero) for d in range(len(dims))], sharding=compute)
    return low.reshard(PValue(result, compute, array_shape(inst.shape)), target)


def _update_piece(em, u, d, c, rel):
    """`u` cut to `c` elements along `d`, element j being ``u[rel + j]`` wherever
    ``0 <= rel + j < size`` (`rel`: where the shard begins, in the update's coordinates);
    elsewhere any update element. At most 2c elements along `d` live at once.

    Example: size 6, c 4, rel -1: the piece starting at 0 (``u[0:4]``) rotated right by 1,
    ``[u3, u0, u1, u2]``: positions 1..3 hold u0..u2, position 0 lies before the update."""
    size = u.shape.dims[d]
    dims = list(u.shape.dims)
    dims[d] = c
    if size >= c:  # the c elements from the clamped start, then rotated into place
        start = em.op("clamp", em.scalar(0, S32), rel, em.scalar(size - c, S32))
        piece = em.dynamic_slice(u, {d: start}, dims)
    else:  # the whole update, padded to c
        start = em.scalar(0, S32)
        piece = em.op("pad", u, em.scalar(0, u.shape.dtype), padding=tuple(
            PadDim(0, c - size) if k == d else PadDim(0, 0) for k in range(u.shape.rank)))
    # rotate left by (rel - start) mod c; where the shard meets the update, rel - start > -c
    turn = em.op("remainder", em.op("add", em.op("subtract", rel, start), em.scalar(c, S32)),
                 em.scalar(c, S32))
    twice = em.op("concatenate", piece, piece, dimensions=(d,))
    return em.dynamic_slice(twice, {d: turn}, dims)


# ---------------------------------------------------------------------------------------------
# select-and-scatter


# Operand types whose select-and-scatter runs locally on a wider key: every value of the type
# has a wider twin, which leaves a sentinel free to mark the window input's positions outside
# the operand (the edges' padding, an uneven tail).
_WIDER = {"f16": F64, "bf16": F64, "f32": F64, "s8": S64, "s16": S64, "s32": S64, "u8": S64,
          "u16": S64, "u32": S64}


def _select_direction(select) -> ComparisonDirection | None:
    """The direction of `select` when it is ``compare(a, b)`` (GE, GT, LE or LT), else None."""
    root = select.root
    if root.opcode != "compare" or [getattr(o.attrs, "parameter_number", None)
                                    for o in root.operands] != [0, 1]:
        return None
    direction = root.attrs.direction
    return direction if direction in (ComparisonDirection.GE, ComparisonDirection.GT,
                                      ComparisonDirection.LE, ComparisonDirection.LT) else None


def _sentinel(wide) -> object:
    """The wide key marking a position outside the operand: -inf for floats (a real -inf
    becomes the lowest finite wide value, below every narrower value), the lowest s64."""
    return -np.inf if wide.is_float else np.iinfo(np.int64).min


def _skipping_select(low: Lowering, direction: ComparisonDirection, wide):
    """``compare(a, b, direction)`` on wide keys that never selects the sentinel: a is kept
    when b is the sentinel, replaced when a is (XLA skips the window's padding)."""
    key = (f"select-{direction.name}-skipping", wide.name)
    state = low.state
    if key not in state.reducers:
        name = state.fresh_name(f"spmd_select_{direction.name.lower()}.{wide.name}")
        b = Builder(name)
        a, c = b.parameter(ArrayShape(wide, ()), "a"), b.parameter(ArrayShape(wide, ()), "b")
        sentinel = b.constant(_sentinel(wide), wide)
        c_outside = b.compare(c, sentinel, direction=ComparisonDirection.EQ)
        a_inside = b.compare(a, sentinel, direction=ComparisonDirection.NE)
        prefer = b.compare(a, c, direction=direction)
        state.reducers[key] = b.build(b.op("or", c_outside, b.op("and", a_inside, prefer)),
                                      name)
    return state.reducers[key]


def _wide_key(low: Lowering, x, wide, sharding, plans):
    """The exchanged window input `x` as wide keys that order and compare as its values, with
    the sentinel at positions outside the operand."""
    em = low.em
    dims = x.shape.dims
    key = em.op("convert", x, shape=ArrayShape(wide, dims))
    sentinel = em.scalar(_sentinel(wide), wide)
    if wide.is_float:
        real_inf = em.op("compare", key, em.broadcast_scalar(sentinel, dims),
                         direction=ComparisonDirection.EQ)
        lowest = em.broadcast_scalar(em.scalar(float(np.finfo(np.float64).min), wide), dims)
        key = em.op("select", real_inf, lowest, key)
    for plan in plans.values():
        if plan.masked:
            key = mask_outside(low, key, sharding, plan.dim, plan.starts, plan.size, sentinel)
    return key


def select_and_scatter_halo(low: Lowering, inst: Instruction, operands: list,
                            halo_plans: Callable[..., dict[int, HaloPlan] | None]
                            ) -> PartValue | None:
    """select-and-scatter with sharded windowed dims kept sharded, or None (not supported:
    select not a GE/GT/LE/LT compare, scatter not add, an operand type without a wider one,
    or gathering is cheaper).

    Locally the window input's positions outside the operand must never be selected, as XLA
    skips the window's padding: no value of the operand's own type does that (a padding of
    -inf under GE is kept over a real -inf before it, and replaces a NaN), so the local op
    selects on wide keys (`_wide_key`) with a select that skips their sentinel, scatters the
    source in the wide type and converts back."""
    operand, source, init = operands
    dtype = operand.global_shape.dtype
    direction = _select_direction(inst.attrs.select)
    wide = _WIDER.get(dtype.name)
    if direction is None or wide is None or reducer_kind(inst.attrs.scatter) != "add":
        return None
    target = low.target(inst)
    wanted = target.replace(unreduced=())
    window = inst.attrs.window
    plans = halo_plans(low, [operand], wanted, window, source.global_shape.dims, rounds=2)
    if not plans:
        return None
    moving = {d for d, w in enumerate(window.dims)
              if (w.size, w.stride, w.padding_low, w.padding_high) != (1, 1, 0, 0)}
    compute = _with_dims(target, plans, moving)
    em = low.em
    zero = em.scalar(0, dtype)
    x = low.reshard(operand, compute).inst
    src = mask_padding(low, low.reshard(source, compute), list(plans), zero)
    for plan in plans.values():
        x = exchange(low, x, compute, plan)
    key = _wide_key(low, x, wide, compute, plans)
    attrs = dataclasses.replace(inst.attrs, window=local_window(window, plans),
                                select=_skipping_select(low, direction, wide),
                                scatter=low.state.reducer(wide, "add"))
    wide_src = em.op("convert", src.inst, shape=ArrayShape(wide, src.inst.shape.dims))
    y = em.clone(inst, [key, wide_src, em.scalar(0, wide)], key.shape, attrs=attrs)
    y = em.op("convert", y, shape=ArrayShape(dtype, y.shape.dims))
    for plan in reversed(list(plans.values())):
        y = _return_halo(low, y, compute, plan)
    init_local = em.broadcast_scalar(low.replicate(init).inst, y.shape.dims)
    result = em.op("add", init_local, y, sharding=compute)
    return low.reshard(PValue(result, compute, array_shape(inst.shape)), target)


def _return_halo(low, y, sharding, plan):
    """The reverse of `exchange`: `y` holds contributions to each device's window input; each
    owner receives and adds those that landed on its elements."""
    em = low.em
    dim, c = plan.dim, plan.shard
    first = [i * c - plan.left for i in range(len(plan.starts))]
    extra_low = max(0, max(f - s for f, s in zip(first, plan.starts)))
    frame_size = plan.left + c + plan.right
    extra_high = max(0, max(s + plan.length - f - frame_size
                            for f, s in zip(first, plan.starts)))
    dims = list(y.shape.dims)
    dims[dim] = extra_low + frame_size + extra_high
    frame = em.broadcast_scalar(em.scalar(0, y.shape.dtype), dims)
    offsets = [s - f + extra_low for s, f in zip(plan.starts, first)]
    zero = em.scalar(0, S32)
    index = [zero] * y.shape.rank
    index[dim] = em.device_value([offsets[sharding.shard_index(d)[dim]]
                                  for d in range(low.mesh.size)])
    frame = em.op("dynamic-update-slice", frame, y, *index)

    def cut(start, limit):
        return em.op("slice", frame, slice=tuple(
            SliceDim(extra_low + start, extra_low + limit) if d == dim else SliceDim(0, n)
            for d, n in enumerate(frame.shape.dims)))
    total = cut(plan.left, plan.left + c)
    for k in range(-plan.left // c, -(-plan.right // c) + 1):
        lo, hi = max(0, plan.left + k * c), min(frame_size, plan.left + (k + 1) * c)
        if k == 0 or lo >= hi:
            continue
        moved = em.op("collective-permute", cut(lo, hi), channel_id=em.state.channel(),
                      source_target_pairs=index_pairs(low.mesh, sharding, dim,
                                                      lambda j, k=k: j + k))
        at = lo - plan.left - k * c
        moved = em.op("pad", moved, em.scalar(0, y.shape.dtype), padding=tuple(
            PadDim(at, c - at - (hi - lo)) if d == dim else PadDim(0, 0)
            for d in range(y.shape.rank)))
        total = em.op("add", total, moved)
    return total

