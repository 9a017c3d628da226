"""`restore`: each process reads the slices its devices need, onto any mesh and sharding.

For each array, each of this process's devices reads its target shard (under MPI: the one
device's shard); Zarr reads only the chunks that region touches and checks each one's
CRC32C. Every chunk in the region must exist: Zarr would read a
missing chunk as zeros, so its absence is an error, as is a failed checksum, each naming
the leaf, the chunk and its file.
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from xla_spmd.checkpoint import layout
from xla_spmd.checkpoint.manifest import ArrayRecord, decode_tree, read_manifest, stored_dtype
from xla_spmd.checkpoint.writer import chunk_key, wait_for_saves, zarr_module
from xla_spmd.errors import CheckpointError, ShardingError
from xla_spmd.mesh import Mesh
from xla_spmd.runtime import ShardedArray, local_devices, topology
from xla_spmd.runtime.sharded_array import as_tensor_sharding
from xla_spmd.sharding import NamedSharding, TensorSharding

READER_THREADS = 8  # reads (file I/O, checksums) release the GIL and overlap


def restore(directory: str | os.PathLike, target_shardings=None, step: int | None = None):
    """Restore the checkpoint `directory`/<step> (the latest complete one if `step` is None).

    `target_shardings` says where the arrays go:

    * None: the shardings they were saved with (the job must have as many devices);
    * a `Mesh`: each array's saved PartitionSpec on this mesh (same axis names, any sizes);
    * a tree of the saved structure whose leaves are `NamedSharding`/`TensorSharding`, or
      arrays with a ``.sharding`` (a ShardedArray: its shape and dtype must match too), or
      None for "as saved".

    Sharded arrays come back as ShardedArrays, numpy arrays saved as such as numpy arrays
    (as ShardedArrays if given a sharding), Python scalars as themselves. A structure,
    shape or dtype that disagrees with the target raises CheckpointError naming the leaf.
    """
    root = Path(directory)
    wait_for_saves()
    if step is None:
        step = layout.latest_step(root)
        if step is None:
            raise CheckpointError(f"{root}: no complete checkpoint"
                                  + _leftover_note(root))
    folder = layout.step_dir(root, layout.check_step(step))
    if not (folder / "manifest.json").is_file():
        raise CheckpointError(f"{root}: no complete checkpoint of step {step} (complete "
                              f"steps: {layout.all_steps(root)})" + _leftover_note(root))
    manifest = read_manifest(folder)
    targets: dict[str, TensorSharding | None] = {}
    _match(manifest.tree, target_shardings, "", manifest.arrays, targets, folder)
    plans = [_ArrayRead(folder, manifest.arrays[name], sharding)
             for name, sharding in targets.items()]
    # Every region of every array at once: reading is I/O and checksums, which release
    # the GIL.
    reads = [(plan, key) for plan in plans for key in plan.reads]
    with ThreadPoolExecutor(max(1, min(READER_THREADS, len(reads)))) as pool:
        for (plan, key), data in zip(reads, pool.map(lambda read: read[0].read(read[1]),
                                                     reads)):
            plan.reads[key] = data
    values = {plan.record.name: plan.result() for plan in plans}
    return decode_tree(manifest.tree, lambda name, path: values[name], where=str(folder))


def _leftover_note(root: Path) -> str:
    partial = [p.name for p in layout.leftovers(root)]
    return f" (ignored incomplete: {', '.join(sorted(partial))})" if partial else ""


def _match(structure, target, path: str, records: dict[str, ArrayRecord],
           out: dict, folder: Path) -> None:
    """Pair every saved array with its target sharding, walking the saved structure and
    the target tree together."""
    where = f"{folder}: tree{path}"
    if structure is None:
        if target is not None and not isinstance(target, Mesh):
            raise CheckpointError(f"{where}: the checkpoint holds None, the target "
                                  f"{type(target).__name__}")
        return
    (kind, body), = structure.items()
    if kind == "value":
        return
    if kind == "array":
        record = records.get(body)
        if record is None:
            raise CheckpointError(f"{where}: the manifest has no array {body!r}")
        out[body] = _target_sharding(record, target, f"{folder}: leaf {record.path}")
        return
    if target is None or isinstance(target, Mesh):
        children = [(key, target) for key in (body if kind == "dict" else range(len(body)))]
    elif kind == "dict":
        if type(target) is not dict:
            raise CheckpointError(f"{where}: the checkpoint holds a dict, the target a "
                                  f"{type(target).__name__}")
        missing, extra = [k for k in body if k not in target], [k for k in target
                                                                 if k not in body]
        if missing or extra:
            first = (missing or extra)[0]
            side = "target" if missing else "checkpoint"
            raise CheckpointError(f"{folder}: leaf {path}[{first!r}] is not in the {side} "
                                  f"(checkpoint keys {list(body)}, target keys {list(target)})")
        children = [(key, target[key]) for key in body]
    else:
        if type(target) not in (list, tuple) or len(target) != len(body):
            found = (f"a {type(target).__name__} of {len(target)}"
                     if type(target) in (list, tuple) else f"a {type(target).__name__}")
            raise CheckpointError(f"{where}: the checkpoint holds a {kind} of {len(body)} "
                                  f"items, the target {found}")
        children = list(enumerate(target))
    for key, child in children:
        key_text = f"[{key!r}]"
        _match(body[key], child, path + key_text, records, out, folder)


def _target_sharding(record: ArrayRecord, target, where: str) -> TensorSharding | None:
    saved = record.sharding
    try:
        if target is None:
            if saved is not None and saved.mesh.size != topology().num_devices:
                raise CheckpointError(
                    f"{where}: saved on {saved.mesh.size} devices ({saved.mesh!r}), this job "
                    f"has {topology().num_devices}; pass target_shardings (a Mesh or a tree "
                    "of shardings)")
            return None if saved is None else saved.replace(mesh_name="mesh")
        if isinstance(target, Mesh):
            if saved is None:
                return None
            return TensorSharding(target, saved.dims, saved.replicated)
        if isinstance(target, (NamedSharding, TensorSharding)):
            return as_tensor_sharding(target, record.shape, f"leaf {record.path}")
        sharding = getattr(target, "sharding", None)
        if sharding is None:
            raise CheckpointError(f"{where}: expected a sharding (or an array with one) as "
                                  f"the target, got a {type(target).__name__}")
        if tuple(target.shape) != record.shape or np.dtype(target.dtype) != record.dtype:
            raise CheckpointError(
                f"{where}: the checkpoint holds {record.dtype}{list(record.shape)}, the "
                f"target {np.dtype(target.dtype)}{list(target.shape)}")
        return as_tensor_sharding(sharding, record.shape, f"leaf {record.path}")
    except ShardingError as error:
        raise CheckpointError(f"{where}: {error}") from None


class _ArrayRead:
    """One array's restore: the region each local device needs, each distinct region read
    once, straight into the array its device keeps (replicas in one process get copies)."""

    def __init__(self, folder: Path, record: ArrayRecord, sharding: TensorSharding | None):
        zarr = zarr_module()
        if sharding is not None and sharding.mesh.size != topology().num_devices:
            raise CheckpointError(f"{folder}: leaf {record.path}: the target mesh has "
                                  f"{sharding.mesh.size} devices, the job has "
                                  f"{topology().num_devices}")
        self.folder, self.record, self.sharding = folder, record, sharding
        if sharding is None:
            self.regions = {None: tuple(slice(0, n) for n in record.shape)}
        else:
            self.regions = {d.id: sharding.shard_slices(record.shape, d.id)
                            for d in local_devices()}
        self.reads: dict[tuple, np.ndarray | None] = {
            _key(region): None for region in self.regions.values()
            if all(r.start < r.stop for r in region)}
        store = zarr.storage.LocalStore(folder, read_only=True)
        self.array = zarr.open_array(store, path=record.name, zarr_format=3)
        if (tuple(self.array.shape) != record.shape
                or self.array.dtype != stored_dtype(record.dtype)):
            raise CheckpointError(
                f"{folder / record.name}: leaf {record.path}: the Zarr array is "
                f"{self.array.dtype}{list(self.array.shape)}, the manifest says "
                f"{stored_dtype(record.dtype)}{list(record.shape)}")

    def read(self, key: tuple) -> np.ndarray:
        region = tuple(slice(start, stop) for start, stop in key)
        return _read_checked(self.folder, self.record, self.array, region).view(
            self.record.dtype)

    def result(self):
        shards, used = {}, set()
        for device, region in self.regions.items():
            key = _key(region)
            if key not in self.reads:  # an empty shard
                shards[device] = np.zeros([r.stop - r.start for r in region], self.record.dtype)
            else:
                data = self.reads[key]
                shards[device] = data.copy() if key in used else data
                used.add(key)
        if self.sharding is None:
            return shards[None]
        return ShardedArray(self.record.shape, self.record.dtype, self.sharding, shards)


def _key(region: tuple[slice, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((r.start, r.stop) for r in region)


def _chunks_in(box: tuple[slice, ...], chunk_shape: tuple[int, ...]):
    if any(b.start >= b.stop for b in box):
        return []
    ranges = [range(b.start // c, (b.stop - 1) // c + 1) for b, c in zip(box, chunk_shape)]
    return list(itertools.product(*ranges))


def _read_checked(folder: Path, record: ArrayRecord, array, box) -> np.ndarray:
    chunks = _chunks_in(box, record.chunk_shape)
    for chunk in chunks:
        file = folder / record.name / chunk_key(chunk)
        if not file.is_file():
            raise CheckpointError(f"{folder}: leaf {record.path}: chunk {chunk_key(chunk)} "
                                  f"of array {record.name!r} is missing ({file}); the "
                                  "checkpoint is damaged")
    try:
        return np.asarray(array[box])
    except ValueError as error:
        for chunk in chunks:  # find the chunk that fails
            try:
                array.blocks[chunk]
            except ValueError as chunk_error:
                file = folder / record.name / chunk_key(chunk)
                raise CheckpointError(
                    f"{folder}: leaf {record.path}: chunk {chunk_key(chunk)} of array "
                    f"{record.name!r} ({file}) is corrupt: {chunk_error}") from None
        raise CheckpointError(f"{folder}: leaf {record.path}: array {record.name!r} cannot "
                              f"be read: {error}") from None
