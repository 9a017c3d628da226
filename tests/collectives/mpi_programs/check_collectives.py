"""Run every collective test case on MpiCommunicator and check it against numpy.

Launched as ``mpirun -n N python check_collectives.py`` (any N >= 2; an odd N leaves a rank
alone in the paired layouts); exits non-zero (on every rank) if any case fails on any rank, and
prints ``ALL OK <n> cases`` on rank 0 otherwise.
"""

from __future__ import annotations

import os
import sys
import tempfile
import weakref

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collective_cases import build_cases, mismatch  # noqa: E402

import xla_spmd.collectives.shm as shm  # noqa: E402
from xla_spmd.collectives.mpi import MpiCommunicator, install_abort_on_error  # noqa: E402

# The slots checks expect segments to be made (a few, up to 40 MiB each, all reserved): a
# container's /dev/shm may be 64 MiB, and then they would fall back. There, the segments are
# files in the temporary directory, shared all the same. Decided from the file system's
# total size, the same on every rank (its free room changes as the ranks make segments).
_SHM_NEEDED = 1 << 30


def _shm_size(path: str) -> int:
    try:
        stats = os.statvfs(path)
    except OSError:
        return 0
    return stats.f_blocks * stats.f_frsize


if _shm_size(shm.SHM_DIR) < _SHM_NEEDED:
    shm.SHM_DIR = tempfile.gettempdir()


def main() -> int:
    install_abort_on_error()
    comm = MpiCommunicator(timeout=60)  # deterministic: bit-identical to the left fold
    fast = MpiCommunicator(timeout=60, deterministic=False)  # MPI's own float reductions
    # Deterministic without shared memory: mid-size all-reduces take Alltoallv/Allgatherv.
    plain = MpiCommunicator(timeout=60, shared_memory=False)
    # Ranks that disagree about shared memory: none of them uses it (and none hangs).
    mixed = MpiCommunicator(timeout=60, shared_memory=comm.rank != 1)
    world = comm.size
    failures = []
    cases = build_cases(world)
    for case in cases:
        for communicator, exact in ((comm, True), (fast, case.exact)):
            if communicator is fast and case.exact:
                continue  # the fast mode only changes float reductions
            try:
                result = case.run(communicator)
                problem = mismatch(result, case.expect(comm.rank), exact)
            except Exception as error:  # noqa: BLE001 -- reported below
                problem = f"raised {type(error).__name__}: {error}"
            if problem:
                mode = "deterministic" if communicator is comm else "fast"
                failures.append(f"rank {comm.rank} {case.name} ({mode}): {problem[:400]}")
    # Every member of a float all-reduce gets bit-identical results, even from MPI's own
    # reduction order; the deterministic one equals the left fold in group order, for
    # buffers small (gathered whole) and large (alltoallv chunks), of every chunk split.
    everyone_group = tuple(range(world))
    for size in (1000, 1 << 16, (1 << 16) + 3, 7, 0):
        rows = [np.random.default_rng(r * 7919 + size).standard_normal(size).astype(np.float32)
                for r in range(world)]
        for communicator in (comm, fast):
            mine = communicator.all_reduce(rows[comm.rank], everyone_group, "sum")
            everyone = communicator.all_gather(mine[None], everyone_group, 0)
            if not all(np.array_equal(row, mine) for row in everyone):
                failures.append(f"rank {comm.rank}: float all-reduce of {size} differs "
                                "between ranks")
        expected = rows[0].copy()
        for row in rows[1:]:
            expected += row
        for communicator, how in ((comm, "shared memory"), (plain, "alltoallv"),
                                  (mixed, "shared memory on some ranks")):
            if communicator.all_reduce(rows[comm.rank], everyone_group, "sum").tobytes() != \
                    expected.tobytes():
                failures.append(f"rank {comm.rank}: deterministic all-reduce ({how}) of "
                                f"{size} is not the left fold in group order")
        # Nonblocking, two in flight at once: the payload stages are MPI's nonblocking
        # collectives (Ialltoall(v), Iallgather(v) in place), and give the same bits.
        flipped = [row[::-1].copy() for row in rows]
        handles = [comm.all_reduce_start(r[comm.rank], everyone_group, "sum")
                   for r in (rows, flipped)]
        for handle, inputs in zip(handles, (rows, flipped)):
            want = inputs[0].copy()
            for row in inputs[1:]:
                want += row
            if handle.wait().tobytes() != want.tobytes():
                failures.append(f"rank {comm.rank}: nonblocking deterministic all-reduce of "
                                f"{size} is not the left fold in group order")
    failures += check_recycled_results(comm, everyone_group)
    failures += check_many_in_flight(comm, everyone_group)
    failures += check_pairs(comm)
    failures += check_lazy_slots(comm, fast, plain, mixed, everyone_group)
    for line in failures:
        print(line, flush=True)
    failed = comm.mpi_comm.allreduce(len(failures))
    if comm.rank == 0:
        print(f"ALL OK {len(cases)} cases" if failed == 0 else f"{failed} FAILURES", flush=True)
    comm.free()
    fast.free()
    plain.free()
    mixed.free()
    return 1 if failed else 0


