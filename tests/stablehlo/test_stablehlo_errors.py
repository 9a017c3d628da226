"""Malformed StableHLO: every error is a ParseError naming file:line:column, what was expected,
the source line and a caret; never a Python exception name."""

import re

import pytest

from xla_spmd.errors import ParseError
from xla_spmd.stablehlo import export_stablehlo, import_stablehlo
from xla_spmd.stablehlo.interpreter import run_text

PYTHON_NAMES = re.compile(r"\b(IndexError|KeyError|ValueError|OverflowError|TypeError|"
                          r"AttributeError|Traceback)\b")


def func(body: str, args: str = "", results: str = "tensor<2xi32>") -> str:
    return f"func.func @main({args}) -> {results} {{\n{body}\n}}\n"


def parse_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        import_stablehlo(text, "t.mlir")
    message = str(info.value)
    assert not PYTHON_NAMES.search(message), message
    assert info.value.source_line is not None, message  # the line, with a caret under it
    assert message.splitlines()[-1].strip() == "^"
    return info.value


def test_integer_out_of_range_points_at_the_value():
    error = parse_error(func("  %a = stablehlo.constant dense<[1, 300]> : tensor<2xi8>\n"
                             "  return %a : tensor<2xi8>", results="tensor<2xi8>"))
    assert (error.line, error.column) == (2, 37)
    assert "value 300 does not fit i8" in error.message


def test_unsigned_and_generic_form_literals_are_checked():
    error = parse_error(func('  %a = "stablehlo.constant"() <{value = dense<[-1, 2]> : '
                             "tensor<2xui8>}> : () -> tensor<2xui8>\n"
                             "  return %a : tensor<2xui8>", results="tensor<2xui8>"))
    assert (error.line, error.column) == (2, 48)
    assert "value -1 does not fit ui8" in error.message


@pytest.mark.parametrize("literal, column, expected", [
    ("[1, 2", 38, "dense literal ends early; expected ',' or ']'"),
    ("[1,2,3]", 33, "dense literal has 3 elements but tensor<2xi32> needs 2"),
    ("[1, x]", 37, "expected a number, true, false, '[' or ']' but found 'x]'"),
    ("[[1], [2, 3]]", 39, "ragged dense literal"),
    ("[1, 2]]", 39, "unexpected ']' after the end of the dense literal"),
])
def test_malformed_dense_literals(literal, column, expected):
    error = parse_error(func(f"  %a = stablehlo.constant dense<{literal}> : tensor<2xi32>\n"
                             "  return %a : tensor<2xi32>"))
    assert (error.line, error.column) == (2, column)
    assert expected in error.message


def test_unknown_comparison_direction_lists_the_valid_ones():
    error = parse_error(func(
        "  %a = stablehlo.compare FOO, %x, %x, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> "
        "tensor<2xi1>\n  return %a : tensor<2xi1>", "%x: tensor<2xi32>", "tensor<2xi1>"))
    assert (error.line, error.column) == (2, 8)
    assert "unknown comparison direction 'FOO'; expected one of EQ, NE, GE, GT, LE, LT" \
        in error.message


def test_call_of_unknown_function_has_a_position():
    error = parse_error(func("  %a = func.call @nope(%x) : (tensor<2xi32>) -> tensor<2xi32>\n"
                             "  return %a : tensor<2xi32>", "%x: tensor<2xi32>"))
    assert (error.file, error.line, error.column) == ("t.mlir", 2, 8)
    assert "call of unknown function @nope" in error.message


def test_result_type_must_match_the_signature():
    error = parse_error("func.func @main(%x: tensor<4xf32>) -> tensor<4xi32> {\n"
                        "  return %x : tensor<4xf32>\n}\n")
    assert (error.line, error.column) == (2, 3)
    assert "result 0 of @main has type tensor<4xf32> but the function declares " \
           "tensor<4xi32>" in error.message


def test_result_count_must_match_the_signature():
    error = parse_error("func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
                        "  return %x : tensor<4xf32>\n}\n")
    assert (error.line, error.column) == (2, 3)
    assert "returns 1 values but @main declares 2 results" in error.message


