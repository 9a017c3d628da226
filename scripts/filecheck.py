"""A small FileCheck, enough to replay MLIR lit tests case by case.

`check_cases(checks_text, output)` reads the ``// CHECK*:`` lines of a lit test file and
matches them against `output` the way LLVM's FileCheck does (default options): horizontal
whitespace runs compare equal, ``{{regex}}`` and ``[[VAR:regex]]``/``[[VAR]]`` patterns,
CHECK, CHECK-LABEL, CHECK-NEXT, CHECK-SAME, CHECK-NOT, CHECK-DAG and CHECK-EMPTY. Labels cut
the output into blocks; each label's block is one case, so a file reports how many of its
cases pass rather than one verdict.

>>> out = "func @f(%a) {\\n  %0 = add %a, %a\\n}\\nfunc @g() {\\n  %0 = mul\\n}\\n"
>>> checks = '''// CHECK-LABEL: func @f(
... // CHECK-NEXT: %[[X:.*]] = add %a, %a
... // CHECK-LABEL: func @g(
... // CHECK-NEXT: add'''
>>> [(c.label, c.ok) for c in check_cases(checks, out)]
[('func @f(', True), ('func @g(', False)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DIRECTIVE = re.compile(
    r"//\s*(CHECK(?:-(?:LABEL|NEXT|SAME|NOT|DAG|EMPTY))?)(\{LITERAL\})?:(.*)$")
_HSPACE = re.compile(r"[ \t]+")


@dataclass
class Check:
    kind: str       # "CHECK", "CHECK-NEXT", ...
    pattern: str    # as written, whitespace canonicalised
    line: int       # line in the test file
    literal: bool = False   # CHECK{LITERAL}: no {{regex}} or [[VAR]] in the pattern


@dataclass
class Case:
    """The checks under one CHECK-LABEL (or those before the first label)."""

    label: str
    checks: list[Check] = field(default_factory=list)
    ok: bool = False
    failure: str = ""


def parse_checks(text: str) -> list[Check]:
    """The CHECK directives of a test file, in order."""
    checks = []
    for number, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.search(line)
        if m:
            pattern = _HSPACE.sub(" ", m.group(3).strip())
            checks.append(Check(m.group(1), pattern, number, bool(m.group(2))))
    return checks


def _compile(pattern: str, variables: dict[str, str], literal: bool = False):
    """The regex of a FileCheck pattern and the variables it defines (name -> group)."""
    if literal:
        return re.compile(re.escape(pattern).replace(r"\ ", "[ \t]+")), {}
    out = []
    defines = {}
    i = 0
    while i < len(pattern):
        if pattern.startswith("{{", i):
            end = pattern.find("}}", i + 2)
            while end != -1 and pattern.startswith("}", end + 2):
                end += 1        # "{{[0-9]{2}}}": the closing braces are the last two
            out.append(f"(?:{pattern[i + 2:end]})")
            i = end + 2
        elif pattern.startswith("[[", i):
            end = pattern.find("]]", i + 2)
            while end != -1 and pattern.startswith("]", end + 2):
                end += 1
            body = pattern[i + 2:end]
            if ":" in body:
                name, regex = body.split(":", 1)
                group = f"v{len(defines)}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
                defines[name] = group
                out.append(f"(?P<{group}>{regex})")
            elif body in defines:
                out.append(f"(?P={defines[body]})")
            else:
                out.append(re.escape(variables.get(body, "\0undefined\0")))
            i = end + 2
        else:
            nxt = min((j for j in (pattern.find("{{", i), pattern.find("[[", i)) if j != -1),
                      default=len(pattern))
            out.append(_HSPACE.sub(" ", re.escape(pattern[i:nxt])).replace(r"\ ", " "))
            i = nxt
    return re.compile("".join(out).replace(" ", "[ \t]+")), defines


class _Matcher:
    def __init__(self, output: str, variables: dict[str, str]):
        self.text = output
        self.variables = variables
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", output)]

    def line_of(self, pos: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def search(self, check: Check, start: int, end: int):
        regex, defines = _compile(check.pattern, self.variables, check.literal)
        for m in regex.finditer(self.text, start, end):
            return m, defines
        return None, defines

    def bind(self, m, defines) -> None:
        for name, group in defines.items():
            self.variables[name] = m.group(group)


def _run_block(matcher: _Matcher, checks: list[Check], start: int, end: int) -> str:
    """'' when the checks match output[start:end], else why not."""
    pos = start
    last_line = matcher.line_of(start)
    nots: list[Check] = []
    i = 0
    while i < len(checks):
        check = checks[i]
        if check.kind == "CHECK-NOT":
            nots.append(check)
            i += 1
            continue
        if check.kind == "CHECK-DAG":
            group = []
            while i < len(checks) and checks[i].kind == "CHECK-DAG":
                group.append(checks[i])
                i += 1
            taken: list[tuple[int, int]] = []
            for dag in group:
                regex, defines = _compile(dag.pattern, matcher.variables, dag.literal)
                found = None
                for m in regex.finditer(matcher.text, pos, end):
                    if all(m.end() <= a or m.start() >= b for a, b in taken):
                        found = m
                        break
                if found is None:
                    return f"line {dag.line}: CHECK-DAG not found: {dag.pattern}"
                matcher.bind(found, defines)
                taken.append(found.span())
            first = min(a for a, _ in taken)
            if err := _no_nots(matcher, nots, pos, first):
                return err
            nots = []
            pos = max(b for _, b in taken)
            last_line = matcher.line_of(max(b for _, b in taken) - 1 if pos > start else pos)
            continue
        if check.kind == "CHECK-SAME":
            line_end = matcher.text.find("\n", pos)
            m, defines = matcher.search(check, pos, end if line_end == -1
                                        else min(end, line_end))
        elif check.kind == "CHECK-EMPTY":
            nxt = matcher.text.find("\n", pos)
            ok = nxt != -1 and matcher.text[nxt + 1:nxt + 2] in ("\n", "")
            if not ok:
                return f"line {check.line}: CHECK-EMPTY: the next line is not empty"
            pos = nxt + 1
            last_line = matcher.line_of(pos)
            i += 1
            continue
        else:
            m, defines = matcher.search(check, pos, end)
        if m is None:
            return f"line {check.line}: {check.kind} not found: {check.pattern}"
        if check.kind == "CHECK-NEXT" and matcher.line_of(m.start()) != last_line + 1:
            return f"line {check.line}: CHECK-NEXT is not on the next line: {check.pattern}"
        if err := _no_nots(matcher, nots, pos, m.start()):
            return err
        nots = []
        matcher.bind(m, defines)
        pos = m.end()
        last_line = matcher.line_of(m.end() - 1 if m.end() > m.start() else m.start())
        i += 1
    return _no_nots(matcher, nots, pos, end)


def _no_nots(matcher: _Matcher, nots: list[Check], start: int, end: int) -> str:
    for check in nots:
        m, _ = matcher.search(check, start, end)
        if m is not None:
            return f"line {check.line}: CHECK-NOT matched: {check.pattern}"
    return ""


def check_cases(test_text: str, output: str) -> list[Case]:
    """Match the CHECK lines of `test_text` against `output`, one `Case` per label."""
    cases: list[Case] = []
    for check in parse_checks(test_text):
        if check.kind == "CHECK-LABEL" or not cases:
            cases.append(Case(check.pattern if check.kind == "CHECK-LABEL" else "<top>"))
        cases[-1].checks.append(check)
    matcher = _Matcher(output, {})
    # Labels first: each must match, in order, on its own; they bound the blocks.
    starts: list[int | None] = []
    pos = 0
    for case in cases:
        if case.checks[0].kind != "CHECK-LABEL":
            starts.append(0)
            continue
        m, defines = matcher.search(case.checks[0], pos, len(output))
        if m is None:
            starts.append(None)
            case.failure = f"line {case.checks[0].line}: label not found"
            continue
        matcher.bind(m, defines)
        starts.append(m.start())
        pos = m.end()
    for k, case in enumerate(cases):
        start = starts[k]
        if start is None:
            continue
        end = next((s for s in starts[k + 1:] if s is not None), len(output))
        case.failure = _run_block(matcher, case.checks, start, end)
        case.ok = not case.failure
    return cases
