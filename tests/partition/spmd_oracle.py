"""The partitioner's oracle: partition, run on N devices in lockstep, assemble, compare.

Per-device inputs are each device's shard of the global inputs, padded with zeros to the
ceiling shard shape; outputs are assembled from each device's valid region, and devices
holding the same element must agree.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from manual_oracle import expected_per_device, group_arguments, has_manual_parts
from shards import assemble, covered, shard_array, signature

from xla_spmd.backends.reference import Context, Feeds, evaluate, evaluate_spmd
from xla_spmd.backends.reference.evaluator import coerce_argument, evaluate_computation
from xla_spmd.errors import PartitionError, XlaSpmdError
from xla_spmd.ir import Computation, verify
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


PIECE = 1 << 22  # the elements of a result compared (or scanned) at a time


def _pieces(array: np.ndarray, size: int = PIECE):
    """`array`'s elements in C order as 1-d pieces of at most `size` elements (at least one),
    each a view where the array's layout allows, else a copy of that piece only: no
    temporary the size of the array, however large or transposed it is.

    >>> [p.tolist() for p in _pieces(np.arange(6).reshape(2, 3).T, size=2)]
    [[0, 3], [1, 4], [2, 5]]
    """
    if array.ndim == 0:
        yield array.reshape(1)
        return
    inner, axis = 1, array.ndim  # the trailing axes [axis:] fit in one piece
    while axis > 0 and inner * array.shape[axis - 1] <= size:
        axis -= 1
        inner *= array.shape[axis]
    if axis == 0:
        yield array.reshape(-1)
        return
    step = max(1, size // inner)  # blocks of axis - 1, the first that does not fit whole
    for index in np.ndindex(*array.shape[:axis - 1]):
        part = array[index]
        for start in range(0, part.shape[0], step):
            yield part[start:start + step].reshape(-1)


_IEEE = ("float16", "bfloat16", "float32", "float64")  # sign, exponent, mantissa: bits order


def _bits(piece: np.ndarray) -> np.ndarray:
    """A 1-d piece's elements as unsigned integers of their width (its bits)."""
    return np.ascontiguousarray(piece).view(f"u{piece.dtype.itemsize}")


def _magnitude(want) -> float:
    """The largest finite magnitude of a float result (0 for other types, or none), a piece
    at a time. IEEE types (f16, bf16, f32, f64) compare their bits with the sign cleared:
    for finite values the order of the bits is the order of the magnitudes, and infinities
    and NaNs are the patterns from infinity's up.

    >>> _magnitude(np.array([-3.0, np.nan, 2.0, -np.inf], np.float32))
    3.0
    """
    want = np.asarray(want)
    if not np.size(want) or want.dtype.kind in "biu" or want.dtype == np.bool_:
        return 0.0
    largest = 0.0
    if want.dtype.name in _IEEE:
        width = 8 * want.dtype.itemsize
        unsigned = np.dtype(f"u{want.dtype.itemsize}")
        mask = unsigned.type((1 << (width - 1)) - 1)
        infinity = np.array(np.inf, want.dtype).view(unsigned)[()]
        for piece in _pieces(want):
            size = _bits(piece) & mask
            top = size[size < infinity].max(initial=0)
            largest = max(largest, float(np.array(top, unsigned).view(want.dtype)))
        return largest
    for piece in _pieces(want):
        size = np.abs(_wide(piece))
        finite = size[np.isfinite(size)]
        if finite.size:
            largest = max(largest, float(finite.max()))
    return largest


