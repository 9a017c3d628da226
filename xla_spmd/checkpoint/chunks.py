"""The Zarr v3 chunk files a checkpoint holds, written and read without zarr-python.

Every array is created by zarr-python (its ``zarr.json``: a regular chunk grid, the default
``c/i/j`` chunk keys, codecs ``bytes`` (little-endian) then ``crc32c``), so stock Zarr reads
a checkpoint. The chunks themselves go through this module, which speaks exactly that
layout and no other (`check_array_metadata` refuses anything else):

* a chunk file is the chunk's elements in C order at the full chunk shape (an edge chunk
  past the end of the array is padded, here with zeros, the fill value), little-endian,
  followed by the CRC32C of those bytes as a little-endian uint32;
* a chunk is written with one ``writev`` per piece, its checksum computed piece by piece,
  and read the same way, each piece straight into the destination shard where the bytes
  for it lie contiguously in the file (else into scratch and copied).

File I/O and the checksum (the ``crc32c`` package, told to release the GIL: google-crc32c,
which zarr-python uses, holds it, and a save beside a training step then stalls the step
several times over) run without the GIL, piece by piece (`PIECE_BYTES`).

Worked example: a (5, 8) float32 chunk ``c/1/0`` of a (10, 8) array is 160 bytes of
elements and 4 of CRC32C; restoring rows 3:7 of that array reads rows 3:5 from ``c/0/0``
and rows 5:7 from ``c/1/0`` straight into the destination, and the rest of each chunk into
scratch, to check its checksum.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np

from xla_spmd.errors import CheckpointError

CRC_BYTES = 4
PIECE_BYTES = 1 << 20  # checksum and write granularity: short GIL holds
SCRATCH_BYTES = 8 << 20  # bytes read at most at once for parts no destination wants
MIN_RUN_BYTES = 1 << 16  # shorter contiguous runs: read the chunk whole and copy


def _crc32c():
    """The crc32c module, or a CheckpointError saying how to install it."""
    try:
        import crc32c
    except ImportError:
        raise CheckpointError("xla_spmd.checkpoint needs the crc32c package: "
                              "pip install 'xla-spmd[checkpoint]'") from None
    return crc32c


def _extend(crc: int, data) -> int:
    """CRC32C of the bytes so far (`crc`) extended over `data`, without the GIL."""
    return _crc32c().crc32c(data, crc, gil_release_mode=1)


def chunk_key(chunk: tuple[int, ...]) -> str:
    """Zarr v3's default chunk key: ``c/1/0`` (``c`` for a 0-d array)."""
    return "/".join(["c", *map(str, chunk)])


def _check_host() -> None:
    if sys.byteorder != "little":
        raise CheckpointError("xla_spmd.checkpoint reads and writes chunks on little-endian "
                              "hosts only")


def write_chunk(path: Path, data: np.ndarray, chunk_shape: tuple[int, ...]) -> int:
    """Write `data` (a shard in the stored dtype, at most `chunk_shape`) as the chunk file
    `path`, padded to `chunk_shape`, with its CRC32C; fsync it. Returns the bytes written."""
    _check_host()
    if tuple(data.shape) != tuple(chunk_shape):
        padded = np.zeros(chunk_shape, data.dtype)
        padded[tuple(slice(0, n) for n in data.shape)] = data
        data = padded
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        crc = 0
        for start in range(0, len(raw), PIECE_BYTES):
            piece = raw[start:start + PIECE_BYTES]
            crc = _extend(crc, piece)
            _write_all(descriptor, piece)
        _write_all(descriptor, np.uint32(crc).astype("<u4").tobytes())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return len(raw) + CRC_BYTES