def left_fold(arrays: list[np.ndarray]) -> np.ndarray:
    total = arrays[0].copy()
    for row in arrays[1:]:
        total += row
    return total


def check_many_in_flight(comm: MpiCommunicator, group: tuple[int, ...]) -> list[str]:
    """More mid-size all-reduces in flight than a group has shared-memory slot pairs, with
    other collectives between them, waited for in reverse order: each is the left fold (a
    start that needs a busy slot pair completes the call that holds it first)."""
    rank, world = comm.rank, len(group)
    failures = []
    inputs = [[np.random.default_rng(500 * k + r).standard_normal((1 << 16) + k)
               .astype(np.float32) for r in range(world)] for k in range(5)]
    handles = []
    for k, rows in enumerate(inputs):
        handles.append((k, comm.all_reduce_start(rows[rank], group, "sum")))
        gathered = comm.all_gather_start(np.full(3, rank + k, np.int32), group, 0)
        handles.append((-1 - k, gathered))
    for k, handle in reversed(handles):
        got = handle.wait()
        if k >= 0 and got.tobytes() != left_fold(inputs[k]).tobytes():
            failures.append(f"rank {rank}: all-reduce {k} of 5 in flight is not the left fold")
        if k < 0 and got.tolist() != [m - 1 - k for m in range(world) for _ in range(3)]:
            failures.append(f"rank {rank}: all-gather {-1 - k} between them is wrong: {got}")
    return failures


def slots_state(comm: MpiCommunicator, group: tuple[int, ...]) -> str:
    """What ``comm`` holds for ``group``'s shared memory: 'none made', 'None' (its members
    cannot share memory) or 'SharedSlots'."""
    state = comm._shared.get(group, "none made")
    if state is None or isinstance(state, str):
        return str(state)
    return type(state).__name__


