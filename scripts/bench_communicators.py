"""Benchmark MpiCommunicator against raw mpi4py calls (all-reduce sum, all-gather).

Rows: ``all_reduce`` is our default, deterministic all-reduce (a left fold in group order,
bit-identical everywhere: gathered whole up to 256 KiB gathered; above that, up to 4 MiB a
rank (2 MiB on 2 ranks), through shared memory when the ranks share a host (slots in
``/dev/shm``: copy in, header, fold, barrier, copy out); else Alltoallv to the other
members + fold + in-place Allgatherv); ``all_reduce/a2av`` is ours with
``shared_memory=False`` (the Alltoallv path at every size, as across hosts);
``all_reduce/mpi`` is ours with ``deterministic=False`` (MPI's own float reduction);
``all_gather``. Every call of ours first exchanges and checks a call header; the ``header``
column is the time of that exchange alone (our barrier, which is nothing else) and its share
of our call.

Run under MPI, e.g.::

    mpirun -n 4 python scripts/bench_communicators.py [--max-bytes 16M] [--repeats 20]
    mpirun -n 4 python scripts/bench_communicators.py --min-bytes 256K --baseline main

``--baseline REVISION`` also times the all-reduce of ``collectives/mpi.py`` as of that git
revision, loaded beside the current one and interleaved with it and raw MPI in every repeat
(row ``all_reduce@base``): on a shared machine only an A/B within one job compares a change
fairly.

``scripts/bench_allreduce_stages.py`` splits the all-reduce into its stages.

Our call and the raw calls it is compared with run in turn within every repeat, so that a
load that comes and goes on a shared machine weighs on them alike; compare ratios, not
times, across runs. Rank 0 prints the load average and, per message size (bytes per rank),
the median time of our call, of the raw mpi4py call (``Allreduce`` / ``Allgather`` into a
preallocated buffer), of the raw call into a freshly allocated buffer (what ours does: it
returns a new array the caller owns, and first-touch page faults on a fresh large buffer
are a real cost), the ratios ours/raw and ours/raw-with-allocation, ``cpu/raw``: the ratio of
the CPU time the two calls take summed over the ranks (a waiting rank spins; this varies far
less than wall time when other jobs load the machine), and the bus bandwidth of ours in
GB/s (nccl-tests conventions: all-reduce busbw = S/t * 2(n-1)/n with S the per-rank bytes;
all-gather busbw = S*n/t * (n-1)/n).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from mpi4py import MPI

from xla_spmd.collectives.mpi import MpiCommunicator


def parse_bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def timed(fns, comm, repeats: int, cpu: list | None = None) -> list[float]:
    """The median time of each of ``fns``, run in turn within every repeat (each repeat in a
    rotated order), so that a load that comes and goes on a shared machine weighs on every
    one of them alike; each run is timed on its slowest rank. ``cpu``, when given, receives
    the median of each one's CPU time summed over the ranks (a rank that waits spins, so this
    is what the call costs the machine; it varies less than wall time under load)."""
    for fn in fns:
        fn()  # warm up (and create sub-communicators)
    times = [[] for _ in fns]
    spent = [[] for _ in fns]
    for repeat in range(repeats):
        for k in range(len(fns)):
            k = (k + repeat) % len(fns)
            comm.Barrier()
            start, start_cpu = time.perf_counter(), time.process_time()
            fns[k]()
            times[k].append(time.perf_counter() - start)
            spent[k].append(time.process_time() - start_cpu)
    # The slowest rank defines a collective's time.
    slowest = np.max(comm.allgather(np.array(times)), axis=0)
    if cpu is not None:
        cpu[:] = [statistics.median(row)
                  for row in np.sum(comm.allgather(np.array(spent)), axis=0)]
    return [statistics.median(row) for row in slowest]


def baseline_communicator(revision: str) -> MpiCommunicator:
    """An ``MpiCommunicator`` made by ``collectives/mpi.py`` as of git ``revision`` (loaded
    beside the current one, so both run interleaved in one job), with that revision's
    ``collectives/shm.py`` where it has one."""
    root = Path(__file__).resolve().parent.parent

    def show(name: str) -> str | None:
        shown = subprocess.run(["git", "-C", str(root), "show", f"{revision}:{name}"],
                               capture_output=True, text=True)
        return shown.stdout if shown.returncode == 0 else None

    source = show("collectives/mpi.py")
    if source is None:
        raise SystemExit(f"--baseline: no collectives/mpi.py at {revision}")
    shm_source = show("collectives/shm.py")
    if shm_source is not None:
        load("_bench_baseline_shm", shm_source)
        source = source.replace("from .shm import", "from ._bench_baseline_shm import")
    return load("_bench_baseline", source).MpiCommunicator()


def load(name: str, source: str) -> Any:
    """``source`` run as module ``xla_spmd.collectives.<name>`` (its relative imports resolve
    there)."""
    rank = MPI.COMM_WORLD.Get_rank()
    path = Path(tempfile.gettempdir()) / f"xla_spmd_bench_{name}_{os.getpid()}_{rank}.py"
    path.write_text(source)
    try:
        spec = importlib.util.spec_from_file_location(f"xla_spmd.collectives.{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        path.unlink()
    return module


def measure(ours: MpiCommunicator, chunked: MpiCommunicator, fast: MpiCommunicator,
            base: MpiCommunicator | None, raw, size: int, repeats: int) -> list[tuple]:
    world = MPI.COMM_WORLD
    n = world.Get_size()
    group = tuple(range(n))
    x = np.random.default_rng(world.Get_rank()).standard_normal(size // 4).astype(np.float32)
    reduced = np.empty_like(x)
    gathered = np.empty((n,) + x.shape, x.dtype)
    rows = []
    (t_header,) = timed([lambda: ours.barrier(group)], world, repeats)
    cases = [
        ("all_reduce", lambda: ours.all_reduce(x, group, "sum"),
         lambda: raw.Allreduce(x, reduced, MPI.SUM),
         lambda: raw.Allreduce(x, np.empty_like(x), MPI.SUM), 2 * (n - 1) / n),
        ("all_reduce/a2av", lambda: chunked.all_reduce(x, group, "sum"),
         lambda: raw.Allreduce(x, reduced, MPI.SUM),
         lambda: raw.Allreduce(x, np.empty_like(x), MPI.SUM), 2 * (n - 1) / n),
        ("all_reduce/mpi", lambda: fast.all_reduce(x, group, "sum"),
         lambda: raw.Allreduce(x, reduced, MPI.SUM),
         lambda: raw.Allreduce(x, np.empty_like(x), MPI.SUM), 2 * (n - 1) / n),
        ("all_gather", lambda: ours.all_gather(x, group, 0),
         lambda: raw.Allgather(x, gathered),
         lambda: raw.Allgather(x, np.empty_like(gathered)), (n - 1)),
    ]
    for name, mine, theirs, theirs_fresh, factor in cases:
        fns = [mine, theirs, theirs_fresh]
        if base is not None and name == "all_reduce":
            fns.append(lambda: base.all_reduce(x, group, "sum"))
        cpu: list[float] = []
        times = timed(fns, world, repeats, cpu)
        t_ours, t_raw, t_fresh = times[:3]
        rows.append((name, size, t_ours, t_raw, t_fresh, size * factor / t_ours / 1e9,
                     t_header, cpu[0] / cpu[1]))
        if len(times) > 3:
            rows.append((name + "@base", size, times[3], t_raw, t_fresh,
                         size * factor / times[3] / 1e9, t_header, cpu[3] / cpu[1]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-bytes", default="4K")
    parser.add_argument("--max-bytes", default="64M")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--baseline", metavar="REVISION",
                        help="also time the all-reduce of collectives/mpi.py as of this git "
                             "revision, interleaved with ours (row all_reduce@base)")
    args = parser.parse_args()
    world = MPI.COMM_WORLD
    ours = MpiCommunicator()
    chunked = MpiCommunicator(shared_memory=False)
    fast = MpiCommunicator(deterministic=False)
    base = baseline_communicator(args.baseline) if args.baseline else None
    raw = world.Dup()
    n = world.Get_size()
    rows = []
    load = os.getloadavg()[0]
    size = parse_bytes(args.min_bytes)
    while size <= parse_bytes(args.max_bytes):
        repeats = max(3, args.repeats if size <= (1 << 22) else args.repeats // 4)
        rows += measure(ours, chunked, fast, base, raw, size, repeats)
        size *= 4
    if world.Get_rank() == 0:
        print(f"{n} ranks, float32, median of up to {args.repeats} runs (ours and raw "
              f"interleaved), slowest rank; load average {load:.1f} at start, "
              f"{os.getloadavg()[0]:.1f} at end, {os.cpu_count()} cores"
              + (f"; @base is {args.baseline}" if args.baseline else ""))
        print(f"{'collective':<15} {'bytes/rank':>10} {'ours (us)':>10} {'raw (us)':>10} "
              f"{'raw+alloc':>10} {'ours/raw':>8} {'ours/r+a':>8} {'cpu/raw':>7} "
              f"{'busbw GB/s':>10} {'header (us)':>11} {'share':>6}")
        for name, size, t_ours, t_raw, t_fresh, busbw, t_header, cpu in rows:
            print(f"{name:<15} {size:>10} {t_ours * 1e6:>10.1f} {t_raw * 1e6:>10.1f} "
                  f"{t_fresh * 1e6:>10.1f} {t_ours / t_raw:>8.2f} {t_ours / t_fresh:>8.2f} "
                  f"{cpu:>7.2f} {busbw:>10.3f} {t_header * 1e6:>11.1f} "
                  f"{t_header / t_ours:>6.0%}")
    raw.Free()
    ours.free()
    chunked.free()
    fast.free()
    if base is not None:
        base.free()


if __name__ == "__main__":
    main()
