"""Benchmark a training step over meshes and sharding strategies: measured and predicted.

A benchmark script is a Python file that exposes

    step(params, *batch) -> (params, loss)    the training step, not jitted
    params                                    a dict of arrays (or a function returning one)
    batch                                     a tuple of arrays, or a function of the step
                                              number returning one
    roles (optional)                          parameter name -> "column", "row" or "vector"

as `examples/train_mlp.py` and `examples/train_transformer.py` do. For each (mesh, strategy)
`bench` jits the step with the strategy's shardings (`auto`: `xs.auto_shard`), runs it a few
times on the job's devices, and prices the partitioned program with the cost model under a
profile calibrated for that many devices (`xla-spmd calibrate`), so each row holds the
measured step time, the predicted one, the prediction
error, bytes moved per device, peak memory per device and the dominant collective. The
measured time is the fastest step: on a shared machine the slower ones carry other work.

`bench_mpirun` runs the same grid with each mesh under ``mpirun -n N`` (one device per rank):
every mesh is one launch of ``python -m xla_spmd bench`` in which each rank times its own
steps; a step's time is the slowest rank's, and rank 0 hands the rows back as JSON. Under
MPI, `auto` is solved on rank 0 and its specs broadcast, so every rank runs one program.

>>> from xla_spmd.bench import bench
>>> import numpy as np
>>> def step(p, x):
...     return {"w": p["w"] - 0.1 * x.sum(0)}, (x @ p["w"]).sum()
>>> result = bench(step, {"w": np.ones(4, np.float32)}, (np.ones((8, 4), np.float32),),
...                meshes=["data=2"], strategies=["dp"], steps=2, calibrate=False)
>>> [(row.mesh, row.strategy) for row in result.rows]
[('data=2', 'dp')]
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from xla_spmd.cli_files import parse_mesh_text
from xla_spmd.errors import XlaSpmdError

if TYPE_CHECKING:
    from xla_spmd.api import Jitted


@dataclass
class BenchRow:
    """One (mesh, strategy) run."""

    mesh: str
    strategy: str
    measured_s: float
    predicted_s: float
    compute_s: float
    collective_s: float
    bytes_per_device: float
    peak_memory: int
    dominant_collective: str
    compile_s: float
    note: str = ""
    launch: str = "in-process"    # or "mpirun -n N"

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s


@dataclass
class BenchResult:
    """The rows of a benchmark, with the table, the files and the plot."""

    name: str
    rows: list[BenchRow] = field(default_factory=list)
    profiles: dict[int, str] = field(default_factory=dict)

    def table(self):
        from rich.table import Table

        from xla_spmd.inspection.terminal import human_bytes, human_time

        table = Table(title=f"{self.name}: step time per mesh and strategy")
        launches = any(row.launch != "in-process" for row in self.rows)
        if launches:
            table.add_column("launch")
        for column in ("mesh", "strategy", "measured", "predicted", "error", "compute",
                       "collectives", "bytes/device", "peak memory", "dominant collective"):
            table.add_column(column, justify="left" if column in ("mesh", "strategy") else
                             "right")
        for row in self.rows:
            table.add_row(*([row.launch] if launches else []), row.mesh, row.strategy,
                          human_time(row.measured_s),
                          human_time(row.predicted_s), f"{row.error:+.0%}",
                          human_time(row.compute_s), human_time(row.collective_s),
                          human_bytes(row.bytes_per_device), human_bytes(row.peak_memory),
                          row.dominant_collective)
        return table

    def print(self, console=None) -> None:
        from rich.console import Console

        console = console or Console()
        console.print(self.table())
        for devices, name in sorted(self.profiles.items()):
            console.print(f"profile for {devices} devices: {name}")
        for row in self.rows:
            if row.note:
                console.print(f"{row.mesh} {row.strategy}: {row.note}")

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "profiles": self.profiles,
                           "rows": [{**asdict(r), "error": r.error} for r in self.rows]},
                          indent=2)

    def to_csv(self) -> str:
        import csv
        import io

        out = io.StringIO()
        names = [*BenchRow.__dataclass_fields__, "error"]
        writer = csv.DictWriter(out, fieldnames=names)
        writer.writeheader()
        for row in self.rows:
            writer.writerow({**asdict(row), "error": row.error})
        return out.getvalue()

    def save(self, stem: str | Path) -> list[Path]:
        """STEM.csv, STEM.json, and the plot as STEM.png and STEM.svg (when matplotlib is
        installed: ``pip install 'xla-spmd[plot]'``)."""
        stem = Path(stem)
        written = [stem.with_suffix(".csv"), stem.with_suffix(".json")]
        written[0].write_text(self.to_csv())
        written[1].write_text(self.to_json() + "\n")
        try:
            written += self.plot(stem)
        except ImportError:
            print("matplotlib is not installed: no plot (pip install 'xla-spmd[plot]')",
                  file=sys.stderr)
        return written

    def plot(self, stem: str | Path) -> list[Path]:
        from xla_spmd.bench.plot import plot_result

        return plot_result(self, Path(stem))


def _value(module, name: str, required: bool = True):
    if not hasattr(module, name):
        if required:
            raise XlaSpmdError(f"{module.__file__}: a benchmark script exposes `step`, "
                               f"`params` and `batch`; it has no `{name}`")
        return None
    return getattr(module, name)


def load_script(path: str | Path):
    """Import a benchmark script (its folder joins sys.path, as `python SCRIPT.py` does)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise XlaSpmdError(f"{path}: no such file")
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise XlaSpmdError(f"{path}: not a Python script that can be imported")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_script(path: str | Path, **options) -> BenchResult:
    """`bench` on the step, params, batch (and roles) a script exposes."""
    module = load_script(path)
    params: Any = _value(module, "params")
    if callable(params):
        params = params()
    if isinstance(params, tuple) and len(params) == 2:  # init_params-style (params, roles)
        params, roles = params
    else:
        roles = _value(module, "roles", required=False)
    return bench(_value(module, "step"), params, _value(module, "batch"), roles=roles,
                 name=Path(path).stem, **options)


