"""Halo exchange for windowed ops sharded along a spatial dim.

A "same"-size window of stride 1 (``low + high == size - 1``) over a dim split evenly into
shards of c >= max(low, high) elements needs, on each device, the last `low` elements of the
previous shard and the first `high` of the next: two collective-permutes between neighbours.
The first and last shards take the op's padding value instead, so the local window runs with
no padding on that dim and gives exactly the local shard of the result.

Example: f32[8] on x=4, window 3 padded (1, 1): device 1 holds [2, 3], receives 1 from device 0
and 4 from device 2, and computes its outputs 2 and 3 from [1, 2, 3, 4].
"""

from __future__ import annotations

from xla_spmd.ir import ComparisonDirection, SliceDim
from xla_spmd.partition.reshard import axes_size


def halo_sizes(window_dim) -> tuple[int, int] | None:
    """(low, high) halo of a window dim that a halo exchange supports, else None."""
    w = window_dim
    if (w.stride, w.lhs_dilation, w.rhs_dilation) != (1, 1, 1):
        return None
    if w.padding_low < 0 or w.padding_high < 0 or w.padding_low + w.padding_high != w.size - 1:
        return None
    return w.padding_low, w.padding_high


def can_exchange(mesh, axes, size: int, halo: tuple[int, int]) -> bool:
    n = axes_size(mesh, axes)
    if n == 1:
        return True
    if any(a.is_sub_axis for a in axes) or size % n:
        return False
    return max(halo) <= size // n


def _neighbours(mesh, sharding, dim: int, step: int) -> list[tuple[int, int]]:
    """(source, target) pairs: each device receives from its neighbour `step` shards before."""
    axes = {a.name for a in sharding.dims[dim].axes}
    others = [i for i, name in enumerate(mesh.axis_names) if name not in axes]
    by_key = {}
    for device in mesh.all_device_ids:
        coords = mesh.device_coords(device)
        key = (tuple(coords[i] for i in others), sharding.shard_index(device)[dim])
        by_key[key] = device
    pairs = []
    for device in mesh.all_device_ids:
        coords = mesh.device_coords(device)
        index = sharding.shard_index(device)[dim]
        source = by_key.get((tuple(coords[i] for i in others), index - step))
        if source is not None:
            pairs.append((source, device))
    return sorted(pairs)


def exchange(low, value, dim: int, halo: tuple[int, int], fill):
    """`value`'s local data along `dim` extended by its halos (padding value `fill` at the
    ends); returns the local instruction."""
    em = low.em
    sharding = value.sharding
    x = value.inst
    if not sharding.dims[dim].axes:
        return None
    lo, hi = halo
    c = x.shape.dims[dim]
    n = axes_size(low.mesh, sharding.dims[dim].axes)
    index = em.device_value([sharding.shard_index(d)[dim] for d in range(low.mesh.size)])
    parts = []

    def piece(start, limit, step, edge):
        cut = em.op("slice", x, slice=tuple(
            SliceDim(start, limit) if d == dim else SliceDim(0, size)
            for d, size in enumerate(x.shape.dims)))
        moved = em.op("collective-permute", cut, channel_id=em.state.channel(),
                      source_target_pairs=tuple(_neighbours(low.mesh, sharding, dim, step)))
        at_edge = em.op("compare", index, em.scalar(edge, index.shape.dtype),
                        direction=ComparisonDirection.EQ)
        mask = em.broadcast_scalar(at_edge, moved.shape.dims)
        return em.op("select", mask, em.broadcast_scalar(fill, moved.shape.dims), moved)

    if lo:
        parts.append(piece(c - lo, c, 1, 0))
    parts.append(x)
    if hi:
        parts.append(piece(0, hi, -1, n - 1))
    if len(parts) == 1:
        return x
    return em.op("concatenate", *parts, dimensions=(dim,))


def unpadded(window, dims):
    """`window` with no padding on `dims` (their halos were exchanged)."""
    import dataclasses
    return dataclasses.replace(window, dims=tuple(
        dataclasses.replace(w, padding_low=0, padding_high=0) if d in dims else w
        for d, w in enumerate(window.dims)))
