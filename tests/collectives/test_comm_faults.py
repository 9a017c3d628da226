"""Failures never hang: a device that raises, a device that never arrives, a rank that dies."""

from __future__ import annotations

import time

import numpy as np
import pytest

from xla_spmd.collectives import LocalWorld
from xla_spmd.errors import CommunicationError


def test_local_device_failure_wakes_the_others():
    world = LocalWorld(8, timeout=60)
    seen: dict[int, BaseException] = {}

    def body(comm):
        try:
            if comm.rank == 3:
                time.sleep(0.1)
                raise ValueError("bad shard")
            group = (0, 1, 2, 3) if comm.rank < 4 else (4, 5, 6, 7)
            comm.all_reduce(np.ones(4), group)  # group 0..3 waits for device 3 forever
            comm.barrier(tuple(range(8)))       # devices 4..7 wait here
        except BaseException as error:
            seen[comm.rank] = error
            raise

    start = time.monotonic()
    with pytest.raises(ValueError, match="bad shard"):
        world.run(body)
    assert time.monotonic() - start < 5
    assert sorted(seen) == list(range(8))
    for device, error in seen.items():
        if device != 3:
            assert isinstance(error, CommunicationError)
            assert "device 3 failed: ValueError: bad shard" in str(error)


def test_local_timeout_names_the_missing_devices():
    world = LocalWorld(4, timeout=0.3)

    def body(comm):
        if comm.rank != 2:
            comm.all_reduce(np.ones(2), (0, 1, 2, 3))
        else:
            comm.stopped.wait()  # busy elsewhere until the run stops

    start = time.monotonic()
    with pytest.raises(CommunicationError) as info:
        world.run(body)
    assert time.monotonic() - start < 5
    message = str(info.value)
    assert "all_reduce over replica group (0, 1, 2, 3)" in message
    assert "timed out after 0.3 s" in message
    assert "devices [2] did not arrive" in message


def test_local_timeout_from_environment(monkeypatch):
    monkeypatch.setenv("XLA_SPMD_COLLECTIVE_TIMEOUT", "0.2")
    with pytest.raises(CommunicationError, match="all_gather .* timed out after 0.2 s"):
        LocalWorld(2).run(lambda comm: comm.stopped.wait() if comm.rank
                          else comm.all_gather(np.ones(1), (0, 1)))


@pytest.mark.mpi
@pytest.mark.slow
def test_mpi_rank_failure_aborts_every_rank(mpirun):
    start = time.monotonic()
    completed = mpirun("fault_program.py", "raise", ranks=4, timeout=30)
    assert time.monotonic() - start < 30
    assert completed.returncode != 0
    assert completed.stdout.count("RuntimeError: boom on rank 2") == 1, completed.stdout
    assert "xla-spmd: rank 2 failed, aborting all ranks" in completed.stdout
    assert "which it should not" not in completed.stdout


@pytest.mark.mpi
@pytest.mark.slow
def test_mpi_timeout_names_collective_group_and_missing_ranks(mpirun):
    start = time.monotonic()
    completed = mpirun("fault_program.py", "timeout", ranks=4, timeout=30)
    assert time.monotonic() - start < 20  # rank 3 sleeps 30 s; the abort must cut it short
    assert completed.returncode != 0
    assert "CommunicationError" in completed.stdout
    assert "all_reduce over replica group (0, 1, 2, 3) (call #0 on that group) timed out " \
           "after 2 s" in completed.stdout, completed.stdout
    # One report, from the lowest waiting rank, blaming only the rank that never arrived.
    assert completed.stdout.count("timed out after") == 1, completed.stdout
    assert "on rank 0: rank 3 (it is not in a collective) never reached it" in \
        completed.stdout, completed.stdout
    assert "Traceback" not in completed.stdout


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("mode, call", [("stall", 1), ("stall-shared", 2)])
def test_mpi_member_stuck_in_a_payload_stage_stops_the_job(mpirun, mode, call):
    start = time.monotonic()
    completed = mpirun("fault_program.py", mode, ranks=4, timeout=30)
    assert time.monotonic() - start < 20  # rank 3 sleeps 30 s; the others' timeout cuts it
    assert completed.returncode != 0
    assert completed.stdout.count("timed out after 2 s") == 1, completed.stdout
    assert f"all_reduce over replica group (0, 1, 2, 3) (call #{call} on that group) timed " \
           "out after 2 s on rank 0: every member reached it, so the transfer itself " \
           "stalled" in completed.stdout, completed.stdout
    assert "Traceback" not in completed.stdout


@pytest.mark.mpi
@pytest.mark.slow
def test_mpi_ranks_that_disagree_raise_on_every_rank_naming_both_calls(mpirun):
    completed = mpirun("disagree_program.py", ranks=4, timeout=60)
    assert completed.returncode == 0, completed.stdout
    lines = dict(line.split(": ", 1) for line in completed.stdout.splitlines() if ": " in line
                 and line.split(": ", 1)[0] in SCENARIOS)
    assert set(lines) == set(SCENARIOS), completed.stdout
    for name, (first, second) in SCENARIOS.items():
        raised, message = lines[name].split(" | ", 1)
        assert raised == "[0, 1, 2, 3] same", (name, lines[name])  # every rank, one message
        assert first in message and second in message, (name, message)
        assert "Nothing was exchanged" in message
    # The group stays usable: nothing of a refused call was posted.
    assert "AFTER [6.0, 6.0, 6.0, 6.0]" in completed.stdout
    # Refused calls make no shared-memory slots; the first agreeing mid-size one does.
    assert "LAZY ok" in completed.stdout, completed.stdout
    # Refused one-frame calls through the slots leave them usable too.
    assert "AFTER SHARED ok" in completed.stdout, completed.stdout


SCENARIOS = {
    "op": ("rank 0 called all_reduce(sum) of float32[8]", "rank 1 called all_reduce(prod)"),
    "kind": ("rank 0 called all_reduce(sum)", "rank 1 called broadcast of float32[8], root 0"),
    "size": ("float32[8]", "rank 2 called all_reduce(sum) of float32[16]"),
    "size-large": ("float32[262144]", "rank 2 called all_reduce(sum) of float32[131072]"),
    "size-uneven": ("float32[262144]", "rank 1 called all_reduce(sum) of float32[262147]"),
    "shape": ("float32[4,2], axis 0", "rank 3 called all_gather of float32[2,4], axis 0"),
    "dtype": ("float32[8]", "rank 3 called all_reduce(sum) of float64[8]"),
    "axis": ("float32[4,2], axis 0", "rank 1 called all_gather of float32[4,2], axis 1"),
    "program": ("in program 00000001", "rank 3 called all_reduce(sum) of float32[8] (call #8) "
                "in program 00000002"),
    "shared-op": ("rank 0 called all_reduce(sum) of float32[262144]",
                  "rank 1 called all_reduce(prod) of float32[262144]"),
    "shared-size": ("float32[262144]", "rank 2 called all_reduce(sum) of float32[131072]"),
    "shared-program": ("in program 00000001", "rank 3 called all_reduce(sum) of "
                       "float32[262144] (call #"),
    "determinism": ("rank 0 called all_reduce(sum) of float32[262144] (call #",
                    "rank 2 called all_reduce(sum) of float32[262144] with MPI's own float "
                    "reductions (XLA_SPMD_DETERMINISTIC=0)"),
}
