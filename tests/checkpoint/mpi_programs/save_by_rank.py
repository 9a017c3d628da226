"""Under `mpirun -n 4`: save four arrays (uneven, half-replicated, replicated, bfloat16),
restore them with other shardings, and record which Zarr keys this rank wrote and read
(counted at the store, beneath xs.checkpoint) in <out>/rank<r>.json."""

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import zarr

import xla_spmd as xs

out = Path(sys.argv[1])
written, read = {}, []
original_set, original_get = zarr.storage.LocalStore.set, zarr.storage.LocalStore.get


async def counting_set(self, key, value, *args, **kwargs):
    written[key] = len(value.to_bytes())
    return await original_set(self, key, value, *args, **kwargs)


async def counting_get(self, key, *args, **kwargs):
    read.append(key)
    return await original_get(self, key, *args, **kwargs)


zarr.storage.LocalStore.set, zarr.storage.LocalStore.get = counting_set, counting_get

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
(out / f"rank{xs.process_index()}.json").write_text(json.dumps(
    {"written": writes, "read": [key for key in read if not key.endswith("zarr.json")],
     "correct": correct}))
