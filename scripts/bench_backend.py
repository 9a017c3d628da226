"""The CPU backend's performance goals (issue 14) as a table of ratios.

    python scripts/bench_backend.py [--steps 3] [--quick] [--mpirun-only [MODEL ...]]
                                    [--epilogue-only [MODEL ...]]

Rows: the training step of an MLP (batch 512, 4 layers of 2048x2048) and of a transformer block
(batch 8, sequence 256, d 512, 8 heads, ff 2048) on mesh data=2,model=4 (8 in-process devices)
and on 1 device, each on the cpu and the reference backend (and JAX with the same mesh and
shardings, when JAX is installed); each model's step under ``mpirun -n 8`` (one device per
rank, as a user's ``mpirun -n 8 python train.py`` runs it) against 8 in-process devices, the
steps of the two alternating so both see the same load (``--mpirun-only``: just these rows;
``--mpirun-command``: another launcher); the README's small transformer on 8 devices over 1
device; a fused chain of 8 elementwise ops on 64 MB against numpy.copyto's bandwidth; the
weight update ``w - 0.01 * transpose(g)`` on 2048^2 f32 against numpy; dot 2048^3 f32 against
numpy.matmul; each model's 1-device step with its dots' epilogues, column and fusion splits
against the same plan without them and JAX (``--epilogue-only``: just these rows); the first
call of the
transformer block with a cold cache; the peak bytes per
device the backend's buffer plan reports. Which BLAS kernel ran is printed (threadpoolctl), and
the load average: the machine may be shared.
``--quick`` shrinks the models (a smoke test of the script).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# JAX (when installed) runs the same mesh on 8 host devices.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "scripts"))

import xla_spmd as xs  # noqa: E402
import xla_spmd.numpy as xnp  # noqa: E402
from xla_spmd.backends import get_backend  # noqa: E402
from xla_spmd.frontend.pytree import tree_leaves  # noqa: E402
from xla_spmd.ir import ArrayShape, Builder, Module  # noqa: E402
from xla_spmd.ir.dtypes import F32  # noqa: E402
from xla_spmd.pipeline import lower  # noqa: E402
from xla_spmd.runtime.devices import topology  # noqa: E402
from xla_spmd.runtime.executable import execute  # noqa: E402
from xla_spmd.runtime.sharded_array import device_put  # noqa: E402

P = xs.PartitionSpec


def blas_kernel() -> str:
    from threadpoolctl import threadpool_info
    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(f"{i.get('internal_api')} {i.get('architecture')} "
                     f"({i.get('num_threads')} threads)" for i in infos) or "none found"


# ---------------------------------------------------------------------------------------------
# Models (the issue's sizes)


class Library:
    """The array API a model is written against: xla-spmd's frontend or JAX."""

    def __init__(self, numpy, value_and_grad):
        self.np, self.value_and_grad = numpy, value_and_grad

    def layer_norm(self, x, gain, bias):
        mean = self.np.mean(x, axis=-1, keepdims=True)
        centered = x - mean
        variance = self.np.mean(centered * centered, axis=-1, keepdims=True)
        return centered / self.np.sqrt(variance + 1e-5) * gain + bias

    def softmax(self, x):
        shifted = self.np.exp(x - self.np.max(x, axis=-1, keepdims=True))
        return shifted / self.np.sum(shifted, axis=-1, keepdims=True)

    def gelu(self, x):
        return 0.5 * x * (1 + self.np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


XS = Library(xnp, xs.value_and_grad)


def mlp_model(quick: bool, lib: Library = XS):
    width, batch, layers = (256, 64, 4) if quick else (2048, 512, 4)
    rng = np.random.default_rng(0)
    params = {f"w{i}": (rng.standard_normal((width, width)) / math.sqrt(width)).astype(
        np.float32) for i in range(layers)}
    x = rng.standard_normal((batch, width)).astype(np.float32)
    y = rng.standard_normal((batch, width)).astype(np.float32)

    def loss(p, x, y):
        for i in range(layers):
            x = x @ p[f"w{i}"]
            x = lib.np.maximum(x, 0.0) if i < layers - 1 else x
        return lib.np.mean((x - y) ** 2)

    def step(p, x, y):
        value, grads = lib.value_and_grad(loss)(p, x, y)
        return {k: p[k] - 0.01 * grads[k] for k in p}, value

    specs = {f"w{i}": P(None, "model") if i % 2 == 0 else P("model", None)
             for i in range(layers)}
    return step, (params, x, y), (specs, P("data", None), P("data", None))


def block_model(quick: bool, lib: Library = XS):
    batch, seq, d, heads, ff = (2, 32, 64, 8, 128) if quick else (8, 256, 512, 8, 2048)
    rng = np.random.default_rng(0)

    def dense(a, b):
        return (rng.standard_normal((a, b)) / math.sqrt(a)).astype(np.float32)

    params = {"wq": dense(d, d), "wk": dense(d, d), "wv": dense(d, d), "wo": dense(d, d),
              "w1": dense(d, ff), "w2": dense(ff, d),
              "g": np.ones(d, np.float32), "b": np.zeros(d, np.float32)}
    x = rng.standard_normal((batch, seq, d)).astype(np.float32)
    jnp = lib.np

    def loss(p, x):
        b, s, _ = x.shape
        h = lib.layer_norm(x, p["g"], p["b"])
        q, k, v = (jnp.reshape(h @ p[w], (b, s, heads, d // heads)) for w in ("wq", "wk", "wv"))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // heads)
        mixed = jnp.einsum("bhqk,bkhd->bqhd", lib.softmax(scores), v)
        x = x + jnp.reshape(mixed, (b, s, d)) @ p["wo"]
        x = x + lib.gelu(lib.layer_norm(x, p["g"], p["b"]) @ p["w1"]) @ p["w2"]
        return jnp.mean(x * x)

    def step(p, x):
        value, grads = lib.value_and_grad(loss)(p, x)
        return {k: p[k] - 0.01 * grads[k] for k in p}, value

    specs = {"wq": P(None, "model"), "wk": P(None, "model"), "wv": P(None, "model"),
             "wo": P("model", None), "w1": P(None, "model"), "w2": P("model", None),
             "g": P(None), "b": P(None)}
    return step, (params, x), (specs, P("data", None, None))


def readme_model():
    example = _load_example("train_transformer")
    params, roles = example.init_params(0)
    tokens, targets = example.make_batches(0)(0)
    from training import spec_for
    specs = {k: spec_for("tp", roles[k], v.ndim) for k, v in params.items()}
    return example.train_step, (params, tokens, targets), (specs, P("data", None),
                                                            P("data", None))


def _load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# Running a sharded step on a backend


class Prepared:
    """A step traced, propagated and partitioned for ``mesh``, with per-device arguments."""

    def __init__(self, model, mesh_axes: dict):
        step, args, specs = model
        mesh = xs.make_mesh(mesh_axes, axis_types=xs.AxisType.Auto)  # propagation places the rest
        shardings = _shardings(mesh, specs, args)
        if topology().kind != "mpi":  # under mpirun each rank is one device
            xs.set_num_devices(mesh.size)
        start = time.perf_counter()
        lowered = xs.jit(step, in_shardings=shardings).lower(*args)
        program = lower(lowered.module, mesh=mesh)  # as xs.jit runs it: optimized SPMD
        self.module, self.spmd = program.module, program.spmd_module
        self.frontend_seconds = time.perf_counter() - start
        self.devices = mesh.size
        leaves = tree_leaves(args)
        parameters = self.module.entry.parameters
        placed = [device_put(np.asarray(v), p.sharding) for v, p in zip(leaves, parameters)]
        self.arguments = {d: [a.shard_data(d, padded=True) for a in placed]
                          for d in topology().local_device_ids if d < self.devices}

    def run(self, executable) -> list:
        if self.devices == 1 and topology().kind != "mpi":
            return [executable.run(0, self.arguments[0], None)]
        # As the runtime runs it: one thread per device sharing the cores' BLAS threads, or
        # every device on this thread where the executable runs in lockstep.
        return list(execute(executable, self.arguments).values())


def _shardings(mesh, specs, args):
    def named(spec):
        return xs.NamedSharding(mesh, spec)
    params_specs = specs[0]
    return ({k: named(params_specs[k]) for k in args[0]},) + tuple(named(s) for s in specs[1:])


def step_seconds(prepared: Prepared, backend: str, steps: int) -> tuple[float, object]:
    executable = get_backend(backend).compile(prepared.spmd, tuple(range(prepared.devices)))
    prepared.run(executable)  # warm: first touches, BLAS start-up
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        prepared.run(executable)
        times.append(time.perf_counter() - start)
    return min(times), executable  # best of: the machine is shared


# ---------------------------------------------------------------------------------------------
# JAX, when installed: the same model, mesh and shardings


def jax_step(model, quick: bool, mesh_axes: dict, steps: int) -> dict:
    """JAX's lower + compile seconds (wall, ``first``; CPU, ``first_cpu``), median step
    seconds and XLA's per-device bytes."""
    import jax
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as JaxSpec

    step, args, specs = model(quick, Library(jax.numpy, jax.value_and_grad))
    sizes = tuple(mesh_axes.values())
    mesh = Mesh(np.array(jax.devices()[:math.prod(sizes)]).reshape(sizes), tuple(mesh_axes))

    def named(spec):
        return NamedSharding(mesh, JaxSpec(*tuple(spec)))
    shardings = ({k: named(specs[0][k]) for k in args[0]},) + tuple(named(s)
                                                                     for s in specs[1:])
    placed = jax.device_put(args, shardings)
    start, cpu = time.perf_counter(), time.process_time()
    compiled = jax.jit(step, in_shardings=shardings).lower(*placed).compile()
    first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
    jax.block_until_ready(compiled(*placed))
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*placed))
        times.append(time.perf_counter() - start)
    memory = compiled.memory_analysis()
    peak = (memory.temp_size_in_bytes + memory.argument_size_in_bytes
            + memory.output_size_in_bytes - memory.alias_size_in_bytes)
    return {"first": first, "first_cpu": first_cpu, "step": min(times), "bytes": peak}


# ---------------------------------------------------------------------------------------------
# Kernels


def elementwise_chain(elements: int) -> Module:
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (elements,)), "x")
    y = b.parameter(ArrayShape(F32, (elements,)), "y")
    value = x
    for k, opcode in enumerate(["multiply", "add", "maximum", "subtract", "multiply", "add",
                                "minimum", "add"]):
        value = b.op(opcode, value, y if k % 2 else x)
    return Module.from_entry("chain", b.build(value))


