"""Shardy's sharding attribute text, parsed and printed as Shardy does.

``#sdy.sharding<@mesh, [{"a", ?}, {"b":(1)2}p1], replicated={"c"}, unreduced={"d"}>``:
one ``{...}`` per dim, axes major to minor; ``{}`` closed empty, ``{?}`` open empty,
``{"a", ?}`` open with axes, ``pN`` a priority; ``unreduced=max{"d"}`` (or ``min``) says how
the unreduced partial values combine (a sum where it says nothing). The mesh is a symbol
resolved through a ``{name: Mesh}`` dict, or inline (``mesh<["x"=2]>``).
``#sdy.sharding_per_value<[<...>, ...]>`` holds one sharding per op result. A
`TensorSharding` prints itself (``to_text``, ``body_text``); the printers here name that for
symmetry with the parsers.

>>> from xla_spmd.mesh import make_mesh
>>> meshes = {"mesh": make_mesh({"a": 2, "b": 4, "c": 2})}
>>> text = '#sdy.sharding<@mesh, [{"a", ?}, {"b":(1)2}p1], replicated={"c"}>'
>>> print_sharding(parse_sharding(text, meshes)) == text
True
>>> print_sharding(parse_sharding('#sdy.sharding<@mesh, [{"a", ?}, {}]>', meshes))
'#sdy.sharding<@mesh, [{"a", ?}, {}]>'
>>> parse_sharding('<@mesh, [{"a"}, {}], unreduced=max{"c"}>', meshes).reduction
'max'
>>> print_sharding(parse_sharding('<@mesh, [{"a"}, {}], unreduced{"c"}>', meshes))
'#sdy.sharding<@mesh, [{"a"}, {}], unreduced={"c"}>'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xla_spmd.errors import ParseError, ShardingError
from xla_spmd.mesh import AxisRef, Cursor, Mesh, parse_mesh_at

from .tensor_sharding import REDUCTIONS, DimSharding, TensorSharding

MeshResolver = Mapping[str, Mesh]


def print_sharding_body(sharding: TensorSharding) -> str:
    """The text inside ``#sdy.sharding<...>``: mesh, dims, replicated, unreduced (a sharding
    prints itself: `TensorSharding.body_text`)."""
    return sharding.body_text()


def print_sharding(sharding: TensorSharding) -> str:
    """``#sdy.sharding<...>`` (`TensorSharding.to_text`)."""
    return sharding.to_text()


def print_sharding_per_value(shardings: Sequence[TensorSharding]) -> str:
    """``#sdy.sharding_per_value<[<...>, <...>]>``."""
    inner = ", ".join(f"<{print_sharding_body(s)}>" for s in shardings)
    return f"#sdy.sharding_per_value<[{inner}]>"


def parse_sharding(text: str, meshes: MeshResolver | None = None) -> TensorSharding:
    """Parse ``#sdy.sharding<...>`` (the ``#sdy.sharding`` prefix is optional)."""
    cursor = Cursor(text, "sharding")
    cursor.accept("#sdy.sharding")
    sharding = parse_sharding_at(cursor, meshes or {})
    cursor.expect_end()
    return sharding


def parse_sharding_per_value(text: str, meshes: MeshResolver | None = None
                             ) -> tuple[TensorSharding, ...]:
    """Parse ``#sdy.sharding_per_value<[<...>, ...]>``."""
    cursor = Cursor(text, "sharding_per_value")
    cursor.accept("#sdy.sharding_per_value")
    cursor.expect("<")
    cursor.expect("[")
    shardings: list[TensorSharding] = []
    if not cursor.accept("]"):
        while True:
            cursor.accept("#sdy.sharding")  # MLIR also accepts the full attribute form
            shardings.append(parse_sharding_at(cursor, meshes or {}))
            if cursor.accept("]"):
                break
            cursor.expect(",")
    cursor.expect(">")
    cursor.expect_end()
    return tuple(shardings)


def parse_sharding_at(cursor: Cursor, meshes: MeshResolver) -> TensorSharding:
    """Parse ``<mesh, [dims], replicated=..., unreduced=...>`` at the cursor."""
    start = cursor.pos
    cursor.expect("<")
    mesh_name, mesh = _parse_mesh_ref(cursor, meshes)
    cursor.expect(",")
    cursor.expect("[")
    dims: list[DimSharding] = []
    if not cursor.accept("]"):
        while True:
            dims.append(_parse_dim(cursor))
            if cursor.accept("]"):
                break
            cursor.expect(",")
    lists: dict[str, tuple[AxisRef, ...]] = {"replicated": (), "unreduced": ()}
    reduction = "sum"
    while cursor.accept(","):
        key = "replicated" if cursor.accept("replicated") else None
        if key is None:
            if not cursor.accept("unreduced"):
                raise cursor.error("expected 'replicated=' or 'unreduced='")
            key = "unreduced"
        if key == "unreduced":   # Shardy's reduction kind: unreduced=max{"x"}
            if cursor.accept("="):     # (Shardy also reads unreduced{"x"}, a sum)
                reduction = next((r for r in REDUCTIONS if cursor.accept(r)), "sum")
        else:
            cursor.expect("=")
        cursor.expect("{")
        lists[key] = _parse_axes_until(cursor)
    cursor.expect(">")
    try:
        return TensorSharding(mesh, tuple(dims), lists["replicated"], lists["unreduced"],
                              mesh_name, reduction)
    except ShardingError as error:
        cursor.pos = start
        raise cursor.error(f"invalid sharding: {error}") from None


def _parse_mesh_ref(cursor: Cursor, meshes: MeshResolver) -> tuple[str | None, Mesh]:
    if cursor.accept("mesh"):
        return None, parse_mesh_at(cursor)
    position = cursor.pos
    name = cursor.symbol()
    if name not in meshes:
        cursor.pos = position
        known = ", ".join("@" + n for n in meshes) or "none"
        raise cursor.error(f"unknown mesh @{name} (known meshes: {known})")
    return name, meshes[name]


def _parse_dim(cursor: Cursor) -> DimSharding:
    cursor.expect("{")
    axes: list[AxisRef] = []
    is_closed = True
    if not cursor.accept("}"):
        while True:
            if cursor.accept("?"):
                is_closed = False
                cursor.expect("}")
                break
            axes.append(_parse_axis(cursor))
            if cursor.accept("}"):
                break
            cursor.expect(",")
    priority = None
    if cursor.peek("p"):
        cursor.expect("p")
        priority = cursor.integer()
    try:
        return DimSharding(tuple(axes), is_closed, priority)
    except ShardingError as error:
        raise cursor.error(str(error)) from None


def _parse_axes_until(cursor: Cursor) -> tuple[AxisRef, ...]:
    axes: list[AxisRef] = []
    if cursor.accept("}"):
        return ()
    while True:
        axes.append(_parse_axis(cursor))
        if cursor.accept("}"):
            return tuple(axes)
        cursor.expect(",")


def _parse_axis(cursor: Cursor) -> AxisRef:
    name = cursor.string()
    if not cursor.accept(":"):
        return AxisRef(name)
    cursor.expect("(")
    pre_size = cursor.integer()
    cursor.expect(")")
    size = cursor.integer()
    try:
        return AxisRef(name, (pre_size, size))
    except ShardingError as error:
        raise cursor.error(str(error)) from None


__all__ = ["ParseError", "parse_sharding", "parse_sharding_at", "parse_sharding_per_value",
           "print_sharding", "print_sharding_body", "print_sharding_per_value"]
