"""The syntax tree of MLIR text, as `syntax` (generic forms) and `pretty` (custom-assembly
forms) read it: modules, functions, regions (blocks), ops and the attribute values that are
not plain Python (`Symbol`, `Dense`, `RawAttr`).

Every op, pretty or generic, is one `OpNode` in generic terms (see `syntax`).

>>> op = OpNode("stablehlo.add", ["%0"], ["%a", "%a"], {}, [], [], pos=0)
>>> Block([], [op]).ops[0].operands
['%a', '%a']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xla_spmd.ir import Shape
from xla_spmd.mesh import Mesh
from xla_spmd.stablehlo.lexer import Scanner


@dataclass(frozen=True)
class Symbol:
    name: str


@dataclass(frozen=True)
class Dense:
    """``dense<body>``; `value` is filled when the type is known."""

    body: str
    shape: Shape | None = None
    value: np.ndarray | None = None
    # Where `body` starts in the text (-1 when unknown), so errors can point into it.
    pos: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class RawAttr:
    text: str


@dataclass
class Block:
    args: list[tuple[str, Shape]]
    ops: list[OpNode]


@dataclass
class OpNode:
    name: str
    results: list[str]
    operands: list[str]
    attrs: dict
    regions: list[Block]
    result_types: list
    pos: int
    line: int = 0
    column: int = 0


@dataclass
class FuncNode:
    name: str
    visibility: str
    args: list[tuple[str, object, dict]]
    result_types: list
    result_attrs: list[dict]
    body: Block
    pos: int


@dataclass
class ModuleNode:
    name: str | None
    attrs: dict
    meshes: dict[str, Mesh] = field(default_factory=dict)
    functions: list[FuncNode] = field(default_factory=list)
    # Attributes after a mesh (``sdy.mesh @m = <...> {stablehlo.mesh = ...}``), verbatim
    # from '{' to '}', by mesh name: kept so an exported module still carries them.
    mesh_attrs: dict[str, str] = field(default_factory=dict)
    # The scanner of the (location-stripped) text, so later stages can quote source lines.
    scanner: Scanner | None = None