def best_of(function, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def fused_chain_row(quick: bool) -> tuple[str, str, str]:
    elements = (1 << 20) if quick else (16 << 20)  # 64 MB of f32
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(elements).astype(np.float32) for _ in range(2))
    executable = get_backend("cpu").compile(elementwise_chain(elements), (0,))
    out = np.empty_like(x)
    # Interleaved, best of each: on a shared machine both see the same load. Each call's
    # result is dropped before the next, as a training step's temporaries are: its output
    # reuses the pages of the last one (xla_spmd.buffers).
    fused = copy = float("inf")
    for _ in range(10):
        fused = min(fused, best_of(lambda: executable.run(0, [x, y], None), 1))
        copy = min(copy, best_of(lambda: np.copyto(out, x), 1))
    # The chain reads two arrays and writes one; copyto reads one and writes one.
    chain_rate, copy_rate = 3 * x.nbytes / fused, 2 * x.nbytes / copy
    return ("fused chain of 8 elementwise ops, 64 MB", f"{chain_rate / 1e9:.1f} GB/s vs "
            f"copyto {copy_rate / 1e9:.1f} GB/s", f"{chain_rate / copy_rate:.0%} (goal ≥ 80%)")


def transposed_update_row(quick: bool) -> tuple[str, str, str]:
    """``w - 0.01 * transpose(g)`` on 2048x2048 f32 (the MLP's weight update reading a dot's
    gradient through a transpose: a tiled loop nest) against numpy's ``w - 0.01 * g.T``."""
    n = 512 if quick else 2048
    rng = np.random.default_rng(0)
    w, g = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    b = Builder("main")
    pw, pg = (b.parameter(ArrayShape(F32, (n, n)), name) for name in ("w", "g"))
    scale = b.broadcast(b.constant(np.float32(0.01)), dimensions=(),
                        shape=ArrayShape(F32, (n, n)))
    root = b.op("subtract", pw, b.op("multiply", scale,
                                     b.transpose(pg, dimensions=(1, 0))))
    executable = get_backend("cpu").compile(Module.from_entry("update", b.build(root)), (0,))
    ours = best_of(lambda: executable.run(0, [w, g], None), 15)
    numpy_time = best_of(lambda: w - np.float32(0.01) * g.T)
    return (f"w - 0.01 * transpose(g), {n}² f32", f"{ours * 1e3:.1f} ms vs numpy "
            f"{numpy_time * 1e3:.1f} ms", f"{numpy_time / ours:.0%} of numpy's speed")