def _all_close(got, want, rtol: float, atol: float) -> bool:
    """Whether ``assert_allclose(got, want, rtol, atol)`` (NaN equal to NaN) passes, computed
    a piece at a time in the results' own precision without numpy.testing's temporaries: a
    fast yes; a no is settled by numpy.testing itself. Elements equal bit for bit are close
    (equal values, or the same NaN); only the others are widened and compared."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    exact = want.dtype.kind not in "fc" and want.dtype.kind != "V" \
        and "float" not in want.dtype.name
    if exact and got.dtype != want.dtype:
        return bool(np.array_equal(got, want))
    same_bits = got.dtype == want.dtype and want.dtype.kind != "c"
    with np.errstate(all="ignore"):
        for a, b in zip(_pieces(got), _pieces(want)):
            if same_bits:
                differ = np.flatnonzero(_bits(a) != _bits(b))
                if not differ.size:
                    continue
                if exact:
                    return False
                a, b = a[differ], b[differ]
            a, b = _wide(a), _wide(b)
            close = np.abs(a - b) <= atol + rtol * np.abs(b)
            close |= a == b  # equal infinities
            close |= np.isnan(a) & np.isnan(b)
            if not close.all():
                return False
    return True


def run_on_devices(spmd, per_device, n, backend, feeds=None):
    """Every device's results: in lockstep on the reference evaluator, or compiled by
    `backend` (a name or a Backend) and run on one thread per in-process device (all on this
    thread, step by step, where the executable runs in lockstep), or by
    `backend.run_on_devices(spmd, per_device, n)` where it has one. `feeds` (a `Feeds` per
    device, for a program with infeeds or outfeeds) needs the reference evaluator."""
    if feeds is not None and backend != "reference":
        raise ValueError("infeed and outfeed queues run on the reference evaluator only")
    if hasattr(backend, "run_on_devices"):
        return backend.run_on_devices(spmd, per_device, n)
    if backend == "reference":
        return evaluate_spmd(spmd, per_device, n, feeds=feeds)
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


def partition(module, num_devices=None, propagate=False):
    """`module` lowered as `check` runs it: the `lower` pipeline's program (its imported
    `module`, its `spmd_module`, its `mesh`). `num_devices` partitions GSPMD-style shardings
    over that many devices, as XLA's tests do."""
    mesh = None
    if num_devices is not None:
        if module.num_partitions == 1 and num_devices > 1:  # XLA's test sets the config's
            module = dataclasses.replace(module, header=tuple(  # num_partitions to N
                (k, v) for k, v in module.header if k != "num_partitions")
                + (("num_partitions", str(num_devices)),))
        if has_foreign_shardings(module):
            module = import_shardings(module).module
        mesh = program_mesh(module)
        if mesh is None or mesh.is_maximal:  # only values placed on single devices
            mesh = make_mesh({"x": num_devices})
    return lower(module, mesh=mesh, propagate_shardings=propagate)


def check(module, args, *, rtol=1e-5, atol=1e-5, propagate=False, expected=None,
          backend="reference", bits=False, num_devices=None, infeeds=None, random=False,
          scaled=False, expected_backend="reference", program=None):
    """Partition `module`, run it on every device (on `backend`), compare with the reference
    (or with `expected`), bit for bit when `bits` (the sign of zero and NaN payloads
    included); return the partitioned module. `expected_backend` runs the unpartitioned
    module (`run_global`; a module with host transfers runs on the reference evaluator).
    `num_devices` partitions GSPMD-style shardings (``{devices=[2,1]0,1}``) over that many
    devices, as XLA's tests do. `scaled` multiplies `atol` by the largest magnitude of each
    expected float result (at least 1): a sum of many terms, added in another order by the
    partitioned program, differs by rounding relative to its terms, not to its (possibly
    near-zero) value.

    A module with host transfers: `infeeds` holds one global value per ``infeed`` of the
    entry, in order; each device's queue gets its shard of each (the infeed's sharding),
    and what the devices outfeed, assembled by the outfeed data's sharding, must equal what
    the unpartitioned module outfeeds.

    `random`: the module's ``rng`` values are implementation-defined (each device draws its
    own), so a result an rng makes is compared by shape, type and range only (uniform:
    within the rng's bounds, evaluated on the unpartitioned module; normal: finite), and
    devices holding the same element must still agree; a result computed from rng values
    by other ops cannot be compared and raises `NotComparable`.

    A module with manual parts (``{manual}``, partially manual shardings, manual regions) is
    compared device by device with `manual_oracle.expected_per_device`: the unpartitioned
    module run on every device with the manual values' per-device meaning."""
    manual = num_devices is not None and expected is None and not infeeds and not random \
        and has_manual_parts(module)
    parsed = module
    if program is None:
        program = partition(module, num_devices, propagate)
    module, spmd = program.module, program.spmd_module
    verify(spmd)
    n = program.mesh.size
    params, results_shardings = signature(module, program.mesh)
    host = _host_transfers(module, infeeds, program.mesh)
    manual = manual and not host
    # each device's whole arguments: the global ones, or its manual group's own values
    whole = group_arguments(parsed, args, params, n) if manual else [args] * n
    per_device = [[_shard(arg, shardings, device)
                   for arg, shardings in zip(whole[device], params)] for device in range(n)]
    results = run_on_devices(spmd, per_device, n, backend, host and host[1])
    del per_device  # the shards' memory back before the unpartitioned run
    if manual:
        _compare_per_device(module, whole, results, results_shardings, rtol, atol, scaled)
        return spmd
    if expected is None:
        expected = _flatten(evaluate(module, args, host and host[0])) \
            if host or expected_backend == "reference" \
            else run_global(module, args, expected_backend)
    expected = list(expected)
    if host:
        _compare_outfeeds(module, *host, program.mesh, rtol=rtol, atol=atol)
    shapes = shape_leaves(module.entry.root.shape)
    per_device_leaves = [_flatten(r) for r in results]
    del results
    producers = _random_producers(module, args) if random else [None] * len(shapes)
    for index, (sharding, shape) in enumerate(zip(results_shardings, shapes)):
        want = expected[index]
        expected[index] = None  # each result's memory back once it is compared
        locals_ = [leaves_[index] for leaves_ in per_device_leaves]
        for leaves_ in per_device_leaves:
            leaves_[index] = None
        if shape.is_token:
            continue  # a token has no value to compare
        tol = atol * max(1.0, _magnitude(want)) if scaled else atol
        if producers[index] is None and not bits:
            _compare_shards(locals_, want, sharding, shape.dims, rtol, tol, f"output {index}")
            continue
        got = assemble(locals_, sharding, shape.dims, np.asarray(want).dtype, rtol=rtol,
                       atol=tol)
        if producers[index] is not None:
            _check_random(got, want, *producers[index], f"output {index}")
            continue
        if not _all_close(got, want, rtol, tol):  # numpy's own check, and its message
            np.testing.assert_allclose(got, want, rtol=rtol, atol=tol,
                                       err_msg=f"output {index}")
        want = np.asarray(want)
        unsigned = f"u{want.dtype.itemsize}"
        np.testing.assert_array_equal(np.asarray(got, want.dtype).view(unsigned),
                                      want.view(unsigned), err_msg=f"output {index} bits")
    return spmd


