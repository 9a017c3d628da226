"""The axis-based ``TensorSharding``: per tensor dim, the mesh axes (major to minor) sharding it.

Invariants, checked at construction: every axis and sub-axis exists in the mesh and is valid;
no axis or overlapping sub-axis is used twice across the dims, ``replicated`` and
``unreduced``; an empty closed dim has no priority; ``replicated`` and ``unreduced`` are kept
sorted in mesh order (as Shardy prints them); ``reduction`` (how the unreduced axes' partial
values combine: ``sum``, ``max`` or ``min``, Shardy's ``unreduced=max{...}``) is ``sum`` when
nothing is unreduced.

Shards: dim ``i`` is split into ``n_i`` = product of its axis sizes shards; a device's shard
index along the dim is the mixed-radix number of its coordinates along those axes, major
first. Shards have the ceiling size ``ceil(d/n_i)``; the last ones are padded, so each shard
knows its valid extent. Worked example: mesh ``x=2, y=4``, dims ``[{"y"}, {"x"}]``, shape
``(6, 3)``: shard shape ``(2, 2)``; device 5 = (x=1, y=1) holds rows 2..3 and column 2 only
(its second column is padding).

A sharding converts itself into the forms others read: Shardy text (``to_text``, parsed by
`sdy_text`), a `PartitionSpec` (``to_partition_spec``; `named_sharding` goes the other way)
and GSPMD's ``HloSharding`` (``to_hlo_sharding``, `axes_to_hlo`; `gspmd` reads it back).
They live here, with `PartitionSpec` below in `partition_spec`, because ir's printer asks a
sharding for its text and GSPMD form, and the readers of those forms build on this module.

>>> from xla_spmd.mesh import make_mesh
>>> s = TensorSharding(make_mesh({"x": 2, "y": 4}), [DimSharding(["y"]), DimSharding(["x"])])
>>> s.shard_shape((6, 3)), s.shard_offsets((6, 3), 5)
((2, 2), ((2, 2), (2, 1)))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import TYPE_CHECKING, Protocol

import numpy as np

from xla_spmd.errors import ShardingError
from xla_spmd.ir.hlo_sharding import HloSharding, SubgroupType, TileAssignment
from xla_spmd.mesh import AxisRef, Mesh, as_axis_ref, axis_digits, find_iota, print_mesh

from .partition_spec import UNCONSTRAINED, PartitionSpec


@dataclass(frozen=True, slots=True)
class DimSharding:
    """How one tensor dim is sharded: axes major to minor, open (``?``) or closed, priority.

    >>> str(DimSharding(["a"], is_closed=False)), str(DimSharding([], priority=None))
    ('{"a", ?}', '{}')
    >>> str(DimSharding([AxisRef("b", (1, 2))], priority=1))
    '{"b":(1)2}p1'
    """

    axes: tuple[AxisRef, ...] = ()
    is_closed: bool = True
    priority: int | None = None

    if TYPE_CHECKING:  # what the generated __init__ accepts; __post_init__ normalizes it
        def __init__(self, axes: Iterable[AxisRef | str] = (), is_closed: bool = True,
                     priority: int | None = None) -> None: ...

    def __post_init__(self) -> None:
        axes = tuple(as_axis_ref(axis) for axis in self.axes)
        object.__setattr__(self, "axes", axes)
        if self.priority is not None:
            if isinstance(self.priority, bool) or not isinstance(self.priority, int) \
                    or self.priority < 0:
                raise ShardingError(f"dim sharding priority must be an int >= 0, got "
                                    f"{self.priority!r}")
            if not axes and self.is_closed:
                raise ShardingError(f"an empty closed dim sharding cannot have priority "
                                    f"p{self.priority}")

    @property
    def is_open(self) -> bool:
        return not self.is_closed

    def __str__(self) -> str:
        items = [str(axis) for axis in self.axes]
        if not self.is_closed:
            items.append("?")
        text = "{" + ", ".join(items) + "}"
        return text if self.priority is None else f"{text}p{self.priority}"


# A dim as `TensorSharding` accepts it: a DimSharding, axis names or refs (closed), one
# name, or None (replicated).
DimInput = DimSharding | Sequence[AxisRef | str] | str | None


def _as_dim(dim: DimInput) -> DimSharding:
    if isinstance(dim, DimSharding):
        return dim
    if dim is None:
        return DimSharding()
    if isinstance(dim, (str, AxisRef)):
        return DimSharding((as_axis_ref(dim),))
    return DimSharding(tuple(map(as_axis_ref, dim)))


class _Sharded(Protocol):
    """An instruction, as far as `axis_shardings` reads it (this layer does not import ir's
    module)."""

    @property
    def name(self) -> str: ...

    def sharding_leaves(self) -> tuple[object, ...]: ...


def axis_shardings(inst: _Sharded) -> tuple[TensorSharding, ...]:
    """The axis-based sharding of each result leaf of `inst` (an `Instruction`): every value
    has one once shardings are imported and propagated; a missing or GSPMD one is an error
    naming the instruction."""
    found = []
    for sharding in inst.sharding_leaves():
        if not isinstance(sharding, TensorSharding):
            raise ShardingError(f"{inst.name}: expected an axis-based sharding on each result, "
                                f"got {sharding}")
        found.append(sharding)
    return tuple(found)


def placement_key(mesh: Mesh, dims: Sequence[Sequence[object]]) -> tuple:
    """What decides where a sharded array's data lives: the mesh and, per dim, its axes, with
    trailing unsharded dims dropped. `TensorSharding` and `NamedSharding` hash by it."""
    key = [tuple(axes) for axes in dims]
    while key and not key[-1]:
        key.pop()
    return mesh, tuple(key)


# How the partial values along unreduced axes combine (Shardy's ReductionOp), default first.
REDUCTIONS = ("sum", "max", "min")


@dataclass(frozen=True, slots=True)
class TensorSharding:
    """A tensor's sharding over a mesh; plain data that knows nothing of ops.

    ``dims`` may be given as DimSharding values or as lists of axis names (closed).

    >>> from xla_spmd.mesh import make_mesh
    >>> TensorSharding(make_mesh({"a": 2, "b": 2}), [["a"], []], replicated=["b"])
    TensorSharding(@mesh, [{"a"}, {}], replicated={"b"})
    """

    mesh: Mesh
    dims: tuple[DimSharding, ...]
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()
    mesh_name: str | None = "mesh"  # None prints the mesh inline
    reduction: str = "sum"          # how unreduced partial values combine: sum, max, min

    if TYPE_CHECKING:  # what the generated __init__ accepts; __post_init__ normalizes it
        def __init__(self, mesh: Mesh, dims: Iterable[DimInput],
                     replicated: Iterable[AxisRef | str] = (),
                     unreduced: Iterable[AxisRef | str] = (),
                     mesh_name: str | None = "mesh", reduction: str = "sum") -> None: ...

    def __post_init__(self) -> None:
        if not isinstance(self.mesh, Mesh):
            raise ShardingError(f"TensorSharding needs a Mesh, got {type(self.mesh).__name__}")
        dims = tuple(_as_dim(dim) for dim in self.dims)
        object.__setattr__(self, "dims", dims)
        seen: list[tuple[AxisRef, str]] = []
        for index, dim in enumerate(dims):
            for axis in dim.axes:
                self._check_axis(axis, f"dim {index}", seen)
        for field in ("replicated", "unreduced"):
            refs = tuple(as_axis_ref(axis) for axis in getattr(self, field))
            for axis in refs:
                self._check_axis(axis, field, seen)
            order = self.mesh.axis_names
            object.__setattr__(self, field, tuple(
                sorted(refs, key=lambda ref: (order.index(ref.name), ref.pre_size))))
        if self.reduction not in REDUCTIONS:
            raise ShardingError(f"unreduced axes combine by one of {list(REDUCTIONS)}, got "
                                f"{self.reduction!r}")
        if not self.unreduced:
            object.__setattr__(self, "reduction", "sum")

    def __hash__(self) -> int:
        """By placement alone, so that a `NamedSharding` equal to this one (it places data
        alike, whether dims are open or closed) hashes alike too; equal shardings agree on it
        a fortiori."""
        return hash(placement_key(self.mesh, [
            [axis if axis.is_sub_axis else axis.name for axis in dim.axes] for dim in self.dims]))

    def _check_axis(self, axis: AxisRef, where: str, seen: list[tuple[AxisRef, str]]) -> None:
        if not self.mesh.has_axis(axis.name):
            raise ShardingError(f"{where} of the sharding uses axis {axis}, which is not in mesh "
                                f"{self.mesh!r} (axes {list(self.mesh.axis_names)})")
        try:
            axis.validate(self.mesh.shape[axis.name])
        except ShardingError as error:
            raise ShardingError(f"{where} of the sharding: {error}") from None
        for other, other_where in seen:
            if axis.overlaps(other):
                what = "twice" if axis == other else f"overlapping with {other}"
                raise ShardingError(f"axis {axis} is used {what}: in {other_where} and in "
                                    f"{where} of the sharding; each axis may shard one place")
        seen.append((axis, where))

    # ----- construction helpers -----
    @classmethod
    def replicated_on(cls, mesh: Mesh, rank: int, mesh_name: str | None = "mesh"
                      ) -> TensorSharding:
        """The fully replicated (all dims closed and empty) sharding of a rank-``rank`` tensor."""
        return cls(mesh, (DimSharding(),) * rank, mesh_name=mesh_name)

    @classmethod
    def open_on(cls, mesh: Mesh, rank: int, mesh_name: str | None = "mesh") -> TensorSharding:
        """All dims open and empty: no constraint (what a missing sharding means)."""
        return cls(mesh, (DimSharding(is_closed=False),) * rank, mesh_name=mesh_name)

    # ----- queries -----
    @property
    def rank(self) -> int:
        return len(self.dims)

    def dim_axes(self, dim: int) -> tuple[AxisRef, ...]:
        return self.dims[dim].axes

    def axis_size(self, axis: AxisRef) -> int:
        return self.mesh.axis_size(axis)

    def num_shards(self, dim: int) -> int:
        """How many shards dim ``dim`` is cut into."""
        return math.prod(self.mesh.axis_size(axis) for axis in self.dims[dim].axes)

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """Shards per dim."""
        return tuple(self.num_shards(i) for i in range(self.rank))

    @property
    def sharded_axes(self) -> tuple[AxisRef, ...]:
        """All axes that shard some dim, in dim order then major to minor."""
        return tuple(axis for dim in self.dims for axis in dim.axes)

    @property
    def is_fully_replicated(self) -> bool:
        """No dim is sharded and nothing is unreduced."""
        return not self.sharded_axes and not self.unreduced

    def check_rank(self, shape: Sequence[int], tensor: str = "tensor") -> None:
        """Raise ShardingError naming the tensor if the sharding's rank differs from the shape's."""
        if len(shape) != self.rank:
            raise ShardingError(f"sharding {self} has {self.rank} dims but {tensor} has shape "
                                f"{tuple(shape)} of rank {len(shape)}")
        if any(int(d) < 0 for d in shape):
            raise ShardingError(f"{tensor} has a negative dim in shape {tuple(shape)}")

    # ----- shards -----
    def shard_index(self, device_id: int) -> tuple[int, ...]:
        """The index of the shard that ``device_id`` holds, per dim."""
        coords = self.mesh.device_coords(device_id)
        index = []
        for dim in self.dims:
            value = 0
            for axis in dim.axes:
                axis_position = self.mesh.axis_index(axis.name)
                full = self.mesh.axis_sizes[axis_position]
                value = value * axis.size(full) + axis.coordinate(coords[axis_position],
                                                                  axis_size=full)
            index.append(value)
        return tuple(index)

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """The per-device (padded) shard shape: ``ceil(d / shards)`` per dim."""
        self.check_rank(global_shape)
        return tuple(-(-int(d) // n) for d, n in zip(global_shape, self.tile_shape, strict=True))

    def shard_offsets(self, global_shape: Sequence[int], device_id: int
                      ) -> tuple[tuple[int, int], ...]:
        """Per dim ``(offset, valid_size)`` of the data ``device_id`` holds; the rest is padding."""
        shard = self.shard_shape(global_shape)
        result = []
        for size, extent, index in zip(global_shape, shard, self.shard_index(device_id),
                                       strict=True):
            offset = min(index * extent, int(size))
            result.append((offset, max(0, min(extent, int(size) - offset))))
        return tuple(result)

    def shard_slices(self, global_shape: Sequence[int], device_id: int) -> tuple[slice, ...]:
        """Python slices of the global array holding ``device_id``'s valid data."""
        return tuple(slice(offset, offset + valid)
                     for offset, valid in self.shard_offsets(global_shape, device_id))

    def devices_holding(self, global_shape: Sequence[int], index: Sequence[int]
                        ) -> tuple[int, ...]:
        """The devices (ascending) whose shard holds the element at global ``index``."""
        self.check_rank(global_shape)
        if len(index) != self.rank or any(
                not 0 <= int(i) < int(d) for i, d in zip(index, global_shape, strict=True)):
            raise ShardingError(f"index {tuple(index)} is outside shape {tuple(global_shape)}")
        shard = self.shard_shape(global_shape)
        wanted = tuple(int(i) // extent for i, extent in zip(index, shard, strict=True))
        return tuple(sorted(d for d in self.mesh.all_device_ids if self.shard_index(d) == wanted))

    def closed(self) -> TensorSharding:
        """This sharding with every dim closed and without priorities: what a value holds
        once propagation is done (an array's sharding, not a constraint on it)."""
        return self.replace(dims=[DimSharding(d.axes) for d in self.dims])

    # ----- conversions and text -----
    def to_partition_spec(self) -> PartitionSpec:
        """The JAX PartitionSpec (full axes only; open dims must be empty)."""
        return tensor_sharding_to_spec(self)

    def to_text(self) -> str:
        """Shardy text, ``#sdy.sharding<@mesh, [...]>`` (`sdy_text` parses it back)."""
        return f"#sdy.sharding<{self.body_text()}>"

    def to_hlo_sharding(self) -> HloSharding:
        """The GSPMD form, as HLO text's ``sharding={...}`` holds it (`axes_to_hlo`)."""
        return axes_to_hlo(self)

    def body_text(self) -> str:
        """``@mesh, [{...}, ...], replicated={...}`` (the part inside ``<...>``): the mesh
        by name, or inline when ``mesh_name`` is None; then dims, replicated, unreduced."""
        if self.mesh_name is None:
            mesh = "mesh" + print_mesh(self.mesh)
        else:
            mesh = "@" + self.mesh_name
        text = f"{mesh}, [{', '.join(str(dim) for dim in self.dims)}]"
        if self.replicated:
            text += ", replicated={" + ", ".join(map(str, self.replicated)) + "}"
        if self.unreduced:
            kind = "" if self.reduction == "sum" else self.reduction
            text += f", unreduced={kind}{{" + ", ".join(map(str, self.unreduced)) + "}"
        return text

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"TensorSharding({self.body_text()})"

    def replace(self, *, dims: Iterable | None = None, replicated: Iterable | None = None,
                unreduced: Iterable | None = None, mesh_name: str | None | EllipsisType = ...,
                reduction: str | None = None) -> TensorSharding:
        """A copy with some fields changed (validated again)."""
        return TensorSharding(
            self.mesh, tuple(self.dims if dims is None else dims),
            tuple(self.replicated if replicated is None else replicated),
            tuple(self.unreduced if unreduced is None else unreduced),
            self.mesh_name if mesh_name is ... else mesh_name,
            self.reduction if reduction is None else reduction)


def is_unconstrained(sharding: TensorSharding) -> bool:
    """Whether `sharding` says nothing: a dim or more, every dim open and unsharded, no
    replicated or unreduced axes (Shardy leaves such a value without a ``sdy.sharding``).
    A scalar's ``[]`` is a statement (written by a user, it stays)."""
    return (bool(sharding.dims) and not sharding.replicated and not sharding.unreduced
            and all(d.is_open and not d.axes for d in sharding.dims))


# ---------------------------------------------------------------- PartitionSpec
def tensor_sharding_to_spec(sharding: TensorSharding) -> PartitionSpec:
    """The PartitionSpec of a sharding; sub-axes, open dims with axes and unreduced axes have
    no PartitionSpec form and raise ShardingError."""
    entries = []
    for index, dim in enumerate(sharding.dims):
        subs = [axis for axis in dim.axes if axis.is_sub_axis]
        if subs:
            raise ShardingError(f"dim {index} of {sharding} uses sub-axis {subs[0]}, which a "
                                f"PartitionSpec cannot express")
        if dim.is_open:
            if dim.axes:
                raise ShardingError(f"dim {index} of {sharding} is open with axes; a "
                                    f"PartitionSpec entry is either axes or UNCONSTRAINED")
            entries.append(UNCONSTRAINED)
        elif not dim.axes:
            entries.append(None)
        elif len(dim.axes) == 1:
            entries.append(dim.axes[0].name)
        else:
            entries.append(tuple(axis.name for axis in dim.axes))
    if sharding.unreduced:
        raise ShardingError(f"{sharding} has unreduced axes, which a PartitionSpec cannot "
                            f"express")
    return PartitionSpec(*entries)


# ---------------------------------------------------------------- axis-based → GSPMD
def axes_to_hlo(sharding: TensorSharding, *, manual_axes: Sequence[str] = (),
                explicit_devices: bool | None = None) -> HloSharding:
    """The GSPMD sharding of an axis-based one (``explicit_devices`` None: list iff the mesh
    has device ids).

    >>> from xla_spmd.mesh import make_mesh
    >>> mesh = make_mesh({"axis_0": 2, "axis_1": 16})
    >>> str(axes_to_hlo(TensorSharding(mesh, [[], ["axis_0"]])))
    '{devices=[1,2,16]<=[32] last_tile_dim_replicate}'
    """
    mesh = sharding.mesh
    manual = _manual_refs(sharding, manual_axes)
    if not mesh.axis_names or mesh.size == 1 and not manual:
        if mesh.is_maximal:
            return HloSharding.maximal(mesh.all_device_ids[0])
        return HloSharding.replicate()
    if manual and len(manual) == len(mesh.axis_names):
        return HloSharding.manual()
    used = [*sharding.sharded_axes, *manual, *sharding.unreduced, *sharding.replicated]
    digits = axis_digits(mesh, used)
    index = {ref: i for i, ref in enumerate(digits)}
    sizes = [mesh.axis_size(ref) for ref in digits]
    perm: list[int] = []
    dims: list[int] = []
    for dim in sharding.dims:
        perm.extend(index[ref] for ref in dim.axes)
        dims.append(math.prod(mesh.axis_size(ref) for ref in dim.axes))
    types: list[SubgroupType] = []
    for refs, kind in ((manual, SubgroupType.MANUAL), (sharding.unreduced, SubgroupType.UNREDUCED)):
        if refs:
            perm.extend(index[ref] for ref in refs)
            dims.append(math.prod(mesh.axis_size(ref) for ref in refs))
            types.append(kind)
    rest = [i for i in range(len(digits)) if i not in perm]
    if rest:
        perm.extend(rest)
        dims.append(math.prod(sizes[i] for i in rest))
        types.append(SubgroupType.REPLICATED)
    iota = TileAssignment(tuple(dims or [1]), reshape_dims=tuple(sizes), transpose_perm=tuple(perm))
    if mesh.device_ids is None and not explicit_devices:
        return HloSharding.tile(iota, types)
    ids = np.array(mesh.all_device_ids, dtype=np.int64)[iota.array().ravel()]
    if explicit_devices is False:
        found = find_iota(ids, iota.dims)
        if found is None:
            raise ShardingError(f"sharding {sharding} over mesh {mesh!r} has no iota form; "
                                f"pass explicit_devices=True or None")
        tiles = TileAssignment(iota.dims, reshape_dims=found.reshape_dims,
                               transpose_perm=found.transpose_perm)
        return HloSharding.tile(tiles, types)
    return HloSharding.tile(TileAssignment(iota.dims, devices=tuple(map(int, ids))), types)


def _manual_refs(sharding: TensorSharding, manual_axes: Sequence[str]) -> tuple[AxisRef, ...]:
    refs = tuple(AxisRef(name) for name in manual_axes)
    order = sharding.mesh.axis_names
    for ref in refs:
        sharding.mesh.axis_index(ref.name)
        for used in (*sharding.sharded_axes, *sharding.unreduced, *sharding.replicated):
            if used.overlaps(ref):
                raise ShardingError(f"manual axis {ref} is also used by sharding {sharding}")
    return tuple(sorted(refs, key=lambda ref: order.index(ref.name)))
