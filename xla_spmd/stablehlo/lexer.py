"""The character-level scanner of StableHLO MLIR text, and location stripping.

MLIR text mixes grammars (types like ``tensor<4x8xf32>``, slices ``[1:3:2]``, conv labels
``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``), so the parser reads it through a cursor that
matches what it expects at each point rather than through a fixed token stream. Every error
names the file, line and column.

>>> s = Scanner('%0 = stablehlo.add %a, %b : tensor<4xf32>')
>>> s.value_id(), s.accept("="), s.bare_id()
('%0', True, 'stablehlo.add')
>>> strip_locations('%0 = stablehlo.abs %x : tensor<f32> loc("f.py":3:4)').rstrip()
'%0 = stablehlo.abs %x : tensor<f32>'
"""

from __future__ import annotations

import re

from xla_spmd.errors import ParseError

_VALUE = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_SYMBOL = re.compile(r'@(?:[\w$.\-]+|"(?:[^"\\]|\\.)*")')
_BARE = re.compile(r"[A-Za-z_][\w$.]*")
_INT = re.compile(r"[-+]?\d+")
_NUMBER = re.compile(r"[-+]?(?:0x[0-9A-Fa-f]+|\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_LOC_START = re.compile(r"(?<![\w$.%@#])loc\(")
_LOC_ALIAS = re.compile(r"^#loc[\w$.]*\s*=.*$", re.MULTILINE)


def strip_locations(text: str) -> str:
    """Blank out ``loc(...)`` trailers and ``#loc = loc(...)`` definitions, keeping every other
    character at its line and column (so errors still point at the original text)."""
    chars = list(text)
    for match in _LOC_ALIAS.finditer(text):
        for i in range(match.start(), match.end()):
            chars[i] = " "
    text = "".join(chars)
    out = []
    pos = 0
    while True:
        found = _LOC_START.search(text, pos)
        if found is None or _inside_string(text, pos, found.start()):
            if found is None:
                out.append(text[pos:])
                break
            out.append(text[pos:found.end()])
            pos = found.end()
            continue
        out.append(text[pos:found.start()])
        end = _balanced_end(text, found.end() - 1, "(", ")")
        out.append("".join("\n" if c == "\n" else " " for c in text[found.start():end]))
        pos = end
    return "".join(out)


def _inside_string(text: str, start: int, position: int) -> bool:
    """Whether `position` is inside a string literal that begins on or after `start` on the
    same line (location trailers never sit inside strings)."""
    line_start = text.rfind("\n", 0, position) + 1
    quotes = 0
    i = line_start
    while i < position:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            quotes += 1
        i += 1
    return quotes % 2 == 1


def _balanced_end(text: str, open_pos: int, opener: str, closer: str) -> int:
    """Index just past the `closer` matching the `opener` at `open_pos` (strings skipped)."""
    depth = 0
    i = open_pos
    while i < len(text):
        c = text[i]
        if c == '"':
            match = _STRING.match(text, i)
            i = match.end() if match else i + 1
            continue
        if c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


class Scanner:
    """A position in MLIR text with matching helpers; errors carry line and column."""

    __slots__ = ("text", "pos", "filename", "_line_starts")

    def __init__(self, text: str, filename: str | None = None):
        self.text = text
        self.pos = 0
        self.filename = filename
        self._line_starts = None

    # ----- positions and errors -----
    def line_col(self, pos: int | None = None) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        pos = self.pos if pos is None else pos
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, pos - self._line_starts[lo] + 1

    def error(self, message: str, pos: int | None = None) -> ParseError:
        pos = self.pos if pos is None else pos
        line, column = self.line_col(pos)
        end = self.text.find("\n", pos)
        assert self._line_starts is not None  # line_col computed them
        source = self.text[self._line_starts[line - 1]:end if end >= 0 else len(self.text)]
        return ParseError(message, file=self.filename, line=line, column=column,
                          source_line=source if len(source) <= 200 else None)

    # ----- matching -----
    def skip(self) -> None:
        text, pos, n = self.text, self.pos, len(self.text)
        while pos < n:
            c = text[pos]
            if c in " \t\r\n":
                pos += 1
            elif text.startswith("//", pos):
                end = text.find("\n", pos)
                pos = n if end < 0 else end + 1
            else:
                break
        self.pos = pos

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.pos)

    def peek_char(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def accept(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def accept_word(self, word: str) -> bool:
        """Accept `word` only as a whole identifier (``dim`` does not match ``dims``)."""
        self.skip()
        if self.text.startswith(word, self.pos):
            end = self.pos + len(word)
            if end >= len(self.text) or not (self.text[end].isalnum() or self.text[end] in "_$."):
                self.pos = end
                return True
        return False

    def expect(self, token: str, what: str | None = None) -> None:
        if not self.accept(token):
            raise self.error(f"expected '{token}'{' ' + what if what else ''} but found "
                             f"{self.found()}")

    def found(self) -> str:
        self.skip()
        if self.pos >= len(self.text):
            return "end of input"
        rest = self.text[self.pos:self.pos + 20].split("\n")[0]
        return f"'{rest}'"

    def match(self, pattern: re.Pattern, what: str) -> str:
        self.skip()
        found = pattern.match(self.text, self.pos)
        if found is None:
            raise self.error(f"expected {what} but found {self.found()}")
        self.pos = found.end()
        return found.group()

    def try_match(self, pattern: re.Pattern) -> str | None:
        self.skip()
        found = pattern.match(self.text, self.pos)
        if found is None:
            return None
        self.pos = found.end()
        return found.group()

    def value_id(self) -> str:
        return self.match(_VALUE, "an SSA value like %0")

    def peek_value(self) -> bool:
        return self.peek("%")

    def symbol(self) -> str:
        text = self.match(_SYMBOL, "a symbol like @main")[1:]
        return text[1:-1] if text.startswith('"') else text

    def bare_id(self) -> str:
        return self.match(_BARE, "an identifier")

    def try_bare_id(self) -> str | None:
        return self.try_match(_BARE)

    def integer(self) -> int:
        return int(self.match(_INT, "an integer"))

    def number_text(self) -> str:
        return self.match(_NUMBER, "a number")

    def try_number_text(self) -> str | None:
        return self.try_match(_NUMBER)

    def string(self) -> str:
        raw = self.match(_STRING, "a quoted string")
        return unescape(raw[1:-1])

    def balanced(self, opener: str = "<", closer: str = ">") -> str:
        """The text from the `opener` at the cursor through its matching `closer`.

        For angle brackets, ``->`` arrows are not closers."""
        self.skip()
        if not self.text.startswith(opener, self.pos):
            raise self.error(f"expected '{opener}' but found {self.found()}")
        depth = 0
        i = self.pos
        text = self.text
        while i < len(text):
            c = text[i]
            if c == '"':
                match = _STRING.match(text, i)
                i = match.end() if match else i + 1
                continue
            if c == "-" and text.startswith("->", i):
                i += 2
                continue
            if c == opener:
                depth += 1
            elif c == closer:
                depth -= 1
                if depth == 0:
                    start, self.pos = self.pos, i + 1
                    return text[start:i + 1]
            i += 1
        raise self.error(f"unterminated '{opener}'")


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def unescape(body: str) -> str:
    """MLIR string escapes: ``\\n``, ``\\"``, ``\\\\`` and two-digit hex ``\\0A``."""
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 1:i + 3]):
                out.append(chr(int(body[i + 1:i + 3], 16)))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def escape(text: str) -> str:
    """Quote `text` as an MLIR string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
