"""Replay the anchors' own test files against xla-spmd and count what passes.

    python scripts/run_conformance.py --stablehlo DIR   # StableHLO's stablehlo/tests/interpret
    python scripts/run_conformance.py --shardy DIR  # Shardy: executable_convert_global_to_local

Each ``.mlir`` file of the StableHLO directory runs in our interpreter-convention runner
(`xla_spmd.stablehlo.interpreter`), except files whose ``// RUN:`` lines pipe into FileCheck:
those lines are replayed, one case each, with ``xla-spmd interpret --print-results`` for
``stablehlo-translate --interpret`` and our FileCheck subset (tests/stablehlo/run_lines.py,
filecheck.py). Each file of the Shardy directory is converted global->local
by our partitioner and run the way Shardy's ``run_sdy_interpreter_test.sh`` does
(tests/partition/shardy_exec.py). Prints one line per failing case and the totals.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "partition"))
sys.path.insert(0, str(ROOT / "tests" / "stablehlo"))

from run_lines import has_filecheck, replay_file  # noqa: E402
from shardy_exec import run_shardy_executable_test  # noqa: E402

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stablehlo", help="StableHLO's stablehlo/tests/interpret directory")
    parser.add_argument("--shardy", help="Shardy's executable_convert_global_to_local directory")
    args = parser.parse_args()
    if not args.stablehlo and not args.shardy:
        parser.error("give --stablehlo DIR and/or --shardy DIR")
    for name, directory, shardy in (("StableHLO interpreter", args.stablehlo, False),
                                    ("Shardy global->local", args.shardy, True)):
        if directory:
            files_ok, files, cases_ok, cases = run(directory, shardy)
            print(f"{name}: {files_ok}/{files} files, {cases_ok}/{cases} cases pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
