"""ShardedArray: a global array of which this process holds only its devices' shards.

`device_put(array, sharding)` keeps, on each process, the shards of the devices it owns;
`np.asarray(a)` / `a.gather()` assemble the global array (a collective under MPI, where
every rank must call it, unless this rank holds the whole array, e.g. a replicated one).

A ShardedArray reads like a JAX array: ``a + 1``, ``a[0]``, ``a.sum()`` run on the devices
and give ShardedArrays; ``print(a)``, ``f"{loss:.3f}"``, ``len(a)``, ``a.block_until_ready()``
read the gathered value (see array_interface.py; under MPI every rank must do the same eager
operations). Inside `xs.jit` nothing is gathered. As in JAX, 64-bit inputs are narrowed to
32 bits unless ``xs.config.update("enable_x64", True)``.

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(8)
>>> mesh = xs.make_mesh({"data": 2, "model": 4})
>>> a = xs.device_put(np.arange(16.0).reshape(2, 8), xs.NamedSharding(mesh, xs.P("data", "model")))
>>> a.addressable_shards[5].data
array([[10., 11.]], dtype=float32)
>>> np.array_equal(np.asarray(a), np.arange(16.0).reshape(2, 8))
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.ir.dtypes import canonical_array
from xla_spmd.mesh import Mesh
from xla_spmd.runtime.array_interface import ArrayInterface
from xla_spmd.runtime.devices import Device, local_devices, topology
from xla_spmd.sharding import NamedSharding, PartitionSpec, TensorSharding, user_sharding


@dataclass(frozen=True, slots=True)
class Shard:
    """One device's piece: where it sits in the global array, and its values."""

    device: Device
    index: tuple[slice, ...]
    data: np.ndarray


def as_tensor_sharding(sharding, shape: tuple, what: str = "array") -> TensorSharding:
    """The axis-based form of a user's sharding for an array of `shape`."""
    if isinstance(sharding, NamedSharding):
        sharding = sharding.to_tensor_sharding(len(shape))
    if isinstance(sharding, TensorSharding):
        sharding.check_rank(shape, tensor=what)
        return sharding
    raise ShardingError(f"{what}: expected a NamedSharding or TensorSharding, got "
                        f"{type(sharding).__name__}")


