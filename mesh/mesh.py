"""The device mesh: ordered named axes with sizes, over an array of logical device ids.

Invariants: axis names are unique non-empty strings, sizes are positive, and ``device_ids``
(when given) is a permutation of ``range(size)``, stored as None when it is the identity
(iota), so two meshes with the same devices compare equal. The one exception is a maximal
mesh ``<[], device_ids=[d]>``: no axes and one device of any id.

Devices are laid out row-major over the axes: the device at mesh coordinates ``c`` is
``device_ids[ravel(c)]``.

>>> mesh = make_mesh({"data": 2, "model": 4})
>>> mesh
Mesh('data': 2, 'model': 4)
>>> mesh.device_coords(6), mesh.device_at((1, 2))
((1, 2), 6)
>>> mesh.device_groups(["model"]).iota_text()
'[2,4]<=[8]'
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

import xla_spmd.config as config
from xla_spmd.errors import ShardingError
from xla_spmd.iota import IotaForm, find_iota

from .axis import AxisRef, as_axis_ref


@dataclass(frozen=True, slots=True)
class Mesh:
    """Named axes (major to minor) with sizes over logical device ids.

    >>> Mesh(("x",), (4,), device_ids=(3, 2, 1, 0)).device_at((0,))
    3
    >>> Mesh(("x",), (4,), device_ids=(0, 1, 2, 3)) == make_mesh({"x": 4})
    True
    """

    axis_names: tuple[str, ...]
    axis_sizes: tuple[int, ...]
    device_ids: tuple[int, ...] | None = None
    # One AxisType per axis (None: every axis Auto). Not part of equality: a mesh read back
    # from program text (which does not say it) is the same mesh.
    axis_types: tuple | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if _is_device_array(self.axis_names, self.axis_sizes):
            # JAX's form, ``Mesh(device_array, axis_names)``: the array's shape gives the sizes
            devices = np.asarray(self.axis_names, dtype=object)
            object.__setattr__(self, "device_ids", tuple(
                int(getattr(d, "id", d)) for d in devices.flat))
            names = self.axis_sizes
            object.__setattr__(self, "axis_names",
                               (names,) if isinstance(names, str) else tuple(names))
            object.__setattr__(self, "axis_sizes", devices.shape)
        names = tuple(self.axis_names)
        sizes = tuple(self.axis_sizes)
        if len(names) != len(sizes):
            raise ShardingError(f"mesh has {len(names)} axis names but {len(sizes)} sizes")
        seen: set[str] = set()
        for name, size in zip(names, sizes, strict=True):
            if not isinstance(name, str) or not name:
                raise ShardingError(f"mesh axis name must be a non-empty string, got {name!r}")
            if name in seen:
                raise ShardingError(f"duplicate mesh axis name {name!r} in {list(names)}")
            seen.add(name)
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
                raise ShardingError(f"mesh axis {name!r} must have a positive integer size, "
                                    f"got {size!r}")
        sizes = tuple(int(s) for s in sizes)
        object.__setattr__(self, "axis_names", names)
        object.__setattr__(self, "axis_sizes", sizes)
        object.__setattr__(self, "device_ids", _check_device_ids(self.device_ids, names, sizes))
        if self.axis_types is not None:
            object.__setattr__(self, "axis_types", _check_axis_types(self.axis_types, names))

    @classmethod
    def from_shape(cls, shape: Mapping[str, int],
                   device_ids: Iterable[int] | None = None) -> Mesh:
        """A mesh from ``{name: size}`` in major-to-minor order, as ``make_mesh`` lays it out
        but untyped (every axis Auto, whatever ``make_mesh``'s default): the mesh of shardings
        read from program text, which does not give axis types."""
        return Mesh(tuple(shape), tuple(shape.values()),
                    None if device_ids is None else tuple(int(d) for d in device_ids))

    # ----- sizes and axes -----
    @property
    def shape(self) -> dict[str, int]:
        """``{axis name: size}``, major to minor."""
        return dict(zip(self.axis_names, self.axis_sizes, strict=True))

    @property
    def size(self) -> int:
        """The number of devices."""
        return math.prod(self.axis_sizes)

    @property
    def is_maximal(self) -> bool:
        """A mesh of no axes over one explicit device, as Shardy writes ``<[], device_ids=[3]>``."""
        return not self.axis_names and self.device_ids is not None

    @property
    def is_iota(self) -> bool:
        return self.device_ids is None

    def has_axis(self, name: str) -> bool:
        return name in self.axis_names

    @property
    def explicit_axes(self) -> tuple[str, ...]:
        """The axes of type `AxisType.Explicit` (JAX's sharding in types), major first."""
        if self.axis_types is None:
            return ()
        return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                     if t is AxisType.Explicit)

    @property
    def auto_axes(self) -> tuple[str, ...]:
        """The axes of type `AxisType.Auto` (every axis, unless typed otherwise)."""
        if self.axis_types is None:
            return self.axis_names
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is AxisType.Auto)

    def with_axis_types(self, axis_types) -> Mesh:
        """This mesh with other axis types (one `AxisType`, or one per axis)."""
        return Mesh(self.axis_names, self.axis_sizes, self.device_ids, axis_types)

    def axis_index(self, name: str) -> int:
        """The position of an axis, major first; a clear error for an unknown name."""
        try:
            return self.axis_names.index(name)
        except ValueError:
            raise ShardingError(f"unknown mesh axis {name!r}; mesh {self!r} has axes "
                                f"{list(self.axis_names)}") from None

    def axis_size(self, axis: str | AxisRef) -> int:
        """Size of an axis or sub-axis (validated against this mesh)."""
        ref = as_axis_ref(axis)
        full = self.axis_sizes[self.axis_index(ref.name)]
        ref.validate(full)
        return ref.size(full)

    # ----- devices -----
    @property
    def all_device_ids(self) -> tuple[int, ...]:
        """Device ids in row-major mesh order."""
        return self.device_ids if self.device_ids is not None else tuple(range(self.size))

    @property
    def devices(self) -> np.ndarray:
        """The device ids as an array shaped like the mesh."""
        return np.array(self.all_device_ids, dtype=np.int64).reshape(self.axis_sizes)

    def device_at(self, coords: Sequence[int]) -> int:
        """The device at mesh coordinates (one per axis, major first)."""
        if len(coords) != len(self.axis_sizes) or any(
                not 0 <= c < s for c, s in zip(coords, self.axis_sizes, strict=True)):
            raise ShardingError(f"coordinates {tuple(coords)} are outside mesh {self!r}")
        flat = 0
        for coord, size in zip(coords, self.axis_sizes, strict=True):
            flat = flat * size + int(coord)
        return self.all_device_ids[flat]

    def device_coords(self, device_id: int) -> tuple[int, ...]:
        """The mesh coordinates of a device id."""
        flat = _positions(self).get(int(device_id))
        if flat is None:
            raise ShardingError(f"device {device_id} is not in mesh {self!r}")
        coords = []
        for size in reversed(self.axis_sizes):
            coords.append(flat % size)
            flat //= size
        return tuple(reversed(coords))

    def axis_coord(self, device_id: int, axis: str | AxisRef) -> int:
        """A device's coordinate along an axis or sub-axis."""
        ref = as_axis_ref(axis)
        index = self.axis_index(ref.name)
        size = self.axis_sizes[index]
        ref.validate(size)
        return ref.coordinate(self.device_coords(device_id)[index], axis_size=size)

    # ----- device groups -----
    def device_groups(self, axes: Iterable[str | AxisRef]) -> DeviceGroups:
        """The groups of devices that differ only in ``axes`` (replica groups over them).

        Inside a group devices are ordered by ``axes`` major to minor, in the order given;
        groups are ordered by the remaining mesh coordinates.

        >>> make_mesh({"x": 2, "y": 2}).device_groups(["x"]).explicit_text()
        '{{0,2},{1,3}}'
        """
        refs = [as_axis_ref(a) for a in axes]
        digits, group_digits = _split_digits(self, refs)
        array = self.devices.reshape([size for _, size in digits])
        rest = [i for i in range(len(digits)) if i not in group_digits]
        array = array.transpose(rest + group_digits)
        group_size = math.prod(digits[i][1] for i in group_digits)
        table = array.reshape(self.size // group_size, group_size)
        return DeviceGroups(tuple(tuple(int(d) for d in row) for row in table))

    def __repr__(self) -> str:
        axes = ", ".join(f"{name!r}: {size}" for name, size in self.shape.items())
        if self.device_ids is not None:
            return f"Mesh({axes}; device_ids={list(self.device_ids)})"
        return f"Mesh({axes})"

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self) -> str:
        """Shardy's mesh attribute text, ``<["x"=2, "y"=4]>`` (mesh/text.py reads it).

        >>> Mesh((), (), device_ids=(3,)).to_text()
        '<[], device_ids=[3]>'
        """
        axes = ", ".join(f'"{name}"={size}' for name, size in self.shape.items())
        if self.device_ids is None:
            return f"<[{axes}]>"
        return f"<[{axes}], device_ids=[{', '.join(map(str, self.device_ids))}]>"


