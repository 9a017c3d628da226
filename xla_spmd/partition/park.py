"""Parking: an op that needs one dim whole (sort, concatenate along a sharded dim) runs
with that dim's axes moved onto another dim, so two all-to-alls (in and out) replace an
all-gather, as GSPMD does for sort along a sharded dim.

Example: sort along dim 1 of f32[16,64] sharded (None, "x") over 8 devices: all-to-all to
("x", None), sort locally, all-to-all back: 2 x 7/8 x 512 B instead of 7 x 512 B.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from xla_spmd.partition.reshard import axes_size, plan_reshard
from xla_spmd.partition.values import array_shape

if TYPE_CHECKING:
    from xla_spmd.ir import Shape
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PValue
    from xla_spmd.sharding import TensorSharding


def park(low: Lowering, operand: PValue, compute: TensorSharding, dim: int
         ) -> TensorSharding | None:
    """`compute` (`dim` replicated) with the axes `operand` has on `dim` moved onto the
    largest other dim they divide evenly, so that an all-to-all, not an all-gather, frees
    `dim` (GSPMD's sort along a sharded dim); None when no dim takes them."""
    used = {a for d in compute.dims for a in d.axes}
    moved = [a for a in operand.sharding.dims[dim].axes
             if not any(a.overlaps(u) for u in used)]
    if not moved:
        return None
    sizes = operand.global_shape.dims
    best = None
    for d, axes in enumerate(compute.dims):
        if d == dim or sizes[d] % (axes_size(low.mesh, axes.axes + tuple(moved))):
            continue
        if best is None or sizes[d] // axes_size(low.mesh, axes.axes) > \
                sizes[best] // axes_size(low.mesh, compute.dims[best].axes):
            best = d
    if best is None:
        return None
    return compute.replace(dims=[list(s.axes) + (moved if d == best else [])
                                 for d, s in enumerate(compute.dims)])


def moved_bytes(operands: Iterable[PValue], compute: TensorSharding,
                results: Iterable[tuple[Shape, TensorSharding]]) -> float:
    """Bytes to reshard `operands` to `compute`, and results ((global shape, wanted
    sharding) pairs) from `compute` to what is wanted."""
    total = 0.0
    for value in operands:
        shape = value.global_shape
        total += plan_reshard(value.sharding, compute, shape.dims, shape.dtype.itemsize).bytes
    for global_shape, target in results:
        shape = array_shape(global_shape)
        total += plan_reshard(compute, target, shape.dims, shape.dtype.itemsize).bytes
    return total
