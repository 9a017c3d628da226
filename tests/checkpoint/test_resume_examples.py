"""The training examples stopped at step k and resumed give the losses of an uninterrupted
run, in-process (under mpirun, 8 ranks -> 4: test_checkpoint_mpi.py)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"


def losses(example, *args) -> tuple[dict[int, str], str]:
    result = subprocess.run([sys.executable, str(EXAMPLES / example), "--log-every", "1",
                             *map(str, args)], cwd=EXAMPLES, capture_output=True, text=True,
                            timeout=300, env=dict(os.environ, COLUMNS="120"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", result.stdout)
    found = re.findall(r"step +(\d+) +loss ([0-9.]+)", plain)
    return {int(step): loss for step, loss in found}, plain


@pytest.mark.parametrize("example", ["train_mlp.py", "train_transformer.py"])
def test_resumed_run_prints_the_losses_of_an_uninterrupted_one(tmp_path, example):
    full, _ = losses(example, "--steps", 8)
    first, _ = losses(example, "--steps", 5, "--checkpoint-dir", tmp_path,
                      "--checkpoint-every", 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2", "4", "5"]
    second, text = losses(example, "--steps", 8, "--checkpoint-dir", tmp_path, "--resume")
    assert "resuming from step 5" in text
    assert first == {step: full[step] for step in range(1, 6)}
    assert second == {step: full[step] for step in range(6, 9)}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["4", "5", "8"]  # the last 3


@pytest.mark.slow
def test_resume_on_fewer_devices_and_another_strategy(tmp_path):
    full, _ = losses("train_transformer.py", "--steps", 8)
    losses("train_transformer.py", "--steps", 4, "--checkpoint-dir", tmp_path)
    second, _ = losses("train_transformer.py", "--steps", 8, "--checkpoint-dir", tmp_path,
                       "--resume", "--mesh", "data=1,model=4", "--strategy", "fsdp")
    assert sorted(second) == [5, 6, 7, 8]
    # Other shardings sum in another order: equal to the printed digits, give or take one
    # in the last (the same mesh and strategy agree exactly, above).
    assert all(abs(float(second[s]) - float(full[s])) <= 1.01e-6 for s in second), (second, full)


def test_resume_without_a_checkpoint_starts_at_step_zero(tmp_path):
    found, text = losses("train_mlp.py", "--steps", 2, "--checkpoint-dir", tmp_path / "new",
                         "--resume")
    assert "no checkpoint in" in text and sorted(found) == [1, 2]
