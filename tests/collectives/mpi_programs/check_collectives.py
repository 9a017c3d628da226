"""Run every collective test case on MpiCommunicator and check it against numpy.

Launched as ``mpirun -n 4 python check_collectives.py``; exits non-zero (on every rank) if
any case fails on any rank, and prints ``ALL OK <n> cases`` on rank 0 otherwise.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collective_cases import build_cases, mismatch  # noqa: E402

from xla_spmd.collectives.mpi import MpiCommunicator, install_abort_on_error  # noqa: E402


def main() -> int:
    install_abort_on_error()
    comm = MpiCommunicator(timeout=60)
    strict = MpiCommunicator(timeout=60, deterministic=True)
    world = comm.size
    failures = []
    cases = build_cases(world)
    for case in cases:
        for communicator, exact in ((comm, case.exact), (strict, True)):
            if communicator is strict and case.exact:
                continue  # the deterministic mode only changes float reductions
            try:
                result = case.run(communicator)
                problem = mismatch(result, case.expect(comm.rank), exact)
            except Exception as error:  # noqa: BLE001 -- reported below
                problem = f"raised {type(error).__name__}: {error}"
            if problem:
                mode = "deterministic" if communicator is strict else "default"
                failures.append(f"rank {comm.rank} {case.name} ({mode}): {problem[:400]}")
    # Every member of a float all-reduce must get bit-identical results, even from MPI's
    # own reduction order.
    x = np.random.default_rng(comm.rank).standard_normal(1000).astype(np.float32)
    mine = comm.all_reduce(x, tuple(range(world)), "sum")
    everyone = comm.all_gather(mine[None], tuple(range(world)), 0)
    if not all(np.array_equal(row, mine) for row in everyone):
        failures.append(f"rank {comm.rank}: float all-reduce results differ between ranks")
    for line in failures:
        print(line, flush=True)
    failed = comm.mpi_comm.allreduce(len(failures))
    if comm.rank == 0:
        print(f"ALL OK {len(cases)} cases" if failed == 0 else f"{failed} FAILURES", flush=True)
    comm.free()
    strict.free()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
