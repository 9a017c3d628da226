"""Shardy's mesh text: ``<["data"=2, "model"=4]>``, ``<["x"=4], device_ids=[3, 2, 1, 0]>``.

Also the module-level declaration ``sdy.mesh @name = <...>``, and the small cursor that the
sharding text parser shares.

>>> print(print_mesh(parse_mesh('<["x"=4], device_ids=[3,2,1,0]>')))
<["x"=4], device_ids=[3, 2, 1, 0]>
>>> parse_mesh_decl('sdy.mesh @mesh = <["a"=2]>')
('mesh', Mesh('a': 2))
"""

from __future__ import annotations

import re

from xla_spmd.errors import ParseError, ShardingError

from .mesh import Mesh

_INT = re.compile(r"-?\d+")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SYMBOL = re.compile(r"@([A-Za-z_][\w.$-]*|\"(?:[^\"\\]|\\.)*\")")


class Cursor:
    """A position in text, with helpers that raise ParseError naming the column."""

    __slots__ = ("text", "pos", "what")

    def __init__(self, text: str, what: str = "text"):
        self.text = text
        self.pos = 0
        self.what = what

    def error(self, message: str) -> ParseError:
        return ParseError(f"{message} in {self.what} {self.text!r}", line=1,
                          column=self.pos + 1)

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token: str) -> bool:
        self.skip_space()
        return self.text.startswith(token, self.pos)

    def accept(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.accept(token):
            found = self.text[self.pos:self.pos + 10] or "end of text"
            raise self.error(f"expected '{token}' but found '{found}'")

    def match(self, pattern: re.Pattern, expected: str) -> re.Match:
        self.skip_space()
        found = pattern.match(self.text, self.pos)
        if found is None:
            rest = self.text[self.pos:self.pos + 10] or "end of text"
            raise self.error(f"expected {expected} but found '{rest}'")
        self.pos = found.end()
        return found

    def integer(self) -> int:
        return int(self.match(_INT, "an integer").group())

    def string(self) -> str:
        return self.match(_STRING, "a quoted name").group(1)

    def symbol(self) -> str:
        return self.match(_SYMBOL, "a symbol like @mesh").group(1).strip('"')

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos == len(self.text)

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error(f"unexpected '{self.text[self.pos:self.pos + 10]}'")


def print_mesh(mesh: Mesh) -> str:
    """Shardy's text for a mesh attribute (`Mesh.to_text`).

    >>> print_mesh(Mesh((), (), device_ids=(3,)))
    '<[], device_ids=[3]>'
    """
    return mesh.to_text()


def parse_mesh(text: str) -> Mesh:
    """Parse ``<[...]>`` mesh text (whitespace-insensitive); errors name the column."""
    cursor = Cursor(text, "mesh")
    mesh = parse_mesh_at(cursor)
    cursor.expect_end()
    return mesh


def parse_mesh_at(cursor: Cursor) -> Mesh:
    """Parse a mesh attribute at the cursor (for use inside larger texts)."""
    start = cursor.pos
    cursor.expect("<")
    cursor.expect("[")
    names: list[str] = []
    sizes: list[int] = []
    if not cursor.accept("]"):
        while True:
            names.append(cursor.string())
            cursor.expect("=")
            sizes.append(cursor.integer())
            if cursor.accept("]"):
                break
            cursor.expect(",")
    device_ids = None
    if cursor.accept(","):
        cursor.expect("device_ids")
        cursor.expect("=")
        cursor.expect("[")
        device_ids = []
        if not cursor.accept("]"):
            while True:
                device_ids.append(cursor.integer())
                if cursor.accept("]"):
                    break
                cursor.expect(",")
    cursor.expect(">")
    try:
        return Mesh(tuple(names), tuple(sizes), None if device_ids is None else tuple(device_ids))
    except ShardingError as error:
        cursor.pos = start
        raise cursor.error(f"invalid mesh: {error}") from None


def parse_mesh_decl(text: str) -> tuple[str, Mesh]:
    """Parse a ``sdy.mesh @name = <...>`` line into (name, Mesh)."""
    cursor = Cursor(text.strip(), "mesh declaration")
    cursor.expect("sdy.mesh")
    name = cursor.symbol()
    cursor.expect("=")
    mesh = parse_mesh_at(cursor)
    cursor.expect_end()
    return name, mesh


def print_mesh_decl(name: str, mesh: Mesh) -> str:
    """``sdy.mesh @name = <...>``."""
    return f"sdy.mesh @{name} = {print_mesh(mesh)}"


_MESH_NAME = re.compile(r'@?("[^"]*"|[\w.$-]+)')


def parse_sdy_meshes(text: str) -> dict[str, Mesh]:
    """The meshes in XLA's ``xla.sdy.meshes`` frontend attribute, found in a module's
    ``frontend_attributes={...}`` text (escaped quotes allowed); {} when it has none.

    >>> parse_sdy_meshes('{xla.sdy.meshes={mesh = #sdy.mesh<[\\"x\\"=2]>}}')
    {'mesh': Mesh('x': 2)}
    """
    text = text.replace('\\"', '"')
    start = text.find("xla.sdy.meshes={")
    meshes: dict[str, Mesh] = {}
    if start < 0:
        return meshes
    cursor = Cursor(text, "xla.sdy.meshes attribute")
    cursor.pos = start + len("xla.sdy.meshes={")
    while not cursor.accept("}"):
        name = cursor.match(_MESH_NAME, "a mesh name").group(1).strip('"')
        cursor.expect("=")
        cursor.expect("#sdy.mesh")
        meshes[name] = parse_mesh_at(cursor)
        cursor.accept(",")
    return meshes

