# ruff: noqa: E501  (MLIR lines are as long as Shardy writes them)
"""Shardy-style global->local programs: each global function (with ``sdy`` shardings and
explicit ``sdy`` collectives) is partitioned, run per device with ``interpreter.run_parallel``
and each device's result compared with its slice of the global evaluator's result (or with
hand-computed values where Shardy's collectives see per-device data the global view lacks)."""

import numpy as np
from shardy_exec import run_shardy_executable_test  # tests/partition is on sys.path

from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import Module
from xla_spmd.stablehlo.importer import ModuleImporter
from xla_spmd.stablehlo.syntax import parse_text


def _type(array: np.ndarray) -> str:
    element = {"int32": "i32", "float32": "f32"}[array.dtype.name]
    return f"tensor<{'x'.join(map(str, array.shape))}x{element}>"


def _dense(array: np.ndarray) -> str:
    return f"stablehlo.constant dense<{array.tolist()}> : {_type(array)}"


def _run(part1: str, function: str, per_device_args, expected) -> None:
    """Run `function`'s local program on len(expected) devices; device d gets
    per_device_args[d] and must return expected[d]."""
    lines = ["func.func @main() {"]
    operands = []
    for d, args in enumerate(per_device_args):
        for k, arg in enumerate(args):
            lines.append(f"  %a{d}_{k} = {_dense(arg)}")
            operands.append((f"%a{d}_{k}", _type(arg)))
    count = len(expected)
    programs = ", ".join([f"@{function}"] * count)
    result_types = ", ".join(_type(e) for e in expected)
    lines.append(f"  %r:{count} = \"interpreter.run_parallel\"("
                 f"{', '.join(o for o, _ in operands)}) {{programs = [[{programs}]]}} : "
                 f"({', '.join(t for _, t in operands)}) -> ({result_types})")
    for d, want in enumerate(expected):
        lines.append(f"  %e{d} = {_dense(want)}")
        lines.append(f"  \"check.expect_eq\"(%r#{d}, %e{d}) : ({_type(want)}, {_type(want)}) "
                     "-> ()")
    lines += ["  return", "}"]
    text = f"//--- part1.mlir\n{part1}\n//--- part2.mlir\n" + "\n".join(lines)
    report = run_shardy_executable_test(text, function)
    assert report.ok and report.results[0].checks == count, str(report)


def _global(part1: str, function: str, args):
    tree = parse_text(part1)
    importer = ModuleImporter(tree, "part1.mlir")
    module = Module.from_entry("m", importer.function(function), importer.header())
    return np.asarray(evaluate(module, args))


TWO_MESHES = """
sdy.mesh @small = <["x"=2]>
sdy.mesh @big = <["x"=2, "y"=4]>
sdy.mesh @renamed = <["x"=2, "y"=4]>

func.func @mix(
  %arg0: tensor<8x8xi32> {sdy.sharding = #sdy.sharding<@small, [{"x"}, {}]>})
  -> (tensor<8x8xi32> {sdy.sharding = #sdy.sharding<@renamed, [{}, {"y"}]>}) {
  %0 = stablehlo.multiply %arg0, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@big, [{"x"}, {"y"}]>]>} : tensor<8x8xi32>
  %1 = sdy.all_gather [{"x"}, {}] %0 out_sharding=<@renamed, [{}, {"y"}]> : tensor<8x8xi32>
  return %1 : tensor<8x8xi32>
}
"""