class ShardedArray(ArrayInterface):
    """A global array (shape, dtype, sharding) and the shards this process holds.

    Eager operations (operators, indexing, methods, printing) gather the global array and
    return numpy values, as in array_interface.py.
    """

    __array_priority__ = 100

    def __init__(self, shape, dtype, sharding: TensorSharding, shards: dict[int, np.ndarray]):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.tensor_sharding = sharding.closed()
        self._shard_data = shards
        self._global: np.ndarray | None = None
        self._deleted_by: str | None = None
        self._padded_shape: tuple[int, ...] | None = None

    @property
    def _shards(self) -> dict[int, np.ndarray]:
        if self._deleted_by is not None:
            raise XlaSpmdError(f"this array was donated to {self._deleted_by} and deleted; "
                               "use the result of that call instead")
        return self._shard_data

    def delete(self, by: str = "a jitted function") -> None:
        """Release the shards (a donated argument's buffers now belong to a result)."""
        self._deleted_by = by
        self._shard_data = {}
        self._global = None

    def is_deleted(self) -> bool:
        return self._deleted_by is not None

    @classmethod
    def from_padded_shards(cls, shape, dtype, sharding: TensorSharding,
                           shards: dict[int, np.ndarray]) -> ShardedArray:
        """From what a partitioned program returns: shards padded to the ceiling shard
        shape, of which only each device's valid extent is kept."""
        shape = tuple(shape)
        if all(d % n == 0 for d, n in zip(shape, sharding.tile_shape, strict=True)):
            # Even shards: no padding on any device (one check instead of one per device).
            return cls(shape, dtype, sharding, {d: np.asarray(x) for d, x in shards.items()})
        trimmed = {}
        for device, data in shards.items():
            slices = sharding.shard_slices(tuple(shape), device)
            data = np.asarray(data)
            trimmed[device] = data[tuple(slice(0, s.stop - s.start) for s in slices)]
        return cls(shape, dtype, sharding, trimmed)

    @property
    def sharding(self) -> NamedSharding | TensorSharding:
        """As JAX's ``Array.sharding``: a `NamedSharding` (``.mesh``, ``.spec``), or the
        axis-based `TensorSharding` where a PartitionSpec cannot say it (sub-axes);
        `tensor_sharding` is always the axis-based form."""
        return user_sharding(self.tensor_sharding)

    # What xs.jit reads of an argument: its IR type (and its sharding), without gathering.
    weak_type = False

    @property
    def aval(self):
        from xla_spmd.ir import ArrayShape, DType
        return ArrayShape(DType.from_numpy(self.dtype), self.shape)

    @property
    def value(self) -> np.ndarray:
        return self.gather()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def addressable_shards(self) -> list[Shard]:
        return [Shard(Device(d, topology().process_index), self.tensor_sharding.shard_slices(
            self.shape, d), data) for d, data in sorted(self._shards.items())]

    def addressable_data(self, index: int):
        """The data of this process's `index`-th shard (as JAX's ``addressable_data``)."""
        shards = self.addressable_shards
        if not -len(shards) <= index < len(shards):
            raise IndexError(f"addressable_data({index}): this process holds {len(shards)} "
                             "shards")
        return shards[index].data

    def shard_data(self, device: int, padded: bool = False) -> np.ndarray:
        """Device `device`'s shard; `padded` pads uneven shards to the ceiling shard shape
        (what a partitioned program takes), with zeros."""
        data = self._shards[device]
        if not padded:
            return data
        target = self._padded_shape
        if target is None:  # the same for every device: computed once
            target = self._padded_shape = self.tensor_sharding.shard_shape(self.shape)
        if data.shape == tuple(target):
            return data
        return np.pad(data, [(0, t - n) for n, t in zip(data.shape, target)])

    def gather(self) -> np.ndarray:
        """The global array. Under MPI this is a collective: every rank must call it."""
        if self._global is None:
            self._global = _assemble(self)  # (raises if the array was donated)
        return self._global

    def __array__(self, dtype=None, copy=None):
        array = self.gather()
        return array if dtype is None else array.astype(dtype)

    def __float__(self) -> float:
        return float(self.gather())

    def __int__(self) -> int:
        return int(self.gather())

    def __bool__(self) -> bool:
        return bool(self.gather())

    def item(self):
        return self.gather().item()

    def __repr__(self) -> str:
        """As JAX's ``Array(...)``: the values (of small arrays this process can read without
        communication, so that a debugger or one rank's print never blocks), the dtype and
        the sharding."""
        if self.is_deleted():
            return f"ShardedArray({self.dtype}{list(self.shape)}, {self.sharding}, deleted)"
        if self.size <= _REPR_MAX_SIZE and (self._global is not None or _held_whole(self)):
            values = np.array2string(self.gather(), separator=", ", prefix="ShardedArray(")
            return f"ShardedArray({values}, dtype={self.dtype}, sharding={self.sharding})"
        return (f"ShardedArray({self.dtype}{list(self.shape)}, {self.sharding}, "
                f"{len(self._shard_data)} local shards)")


_REPR_MAX_SIZE = 1000  # larger arrays are summarised without values


def _held_whole(array: ShardedArray) -> bool:
    """Whether every process holds the whole array (no communication needed). Every rank
    decides alike, from the sharding alone: a rank that skipped the gather's collective while
    another entered it would leave that one waiting (a mesh smaller than the job leaves some
    ranks without data; an uneven shard may be empty on one device and whole on another)."""
    top = topology()
    if top.kind != "mpi":
        return True
    sharding = array.tensor_sharding
    if sharding.mesh.size != top.num_devices:
        return False
    return all(tuple(s.stop - s.start for s in sharding.shard_slices(array.shape, d))
               == tuple(array.shape) for d in range(top.num_devices))