def _mesh(text: str):
    from xla_spmd.mesh import AxisType, make_mesh
    from xla_spmd.runtime import device_count, set_num_devices
    from xla_spmd.runtime.devices import topology

    axes = parse_mesh_text(text)
    for name in ("data", "model"):
        axes.setdefault(name, 1)
    mesh = make_mesh(axes, axis_types=AxisType.Auto)  # the models' shardings propagate
    if device_count() != mesh.size:
        if topology().kind == "mpi":
            raise XlaSpmdError(f"mesh {text} has {mesh.size} devices, but mpirun started "
                               f"{device_count()} ranks")
        set_num_devices(mesh.size)
    return mesh


def _fixed_profile(calibrate: bool, profile):
    """The profile every run is priced with, or None when each mesh is calibrated."""
    from xla_spmd.cost import Profile, load_profile

    if isinstance(profile, Profile):
        return profile
    if profile is not None or not calibrate:
        return load_profile(profile)
    return None


CALIBRATION_ROUNDS = 7      # at least: the calibration's rounds, the strategies' among them


@dataclass
class _Run:
    """One (mesh, strategy) compiled and placed, and its timed steps so far."""

    strategy: str
    jitted: Jitted
    placed: object
    first: tuple
    compile_s: float
    note: str = ""
    samples: list = field(default_factory=list)


def _prepare(step: Callable, params, batches, mesh, strategy: str, roles, profile, memory_limit
             ) -> _Run:
    """Jit `step` with the strategy's shardings, place the parameters, run it once."""
    import xla_spmd as xs
    from xla_spmd.bench.strategies import batch_spec, param_shardings

    first = batches(0)
    note = ""
    if strategy == "auto":
        shardings, data, note = _auto(step, params, first, mesh, profile, memory_limit)
    else:
        shardings = param_shardings(mesh, strategy, params, roles)
        data = [xs.NamedSharding(mesh, batch_spec(strategy, np.ndim(b))) for b in first]
    jitted = xs.jit(step, in_shardings=(shardings, *data),
                    out_shardings=(shardings, xs.NamedSharding(mesh, xs.P())))
    placed = xs.device_put(params, shardings)
    start = time.perf_counter()
    placed, loss = jitted(placed, *first)  # traces, propagates, partitions, runs
    np.asarray(loss)
    return _Run(strategy, jitted, placed, first, time.perf_counter() - start, note)


def _world():
    """MPI's COMM_WORLD when this job runs under mpirun, else None."""
    from xla_spmd.runtime.devices import topology

    if topology().kind != "mpi":
        return None
    from mpi4py import MPI
    return MPI.COMM_WORLD


def _auto(step, params, first, mesh, profile, memory_limit):
    """`auto`'s (parameter shardings, batch shardings, note). Under MPI rank 0 solves and
    broadcasts the specs: a solver's time limit could leave ranks with different answers."""
    import xla_spmd as xs
    from xla_spmd.autoshard import auto_shard
    from xla_spmd.frontend.pytree import tree_flatten, tree_unflatten

    world = _world()
    answer = None
    if world is None or world.Get_rank() == 0:
        plan = auto_shard(step, mesh, params, *first, memory_limit=memory_limit,
                          profile=profile)
        leaves, _ = tree_flatten(plan.specs)
        answer = ([tuple(spec) for spec in leaves],
                  f"auto: {plan.method}, solved in {plan.solve_seconds:.2f} s")
    if world is not None:
        answer = world.bcast(answer, root=0)
    assert answer is not None  # solved here, or on rank 0 and broadcast
    entries, note = answer
    _, treedef = tree_flatten((params, *first))
    specs = tree_unflatten(treedef, [xs.NamedSharding(mesh, xs.P(*e)) for e in entries])
    return specs[0], list(specs[1:]), note


