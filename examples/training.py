"""What the training examples share: command line, mesh, sharding strategies, the loop.

A strategy maps each parameter to a PartitionSpec over the mesh axes "data" and "model":

    dp    parameters replicated, the batch split over every device
    tp    Megatron: column-parallel then row-parallel weights on "model", batch on "data"
    fsdp  every parameter's first dim and the batch split over every device
    2d    Megatron on "model" and FSDP on "data" together, batch on "data"
    auto  xs.auto_shard's choice (an integer program over the step's sharding choices)

(xla_spmd.bench.strategies defines the hand-written four.)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

import xla_spmd as xs
from xla_spmd.bench.strategies import HAND_STRATEGIES, batch_spec, spec_for

STRATEGIES = (*HAND_STRATEGIES, "auto")


def parse_args(description: str, steps: int = 20) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--mesh", default="data=2,model=4",
                        help="mesh axes and sizes, e.g. data=2,model=4 or data=1")
    parser.add_argument("--strategy", choices=STRATEGIES, default="tp")
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    add_checkpoint_flags(parser)
    return parser.parse_args()


# ----- checkpoints: --checkpoint-dir, --checkpoint-every, --resume -----

def add_checkpoint_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint-dir", help="save sharded checkpoints here, every "
                        "--checkpoint-every steps and at the end (keeps the last 3)")
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--resume", action="store_true", help="continue from the latest "
                        "checkpoint in --checkpoint-dir, on this run's mesh and strategy")


def checkpoints(args, params, console):
    """The checkpoint manager (None without --checkpoint-dir), the step to start from, and
    the parameters: with --resume, the latest checkpoint's, placed like `params` (any mesh
    and strategy; the data of step i depends on i only, so the run continues exactly)."""
    if not args.checkpoint_dir:
        if args.resume:
            raise SystemExit("--resume needs --checkpoint-dir")
        return None, 0, params
    manager = xs.checkpoint.CheckpointManager(args.checkpoint_dir, max_to_keep=3,
                                              save_interval_steps=args.checkpoint_every)
    start = manager.latest_step() if args.resume else None
    if start is None:
        if args.resume:
            console.print(f"no checkpoint in {args.checkpoint_dir}: starting at step 0")
        return manager, 0, params
    console.print(f"resuming from step {start} ({args.checkpoint_dir})")
    return manager, start, manager.restore(start, target_shardings=params)


def make_mesh(text: str) -> xs.Mesh:
    axes = {}
    for item in text.split(","):
        name, _, size = item.partition("=")
        if not size.isdigit():
            raise SystemExit(f"--mesh {text!r}: expected name=size pairs like data=2,model=4")
        axes[name.strip()] = int(size)
    for name in ("data", "model"):
        axes.setdefault(name, 1)
    # Auto axes: the strategies shard a few parameters and propagation places the rest
    # (JAX 0.10's make_mesh would make them Explicit: sharding in types).
    mesh = xs.make_mesh(axes, axis_types=xs.AxisType.Auto)
    if xs.device_count() != mesh.size:
        xs.set_num_devices(mesh.size)  # in-process devices; under mpirun, use -n mesh.size
    return mesh


def shardings(mesh, strategy: str, roles: dict, params: dict) -> dict:
    return {name: xs.NamedSharding(mesh, spec_for(strategy, roles[name], params[name].ndim))
            for name in params}


# Variables MPI launchers set in every rank (Open MPI, MPICH/Hydra, PMIx, Slurm).
_LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


def live_output() -> bool:
    """Whether stdout is a real terminal that a live progress bar may redraw. Under mpirun
    the ranks' output is forwarded through the launcher (and may look like a terminal to
    rich), so the bar would leave its escape codes and every redraw in the log."""
    launched = any(name in os.environ for name in _LAUNCHER_VARIABLES)
    return sys.stdout.isatty() and not launched


def sharded_step(train_step, mesh, strategy: str, params: dict, roles: dict, batch=None):
    """`train_step(params, inputs, targets) -> (params, loss)` jitted with the strategy's
    shardings, and the parameters placed on the devices by them. `auto` needs an example
    `batch` (inputs, targets) and prints what it chose."""
    if strategy == "auto":
        plan = xs.auto_shard(train_step, mesh, params, *batch)
        if xs.process_index() == 0:
            print(plan)
        param_shardings, inputs, targets = plan.in_shardings
    else:
        param_shardings = shardings(mesh, strategy, roles, params)
        inputs = targets = xs.NamedSharding(mesh, batch_spec(strategy, 2))
    step = xs.jit(train_step, in_shardings=(param_shardings, inputs, targets),
                  out_shardings=(param_shardings, xs.NamedSharding(mesh, xs.P())))
    return step, xs.device_put(params, param_shardings)


def train(step, params, batches, *, args, items_per_step: int, unit: str, title: str
          ) -> list[float]:
    """Run the loop; print the loss every few steps (rank 0 only) and return the losses.
    The live progress bar is shown only on a real terminal; the step lines always are."""
    speaker = xs.process_index() == 0
    live = live_output()
    # Off a terminal: plain text, no escape codes (force_terminal=None lets rich decide).
    console = Console(quiet=not speaker, force_terminal=None if live else False,
                      no_color=not live)
    console.print(f"[bold]{title}[/]: mesh {args.mesh}, strategy {args.strategy}, "
                  f"{xs.device_count()} devices ({xs.process_count()} processes)")
    manager, start, params = checkpoints(args, params, console)
    losses = []
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, disable=not (speaker and live)) as progress:
        task = progress.add_task("training", total=args.steps, completed=start, info="")
        started = time.perf_counter()
        for i in range(start, args.steps):
            params, loss = step(params, *batches(i))
            losses.append(float(np.asarray(loss)))
            if manager is not None:
                manager.save(i + 1, params, {"mesh": args.mesh, "strategy": args.strategy})
            rate = items_per_step * (i + 1 - start) / (time.perf_counter() - started)
            progress.update(task, advance=1, info=f"loss {losses[-1]:.4f}  {rate:,.0f} {unit}/s")
            if (i + 1) % args.log_every == 0 or i == start:
                progress.console.print(f"step {i + 1:4d}  loss {losses[-1]:.6f}")
    if manager is not None:
        if args.steps > start:
            manager.save(args.steps, params, {"mesh": args.mesh, "strategy": args.strategy},
                         force=True)
        manager.close()
    return losses