def dot_row(quick: bool) -> tuple[str, str, str]:
    n = 512 if quick else 2048
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    builder = Builder("main")
    pa, pb = (builder.parameter(ArrayShape(F32, (n, n)), name) for name in ("a", "b"))
    root = builder.dot(pa, pb, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    executable = get_backend("cpu").compile(Module.from_entry("dot", builder.build(root)),
                                            (0,))
    ours = best_of(lambda: executable.run(0, [a, b], None), 3)
    numpy_time = best_of(lambda: np.matmul(a, b), 3)
    flops = 2 * n ** 3
    return (f"dot {n}³ f32", f"{flops / ours / 1e9:.1f} vs numpy {flops / numpy_time / 1e9:.1f}"
            " GFLOP/s", f"{numpy_time / ours:.0%} (goal ≥ 90%)")


def first_call_row(quick: bool, jax_seconds: float | None) -> tuple[str, str, str]:
    """Trace + propagate + partition (``Prepared.frontend_seconds``) + compile, with a fresh
    cache directory and an empty memory cache; as JAX's lower + compile, the model's
    parameters are made and placed outside the timed part."""
    from xla_spmd.backends.cpu import compiler
    model = block_model(quick)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XLA_SPMD_CACHE_DIR"] = cache
        compiler.clear_memory_cache()
        prepared = Prepared(model, {"data": 2, "model": 4})
        start = time.perf_counter()
        get_backend("cpu").compile(prepared.spmd, tuple(range(8)))
        compile_seconds = time.perf_counter() - start
        del os.environ["XLA_SPMD_CACHE_DIR"]
    seconds = prepared.frontend_seconds + compile_seconds
    ratio = (f"{seconds / jax_seconds:.2f}× JAX lower + compile ({jax_seconds:.2f} s)"
             if jax_seconds else "JAX not installed")
    return ("first call, transformer block, 8 devices, cold cache", f"{seconds:.2f} s (trace "
            f"+ propagate + partition {prepared.frontend_seconds:.2f} s, compile "
            f"{compile_seconds:.2f} s)", ratio)


def epilogue_row(name: str, quick: bool, steps: int) -> tuple[str, str, str]:
    """A model's 1-device step with its dots' epilogues, column splits and loop fusions
    split over threads (``backends/cpu/epilogue.py``, ``blas.columns_matmul``) against the
    same plan without them (and JAX's step, when installed), steps alternating (the machine's
    load changes by the minute): the best and the median of each, wall and CPU time (the
    process's, all threads)."""
    from xla_spmd.backends.cpu import blas, epilogue

    prepared = Prepared(MODELS[name](quick), {"data": 1, "model": 1})
    saved, columns = (epilogue.MIN_BYTES, epilogue.SPLIT_MIN_BYTES), blas.columns_splittable
    epilogue.MIN_BYTES = epilogue.SPLIT_MIN_BYTES = 1 << 62
    try:
        without = get_backend("cpu").compile(prepared.spmd, (0,))
    finally:
        epilogue.MIN_BYTES, epilogue.SPLIT_MIN_BYTES = saved
    fused = get_backend("cpu").compile(prepared.spmd, (0,))

    def run(executable, split_columns: bool) -> tuple[float, float]:
        blas.columns_splittable = columns if split_columns else (lambda *args: False)
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            prepared.run(executable)
            return time.perf_counter() - wall, time.process_time() - cpu
        finally:
            blas.columns_splittable = columns
    run(without, False), run(fused, True)  # warm
    times: dict[str, list] = {"off": [], "on": [], "JAX": []}
    jax_run = _jax_runner(MODELS[name], quick)
    for _ in range(max(steps, 5)):
        times["off"].append(run(without, False))
        times["on"].append(run(fused, True))
        if jax_run is not None:
            times["JAX"].append(jax_run())

    def summary(pairs: list) -> str:
        wall, cpu = sorted(p[0] for p in pairs), sorted(p[1] for p in pairs)
        return (f"{wall[0] * 1e3:.0f}/{wall[len(wall) // 2] * 1e3:.0f} ms wall, "
                f"{cpu[0] * 1e3:.0f}/{cpu[len(cpu) // 2] * 1e3:.0f} ms CPU")
    def paired(over: str, which: int) -> float:
        """The median over the rounds of on's time over ``over``'s (a round sees one load)."""
        return float(np.median([a[which] / b[which] for a, b in zip(times["on"],
                                                                    times[over])]))
    ratio = f"on/off {paired('off', 0):.2f}× wall, {paired('off', 1):.2f}× CPU"
    value = f"on {summary(times['on'])}; off {summary(times['off'])}"
    if times["JAX"]:
        value += f"; JAX {summary(times['JAX'])}"
        ratio += f"; on/JAX {paired('JAX', 0):.2f}× wall, {paired('JAX', 1):.2f}× CPU"
    return (f"{name} step, 1 device: epilogues, column and fusion splits on / off, and JAX "
            "(best/median; ratios: median of each round's)", value, ratio)


def _jax_runner(model, quick: bool):
    """A timed run ``() -> (wall, cpu seconds)`` of JAX's 1-device step of ``model``, or
    None."""
    if importlib.util.find_spec("jax") is None:
        return None
    import jax
    step, args, _ = model(quick, Library(jax.numpy, jax.value_and_grad))
    compiled = jax.jit(step).lower(*args).compile()
    placed = jax.device_put(args, jax.devices()[0])
    jax.block_until_ready(compiled(*placed))

    def run() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        jax.block_until_ready(compiled(*placed))
        return time.perf_counter() - wall, time.process_time() - cpu
    return run


# ---------------------------------------------------------------------------------------------


# mpirun -n 8 against 8 in-process devices

MODELS = {"MLP": mlp_model, "transformer block": block_model}
_READY, _STEP = "mpirun worker ready", "mpirun step seconds:"
_IDLE_POLL = 0.01  # seconds between the idle ranks' looks at the next command


def _idle_wait(request) -> None:
    """Wait for an MPI request asleep, so idle ranks leave the cores to the in-process
    steps timed meanwhile (MPI's own waits spin or yield)."""
    while not request.Test():
        time.sleep(_IDLE_POLL)


def mpirun_worker(name: str, quick: bool) -> None:
    """One rank of ``mpirun -n 8``: the model's step on mesh data=2,model=4, this rank's
    device, run each time rank 0 reads ``step`` on its standard input (mpirun forwards it;
    anything else ends the job). A step is timed from a barrier to the slowest rank's end;
    rank 0 prints it."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    prepared = Prepared(MODELS[name](quick), {"data": 2, "model": 4})
    executable = get_backend("cpu").compile(prepared.spmd, tuple(range(prepared.devices)))
    prepared.run(executable)  # warm: first touches, BLAS start-up
    command = np.zeros(1, np.int64)
    seconds, slowest = np.zeros(1), np.zeros(1)
    _idle_wait(world.Ibarrier())
    if rank == 0:
        print(_READY, flush=True)
    while True:
        if rank == 0:
            command[0] = sys.stdin.readline().strip() == "step"
        _idle_wait(world.Ibcast(command, root=0))
        if not command[0]:
            return
        world.Barrier()
        start = time.perf_counter()
        prepared.run(executable)
        seconds[0] = time.perf_counter() - start
        world.Reduce(seconds, slowest, op=MPI.MAX, root=0)
        if rank == 0:
            print(_STEP, float(slowest[0]), flush=True)


def mpirun_launcher(command: str | None) -> list[str]:
    """The launcher's words: ``--mpirun-command``, or mpirun, told to run more ranks than
    cores where the machine has fewer than 8."""
    if command is not None:
        return shlex.split(command)
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        return []
    return [mpirun] + (["--map-by", ":OVERSUBSCRIBE"] if (os.cpu_count() or 1) < 8 else [])


def _read_until(process: subprocess.Popen, marker: str) -> str:
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        if line.startswith(marker):
            return line[len(marker):].strip()
        seen.append(line.rstrip())
    process.wait()
    raise RuntimeError(f"mpirun exited with {process.returncode}: " + " / ".join(seen[-3:]))


def mpirun_row(name: str, quick: bool, steps: int, launcher: list[str]
               ) -> tuple[str, str, str]:
    """The model's step under ``mpirun -n 8`` (this script's worker) against 8 in-process
    devices, steps of the two alternating (the machine's load changes by the minute): the
    best of ``steps`` of each, and the median over the pairs of steps of their ratio."""
    what = f"{name} step, mpirun -n 8 / 8 in-process"
    if not launcher:
        return what, "mpirun not found (pip install 'xla-spmd[mpi]')", ""
    prepared = Prepared(MODELS[name](quick), {"data": 2, "model": 4})
    executable = get_backend("cpu").compile(prepared.spmd, tuple(range(prepared.devices)))
    prepared.run(executable)
    command = launcher + ["-n", "8", sys.executable, str(Path(__file__).resolve()),
                          "--mpirun-worker", name] + (["--quick"] if quick else [])
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    assert process.stdin is not None
    local, distributed = [], []
    try:
        _read_until(process, _READY)
        for _ in range(steps):
            start = time.perf_counter()
            prepared.run(executable)
            local.append(time.perf_counter() - start)
            process.stdin.write("step\n")
            process.stdin.flush()
            distributed.append(float(_read_until(process, _STEP)))
        process.stdin.write("stop\n")
        process.stdin.close()
        process.wait(timeout=300)
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as error:
        process.kill()
        return what, f"failed: {error}", ""
    mpi, here = min(distributed), min(local)
    # Each mpirun step over the in-process step just before it: a pair sees one load.
    paired = float(np.median(np.array(distributed) / np.array(local)))
    return (what, f"best {mpi * 1e3:.0f} ms vs {here * 1e3:.0f} ms",
            f"{mpi / here:.2f}× best, {paired:.2f}× median pair (goal ≤ 1.2×)")


KERNEL_ROWS = {"fused-chain": fused_chain_row, "transposed-update": transposed_update_row,
               "dot": dot_row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small models (smoke test)")
    parser.add_argument("--mpirun-only", nargs="*", choices=sorted(MODELS), default=None,
                        metavar="MODEL", help="only the rows of mpirun -n 8 against 8 "
                        "in-process devices (of the models named: 'MLP', 'transformer block'; "
                        "default both)")
    parser.add_argument("--mpirun-command", default=None,
                        help="the launcher (default: mpirun, oversubscribing a machine with "
                             "fewer than 8 cores)")
    parser.add_argument("--mpirun-worker", choices=sorted(MODELS), help=argparse.SUPPRESS)
    parser.add_argument("--epilogue-only", nargs="*", choices=sorted(MODELS), default=None,
                        metavar="MODEL", help="only the rows of the 1-device step with dot "
                        "epilogues, column and fusion splits on against off, alternating (of "
                        "the models named: 'MLP', 'transformer block'; default both)")
    parser.add_argument("--kernels-only", nargs="*", choices=sorted(KERNEL_ROWS), default=None,
                        metavar="ROW", help="only the kernel rows named (of "
                        f"{', '.join(sorted(KERNEL_ROWS))}; default all three)")
    args = parser.parse_args()
    if args.mpirun_worker:
        mpirun_worker(args.mpirun_worker, args.quick)
        return
    if args.epilogue_only is not None:
        table = Table("measure", "value", "ratio")
        for name in args.epilogue_only or MODELS:
            table.add_row(*epilogue_row(name, args.quick, args.steps))
        Console(width=140).print(table)
        print_footer(Console(width=140), [])
        return
    if args.kernels_only is not None:
        table = Table("measure", "value", "ratio")
        for name in args.kernels_only or KERNEL_ROWS:
            table.add_row(*KERNEL_ROWS[name](args.quick))
        Console(width=140).print(table)
        print_footer(Console(width=140), [])
        return
    launcher = mpirun_launcher(args.mpirun_command)
    if args.mpirun_only is not None:
        table = Table("measure", "value", "ratio")
        for name in args.mpirun_only or MODELS:
            table.add_row(*mpirun_row(name, args.quick, args.steps, launcher))
        Console(width=140).print(table)
        print_footer(Console(width=140), launcher)
        return
    console = Console(width=140)
    jax_available = importlib.util.find_spec("jax") is not None
    table = Table("measure", "value", "ratio")
    jax_first = None
    for name, model in MODELS.items():
        for mesh_axes in ({"data": 1, "model": 1}, {"data": 2, "model": 4}):
            prepared = Prepared(model(args.quick), mesh_axes)
            cpu, executable = step_seconds(prepared, "cpu", args.steps)
            reference, _ = step_seconds(prepared, "reference", args.steps)
            where = f"{prepared.devices} device{'s' if prepared.devices > 1 else ''}"
            value = f"cpu {cpu * 1e3:.0f} ms, reference {reference * 1e3:.0f} ms"
            ratio = f"{cpu / reference:.2f}× reference"
            peak = executable.report()["peak_bytes"]
            xla_bytes = "JAX not installed"
            if jax_available:
                jax = jax_step(model, args.quick, mesh_axes, args.steps)
                value += f", JAX {jax['step'] * 1e3:.0f} ms"
                ratio = f"{cpu / jax['step']:.2f}× JAX (goal ≤ 1.0), " + ratio
                xla_bytes = f"{peak / jax['bytes']:.2f}× XLA {jax['bytes'] / 2**20:.1f} MiB"
                if name == "transformer block" and prepared.devices == 8:
                    jax_first = jax["first"]
            table.add_row(f"{name} step, {where}", value, ratio)
            if prepared.devices == 8:
                table.add_row(*mpirun_row(name, args.quick, args.steps, launcher))
            table.add_row(f"  peak bytes per device ({where})", f"{peak / 2**20:.1f} MiB",
                          xla_bytes + " (goal ≤ 1.1×)")
    readme = [Prepared(readme_model(), axes) for axes in ({"data": 1, "model": 1},
                                                           {"data": 2, "model": 4})]
    one, _ = step_seconds(readme[0], "cpu", args.steps)
    eight, _ = step_seconds(readme[1], "cpu", args.steps)
    table.add_row("README's transformer step, 8 devices / 1 device (cpu)",
                  f"{eight * 1e3:.1f} ms / {one * 1e3:.1f} ms", f"{eight / one:.2f}× (goal ≤ 3×)")
    table.add_row(*fused_chain_row(args.quick))
    table.add_row(*transposed_update_row(args.quick))
    table.add_row(*dot_row(args.quick))
    for name in MODELS:
        table.add_row(*epilogue_row(name, args.quick, args.steps))
    table.add_row(*first_call_row(args.quick, jax_first))
    console.print(table)
    print_footer(console, launcher)


def print_footer(console: Console, launcher: list[str]) -> None:
    from xla_spmd.backends.cpu import compiler
    host = compiler.host()
    console.print(f"BLAS: {blas_kernel()}; code for {host['cpu']} ({host['features']}), "
                  f"LLVM {host['llvm']}, llvmlite {host['llvmlite']}")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    words = " ".join([Path(launcher[0]).name] + launcher[1:]) if launcher else "-"
    console.print(f"{os.cpu_count()} cores, load average {load}; mpirun rows: {words} -n 8")


if __name__ == "__main__":
    main()