def _slowest_rank(samples: list[float]) -> list[float]:
    """Under MPI each rank timed its own steps: a step takes as long as its slowest rank.
    Every rank gets the same list back."""
    world = _world()
    if world is None:
        return samples
    return [max(times) for times in zip(*world.allgather(samples))]


def _time_steps(run: _Run, batches, steps: int) -> None:
    for _ in range(steps):
        arguments = batches(len(run.samples) + 1)
        start = time.perf_counter()
        run.placed, loss = run.jitted(run.placed, *arguments)
        np.asarray(loss)
        run.samples.append(time.perf_counter() - start)


def _row(run: _Run, mesh, profile) -> tuple[BenchRow, object]:
    """The measured step (the fastest: on a shared machine the slower steps are other
    work's) beside the cost model's price of the same SPMD module."""
    from xla_spmd.cost import estimate

    module = run.jitted.spmd_module(run.jitted.lower(run.placed, *run.first))
    if module is None:
        raise XlaSpmdError(f"{run.strategy}: the step has no sharding to price")
    report = estimate(module, profile)
    row = BenchRow(mesh=",".join(f"{k}={v}" for k, v in mesh.shape.items() if v > 1) or
                   "one device", strategy=run.strategy, measured_s=min(run.samples),
                   predicted_s=report.step_time, compute_s=report.compute_time,
                   collective_s=report.collective_time,
                   bytes_per_device=report.collective_bytes, peak_memory=report.peak_memory,
                   dominant_collective=report.dominant_collective(),
                   compile_s=run.compile_s, note=run.note)
    return row, report


def run_one(step, params, batches, mesh, strategy: str, *, roles=None, steps: int = 3,
            profile=None, memory_limit=None) -> tuple[BenchRow, object]:
    """Jit `step` under one strategy on `mesh`, time it, and price it with `profile`."""
    run = _prepare(step, params, batches, mesh, strategy, roles, profile, memory_limit)
    _time_steps(run, batches, steps)
    return _row(run, mesh, profile)