def _compare_shards(locals_, want, sharding, shape, rtol, atol, what) -> None:
    """Each device's result (`locals_`, padded to the ceiling shard shape) against its
    region of the unpartitioned result `want`, on its valid (unpadded) part, every device
    and every element (devices holding the same element are each compared with it; no
    assembled copy of the result is made); the devices together must hold every element."""
    want = np.asarray(want)
    shape = tuple(shape)
    if not covered(sharding, shape, len(locals_)):
        raise PartitionError(f"no device holds some elements of a result sharded {sharding}")
    for device, local in enumerate(locals_):
        region = sharding.shard_slices(shape, device)
        got = np.asarray(local)
        if shape:
            got = got[tuple(slice(0, s.stop - s.start) for s in region)]
        if got.dtype != want.dtype:
            got = got.astype(want.dtype)
        part = want[region] if shape else want
        if not _all_close(got, part, rtol, atol):  # numpy's own check, and its message
            np.testing.assert_allclose(got, part, rtol=rtol, atol=atol,
                                       err_msg=f"{what} on device {device}")


def _compare_per_device(module, per_device_args, results, shardings, rtol, atol, scaled
                        ) -> None:
    """Each device's result leaves against its expected shard (`expected_per_device`), on
    the valid (unpadded) region of each."""
    shapes = shape_leaves(module.entry.root.shape)
    expected = expected_per_device(module, per_device_args, shardings)
    for device, (result, want_leaves) in enumerate(zip(results, expected)):
        for index, (got, want, sharding, shape) in enumerate(
                zip(_flatten(result), want_leaves, shardings, shapes)):
            if shape.is_token:
                continue
            valid = tuple(slice(0, s.stop - s.start)
                          for s in sharding.shard_slices(shape.dims, device))
            got, want = np.asarray(got)[valid], np.asarray(want)[valid]
            tol = atol * max(1.0, _magnitude(want)) if scaled else atol
            if not _all_close(got, want, rtol, tol):
                np.testing.assert_allclose(got, want, rtol=rtol, atol=tol,
                                           err_msg=f"output {index} on device {device}")


class NotComparable(XlaSpmdError):
    """A result computed from random values by other ops: nothing to compare it with."""


