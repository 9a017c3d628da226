"""Moving global arrays in and out of a partitioned program (numpy only).

`signature(module)` gives the sharding of each entry parameter leaf and each result leaf of a
(propagated) module; `shard_array` cuts a global array into the padded local shard a device
receives; `assemble` rebuilds a global array from every device's local result, checking that
devices holding the same element agree.

>>> import numpy as np
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> s = TensorSharding(make_mesh({"x": 4}), [["x"]])
>>> shard_array(np.arange(7), s, 3).tolist()
[6, 0]
>>> assemble([shard_array(np.arange(7), s, d) for d in range(4)], s, (7,)).tolist()
[0, 1, 2, 3, 4, 5, 6]
"""

from __future__ import annotations

import numpy as np

from xla_spmd.errors import PartitionError
from xla_spmd.mesh import make_mesh
from xla_spmd.partition.partitioner import Lowering, Partitioner
from xla_spmd.sharding import TensorSharding, program_mesh


def signature(module, mesh=None) -> tuple[list[list[TensorSharding]], list[TensorSharding]]:
    """(per parameter, its leaves' shardings; the result leaves' shardings)."""
    mesh = mesh or program_mesh(module) or make_mesh({"x": 1})
    low = Lowering(Partitioner(module, mesh).state, None)
    return ([low.targets(p) for p in module.entry.parameters], low.targets(module.entry.root))


def shard_array(array, sharding: TensorSharding, device: int) -> np.ndarray:
    """Device `device`'s shard of a global array, zero-padded to the ceiling shard shape: a
    view of `array` where no padding is needed and the view is C-contiguous (devices holding
    the same shard share its memory: make `array` read-only where a program might write its
    arguments), else a (padded) C-contiguous copy.

    >>> x = np.arange(8)
    >>> s = TensorSharding(make_mesh({"x": 2}), [["x"]])
    >>> bool(np.shares_memory(shard_array(x, s, 1), x))
    True
    """
    array = np.asarray(array)
    if array.ndim == 0:
        return array
    local = array[sharding.shard_slices(array.shape, device)]
    shape = sharding.shard_shape(array.shape)
    if local.shape == tuple(shape) and local.flags.c_contiguous:
        return local
    return np.pad(local, [(0, s - n) for s, n in zip(shape, local.shape)])


def assemble(locals_, sharding: TensorSharding, shape, dtype=None, *, rtol=1e-5,
             atol=1e-5) -> np.ndarray:
    """The global array from every device's local shard (padding dropped)."""
    shape = tuple(shape)
    first = np.asarray(locals_[0])
    out = np.zeros(shape, dtype=dtype or first.dtype)
    seen = np.zeros(shape, dtype=bool)
    for device, local in enumerate(locals_):
        local = np.asarray(local)
        region = sharding.shard_slices(shape, device)
        valid = local if not shape else local[tuple(slice(0, s.stop - s.start) for s in region)]
        done = seen[region]
        if done.any() and not np.allclose(out[region][done], np.asarray(valid)[done],
                                          rtol=rtol, atol=atol, equal_nan=True):
            raise PartitionError(f"device {device} disagrees with another device holding the "
                                 f"same elements of a result sharded {sharding}")
        out[region] = valid
        seen[region] = True
    if not seen.all():
        raise PartitionError(f"no device holds some elements of a result sharded {sharding}")
    return out


def covered(sharding: TensorSharding, shape, devices: int) -> bool:
    """Whether the shards of devices 0..`devices`-1 hold every element of a global `shape`,
    without an array of that shape where the shards form a grid (each dim cut into
    intervals that tile it, every combination held by some device): checked on the shards'
    boxes; else on a boolean array of `shape`.

    >>> s = TensorSharding(make_mesh({"x": 4}), [["x"]])
    >>> covered(s, (7,), 4), covered(s, (7,), 3)
    (True, False)
    """
    shape = tuple(shape)
    boxes = {tuple((r.start, r.stop) for r in sharding.shard_slices(shape, device))
             for device in range(devices)}
    boxes = {box for box in boxes if all(start < stop for start, stop in box)}
    if any(size == 0 for size in shape):
        return True
    cuts = [sorted({box[dim] for box in boxes}) for dim in range(len(shape))]
    tiles = all(intervals[0][0] == 0 and intervals[-1][1] == size
                and all(a[1] == b[0] for a, b in zip(intervals, intervals[1:]))
                for intervals, size in zip(cuts, shape))
    if tiles:
        return len(boxes) == int(np.prod([len(intervals) for intervals in cuts]))
    seen = np.zeros(shape, dtype=bool)
    for box in boxes:
        seen[tuple(slice(start, stop) for start, stop in box)] = True
    return bool(seen.all())