def check_lazy_slots(comm: MpiCommunicator, fast: MpiCommunicator, plain: MpiCommunicator,
                     mixed: MpiCommunicator, everyone: tuple[int, ...]) -> list[str]:
    """Shared slots are made for a group by its first mid-size float all-reduce, and only
    then: never for groups that only ran other collectives (their pages are reserved, so
    they would cost memory), nor where MPI reduces (``deterministic=False``); None on every
    member where some member turned them off. The first of several mid-size all-reduces in
    flight on a fresh group makes them, and the next one waits for it: all are the left
    fold (``check_many_in_flight``)."""
    rank, failures = comm.rank, []
    pair = (rank - rank % 2, rank - rank % 2 + 1) if rank - rank % 2 + 1 < comm.size \
        else (rank,)
    want = {(comm, everyone): "SharedSlots", (plain, everyone): "None",
            (mixed, everyone): "None", (fast, everyone): "none made"}
    if len(pair) > 1:
        want[(comm, pair)] = "SharedSlots"
    idle = MpiCommunicator(timeout=60)
    pairs = [tuple(range(k, min(k + 2, comm.size))) for k in range(0, comm.size, 2)]
    idle.prepare([pairs, [everyone]])
    big = np.ones(1 << 18, np.float32)
    idle.all_gather(big, pair, 0)
    idle.all_reduce(big.astype(np.int32), everyone, "sum")  # exact in any order: MPI's
    idle.all_reduce(big[:64], everyone, "sum")  # small: gathered whole
    want.update({(idle, pair): "none made", (idle, everyone): "none made"})
    for (communicator, group), state in want.items():
        if slots_state(communicator, group) != state:
            failures.append(f"rank {rank}: shared slots of {group}: "
                            f"{slots_state(communicator, group)}, expected {state}")
    failures += check_many_in_flight(idle, everyone)
    if slots_state(idle, everyone) != "SharedSlots":
        failures.append(f"rank {rank}: in flight, no shared slots were made for {everyone}")
    idle.free()
    return failures


def check_pairs(comm: MpiCommunicator) -> list[str]:
    """A mid-size all-reduce over sub-groups (pairs; a rank left over is alone), twice: the
    left fold in group order, through each pair's own shared memory."""
    rank, failures = comm.rank, []
    group = (rank - rank % 2, rank - rank % 2 + 1)
    if group[1] >= comm.size:
        group = (rank,)
    for k in range(2):
        rows = [np.random.default_rng(700 * k + member).standard_normal(1 << 17)
                .astype(np.float32) for member in group]
        got = comm.all_reduce(rows[group.index(rank)], group, "sum")
        if got.tobytes() != left_fold(rows).tobytes():
            failures.append(f"rank {rank}: all-reduce {k} over pair {group} is not the left fold")
    return failures


def check_recycled_results(comm: MpiCommunicator, group: tuple[int, ...]) -> list[str]:
    """Large results (1 MiB and up) are made in recycled buffers: one the caller still holds,
    even through a slice alone, is never written again; one it dropped is reused, and holds
    the new result."""
    failures = []
    rank, world = comm.rank, len(group)

    def rows(k: int) -> list[np.ndarray]:
        return [np.random.default_rng(1000 * k + r).standard_normal(1 << 18).astype(np.float32)
                for r in range(world)]

    held = [(comm.all_reduce(rows(k)[rank], group, "sum"), left_fold(rows(k))) for k in range(3)]
    tail = comm.all_reduce(rows(3)[rank], group, "sum")[1:]  # only a slice survives
    gathered = comm.all_gather(rows(4)[rank], group, 0)
    for k in range(5, 8):  # later calls of the same sizes
        comm.all_reduce(rows(k)[rank], group, "sum")
        comm.all_gather(rows(k)[rank], group, 0)
    for k, (got, want) in enumerate(held):
        if got.tobytes() != want.tobytes():
            failures.append(f"rank {rank}: held all-reduce result {k} was overwritten")
    if tail.tobytes() != left_fold(rows(3))[1:].tobytes():
        failures.append(f"rank {rank}: a slice of a dropped result was overwritten")
    if gathered.tobytes() != np.concatenate(rows(4)).tobytes():
        failures.append(f"rank {rank}: a held all-gather result was overwritten")
    first = comm.all_reduce(rows(8)[rank], group, "sum")
    buffer = weakref.ref(first.base)  # the recycled buffer the result is a view of
    del first
    second = comm.all_reduce(rows(9)[rank], group, "sum")
    if buffer() is None or second.base is not buffer():
        failures.append(f"rank {rank}: a dropped large result's buffer was not reused")
    if second.tobytes() != left_fold(rows(9)).tobytes():
        failures.append(f"rank {rank}: a reused buffer does not hold the new result")
    return failures


if __name__ == "__main__":
    sys.exit(main())