class AxisType(Enum):
    """How a mesh axis is sharded, as JAX's ``jax.sharding.AxisType``: Auto axes are placed
    by propagation; Explicit axes are part of each traced value's type (computed op by op
    while tracing, see `xla_spmd.frontend.sharding_types`); Manual is what shard_map makes
    of an axis in its body."""

    Auto = "auto"
    Explicit = "explicit"
    Manual = "manual"


def _check_axis_types(axis_types, names: tuple[str, ...]) -> tuple:
    types = (axis_types,) * len(names) if isinstance(axis_types, AxisType) \
        else tuple(axis_types)
    if len(types) != len(names) or not all(isinstance(t, AxisType) for t in types):
        raise ShardingError(f"make_mesh: axis_types must be one AxisType per axis "
                            f"({len(names)}), got {axis_types!r}")
    return types


def make_mesh(axes: Mapping[str, int] | Sequence[tuple[str, int]] | Sequence[int],
              axis_names: Sequence[str] | None = None, *,
              device_ids: Iterable[int] | None = None, devices=None,
              axis_types=None) -> Mesh:
    """A mesh from ``{name: size}`` (major to minor), or as JAX's ``make_mesh(axis_shapes,
    axis_names, devices=...)``, over iota or the given device ids (or devices: anything with
    an ``id``). `axis_types` (one `AxisType` per axis, or one for all) types the axes; the
    default is the option ``default_axis_types``: Explicit, as JAX 0.10's ``make_mesh``
    (``xs.config.update("default_axis_types", "auto")`` makes it Auto; a `Mesh` built
    directly is Auto, as JAX's).

    >>> make_mesh({"x": 4}, device_ids=[3, 2, 1, 0]).devices.tolist()
    [3, 2, 1, 0]
    >>> make_mesh((2, 4), ("a", "b"))
    Mesh('a': 2, 'b': 4)
    """
    if axis_names is not None:
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        # JAX's form: the sizes, one int or a sequence of them.
        sizes: Any = axes
        shape = (sizes,) if isinstance(sizes, (int, np.integer)) else tuple(sizes)
        if len(names) != len(shape):
            raise ShardingError(f"make_mesh: {len(shape)} axis sizes {shape} but "
                                f"{len(names)} axis names {names}")
        items: list[tuple[str, int]] = list(zip(names, shape))
    else:
        pairs: Any = axes.items() if isinstance(axes, Mapping) else axes
        items = list(pairs)
    if devices is not None:
        ids = [int(getattr(d, "id", d)) for d in np.asarray(devices, dtype=object).flat]
        device_ids = ids[:math.prod(s for _, s in items)]
    ids = None if device_ids is None else tuple(int(d) for d in device_ids)
    if axis_types is None and config.default_axis_types == "explicit":
        axis_types = (AxisType.Explicit,) * len(items)
    return Mesh(tuple(n for n, _ in items), tuple(s for _, s in items), ids, axis_types)