def _assemble(array: ShardedArray) -> np.ndarray:
    full = np.zeros(array.shape, array.dtype)
    owners: dict[tuple, int] = {}
    for device, data in array._shards.items():
        slices = array.tensor_sharding.shard_slices(array.shape, device)
        full[slices] = data
        owners.setdefault(tuple((s.start, s.stop) for s in slices), device)
    top = topology()
    if _held_whole(array):
        return full
    # Each tile is contributed once, by the lowest device holding it; OR-ing the bytes of
    # zero-filled arrays then assembles every tile exactly, whatever the dtype.
    from xla_spmd.runtime.executable import mpi_communicator

    mine = np.zeros_like(full)
    for device in array._shards:
        slices = array.tensor_sharding.shard_slices(array.shape, device)
        holders = array.tensor_sharding.devices_holding(
            array.shape, tuple(s.start for s in slices)) if array.size else [device]
        if device == min(holders):
            mine[slices] = full[slices]
    raw = np.ascontiguousarray(mine).view(np.uint8)
    combined = mpi_communicator().all_reduce(raw, tuple(range(top.num_devices)), "or")
    return combined.view(array.dtype).reshape(array.shape)


def check_mesh_fits(mesh_size: int, what: str) -> None:
    """A mesh must fit in the job (it runs on the job's first `mesh_size` devices)."""
    if mesh_size > topology().num_devices:
        raise ShardingError(f"{what}: the sharding's mesh has {mesh_size} devices, the job "
                            f"has {topology().num_devices}; use xs.set_num_devices({mesh_size})"
                            f" or mpirun -n {mesh_size}")


def mesh_local_devices(mesh_size: int) -> list[Device]:
    """This process's devices that a mesh of `mesh_size` devices spans (the first ones)."""
    return [d for d in local_devices() if d.id < mesh_size]


def _put_one(value, sharding, what: str) -> ShardedArray:
    if isinstance(value, ShardedArray):
        value = value.gather()
    array = canonical_array(value)  # 64-bit types narrowed unless x64 is on, as in JAX
    tensor_sharding = as_tensor_sharding(sharding, array.shape, what)
    check_mesh_fits(tensor_sharding.mesh.size, what)
    # Each device owns a copy of its shard, as a device buffer would be. A mesh smaller than
    # the job is over the job's first devices (as JAX's make_mesh takes them).
    shards = {d.id: np.array(array[tensor_sharding.shard_slices(array.shape, d.id)],
                               order="C") for d in mesh_local_devices(tensor_sharding.mesh.size)}
    return ShardedArray(array.shape, array.dtype, tensor_sharding, shards)


def device_put(value, sharding=None):
    """Place an array (or a pytree of arrays) on the devices by a sharding (or a pytree of
    shardings of the same structure); this process keeps only its devices' shards. With no
    sharding, on the first device, as JAX's ``device_put(x)`` puts it on the default device.
    """
    from xla_spmd.frontend.pytree import broadcast_prefix, tree_flatten, tree_unflatten

    if sharding is None:
        sharding = NamedSharding(Mesh.from_shape({}), PartitionSpec())
    leaves, tree = tree_flatten(value)
    try:
        shardings = broadcast_prefix(
            sharding, value, lambda s: isinstance(s, (NamedSharding, TensorSharding)),
            "device_put shardings")
    except XlaSpmdError as error:
        raise ShardingError(f"{error}; give one sharding or a pytree prefix of the "
                            "values") from None
    return tree_unflatten(tree, [_put_one(v, s, f"array {i}")
                                 for i, (v, s) in enumerate(zip(leaves, shardings))])


# ---------------------------------------------------------------------------------------------
# The multi-process input path: each process supplies its own devices' shards


def make_array_from_callback(shape, sharding, data_callback, dtype=None) -> ShardedArray:
    """A global array of `shape` whose shards come from ``data_callback(index)`` (a tuple of
    slices into the global array), called once per device of this process, as JAX's
    ``make_array_from_callback``."""
    return _from_shards(shape, sharding, lambda device, index: data_callback(index),
                        "make_array_from_callback", dtype)


