"""Shared-memory slots where ``/dev/shm`` has too little room, under ``mpirun -n 4``: no rank
crashes, every rank of a group falls back together to the ``Alltoallv`` path, and every
all-reduce is still the left fold in group order, bit for bit. Rank 0 prints ``ROOM OK`` and
the slots each group ended with, or the failures.

``mock``: ``posix_fallocate`` fails with ``ENOSPC`` on rank 0 (the member that makes the
file), as on a tmpfs that another job filled between the free-space check and the
reservation. ``DIR``: the segments go to ``DIR`` (a small tmpfs): the world's segment fits
and is made; then another "job" fills ``DIR`` up, which must not touch the pages already
made (a sparse file's pages would raise SIGBUS when first written now); then a
communicator made later finds no room and falls back.
"""

from __future__ import annotations

import errno
import os
import sys

import numpy as np

import xla_spmd.collectives.shm as shm
from xla_spmd.collectives.mpi import MpiCommunicator, install_abort_on_error


def left_fold(rows: list[np.ndarray]) -> np.ndarray:
    total = rows[0].copy()
    for row in rows[1:]:
        total += row
    return total


def all_reduces(comm: MpiCommunicator, group: tuple[int, ...], label: str, count: int = 3,
                elements: int = 1 << 20) -> list[str]:
    """``count`` mid-size all-reduces on ``group`` (float32; by default 4 MiB a member:
    every page of the input slots is written; a pair's slots hold 2 MiB, so pass 1 << 19
    elements for one), each against the left fold."""
    failures = []
    for k in range(count):
        rows = [np.random.default_rng(100 * k + member).standard_normal(elements)
                .astype(np.float32) for member in group]
        got = comm.all_reduce(rows[group.index(comm.rank)], group, "sum")
        if got.tobytes() != left_fold(rows).tobytes():
            failures.append(f"rank {comm.rank}: {label} all-reduce {k} over {group} is not "
                            "the left fold")
    return failures


def slots_of(comm: MpiCommunicator, group: tuple[int, ...]) -> str:
    slots = comm._shared.get(group, "none made")
    return slots if isinstance(slots, str) else ("None" if slots is None else "slots")


def mock(world: tuple[int, ...]) -> tuple[list[str], list[str]]:
    comm = MpiCommunicator(timeout=60)
    pair = (comm.rank - comm.rank % 2, comm.rank - comm.rank % 2 + 1)
    real = os.posix_fallocate

    def no_room(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if comm.rank == 0:
        os.posix_fallocate = no_room  # rank 0 makes the world's file and pair (0, 1)'s
    try:
        failures = all_reduces(comm, world, "no room") + all_reduces(comm, pair, "no room",
                                                                  elements=1 << 19)
    finally:
        os.posix_fallocate = real
    states = [f"world {slots_of(comm, world)}", f"pair {slots_of(comm, pair)}"]
    later = MpiCommunicator(timeout=60)  # room again: the slots are made and used
    failures += all_reduces(later, world, "room")
    states.append(f"later world {slots_of(later, world)}")
    comm.free()
    later.free()
    return failures, states


def small_directory(world: tuple[int, ...], directory: str) -> tuple[list[str], list[str]]:
    shm.SHM_DIR = directory
    comm = MpiCommunicator(timeout=60)
    # Half the slots' bytes first; once the directory is full, all of them: pages written
    # for the first time then.
    failures = all_reduces(comm, world, "first", count=2, elements=1 << 19)
    filler = os.path.join(directory, "filler")
    if comm.rank == 0:  # another job takes every page left
        with open(filler, "wb", buffering=0) as file:
            block = b"\1" * (1 << 20)
            try:
                while True:
                    file.write(block)
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
    comm.mpi_comm.Barrier()
    failures += all_reduces(comm, world, "full")
    later = MpiCommunicator(timeout=60)
    failures += all_reduces(later, world, "later")
    states = [f"world {slots_of(comm, world)}", f"later world {slots_of(later, world)}"]
    comm.mpi_comm.Barrier()
    if comm.rank == 0:
        os.unlink(filler)
        left = [name for name in os.listdir(directory) if name.startswith("xla_spmd_")]
        if left:
            failures.append(f"files left in {directory}: {left}")
    comm.free()
    later.free()
    return failures, states


def main() -> int:
    install_abort_on_error()
    from mpi4py import MPI

    world = tuple(range(MPI.COMM_WORLD.Get_size()))
    if sys.argv[1] == "mock":
        failures, states = mock(world)
    else:
        failures, states = small_directory(world, sys.argv[1])
    everyone = MPI.COMM_WORLD.gather((failures, states), root=0)
    if MPI.COMM_WORLD.Get_rank() == 0:
        for rank, (failed, state) in enumerate(everyone):
            if failed:
                print("\n".join(failed))
            print(f"rank {rank}: {', '.join(state)}")
        print("ROOM OK" if not any(failed for failed, _ in everyone) else "ROOM FAILED",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