def test_value_defined_twice_is_an_error_at_the_second_definition():
    error = parse_error(func("  %a = stablehlo.negate %x : tensor<4xf32>\n"
                             "  %a = stablehlo.abs %x : tensor<4xf32>\n"
                             "  return %a : tensor<4xf32>", "%x: tensor<4xf32>", "tensor<4xf32>"))
    assert (error.line, error.column) == (3, 8)
    assert "value %a is defined twice (first defined on line 2)" in error.message


@pytest.mark.parametrize("op", [
    "%a = stablehlo.slice %x [0:x] : (tensor<2xi32>) -> tensor<1xi32>",
    '%a = "stablehlo.transpose"(%x) <{permutation = array<i64: 0, %zz>}> : '
    "(tensor<2xi32>) -> tensor<2xi32>",
    "%a = stablehlo.dot_general %x, %x, contracting_dims = [0] : "
    "(tensor<2xi32>, tensor<2xi32>) -> tensor<i32>",
    "%a = stablehlo.fft %x, type = BAD, length = [2] : (tensor<2xi32>) -> tensor<2xi32>",
])
def test_malformed_ops_never_leak_python_exceptions(op):
    error = parse_error(func(f"  {op}\n  return %a : tensor<2xi32>", "%x: tensor<2xi32>"))
    assert error.line == 2


def test_mesh_attributes_survive_import_and_export():
    text = ('module @m {\n  sdy.mesh @mesh = <["x"=2]> {stablehlo.mesh = {axes = '
            '[{name = "x", size = 2 : i64}]}}\n'
            "  func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
            "    return %x : tensor<2xf32>\n  }\n}\n")
    module = import_stablehlo(text)
    assert "xla.sdy.mesh_attributes={mesh = {stablehlo.mesh" in \
        module.header_value("frontend_attributes")
    exported = export_stablehlo(module)
    assert ('  sdy.mesh @mesh = <["x"=2]> {stablehlo.mesh = {axes = '
            '[{name = "x", size = 2 : i64}]}}\n') in exported
    assert import_stablehlo(exported) == module


def test_interpreter_names_cases_that_fail_to_parse_and_unknown_checks():
    report = run_text("func.func @fine() {\n  func.return\n}\n"
                      "// -----\n"
                      "func.func @broken() {\n  %d =\n}\n"
                      "// -----\n"
                      "func.func @unknown_check() {\n"
                      "  %c = stablehlo.constant dense<true> : tensor<i1>\n"
                      "  check.expect_true %c : tensor<i1>\n  func.return\n}\n", "t.mlir")
    broken, unknown = report.results[1], report.results[2]
    assert str(broken).startswith("ERROR case 2 @broken")
    assert broken.line == 5
    assert "t.mlir:7:1:" in broken.messages[0]
    assert unknown.status == "ERROR"
    assert "t.mlir:11:3:" in unknown.messages[0]
    assert "unknown check op 'check.expect_true'; expected one of check.expect_almost_eq" \
        in unknown.messages[0]


# Found by pyright: these raised AttributeError on None before naming the op.
def test_reduce_precision_format_must_be_e_m():
    error = parse_error(func(
        '  %r = "stablehlo.reduce_precision"(%x) {format = "bf16"} : '
        "(tensor<2xf32>) -> tensor<2xf32>\n  return %r : tensor<2xf32>",
        args="%x: tensor<2xf32>", results="tensor<2xf32>"))
    assert "format 'bf16' is not eNmM" in error.message


def test_dynamic_root_collective_broadcast_needs_replica_groups():
    error = parse_error(func(
        '  %r = "stablehlo.collective_broadcast"(%x, %root) {has_dynamic_root} : '
        "(tensor<2xf32>, tensor<i32>) -> tensor<2xf32>\n  return %r : tensor<2xf32>",
        args="%x: tensor<2xf32>, %root: tensor<i32>", results="tensor<2xf32>"))
    assert "has_dynamic_root needs replica_groups" in error.message


def test_collective_reduce_needs_replica_groups():
    error = parse_error(func(
        '  %r = "stablehlo.collective_reduce"(%x) ({\n'
        "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "    %s = stablehlo.add %a, %b : tensor<f32>\n"
        "    stablehlo.return %s : tensor<f32>\n"
        "  }) : (tensor<2xf32>) -> tensor<2xf32>\n  return %r : tensor<2xf32>",
        args="%x: tensor<2xf32>", results="tensor<2xf32>"))
    assert "needs replica_groups" in error.message
