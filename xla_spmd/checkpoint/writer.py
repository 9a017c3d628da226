"""`save`: every process writes its own devices' shards, as chunks of Zarr v3 arrays.

Invariants:

* one chunk per shard (the chunk shape is the ceiling shard shape, so uneven shards are Zarr
  edge chunks), written once, by the lowest device id holding it; a replicated array is
  written by device 0 alone; nothing is gathered or sent between processes;
* every chunk carries a CRC32C checksum (Zarr's ``crc32c`` codec), checked on restore;
* zarr-python creates the group and each array's ``zarr.json`` (so stock Zarr reads the
  checkpoint); the chunk files are written by chunks.py, from the shards as they are (an
  async save copies them first), without zarr-python's per-chunk machinery;
* the checkpoint becomes visible in one rename, after every process has written and fsynced
  its chunks (layout.py); under MPI the processes meet at barriers that also agree on
  failure, so no process commits what another failed to write. A barrier waits for the
  slowest writer at most ``xs.config.collective_timeout`` seconds (then every process
  raises, naming the ones missing).

Worked example: a (10, 8) float32 array sharded ``P("data", None)`` on mesh data=2, model=4
is stored as chunks of shape (5, 8): ``c/0/0`` written by device 0 and ``c/1/0`` by device 4
(devices 1-3 and 5-7 hold copies and write nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xla_spmd.checkpoint import layout
from xla_spmd.checkpoint.chunks import chunk_key, write_chunk
from xla_spmd.checkpoint.manifest import (
    MANIFEST,
    ArrayRecord,
    Leaf,
    Manifest,
    encode_tree,
    record_of,
    stored_dtype,
)
from xla_spmd.errors import CheckpointError
from xla_spmd.runtime import ShardedArray, topology

WRITER_THREADS = 2  # writing is bound by the disk and fsync: more threads gain nothing
BACKGROUND_NICE = 10  # CPU niceness of an async save's writer threads


def zarr_module():
    """zarr-python, or a CheckpointError saying how to install it."""
    try:
        import zarr
    except ImportError:
        raise CheckpointError("xla_spmd.checkpoint needs zarr-python 3: "
                              "pip install 'xla-spmd[checkpoint]'") from None
    return zarr


@dataclass
class ChunkWrite:
    """One chunk this process writes: its array, grid index, region and values."""

    name: str
    chunk: tuple[int, ...]
    region: tuple[slice, ...]
    data: np.ndarray


def plan_writes(leaves: list[Leaf], records: dict[str, ArrayRecord], process_index: int,
                snapshot: bool) -> list[ChunkWrite]:
    """The chunks this process writes: each of its shards that no lower device also holds.
    `snapshot` copies them, so that later steps (donation included) cannot change a save
    in flight."""
    writes = []
    for leaf in leaves:
        record = records[leaf.name]
        if isinstance(leaf.value, ShardedArray):
            pieces = _own_shards(leaf.value, record)
        elif process_index == 0:
            pieces = [(tuple(slice(0, n) for n in record.shape), leaf.value)]
        else:
            pieces = []
        for region, data in pieces:
            if any(r.start == r.stop for r in region):
                continue  # an empty shard past the end of an uneven dim
            chunk = tuple(r.start // c for r, c in zip(region, record.chunk_shape))
            data = data.view(stored_dtype(record.dtype))
            writes.append(ChunkWrite(leaf.name, chunk, region,
                                     np.array(data, copy=True) if snapshot else data))
    return writes


def _own_shards(array: ShardedArray, record: ArrayRecord) -> list:
    sharding = record.sharding
    assert sharding is not None  # a sharded array's record names its sharding
    lowest: dict[tuple[int, ...], int] = {}
    for device in sharding.mesh.all_device_ids:
        index = sharding.shard_index(device)
        lowest[index] = min(device, lowest.get(index, device))
    return [(shard.index, shard.data) for shard in array.addressable_shards
            if lowest[sharding.shard_index(shard.device.id)] == shard.device.id]


def lower_thread_priority() -> None:
    """Let the calling thread yield the CPU to the training step (Linux: a thread's nice
    value is its own); nowhere else does this matter enough to try."""
    if hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
        except OSError:
            pass  # not permitted here: the save runs at normal priority


class _Processes:
    """This job's processes: a barrier that also agrees on failure. Under MPI it uses its
    own duplicate of COMM_WORLD, so a save's barriers in a background thread never match
    the training step's collectives."""

    def __init__(self):
        top = topology()
        self.index, self.count = top.process_index, top.process_count
        self._comm = None
        if top.kind == "mpi":
            from xla_spmd.collectives.mpi import MpiCommunicator

            self._comm = MpiCommunicator()

    def agree(self, error: BaseException | None, what: str) -> None:
        """Wait for every process; raise CheckpointError on all if any failed."""
        if self._comm is None:
            failed = [0] if error is not None else []
        else:
            flags = self._comm.all_gather(np.array([error is not None], np.int32),
                                          tuple(range(self.count)))
            failed = [i for i, flag in enumerate(flags.ravel()) if flag]
        if not failed:
            return
        message = f"{what} failed on process{'es' if len(failed) > 1 else ''} " + \
            ", ".join(map(str, failed))
        if error is not None:
            message += f": {error}"
        raise CheckpointError(message) from error