def test_meshes_that_differ_in_name_or_use_a_subset_of_the_axes():
    x = np.arange(64, dtype=np.int32).reshape(8, 8) - 20
    whole = _global(TWO_MESHES, "mix", [x])
    np.testing.assert_array_equal(whole, x * x)
    # device d = 4 * x + y holds rows of x-shard d // 4; the result's columns of y-shard d % 4.
    _run(TWO_MESHES, "mix", [[x[4 * (d // 4):4 * (d // 4) + 4]] for d in range(8)],
         [whole[:, 2 * (d % 4):2 * (d % 4) + 2] for d in range(8)])


ALL_REDUCE = """
sdy.mesh @mesh = <["a"=2, "b"=2]>

func.func @sum_a(%arg0: tensor<3xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>})
  -> (tensor<3xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
  %0 = sdy.all_reduce {"a"} %arg0 out_sharding=<@mesh, [{}]> : tensor<3xi32>
  return %0 : tensor<3xi32>
}

func.func @max_all(%arg0: tensor<3xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>})
  -> (tensor<3xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
  %0 = sdy.all_reduce max {"a", "b"} %arg0 out_sharding=<@mesh, [{}]> : tensor<3xi32>
  return %0 : tensor<3xi32>
}
"""


def test_sdy_all_reduce_combines_what_each_device_holds():
    values = [np.array([1, -5, 7], np.int32) * (10 ** d) for d in range(4)]
    # Over "a": devices {0, 2} and {1, 3} (device = 2 * a + b).
    sums = [values[0] + values[2], values[1] + values[3]]
    _run(ALL_REDUCE, "sum_a", [[v] for v in values], [sums[d % 2] for d in range(4)])
    _run(ALL_REDUCE, "max_all", [[v] for v in values],
         [np.array([1000, -5, 7000], np.int32)] * 4)


CONTRACTING = """
sdy.mesh @mesh = <["x"=2]>

func.func @dot(
  %arg0: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>},
  %arg1: tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
  -> (tensor<2x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %1 = sdy.all_reduce {"x"} %0 out_sharding=<@mesh, [{}, {}]> : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
"""


def test_a_dot_over_a_sharded_contracting_dim_then_sdy_all_reduce():
    a = np.arange(8, dtype=np.float32).reshape(2, 4) - 3
    b = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    whole = _global(CONTRACTING, "dot", [a, b])
    np.testing.assert_allclose(whole, a @ b)
    _run(CONTRACTING, "dot", [[a[:, 2 * d:2 * d + 2], b[2 * d:2 * d + 2]] for d in range(2)],
         [whole, whole])


PERMUTE = """
sdy.mesh @ordered = <["x"=4]>
sdy.mesh @shuffled = <["x"=4], device_ids=[2, 0, 3, 1]>

func.func @move(%arg0: tensor<8xi32> {sdy.sharding = #sdy.sharding<@ordered, [{"x"}]>})
  -> (tensor<8xi32> {sdy.sharding = #sdy.sharding<@shuffled, [{"x"}]>}) {
  %0 = sdy.collective_permute %arg0 out_sharding=<@shuffled, [{"x"}]> : tensor<8xi32>
  return %0 : tensor<8xi32>
}
"""


def test_collective_permute_between_device_orders():
    x = np.arange(8, dtype=np.int32) * 3
    shard = {device: i for i, device in enumerate([2, 0, 3, 1])}  # @shuffled: device -> shard
    _run(PERMUTE, "move", [[x[2 * d:2 * d + 2]] for d in range(4)],
         [x[2 * shard[d]:2 * shard[d] + 2] for d in range(4)])


MANUAL = """
sdy.mesh @mesh = <["x"=2]>

func.func @local_sum(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>})
  -> (tensor<2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>]
      out_shardings=[<@mesh, [{}]>] manual_axes={"x"} (%arg1: tensor<2xf32>) {
    %1 = "stablehlo.all_reduce"(%arg1) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %2 = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>,
        use_global_device_ids} : (tensor<2xf32>) -> tensor<2xf32>
    %3 = "stablehlo.all_reduce"(%1) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %4 = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %4 : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>,
        use_global_device_ids} : (tensor<2xf32>) -> tensor<2xf32>
    sdy.return %3 : tensor<2xf32>
  } : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""


def test_collectives_inside_a_manual_computation_body():
    x = np.array([1.5, -2, 4, 8], np.float32)
    twice = 2 * (x[:2] + x[2:])  # summed over x, then the sum summed again
    _run(MANUAL, "local_sum", [[x[:2]], [x[2:]]], [twice, twice])


CONSTANT = """
sdy.mesh @mesh = <["x"=2]>

func.func @table() -> (tensor<4x2xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = sdy.constant {sdy.sharding = #sdy.sharding_per_value<[#sdy.sharding<@mesh, [{"x"}, {}]>]>} dense<[[1, 2], [3, 4], [5, 6], [7, 8]]> : tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
}
"""


def test_sdy_constant_with_its_sharding_before_the_value():
    whole = np.arange(1, 9, dtype=np.int32).reshape(4, 2)
    _run(CONSTANT, "table", [[], []], [whole[:2], whole[2:]])


REDUCE_SCATTER = """
sdy.mesh @mesh = <["x"=2, "y"=2]>

func.func @scatter_sums(%arg0: tensor<4x2xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})
  -> (tensor<4x2xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = sdy.reduce_scatter [{"x"}, {}] %arg0 out_sharding=<@mesh, [{"x"}, {}]> : tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
}
"""


def test_sdy_reduce_scatter_sums_what_each_device_holds():
    values = [np.arange(8, dtype=np.int32).reshape(4, 2) * (10 ** d) for d in range(4)]
    # Over "x": devices {0, 2} and {1, 3} (device = 2 * x + y); x-shard i keeps rows 2i..2i+1.
    sums = {0: values[0] + values[2], 1: values[1] + values[3]}
    _run(REDUCE_SCATTER, "scatter_sums", [[v] for v in values],
         [sums[d % 2][2 * (d // 2):2 * (d // 2) + 2] for d in range(4)])


CHAINED_SCATTERS = """
sdy.mesh @mesh = <["x"=2, "y"=2]>

func.func @two_steps(%arg0: tensor<4x4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})
  -> (tensor<4x4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
  %0 = sdy.reduce_scatter [{"x"}, {}] %arg0 out_sharding=<@mesh, [{"x"}, {}]> : tensor<4x4xi32>
  %1 = sdy.reduce_scatter [{}, {"y"}] %0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<4x4xi32>
  return %1 : tensor<4x4xi32>
}
"""


def test_chained_sdy_reduce_scatters_sum_over_both_axes():
    values = [np.arange(16, dtype=np.int32).reshape(4, 4) * (16 ** d) for d in range(4)]
    total = sum(values)
    _run(CHAINED_SCATTERS, "two_steps", [[v] for v in values],
         [total[2 * (d // 2):2 * (d // 2) + 2, 2 * (d % 2):2 * (d % 2) + 2] for d in range(4)])
