"""`xs.distributed.initialize()` outside a launcher fails clearly instead of quietly turning
the process into a one-device MPI job; the training loop's output off a terminal."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


def test_initialize_outside_mpirun_raises():
    pytest.importorskip("mpi4py")
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    code = ("import xla_spmd as xs\n"
            "try:\n"
            "    xs.distributed.initialize()\n"
            "except xs.errors.XlaSpmdError as error:\n"
            "    print('ERROR', error)\n"
            "print('KIND', xs.runtime.topology().kind, xs.device_count())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ERROR" in result.stdout and "not launched by mpirun" in result.stdout
    assert "mpirun -n N python" in result.stdout
    assert "KIND local 8" in result.stdout  # in-process devices are untouched


def test_training_output_off_a_terminal_has_no_live_bar():
    """Piped (as under mpirun), the loop prints plain step lines, no escape codes and no
    redraws of a progress bar."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    result = subprocess.run(
        [sys.executable, "train_mlp.py", "--mesh", "data=2", "--steps", "3", "--log-every",
         "1"], cwd=ROOT / "examples", capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\x1b[" not in result.stdout and "\r" not in result.stdout
    assert len(re.findall(r"step +\d+ +loss [0-9.]+", result.stdout)) == 3
    assert "training" not in result.stdout  # the bar's label


def test_live_output_only_on_a_terminal_outside_a_launcher(monkeypatch):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import training
    finally:
        sys.path.remove(str(ROOT / "examples"))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert training.live_output()
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    assert not training.live_output()
