"""Inspect meshes and shardings: which device holds which tile, in every notation.

    python examples/inspect_sharding.py [--mesh data=2,model=4] [--spec data,model] [--shape 8,16]

Prints the mesh, the sharding as JAX's PartitionSpec, as Shardy's `#sdy.sharding` and as
GSPMD's `{devices=...}` text, each device's shard, the replica groups of each axis, and a
picture of the tiles.
"""

from __future__ import annotations

import argparse

import xla_spmd as xs
import xla_spmd.errors  # noqa: F401 (xs.errors)
from xla_spmd.sharding import axes_to_hlo, hlo_to_axes


def parse_mesh(text: str) -> xs.Mesh:
    axes = {}
    for item in text.split(","):
        name, size = item.split("=")
        axes[name.strip()] = int(size)
    return xs.make_mesh(axes)


def parse_spec(text: str) -> xs.PartitionSpec:
    entries = []
    for item in text.split(","):
        item = item.strip()
        if item in ("", "None", "_"):
            entries.append(None)
        elif "+" in item:  # several axes on one dimension: data+model
            entries.append(tuple(item.split("+")))
        else:
            entries.append(item)
    return xs.P(*entries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mesh", default="data=2,model=4")
    parser.add_argument("--spec", default="data,model",
                        help="one entry per dim: an axis, axes joined by '+', or None")
    parser.add_argument("--shape", default="8,16")
    parser.add_argument("--no-color", action="store_true")
    args = parser.parse_args()

    mesh = parse_mesh(args.mesh)
    shape = tuple(int(d) for d in args.shape.split(","))
    named = xs.NamedSharding(mesh, parse_spec(args.spec))
    sharding = named.to_tensor_sharding(len(shape))
    gspmd = axes_to_hlo(sharding)

    print(f"mesh            {mesh!r}    (Shardy: {mesh})")
    print(f"PartitionSpec   {named.spec}")
    print(f"Shardy          {sharding}")
    print(f"GSPMD           {gspmd}")
    print(f"back from GSPMD {hlo_to_axes(gspmd, rank=len(shape), mesh=mesh).sharding}")
    print(f"global shape    {list(shape)} -> shard shape {list(sharding.shard_shape(shape))}")
    for name in mesh.axis_names:
        print(f"groups of {name!r:8} {mesh.device_groups([name]).text()}")
    print()
    for device in mesh.all_device_ids:
        offsets = sharding.shard_offsets(shape, device)
        ranges = ", ".join(f"{start}:{start + size}" for start, size in offsets)
        print(f"  device {device}: coords {mesh.device_coords(device)}  holds [{ranges}]")
    if len(shape) <= 2:
        xs.visualize_sharding(sharding, shape, use_color=not args.no_color)


if __name__ == "__main__":
    try:
        main()
    except xs.errors.XlaSpmdError as error:
        raise SystemExit(f"inspect_sharding: {error}") from None
