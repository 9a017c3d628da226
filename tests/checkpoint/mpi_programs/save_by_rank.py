"""Under `mpirun -n 4`: save four arrays (uneven, half-replicated, replicated, bfloat16),
restore them with other shardings, and record which Zarr keys this rank wrote and read
(chunks counted where their files are written and read, metadata at zarr-python's store)
in <out>/rank<r>.json; then restore onto a mesh of 2 devices, smaller than the job."""

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import zarr

import xla_spmd as xs
from xla_spmd.checkpoint import chunks, writer

out = Path(sys.argv[1])
written, read = {}, []
original_set, original_write = zarr.storage.LocalStore.set, writer.write_chunk
original_read = chunks.ChunkReader.read_into


async def counting_set(self, key, value, *args, **kwargs):
    written[key] = len(value.to_bytes())
    return await original_set(self, key, value, *args, **kwargs)


def counting_write(path, data, chunk_shape):
    size = original_write(path, data, chunk_shape)
    written["/".join(path.parts[-2 - len(chunk_shape):])] = size  # <array>/c/<i>/<j>
    return size


def counting_read(self, chunk, destination, box):
    read.append(f"{self.name}/{chunks.chunk_key(chunk)}")
    return original_read(self, chunk, destination, box)


zarr.storage.LocalStore.set, writer.write_chunk = counting_set, counting_write
chunks.ChunkReader.read_into = counting_read

mesh = xs.make_mesh({"x": 2, "y": 2})
values = {"a": np.arange(30, dtype=np.float32).reshape(6, 5),
          "b": np.arange(16, dtype=np.float32).reshape(4, 4),
          "c": np.arange(3, dtype=np.float32),
          "d": np.arange(9).astype(ml_dtypes.bfloat16)}
saved = {"a": xs.P("x", "y"), "b": xs.P(None, "y"), "c": xs.P(), "d": xs.P(("x", "y"))}
tree = {name: xs.device_put(values[name], xs.NamedSharding(mesh, saved[name]))
        for name in values}
xs.checkpoint.save(out / "checkpoint", tree, step=1).wait()  # asynchronous
writes = dict(written)

targets = {"a": xs.P("y", "x"), "b": xs.P("x", None), "c": xs.P("x"), "d": xs.P()}
restored = xs.checkpoint.restore(out / "checkpoint", {
    name: xs.NamedSharding(mesh, spec) for name, spec in targets.items()})
correct = all(
    restored[name].sharding == xs.NamedSharding(mesh, targets[name]).to_tensor_sharding(
        values[name].ndim)
    and all(np.array_equal(shard.data, values[name][shard.index])
            for shard in restored[name].addressable_shards)
    for name in values)
reads = list(read)

# Onto a mesh of 2 devices: ranks 2 and 3 hold nothing and read nothing.
small = xs.make_mesh({"x": 2})
on_small = {"a": xs.P("x", None), "b": xs.P(None, "x"), "c": xs.P(), "d": xs.P("x")}
restored = xs.checkpoint.restore(out / "checkpoint", {
    name: xs.NamedSharding(small, spec) for name, spec in on_small.items()})
small_correct = all(
    restored[name].sharding == xs.NamedSharding(small, on_small[name]).to_tensor_sharding(
        values[name].ndim)
    and [shard.device.id for shard in restored[name].addressable_shards] == (
        [xs.process_index()] if xs.process_index() < 2 else [])
    and all(np.array_equal(shard.data, values[name][shard.index])
            for shard in restored[name].addressable_shards)
    and np.array_equal(np.asarray(restored[name]), values[name])  # a collective
    for name in values)
(out / f"rank{xs.process_index()}.json").write_text(json.dumps(
    {"written": writes, "read": reads, "correct": correct, "small_correct": small_correct,
     "small_read": read[len(reads):]}))
