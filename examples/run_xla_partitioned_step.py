"""Train with the SPMD program XLA partitioned, on 8 in-process devices.

    python examples/run_xla_partitioned_step.py [--case sharded_transformer_2x4] [--steps 5]

`tests/data/jax/<case>/` holds a training step that JAX lowered for a device mesh: the global
program (`<case>.hlo`, with the user's shardings), the per-device program XLA's SPMD
partitioner made of it (`<case>.optimized.hlo`, local shapes, all-reduces), and inputs with
JAX's outputs (`<case>.npz`). This example

1. parses both programs;
2. shards the global inputs by the partitioned program's parameter shardings;
3. runs the 8 devices in lockstep (`evaluate_spmd`), exchanging data at every collective;
4. assembles the global outputs from the result shardings of the global program;
5. feeds the updated weights back for the next step, and checks each step against the
   unpartitioned program evaluated on one device (and the first step against JAX).

The step returns (loss, *new_params) and takes (*params, *batch), as the MANIFEST records.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

import xla_spmd as xs
from xla_spmd.backends.reference import evaluate, evaluate_spmd, leaves
from xla_spmd.sharding import hlo_to_axes

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "jax"


def load_case(name: str):
    manifest = json.loads((DATA / "MANIFEST.json").read_text())
    case = next((c for c in manifest["cases"] if c["name"] == name), None)
    if case is None or not case["sharded"]:
        sharded = [c["name"] for c in manifest["cases"] if c["sharded"]]
        raise SystemExit(f"no sharded case {name!r}; choose one of {', '.join(sharded)}")
    folder = DATA / name
    global_program = xs.parse_hlo((folder / f"{name}.hlo").read_text(), f"{name}.hlo")
    spmd_program = xs.parse_hlo((folder / f"{name}.optimized.hlo").read_text(),
                                f"{name}.optimized.hlo")
    with np.load(folder / f"{name}.npz", allow_pickle=False) as data:
        inputs = [data[i["name"]] for i in case["inputs"]]
        expected = [data[o["name"]] for o in case["outputs"]]
    mesh = xs.make_mesh(dict(zip(case["mesh"]["axis_names"], case["mesh"]["shape"])))
    return case, global_program, spmd_program, inputs, expected, mesh


def axis_shardings(hlo_shardings, shapes, mesh):
    """GSPMD shardings from the program text, as axis-based shardings over `mesh`."""
    return [hlo_to_axes(h, rank=len(s), mesh=mesh).sharding for h, s in zip(hlo_shardings, shapes)]


def shard(arrays, shardings, num_devices):
    return [[a[s.shard_slices(a.shape, d)] for a, s in zip(arrays, shardings)]
            for d in range(num_devices)]


def assemble(per_device, shardings, shapes, dtypes):
    outputs = []
    for i, (sharding, shape, dtype) in enumerate(zip(shardings, shapes, dtypes)):
        full = np.zeros(shape, dtype)
        for device, values in enumerate(per_device):
            slices = sharding.shard_slices(shape, device)
            valid = tuple(slice(0, sl.stop - sl.start) for sl in slices)
            full[slices] = np.asarray(values[i])[valid]
        outputs.append(full)
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", default="sharded_transformer_2x4")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    console = Console()

    case, global_program, spmd_program, inputs, expected, mesh = load_case(args.case)
    num_devices = mesh.size
    num_params = len(case["outputs"]) - 1
    param_shardings = axis_shardings([p.sharding for p in spmd_program.entry.parameters],
                                     [i.shape for i in inputs], mesh)
    out_shapes = [tuple(o["shape"]) for o in case["outputs"]]
    out_shardings = axis_shardings(global_program.entry.root.sharding.elements, out_shapes, mesh)

    console.print(f"[bold]{case['description']}[/]")
    console.print(f"mesh {mesh!r}; {len(spmd_program.entry.instructions)} instructions per "
                  f"device; {num_devices} in-process devices")
    table = Table("step", "loss", "max |partitioned - unpartitioned|", "seconds")
    for step in range(args.steps):
        start = time.perf_counter()
        per_device = evaluate_spmd(spmd_program, shard(inputs, param_shardings, num_devices),
                                   num_devices)
        outputs = assemble([leaves(r) for r in per_device], out_shardings, out_shapes,
                           [e.dtype for e in expected])
        seconds = time.perf_counter() - start
        reference = [np.asarray(r) for r in leaves(evaluate(global_program, inputs))]
        error = max(float(np.max(np.abs(a - b))) for a, b in zip(outputs, reference))
        if step == 0:
            jax_error = max(float(np.max(np.abs(a - b))) for a, b in zip(outputs, expected))
            console.print(f"step 0 against JAX's own outputs: max difference {jax_error:.2e}")
            if jax_error > 1e-4:
                raise SystemExit("the partitioned step does not reproduce JAX's outputs")
        if error > 1e-4:
            raise SystemExit(f"step {step}: partitioned and unpartitioned programs differ "
                             f"by {error}")
        table.add_row(str(step), f"{float(outputs[0]):.6f}", f"{error:.2e}", f"{seconds:.2f}")
        inputs = outputs[1:num_params + 1] + inputs[num_params:]
    console.print(table)


if __name__ == "__main__":
    main()
