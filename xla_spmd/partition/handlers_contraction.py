"""dot and convolution: factor-based choice of the cheapest local contraction.

A contraction's dims form factors: batch (lhs, rhs, out), lhs-free (lhs, out), rhs-free
(rhs, out), contracting (lhs, rhs) and, for convolutions, spatial (kept replicated). Each
factor takes the axes it has on one of the tensors where it appears (or none); for every such
assignment with no axis used twice the cost is the bytes of resharding lhs, rhs, and the local
result (partial over the contracting factors' axes) to the wanted output sharding: all-reduce,
or reduce-scatter when the output is sharded on those axes. The cheapest wins, ties broken by
local flops (GSPMD's choice between resharding lhs, rhs or the output).

Example (Megatron row-parallel): x ``[{"data"}, {"model"}]`` . w ``[{"model"}, {}]`` ->
``[{"data"}, {}]``: m=data, k=model, n=none costs only the all-reduce over "model".
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass

from xla_spmd.partition.halo import can_exchange, exchange, halo_sizes, unpadded
from xla_spmd.partition.partitioner import PValue
from xla_spmd.partition.registry import HANDLERS
from xla_spmd.partition.reshard import axes_size, plan_reshard
from xla_spmd.partition.uneven import zero_padding

MAX_ASSIGNMENTS = 4096


@dataclass(frozen=True)
class Factor:
    size: int
    lhs: int | None = None
    rhs: int | None = None
    out: int | None = None
    contracting: bool = False
    replicated: bool = False  # spatial dims of a convolution without a halo exchange
    halo: tuple[int, int] | None = None  # spatial dims sharded with a halo exchange
    window_index: int = -1


def dot_factors(inst, lhs_rank: int, rhs_rank: int) -> list[Factor]:
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


def conv_factors(inst) -> list[Factor] | None:
    a = inst.attrs
    if a.feature_group_count != 1 or a.batch_group_count != 1:
        return None
    dn = a.dim_labels
    lhs, rhs = inst.operands
    factors = [
        Factor(inst.shape.dims[dn.output_batch], lhs=dn.input_batch, out=dn.output_batch),
        Factor(inst.shape.dims[dn.output_feature], rhs=dn.kernel_output_feature,
               out=dn.output_feature),
        Factor(lhs.shape.dims[dn.input_feature], dn.input_feature, dn.kernel_input_feature,
               contracting=True)]
    for n, (i, o) in enumerate(zip(dn.input_spatial, dn.output_spatial)):
        halo = halo_sizes(a.window.dims[n])
        factors.append(Factor(inst.shape.dims[o], lhs=i, out=o, replicated=halo is None,
                              halo=halo, window_index=n))
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
            if any(axis.overlaps(other) for other in seen):
                return False
            seen.append(axis)
    return True


def choose(low, factors, lhs: PValue, rhs: PValue, out_shape, target):
    """The cheapest (lhs sharding, rhs sharding, local result sharding) for a contraction."""
    options = [_options(f, lhs, rhs, target) for f in factors]
    while math.prod(len(o) for o in options) > MAX_ASSIGNMENTS:
        longest = max(range(len(options)), key=lambda i: len(options[i]))
        options[longest] = options[longest][:-2] + options[longest][-1:]
    best, best_key = None, None
    mesh = low.mesh
    for assignment in itertools.product(*options):
        if not _valid(assignment) or not all(
                f.halo is None or can_exchange(mesh, axes, f.size, f.halo)
                for f, axes in zip(factors, assignment)):
            continue
        lhs_axes = [()] * lhs.global_shape.rank
        rhs_axes = [()] * rhs.global_shape.rank
        out_axes = [()] * out_shape.rank
        unreduced = []
        for factor, axes in zip(factors, assignment):
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
                               out_shape.dtype.itemsize).bytes)
        flops = math.prod(-(-f.size // axes_size(mesh, axes))
                          for f, axes in zip(factors, assignment))
        key = (cost, flops)
        if best_key is None or key < best_key:
            best, best_key = shardings, key
    return best


def contraction(low, inst, operands, factors):
    lhs, rhs = operands
    target = low.target(inst)
    lhs_sharding, rhs_sharding, out_sharding = choose(low, factors, lhs, rhs, inst.shape,
                                                      target)
    x = low.reshard(lhs, lhs_sharding)
    y = low.reshard(rhs, rhs_sharding)
    x = zero_padding(low, x, [f.lhs for f in factors if f.contracting])
    y = zero_padding(low, y, [f.rhs for f in factors if f.contracting])
    attrs = None
    halo = [f for f in factors if f.halo is not None and x.sharding.dims[f.lhs].axes]
    if halo:
        zero = low.em.scalar(0, x.global_shape.dtype)
        for f in halo:
            x = PValue(exchange(low, x, f.lhs, f.halo, zero), x.sharding, x.global_shape)
        attrs = dataclasses.replace(inst.attrs, window=unpadded(
            inst.attrs.window, {f.window_index for f in halo}))
    result = low.emit(inst, [x, y], out_sharding, attrs=attrs)
    return low.reshard(result, target)


@HANDLERS.register("dot")
def dot(low, inst, operands):
    lhs, rhs = operands
    return contraction(low, inst, operands,
                       dot_factors(inst, lhs.global_shape.rank, rhs.global_shape.rank))


@HANDLERS.register("convolution")
def convolution(low, inst, operands):
    factors = conv_factors(inst)
    if factors is None:
        from xla_spmd.partition.handlers_elementwise import generic
        return generic(low, inst, operands)
    return contraction(low, inst, operands, factors)
