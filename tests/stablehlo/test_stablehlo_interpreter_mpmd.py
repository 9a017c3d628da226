"""run_parallel with a program per device, probes, and the export forms the interpreter
files rely on: the tuple all-to-all, composites and jax.result_info through HLO text."""

import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate_spmd
from xla_spmd.backends.reference.spmd import evaluate_mpmd
from xla_spmd.errors import EvaluationError, ParseError
from xla_spmd.ir.hlo_parser import parse_hlo
from xla_spmd.ir.hlo_printer import print_module
from xla_spmd.stablehlo import export_stablehlo, import_stablehlo
from xla_spmd.stablehlo.interpreter import run_text

ALL_REDUCE_AND_GATHER = """
func.func @reduce(%x : tensor<2xi64>) -> tensor<2xi64> {
  %0 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
func.func @gather(%x : tensor<2xi64>) -> tensor<4xi64> {
  %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
"""


def test_mpmd_failure_reports_values():
    text = ALL_REDUCE_AND_GATHER.split("func.func @gather")[0] + """
func.func @main() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r:2 = "interpreter.run_parallel"(%a, %a) {programs = [[@reduce], [@reduce]]}
      : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  check.expect_eq_const %r#1, dense<[2, 5]> : tensor<2xi64>
  func.return
}"""
    (result,) = run_text(text, "mpmd.mlir").results
    assert result.function == "main" and result.status == "FAIL"
    assert "got [2, 4], expected [2, 5]" in result.messages[0]


def test_mpmd_divergent_collectives_are_an_error():
    text = ALL_REDUCE_AND_GATHER + """
func.func @main() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r:2 = "interpreter.run_parallel"(%a, %a) {programs = [[@reduce], [@gather]]}
      : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<4xi64>)
  func.return
}"""
    (result,) = run_text(text).results
    assert result.status == "ERROR"
    assert "different collectives" in result.messages[0]


def test_run_parallel_rejects_ragged_grids():
    text = ALL_REDUCE_AND_GATHER + """
func.func @main() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r:3 = "interpreter.run_parallel"(%a, %a, %a) {programs = [[@reduce, @reduce], [@reduce]]}
      : (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>)
      -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>)
  func.return
}"""
    (result,) = run_text(text).results
    assert result.status == "ERROR" and "rectangular" in result.messages[0]


def test_serialized_eq_without_probe_is_skipped_with_reason():
    (result,) = run_text("""func.func @t() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  check.expect_serialized_eq %0, probe_id = "elsewhere" : tensor<2xi64>
  func.return
}""").results
    assert result.status == "SKIP" and "'elsewhere'" in result.messages[0]


def test_serialized_eq_compares_with_the_probe():
    (result,) = run_text("""func.func @t() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %1 = interpreter.probe %0, probe_id = "p" : tensor<2xi64>
  %2 = stablehlo.constant dense<[1, 3]> : tensor<2xi64>
  check.expect_serialized_eq %2, probe_id = "p" : tensor<2xi64>
  func.return
}""").results
    assert result.status == "FAIL" and "got [1, 2], expected [1, 3]" in result.messages[0]


def test_evaluate_mpmd_checks_the_grid():
    module = import_stablehlo(ALL_REDUCE_AND_GATHER)
    with pytest.raises(EvaluationError, match="one program per device"):
        evaluate_mpmd([module.entry], [[np.zeros(2, np.int64)]], 2, 1)


TUPLE_ALL_TO_ALL = """HloModule m, num_partitions=2

ENTRY e {
  x = s32[2,3]{1,0} parameter(0)
  y = s32[2,3]{1,0} parameter(1)
  a2a = (s32[2,3]{1,0}, s32[2,3]{1,0}) all-to-all(x, y), channel_id=1, replica_groups={{0,1}}
  g0 = s32[2,3]{1,0} get-tuple-element(a2a), index=0
  g1 = s32[2,3]{1,0} get-tuple-element(a2a), index=1
  ROOT t = (s32[2,3]{1,0}, s32[2,3]{1,0}) tuple(g0, g1)
}
"""


def test_tuple_all_to_all_exports_as_stacked_all_to_all():
    module = parse_hlo(TUPLE_ALL_TO_ALL)
    text = export_stablehlo(module)
    assert "stablehlo.all_to_all" in text and "split_count = 2" in text
    exported = import_stablehlo(text)
    args = [[np.arange(6, dtype=np.int32).reshape(2, 3) + 10 * (2 * d + j) for j in range(2)]
            for d in range(2)]
    expected = evaluate_spmd(module, args, 2)
    actual = evaluate_spmd(exported, args, 2)
    np.testing.assert_array_equal(expected[0][1], args[1][0])  # rank 1's operand 0
    for want, got in zip(expected, actual):
        for w, g in zip(want, got):
            np.testing.assert_array_equal(w, g)


RESULT_INFO = """module @jit_f {
  func.func public @main(%arg0: tensor<2xf32>)
      -> (tensor<2xf32> {jax.result_info = "[0]"}, tensor<2xf32> {jax.result_info = "[1]"}) {
    %0 = func.call @single(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
    %1 = func.call @identity(%0) : (tensor<2xf32>) -> tensor<2xf32>
    return %1, %arg0 : tensor<2xf32>, tensor<2xf32>
  }
  func.func private @single(%arg0: tensor<2xf32>) -> (tensor<2xf32> {jax.result_info = "used"}) {
    %0 = stablehlo.negate %arg0 : tensor<2xf32>
    %1 = stablehlo.add %0, %0 : tensor<2xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @identity(%arg0: tensor<2xf32>) -> (tensor<2xf32> {jax.result_info = "arg"}) {
    return %arg0 : tensor<2xf32>
  }
}"""


