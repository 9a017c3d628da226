"""`xla-spmd interpret --print-results`, as ``stablehlo-translate --interpret``: main's results
printed, --args, --print-dense, --split-input-file, and clear errors for bad input."""

import textwrap

import pytest

from xla_spmd.cli import main
from xla_spmd.stablehlo.interpreter import parse_arguments

PROGRAM = textwrap.dedent("""\
    func.func @main(%a: tensor<2xi32>, %b: tensor<2x1xf32>) -> (tensor<2xi32>, tensor<2x1xf32>) {
      %0 = stablehlo.subtract %a, %a : tensor<2xi32>
      %1 = stablehlo.add %0, %a : tensor<2xi32>
      %2 = stablehlo.negate %b : tensor<2x1xf32>
      func.return %1, %2 : tensor<2xi32>, tensor<2x1xf32>
    }
    """)
ARGS = "--args=[dense<[5, -6]> : tensor<2xi32>, dense<[[0.5], [2.0]]> : tensor<2x1xf32>]"


def run(capsys, tmp_path, text, *options):
    path = tmp_path / "program.mlir"
    path.write_text(text)
    code = main(["interpret", str(path), *options])
    out, err = capsys.readouterr()
    return code, out, err


def test_results_print_with_args(capsys, tmp_path):
    code, out, err = run(capsys, tmp_path, PROGRAM, ARGS)
    assert (code, err) == (0, "")
    assert out == ("tensor<2xi32> {\n  [5, -6]\n}\n"
                   "tensor<2x1xf32> {\n  [\n    [-5.000000e-01],\n    [-2.000000e+00]\n  ]\n}\n")


def test_results_print_dense(capsys, tmp_path):
    code, out, _ = run(capsys, tmp_path, PROGRAM, ARGS, "--interpreter-print-dense")
    assert code == 0
    assert out == ("dense<[5, -6]> : tensor<2xi32>\n"
                   "dense<[[-5.000000e-01], [-2.000000e+00]]> : tensor<2x1xf32>\n")


@pytest.mark.parametrize("args,message", [
    ("not_array", "--args: expectected array attribute string for args, i.e. "
                  "--args=[dense<1> : tensor<2xi32>, ...]; got 'not_array'"),
    ("[dense<1> : tensor<2xi32>", "expectected array attribute string for args"),
    ("[dense<1> : tensor<2xi32>] extra", "expected the end of the array but found"),
    ("[4.0 : f32]", "--args: expected dense elements attribute for args elements, i.e. "
                    "--args=[dense<1> : tensor<2xi32>, ...]; argument 0 is 4.0"),
    ("[dense<1>]", "argument 0 is dense<1> without a type"),
    ("[dense<[1, 2, 3]> : tensor<2xi32>]", "--args:1:8: "),
    ("[dense<1> : tensor<2xi32>]", "program.mlir:1: @main: incorrect number of arguments "
                                   "specified, provided 1 inputs but function expected 2"),
    ("[dense<1> : tensor<2xi32>, dense<1> : tensor<2x1xf64>]",
     "program.mlir:1: @main: invalid input argument type at index 1, input type was "
     "tensor<2x1xf64> but entry function expected tensor<2x1xf32>"),
])
def test_bad_args_are_clear_errors(capsys, tmp_path, args, message):
    code, out, err = run(capsys, tmp_path, PROGRAM, f"--args={args}")
    assert code == 2 and out == ""
    assert err.startswith("xla-spmd interpret: error: ") and message in err
    assert "Traceback" not in err


def test_missing_arguments_say_how_to_give_them(capsys, tmp_path):
    code, _, err = run(capsys, tmp_path, PROGRAM, "--print-results")
    assert code == 2
    assert "provided 0 inputs but function expected 2 (give them with --args)" in err


def test_entry_is_main_or_the_only_function(capsys, tmp_path):
    two = ("func.func @f() -> tensor<i32> {\n  %0 = stablehlo.constant dense<1> : tensor<i32>\n"
           "  func.return %0 : tensor<i32>\n}\n")
    code, out, _ = run(capsys, tmp_path, two, "--print-results")
    assert (code, out) == (0, "tensor<i32> {1}\n")
    code, _, err = run(capsys, tmp_path, two + two.replace("@f", "@g"), "--print-results")
    assert code == 2 and "module must have entry func with name main (it has @f, @g)" in err


def test_split_input_file_runs_every_case_and_reports_failures(capsys, tmp_path):
    good = ("func.func @main() -> tensor<ui8> {\n"
            "  %0 = stablehlo.constant dense<9> : tensor<ui8>\n"
            "  func.return %0 : tensor<ui8>\n}\n")
    failing = ("func.func @main() {\n"
               "  %0 = stablehlo.constant dense<1> : tensor<i32>\n"
               "  check.expect_eq_const %0, dense<2> : tensor<i32>\n"
               "  func.return\n}\n")
    text = good + "// -----\n" + failing + "// -----\n" + good
    code, out, err = run(capsys, tmp_path, text, "--split-input-file")
    assert code == 2
    assert out == "tensor<ui8> {9}\n\n\ntensor<ui8> {9}\n"  # an empty line between cases
    assert "program.mlir:6: @main: check.expect_eq_const failed" in err
    code, _, err = run(capsys, tmp_path, text, "--print-results")  # one module: two @main
    assert code == 2 and "program.mlir:6: redefinition of symbol @main" in err


def test_parse_arguments_values():
    first, second = parse_arguments("[dense<[1, 2]> : tensor<2xui8>, dense<true> : tensor<i1>]")
    assert first.value.tolist() == [1, 2] and str(first.shape) == "u8[2]"
    assert second.value.tolist() is True and str(second.shape) == "pred[]"
    assert parse_arguments("[]") == []
