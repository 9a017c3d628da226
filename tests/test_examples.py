"""The examples run as the README shows them."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_xla_partitioned_training_step_trains_and_matches():
    result = run("examples/run_xla_partitioned_step.py", "--steps", "3")
    assert result.returncode == 0, result.stderr
    assert "step 0 against JAX's own outputs" in result.stdout
    losses = [float(line.split("│")[2]) for line in result.stdout.splitlines()
              if line.startswith("│")]
    assert len(losses) == 3 and losses[0] > losses[1] > losses[2]


def test_xla_partitioned_mlp_case():
    result = run("examples/run_xla_partitioned_step.py", "--case", "sharded_mlp_fsdp8",
                 "--steps", "2")
    assert result.returncode == 0, result.stderr


def test_inspect_sharding_prints_every_notation():
    result = run("examples/inspect_sharding.py", "--mesh", "data=2,model=4", "--spec",
                 "data,model", "--shape", "8,16", "--no-color")
    assert result.returncode == 0, result.stderr
    assert '#sdy.sharding<@mesh, [{"data"}, {"model"}]>' in result.stdout
    assert "{devices=[2,4]<=[8]}" in result.stdout
    assert "device 5: coords (1, 1)  holds [4:8, 4:8]" in result.stdout


def test_inspect_sharding_reports_bad_spec_without_traceback():
    result = run("examples/inspect_sharding.py", "--spec", "data,model", "--shape", "8")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "rank 1" in result.stderr


def test_transforms_example_sharded_equals_unsharded():
    result = run("examples/transforms.py")
    assert result.returncode == 0, result.stderr
    differences = [float(line.rsplit("=", 1)[1]) for line in result.stdout.splitlines()
                   if "max |sharded - unsharded|" in line]
    assert len(differences) == 4 and max(differences) < 1e-5, result.stdout


def test_explicit_sharding_example_types_and_trains():
    result = run("examples/explicit_sharding.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "hidden: P('data', 'model')" in lines and "output: P('data', None)" in lines
    assert any(line.startswith("loss inside the step: ") for line in lines)
    assert "new w1: P(None, 'model')  new w2: P('model', None)" in lines
    assert lines[-1] == "matches numpy: True"
