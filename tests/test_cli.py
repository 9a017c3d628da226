"""The `xla-spmd` command: run and convert, and the errors it gives for bad input."""

import numpy as np
import pytest

from xla_spmd.cli import main

DATA = __import__("pathlib").Path(__file__).resolve().parent / "data" / "jax"

BF16_PROGRAM = """HloModule halve
ENTRY %main (x: bf16[3], n: s32[]) -> (bf16[3], s32[]) {
  %x = bf16[3] parameter(0)
  %n = s32[] parameter(1)
  %half = bf16[] constant(0.5)
  %b = bf16[3] broadcast(%half), dimensions={}
  %m = bf16[3] multiply(%x, %b)
  %one = s32[] constant(1)
  %k = s32[] add(%n, %one)
  ROOT %t = (bf16[3], s32[]) tuple(%m, %k)
}
"""


@pytest.fixture
def bf16_program(tmp_path):
    path = tmp_path / "halve.hlo"
    path.write_text(BF16_PROGRAM)
    return path


def test_run_matches_xla_outputs(tmp_path, capsys):
    out = tmp_path / "out.npz"
    case = DATA / "mlp_train_step"
    code = main(["run", str(case / "mlp_train_step.hlo"), "--inputs",
                 str(case / "mlp_train_step.npz"), "--output", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "out0: float32[]" in printed and "wrote 5 outputs" in printed
    with np.load(out) as got, np.load(case / "mlp_train_step.npz") as want:
        for key in got.files:
            np.testing.assert_allclose(got[key], want[key], rtol=2e-5, atol=2e-6)


def test_run_casts_exact_inputs_to_bf16(bf16_program, tmp_path):
    inputs, out = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, arg0=np.array([1.0, 2.0, -4.0], np.float32), arg1=np.array(41, np.int32))
    assert main(["run", str(bf16_program), "--inputs", str(inputs), "--output", str(out)]) == 0
    with np.load(out) as got:
        np.testing.assert_array_equal(got["out0"], [0.5, 1.0, -2.0])
        assert got["out1"] == 42


def test_run_refuses_inexact_cast_naming_the_parameter(bf16_program, tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.array([1.0, 2.0, 3.0], np.float32), arg1=np.array(1.5))
    assert main(["run", str(bf16_program), "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err
    assert "argument 1 (n)" in error and "not exact" in error


def test_run_names_missing_inputs(bf16_program, tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.zeros(3, np.float32))
    assert main(["run", str(bf16_program), "--inputs", str(inputs)]) == 2
    assert "missing ['arg1']" in capsys.readouterr().err


def test_run_refuses_pickled_inputs(bf16_program, tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.array([object()], dtype=object), arg1=np.array(1, np.int32))
    assert main(["run", str(bf16_program), "--inputs", str(inputs)]) == 2
    assert "holds object arrays, which would need pickle" in capsys.readouterr().err


def test_run_says_when_inputs_are_not_npz(bf16_program, tmp_path, capsys):
    inputs = tmp_path / "in.npy"
    np.save(inputs, np.zeros(3, np.float32))
    assert main(["run", str(bf16_program), "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err
    assert f"{inputs}: not an .npz file (numpy.savez)" in error and "pickle" not in error


def test_run_names_unexpected_input_keys(bf16_program, tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.zeros(3, np.float32), arg1=np.array(1, np.int32),
             out0=np.zeros(3, np.float32))
    assert main(["run", str(bf16_program), "--inputs", str(inputs)]) == 2
    assert "missing ['arg0'], unexpected ['x']" in capsys.readouterr().err


ALL_REDUCE = """HloModule m, num_partitions=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), channel_id=1, replica_groups={{0,1}},
    use_global_device_ids=true, to_apply=add
}
"""


@pytest.fixture
def all_reduce_program(tmp_path):
    path = tmp_path / "ar.hlo"
    path.write_text(ALL_REDUCE)
    np.savez(tmp_path / "in.npz", arg0=np.ones(2, np.float32))
    return path


@pytest.mark.parametrize("devices, message", [
    ([], "has collectives (ar (all-reduce)) across 2 devices; run it on its devices: "
         "--devices 2"),
    (["--devices", "0"], "--devices 0: give a positive number of devices"),
    (["--devices", "-3"], "--devices -3: give a positive number of devices"),
    (["--devices", "4"], "is written for num_partitions=2 = 2 devices; give --devices 2"),
])
def test_run_checks_the_device_count(all_reduce_program, devices, message, capsys):
    inputs = all_reduce_program.parent / "in.npz"
    assert main(["run", str(all_reduce_program), "--inputs", str(inputs), *devices]) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_run_on_the_modules_devices(all_reduce_program, capsys):
    inputs = all_reduce_program.parent / "in.npz"
    assert main(["run", str(all_reduce_program), "--inputs", str(inputs),
                 "--devices", "2"]) == 0
    assert "first=[2., 2.]" in capsys.readouterr().out


def test_run_refuses_a_program_xla_already_partitioned(capsys):
    folder = DATA / "sharded_mlp_dp8"
    assert main(["run", str(folder / "sharded_mlp_dp8.optimized.hlo"), "--inputs",
                 str(folder / "sharded_mlp_dp8.npz"), "--devices", "8"]) == 2
    error = capsys.readouterr().err
    assert "already partitioned by XLA" in error and "main.6_spmd" in error
    assert "takes global programs" in error


@pytest.mark.parametrize("command", ["run", "convert"])
def test_cli_rejects_misnumbered_parameters(command, tmp_path, capsys):
    path = tmp_path / "bad.hlo"
    path.write_text(BF16_PROGRAM.replace("s32[] parameter(1)", "s32[] parameter(2)"))
    args = [str(tmp_path / "out.hlo")] if command == "convert" else []
    assert main([command, str(path), *args]) == 2
    error = capsys.readouterr().err
    assert f"{path}:4:3: parameter number 2 of %n is out of range" in error


def test_cli_verifies_programs(tmp_path, capsys, monkeypatch):
    from xla_spmd.errors import VerifyError

    def reject(module):
        raise VerifyError("e/x: broken")
    monkeypatch.setattr("xla_spmd.ir.verify", reject)
    path = tmp_path / "p.hlo"
    path.write_text(BF16_PROGRAM)
    assert main(["convert", str(path), str(tmp_path / "out.hlo")]) == 2
    assert f"{path}: invalid program: e/x: broken" in capsys.readouterr().err


def test_parse_error_names_file_line_and_column(tmp_path, capsys):
    path = tmp_path / "bad.hlo"
    path.write_text(BF16_PROGRAM.replace("multiply(%x, %b)", "multiplie(%x, %b)"))
    assert main(["convert", str(path), str(tmp_path / "out.hlo")]) == 2
    error = capsys.readouterr().err
    assert f"{path}:7:16: unknown opcode 'multiplie'" in error and "Traceback" not in error


def test_convert_round_trips(tmp_path):
    source = DATA / "sharded_mlp_megatron_2x4" / "sharded_mlp_megatron_2x4.optimized.hlo"
    first, second = tmp_path / "a.hlo", tmp_path / "b.hlo"
    assert main(["convert", str(source), str(first)]) == 0
    assert main(["convert", str(first), str(second)]) == 0
    assert first.read_text() == second.read_text()
    assert first.read_text().strip() == source.read_text().strip()


def test_convert_hlo_to_mlir_keeps_shardings_and_values(tmp_path):
    from xla_spmd.backends.reference import evaluate, leaves
    from xla_spmd.stablehlo import import_stablehlo

    case = DATA / "sharded_mlp_megatron_2x4"
    mlir = tmp_path / "step.mlir"
    assert main(["convert", str(case / "sharded_mlp_megatron_2x4.hlo"), str(mlir)]) == 0
    text = mlir.read_text()
    assert 'sdy.mesh @mesh = <["data"=2, "model"=4]>' in text
    assert '{sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}' in text
    module = import_stablehlo(text)
    with np.load(case / "sharded_mlp_megatron_2x4.npz") as data:
        args = [data[f"arg{i}"] for i in range(6)]
        want = [data[f"out{i}"] for i in range(5)]
    for got, expected in zip(leaves(evaluate(module, args)), want):
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("case, devices", [("sharded_mlp_megatron_2x4", 8),
                                           ("sharded_transformer_dp8", 8),
                                           ("mlp_train_step", 4)])
def test_run_on_devices_matches_xla(case, devices, tmp_path):
    out = tmp_path / "out.npz"
    folder = DATA / case
    assert main(["run", str(folder / f"{case}.hlo"), "--inputs", str(folder / f"{case}.npz"),
                 "--devices", str(devices), "--output", str(out)]) == 0
    with np.load(out) as got, np.load(folder / f"{case}.npz") as want:
        for key in got.files:
            np.testing.assert_allclose(got[key], want[key], rtol=2e-5, atol=2e-6)


def test_run_refuses_a_mesh_of_another_size(tmp_path, capsys):
    folder = DATA / "sharded_mlp_megatron_2x4"
    assert main(["run", str(folder / "sharded_mlp_megatron_2x4.hlo"), "--inputs",
                 str(folder / "sharded_mlp_megatron_2x4.npz"), "--devices", "4"]) == 2
    assert "mesh has 8 devices, this job has 4" in capsys.readouterr().err


EXPLAIN_MLIR = """module @jit_f {
  sdy.mesh @mesh = <["x"=4]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                         %arg1: tensor<8x4xf32>) -> (tensor<8x4xf32>) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x4xf32>
    %sq = call @square(%0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %sq : tensor<8x4xf32>
  }
  func.func private @square(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = stablehlo.multiply %x, %x : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
"""


def test_explain_on_mlir_names_the_mlir_values(tmp_path, capsys):
    """`propagate --explain` on a .mlir program names values as the file does (issue 16)."""
    path = tmp_path / "f.mlir"
    path.write_text(EXPLAIN_MLIR)
    assert main(["propagate", str(path), "--explain"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("// ")]
    assert notes[0] == "// Where each propagated axis came from (MLIR value: dim axis: chain):"
    assert '// %0: dim 0 "x": from %arg0 (user sharding) -> %0 (add)' in notes
    assert any(line.startswith("// %arg1: dim 0") for line in notes)
    assert any(line.startswith("// %0 in @square: dim 0") for line in notes), notes
