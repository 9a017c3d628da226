"""A subset of LLVM's FileCheck, to replay lit ``// RUN:`` lines (tests and scripts only; the
library does not use it).

`filecheck(check_text, output, prefixes)` checks `output` against the directives of
`check_text`, as ``... | FileCheck check_file --check-prefixes=...`` does, and raises
`FileCheckError` naming the directive's line when a check fails. Supported:

- ``P:`` the pattern occurs after the previous match; ``P-NEXT:`` on the line right after it;
  ``P-SAME:`` on the same line; ``P-EMPTY:`` the next line is empty; ``P-NOT:`` the pattern
  does not occur between the previous match and the next one (or the end); ``P-DAG:`` a run
  of DAG directives matches in any order, without overlapping; ``P-LABEL:`` as ``P:`` (labels
  do not partition the input first, as FileCheck's do);
- any prefixes (a directive's prefix must not follow a letter, digit, ``-`` or ``_``); lines
  holding ``RUN:`` or ``COM:`` before the directive are comments;
- ``{{regex}}`` (Python `re` syntax, ``.`` not crossing lines), ``[[NAME:regex]]`` defines a
  variable, ``[[NAME]]`` uses it (``[``s before ``[[`` are literal: ``[[[V:.*]]]`` is ``[``,
  ``[[V:.*]]``, ``]``); ``P{LITERAL}:`` (and ``P-NEXT{LITERAL}:`` ...) takes the
  pattern verbatim;
- horizontal whitespace: leading and trailing blanks of a pattern are dropped and a run of
  blanks matches any run of blanks (FileCheck without ``--strict-whitespace``).

>>> filecheck("// CHECK: a {{[0-9]+}}\\n// CHECK-NEXT: b", "x a 12\\nb\\n")
>>> filecheck("// CHECK: a\\n// CHECK-NEXT: c", "a\\nb\\nc\\n")
Traceback (most recent call last):
...
filecheck.FileCheckError: <check>:2: CHECK-NEXT: is not on the line after the previous match
  pattern: c
  found on line 3: c
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("", "-NEXT", "-SAME", "-NOT", "-LABEL", "-DAG", "-EMPTY")
_COMMENT = re.compile(r"(?<![\w-])(?:RUN|COM):")


class FileCheckError(Exception):
    """A directive that the output does not satisfy (or a malformed check file)."""


@dataclass(frozen=True)
class Directive:
    """One check line: its kind (``""``, ``"-NEXT"``, ...), its prefix, pattern text and line."""

    prefix: str
    kind: str
    pattern: str
    literal: bool
    line: int

    @property
    def name(self) -> str:
        return f"{self.prefix}{self.kind}"


def parse_directives(check_text: str, prefixes=("CHECK",)) -> list[Directive]:
    """The directives of `check_text` for `prefixes`, in order."""
    names = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    kinds = "|".join(re.escape(k) for k in KINDS if k)
    directive = re.compile(rf"(?<![\w-])({names})({kinds})?(\{{LITERAL\}})?:")
    found = []
    for number, line in enumerate(check_text.splitlines(), start=1):
        match = directive.search(line)
        if match is None:
            continue
        comment = _COMMENT.search(line)
        if comment is not None and comment.start() < match.start():
            continue
        found.append(Directive(match.group(1), match.group(2) or "", line[match.end():].strip(),
                               match.group(3) is not None, number))
    if not found:
        raise FileCheckError(f"no check strings found with prefix "
                             f"{', '.join(repr(p + ':') for p in prefixes)}")
    return found


def _regex(directive: Directive, variables: dict[str, str]) -> re.Pattern:
    """The pattern of `directive` as a regex, with `variables`' current values."""
    text = directive.pattern
    if directive.literal:
        return re.compile(_blanks(text))
    parts, i = [], 0
    while i < len(text):
        if text.startswith("{{", i):
            end = text.find("}}", i + 2)
            if end < 0:
                raise FileCheckError(f"line {directive.line}: '{{{{' without '}}}}'")
            parts.append(f"(?:{text[i + 2:end]})")
            i = end + 2
        elif text.startswith("[[[", i):
            parts.append(re.escape("["))  # extra '['s before "[[" are literal, as in LLVM's
            i += 1
        elif text.startswith("[[", i):
            end = text.find("]]", i + 2)
            if end < 0:
                raise FileCheckError(f"line {directive.line}: '[[' without ']]'")
            name, colon, regex = text[i + 2:end].partition(":")
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise FileCheckError(f"line {directive.line}: unsupported variable "
                                     f"[[{text[i + 2:end]}]] (numeric and special variables "
                                     "are not in this subset)")
            if colon:
                parts.append(f"(?P<{name}>{regex})")
            elif name in variables:
                parts.append(re.escape(variables[name]))
            else:
                raise FileCheckError(f"line {directive.line}: variable {name} used before it "
                                     "is defined")
            i = end + 2
        else:
            nxt = min((j for j in (text.find("{{", i), text.find("[[", i)) if j >= 0),
                      default=len(text))
            parts.append(_blanks(text[i:nxt]))
            i = nxt
    try:
        return re.compile("".join(parts))
    except re.error as error:
        raise FileCheckError(f"line {directive.line}: invalid regex: {error}") from None


