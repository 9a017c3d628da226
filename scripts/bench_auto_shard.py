"""How long xs.auto_shard takes on the example transformer's training step, by depth.

    python scripts/bench_auto_shard.py [--layers 2 8 48] [--mesh data=2,model=4]

For each depth: trace the step, build the problem, solve it (the integer program when it is
small enough, else the greedy search), and print the time, the solver that ran, the problem's
size and the modelled cost of the answer.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import train_transformer as model  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from training import make_mesh  # noqa: E402

import xla_spmd as xs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 8, 48])
    parser.add_argument("--mesh", default="data=2,model=4")
    parser.add_argument("--method", default="auto", choices=("auto", "ilp", "greedy"))
    args = parser.parse_args()
    mesh = make_mesh(args.mesh)
    table = Table("layers", "instructions", "seconds", "solver", "modelled cost ms")
    for layers in args.layers:
        model.LAYERS = layers
        params, _ = model.init_params(0)
        batch = model.make_batches(0)(0)
        start = time.perf_counter()
        plan = xs.auto_shard(model.train_step, mesh, params, *batch, method=args.method)
        seconds = time.perf_counter() - start
        size = len(xs.jit(model.train_step).lower(params, *batch).module.entry.instructions)
        table.add_row(str(layers), str(size), f"{seconds:.2f}", plan.method,
                      f"{plan.predicted_cost * 1e3:.1f}")
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
