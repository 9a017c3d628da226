"""dot and convolution: factor-based choice of the cheapest local contraction.

A contraction's dims form factors: batch (lhs, rhs, out), lhs-free (lhs, out), rhs-free
(rhs, out), contracting (lhs, rhs) and, for convolutions, spatial (lhs, out: sharded with a halo
exchange of the lhs, halo.py, its bytes counted) and groups (feature or batch groups, kept
whole on each device). Each factor takes the axes it has on one of the tensors where it
appears (or none); for every such assignment with no axis used twice the cost is the bytes of
resharding lhs, rhs, and the local result (partial over the contracting factors' axes) to the
wanted output sharding: all-reduce, or reduce-scatter when the output is sharded on those
axes. The cheapest wins, ties broken by local flops (GSPMD's choice between resharding lhs,
rhs or the output).

Example (Megatron row-parallel): x ``[{"data"}, {"model"}]`` . w ``[{"model"}, {}]`` ->
``[{"data"}, {}]``: m=data, k=model, n=none costs only the all-reduce over "model".
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xla_spmd.ir import WindowDim
from xla_spmd.mesh import overlaps_any
from xla_spmd.partition.halo import (
    exchange,
    halo_bytes,
    local_window,
    plan_from_starts,
    plan_window,
)
from xla_spmd.partition.registry import HANDLERS
from xla_spmd.partition.reshard import axes_size, plan_reshard
from xla_spmd.partition.uneven import zero_padding
from xla_spmd.partition.values import PValue

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction, Shape
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PartValue
    from xla_spmd.sharding import TensorSharding

MAX_ASSIGNMENTS = 4096


@dataclass(frozen=True)
class Factor:
    size: int
    lhs: int | None = None
    rhs: int | None = None
    out: int | None = None
    contracting: bool = False
    replicated: bool = False  # dims that must stay whole
    window: WindowDim | None = None  # a convolution's spatial dim (halo exchange)
    window_index: int = -1
    in_size: int = 0  # a spatial dim: the lhs size
    groups: int = 0  # feature / batch groups: shards must divide them
    group_attr: str = ""  # the attribute counting them
    kernel_lhs: int | None = None  # a kernel spatial dim the window spans: its lhs dim


def _lhs_plan(factor: Factor, mesh, axes):
    if factor.kernel_lhs is not None:
        return _kernel_plan(factor, axes_size(mesh, axes))
    assert factor.lhs is not None and factor.window is not None  # a spatial dim's factor
    return plan_window(factor.lhs, factor.window, factor.in_size, factor.size,
                       axes_size(mesh, axes))


def _kernel_plan(factor: Factor, shards: int):
    """A kernel spatial dim of size K that the window spans whole (a filter gradient: the
    kernel is the output gradient), split in shards of c = K/N: device j correlates its c
    kernel positions with the lhs window input starting at ``j*c - padding_low`` (a halo,
    zeros outside), giving a partial sum of the whole output dim."""
    w, size = factor.window, factor.size
    assert w is not None and factor.kernel_lhs is not None  # a kernel spatial dim's factor
    if size % shards:
        return None
    c = size // shards
    out = factor.in_size + w.padding_low + w.padding_high - size + 1
    starts = [j * c - w.padding_low for j in range(shards)]
    return plan_from_starts(factor.kernel_lhs, factor.in_size, shards, starts, c + out - 1,
                            WindowDim(c))


def dot_factors(inst: Instruction, lhs_rank: int, rhs_rank: int) -> list[Factor]:
    a = inst.attrs
    lb, lc, rb, rc = (a.lhs_batch_dims, a.lhs_contracting_dims, a.rhs_batch_dims,
                      a.rhs_contracting_dims)
    factors = []
    out = 0
    for l, r in zip(lb, rb):
        factors.append(Factor(inst.shape.dims[out], l, r, out))
        out += 1
    for l in range(lhs_rank):
        if l not in lb and l not in lc:
            factors.append(Factor(inst.shape.dims[out], lhs=l, out=out))
            out += 1
    for r in range(rhs_rank):
        if r not in rb and r not in rc:
            factors.append(Factor(inst.shape.dims[out], rhs=r, out=out))
            out += 1
    for l, r in zip(lc, rc):
        factors.append(Factor(inst.operands[0].shape.dims[l], l, r, contracting=True))
    return factors


def conv_factors(inst: Instruction) -> list[Factor]:
    """Factors of a convolution. Feature groups: lhs features and output features split into
    G groups, so sharding both by a number of shards dividing G keeps whole groups local
    (local feature_group_count G/n); the kernel's input feature dim stays whole. Batch groups
    (filter gradients): the lhs batch splits into B groups tied to output feature groups."""
    a = inst.attrs
    dn = a.dim_labels
    lhs, rhs = inst.operands
    out = inst.shape.dims
    if a.feature_group_count > 1:
        factors = [
            Factor(out[dn.output_batch], lhs=dn.input_batch, out=dn.output_batch),
            Factor(out[dn.output_feature], lhs=dn.input_feature, rhs=dn.kernel_output_feature,
                   out=dn.output_feature, groups=a.feature_group_count,
                   group_attr="feature_group_count"),
            Factor(rhs.shape.dims[dn.kernel_input_feature], rhs=dn.kernel_input_feature,
                   replicated=True)]
    elif a.batch_group_count > 1:
        factors = [
            Factor(out[dn.output_batch], out=dn.output_batch, replicated=True),
            Factor(out[dn.output_feature], lhs=dn.input_batch, rhs=dn.kernel_output_feature,
                   out=dn.output_feature, groups=a.batch_group_count,
                   group_attr="batch_group_count"),
            Factor(lhs.shape.dims[dn.input_feature], dn.input_feature,
                   dn.kernel_input_feature, contracting=True)]
    else:
        factors = [
            Factor(out[dn.output_batch], lhs=dn.input_batch, out=dn.output_batch),
            Factor(out[dn.output_feature], rhs=dn.kernel_output_feature,
                   out=dn.output_feature),
            Factor(lhs.shape.dims[dn.input_feature], dn.input_feature,
                   dn.kernel_input_feature, contracting=True)]
    for n, (i, o) in enumerate(zip(dn.input_spatial, dn.output_spatial)):
        w = a.window.dims[n]
        factors.append(Factor(out[o], lhs=i, out=o, window=w, window_index=n,
                              in_size=lhs.shape.dims[i]))
        k = dn.kernel_spatial[n]
        if ((w.stride, w.lhs_dilation, w.rhs_dilation, w.reversal) == (1, 1, 1, False)
                and w.size == rhs.shape.dims[k] > 1 and a.feature_group_count == 1):
            factors.append(Factor(w.size, rhs=k, contracting=True, window=w, window_index=n,
                                  in_size=lhs.shape.dims[i], kernel_lhs=i))
    return factors


def _options(factor: Factor, lhs: PValue, rhs: PValue, target) -> list[tuple]:
    if factor.replicated:
        return [()]
    found = []
    for value, dim in ((lhs.sharding, factor.lhs), (rhs.sharding, factor.rhs),
                       (target, factor.out)):
        if dim is not None:
            axes = tuple(value.dims[dim].axes)
            if axes not in found:
                found.append(axes)
    if () not in found:
        found.append(())
    return found


def _valid(assignment) -> bool:
    seen = []
    for axes in assignment:
        for axis in axes:
            if overlaps_any(axis, seen):
                return False
            seen.append(axis)
    return True


def choose(low: Lowering, factors: Sequence[Factor], lhs: PValue, rhs: PValue,
           out_shape: Shape, target: TensorSharding
           ) -> tuple[TensorSharding, TensorSharding, TensorSharding]:
    """The cheapest (lhs sharding, rhs sharding, local result sharding) for a contraction."""
    options = [_options(f, lhs, rhs, target) for f in factors]
    while math.prod(len(o) for o in options) > MAX_ASSIGNMENTS:
        longest = max(range(len(options)), key=lambda i: len(options[i]))
        options[longest] = options[longest][:-2] + options[longest][-1:]
    best, best_key = None, None
    mesh = low.mesh
    for assignment in itertools.product(*options):
        if not _valid(assignment) or not all(
                not axes or not f.groups or f.groups % axes_size(mesh, axes) == 0
                for f, axes in zip(factors, assignment)):
            continue
        plans = [_lhs_plan(f, mesh, axes) if f.window is not None and axes else None
                 for f, axes in zip(factors, assignment)]
        if any(p is None and f.window is not None and axes
               for p, f, axes in zip(plans, factors, assignment)):
            continue
        lhs_axes = [()] * lhs.global_shape.rank
        rhs_axes = [()] * rhs.global_shape.rank
        out_axes = [()] * out_shape.rank
        unreduced = []
        if any(axes and f.kernel_lhs is not None and any(
                g.lhs == f.kernel_lhs and b for g, b in zip(factors, assignment))
                for f, axes in zip(factors, assignment)):
            continue  # an lhs dim is split by its output dim or by the kernel, not both
        for factor, axes in zip(factors, assignment):
            if factor.kernel_lhs is not None and axes:
                lhs_axes[factor.kernel_lhs] = axes
            if factor.lhs is not None:
                lhs_axes[factor.lhs] = axes
            if factor.rhs is not None:
                rhs_axes[factor.rhs] = axes
            if factor.out is not None:
                out_axes[factor.out] = axes
            if factor.contracting:
                unreduced.extend(axes)
        shardings = (low.sharding(lhs_axes), low.sharding(rhs_axes),
                     low.sharding(out_axes, unreduced))
        cost = (plan_reshard(lhs.sharding, shardings[0], lhs.global_shape.dims,
                             lhs.global_shape.dtype.itemsize).bytes
                + plan_reshard(rhs.sharding, shardings[1], rhs.global_shape.dims,
                               rhs.global_shape.dtype.itemsize).bytes
                + plan_reshard(shardings[2], target, out_shape.dims,
                               out_shape.dtype.itemsize).bytes
                + sum(halo_bytes(low, lhs.global_shape, shardings[0], p)
                      for p in plans if p is not None))
        flops = math.prod(-(-f.size // axes_size(mesh, axes))
                          for f, axes in zip(factors, assignment))
        key = (cost, flops)
        if best_key is None or key < best_key:
            best, best_key = shardings, key
    assert best is not None, "the assignment with every factor replicated is always valid"
    return best


def contraction(low: Lowering, inst: Instruction, operands: list,
                factors: list) -> PartValue:
    lhs, rhs = operands
    target = low.target(inst)
    lhs_sharding, rhs_sharding, out_sharding = choose(low, factors, lhs, rhs, inst.shape,
                                                      target)
    x = low.reshard(lhs, lhs_sharding)
    y = low.reshard(rhs, rhs_sharding)
    x = zero_padding(low, x, [f.lhs for f in factors if f.contracting and f.lhs is not None])
    y = zero_padding(low, y, [f.rhs for f in factors if f.contracting])
    attrs = inst.attrs
    plans = {}
    for f in factors:
        axes = x.sharding.dims[f.lhs].axes if f.lhs is not None else ()
        if f.kernel_lhs is not None:
            axes = y.sharding.dims[f.rhs].axes
        if f.window is not None and axes:
            plans[f.window_index] = _lhs_plan(f, low.mesh, axes)
        if f.groups and axes:
            attrs = dataclasses.replace(attrs, **{
                f.group_attr: f.groups // axes_size(low.mesh, axes)})
    if plans:
        zero = low.em.scalar(0, x.global_shape.dtype)
        local = x.inst
        for plan in plans.values():
            local = exchange(low, local, x.sharding, plan, zero)
        x = PValue(local, x.sharding, x.global_shape)
        attrs = dataclasses.replace(attrs, window=local_window(inst.attrs.window, plans))
    result = low.emit(inst, [x, y], out_sharding, attrs=attrs)
    return low.reshard(result, target)


@HANDLERS.register("dot")
def dot(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    lhs, rhs = operands
    return contraction(low, inst, operands,
                       dot_factors(inst, lhs.global_shape.rank, rhs.global_shape.rank))


@HANDLERS.register("convolution")
def convolution(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    return contraction(low, inst, operands, conv_factors(inst))
