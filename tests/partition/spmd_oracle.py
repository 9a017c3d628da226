"""The partitioner's oracle: partition, run on N devices in lockstep, assemble, compare.

Per-device inputs are each device's shard of the global inputs, padded with zeros to the
ceiling shard shape; outputs are assembled from each device's valid region, and devices
holding the same element must agree.
"""

from __future__ import annotations

import numpy as np
from shards import assemble, shard_array, signature

from xla_spmd.backends.reference import evaluate, evaluate_spmd
from xla_spmd.ir import verify
from xla_spmd.mesh import make_mesh
from xla_spmd.partition.values import shape_leaves
from xla_spmd.pipeline import lower
from xla_spmd.propagation.importing import has_foreign_shardings, import_shardings
from xla_spmd.sharding import program_mesh


def _flatten(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def _shard(arg, shardings, device):
    """Device `device`'s part of a parameter: its shard, or a tuple of its leaves' shards."""
    if isinstance(arg, tuple):
        return tuple(shard_array(leaf, sharding, device)
                     for leaf, sharding in zip(_flatten(arg), shardings))
    return shard_array(arg, shardings[0], device)


def run_on_devices(spmd, per_device, n, backend):
    """Every device's results: in lockstep on the reference evaluator, or compiled by
    `backend` (a name or a Backend) and run on one thread per in-process device (all on this
    thread, step by step, where the executable runs in lockstep), or by
    `backend.run_on_devices(spmd, per_device, n)` where it has one."""
    if hasattr(backend, "run_on_devices"):
        return backend.run_on_devices(spmd, per_device, n)
    if backend == "reference":
        return evaluate_spmd(spmd, per_device, n)
    from xla_spmd.backends import get_backend
    from xla_spmd.collectives import LocalWorld
    backend = get_backend(backend) if isinstance(backend, str) else backend
    executable = backend.compile(spmd, tuple(range(n)))
    if getattr(executable, "lockstep", False):
        world = LocalWorld(n)
        results = executable.run_together({d: per_device[d] for d in range(n)},
                                          {d: world.communicator(d) for d in range(n)})
        return [tuple(results[d]) for d in range(n)]
    return LocalWorld(n).run(lambda comm: tuple(executable.run(comm.rank,
                                                               per_device[comm.rank], comm)))


def run_global(module, args, backend="reference") -> list:
    """The unpartitioned `module`'s results on `args` (flattened), on one device of `backend`
    (a name or a Backend): the oracle's side of the comparison."""
    if backend == "reference":
        return _flatten(evaluate(module, args))
    from xla_spmd.backends import get_backend
    backend = get_backend(backend) if isinstance(backend, str) else backend
    return _flatten(tuple(backend.compile(module, (0,)).run(0, args, None)))


def check(module, args, *, rtol=1e-5, atol=1e-5, propagate=False, expected=None,
          backend="reference", bits=False, num_devices=None, scaled=False,
          expected_backend="reference"):
    """Partition `module`, run it on every device (on `backend`), compare with the reference
    (or with `expected`), bit for bit when `bits` (the sign of zero and NaN payloads
    included); return the partitioned module. `expected_backend` runs the unpartitioned
    module (`run_global`). `num_devices` partitions GSPMD-style
    shardings (``{devices=[2,1]0,1}``) over that many devices, as XLA's tests do."""
    mesh = None
    if num_devices is not None:
        if has_foreign_shardings(module):
            module = import_shardings(module).module
        mesh = program_mesh(module)
        if mesh is None or mesh.is_maximal:  # only values placed on single devices
            mesh = make_mesh({"x": num_devices})
    program = lower(module, mesh=mesh, propagate_shardings=propagate)
    module, spmd = program.module, program.spmd_module
    verify(spmd)
    n = program.mesh.size
    params, results_shardings = signature(module)
    per_device = [[_shard(arg, shardings, device) for arg, shardings in zip(args, params)]
                  for device in range(n)]
    results = run_on_devices(spmd, per_device, n, backend)
    expected = run_global(module, args, expected_backend) if expected is None \
        else list(expected)
    shapes = shape_leaves(module.entry.root.shape)
    per_device_leaves = [_flatten(r) for r in results]
    for index, (want, sharding, shape) in enumerate(zip(expected, results_shardings, shapes)):
        tol = atol
        if scaled and np.issubdtype(np.asarray(want).dtype, np.inexact) and np.size(want):
            finite = np.abs(np.asarray(want, np.complex128 if np.iscomplexobj(want)
                                       else np.float64))
            finite = finite[np.isfinite(finite)]
            tol = atol * max(1.0, float(finite.max(initial=0.0)))
        got = assemble([leaves_[index] for leaves_ in per_device_leaves], sharding,
                       shape.dims, np.asarray(want).dtype, rtol=rtol, atol=tol)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=tol, err_msg=f"output {index}")
        if bits:
            want = np.asarray(want)
            unsigned = f"u{want.dtype.itemsize}"
            np.testing.assert_array_equal(np.asarray(got, want.dtype).view(unsigned),
                                          want.view(unsigned), err_msg=f"output {index} bits")
    return spmd