def bench(step, params: Any, batch, *, meshes, strategies, roles=None, steps: int = 3,
          rounds: int = 3, profile=None, calibrate: bool = True, memory_limit=None,
          name: str = "step", progress: bool = True) -> BenchResult:
    """Run every (mesh, strategy) and return the table (see the module docstring).
    The strategies of one mesh take turns, `rounds` times `steps` steps each, so a change of
    the machine's load touches them alike. `profile` (a path or Profile) prices every run;
    otherwise each mesh is calibrated in the same window as its steps are timed: the
    calibration's programs (`xla_spmd.cost.calibrate`) and the jitted-call probe
    (`xla_spmd.bench.calls`) take turns with the strategies' rounds, so a burst of other
    work on a shared machine touches the prices and the steps alike (`auto` is solved with
    a quick calibration first). `calibrate=False`: the built-in profile."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    batches = batch if callable(batch) else (lambda i: tuple(batch))
    result = BenchResult(name)
    fixed = _fixed_profile(calibrate, profile)
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[run]}"),
               TimeElapsedColumn())
    total = len(meshes) * len(strategies) * (1 + rounds)
    with Progress(*columns, disable=not (progress and sys.stdout.isatty()),
                  transient=True) as bar:
        task = bar.add_task("bench", total=total, run="")
        for mesh_text in meshes:
            mesh = _mesh(mesh_text)
            the_profile, runs = _bench_mesh(step, params, batches, mesh, mesh_text, strategies,
                                            roles, steps, rounds, fixed, memory_limit,
                                            lambda text, done: (bar.update(task, run=text),
                                                                bar.advance(task, done)))
            result.profiles[mesh.size] = the_profile.name
            for run in runs:
                run.samples = _slowest_rank(run.samples)
                row, _ = _row(run, mesh, the_profile)
                row.mesh = mesh_text
                if _world() is not None:
                    row.launch = f"mpirun -n {mesh.size}"
                result.rows.append(row)
    return result


def _bench_mesh(step, params, batches, mesh, mesh_text, strategies, roles, steps, rounds,
                fixed, memory_limit, tell):
    """(the profile that prices the runs, the runs timed) of one mesh; see `bench`.
    `tell(text, done)` reports progress (`done`: units of work finished)."""
    from xla_spmd.bench.calls import CallProbe
    from xla_spmd.cost.calibrate import calibrate as measure

    solve_with = fixed
    if fixed is None and "auto" in strategies:
        tell(f"{mesh_text}: calibrating for auto", 0)
        quick = CallProbe(mesh)
        solve_with = quick.fit(measure(repeats=3, between=lambda turn: quick.sample()))
    runs = []
    for strategy in strategies:
        tell(f"{mesh_text} {strategy}: compiling", 0)
        runs.append(_prepare(step, params, batches, mesh, strategy, roles, solve_with,
                             memory_limit))
        tell(f"{mesh_text} {strategy}: compiled", 1)

    def one_round(turn: int) -> None:
        for run in runs:
            tell(f"{mesh_text} {run.strategy}: round {turn + 1}", 0)
            _time_steps(run, batches, steps)
            tell(f"{mesh_text} {run.strategy}: round {turn + 1}", 1)

    if fixed is not None:
        for turn in range(rounds):
            one_round(turn)
        return fixed, runs
    tell(f"{mesh_text}: calibrating", 0)
    probe = CallProbe(mesh)
    repeats = max(rounds, CALIBRATION_ROUNDS)
    when = {k * repeats // rounds: k for k in range(rounds)}

    def between(turn: int) -> None:
        probe.sample()
        if turn in when:
            one_round(when[turn])
    return probe.fit(measure(repeats=repeats, between=between)), runs


def _mesh_size(text: str) -> int:
    size = 1
    for n in parse_mesh_text(text).values():
        size *= n
    return size


def bench_mpirun(script: str | Path, *, meshes, strategies, steps: int = 3, rounds: int = 3,
                 profile=None, mpirun: str | list[str] = "mpirun", timeout: float | None = None,
                 progress: bool = True) -> BenchResult:
    """`bench_script` with each mesh run under ``mpirun -n N`` (N the mesh's devices, one per
    rank); see the module docstring. `mpirun` is the launcher's command (a string is split
    as a shell would, e.g. ``"mpirun --oversubscribe"``); `profile` (a path) prices every
    run, else each launch calibrates its own communicator first; `timeout` bounds each
    launch in seconds. Rows say ``launch = "mpirun -n N"``."""
    import shlex
    import shutil
    import subprocess
    import tempfile

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    if _world() is not None:
        raise XlaSpmdError("bench --mpirun launches mpirun itself: run it without mpirun")
    script = Path(script).resolve()
    if not script.is_file():
        raise XlaSpmdError(f"{script}: no such file")
    launcher = shlex.split(mpirun) if isinstance(mpirun, str) else list(mpirun)
    if not launcher or shutil.which(launcher[0]) is None:
        raise XlaSpmdError(f"bench --mpirun: no launcher {launcher[:1]} on PATH (the dev "
                           "extra installs Open MPI's mpirun)")
    strategies = list(strategies)
    result = BenchResult(script.stem)
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[run]}"),
               TimeElapsedColumn())
    with tempfile.TemporaryDirectory(prefix="xla_spmd_bench_") as folder, Progress(
            *columns, disable=not (progress and sys.stdout.isatty()), transient=True) as bar:
        task = bar.add_task("bench (mpirun)", total=len(meshes), run="")
        for k, mesh_text in enumerate(meshes):
            ranks = _mesh_size(mesh_text)
            bar.update(task, run=f"mpirun -n {ranks}: {mesh_text}")
            rows_file = Path(folder) / f"rows{k}.json"
            command = [*launcher, "-n", str(ranks), sys.executable, "-m", "xla_spmd", "bench",
                       str(script), "--meshes", mesh_text, "--strategies",
                       ",".join(strategies), "--steps", str(steps), "--rounds", str(rounds),
                       "--rows-json", str(rows_file)]
            if profile is not None:
                command += ["--profile", str(profile)]
            try:
                done = subprocess.run(command, capture_output=True, text=True,
                                      timeout=timeout)
            except subprocess.TimeoutExpired:
                raise XlaSpmdError(f"bench --mpirun: mesh {mesh_text} took more than "
                                   f"{timeout} s under `{' '.join(command[:3])}`") from None
            if done.returncode != 0 or not rows_file.is_file():
                tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
                raise XlaSpmdError(f"bench --mpirun: mesh {mesh_text} failed under "
                                   f"`{' '.join(command[:3])}` (exit status "
                                   f"{done.returncode}):\n" + "\n".join(tail))
            data = json.loads(rows_file.read_text())
            result.profiles.update({int(n): name for n, name in data["profiles"].items()})
            fields = set(BenchRow.__dataclass_fields__)
            for row in data["rows"]:
                result.rows.append(BenchRow(**{k: v for k, v in row.items() if k in fields}))
            bar.advance(task)
    return result
