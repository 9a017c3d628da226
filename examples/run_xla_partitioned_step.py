"""Train with the SPMD program XLA partitioned, on 8 devices: in-process or MPI ranks.

    python examples/run_xla_partitioned_step.py [--case sharded_transformer_2x4] [--steps 5]
    mpirun -n 8 python examples/run_xla_partitioned_step.py

`tests/data/jax/<case>/` holds a training step that JAX lowered for a device mesh: the global
program (`<case>.hlo`, with the user's shardings), the per-device program XLA's SPMD
partitioner made of it (`<case>.optimized.hlo`, local shapes, all-reduces), and inputs with
JAX's outputs (`<case>.npz`). This example

1. parses both programs;
2. places the global inputs on the devices by the partitioned program's parameter shardings
   (`xs.device_put`: each process keeps only its devices' shards);
3. compiles it with the configured backend and runs it on every device
   (`xs.runtime.execute`): threads exchanging through shared memory, or one MPI rank per
   device exchanging through MPI;
4. assembles the global outputs from the result shardings of the global program (a
   collective under MPI);
5. feeds the updated weights back for the next step, and checks each step against the
   unpartitioned program evaluated on one device (and the first step against JAX).

The step returns (loss, *new_params) and takes (*params, *batch), as the MANIFEST records.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

import xla_spmd as xs
from xla_spmd.backends.reference import evaluate, leaves
from xla_spmd.pipeline import load_backend
from xla_spmd.runtime import ShardedArray, execute, topology
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", default="sharded_transformer_2x4")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    console = Console()

    case, global_program, spmd_program, inputs, expected, mesh = load_case(args.case)
    num_devices = mesh.size
    if num_devices != xs.device_count():
        xs.set_num_devices(num_devices)
    num_params = len(case["outputs"]) - 1
    param_shardings = axis_shardings([p.sharding for p in spmd_program.entry.parameters],
                                     [i.shape for i in inputs], mesh)
    out_shapes = [tuple(o["shape"]) for o in case["outputs"]]
    out_shardings = axis_shardings(global_program.entry.root.sharding.elements, out_shapes, mesh)

    top = topology()

    def say(message) -> None:  # under MPI every rank computes the same; rank 0 speaks
        if top.process_index == 0:
            console.print(message)

    where = "in-process devices" if top.kind == "local" else "MPI ranks"
    say(f"[bold]{case['description']}[/]")
    say(f"mesh {mesh!r}; {len(spmd_program.entry.instructions)} instructions per device; "
        f"{num_devices} {where}")
    table = Table("step", "loss", "max |partitioned - unpartitioned|", "seconds")
    # XLA partitioned this program already: it goes straight to the backend (the one
    # xs.config.backend / XLA_SPMD_BACKEND names).
    executable = load_backend().compile(spmd_program, [d.id for d in xs.local_devices()])
    for step in range(args.steps):
        start = time.perf_counter()
        placed = xs.device_put(inputs, param_shardings)
        per_device = execute(executable, {d.id: [a.shard_data(d.id, padded=True)
                                                  for a in placed] for d in xs.local_devices()})
        outputs = [ShardedArray.from_padded_shards(
                       shape, e.dtype, sharding, {d: r[i] for d, r in per_device.items()}
                   ).gather() for i, (shape, sharding, e)
                   in enumerate(zip(out_shapes, out_shardings, expected))]
        seconds = time.perf_counter() - start
        reference = [np.asarray(r) for r in leaves(evaluate(global_program, inputs))]
        error = max(float(np.max(np.abs(a - b))) for a, b in zip(outputs, reference))
        if step == 0:
            jax_error = max(float(np.max(np.abs(a - b))) for a, b in zip(outputs, expected))
            say(f"step 0 against JAX's own outputs: max difference {jax_error:.2e}")
            if jax_error > 1e-4:
                raise SystemExit("the partitioned step does not reproduce JAX's outputs")
        if error > 1e-4:
            raise SystemExit(f"step {step}: partitioned and unpartitioned programs differ "
                             f"by {error}")
        table.add_row(str(step), f"{float(outputs[0]):.6f}", f"{error:.2e}", f"{seconds:.2f}")
        inputs = outputs[1:num_params + 1] + inputs[num_params:]
    say(table)
    # Every bit of the final loss and parameters: equal in-process and under mpirun.
    digest = hashlib.blake2b(b"".join(np.ascontiguousarray(o).tobytes() for o in outputs))
    say(f"digest of the last step's outputs: {digest.hexdigest()[:32]}")


if __name__ == "__main__":
    main()