_processes: _Processes | None = None
_in_flight: SaveHandle | None = None


def processes() -> _Processes:
    """The job's processes (created on first use: collective under MPI)."""
    global _processes
    if _processes is None:
        _processes = _Processes()
    return _processes


class SaveHandle:
    """A save, running in the background (``async_=True``) or finished.

    ``wait()`` blocks until the checkpoint is committed on every process, and raises the
    save's error if it failed; ``done()`` tells without blocking.
    """

    def __init__(self, path: Path, step: int, bytes_written: int):
        self.path = path
        self.step = step
        self.bytes_written = bytes_written  # by this process
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def done(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
        if self.error is not None:
            raise self.error

    def __repr__(self) -> str:
        state = "done" if self.done() else "in flight"
        return f"SaveHandle(step {self.step} -> {self.path}, {state})"


def wait_for_saves() -> None:
    """Block until the save in flight (if any) has committed; raise its error."""
    global _in_flight
    handle, _in_flight = _in_flight, None
    if handle is not None:
        handle.wait()


def save(directory: str | os.PathLike, tree, *, step: int, metadata: Any = None,
         async_: bool = True, on_commit=None) -> SaveHandle:
    """Save a tree of ShardedArrays (numpy arrays and Python scalars allowed too) as the
    checkpoint `directory`/<step>.

    Every process writes only the shards its devices hold; a shard held by several devices
    is written once, by the lowest. With ``async_=True`` the shards are copied first and
    written in a background thread while the caller goes on (the next save, a restore or
    ``handle.wait()`` waits for it); the checkpoint appears, complete, only when every
    process is done. `metadata` is any JSON value, kept in the manifest. `on_commit` runs
    on process 0 after the commit (a CheckpointManager prunes old steps there).

    >>> import numpy as np, tempfile, xla_spmd as xs
    >>> xs.set_num_devices(4)
    >>> mesh = xs.make_mesh({"x": 4})
    >>> w = xs.device_put(np.arange(8, dtype=np.float32), xs.NamedSharding(mesh, xs.P("x")))
    >>> root = tempfile.mkdtemp()
    >>> xs.checkpoint.save(root, {"w": w}, step=1, async_=False).bytes_written  # 4 x 2 float32
    32
    >>> xs.checkpoint.restore(root)["w"].sharding == w.sharding
    True
    """
    global _in_flight
    root = Path(directory)
    step = layout.check_step(step)
    wait_for_saves()
    final = layout.step_dir(root, step)
    if final.exists():
        raise CheckpointError(f"{final}: a checkpoint of step {step} already exists")
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"save step {step}: metadata must be a JSON value: {error}") \
            from None
    structure, leaves = encode_tree(tree)
    records = {leaf.name: record_of(leaf) for leaf in leaves}
    top = topology()
    manifest = Manifest(step, metadata, structure, records, top.num_devices,
                        top.process_count)
    writes = plan_writes(leaves, records, top.process_index, snapshot=async_)
    job = _SaveJob(root, manifest, writes, processes(), on_commit, background=async_)
    handle = SaveHandle(final, step, sum(write.data.nbytes for write in writes))
    if not async_:
        job.run()
        return handle

    def run():
        try:
            job.run()
        except BaseException as error:  # reported by wait(), on the caller's thread
            handle.error = error

    handle._thread = threading.Thread(target=run, name=f"checkpoint-save-{step}")
    handle._thread.start()
    _in_flight = handle
    return handle


