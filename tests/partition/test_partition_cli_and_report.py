"""The `partition` command, `run --devices`, the collectives table and `specialize`."""

import json
from pathlib import Path

import numpy as np

from xla_spmd.backends.reference import evaluate
from xla_spmd.cli import main
from xla_spmd.ir import OPS, parse_hlo, verify
from xla_spmd.partition import collective_table, specialize
from xla_spmd.partition.registry import handler_for
from xla_spmd.partition.report import strip_shardings
from xla_spmd.pipeline import lower

DATA = Path(__file__).resolve().parents[1] / "data" / "jax"
CASE = DATA / "sharded_mlp_megatron_2x4" / "sharded_mlp_megatron_2x4"


def test_partition_command_prints_parseable_hlo_and_table(capsys):
    assert main(["partition", str(CASE) + ".hlo"]) == 0
    out = capsys.readouterr().out
    text = "\n".join(line for line in out.splitlines() if not line.startswith("//"))
    module = parse_hlo(text)
    verify(module)
    assert module.num_partitions == 8
    assert "replica_groups=[" in text  # iota form
    assert "use_global_device_ids=true" in text and "channel_id=" in text
    assert "// all-reduce" in out


def test_partition_command_json(capsys):
    assert main(["partition", str(CASE) + ".hlo", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["totals"]["total"] == 1604.0
    assert {row["kind"] for row in table["collectives"]} == {"all-reduce"}


def test_partition_command_device(capsys):
    assert main(["partition", str(CASE) + ".hlo", "--device", "3"]) == 0
    assert "partition-id" not in capsys.readouterr().out
    assert main(["partition", str(CASE) + ".hlo", "--device", "9"]) == 2


def test_run_on_devices(tmp_path, capsys):
    out = tmp_path / "out.npz"
    assert main(["run", str(CASE) + ".hlo", "--inputs", str(CASE) + ".npz", "--devices", "8",
                 "--output", str(out)]) == 0
    got, want = np.load(out), np.load(str(CASE) + ".npz")
    for key in got.files:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-5)
    assert main(["run", str(CASE) + ".hlo", "--inputs", str(CASE) + ".npz",
                 "--devices", "4"]) == 2


def test_specialize_gives_each_device_its_program():
    spmd = lower(parse_hlo(Path(str(CASE) + ".hlo").read_text())).spmd_module
    arrays = np.load(str(CASE) + ".npz")
    one = specialize(spmd, 5)
    assert all(i.opcode != "partition-id" for c in one.computations for i in c.instructions)
    verify(one)
    del arrays


def test_strip_shardings_and_table_rows():
    spmd = lower(parse_hlo(Path(str(CASE) + ".hlo").read_text())).spmd_module
    stripped = strip_shardings(spmd)
    assert all(i.sharding is None for c in stripped.computations for i in c.instructions)
    rows = collective_table(stripped)
    assert rows and all(r["bytes"] > 0 and r["group_size"] in (2, 4) for r in rows)


def test_every_opcode_has_a_partition_handler():
    class Fake:
        def __init__(self, name):
            self.opcode = name
    missing = [name for name in OPS if handler_for(Fake(name)) is None]
    assert not missing


def test_unpartitioned_module_runs_the_same_on_one_device():
    module = parse_hlo("""HloModule m
ENTRY e { x = f32[4] parameter(0)
  ROOT y = f32[4] exponential(x) }""")
    spmd = lower(module).spmd_module
    assert spmd.num_partitions == 1
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(evaluate(spmd, [x]), np.exp(x), rtol=1e-6)
