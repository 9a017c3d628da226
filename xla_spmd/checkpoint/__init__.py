"""Sharded checkpoints: save without gathering, restore onto any mesh, commit atomically.

Each checkpoint is a Zarr v3 group (one array per leaf, one chunk per shard, a CRC32C per
chunk) plus ``manifest.json`` (tree structure, dtypes, global shapes, meshes and shardings;
no pickle), committed by one rename (layout.py). The same calls work in one process with
in-process devices and under ``mpirun``, where each rank writes and reads only its shards.

>>> import numpy as np, tempfile, xla_spmd as xs
>>> xs.set_num_devices(8)
>>> mesh = xs.make_mesh({"data": 2, "model": 4})
>>> params = {"w": xs.device_put(np.arange(32.0).reshape(4, 8),
...                              xs.NamedSharding(mesh, xs.P("data", "model")))}
>>> root = tempfile.mkdtemp()
>>> xs.checkpoint.save(root, params, step=100).wait()
>>> xs.checkpoint.latest_step(root)
100
>>> xs.set_num_devices(4)                       # restore onto a smaller mesh
>>> small = xs.make_mesh({"data": 1, "model": 4})
>>> restored = xs.checkpoint.restore(root, target_shardings=small)
>>> restored["w"].sharding.mesh.shape, np.array_equal(restored["w"], params["w"])
({'data': 1, 'model': 4}, True)
"""

from xla_spmd.checkpoint.layout import all_steps, latest_step
from xla_spmd.checkpoint.manager import CheckpointManager
from xla_spmd.checkpoint.manifest import Manifest
from xla_spmd.checkpoint.reader import restore
from xla_spmd.checkpoint.writer import SaveHandle, save, wait_for_saves


def read_manifest(directory, step: int | None = None) -> Manifest:
    """The manifest of `directory`/<step> (default: the latest complete step): its step,
    metadata, tree structure and per-array shape, dtype and sharding."""
    from pathlib import Path

    from xla_spmd.checkpoint import layout, manifest
    from xla_spmd.errors import CheckpointError

    root = Path(directory)
    step = layout.latest_step(root) if step is None else layout.check_step(step)
    if step is None:
        raise CheckpointError(f"{root}: no complete checkpoint")
    return manifest.read_manifest(layout.step_dir(root, step))


__all__ = ["CheckpointManager", "Manifest", "SaveHandle", "all_steps", "latest_step",
           "read_manifest", "restore", "save", "wait_for_saves"]