def _blanks(literal: str) -> str:
    """`literal` as a regex in which each run of blanks matches any run of blanks."""
    return r"[ \t]+".join(re.escape(piece) for piece in re.split(r"[ \t]+", literal))


def filecheck(check_text: str, output: str, prefixes=("CHECK",),
              check_name: str = "<check>") -> None:
    """Check `output` against the directives in `check_text`; raise `FileCheckError` at the
    first that fails."""
    directives = parse_directives(check_text, prefixes)
    variables: dict[str, str] = {}
    position, nots, index = 0, [], 0

    def fail(directive: Directive, why: str, at: int) -> FileCheckError:
        line_number = output.count("\n", 0, at) + 1
        line_text = output[output.rfind("\n", 0, at) + 1:].split("\n", 1)[0]
        return FileCheckError(f"{check_name}:{directive.line}: {directive.name}: {why}\n"
                              f"  pattern: {directive.pattern}\n"
                              f"  {'found' if 'not found' not in why else 'scanning from'} "
                              f"on line {line_number}: {line_text}")

    def search(directive: Directive, start: int, end: int | None = None):
        match = _regex(directive, variables).search(output, start,
                                                    len(output) if end is None else end)
        if match is not None:
            variables.update({k: v for k, v in match.groupdict().items() if v is not None})
        return match

    def check_nots(end: int) -> None:
        for directive in nots:
            match = search(directive, position, end)
            if match is not None:
                raise fail(directive, "excluded string found in input", match.start())
        nots.clear()

    while index < len(directives):
        directive = directives[index]
        if directive.kind == "-NOT":
            nots.append(directive)
            index += 1
            continue
        if directive.kind == "-DAG":
            group = []
            while index < len(directives) and directives[index].kind == "-DAG":
                group.append(directives[index])
                index += 1
            taken: list[tuple[int, int]] = []
            for member in group:
                start = position
                while True:
                    match = search(member, start)
                    if match is None:
                        raise fail(member, "expected string not found in input", position)
                    overlap = next((e for s, e in taken
                                    if match.start() < e and s < match.end()), None)
                    if overlap is None:
                        break
                    start = max(overlap, match.start() + 1)
                taken.append(match.span())
            check_nots(min(s for s, _ in taken))
            position = max(e for _, e in taken)
            continue
        if directive.kind == "-EMPTY":
            newline = output.find("\n", position)
            if newline < 0 or not (newline + 1 == len(output) or output[newline + 1] == "\n"):
                raise fail(directive, "the next line is not empty", max(newline, position))
            check_nots(newline + 1)
            position = newline + 1
            index += 1
            continue
        match = search(directive, position)
        if match is None:
            raise fail(directive, "expected string not found in input", position)
        newlines = output.count("\n", position, match.start())
        if directive.kind == "-NEXT" and newlines != 1:
            raise fail(directive, "is not on the line after the previous match"
                       if newlines else "is on the same line as the previous match",
                       match.start())
        if directive.kind == "-SAME" and newlines:
            raise fail(directive, "is not on the same line as the previous match",
                       match.start())
        check_nots(match.start())
        position = match.end()
        index += 1
    check_nots(len(output))
