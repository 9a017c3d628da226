"""The frontend examples run as scripts: the transformer step prints its sharded IR and its
loss goes down."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lower_transformer_step.py"


def run_example(*args) -> str:
    result = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def losses(output: str) -> list[float]:
    return [float(v) for v in re.findall(r"^step \d+: loss ([0-9.]+)$", output, re.M)]


def test_transformer_step_hlo_has_megatron_shardings_and_learns():
    output = run_example()
    header = output.splitlines()[0]
    assert header.startswith("HloModule jit_train_step, input_output_alias={ {0}: (0, {}")
    assert '#sdy.mesh<[\\"data\\"=2, \\"model\\"=4]>' in header or \
        '#sdy.mesh<["data"=2, "model"=4]>' in header
    assert '[{\\"data\\"}, {}]' in output            # the batch, over "data"
    assert '[{}, {\\"model\\"}]' in output           # column-parallel weights
    assert '[{\\"model\\"}, {}]' in output           # row-parallel weights
    assert "sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}" in output
    values = losses(output)
    assert len(values) == 3 and values[0] > values[1] > values[2]


@pytest.mark.parametrize("steps", [2])
def test_transformer_step_stablehlo(steps):
    output = run_example("--dialect", "stablehlo", "--steps", str(steps))
    assert output.startswith("module @jit_train_step {")
    assert 'sdy.mesh @mesh = <["data"=2, "model"=4]>' in output
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>' in output
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>' in output
    values = losses(output)
    assert len(values) == steps and values[1] < values[0]