def _random_producers(module, args) -> list:
    """Per result leaf: None (not random: compared exactly), or (distribution, low, high)
    of the entry's ``rng`` that makes it, its bounds evaluated on the unpartitioned module.
    Raises `NotComparable` for a leaf computed from rng values by other ops."""
    entry = module.entry
    root = entry.root
    makers = list(root.operands) if root.opcode == "tuple" else [root]
    if len(makers) != len(shape_leaves(root.shape)):
        makers = [root] * len(shape_leaves(root.shape))
    producers = []
    for maker in makers:
        if maker.opcode == "rng":
            bounds = [_evaluate_before(entry, maker, operand, args) for operand in maker.operands]
            producers.append((maker.attrs.distribution.value, *bounds))
        elif _depends_on_rng(maker):
            raise NotComparable(f"{maker.name} is computed from rng values: its values are "
                                "implementation-defined, nothing to compare them with")
        else:
            producers.append(None)
    return producers


def _depends_on_rng(inst, seen=None) -> bool:
    seen = set() if seen is None else seen
    if id(inst) in seen:
        return False
    seen.add(id(inst))
    if inst.opcode == "rng" or any(_depends_on_rng(c.root, seen)
                                   for c in inst.called_computations()):
        return True
    return any(_depends_on_rng(o, seen) for o in inst.operands)


def _evaluate_before(entry, rng, value, args):
    """`value` (an operand of `rng`) on the unpartitioned module: the entry cut before rng."""
    index = entry.instructions.index(rng)
    kept = tuple(i for i in entry.instructions[:index]) + tuple(
        p for p in entry.parameters if p not in entry.instructions[:index])
    cut = Computation(entry.name, kept, value)
    return np.asarray(evaluate_computation(cut, [coerce_argument(a, p.shape, "argument")
                                                 for a, p in zip(args, cut.parameters)],
                                           Context()))


def _check_random(got, want, distribution, low, high, what):
    """`got` (assembled from the devices) has `want`'s shape and type and lies in range."""
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: {got.dtype}{list(got.shape)}, unpartitioned {want.dtype}{list(want.shape)}")
    if distribution == "rng_normal":
        assert np.isfinite(got).all(), f"{what}: normal values must be finite"
        return
    upper = got < high if got.dtype.kind in "iub" else got <= high
    assert ((low <= got) & upper).all(), (
        f"{what}: uniform values outside [{low}, {high}): {got}")


def _host_transfers(module, infeeds, mesh):
    """(the global run's Feeds, each device's) for a module with infeeds or outfeeds, else
    None: the queues hold `infeeds` (one value per infeed of the entry), sharded."""
    ops = [i for i in module.entry.instructions if i.opcode in ("infeed", "outfeed")]
    if not ops:
        return None
    infeed_ops = [i for i in ops if i.opcode == "infeed"]
    infeeds = list(infeeds or ())
    if len(infeeds) != len(infeed_ops):
        raise ValueError(f"the module has {len(infeed_ops)} infeeds; give as many values, got "
                         f"{len(infeeds)}")
    targets = _targets(module, mesh)
    whole, devices = Feeds(), [Feeds() for _ in range(mesh.size)]
    for inst, value in zip(infeed_ops, infeeds):
        whole.infeed.append(value)
        shardings = targets(inst)[:-1]  # the data's leaves (the token is last)
        for device, feeds in enumerate(devices):
            feeds.infeed.append(_shard(value, shardings, device))
    return whole, devices


def _targets(module, mesh):
    from xla_spmd.partition.partitioner import Lowering, Partitioner

    return Lowering(Partitioner(module, mesh).state, None).targets


def _compare_outfeeds(module, whole, devices, mesh, *, rtol, atol):
    """Each outfeed of the global run equals the devices' outfeeds (the k-th of each device),
    assembled by the sharding of its data."""
    for device, feeds in enumerate(devices):
        if len(feeds.outfeed) != len(whole.outfeed):
            raise AssertionError(f"device {device} outfed {len(feeds.outfeed)} values, the "
                                 f"unpartitioned module {len(whole.outfeed)}")
    by_name = {i.name: i for i in module.entry.instructions}
    targets = _targets(module, mesh)
    for k, (name, want) in enumerate(whole.outfeed):
        data = by_name[name].operands[0]
        for index, (leaf, sharding, shape) in enumerate(zip(
                _flatten(want), targets(data), shape_leaves(data.shape))):
            got = assemble([_flatten(feeds.outfeed[k][1])[index] for feeds in devices],
                           sharding, shape.dims, np.asarray(leaf).dtype, rtol=rtol, atol=atol)
            np.testing.assert_allclose(got, leaf, rtol=rtol, atol=atol,
                                       err_msg=f"outfeed {name} leaf {index}")