@dataclass(frozen=True, slots=True)
class DeviceGroups:
    """Groups of device ids (replica groups), printable as a list or in XLA's iota form.

    >>> DeviceGroups(((0, 2), (1, 3))).iota_text()
    '[2,2]<=[2,2]T(1,0)'
    """

    groups: tuple[tuple[int, ...], ...]

    @property
    def num_groups(self) -> int:
        return len(self.groups)

    @property
    def group_size(self) -> int:
        return len(self.groups[0]) if self.groups else 0

    def explicit_text(self) -> str:
        """``{{0,1},{2,3}}`` as in HLO ``replica_groups=``."""
        return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in self.groups) + "}"

    def iota(self) -> IotaForm | None:
        """The iota form ``[num_groups, group_size]<=[...]`` when one exists."""
        flat = [d for group in self.groups for d in group]
        return find_iota(flat, (self.num_groups, self.group_size))

    def iota_text(self) -> str | None:
        form = self.iota()
        return None if form is None else str(form)

    def text(self) -> str:
        """The iota form when one exists, else the explicit list."""
        return self.iota_text() or self.explicit_text()

    def __iter__(self):
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)


def _is_device_array(first, second) -> bool:
    """Whether ``Mesh(first, second)`` is JAX's ``Mesh(devices, axis_names)``."""
    if isinstance(second, str):
        second = (second,)
    try:
        names = tuple(second)
    except TypeError:
        return False
    return bool(names) and all(isinstance(n, str) for n in names) and not (
        isinstance(first, (tuple, list)) and all(isinstance(n, str) for n in first))


