"""A character scanner for HLO text: positions, comments, names, numbers, strings, raw values.

HLO text is read by recursive descent directly over the characters (no token list), because
several attribute values (metadata, backend_config, frontend attributes) are kept verbatim and
need a balanced-bracket scan that respects strings and comments. Every method skips blanks and
``/*...*/`` / ``//`` comments before it looks, and every error names the line, the column and
what was found.

>>> s = Scanner('%add.1 = f32[] /*c*/ add(x, y)')
>>> s.name(), s.accept("="), s.word()
(('add.1', True), True, 'f32')
"""

from __future__ import annotations

import bisect
import re

from xla_spmd.errors import ParseError

NAME_RE = re.compile(r"%?[A-Za-z_][A-Za-z0-9_.\-]*")
WORD_RE = re.compile(r"[A-Za-z0-9_.\-]+")
INT_RE = re.compile(r"[-+]?[0-9]+")
FLOAT_RE = re.compile(r"[-+]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|inf|nan)")
_OPEN = {"{": "}", "[": "]", "(": ")"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "?": "?",
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def unescape(body: str) -> str:
    """Undo C escapes (``\\n``, ``\\"``, octal ``\\101``, hex ``\\x41``) of a string body."""
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        if n in _ESCAPES:
            out.append(_ESCAPES[n])
            i += 2
        elif n in "01234567" and (octal := re.match(r"[0-7]{1,3}", body[i + 1:])):
            digits = octal.group()
            out.append(chr(int(digits, 8)))
            i += 1 + len(digits)
        elif n == "x" and (hexadecimal := re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])):
            digits = hexadecimal.group()
            out.append(chr(int(digits, 16)))
            i += 2 + len(digits)
        else:
            out.append(n)
            i += 2
    return "".join(out)


def escape(text: str) -> str:
    """C-escape `text` as XLA's printer does (absl::CEscape)."""
    out = []
    for c in text:
        if c in '"\'\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 32 or ord(c) == 127:
            out.append(f"\\{ord(c):03o}")
        else:
            out.append(c)
    return "".join(out)


class Scanner:
    """A cursor over HLO text. `pos` is a character offset; errors report line:column."""

    def __init__(self, text: str, filename: str | None = None, pos: int = 0):
        self.text = text
        self.filename = filename
        self.pos = pos
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    # -- positions and errors -----------------------------------------------------------------

    def location(self, pos: int | None = None) -> tuple[int, int, str]:
        """(line, column, source line) of `pos` (default: the cursor), 1-based."""
        pos = self.pos if pos is None else pos
        index = bisect.bisect_right(self._line_starts, pos) - 1
        start = self._line_starts[index]
        end = self.text.find("\n", start)
        return index + 1, pos - start + 1, self.text[start:end if end >= 0 else len(self.text)]

    def error(self, message: str, pos: int | None = None) -> ParseError:
        line, column, source = self.location(pos)
        return ParseError(message, file=self.filename, line=line, column=column,
                          source_line=source)

    def found(self) -> str:
        """A short description of what is at the cursor, for error messages."""
        self.skip()
        if self.pos >= len(self.text):
            return "end of input"
        match = WORD_RE.match(self.text, self.pos)
        if match:
            return repr(match.group())
        return repr(self.text[self.pos])

    def fail(self, expected: str) -> ParseError:
        return self.error(f"expected {expected}, found {self.found()}")

    # -- blanks -------------------------------------------------------------------------------

    def skip(self, newlines: bool = True) -> None:
        """Skip blanks and comments (stopping at a newline when `newlines` is False)."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in " \t\r" or (c == "\n" and newlines):
                self.pos += 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated /* comment")
                self.pos = end + 2
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end
            else:
                break

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at(self, literal: str) -> bool:
        self.skip()
        return self.text.startswith(literal, self.pos)

    def accept(self, literal: str) -> bool:
        if self.at(literal):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, context: str = "") -> None:
        if not self.accept(literal):
            raise self.fail(f"'{literal}'{' ' + context if context else ''}")

    # -- tokens -------------------------------------------------------------------------------

    def match(self, pattern: re.Pattern, expected: str) -> str:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if not m:
            raise self.fail(expected)
        self.pos = m.end()
        return m.group()

    def name(self, expected: str = "a name") -> tuple[str, bool]:
        """An identifier with an optional leading '%': (name without '%', had '%')."""
        text = self.match(NAME_RE, expected)
        return (text[1:], True) if text.startswith("%") else (text, False)

    def marked_name(self, keyword: str, expected: str) -> tuple[bool, str, int]:
        """A name after an optional `keyword` (``ENTRY``, ``ROOT``): (had the keyword, name
        without '%', position of the name)."""
        marked = self.peek_word() == keyword
        if marked:
            self.word()
        self.skip()
        pos = self.pos
        name, _ = self.name(expected)
        return marked, name, pos

    def word(self, expected: str = "a word") -> str:
        return self.match(WORD_RE, expected)

    def peek_word(self) -> str | None:
        self.skip()
        m = WORD_RE.match(self.text, self.pos)
        return m.group() if m else None

    def integer(self, expected: str = "an integer") -> int:
        return int(self.match(INT_RE, expected))

    def float_number(self, expected: str = "a number") -> float:
        """A decimal number such as ``0.001``, ``1e-05``, ``-inf`` or ``nan``."""
        return float(self.match(FLOAT_RE, expected))

    def string(self) -> str:
        """A double-quoted string, unescaped."""
        start = self.pos
        self.expect('"', "to open a string")
        end = self._string_end(self.pos - 1)
        if end < 0:
            raise self.error("unterminated string", start)
        self.pos = end
        return unescape(self.text[start + 1:end - 1])

    def _string_end(self, start: int) -> int:
        """Offset just past the string that opens at `start` (-1 if unterminated)."""
        i, text, n = start + 1, self.text, len(self.text)
        while i < n:
            c = text[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif c == "\n":
                return -1
            else:
                i += 1
        return -1

    def balanced(self) -> str:
        """The text of one bracketed group at the cursor (``{...}``, ``(...)``, ``[...]``),
        brackets included, respecting strings and comments."""
        self.skip()
        start = self.pos
        if self.peek() not in _OPEN:
            raise self.fail("'{', '(' or '['")
        self._scan(stop_at_comma=False)
        return self.text[start:self.pos]

    def raw_value(self) -> str:
        """Verbatim text of an attribute value: up to a ',' or newline outside brackets and
        strings, or an unmatched closing bracket."""
        self.skip(newlines=False)
        start = self.pos
        self._scan(stop_at_comma=True)
        value = self.text[start:self.pos].rstrip()
        if not value:
            raise self.fail("an attribute value")
        return value

    def _scan(self, stop_at_comma: bool) -> None:
        text, n = self.text, len(self.text)
        stack: list[str] = []
        start = self.pos
        while self.pos < n:
            c = text[self.pos]
            if c == '"':
                end = self._string_end(self.pos)
                if end < 0:
                    raise self.error("unterminated string", self.pos)
                self.pos = end
                continue
            if text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated /* comment")
                self.pos = end + 2
                continue
            if c in _OPEN:
                stack.append(_OPEN[c])
            elif c in ")]}":
                if not stack:
                    break
                if c != stack[-1]:
                    raise self.error(f"expected '{stack[-1]}', found '{c}'")
                stack.pop()
                if not stack and not stop_at_comma:
                    self.pos += 1
                    return
            elif not stack and stop_at_comma and c in ",\n":
                break
            self.pos += 1
        if stack:
            raise self.error(f"unbalanced brackets: missing '{stack[-1]}'", start)