class _SaveJob:
    """Prepare (process 0) -> write chunks (all) -> commit (process 0), with a barrier
    that agrees on failure between the phases."""

    def __init__(self, root: Path, manifest: Manifest, writes: list[ChunkWrite],
                 group: _Processes, on_commit, background: bool):
        self.root, self.manifest, self.writes, self.group = root, manifest, writes, group
        self.background = background
        self.on_commit = on_commit
        self.partial = layout.partial_dir(root, manifest.step)
        self.what = f"saving step {manifest.step} to {root}"

    def run(self) -> None:
        first = self.group.index == 0
        self._phase(self._prepare if first else None, "preparing " + self.what)
        self._phase(self._write, self.what)
        self._phase(self._commit if first else None, "committing " + self.what)

    def _phase(self, action, what: str) -> None:
        error = None
        if action is not None:
            try:
                action()
            except CheckpointError as caught:
                error = caught
            except Exception as caught:
                error = CheckpointError(f"{what}: {type(caught).__name__}: {caught}")
        self.group.agree(error, what)

    def _prepare(self) -> None:
        zarr = zarr_module()
        from zarr.codecs import BytesCodec, Crc32cCodec
        from zarr.storage import LocalStore

        if self.partial.exists():  # an earlier, interrupted save of this step
            shutil.rmtree(self.partial)
        self.partial.mkdir(parents=True)
        store = LocalStore(self.partial)
        zarr.create_group(store, zarr_format=3, attributes={"xla_spmd_manifest": MANIFEST})
        for name, record in self.manifest.arrays.items():
            zarr.create_array(
                store, name=name, shape=record.shape, chunks=record.chunk_shape,
                dtype=stored_dtype(record.dtype), serializer=BytesCodec(),
                compressors=[Crc32cCodec()], fill_value=0,
                attributes={"xla_spmd_dtype": record.dtype.name, "path": record.path})

    def _write(self) -> None:
        """Write this process's chunks (chunks.py: no zarr-python on this path), in
        `WRITER_THREADS` threads, at low CPU priority in a background save."""
        if not self.writes:
            return
        records = self.manifest.arrays

        def write(item: ChunkWrite) -> Path:
            if self.background:
                lower_thread_priority()
            path = self.partial / item.name / chunk_key(item.chunk)
            write_chunk(path, item.data, records[item.name].chunk_shape)
            return path

        with ThreadPoolExecutor(min(WRITER_THREADS, len(self.writes))) as pool:
            files = list(pool.map(write, self.writes))
        layout.fsync_tree(files, self.partial, files_synced=True)

    def _commit(self) -> None:
        manifest = self.partial / MANIFEST
        manifest.write_text(self.manifest.to_json())
        metadata = [manifest, self.partial / "zarr.json"]
        metadata += [self.partial / name / "zarr.json" for name in self.manifest.arrays]
        layout.fsync_tree(metadata, self.partial)
        layout.commit(self.partial, layout.step_dir(self.root, self.manifest.step))
        if self.on_commit is not None:
            self.on_commit()
