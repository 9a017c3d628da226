"""Ranks that disagree about a collective, under ``mpirun -n 4``: every scenario must raise
the same ``CommunicationError`` on every rank, naming both calls, before any payload moves;
the communicator stays usable afterwards. Rank 0 prints one line per scenario:
``<scenario>: <ranks that raised> | <message>``, then ``AFTER <sum>``.
"""

from __future__ import annotations

import sys

import numpy as np

from xla_spmd.collectives.mpi import MpiCommunicator
from xla_spmd.errors import CommunicationError


def scenarios(comm: MpiCommunicator, everyone: tuple[int, ...]):
    rank = comm.rank
    f32 = np.ones(8, np.float32)
    big = np.ones(1 << 18, np.float32)  # too large to travel with the header
    yield "op", lambda: comm.all_reduce(f32, everyone, "prod" if rank == 1 else "sum")
    yield "kind", lambda: (comm.broadcast(f32, everyone, 0) if rank == 1
                           else comm.all_reduce(f32, everyone, "sum"))
    yield "size", lambda: comm.all_reduce(np.ones(16 if rank == 2 else 8, np.float32),
                                          everyone, "sum")
    yield "size-large", lambda: comm.all_reduce(big[: (1 << 17) if rank == 2 else None],
                                                everyone, "sum")
    # Rank 1's buffer does not split into equal chunks (Alltoallv), the others' do (Alltoall):
    # different MPI calls, refused by the header before either is made.
    uneven = np.ones((1 << 18) + 3, np.float32)
    yield "size-uneven", lambda: comm.all_reduce(uneven if rank == 1 else big, everyone, "sum")
    yield "shape", lambda: comm.all_gather(f32.reshape((2, 4) if rank == 3 else (4, 2)),
                                           everyone, 0)
    yield "dtype", lambda: comm.all_reduce(f32.astype(np.float64 if rank == 3 else np.float32),
                                           everyone, "sum")
    yield "axis", lambda: comm.all_gather(f32.reshape(4, 2), everyone, 1 if rank == 1 else 0)

    yield "program", lambda: in_other_program(comm, f32, everyone)

    def determinism():
        comm.deterministic = rank != 2
        try:
            return comm.all_reduce(big, everyone, "sum")
        finally:
            comm.deterministic = True

    yield "determinism", determinism


def shared_scenarios(comm: MpiCommunicator, everyone: tuple[int, ...]):
    """Disagreements about blocking mid-size all-reduces once the group's shared slots are
    made: these run in one frame from what the group's first such call prepared, and must
    be refused alike."""
    rank = comm.rank
    big = np.ones(1 << 18, np.float32)
    yield "shared-op", lambda: comm.all_reduce(big, everyone, "prod" if rank == 1 else "sum")
    yield "shared-size", lambda: comm.all_reduce(big[: (1 << 17) if rank == 2 else None],
                                                 everyone, "sum")

    yield "shared-program", lambda: in_other_program(comm, big, everyone)


def in_other_program(comm: MpiCommunicator, x: np.ndarray, everyone: tuple[int, ...]):
    """An all-reduce of ``x`` that rank 3 makes in program 2 and the others in program 1."""
    comm.set_program(2 if comm.rank == 3 else 1)
    try:
        return comm.all_reduce(x, everyone, "sum")
    finally:
        comm.set_program(0)


def run(comm: MpiCommunicator, scenarios) -> list[str]:
    """One line per scenario: the ranks that raised, whether every rank's message is the
    same, and this rank's message."""
    report = []
    for name, call in scenarios:
        try:
            call()
            message = "no error"
        except CommunicationError as error:
            message = str(error)
        raised = comm.mpi_comm.allgather(message != "no error")
        messages = comm.mpi_comm.allgather(message)
        same = all(m == messages[0] for m in messages)
        report.append(f"{name}: {[r for r, flag in enumerate(raised) if flag]} "
                      f"{'same' if same else 'DIFFERENT'} | {message}")
    return report


def check_lazy_slots(comm: MpiCommunicator, everyone: tuple[int, ...]) -> str:
    """The refused mid-size all-reduces above made no shared slots. A nonblocking one that
    some ranks start as mid-size and rank 2 as small is refused too, and the agreeing one
    started behind it (which waits for it to know who makes the slots) makes them instead;
    the next one uses them. Every result is the left fold. '' or what went wrong."""
    rank, problems = comm.rank, []
    if everyone in comm._shared:
        problems.append(f"rank {rank}: refused calls made shared slots")
    rows = [np.random.default_rng(member).standard_normal(1 << 18).astype(np.float32)
            for member in everyone]
    want = rows[0].copy()
    for row in rows[1:]:
        want += row
    refused = comm.all_reduce_start(rows[rank][:8] if rank == 2 else rows[rank], everyone,
                                    "sum")
    maker = comm.all_reduce_start(rows[rank], everyone, "sum")
    try:
        refused.wait()
        problems.append(f"rank {rank}: a disagreeing nonblocking all-reduce was not refused")
    except CommunicationError as error:
        if "rank 2 called all_reduce(sum) of float32[8]" not in str(error):
            problems.append(f"rank {rank}: unexpected error: {error}")
    if maker.wait().tobytes() != want.tobytes():
        problems.append(f"rank {rank}: the all-reduce that made the slots is not the left fold")
    if type(comm._shared.get(everyone)).__name__ != "SharedSlots":
        problems.append(f"rank {rank}: no shared slots made: {comm._shared.get(everyone)}")
    if comm.all_reduce(rows[rank], everyone, "sum").tobytes() != want.tobytes():
        problems.append(f"rank {rank}: the all-reduce through the slots is not the left fold")
    return "; ".join(problems)


def main() -> int:
    comm = MpiCommunicator(timeout=60)
    everyone = tuple(range(comm.size))
    report = run(comm, scenarios(comm, everyone))
    after = comm.all_reduce(np.full(4, comm.rank, np.float32), everyone, "sum")
    lazy = check_lazy_slots(comm, everyone)
    lazies = comm.mpi_comm.allgather(lazy)
    report += run(comm, shared_scenarios(comm, everyone))
    # The slots still serve an agreeing call after the refused ones: the left fold.
    rows = [np.full(1 << 18, member + 0.25, np.float32) for member in everyone]
    want = rows[0].copy()
    for row in rows[1:]:
        want += row
    shared = comm.all_reduce(rows[comm.rank], everyone, "sum").tobytes() == want.tobytes()
    if comm.rank == 0:
        print("\n".join(report))
        print(f"AFTER {after.tolist()}", flush=True)
        print("LAZY " + ("; ".join(problem for problem in lazies if problem) or "ok"),
              flush=True)
    if not all(comm.mpi_comm.allgather(shared)):
        print(f"rank {comm.rank}: the shared all-reduce after the refused ones is not the "
              "left fold", flush=True)
    elif comm.rank == 0:
        print("AFTER SHARED ok", flush=True)
    comm.free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
