"""The FileCheck subset (filecheck.py) and the RUN-line replay (run_lines.py) on our own files
in tests/data/stablehlo, including checks that must fail."""

from pathlib import Path

import pytest
from filecheck import FileCheckError, filecheck  # tests/stablehlo is on sys.path
from run_lines import has_filecheck, replay_file, replay_text

DATA = Path(__file__).resolve().parents[1] / "data" / "stablehlo"
RUN_FILES = [p for p in sorted(DATA.glob("*.mlir")) if has_filecheck(p.read_text())]


def fails(check: str, output: str, match: str, prefixes=("CHECK",)) -> None:
    with pytest.raises(FileCheckError, match=match):
        filecheck(check, output, prefixes)


def test_check_finds_patterns_in_order():
    filecheck("// CHECK: one\n// CHECK: three", "one\ntwo\nthree\n")
    fails("// CHECK: three\n// CHECK: one", "one\ntwo\nthree\n", "expected string not found")


def test_next_same_and_empty():
    output = "a b\nc\n\nd\n"
    filecheck("CHECK: a\nCHECK-SAME: b\nCHECK-NEXT: c\nCHECK-EMPTY:\nCHECK-NEXT: d", output)
    fails("CHECK: a\nCHECK-NEXT: d", output, "not on the line after")
    fails("CHECK: a\nCHECK-NEXT: b", output, "on the same line")
    fails("CHECK: a\nCHECK-SAME: c", output, "not on the same line")
    fails("CHECK: c\nCHECK-NEXT: d", output, "not on the line after")
    fails("CHECK: a\nCHECK-EMPTY:", output, "next line is not empty")


def test_not_between_matches_and_at_the_end():
    output = "begin\nerror\nend\n"
    filecheck("CHECK: begin\nCHECK-NOT: warning\nCHECK: end", output)
    fails("CHECK: begin\nCHECK-NOT: error\nCHECK: end", output, "excluded string found")
    fails("CHECK: end\nCHECK-NOT: {{.}}", output + "more\n", "excluded string found")
    filecheck("CHECK: end\nCHECK-NOT: error", output)


def test_dag_matches_in_any_order_without_overlap():
    output = "x = 2\ny = 1\nz\n"
    filecheck("CHECK-DAG: y = 1\nCHECK-DAG: x = 2\nCHECK: z", output)
    fails("CHECK-DAG: = 1\nCHECK-DAG: y = 1", output, "expected string not found")


def test_regex_literal_and_variables():
    filecheck("CHECK: value {{[0-9]+}}", "value 42\n")
    fails("CHECK: value {{[0-9]+}}", "value x\n", "not found")
    filecheck("CHECK{LITERAL}: [[1, 2]] {{x}}", "[[1, 2]] {{x}}\n")
    fails("CHECK: [[1, 2]]", "[[1, 2]]\n", "unsupported variable")
    filecheck("CHECK: %[[A:[0-9]+]] = f\nCHECK: use %[[A]]", "%7 = f\nuse %7\n")
    fails("CHECK: %[[A:[0-9]+]] = f\nCHECK: use %[[A]]", "%7 = f\nuse %8\n", "not found")


def test_extra_brackets_before_a_variable_are_literal():
    # LLVM FileCheck: '['s before "[[" match themselves, so [[[V:.*]]] is "[" [[V:.*]] "]".
    check = "CHECK: <[[[S:.*]]]>\nCHECK-NEXT: <[[[S]]]>"
    filecheck(check, "<[{a}, {b}]>\n<[{a}, {b}]>\n")
    fails(check, "<[{a}, {b}]>\n<[{a}, {c}]>\n", "not found")
    fails(check, "<{a}>\n<{a}>\n", "not found")


def test_whitespace_runs_match_any_run():
    filecheck("CHECK:   a   b  ", "xx a b\n")
    filecheck("CHECK: a b", "a\t  b\n")
    fails("CHECK: a b", "ab\n", "not found")


def test_prefixes_select_their_lines_only():
    check = "// CHECK: one\n// OTHER: two\n// CHECK-OTHER: three\n// RUN: x | FileCheck CHECK: no"
    filecheck(check, "one\n")
    filecheck(check, "two\n", ("OTHER",))
    filecheck(check, "one two\n", ("CHECK", "OTHER"))
    fails(check, "one\n", "expected string not found", ("OTHER",))
    fails("// nothing here", "one\n", "no check strings found")


def test_failure_names_the_check_line():
    with pytest.raises(FileCheckError) as error:
        filecheck("\n\n// CHECK: missing", "output\n", check_name="f.mlir")
    assert str(error.value).startswith("f.mlir:3: CHECK: expected string not found")


@pytest.mark.parametrize("path", RUN_FILES, ids=lambda p: p.name)
def test_our_run_lines_pass(path):
    results = replay_file(str(path))
    assert results
    assert [(r.line, r.status) for r in results] == [(r.line, "PASS") for r in results], \
        [r.messages for r in results]


def test_a_wrong_expectation_fails():
    text = (DATA / "printed_results.mlir").read_text()
    plain, dense = "// CHECK-NEXT:   [65535, 0, 7]", "// DENSE:      dense<[65535, 0, 7]>"
    assert plain in text and dense in text
    results = replay_text(text.replace(plain, plain.replace("7]", "8]")))
    assert [r.status for r in results] == ["FAIL", "PASS"]
    assert "printed_results.mlir" not in results[0].messages[0]  # a temporary copy
    assert ":7: CHECK-NEXT: expected string not found" in results[0].messages[0]
    results = replay_text(text.replace(dense, dense.replace("7]", "8]")))
    assert [r.status for r in results] == ["PASS", "FAIL"]
    # Order matters: the bool scalar is printed after the ui16 vector, not before.
    moved = text.replace("  // CHECK-NEXT: tensor<i1> {false}\n", "").replace(
        "  // CHECK:      tensor<3xui16> {", "  // CHECK: tensor<i1> {false}\n"
        "  // CHECK:      tensor<3xui16> {")
    assert [r.status for r in replay_text(moved)][0] == "FAIL"


def test_exit_status_and_unsupported_commands():
    program = ("func.func @main() -> tensor<i32> {\n"
               "  %0 = stablehlo.constant dense<1> : tensor<i32>\n"
               "  func.return %0 : tensor<i32>\n}\n// CHECK: tensor<i32> {1}\n")
    assert [r.status for r in replay_text(
        "// RUN: not stablehlo-translate --interpret %s | FileCheck %s\n" + program)] == ["FAIL"]
    assert [r.status for r in replay_text(
        "// RUN: stablehlo-opt %s | FileCheck %s\n" + program)] == ["UNSUPPORTED"]
