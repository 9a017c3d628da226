"""Checkpoint throughput beside the disk's own, and a training step while a save runs.

    python scripts/bench_checkpoint.py [--megabytes 1024] [--devices 8] [--dir /tmp]

Parameters of `--megabytes` float32 over `--devices` in-process devices (mesh data=2,
model=devices/2; every array sharded over all devices, so each byte is written once) are

* saved (synchronously: from the call to the committed, fsynced checkpoint) and compared
  with the disk's sequential write bandwidth, measured in the same run on the same folder
  by numpy ``tofile`` + fsync (files of the shard size) and by ``dd bs=16M conv=fsync``;
* restored onto the same shardings and compared with numpy ``fromfile`` of the baseline's
  files. Both read cold: each file's cached pages are dropped first (posix_fadvise
  DONTNEED after fsync, which touches no other process's cache);
* saved asynchronously while a jitted training step (a 2-layer MLP, sharded the same way)
  runs: the median step time during the save over the median step time alone (just
  before and after it), the median of that ratio over `--repeats` saves. The blocking
  part of the async save (the snapshot of the shards) is reported apart.

Save and write, restore and read alternate `--repeats` times (medians), so that both see
the same load on a shared machine.

Goals (issue 19): save and restore >= 50% of the disk's bandwidth; step time during an
async save <= 1.2x the step alone.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

import xla_spmd as xs

COLUMNS = 1024  # float32 columns per array row


def drop_cache(folder: Path) -> None:
    """Evict `folder`'s files from the page cache (they are fsynced, so the pages are
    clean) so the next read comes from the disk."""
    for path in folder.rglob("*"):
        if path.is_file():
            descriptor = os.open(path, os.O_RDONLY)
            try:
                os.fsync(descriptor)
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(descriptor)


def numpy_write(shards: list[np.ndarray], folder: Path) -> float:
    """Seconds to write the same bytes as plain files, one per shard, fsynced."""
    folder.mkdir()
    start = time.perf_counter()
    for i, shard in enumerate(shards):
        with open(folder / f"shard{i}", "wb") as file:
            shard.tofile(file)
            file.flush()
            os.fsync(file.fileno())
    descriptor = os.open(folder, os.O_RDONLY)
    os.fsync(descriptor)
    os.close(descriptor)
    return time.perf_counter() - start


def numpy_read(shards: list[np.ndarray], folder: Path) -> float:
    drop_cache(folder)
    start = time.perf_counter()
    for i, shard in enumerate(shards):
        np.fromfile(folder / f"shard{i}", shard.dtype)
    return time.perf_counter() - start


def dd_write(folder: Path, megabytes: int) -> float | None:
    """dd's sequential write bandwidth in MB/s (None where dd is missing)."""
    if shutil.which("dd") is None:
        return None
    result = subprocess.run(["dd", "if=/dev/zero", f"of={folder / 'dd.bin'}", "bs=16M",
                             f"count={max(1, megabytes // 16)}", "conv=fsync"],
                            capture_output=True, text=True)
    (folder / "dd.bin").unlink(missing_ok=True)
    match = re.search(r"([0-9.]+) s, ", result.stderr)
    return None if match is None else max(1, megabytes // 16) * 16 * 2**20 / 1e6 / float(
        match.group(1))


def make_params(megabytes: int, mesh) -> dict:
    arrays = 8
    rows = megabytes * 2**20 // (4 * COLUMNS * arrays)
    rng = np.random.default_rng(0)
    specs = [xs.P(("data", "model"), None), xs.P("model", "data")]
    return {f"layer{i}": xs.device_put(rng.standard_normal((rows, COLUMNS), np.float32),
                                       xs.NamedSharding(mesh, specs[i % 2]))
            for i in range(arrays)}


def training_step(mesh):
    """A jitted 2-layer MLP step and its state, sharded over the mesh."""
    rng = np.random.default_rng(1)
    width, hidden, batch = 256, 1024, 512
    column, row = xs.P(None, "model"), xs.P("model", None)
    shardings = {"w1": xs.NamedSharding(mesh, column), "w2": xs.NamedSharding(mesh, row)}
    params = xs.device_put({"w1": rng.standard_normal((width, hidden), np.float32) * 0.05,
                            "w2": rng.standard_normal((hidden, width), np.float32) * 0.05},
                           shardings)
    data = xs.NamedSharding(mesh, xs.P("data", None))
    x = xs.device_put(rng.standard_normal((batch, width), np.float32), data)

    def loss(p, x):
        import xla_spmd.nn as nn
        import xla_spmd.numpy as xnp
        return xnp.mean((nn.relu(x @ p["w1"]) @ p["w2"] - x) ** 2)

    def step(p, x):
        grads = xs.grad(loss)(p, x)
        return {k: p[k] - 0.01 * grads[k] for k in p}

    jitted = xs.jit(step, in_shardings=(shardings, data), out_shardings=shardings)
    return jitted, params, x