def _write_all(descriptor: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


class ChunkReader:
    """Reads the chunk files of one array of a checkpoint into destination shards.

    `where` names the array in errors (``<folder>: leaf ['w']``)."""

    def __init__(self, folder: Path, name: str, shape: tuple[int, ...], stored: np.dtype,
                 chunk_shape: tuple[int, ...], where: str):
        _check_host()
        self.folder, self.name, self.where = folder, name, where
        self.shape, self.stored, self.chunk_shape = shape, np.dtype(stored), chunk_shape
        self.chunk_bytes = int(np.prod(chunk_shape, dtype=np.int64)) * self.stored.itemsize

    def chunks_in(self, box: tuple[slice, ...]) -> list[tuple[int, ...]]:
        """The grid indices of the chunks that `box` (global coordinates) touches."""
        if any(b.start >= b.stop for b in box):
            return []
        ranges = [range(b.start // c, (b.stop - 1) // c + 1)
                  for b, c in zip(box, self.chunk_shape)]
        return list(itertools.product(*ranges))

    def path(self, chunk: tuple[int, ...]) -> Path:
        return self.folder / self.name / chunk_key(chunk)

    def read_into(self, chunk: tuple[int, ...], destination: np.ndarray,
                  box: tuple[slice, ...]) -> None:
        """Read chunk `chunk` and put its part inside `box` (the global region that the
        C-contiguous `destination` holds) into `destination`, checking its CRC32C."""
        path = self.path(chunk)
        destination = destination.view(self.stored)
        runs = self._runs(chunk, destination, box)
        try:
            with open(path, "rb", buffering=0) as file:
                self._read_file(file, chunk, destination, box, runs)
        except FileNotFoundError:
            raise CheckpointError(f"{self.where}: chunk {chunk_key(chunk)} of array "
                                  f"{self.name!r} is missing ({path}); the checkpoint is "
                                  "damaged") from None
        except OSError as error:
            raise CheckpointError(f"{self.where}: chunk {chunk_key(chunk)} of array "
                                  f"{self.name!r} ({path}) cannot be read: {error}") from None

    def _read_file(self, file, chunk, destination: np.ndarray, box, runs) -> None:
        size = os.fstat(file.fileno()).st_size
        if size != self.chunk_bytes + CRC_BYTES:
            raise self._corrupt(chunk, f"{size} bytes, expected "
                                       f"{self.chunk_bytes + CRC_BYTES}")
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        if runs is None:
            self._read_whole(file, chunk, destination, box)
            return
        crc, position, scratch = 0, 0, None
        for offset, target in runs:
            if offset > position:
                crc, scratch = self._skip(file, chunk, offset - position, crc, scratch)
            crc = self._read_exact(file, chunk, target, crc)
            position = offset + len(target)
        if position < self.chunk_bytes:
            crc, _ = self._skip(file, chunk, self.chunk_bytes - position, crc, scratch)
        self._check_crc(file, chunk, crc)

    def _overlap(self, chunk, box):
        """The chunk's first element, and the low and high corners of its overlap with
        `box`, in global coordinates."""
        starts = [i * c for i, c in zip(chunk, self.chunk_shape)]
        low = [max(b.start, s) for b, s in zip(box, starts)]
        high = [min(b.stop, s + c) for b, s, c in zip(box, starts, self.chunk_shape)]
        return starts, low, high

    def _runs(self, chunk, destination: np.ndarray, box) -> list | None:
        """The (file offset, destination bytes) runs that lie contiguously in both, in file
        order; None where they are too short to read one by one."""
        starts, low, high = self._overlap(chunk, box)
        extent = [h - lo for lo, h in zip(low, high)]
        box_extent = [b.stop - b.start for b in box]
        # Dims after `k` are whole in the chunk, the box and the overlap alike.
        k = len(extent) - 1
        while k > 0 and extent[k] == self.chunk_shape[k] == box_extent[k]:
            k -= 1
        itemsize = self.stored.itemsize
        run_elements = int(np.prod(extent[k:], dtype=np.int64)) if extent else 1
        if run_elements * itemsize < MIN_RUN_BYTES and \
                run_elements * itemsize < self.chunk_bytes:
            return None
        chunk_strides = _strides(self.chunk_shape)
        box_strides = _strides(box_extent)
        flat = destination.reshape(-1).view(np.uint8)
        runs = []
        for outer in np.ndindex(*extent[:k]):
            index = list(outer) + [0] * (len(extent) - k)
            file_offset = sum((lo - s + i) * stride for lo, s, i, stride in
                              zip(low, starts, index, chunk_strides))
            box_offset = sum((lo - b.start + i) * stride for lo, b, i, stride in
                             zip(low, box, index, box_strides))
            runs.append((file_offset * itemsize,
                         flat[box_offset * itemsize:(box_offset + run_elements) * itemsize]))
        return runs

    def _read_whole(self, file, chunk, destination: np.ndarray, box) -> None:
        buffer = np.empty(self.chunk_bytes, np.uint8)
        crc = self._read_exact(file, chunk, buffer, 0)
        self._check_crc(file, chunk, crc)
        values = buffer.view(self.stored).reshape(self.chunk_shape)
        starts, low, high = self._overlap(chunk, box)
        destination[tuple(slice(lo - b.start, h - b.start) for lo, h, b in
                          zip(low, high, box))] = \
            values[tuple(slice(lo - s, h - s) for lo, h, s in zip(low, high, starts))]

    def _read_exact(self, file, chunk, target: np.ndarray, crc: int) -> int:
        """Fill `target` (uint8) from `file`, extending `crc` over it piece by piece."""
        done = 0
        while done < len(target):
            count = file.readinto(target[done:done + PIECE_BYTES])
            if not count:
                raise self._corrupt(chunk, "the file ends early")
            crc = _extend(crc, target[done:done + count])
            done += count
        return crc

    def _skip(self, file, chunk, count: int, crc: int, scratch):
        if scratch is None:
            scratch = np.empty(min(SCRATCH_BYTES, self.chunk_bytes), np.uint8)
        while count:
            piece = scratch[:min(count, len(scratch))]
            crc = self._read_exact(file, chunk, piece, crc)
            count -= len(piece)
        return crc, scratch

    def _check_crc(self, file, chunk, crc: int) -> None:
        stored = file.read(CRC_BYTES)
        computed = np.uint32(crc).astype("<u4").tobytes()
        if stored != computed:
            raise self._corrupt(chunk, f"checksum mismatch: stored CRC32C {stored.hex()}, "
                                       f"computed {computed.hex()}")

    def _corrupt(self, chunk, why: str) -> CheckpointError:
        return CheckpointError(f"{self.where}: chunk {chunk_key(chunk)} of array "
                               f"{self.name!r} ({self.path(chunk)}) is corrupt: {why}")


def _strides(shape) -> list[int]:
    strides, step = [], 1
    for extent in reversed(list(shape)):
        strides.append(step)
        step *= extent
    return strides[::-1]


def check_array_metadata(folder: Path, name: str, shape: tuple[int, ...], stored: np.dtype,
                         chunk_shape: tuple[int, ...], where: str) -> None:
    """Check that `folder`/`name`/zarr.json describes the layout this module reads: the
    manifest's shape, dtype and chunk shape, default chunk keys, bytes + crc32c codecs."""
    path = folder / name / "zarr.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{where}: array {name!r} has no Zarr metadata ({path}); the "
                              "checkpoint is damaged") from None
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{where}: cannot read {path}: {error}") from None
    expected = {
        "zarr_format": 3, "node_type": "array", "shape": list(shape),
        "data_type": np.dtype(stored).name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunk_shape)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    }
    found = meta if isinstance(meta, dict) else {}
    for field, value in expected.items():
        if found.get(field) != value:
            raise CheckpointError(f"{where}: {path}: {field} is {found.get(field)!r}, "
                                  f"expected {value!r} (the manifest and the array disagree)")
    codecs = found.get("codecs")
    names = [codec.get("name") for codec in codecs if isinstance(codec, dict)] \
        if isinstance(codecs, list) else None
    endian = codecs[0].get("configuration", {}).get("endian", "little") \
        if names and isinstance(codecs, list) and isinstance(
            codecs[0].get("configuration", {}), dict) else None
    if names != ["bytes", "crc32c"] or (endian != "little" and np.dtype(stored).itemsize > 1):
        raise CheckpointError(f"{where}: {path}: codecs {codecs!r}; xla-spmd reads chunks "
                              "stored as little-endian bytes + crc32c, as it writes them")