def make_array_from_single_device_arrays(shape, sharding, arrays) -> ShardedArray:
    """A global array from one array per device of this process (in device order), each
    that device's shard, as JAX's ``make_array_from_single_device_arrays``."""
    what = "make_array_from_single_device_arrays"
    shape = tuple(int(d) for d in shape)
    devices = mesh_local_devices(as_tensor_sharding(sharding, shape, what).mesh.size)
    arrays = list(arrays)
    if len(arrays) != len(devices):
        raise ShardingError(f"{what}: {len(arrays)} arrays for the {len(devices)} devices of "
                            "this process in the mesh")
    by_device = {d.id: a for d, a in zip(devices, arrays)}
    return _from_shards(shape, sharding, lambda device, index: np.asarray(by_device[device]),
                        what, None)


def _from_shards(shape, sharding, data_for, what: str, dtype) -> ShardedArray:
    """A global array whose shard on each device of this process is
    ``data_for(device id, index)``, checked against the shard's shape and the others' dtype."""
    shape = tuple(int(d) for d in shape)
    tensor_sharding = as_tensor_sharding(sharding, shape, what)
    check_mesh_fits(tensor_sharding.mesh.size, what)
    shards: dict[int, np.ndarray] = {}
    for device in mesh_local_devices(tensor_sharding.mesh.size):
        index = tensor_sharding.shard_slices(shape, device.id)
        data = canonical_array(data_for(device.id, index))
        if dtype is not None:
            data = data.astype(canonical_array(np.zeros((), dtype)).dtype)
        expected = tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))
        if data.shape != expected:
            raise ShardingError(f"{what}: got shape {data.shape} for index {index} (device "
                                f"{device.id}); the shard has shape {expected}")
        if shards and data.dtype != next(iter(shards.values())).dtype:
            raise ShardingError(f"{what}: got {data.dtype} for device {device.id} and "
                                f"{next(iter(shards.values())).dtype} before")
        shards[device.id] = np.array(data, order="C")
    if not shards and dtype is None:
        raise ShardingError(f"{what}: this process holds no device of the mesh; give dtype=")
    result_dtype = next(iter(shards.values())).dtype if shards else np.dtype(dtype)
    return ShardedArray(shape, result_dtype, tensor_sharding, shards)


def make_array_from_process_local_data(sharding, local_data, global_shape=None
                                       ) -> ShardedArray:
    """A global array from the block of it this process's devices hold (`local_data`), as
    JAX's ``make_array_from_process_local_data``: in one process that is the whole array.
    `global_shape` defaults to the local block scaled by how many blocks the processes
    split each dimension into."""
    local_data = canonical_array(local_data)
    rank = local_data.ndim
    tensor_sharding = as_tensor_sharding(sharding, (1,) * rank if global_shape is None
                                         else tuple(global_shape),
                                         "make_array_from_process_local_data")
    devices = [d.id for d in mesh_local_devices(tensor_sharding.mesh.size)]
    if global_shape is None:
        probe = tuple(tensor_sharding.num_shards(i) * max(local_data.shape[i], 1)
                      for i in range(rank))
        global_shape = []
        for i in range(rank):
            local_blocks = {tensor_sharding.shard_slices(probe, d)[i].start for d in devices}
            global_shape.append(local_data.shape[i] * tensor_sharding.num_shards(i)
                                // max(len(local_blocks), 1))
    global_shape = tuple(int(d) for d in global_shape)
    slices = [tensor_sharding.shard_slices(global_shape, d) for d in devices]
    low = [min((s[i].start or 0) for s in slices) if slices else 0 for i in range(rank)]
    high = [max(s[i].stop for s in slices) if slices else 0 for i in range(rank)]
    if tuple(h - lo for lo, h in zip(low, high)) != local_data.shape:
        raise ShardingError(f"make_array_from_process_local_data: this process's devices hold "
                            f"the block {[slice(lo, h) for lo, h in zip(low, high)]} of the "
                            f"global shape {global_shape}; local data has shape "
                            f"{local_data.shape}")
    return make_array_from_callback(global_shape, tensor_sharding, lambda index: local_data[
        tuple(slice(s.start - lo, s.stop - lo) for s, lo in zip(index, low))])
