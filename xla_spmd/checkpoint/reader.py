"""`restore`: each process reads the slices its devices need, onto any mesh and sharding.

For each array, each of this process's devices in the target mesh reads its target shard
(under MPI: the one device's shard, or none where the mesh is smaller than the job). Only
the chunks that region touches are read (chunks.py), straight into the shard, and each
one's CRC32C is checked. Every chunk in the region must exist (Zarr would read a missing
chunk as zeros): its absence is an error, as is a failed checksum, each naming the leaf,
the array, the chunk and its file.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from xla_spmd.checkpoint import layout
from xla_spmd.checkpoint.chunks import ChunkReader, check_array_metadata
from xla_spmd.checkpoint.manifest import ArrayRecord, decode_tree, read_manifest, stored_dtype
from xla_spmd.checkpoint.writer import wait_for_saves
from xla_spmd.errors import CheckpointError, ShardingError
from xla_spmd.mesh import Mesh
from xla_spmd.runtime import ShardedArray, topology
from xla_spmd.runtime.sharded_array import (
    as_tensor_sharding,
    check_mesh_fits,
    mesh_local_devices,
)
from xla_spmd.sharding import NamedSharding, TensorSharding

READER_THREADS = 8  # reads (file I/O, checksums) release the GIL and overlap


def restore(directory: str | os.PathLike, target_shardings=None, step: int | None = None):
    """Restore the checkpoint `directory`/<step> (the latest complete one if `step` is None).

    `target_shardings` says where the arrays go:

    * None: the shardings they were saved with (the job needs at least as many devices);
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
    # Every chunk of every array at once: reading is file I/O, which releases the GIL.
    reads = [read for plan in plans for read in plan.chunk_reads()]
    with ThreadPoolExecutor(max(1, min(READER_THREADS, len(reads)))) as pool:
        for _ in pool.map(lambda read: read[0].read_into(*read[1:]), reads):
            pass
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
            if saved is not None and saved.mesh.size > topology().num_devices:
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
    """One array's restore: the region each local device needs (those of a mesh smaller
    than the job: its first devices), each distinct region read once, straight into the
    array its device keeps (replicas in one process get copies)."""

    def __init__(self, folder: Path, record: ArrayRecord, sharding: TensorSharding | None):
        where = f"{folder}: leaf {record.path}"
        self.record, self.sharding = record, sharding
        if sharding is None:
            self.regions = {None: tuple(slice(0, n) for n in record.shape)}
        else:
            try:
                check_mesh_fits(sharding.mesh.size, f"leaf {record.path}")
            except ShardingError as error:
                raise CheckpointError(f"{folder}: {error}") from None
            self.regions = {d.id: sharding.shard_slices(record.shape, d.id)
                            for d in mesh_local_devices(sharding.mesh.size)}
        stored = stored_dtype(record.dtype)
        check_array_metadata(folder, record.name, record.shape, stored, record.chunk_shape,
                             where)
        self.chunks = ChunkReader(folder, record.name, record.shape, stored,
                                  record.chunk_shape, where)
        self.reads: dict[tuple, np.ndarray] = {
            _key(region): np.empty([r.stop - r.start for r in region], record.dtype)
            for region in self.regions.values() if all(r.start < r.stop for r in region)}

    def chunk_reads(self) -> list:
        """Every (chunk, destination, region) this array's restore reads."""
        return [(self.chunks, chunk, destination, region)
                for key, destination in self.reads.items()
                for region in [tuple(slice(start, stop) for start, stop in key)]
                for chunk in self.chunks.chunks_in(region)]

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
