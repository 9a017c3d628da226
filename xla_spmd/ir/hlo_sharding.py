"""GSPMD's ``HloSharding``: the ``sharding={...}`` attribute of HLO text, parsed and printed.

Kinds: replicated, manual, unknown, unreduced, maximal (one device), tiled (a tile
assignment: an array of device ids whose first dims tile the tensor and whose last
``last_tile_dim_replicate`` / ``last_tile_dims={...}`` dims are subgroups), and tuple (one
sharding per leaf). A tile assignment is either an explicit device list (V1) or an iota form
(V2, ``<=[reshape_dims]T(perm)``); the form parsed is the form printed, so text XLA printed
round-trips exactly. Construction canonicalizes as XLA does when it builds the sharding: iota
dims are merged, size-1 subgroup dims dropped, a subgroup of one kind with no tiling becomes
``{replicated}`` / ``{manual}``, and ``last_tile_dims={replicated}`` becomes
``last_tile_dim_replicate``. ``metadata={...}`` is kept as raw text; ``shard_as``/``shard_like``
are kept.

This module imports nothing of ours except the errors, because it is part of the HLO syntax.

>>> s = HloSharding.parse("{devices=[2,1,4]<=[8] last_tile_dim_replicate}")
>>> str(s), s.tile_shape, s.num_devices
('{devices=[2,1,4]<=[8] last_tile_dim_replicate}', (2, 1), 8)
>>> HloSharding.parse("{devices=[4,2]<=[2,4]T(1,0)}").device_array().ravel().tolist()
[0, 4, 1, 5, 2, 6, 3, 7]
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xla_spmd.errors import MAX_NESTING, TOO_DEEP, ParseError, ShardingError
from xla_spmd.iota import canonicalize_iota, iota_array


class ShardingKind(enum.Enum):
    REPLICATED = "replicated"
    MANUAL = "manual"
    UNKNOWN = "unknown"
    UNREDUCED = "unreduced"
    MAXIMAL = "maximal"
    TILED = "tiled"
    TUPLE = "tuple"


class SubgroupType(enum.Enum):
    """The kind of a trailing subgroup dim of a tile assignment (``last_tile_dims``)."""

    MANUAL = "manual"
    REPLICATED = "replicated"
    UNREDUCED = "unreduced"
    MAXIMAL = "maximal"


@dataclass(frozen=True, slots=True)
class ShardGroup:
    """``shard_as N`` / ``shard_like N``: shardings in one group are kept equal / alike."""

    kind: str  # "shard_as" or "shard_like"
    group_id: int

    def __post_init__(self) -> None:
        if self.kind not in ("shard_as", "shard_like"):
            raise ShardingError(f"shard group kind must be shard_as or shard_like, got "
                                f"{self.kind!r}")

    def __str__(self) -> str:
        return f"{self.kind} {self.group_id}"


@dataclass(frozen=True, slots=True)
class TileAssignment:
    """An array of device ids shaped ``dims``: an explicit list, or iota (canonicalized).

    >>> str(TileAssignment((4, 4, 1), reshape_dims=(4, 2, 2), transpose_perm=(1, 0, 2)))
    'devices=[4,4,1]<=[4,2,2]T(1,0,2)'
    >>> str(TileAssignment((2, 2), devices=(0, 2, 1, 3)))
    'devices=[2,2]0,2,1,3'
    """

    dims: tuple[int, ...]
    devices: tuple[int, ...] | None = None
    reshape_dims: tuple[int, ...] | None = None
    transpose_perm: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        dims = tuple(int(d) for d in self.dims)
        if not dims or any(d < 1 for d in dims):
            raise ShardingError(f"tile assignment dims must be positive, got {list(dims)}")
        object.__setattr__(self, "dims", dims)
        count = math.prod(dims)
        if self.devices is not None:
            if self.reshape_dims is not None or self.transpose_perm is not None:
                raise ShardingError("a tile assignment is either a device list or iota")
            devices = tuple(int(d) for d in self.devices)
            if len(devices) != count:
                raise ShardingError(f"tile assignment [{','.join(map(str, dims))}] needs "
                                    f"{count} devices but lists {len(devices)}")
            if len(set(devices)) != count or min(devices) < 0:
                raise ShardingError(f"tile assignment devices must be distinct non-negative "
                                    f"ids, got {list(devices)}")
            object.__setattr__(self, "devices", devices)
            return
        reshape = tuple(int(d) for d in (self.reshape_dims or (count,)))
        perm = tuple(int(p) for p in (self.transpose_perm or range(len(reshape))))
        if sorted(perm) != list(range(len(reshape))):
            raise ShardingError(f"iota transpose T({','.join(map(str, perm))}) is not a "
                                f"permutation of {len(reshape)} dims")
        if any(d < 1 for d in reshape) or math.prod(reshape) != count:
            raise ShardingError(f"iota reshape dims {list(reshape)} do not hold the {count} "
                                f"devices of tile dims {list(dims)}")
        reshape, perm = canonicalize_iota(reshape, perm)
        object.__setattr__(self, "reshape_dims", reshape)
        object.__setattr__(self, "transpose_perm", perm)

    @property
    def is_iota(self) -> bool:
        return self.devices is None

    @property
    def num_devices(self) -> int:
        return math.prod(self.dims)

    def array(self) -> np.ndarray:
        """The device ids as an array shaped ``dims``."""
        if self.devices is not None:
            return np.array(self.devices, dtype=np.int64).reshape(self.dims)
        reshape, perm = self._iota()
        return iota_array(reshape, perm, self.dims)

    def _iota(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(reshape_dims, transpose_perm) of an iota assignment (`__post_init__` fills both
        when no device list is given)."""
        assert self.reshape_dims is not None and self.transpose_perm is not None
        return self.reshape_dims, self.transpose_perm

    def reshape(self, dims: Sequence[int]) -> TileAssignment:
        """The same devices in the same order, viewed with other dims."""
        if self.devices is not None:
            return TileAssignment(tuple(dims), devices=self.devices)
        return TileAssignment(tuple(dims), reshape_dims=self.reshape_dims,
                              transpose_perm=self.transpose_perm)

    def __str__(self) -> str:
        text = f"devices=[{','.join(map(str, self.dims))}]"
        if self.devices is not None:
            return text + ",".join(map(str, self.devices))
        reshape, perm = self._iota()
        text += f"<=[{','.join(map(str, reshape))}]"
        if len(reshape) > 1:
            text += f"T({','.join(map(str, perm))})"
        return text