def step_times(step, params, x, count: int, until=None) -> tuple[list[float], dict]:
    times = []
    while len(times) < count or (until is not None and not until()):
        start = time.perf_counter()
        params = step(params, x)
        params["w1"].addressable_shards[0].data.sum()  # the step is done
        times.append(time.perf_counter() - start)
        if until is not None and until() and len(times) >= 3:
            break
    return times, params


def measure_io(params: dict, work: Path, repeats: int) -> dict[str, float]:
    """Median seconds of: tofile + fsync, save, fromfile, restore (alternated, so that both
    sides see the same load on a shared machine)."""
    shards = [s.data for a in params.values() for s in a.addressable_shards]
    timings: dict[str, list[float]] = {"tofile": [], "save": [], "fromfile": [],
                                       "restore": []}
    for repeat in range(repeats):
        timings["tofile"].append(numpy_write(shards, work / f"numpy{repeat}"))
        start = time.perf_counter()
        xs.checkpoint.save(work / "ckpt", params, step=repeat, async_=False)
        timings["save"].append(time.perf_counter() - start)
    for repeat in range(repeats):
        timings["fromfile"].append(numpy_read(shards, work / f"numpy{repeat}"))
        drop_cache(work / "ckpt" / str(repeat))
        start = time.perf_counter()
        restored = xs.checkpoint.restore(work / "ckpt", params, step=repeat)
        timings["restore"].append(time.perf_counter() - start)
        assert all(np.array_equal(restored[k].addressable_shards[0].data,
                                  params[k].addressable_shards[0].data) for k in params)
        del restored
    for repeat in range(repeats):
        shutil.rmtree(work / f"numpy{repeat}")
    shutil.rmtree(work / "ckpt")
    return {name: statistics.median(values) for name, values in timings.items()}


def measure_async(params: dict, mesh, work: Path, repeats: int) -> dict[str, float]:
    """Per repeat: the median step time alone (just before and just after the save, so
    that a change of load on a shared machine shows on both sides) and while an async save
    runs; the medians over the repeats of that ratio, of the steps, and of the save's
    blocking part."""
    step, state, x = training_step(mesh)
    state = step(state, x)  # compile
    rows: dict[str, list[float]] = {"alone": [], "during": [], "ratio": [], "steps": [],
                                    "snapshot": [], "whole": []}
    for repeat in range(repeats):
        before, state = step_times(step, state, x, 10)
        start = time.perf_counter()
        handle = xs.checkpoint.save(work / "ckpt", params, step=repeat)
        snapshot = time.perf_counter() - start
        during, state = step_times(step, state, x, 3, until=handle.done)
        handle.wait()
        whole = time.perf_counter() - start
        after, state = step_times(step, state, x, 10)
        alone = statistics.median(before + after)
        row = {"alone": alone, "during": statistics.median(during),
               "ratio": statistics.median(during) / alone, "steps": len(during),
               "snapshot": snapshot, "whole": whole}
        for name, value in row.items():
            rows[name].append(value)
        shutil.rmtree(work / "ckpt" / str(repeat))
    return {name: statistics.median(values) for name, values in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=int, default=1024)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=None, help="folder on the disk to measure "
                        "(default: the system's temporary folder)")
    args = parser.parse_args()
    xs.set_num_devices(args.devices)
    mesh = xs.make_mesh({"data": 2, "model": args.devices // 2},
                        axis_types=xs.AxisType.Auto)  # propagation places the rest
    params = make_params(args.megabytes, mesh)
    work = Path(tempfile.mkdtemp(prefix="bench_checkpoint_", dir=args.dir))
    try:
        dd = dd_write(work, args.megabytes)
        io = measure_io(params, work, args.repeats)
        overlap = measure_async(params, mesh, work, args.repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    mb = sum(a.size * a.dtype.itemsize for a in params.values()) / 1e6
    table = Table(title=f"checkpoint of {mb:,.0f} MB over {args.devices} devices "
                        f"({work.parent}, medians of {args.repeats})")
    for column in ("measure", "value", "baseline", "ratio", "goal"):
        table.add_column(column)
    dd_text = "" if dd is None else f", dd {dd:,.0f} MB/s"
    table.add_row("save throughput", f"{mb / io['save']:,.0f} MB/s",
                  f"tofile {mb / io['tofile']:,.0f} MB/s{dd_text}",
                  f"{io['tofile'] / io['save']:.0%}", ">= 50%")
    table.add_row("restore throughput", f"{mb / io['restore']:,.0f} MB/s",
                  f"fromfile {mb / io['fromfile']:,.0f} MB/s",
                  f"{io['fromfile'] / io['restore']:.0%}", ">= 50%")
    table.add_row("step during async save",
                  f"{overlap['during'] * 1e3:.1f} ms ({overlap['steps']} steps)",
                  f"alone {overlap['alone'] * 1e3:.1f} ms",
                  f"{overlap['ratio']:.2f}x", "<= 1.2x")
    table.add_row("async save: blocking snapshot", f"{overlap['snapshot']:.2f} s",
                  f"whole save {overlap['whole']:.2f} s", "", "")
    Console().print(table)
    print(f"cores: {os.cpu_count()}; reads are cold (page cache dropped per file)")


if __name__ == "__main__":
    main()
