"""Where the time of our deterministic all-reduce goes, stage by stage, against raw mpi4py.

Columns (median over repeats, slowest rank, every column run in turn within each repeat so a
load that comes and goes weighs on all alike):

* ``ours``: ``MpiCommunicator.all_reduce`` (default, deterministic; with the ranks on one
  host, 256 KiB gathered to 4 MiB a rank (2 MiB on 2 ranks), it runs through shared
  memory, not the stages below: ``ours-a2av`` is ours with ``shared_memory=False``, which
  runs them);
* ``raw``: mpi4py ``Allreduce`` into a preallocated buffer;
* ``header``: our header round alone (``barrier``, which is nothing else);
* ``a2av``: raw ``Alltoallv`` of the chunks as ours sends them (to the other members only:
  the self count is zero, the fold reads this rank's chunk in place); ``fold``: the fold
  alone (no MPI); ``agv``: raw in-place ``Allgatherv`` of the folded chunks;
* ``bare``: ``a2av`` + ``fold`` + ``agv`` in one go, as ours makes them (``Ialltoallv`` and
  ``Iallgatherv`` polled with ``Test``), with no header and no Python machinery:
  ``ours-a2av - bare - header`` is roughly the Python cost;
* ``hdr+bare``: our header round, then ``bare``;
* ``a2a``, ``ag``: raw ``Alltoall`` (self chunk included) and in-place ``Allgather`` of the
  same bytes; ``bare-plain``: ``bare`` with ``Ialltoall`` and ``Iallgather`` instead (what
  ours did before it took the ``v`` calls);
* ``gather``: raw ``Allgather`` of the whole buffer + a local fold (the other deterministic
  algorithm);
* ``shm-bare``: the shared-memory path with no header and no Python machinery: copy in,
  ``Ibarrier`` (where ours exchanges its header), fold, ``Ibarrier``, copy out into a
  preallocated buffer, on slots of its own. ``ours - shm-bare`` is what our header check and
  call machinery cost on that path; ``shm-bare / raw`` is the floor of the algorithm on this
  machine.

Run under MPI, e.g.::

    mpirun -n 4 python scripts/bench_allreduce_stages.py --min-bytes 256K --max-bytes 4M
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from bench_communicators import parse_bytes, timed
from mpi4py import MPI

from xla_spmd.collectives.base import fold
from xla_spmd.collectives.mpi import _SHARED_SLOT_BYTES, MpiCommunicator, _Layout, _SharedPlan
from xla_spmd.collectives.shm import SLOTS, SharedSlots

NAMES = ("ours", "ours-a2av", "raw", "header", "a2av", "fold", "agv", "bare", "hdr+bare",
         "a2a", "ag", "bare-plain", "gather", "shm-bare")


def shared_slots(comm) -> SharedSlots | None:
    """Slots of our shared-memory all-reduce over ``comm`` (None where its ranks cannot
    share memory), made by running the stages of ``SharedSlots.create_steps`` blocking."""
    steps = SharedSlots.create_steps(comm, _SHARED_SLOT_BYTES)
    try:
        while True:
            target, name, arguments = next(steps)
            getattr(target, name)(*arguments)
    except StopIteration as made:
        return made.value


def stages(ours: MpiCommunicator, plain: MpiCommunicator, raw, slots: SharedSlots | None,
           size: int, repeats: int) -> list[float]:
    """The median time of each column of ``NAMES`` at ``size`` bytes per rank."""
    world = MPI.COMM_WORLD
    n, rank = world.Get_size(), world.Get_rank()
    group = tuple(range(n))
    x = np.random.default_rng(rank).standard_normal(size // 4).astype(np.float32)
    layout = _Layout(x.size, 4, n, rank)
    received = np.empty((n, layout.mine), np.float32)
    out = np.empty_like(x)
    gathered = np.empty((n,) + x.shape, x.dtype)
    start, mine, me = layout.start, layout.mine, rank
    byte = MPI.BYTE

    def a2av():
        raw.Alltoallv([x.view(np.uint8), layout.sent_counts, layout.offsets, byte],
                      [received.reshape(-1).view(np.uint8), layout.received_counts,
                       layout.received_offsets, byte])

    def fold_only():
        rows = list(received)
        rows[me] = x[start:start + mine]
        fold(rows, "sum", out=out[start:start + mine])

    def agv():
        raw.Allgatherv(MPI.IN_PLACE, [out.view(np.uint8), layout.counts, layout.offsets, byte])

    def polled(request) -> None:
        while not request.Test():
            pass

    def bare():  # what ours does
        polled(raw.Ialltoallv([x.view(np.uint8), layout.sent_counts, layout.offsets, byte],
                              [received.reshape(-1).view(np.uint8), layout.received_counts,
                               layout.received_offsets, byte]))
        fold_only()
        polled(raw.Iallgatherv(MPI.IN_PLACE, [out.view(np.uint8), layout.counts,
                                              layout.offsets, byte]))

    def bare_plain():  # the plain twins (equal chunks: these sizes split evenly)
        polled(raw.Ialltoall(x, received))
        fold(list(received), "sum", out=out[start:start + mine])
        polled(raw.Iallgather(MPI.IN_PLACE, out))

    def header_bare():
        ours.barrier(group)
        bare()

    def gather():
        raw.Allgather(x, gathered)
        fold([gathered[k] for k in range(n)], "sum")

    plans = [] if slots is None or not slots.fits(x.size, 4) else [
        _SharedPlan(slots, pair, layout, x.dtype) for pair in range(SLOTS)]
    calls = [0]

    def shm_bare():  # what ours does on the shared-memory path, less header and machinery
        if not plans:
            return
        plan = plans[calls[0] % SLOTS]
        calls[0] += 1
        data = x.view(np.uint8)
        plan.before[...] = data[:plan.low]
        plan.after[...] = data[plan.high:]
        polled(raw.Ibarrier())
        rows = list(plan.rows)
        rows[me] = x[plan.start:plan.stop]
        fold(rows, "sum", out=plan.result)
        polled(raw.Ibarrier())
        whole = out.view(np.uint8)
        for low, high, source in plan.copies:
            whole[low:high] = source

    fns = [lambda: ours.all_reduce(x, group, "sum"), lambda: plain.all_reduce(x, group, "sum"),
           lambda: raw.Allreduce(x, out, MPI.SUM),
           lambda: ours.barrier(group), a2av, fold_only, agv, bare, header_bare,
           lambda: raw.Alltoall(x, received), lambda: raw.Allgather(MPI.IN_PLACE, out),
           bare_plain, gather, shm_bare]
    return timed(fns, world, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--min-bytes", default="256K")
    parser.add_argument("--max-bytes", default="4M")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    world = MPI.COMM_WORLD
    ours = MpiCommunicator()
    plain = MpiCommunicator(shared_memory=False)
    raw = world.Dup()
    slots = shared_slots(raw)
    load = os.getloadavg()[0]
    rows = []
    size = parse_bytes(args.min_bytes)
    while size <= parse_bytes(args.max_bytes):
        repeats = max(3, args.repeats if size <= (1 << 22) else args.repeats // 4)
        rows.append((size, stages(ours, plain, raw, slots, size, repeats)))
        size *= 4
    if world.Get_rank() == 0:
        print(f"{world.Get_size()} ranks, float32 sum, median of {args.repeats} runs "
              f"interleaved, slowest rank, us; load average {load:.1f} at start, "
              f"{os.getloadavg()[0]:.1f} at end, {os.cpu_count()} cores")
        print(f"{'bytes/rank':>10} " + " ".join(f"{name:>8}" for name in NAMES)
              + f" {'ours/raw':>8} {'python':>8} {'shm/raw':>8}")
        for size, times in rows:
            t = dict(zip(NAMES, times))
            python = t["ours-a2av"] - t["bare"] - t["header"]
            print(f"{size:>10} " + " ".join(f"{v * 1e6:>8.1f}" for v in times)
                  + f" {t['ours'] / t['raw']:>8.2f} {python * 1e6:>8.1f}"
                  + (f" {t['shm-bare'] / t['raw']:>8.2f}" if slots is not None
                     else f" {'-':>8}"))
    if slots is not None:
        slots.close()
    raw.Free()
    ours.free()
    plain.free()


if __name__ == "__main__":
    main()