@dataclass(frozen=True, slots=True)
class HloSharding:
    """One GSPMD sharding; build it with the factory class methods or ``parse``.

    >>> str(HloSharding.tuple_([HloSharding.replicate(), HloSharding.maximal(1)]))
    '{{replicated}, {maximal device=1}}'
    """

    kind: ShardingKind
    tile_assignment: TileAssignment | None = None
    replicate_on_last_tile_dim: bool = False
    subgroup_types: tuple[SubgroupType, ...] = ()
    device: int | None = None
    elements: tuple[HloSharding, ...] = ()
    shard_group: ShardGroup | None = None
    metadata: str | None = None  # the raw text inside ``metadata={...}``

    def __post_init__(self) -> None:
        tiled = self.kind is ShardingKind.TILED
        if tiled != (self.tile_assignment is not None):
            raise ShardingError(f"a {self.kind.value} sharding has a tile assignment only "
                                f"when tiled")
        if (self.kind is ShardingKind.MAXIMAL) != (self.device is not None):
            raise ShardingError("a maximal sharding needs exactly one device")
        if self.device is not None and self.device < 0:
            raise ShardingError(f"a maximal sharding's device must be a non-negative device "
                                f"id, got device={self.device}")
        if self.kind is not ShardingKind.TUPLE and self.elements:
            raise ShardingError("only a tuple sharding has elements")
        object.__setattr__(self, "subgroup_types", tuple(self.subgroup_types))
        object.__setattr__(self, "elements", tuple(self.elements))
        if tiled:
            extra = len(self.subgroup_types) + int(self.replicate_on_last_tile_dim)
            if self.replicate_on_last_tile_dim and self.subgroup_types:
                raise ShardingError("use either last_tile_dim_replicate or last_tile_dims")
            assert self.tile_assignment is not None  # `tiled` says it is there
            if extra > len(self.tile_assignment.dims):
                raise ShardingError(f"tile assignment {self.tile_assignment} has fewer dims "
                                    f"than its {extra} subgroup dims")
        elif self.replicate_on_last_tile_dim or self.subgroup_types:
            raise ShardingError("only a tiled sharding has subgroup dims")

    # ----- factories -----
    @classmethod
    def replicate(cls) -> HloSharding:
        return cls(ShardingKind.REPLICATED)

    @classmethod
    def manual(cls) -> HloSharding:
        return cls(ShardingKind.MANUAL)

    @classmethod
    def unknown(cls) -> HloSharding:
        return cls(ShardingKind.UNKNOWN)

    @classmethod
    def unreduced(cls) -> HloSharding:
        return cls(ShardingKind.UNREDUCED)

    @classmethod
    def maximal(cls, device: int) -> HloSharding:
        return cls(ShardingKind.MAXIMAL, device=int(device))

    @classmethod
    def tuple_(cls, elements: Sequence[HloSharding]) -> HloSharding:
        return cls(ShardingKind.TUPLE, elements=tuple(elements))

    @classmethod
    def tile(cls, tile_assignment: TileAssignment,
             subgroup_types: Sequence[SubgroupType] = ()) -> HloSharding:
        """A tiled sharding, canonicalized as ``HloSharding::Subgroup`` does.

        >>> ta = TileAssignment((1, 2, 4), reshape_dims=(8,))
        >>> str(HloSharding.tile(ta, [SubgroupType.MANUAL]))
        '{devices=[1,2,4]<=[8] last_tile_dims={manual}}'
        >>> str(HloSharding.tile(TileAssignment((1, 8)), [SubgroupType.REPLICATED]))
        '{replicated}'
        """
        types = list(subgroup_types)
        dims = list(tile_assignment.dims)
        data_rank = len(dims) - len(types)
        # Subgroup dims of size 1 carry nothing: XLA drops them.
        keep = [i for i, t in enumerate(types) if dims[data_rank + i] != 1]
        if len(keep) != len(types):
            types = [types[i] for i in keep]
            dims = dims[:data_rank] + [dims[data_rank + i] for i in keep]
            tile_assignment = tile_assignment.reshape(dims)
        if types and len(set(types)) == 1 and math.prod(dims[:data_rank]) == 1:
            if types[0] is SubgroupType.MANUAL:
                return cls.manual()
            if types[0] is SubgroupType.REPLICATED:
                return cls.replicate()
        if types == [SubgroupType.REPLICATED]:
            return cls(ShardingKind.TILED, tile_assignment, replicate_on_last_tile_dim=True)
        return cls(ShardingKind.TILED, tile_assignment, subgroup_types=tuple(types))

    # ----- queries -----
    @property
    def is_tuple(self) -> bool:
        return self.kind is ShardingKind.TUPLE

    @property
    def is_tiled(self) -> bool:
        return self.kind is ShardingKind.TILED

    @property
    def num_subgroup_dims(self) -> int:
        return len(self.subgroup_types) + int(self.replicate_on_last_tile_dim)

    @property
    def all_subgroup_types(self) -> tuple[SubgroupType, ...]:
        """Types of the trailing subgroup dims, ``last_tile_dim_replicate`` included."""
        if self.replicate_on_last_tile_dim:
            return (SubgroupType.REPLICATED,)
        return self.subgroup_types

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """Number of shards of each tensor dim (the tile dims without subgroup dims)."""
        if self.tile_assignment is None:
            raise ShardingError(f"{self} is not tiled")
        dims = self.tile_assignment.dims
        return dims[:len(dims) - self.num_subgroup_dims]

    @property
    def num_devices(self) -> int:
        if self.tile_assignment is None:
            return 1
        return self.tile_assignment.num_devices

    @property
    def tiles(self) -> TileAssignment:
        """The tile assignment of a tiled sharding (ShardingError for another kind)."""
        if self.tile_assignment is None:
            raise ShardingError(f"{self} is not tiled")
        return self.tile_assignment

    def device_array(self) -> np.ndarray:
        """The tile assignment's device ids (tiled shardings only)."""
        if self.tile_assignment is None:
            raise ShardingError(f"{self} has no tile assignment")
        return self.tile_assignment.array()

    def check_shape(self, shape, tensor: str) -> None:
        """Raise `ShardingError` unless this sharding fits `shape` (an IR shape): a tiled
        sharding tiles every dim of its array, a tuple sharding has one element per leaf."""
        leaves = shape.leaves()
        if self.is_tuple:
            if len(self.elements) != len(leaves):
                raise ShardingError(f"tuple sharding with {len(self.elements)} elements, but "
                                    f"{tensor} holds {len(leaves)} arrays ({shape})")
            pairs = zip(self.elements, leaves)
        else:
            pairs = ((self, leaf) for leaf in leaves)
        for element, leaf in pairs:
            if element.is_tiled and not leaf.is_token and len(element.tile_shape) != leaf.rank:
                raise ShardingError(
                    f"sharding {element} tiles {len(element.tile_shape)} dims, but {tensor} is "
                    f"{leaf}, of rank {leaf.rank}; give one tile dim per dim (plus "
                    "last_tile_dim_replicate or last_tile_dims for replication)")

    # ----- text -----
    @classmethod
    def parse(cls, text: str) -> HloSharding:
        """Parse the text of a ``sharding=`` attribute value, braces included."""
        parser = _Parser(text)
        sharding = parser.sharding()
        parser.skip_space()
        if parser.pos != len(text):
            raise parser.error("unexpected text after the sharding")
        return sharding

    def __str__(self) -> str:
        if self.kind is ShardingKind.TUPLE:
            parts = []
            for index, element in enumerate(self.elements):
                # XLA marks every fifth element of a long tuple with its index.
                if index and index % 5 == 0:
                    parts.append(f", /*index={index}*/")
                elif index:
                    parts.append(", ")
                parts.append(str(element))
            return "{" + "".join(parts) + "}"
        if self.kind is ShardingKind.MAXIMAL:
            body = f"maximal device={self.device}"
        elif self.kind is ShardingKind.TILED:
            body = str(self.tile_assignment)
            if self.replicate_on_last_tile_dim:
                body += " last_tile_dim_replicate"
            if self.subgroup_types:
                body += (" last_tile_dims={"
                         + ", ".join(t.value for t in self.subgroup_types) + "}")
        else:
            body = self.kind.value
        if self.shard_group is not None:
            body += f" {self.shard_group}"
        if self.metadata is not None:
            body += " metadata={" + self.metadata + "}"
        return "{" + body + "}"

    def __repr__(self) -> str:
        return f"HloSharding({self})"


