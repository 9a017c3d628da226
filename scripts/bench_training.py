"""Step time of the training examples per strategy and mesh, beside the one-device run.

    python scripts/bench_training.py [--steps 5] [--meshes data=2,model=4 data=4,model=2]

For each example (MLP, transformer), mesh and strategy: compile once (trace, propagate,
partition; timed apart), then time `--steps` steps on the in-process devices. The ratio
column is the step time over the one-device step time of the same example: the price of
running the partitioned program on threads of one machine, collectives included. Which BLAS
kernel numpy uses is printed (threadpoolctl), since it bounds the dot-heavy steps.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def blas_kernel() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(f"{i.get('internal_api')} {i.get('architecture')} "
                     f"({i.get('num_threads')} threads)" for i in infos) or "none found"


def time_steps(example, mesh_text: str, strategy: str, steps: int) -> tuple[float, float]:
    """(compile seconds, seconds per step)."""
    from training import make_mesh, sharded_step

    params, roles = example.init_params(0)
    step, params = sharded_step(example.train_step, make_mesh(mesh_text), strategy, params,
                                roles)
    batches = example.make_batches(0)
    start = time.perf_counter()
    params, loss = step(params, *batches(0))  # traces, propagates, partitions, runs
    float(loss)
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(steps):
        params, loss = step(params, *batches(i + 1))
    float(loss)
    return compile_seconds, (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--meshes", nargs="+", default=["data=2,model=4", "data=4,model=2"])
    args = parser.parse_args()
    console = Console(width=120)
    table = Table("example", "mesh", "strategy", "first call s", "step ms", "× one device")
    for name in ("train_mlp", "train_transformer"):
        example = load(name)
        _, single = time_steps(example, "data=1", "dp", args.steps)
        table.add_row(name, "data=1", "-", "", f"{single * 1e3:.1f}", "1.00")
        for mesh in args.meshes:
            for strategy in ("dp", "tp", "fsdp", "2d"):
                compile_seconds, step = time_steps(example, mesh, strategy, args.steps)
                table.add_row(name, mesh, strategy, f"{compile_seconds:.2f}",
                              f"{step * 1e3:.1f}", f"{step / single:.2f}")
    console.print(table)
    console.print(f"BLAS: {blas_kernel()}")  # after the runs, once numpy has loaded it
    # The machine may be shared: the load says how far to trust the ratios.
    console.print("load average (1, 5, 15 min): "
                  + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
