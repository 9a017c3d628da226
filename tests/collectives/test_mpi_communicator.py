"""MpiCommunicator against numpy: every case of collective_cases under ``mpirun -n 4`` and
``-n 3`` (groups of odd size, and a rank alone in its group)."""

from __future__ import annotations

import pytest


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("ranks", [4, 3])
def test_every_collective_under_mpirun(mpirun, ranks):
    completed = mpirun("check_collectives.py", ranks=ranks, timeout=120)
    assert completed.returncode == 0, completed.stdout[-5000:]
    assert "ALL OK" in completed.stdout


def test_mpi_module_imports_without_launching():
    # Importing must not need mpirun; only constructing a communicator initialises MPI.
    import xla_spmd.collectives.mpi as mpi

    assert callable(mpi.install_abort_on_error)
