"""Replay the ``// RUN:`` lines of a lit test file with xla-spmd in place of the LLVM tools.

A RUN line is a pipeline. Its first command may be ``not`` (the command must fail) followed by
``stablehlo-translate --interpret [--args=...] [--interpreter-print-dense]
[--split-input-file] %s [2>&1]``, which runs as ``xla-spmd interpret %s --print-results ...``
in this process (``2>&1`` sends its errors down the pipe too); the next may be
``FileCheck %s [--check-prefix=P | --check-prefixes=P,Q]``, our `filecheck` subset. Other
commands make the line UNSUPPORTED. ``%s`` is the file itself.

>>> [(r.line, r.status) for r in replay_text(
...     "// RUN: stablehlo-translate --interpret %s | FileCheck %s\\n"
...     "func.func @main() -> tensor<i32> {\\n"
...     "  %0 = stablehlo.constant dense<7> : tensor<i32>\\n"
...     "  func.return %0 : tensor<i32>\\n}\\n// CHECK: tensor<i32> {7}\\n", "t.mlir")]
[(1, 'PASS')]
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field

from filecheck import FileCheckError, filecheck

from xla_spmd.cli import main as xla_spmd_main

_RUN = re.compile(r"^\s*//\s*RUN:\s?(.*)$")


@dataclass
class RunResult:
    """One RUN line: PASS, FAIL or UNSUPPORTED, with why."""

    line: int
    command: str
    status: str
    messages: list[str] = field(default_factory=list)


def run_lines(text: str) -> list[tuple[int, str]]:
    """The RUN commands of `text` with their line numbers (``\\`` continues a line)."""
    commands, pending, start = [], "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        match = _RUN.match(line)
        if match is None:
            continue
        body = match.group(1).rstrip()
        if not pending:
            start = number
        if body.endswith("\\"):
            pending += body[:-1] + " "
            continue
        commands.append((start, pending + body))
        pending = ""
    return commands


def has_filecheck(text: str) -> bool:
    """Whether some RUN line of `text` pipes into FileCheck."""
    return any("FileCheck" in command for _, command in run_lines(text))


def replay_file(path: str) -> list[RunResult]:
    """Replay every RUN line of the file at `path`."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    return [_replay(line, command, path, text) for line, command in run_lines(text)]


def replay_text(text: str, name: str = "input.mlir") -> list[RunResult]:
    """Replay the RUN lines of `text`, written to a temporary file called `name`."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        return replay_file(path)


def _stages(command: str) -> list[list[str]]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|")
    lexer.whitespace_split = True
    stages: list[list[str]] = [[]]
    for token in lexer:
        if token == "|":
            stages.append([])
        else:
            stages[-1].append(token)
    return stages


def _translate_argv(words: list[str], path: str) -> list[str] | None:
    """``stablehlo-translate`` words as `xla-spmd` arguments, or None if not supported."""
    argv = ["interpret", path, "--print-results"]
    if "--interpret" not in words:
        return None
    for word in words:
        if word in ("--interpret", path):
            continue
        if word in ("--split-input-file", "-split-input-file"):
            argv.append("--split-input-file")
        elif word in ("--interpreter-print-dense", "-interpreter-print-dense"):
            argv.append("--print-dense")
        elif word.startswith(("--args=", "-args=")):
            argv.append("--args=" + word.split("=", 1)[1])
        else:
            return None
    return argv


def _prefixes(words: list[str]) -> list[str] | None:
    prefixes = []
    words = list(words)
    while words:
        word = words.pop(0)
        name, equals, value = word.partition("=")
        if name in ("--check-prefix", "-check-prefix", "--check-prefixes", "-check-prefixes"):
            if not equals:
                if not words:
                    return None
                value = words.pop(0)
            prefixes.extend(value.split(","))
        else:
            return None
    return prefixes or ["CHECK"]


def _replay(line: int, command: str, path: str, text: str) -> RunResult:
    result = RunResult(line, command, "PASS")
    command = command.replace("%s", shlex.quote(path))
    stages = _stages(command)
    first = stages[0]
    expect_failure = bool(first) and first[0] == "not"
    if expect_failure:
        first = first[1:]
    merge = "2>&1" in first
    first = [w for w in first if w != "2>&1"]
    argv = _translate_argv(first[1:], path) if first[:1] == ["stablehlo-translate"] else None
    checks = []
    for stage in stages[1:]:
        prefixes = _prefixes([w for w in stage[1:] if w != path]) \
            if stage[:1] == ["FileCheck"] and path in stage else None
        if prefixes is None:
            argv = None
        checks.append(prefixes)
    if argv is None:
        result.status = "UNSUPPORTED"
        result.messages.append(f"not replayed: {command}")
        return result
    out = io.StringIO()
    err = out if merge else io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = xla_spmd_main(argv)
        except SystemExit as exit_:  # argparse rejected the arguments
            code = exit_.code if isinstance(exit_.code, int) else 1
    if (code != 0) != expect_failure:
        result.status = "FAIL"
        result.messages.append(f"xla-spmd {' '.join(argv)} exited with {code}"
                               + (f": {err.getvalue().strip()}" if err is not out else ""))
        return result
    for prefixes in checks:
        try:
            filecheck(text, out.getvalue(), prefixes, path)
        except FileCheckError as error:
            result.status = "FAIL"
            result.messages.append(str(error))
    return result
