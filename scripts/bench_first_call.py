"""The cold first call of the transformer block (issue 14's first-call row), stage by stage.

    python scripts/bench_first_call.py [--quick] [--jax] [--devices 8|1] [--repeat N]

In this process, after a warm-up on the small model (imports and one-time set-up done, as
when ``scripts/bench_backend.py`` reaches its first-call row): the transformer block (8x256,
d 512, 8 heads, ff 2048) on mesh data=2,model=4, traced, propagated, partitioned, optimised
and compiled for the CPU backend with a fresh cache directory and an empty memory cache.
Prints the wall and CPU seconds of the whole and the CPU seconds of each stage: trace,
propagation, partition, SPMD passes, plan (fusion and schedule), LLVM IR emission, the
module's text for the cache key, LLVM optimisation, LLVM code generation and loading.
CPU seconds are the steadier measure on a shared machine. ``--jax`` also times JAX's
lower + compile of the same step, mesh and shardings (when JAX is installed), wall and CPU
seconds (``time.process_time``: all of the process's threads). ``--devices 1`` takes mesh
data=1,model=1 instead; ``--repeat N`` measures N cold first calls (and N JAX compiles) and
prints each, then the smallest CPU time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_backend as bb  # noqa: E402

import xla_spmd as xs  # noqa: E402
import xla_spmd.pipeline as pipeline  # noqa: E402
from xla_spmd.backends import get_backend  # noqa: E402
from xla_spmd.backends.cpu import compiler  # noqa: E402
from xla_spmd.backends.cpu import executable as cpu_executable  # noqa: E402

MESHES = {8: {"data": 2, "model": 4}, 1: {"data": 1, "model": 1}}
STAGES = [("propagate", pipeline, "propagate"), ("partition", pipeline, "partition"),
          ("SPMD passes", pipeline, "optimize_spmd"), ("plan", cpu_executable, "plan_module"),
          ("LLVM IR", cpu_executable, "render_module"),
          ("cache key text", cpu_executable, "print_module"),
          ("LLVM optimise", compiler, "_optimize"), ("load", compiler, "_load")]


def _timed(seconds: dict, name: str, owner, attribute: str) -> None:
    function = getattr(owner, attribute)

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[name] = seconds.get(name, 0.0) + time.process_time() - start
    setattr(owner, attribute, timed)


def first_call(quick: bool, seconds: dict, mesh_axes: dict) -> tuple[float, float]:
    """Wall and CPU seconds of trace + propagate + partition + compile, cold."""
    step, args, specs = bb.block_model(quick)
    mesh = xs.make_mesh(mesh_axes, axis_types=xs.AxisType.Auto)
    shardings = bb._shardings(mesh, specs, args)
    xs.set_num_devices(mesh.size)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XLA_SPMD_CACHE_DIR"] = cache
        compiler.clear_memory_cache()
        seconds.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        lowered = xs.jit(step, in_shardings=shardings).lower(*args)
        seconds["trace"] = time.process_time() - cpu
        program = pipeline.lower(lowered.module, mesh=mesh)
        get_backend("cpu").compile(program.spmd_module, tuple(range(mesh.size)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        del os.environ["XLA_SPMD_CACHE_DIR"]
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small model only")
    parser.add_argument("--jax", action="store_true", help="time JAX's lower + compile too")
    parser.add_argument("--devices", type=int, choices=sorted(MESHES), default=8)
    parser.add_argument("--repeat", type=int, default=1, help="cold first calls measured")
    args = parser.parse_args()
    mesh_axes = MESHES[args.devices]
    seconds: dict[str, float] = {}
    for name, owner, attribute in STAGES:
        _timed(seconds, name, owner, attribute)
    machine = compiler._target_machine()
    _timed(seconds, "LLVM codegen", type(machine), "emit_object")
    first_call(True, seconds, mesh_axes)  # warm-up
    best = None
    for _ in range(args.repeat):
        wall, cpu = first_call(args.quick, seconds, mesh_axes)
        stages = ", ".join(f"{name} {value:.3f}" for name, value in seconds.items())
        print(f"first call ({args.devices} devices): {wall:.3f} s wall, {cpu:.3f} s CPU "
              f"({stages})", flush=True)
        best = cpu if best is None else min(best, cpu)
    if args.repeat > 1:
        print(f"first call ({args.devices} devices): best {best:.3f} s CPU")
    if args.jax:
        bb.jax_step(bb.block_model, True, mesh_axes, 1)  # warm-up
        best = None
        for _ in range(args.repeat):
            jax = bb.jax_step(bb.block_model, args.quick, mesh_axes, 1)
            print(f"JAX lower + compile ({args.devices} devices): {jax['first']:.3f} s wall, "
                  f"{jax['first_cpu']:.3f} s CPU", flush=True)
            best = jax["first_cpu"] if best is None else min(best, jax["first_cpu"])
        if args.repeat > 1:
            print(f"JAX lower + compile ({args.devices} devices): best {best:.3f} s CPU")


if __name__ == "__main__":
    main()