_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_INT = re.compile(r"-?\d+")


class _Parser:
    """Recursive descent over one sharding attribute value."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def error(self, message: str) -> ParseError:
        found = self.text[self.pos:self.pos + 12] or "end of text"
        return ParseError(f"{message} (at '{found}') in sharding {self.text!r}", line=1,
                          column=self.pos + 1)

    def skip_space(self) -> None:
        while True:
            while self.pos < len(self.text) and self.text[self.pos].isspace():
                self.pos += 1
            if not self.text.startswith("/*", self.pos):
                return
            end = self.text.find("*/", self.pos)
            if end < 0:
                raise self.error("unterminated comment")
            self.pos = end + 2

    def accept(self, token: str) -> bool:
        self.skip_space()
        if self.text.startswith(token, self.pos):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.accept(token):
            raise self.error(f"expected '{token}'")

    def word(self) -> str:
        self.skip_space()
        found = _WORD.match(self.text, self.pos)
        if found is None:
            raise self.error("expected a sharding keyword")
        self.pos = found.end()
        return found.group()

    def integer(self) -> int:
        self.skip_space()
        found = _INT.match(self.text, self.pos)
        if found is None:
            raise self.error("expected an integer")
        self.pos = found.end()
        return int(found.group())

    def int_list(self, open_: str, close: str) -> list[int]:
        self.expect(open_)
        values: list[int] = []
        if self.accept(close):
            return values
        while True:
            values.append(self.integer())
            if self.accept(close):
                return values
            self.expect(",")

    def sharding(self, depth: int = 0) -> HloSharding:
        if depth > MAX_NESTING:
            raise self.error(f"tuple sharding {TOO_DEEP}")
        self.expect("{")
        if self.accept("}"):
            return HloSharding.tuple_(())
        self.skip_space()
        if self.text.startswith("{", self.pos):
            elements = [self.sharding(depth + 1)]
            while self.accept(","):
                elements.append(self.sharding(depth + 1))
            self.expect("}")
            return HloSharding.tuple_(elements)
        return self.single()

    def single(self) -> HloSharding:
        start = self.pos
        fields: dict = {"kind": None, "types": [], "replicate_last": False, "group": None,
                        "metadata": None, "tiles": None, "device": None}
        while not self.accept("}"):
            self.attribute(fields)
        kind = fields["kind"]
        try:
            if kind is None:
                raise ShardingError("expected replicated, manual, unknown, unreduced, maximal "
                                    "or devices=[...]")
            if kind is ShardingKind.MAXIMAL and fields["device"] is None:
                raise ShardingError("maximal sharding needs device=N")
            if kind is ShardingKind.TILED:
                types = list(fields["types"])
                if fields["replicate_last"]:
                    if types:
                        raise ShardingError("use either last_tile_dim_replicate or "
                                            "last_tile_dims")
                    types = [SubgroupType.REPLICATED]
                if len(types) > len(fields["tiles"].dims):
                    raise ShardingError(f"{len(types)} subgroup dims but only "
                                        f"{len(fields['tiles'].dims)} tile dims")
                sharding = HloSharding.tile(fields["tiles"], types)
            elif kind is ShardingKind.MAXIMAL:
                sharding = HloSharding.maximal(fields["device"])
            else:
                sharding = HloSharding(kind)
        except ShardingError as error:
            self.pos = start
            raise self.error(f"invalid sharding: {error}") from None
        if fields["group"] is None and fields["metadata"] is None:
            return sharding
        return HloSharding(sharding.kind, sharding.tile_assignment,
                           sharding.replicate_on_last_tile_dim, sharding.subgroup_types,
                           sharding.device, (), fields["group"], fields["metadata"])

    def attribute(self, fields: dict) -> None:
        word_start = self.pos
        word = self.word()
        simple = {k.value: k for k in (ShardingKind.REPLICATED, ShardingKind.MANUAL,
                                       ShardingKind.UNKNOWN, ShardingKind.UNREDUCED,
                                       ShardingKind.MAXIMAL)}
        if word in simple or word == "devices":
            if fields["kind"] is not None:
                self.pos = word_start
                raise self.error(f"'{word}' after the sharding kind was already given")
            fields["kind"] = simple.get(word, ShardingKind.TILED)
            if word == "devices":
                self.expect("=")
                fields["tiles"] = self.tiles()
        elif word == "device":
            self.expect("=")
            fields["device"] = self.integer()
        elif word == "last_tile_dim_replicate":
            fields["replicate_last"] = True
        elif word == "last_tile_dims":
            self.expect("=")
            self.expect("{")
            while True:
                name = self.word()
                try:
                    fields["types"].append(SubgroupType(name))
                except ValueError:
                    raise self.error(f"unknown subgroup type '{name}'") from None
                if self.accept("}"):
                    break
                self.expect(",")
        elif word in ("shard_as", "shard_like"):
            fields["group"] = ShardGroup(word, self.integer())
        elif word == "metadata":
            self.expect("=")
            fields["metadata"] = self.braced_raw()
        else:
            self.pos = word_start
            raise self.error(f"unknown sharding attribute '{word}'")

    def tiles(self) -> TileAssignment:
        dims = self.int_list("[", "]")
        try:
            if self.accept("<="):
                reshape = self.int_list("[", "]")
                perm = self.int_list("(", ")") if self.accept("T") else None
                return TileAssignment(tuple(dims), reshape_dims=tuple(reshape),
                                      transpose_perm=None if perm is None else tuple(perm))
            devices = [self.integer()]
            while self.accept(","):
                devices.append(self.integer())
            return TileAssignment(tuple(dims), devices=tuple(devices))
        except ShardingError as error:
            raise self.error(f"invalid tile assignment: {error}") from None

    def braced_raw(self) -> str:
        """The text inside a balanced ``{...}``, strings respected, kept verbatim."""
        self.expect("{")
        start, depth, in_string = self.pos, 1, False
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if in_string:
                if char == "\\":
                    self.pos += 1
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    self.pos += 1
                    return self.text[start:self.pos - 1]
            self.pos += 1
        raise self.error("unterminated metadata={...}")