def _check_device_ids(device_ids, names, sizes) -> tuple[int, ...] | None:
    if device_ids is None:
        return None
    ids = tuple(device_ids)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in ids):
        raise ShardingError(f"mesh device ids must be integers, got {list(ids)}")
    ids = tuple(int(d) for d in ids)
    count = math.prod(sizes)
    if len(ids) != count:
        raise ShardingError(f"mesh {dict(zip(names, sizes, strict=True))} has {count} devices "
                            f"but device_ids lists {len(ids)}: {list(ids)}")
    repeated = sorted({d for d in ids if ids.count(d) > 1})
    if repeated:
        raise ShardingError(f"mesh device_ids repeat device(s) {repeated}: {list(ids)}")
    if not names:
        if ids[0] < 0:
            raise ShardingError(f"maximal mesh device id must be >= 0, got {ids[0]}")
        return ids
    if sorted(ids) != list(range(count)):
        raise ShardingError(f"mesh device_ids must be a permutation of 0..{count - 1} (a "
                            f"mesh of {count} devices runs on the job's first {count}), got "
                            f"{list(ids)}")
    return None if ids == tuple(range(count)) else ids


@functools.lru_cache(maxsize=256)
def _positions(mesh: Mesh) -> dict[int, int]:
    return {device: flat for flat, device in enumerate(mesh.all_device_ids)}


def axis_digits(mesh: Mesh, refs: Sequence[AxisRef]) -> list[AxisRef]:
    """Mesh axes cut into mixed-radix digits so each of `refs` (valid, non-overlapping) is
    one digit; in mesh order, major first. An axis no ref cuts stays whole.

    >>> axis_digits(make_mesh({"x": 8, "y": 2}), [AxisRef("x", (2, 2))])
    [AxisRef('x':(1)2), AxisRef('x':(2)2), AxisRef('x':(4)2), AxisRef('y')]
    """
    digits: list[AxisRef] = []
    for name, size in mesh.shape.items():
        cuts = {1, size}
        for ref in refs:
            if ref.name == name:
                cuts |= {ref.pre_size, ref.next_pre_size(size)}
        bounds = sorted(cuts)
        if len(bounds) <= 2:  # uncut (size-1 axes too)
            digits.append(AxisRef(name))
            continue
        for low, high in zip(bounds, bounds[1:], strict=False):
            if high % low:
                raise ShardingError(f"sub-axes of {name!r} cut it at incompatible sizes "
                                    f"{low} and {high}")
            digits.append(AxisRef(name, (low, high // low)))
    return digits


def merge_sub_axes(mesh: Mesh, refs: Iterable[AxisRef]) -> tuple[AxisRef, ...]:
    """Merge neighbouring sub-axes that continue each other (Shardy keeps them maximal); a
    merge that covers the whole axis becomes the axis.

    >>> merge_sub_axes(make_mesh({"x": 4}), [AxisRef("x", (1, 2)), AxisRef("x", (2, 2))])
    (AxisRef('x'),)
    """
    merged: list[AxisRef] = []
    for ref in refs:
        last = merged[-1] if merged else None
        if (last is not None and last.name == ref.name and last.sub_axis is not None
                and ref.sub_axis is not None
                and ref.pre_size == last.pre_size * last.sub_axis[1]):
            merged.pop()
            size = last.sub_axis[1] * ref.sub_axis[1]
            full = mesh.shape[ref.name]
            ref = AxisRef(ref.name) if size == full else AxisRef(ref.name, (last.pre_size, size))
        merged.append(ref)
    return tuple(merged)


def axes_within(mesh: Mesh, wider: Mesh) -> bool:
    """Whether `mesh`'s axes are axes of `wider` (same sizes) in the default device order.

    >>> axes_within(make_mesh({"y": 2}), make_mesh({"x": 2, "y": 2}))
    True
    """
    return mesh.is_iota and wider.is_iota and all(
        wider.shape.get(name) == size for name, size in mesh.shape.items())


def check_disjoint(refs: Sequence[AxisRef]) -> None:
    """Raise `ShardingError` when two of `refs` share devices."""
    for i, ref in enumerate(refs):
        for other in refs[:i]:
            if ref.overlaps(other):
                raise ShardingError(f"axes {other} and {ref} overlap in one device group")


def _split_digits(mesh: Mesh, refs: list[AxisRef]) -> tuple[list[tuple[str, int]], list[int]]:
    """`axis_digits` as (axis name, size) pairs, and the index of each ref's digit."""
    for ref in refs:
        mesh.axis_size(ref)
    check_disjoint(refs)
    digits = axis_digits(mesh, refs)
    index = {(d.name, d.pre_size): i for i, d in enumerate(digits)}
    return ([(d.name, mesh.axis_size(d)) for d in digits],
            [index[ref.name, ref.pre_size] for ref in refs])
