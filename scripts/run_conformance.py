"""Replay the anchors' own test files against xla-spmd and count what passes.

    python scripts/run_conformance.py --stablehlo DIR   # StableHLO's stablehlo/tests/interpret
    python scripts/run_conformance.py --shardy DIR  # Shardy: executable_convert_global_to_local
    python scripts/run_conformance.py --shardy-propagation DIR  # Shardy: propagation/test
    python scripts/run_conformance.py --xla-spmd FILE  # XLA: spmd/spmd_partitioner_test.cc

Each ``.mlir`` file of the StableHLO directory runs in our interpreter-convention runner
(`xla_spmd.stablehlo.interpreter`), except files whose ``// RUN:`` lines pipe into FileCheck:
those lines are replayed, one case each, with ``xla-spmd interpret --print-results`` for
``stablehlo-translate --interpret`` and our FileCheck subset (tests/stablehlo/run_lines.py,
filecheck.py). Each file of the Shardy directory is converted global->local
by our partitioner and run the way Shardy's ``run_sdy_interpreter_test.sh`` does
(tests/partition/shardy_exec.py). Prints one line per failing case and the totals.

Each file of the Shardy propagation directory (``shardy/dialect/sdy/transforms/propagation/test``)
is run as its RUN line says: split at ``// -----``, each part imported, propagated with the
strategy of the pass (``-sdy-basic-propagate`` basic, ``-sdy-aggressive-propagate``
aggressive, ``-sdy-op-priority-propagate`` op-priority, ``-sdy-user-priority-propagate`` and
``-sdy-propagation-pipeline`` user-priority, then every sharding closed;
``-sdy-populate-op-sharding-rules`` prints each op's rule instead) and exported; its CHECK
lines are matched against the output by our FileCheck subset (tests/stablehlo/filecheck.py),
one case per CHECK-LABEL: each label's block of the output, from its match to the next
label's, is checked on its own.
Prints the pass rate per file (``--failures`` also lists each failing case and why).

Each test of XLA's ``xla/service/spmd/spmd_partitioner_test.cc`` that partitions an HLO module
(``PartitionComputation(hlo_string, /*num_devices=*/N)``) is parsed, partitioned over its N
devices with the shardings as written, run on N in-process devices with seeded random inputs
and compared with the unpartitioned module, both on the compiled CPU backend (``--backend
reference``: on the reference evaluator) (tests/partition/xla_spmd_tests.py), each in a
process of its own (killed at ``--timeout``, its memory capped; a TOO_LARGE test's message
gives what it needs, from the CPU backend's liveness plans). Prints a table of the
outcomes (PASS, RANGE: random values compared by shape, type and range only, PARSE,
UNSUPPORTED, MISMATCH, CRASH, TIMEOUT, TOO_LARGE) with the most common reasons;
``--failures`` lists each test that is not a PASS, ``--only REGEX`` runs the tests whose name
matches.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "partition"))
sys.path.insert(0, str(ROOT / "tests" / "stablehlo"))

from filecheck import FileCheckError, filecheck, parse_directives  # noqa: E402
from run_lines import has_filecheck, replay_file  # noqa: E402
from shardy_exec import run_shardy_executable_test  # noqa: E402
from xla_spmd_tests import (  # noqa: E402
    BACKENDS,
    CLOCKS,
    MEMORY_LIMIT,
    extract_modules,
    run_isolated,
)

from xla_spmd.errors import XlaSpmdError  # noqa: E402
from xla_spmd.stablehlo.interpreter import (  # noqa: E402
    CaseResult,
    InterpreterReport,
    run_interpreter_file,
)


def _report(path: Path, shardy: bool):
    if shardy:
        return run_shardy_executable_test(path.read_text(), str(path))
    if has_filecheck(path.read_text()):
        statuses = {"PASS": "PASS", "FAIL": "FAIL", "UNSUPPORTED": "SKIP"}
        return InterpreterReport(str(path), [
            CaseResult(index, run.line, "RUN", statuses[run.status], messages=run.messages)
            for index, run in enumerate(replay_file(str(path)), start=1)])
    return run_interpreter_file(str(path))


def run(directory: str, shardy: bool) -> tuple[int, int, int, int]:
    files = sorted(Path(directory).glob("*.mlir"))
    passed_files = passed_cases = cases = 0
    for path in files:
        try:
            report = _report(path, shardy)
        except XlaSpmdError as error:
            print(f"ERROR {path.name}: {str(error).splitlines()[0]}")
            cases += 1
            continue
        cases += len(report.results)
        passed_cases += sum(r.status == "PASS" for r in report.results)
        if report.ok and report.results:
            passed_files += 1
        for result in report.failed:
            first = result.messages[0].splitlines()[0] if result.messages else ""
            print(f"{result.status} {path.name} case {result.case} @{result.function}: "
                  f"{first[:160]}")
    return passed_files, len(files), passed_cases, cases


PROPAGATION_PASSES = {
    "-sdy-basic-propagate": "basic",
    "-sdy-aggressive-propagate": "aggressive",
    "-sdy-op-priority-propagate": "op-priority",
    "-sdy-user-priority-propagate": "user-priority",
    "-sdy-propagation-pipeline": "pipeline",
    "-sdy-populate-op-sharding-rules": "rules",
}


def propagation_output(text: str) -> str:
    """What our propagation prints for a Shardy propagation lit test (all its parts)."""
    run_line = next((line for line in text.splitlines() if "RUN:" in line), "")
    mode = next((m for flag, m in PROPAGATION_PASSES.items()
                 if re.search(re.escape(flag) + r"(?![\w-])", run_line)), "user-priority")
    parts = text.split("\n// -----") if "-split-input-file" in run_line else [text]
    options = {"conservative": "conservative-propagation=true" in run_line,
               "dedup": "dedup-functions-fully=true" in run_line,
               "keep_rules": "keep-sharding-rules=true" in run_line}
    outputs = []
    for part in parts:
        output, ok = _run_part(part, mode, **options)
        if not ok and len(functions := _functions(part)) > 1:
            # One file of many independent functions (no split markers): an op we cannot
            # read costs its own function's case only.
            output = "".join(_run_part(f, mode, **options)[0] for f in functions)
        outputs.append(output)
    return "// -----\n".join(outputs)


def _run_part(text: str, mode: str, conservative: bool = False,
              dedup: bool = False, keep_rules: bool = False) -> tuple[str, bool]:
    from xla_spmd.cli import _stablehlo_with_meshes, rules_text
    from xla_spmd.propagation import conservative_propagation, propagate, propagation_pipeline
    from xla_spmd.stablehlo import import_stablehlo

    try:
        module = import_stablehlo(text)
        with conservative_propagation(conservative):
            if mode == "rules":
                return rules_text(module), True
            if mode == "pipeline":
                return _stablehlo_with_meshes(
                    propagation_pipeline(module, dedup_functions_fully=dedup)), True
            return _stablehlo_with_meshes(propagate(
                module, mode, unsharded_scalars=True, callee_results=False,
                keep_sharding_rules=keep_rules)), True
    except XlaSpmdError as error:
        return f"error: {str(error).splitlines()[0]}\n", False
    except Exception as error:  # noqa: BLE001 - a crash is a result to count, not to stop at
        return f"crash: {type(error).__name__}: {error}\n", False


def _functions(text: str) -> list[str]:
    """Each top-level ``func.func`` of `text` with the declarations before the first one."""
    starts = [m.start() for m in re.finditer(r"^func\.func", text, re.M)]
    if not starts:
        return [text]
    prefix = text[:starts[0]]
    return [prefix + text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def label_cases(test_text: str, output: str) -> list[tuple[str, str]]:
    """(label, '' or why it fails) per CHECK-LABEL of `test_text` against `output`: labels
    are found in order and cut the output into blocks (as FileCheck's labels do); each
    label's directives are checked against its block."""
    lines = test_text.splitlines()
    cases: list[list] = []
    for directive in parse_directives(test_text):
        if directive.kind == "-LABEL" or not cases:
            cases.append([])
        cases[-1].append(directive)
    starts: list[int | None] = []
    position = 0
    for directives in cases:
        first = directives[0]
        if first.kind != "-LABEL":
            starts.append(0)
            continue
        found = _label_line(lines[first.line - 1], output, position)
        starts.append(found)
        if found is not None:
            position = output.find("\n", found) + 1 or len(output)
    results = []
    for k, directives in enumerate(cases):
        label = directives[0].pattern if directives[0].kind == "-LABEL" else "<top>"
        if starts[k] is None:
            results.append((label, f"line {directives[0].line}: label not found"))
            continue
        end = next((s for s in starts[k + 1:] if s is not None), len(output))
        try:
            filecheck("\n".join(lines[d.line - 1] for d in directives),
                      output[starts[k]:end])
            results.append((label, ""))
        except FileCheckError as error:
            results.append((label, str(error).splitlines()[0]))
    return results


def _label_line(label_line: str, output: str, start: int) -> int | None:
    """The start of the first line of `output` from `start` on that the label matches (a
    label's block holds its whole line), or None."""
    line_start = start
    while line_start < len(output):
        line_end = output.find("\n", line_start)
        line_end = len(output) if line_end < 0 else line_end
        try:
            filecheck(label_line, output[line_start:line_end])
            return line_start
        except FileCheckError:
            line_start = line_end + 1
    return None


def run_propagation(directory: str, failures: bool) -> list[tuple[str, int, int]]:
    rows = []
    for path in sorted(Path(directory).glob("*.mlir")):
        text = path.read_text()
        cases = label_cases(text, propagation_output(text))
        rows.append((path.stem, sum(not why for _, why in cases), len(cases)))
        if failures:
            for label, why in cases:
                if why:
                    print(f"FAIL {path.name} {label}: {why[:200]}")
    return rows


def print_propagation_table(rows) -> None:
    print("| file | cases | pass |")
    print("|---|---|---|")
    for name, ok, total in rows:
        print(f"| {name} | {ok}/{total} | {100 * ok / max(total, 1):.0f}% |")
    ok = sum(r[1] for r in rows)
    total = sum(r[2] for r in rows)
    print(f"| **all** | {ok}/{total} | {100 * ok / max(total, 1):.0f}% |")


def run_xla_spmd(path: str, failures: bool, timeout: float, backend: str = "cpu",
                 only: str | None = None, clock: str = "cpu",
                 memory: int = MEMORY_LIMIT) -> list:
    """Every partitioning test of XLA's spmd_partitioner_test.cc at `path` (those whose name
    `only`, a regular expression, matches in full), run on `backend` (see the module
    docstring), each in a process capped at `memory` bytes; its results in file order."""
    results = []
    for case in extract_modules(Path(path).read_text()):
        if only is not None and not re.fullmatch(only, case.name):
            continue
        result = run_isolated(case, timeout=timeout, backend=backend, clock=clock,
                              memory=memory)
        results.append(result)
        if failures and result.status != "PASS":
            print(f"{result.status} {case.name} ({case.num_devices} devices): "
                  f"{result.message[:160]}", flush=True)
    return results


def print_xla_spmd_table(results, top: int = 12) -> None:
    statuses = Counter(r.status for r in results)
    total = len(results)
    print("| outcome | tests |")
    print("|---|---|")
    for status, count in statuses.most_common():
        print(f"| {status} | {count} |")
    passed = statuses["PASS"]
    print(f"| **pass** | {passed}/{total} ({100 * passed / max(total, 1):.0f}%) |")
    if statuses["RANGE"]:
        agreed = passed + statuses["RANGE"]
        print(f"| **pass or RANGE** | {agreed}/{total} ({100 * agreed / max(total, 1):.0f}%) |")
    reasons = Counter((r.status, _reason(r.message)) for r in results
                      if r.status not in ("PASS", "RANGE"))
    print()
    print("| failure class | tests |")
    print("|---|---|")
    for (status, reason), count in reasons.most_common(top):
        print(f"| {status}: {reason} | {count} |")


def _reason(message: str) -> str:
    """A failure's message with names and numbers taken out, to group alike failures."""
    message = re.sub(r"^[\w.]+:\d+:\d+: ", "", message)  # the parser's file:line:column
    message = re.sub(r"%?[\w.-]*\d[\w.-]*", "#", message)
    return message[:100].replace("|", "/")


TIMEOUT = 120.0
"""The default --timeout of an XLA test, in CPU seconds (--clock cpu): on a 2-core machine
the slowest test that passes takes about 35 CPU seconds (a ResNet weight-gradient
convolution of 12544 taps, run whole and on each of 2 devices), 25 of the 27 slowest under
20; over three times that is a verdict about a test, not about the machine. Elapsed time on
a shared machine is 4-10 times the CPU time under other jobs' load, which made verdicts by
the wall clock (--clock wall) depend on what else ran."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stablehlo", help="StableHLO's stablehlo/tests/interpret directory")
    parser.add_argument("--shardy", help="Shardy's executable_convert_global_to_local directory")
    parser.add_argument("--shardy-propagation", metavar="DIR",
                        help="Shardy's shardy/dialect/sdy/transforms/propagation/test directory")
    parser.add_argument("--xla-spmd", metavar="FILE",
                        help="XLA's xla/service/spmd/spmd_partitioner_test.cc")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help="seconds an XLA test may run before it counts as TIMEOUT "
                             f"(default {TIMEOUT:g}, of CPU time with the default clock)")
    parser.add_argument("--backend", choices=BACKENDS, default="cpu",
                        help="what runs an XLA test's modules: the compiled CPU backend "
                             "(default) or the reference evaluator")
    parser.add_argument("--clock", choices=CLOCKS, default="cpu",
                        help="what --timeout counts for an XLA test: the CPU seconds of its "
                             "process (default: verdicts that do not depend on the load of a "
                             "shared machine) or elapsed seconds")
    parser.add_argument("--memory-gib", type=float, default=MEMORY_LIMIT / (1 << 30),
                        help="the address space each XLA test's process may take; more is "
                             "TOO_LARGE, and so, untried, is a test whose planned memory need "
                             "(its message says how much) is surely over it "
                             f"(default {MEMORY_LIMIT >> 30})")
    parser.add_argument("--only", metavar="REGEX",
                        help="run only the XLA tests whose name the expression matches in full"
                             " (to rerun some cases of a full run)")
    parser.add_argument("--failures", action="store_true",
                        help="also list each failing propagation case or XLA test")
    args = parser.parse_args()
    if not (args.stablehlo or args.shardy or args.shardy_propagation or args.xla_spmd):
        parser.error("give --stablehlo DIR, --shardy DIR, --shardy-propagation DIR "
                     "and/or --xla-spmd FILE")
    if args.xla_spmd:
        print_xla_spmd_table(run_xla_spmd(args.xla_spmd, args.failures, args.timeout,
                                          args.backend, args.only, args.clock,
                                          int(args.memory_gib * (1 << 30))))
    if args.shardy_propagation:
        print_propagation_table(run_propagation(args.shardy_propagation, args.failures))
    for name, directory, shardy in (("StableHLO interpreter", args.stablehlo, False),
                                    ("Shardy global->local", args.shardy, True)):
        if directory:
            files_ok, files, cases_ok, cases = run(directory, shardy)
            print(f"{name}: {files_ok}/{files} files, {cases_ok}/{cases} cases pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