def test_result_info_survives_hlo_text_and_export():
    module = import_stablehlo(RESULT_INFO)
    assert ("jax.result_info.1", "[1]") in module.entry.root.frontend_attributes
    through_hlo = parse_hlo(print_module(module))
    assert through_hlo == module
    text = export_stablehlo(through_hlo)
    assert 'jax.result_info = "[0]"' in text and 'jax.result_info = "[1]"' in text
    assert 'jax.result_info = "used"' in text and 'jax.result_info = "arg"' in text
    assert "mhlo.frontend_attributes" not in text
    assert import_stablehlo(text) == module


COMPOSITE = """module @m {
  func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.composite "ns.twice" %x {composite_attributes = {k = 2 : i64},
        decomposition = @twice, version = 1 : i32} : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %x, %x : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}"""


def test_composite_is_a_composite_call_in_hlo():
    module = import_stablehlo(COMPOSITE)
    hlo = print_module(module)
    assert "is_composite=true" in hlo and 'composite.name="ns.twice"' in hlo
    assert "composite.attributes={k = 2 : i64}" in hlo and 'composite.version="1"' in hlo
    assert parse_hlo(hlo) == module
    text = export_stablehlo(module)
    assert 'stablehlo.composite "ns.twice"' in text and "decomposition = @twice" in text
    assert import_stablehlo(text) == module


def test_convert_complex_to_real_takes_the_real_part_first():
    module = import_stablehlo("""func.func @main(%x: tensor<2xcomplex<f32>>) -> tensor<2xi32> {
  %0 = stablehlo.convert %x : (tensor<2xcomplex<f32>>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}""")
    assert [i.opcode for i in module.entry.instructions] == ["parameter", "real", "convert"]


LONELY_RECV = """
module @lonely {
  func.func @wait(%t : !stablehlo.token) -> (tensor<2xi32>, !stablehlo.token) {
    %r:2 = "stablehlo.recv"(%t) {
      channel_handle = #stablehlo.channel_handle<handle = 5, type = 3>, is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
    return %r#0, %r#1 : tensor<2xi32>, !stablehlo.token
  }
  func.func @main() {
    %t = stablehlo.after_all : !stablehlo.token
    %r:2 = "interpreter.run_parallel"(%t) {programs = [[@wait]]}
      : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
    func.return
  }
}
"""


def test_a_recv_nobody_sends_to_fails_naming_its_channel():
    from xla_spmd import config

    with config.override(collective_timeout=0.2):
        report = run_text(LONELY_RECV, "lonely.mlir")
    (result,) = report.results
    assert result.status == "ERROR"
    assert "nothing arrived on channel 5 within 0.2 s" in result.messages[0]


def _cross_replica_and_partition_gather(result_width: int) -> str:
    """Four devices (2 replicas x 2 partitions) all-gather with replica_groups [[0, 1]] and a
    channel: one group of every device. Device (r, p) holds [10r + p]."""
    return f"""
func.func @gather(%x : tensor<1xi64>) -> tensor<{result_width}xi64> {{
  %0 = "stablehlo.all_gather"(%x) {{all_gather_dim = 0 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle=1, type=0>
  }} : (tensor<1xi64>) -> tensor<{result_width}xi64>
  return %0 : tensor<{result_width}xi64>
}}
func.func @main() {{
  %d00 = stablehlo.constant dense<[0]> : tensor<1xi64>
  %d01 = stablehlo.constant dense<[1]> : tensor<1xi64>
  %d10 = stablehlo.constant dense<[10]> : tensor<1xi64>
  %d11 = stablehlo.constant dense<[11]> : tensor<1xi64>
  %r:4 = "interpreter.run_parallel"(%d00, %d01, %d10, %d11) {{
    programs = [[@gather, @gather], [@gather, @gather]]
  }} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) ->
       (tensor<{result_width}xi64>, tensor<{result_width}xi64>, tensor<{result_width}xi64>,
        tensor<{result_width}xi64>)
  check.expect_eq_const %r#0, dense<[0, 10, 1, 11]> : tensor<4xi64>
  check.expect_eq_const %r#3, dense<[0, 10, 1, 11]> : tensor<4xi64>
  func.return
}}"""


def test_cross_replica_and_partition_groups_are_partition_major():
    """StableHLO's cross_replica_and_partition group is ``[(r, p) for p for r in group]``
    (spec, 'cross_replica_and_partition'; StableHLO issue 1933): partition 0's replicas first,
    where XLA's HLO order would give [0, 1, 10, 11]. The group spans every partition, so the
    result is 4 wide though the listed group has 2 members."""
    (result,) = run_text(_cross_replica_and_partition_gather(4)).results
    assert result.status == "PASS", result.messages


def test_cross_replica_and_partition_result_width_is_checked():
    # Under run_parallel the device counts are known: the group has 4 members.
    (result,) = run_text(_cross_replica_and_partition_gather(3)).results
    assert result.status == "ERROR"
    assert "declared shape s64[3] differs from the inferred s64[4]" in result.messages[0]
    # Without them, the width must be the listed group size times some partition count.
    gather = _cross_replica_and_partition_gather(6).split("func.func @main")[0]
    assert import_stablehlo(gather).entry.root.shape.dims == (6,)
    with pytest.raises(ParseError, match="by the group size 2 times a partition count"):
        import_stablehlo(_cross_replica_and_partition_gather(3).split("func.func @main")[0])
