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


def _wide(array: np.ndarray) -> np.ndarray:
    """Floats narrower than f32 (bf16, f16, f8) as f32: numpy's loops on them are slow."""
    if array.dtype.kind == "V" or (array.dtype.kind == "f" and array.dtype.itemsize < 4) \
            or array.dtype.name in ("bfloat16",) or "float8" in array.dtype.name:
        return array.astype(np.float32)
    return array


def _magnitude(want) -> float:
    """The largest finite magnitude of a float result (0 for other types, or none)."""
    want = np.asarray(want)
    if not np.size(want) or want.dtype.kind in "biu" or want.dtype == np.bool_:
        return 0.0
    size = np.abs(_wide(want))
    largest = float(size.max())
    if not np.isfinite(largest):
        largest = float(size[np.isfinite(size)].max(initial=0.0))
    return largest


def _all_close(got, want, rtol: float, atol: float) -> bool:
    """Whether ``assert_allclose(got, want, rtol, atol)`` (NaN equal to NaN) passes, computed
    in the results' own precision without numpy.testing's temporaries: a fast yes; a no is
    settled by numpy.testing itself."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or want.dtype.kind not in "fc" and want.dtype.kind != "V" \
            and "float" not in want.dtype.name:
        return bool(got.shape == want.shape and np.array_equal(got, want))
    if got.ndim == 0:
        got, want = got.reshape(1), want.reshape(1)
    # In runs of rows: no temporaries the size of the result, and no copy of a transposed one
    rows = max(1, (1 << 20) // max(1, got[0].size)) if len(got) else 1
    with np.errstate(all="ignore"):
        for start in range(0, len(got), rows):
            a, b = _wide(got[start:start + rows]), _wide(want[start:start + rows])
            close = np.abs(a - b) <= atol + rtol * np.abs(b)
            close |= a == b  # equal infinities
            close |= np.isnan(a) & np.isnan(b)
            if not close.all():
                return False
    return True


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
        tol = atol * max(1.0, _magnitude(want)) if scaled else atol
        got = assemble([leaves_[index] for leaves_ in per_device_leaves], sharding,
                       shape.dims, np.asarray(want).dtype, rtol=rtol, atol=tol)
        if not _all_close(got, want, rtol, tol):  # numpy's own check, and its message
            np.testing.assert_allclose(got, want, rtol=rtol, atol=tol,
                                       err_msg=f"output {index}")
        if bits:
            want = np.asarray(want)
            unsigned = f"u{want.dtype.itemsize}"
            np.testing.assert_array_equal(np.asarray(got, want.dtype).view(unsigned),
                                          want.view(unsigned), err_msg=f"output {index} bits")
    return spmd
