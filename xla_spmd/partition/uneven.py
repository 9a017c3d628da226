"""Uneven shards: dims that their axes do not divide are padded to the ceiling shard size.

The padding holds garbage, so before an op that would mix it into real data (reductions,
contractions, windowed ops) it is replaced by the op's identity: a mask ``iota + offset < d``
(offset from a partition-id table) selects between the value and the identity.

Example: f32[7] on x=4 has shards of 2; device 3 holds element 6 and one padded element, so
its mask is ``[6, 7] < 7 = [true, false]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from xla_spmd.ir import PRED, S32, ArrayShape, ComparisonDirection, Instruction
from xla_spmd.partition.reshard import axes_size
from xla_spmd.partition.values import PValue

if TYPE_CHECKING:
    from xla_spmd.partition.partitioner import Lowering


def uneven_dims(value: PValue, dims: Iterable[int] | None = None) -> list[int]:
    """Dims of `value` (a PValue) whose shards carry padding on some device."""
    mesh = value.sharding.mesh
    candidates = range(value.global_shape.rank) if dims is None else dims
    result = []
    for dim in candidates:
        axes = value.sharding.dims[dim].axes
        n = axes_size(mesh, axes)
        if n > 1 and value.global_shape.dims[dim] % n:
            result.append(dim)
    return result


def valid_mask(low: Lowering, value: PValue, dims: Iterable[int]) -> Instruction | None:
    """pred[local dims]: true where `value` holds real data along `dims` (None: everywhere)."""
    em = low.em
    dims = uneven_dims(value, dims)
    if not dims:
        return None
    local = value.inst.shape.dims
    mask = None
    for dim in dims:
        axes = value.sharding.dims[dim].axes
        iota = em.op("iota", shape=ArrayShape(S32, local), iota_dimension=dim)
        offset = em.axes_value(axes, local[dim])
        position = em.op("add", iota, em.broadcast_scalar(offset, local))
        limit = em.broadcast_scalar(em.scalar(value.global_shape.dims[dim], S32), local)
        inside = em.op("compare", position, limit, direction=ComparisonDirection.LT)
        mask = inside if mask is None else em.op("and", mask, inside)
    assert mask is not None and mask.shape.dtype is PRED
    return mask


def mask_padding(low: Lowering, value: PValue, dims: Iterable[int], fill: Instruction
                 ) -> PValue:
    """`value` with its padding along `dims` replaced by the scalar `fill`."""
    mask = valid_mask(low, value, dims)
    if mask is None:
        return value
    em = low.em
    filled = em.broadcast_scalar(fill, value.inst.shape.dims)
    inst = em.op("select", mask, value.inst, filled, sharding=value.sharding)
    return PValue(inst, value.sharding, value.global_shape)


def zero_padding(low: Lowering, value: PValue, dims: Iterable[int]) -> PValue:
    return mask_padding(low, value, dims, low.em.scalar(0, value.global_shape.dtype))
