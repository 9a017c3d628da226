"""The interpreter-convention files of tests/data/stablehlo: every case passes and round trips."""

from pathlib import Path

import pytest
from run_lines import has_filecheck  # tests/stablehlo is on sys.path

from xla_spmd.cli import main
from xla_spmd.stablehlo import export_stablehlo, import_stablehlo
from xla_spmd.stablehlo.interpreter import _SPLIT, _import, run_interpreter_file, run_text
from xla_spmd.stablehlo.syntax import parse_text

# Files whose RUN lines pipe into FileCheck are replayed line by line (test_run_lines.py).
FILES = [path for path in sorted((Path(__file__).resolve().parents[1] / "data" / "stablehlo")
                                 .glob("*.mlir")) if not has_filecheck(path.read_text())]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_case_passes(path):
    report = run_interpreter_file(str(path))
    assert report.results, "no test functions found"
    assert report.ok, str(report)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_case_round_trips(path):
    for chunk in _SPLIT.split(path.read_text()):
        if "func.func" not in chunk:
            continue
        tree = parse_text(chunk)
        for function in tree.functions:
            module = _import(tree, str(path), function.name)
            assert import_stablehlo(export_stablehlo(module)) == module, function.name


FAILING = """
func.func @wrong() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = stablehlo.add %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[2, 5]> : tensor<2xi32>
  func.return
}
// -----
func.func @broken() {
  %0 = stablehlo.frobnicate : tensor<2xi32>
  func.return
}
"""


def test_failures_are_reported_with_values():
    report = run_text(FAILING, "failing.mlir")
    assert not report.ok
    wrong, broken = report.results
    assert wrong.status == "FAIL" and "got [2, 4], expected [2, 5]" in wrong.messages[0]
    assert broken.status == "ERROR" and "stablehlo.frobnicate" in broken.messages[0]
    assert "failing.mlir:10:" in broken.messages[0]


def test_cli_interpret_exit_status(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text(FAILING)
    assert main(["interpret", str(bad)]) == 1
    assert "FAIL case 1 @wrong" in capsys.readouterr().out
    assert main(["interpret", str(FILES[0])]) == 0
