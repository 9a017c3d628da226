"""Conversion between GSPMD's ``HloSharding`` and the axis-based ``TensorSharding``.

Axis-based → GSPMD (as XLA's Shardy export, ``convertToHloSharding``): split the mesh axes
into the digits the sharding's sub-axes cut them into (``reshape_dims``, mesh order); tile
dims are the products of each dim's axes, followed by a MANUAL, an UNREDUCED and a REPLICATED
subgroup dim; ``transpose_perm`` lists the sharded digits in dim order, then manual, unreduced
and the remaining ones. Iota meshes give the iota form, meshes with device ids a device list.
This direction is `TensorSharding.to_hlo_sharding`, so `axes_to_hlo` lives in
`tensor_sharding` (below this module); it is named here too.

GSPMD → axis-based (as Shardy's importer): write the tile assignment, in mesh positions, as an
iota ``[dims]<=[R]T(perm)``; refine ``R`` until every tile dim (in transposed order) and every
mesh axis (in ``R`` order) is a run of whole pieces; each piece is then a (sub-)axis. With no
mesh given, the pieces become axes ``_axis_0, _axis_1, ...`` of a new iota mesh. Example:
``[6,35]<=[7,10,3]T(2,1,0)`` refines to pieces ``[3,2,5,7]`` in tile order.

>>> hlo = HloSharding.parse("{devices=[4,8]<=[8,4]T(1,0)}")
>>> imported = hlo_to_axes(hlo)
>>> imported.sharding
TensorSharding(@mesh, [{"_axis_1"}, {"_axis_0"}])
>>> str(imported.to_hlo_sharding())
'{devices=[4,8]<=[8,4]T(1,0)}'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xla_spmd.errors import ShardingError
from xla_spmd.ir.hlo_sharding import HloSharding, ShardingKind, SubgroupType
from xla_spmd.mesh import (
    AxisRef,
    Mesh,
    find_iota,
    merge_sub_axes,
)

from .tensor_sharding import DimSharding, TensorSharding, axes_to_hlo


@dataclass(frozen=True, slots=True)
class ImportedSharding:
    """An HloSharding in axis-based form, with what the axis form alone does not say.

    ``manual_axes`` come from a MANUAL subgroup dim (or all axes, for ``{manual}``);
    ``explicit_devices`` remembers a V1 device list so printing back reproduces it.
    """

    sharding: TensorSharding
    manual_axes: tuple[str, ...] = ()
    explicit_devices: bool | None = None
    fully_manual: bool = False

    def to_hlo_sharding(self) -> HloSharding:
        if self.fully_manual:
            return HloSharding.manual()
        return axes_to_hlo(self.sharding, manual_axes=self.manual_axes,
                           explicit_devices=self.explicit_devices)


# ---------------------------------------------------------------- GSPMD → axis-based
def hlo_to_axes(hlo: HloSharding, rank: int | None = None, mesh: Mesh | None = None,
                mesh_name: str | None = "mesh", any_order: bool = False) -> ImportedSharding:
    """The axis-based form of a (non-tuple) HloSharding, over ``mesh`` or a new one.

    ``rank`` is the tensor rank; it is needed for shardings without tile dims. With
    ``any_order``, a tiled sharding whose device order is not a transpose of ``mesh``'s is
    read over ``mesh``'s axes in its own device order (`reordered_mesh`), as Shardy writes
    such a sharding over a mesh with ``device_ids``; otherwise that is an error.

    >>> hlo_to_axes(HloSharding.parse("{devices=[6,35]<=[7,10,3]T(2,1,0)}")).sharding
    TensorSharding(@mesh, [{"_axis_3", "_axis_1"}, {"_axis_2", "_axis_0"}])
    """
    if hlo.is_tuple:
        raise ShardingError(f"{hlo} is a tuple sharding; use hlo_tuple_to_axes")
    if hlo.kind is ShardingKind.TILED:
        tile_rank = len(hlo.tile_shape)
        if rank is not None and rank != tile_rank:
            raise ShardingError(f"sharding {hlo} tiles {tile_rank} dims but the tensor has "
                                f"rank {rank}")
        try:
            return _tiled_to_axes(hlo, mesh, mesh_name)
        except ShardingError:
            if not any_order or mesh is None:
                raise
            reordered = reordered_mesh(hlo, mesh)
            if reordered is None:
                raise
            return _tiled_to_axes(hlo, reordered, mesh_name)
    if rank is None:
        raise ShardingError(f"converting {hlo} needs the tensor rank")
    if hlo.kind is ShardingKind.REPLICATED:
        return ImportedSharding(TensorSharding.replicated_on(mesh or Mesh.from_shape({}), rank,
                                                             mesh_name))
    if hlo.kind is ShardingKind.MAXIMAL:
        if mesh is None:
            assert hlo.device is not None  # a maximal sharding names its device
            mesh = Mesh((), (), device_ids=(hlo.device,))
        elif mesh.all_device_ids != (hlo.device,):
            raise ShardingError(f"{hlo} lives on one device; mesh {mesh!r} is not the maximal "
                                f"mesh <[], device_ids=[{hlo.device}]>")
        return ImportedSharding(TensorSharding.replicated_on(mesh, rank, mesh_name))
    if hlo.kind is ShardingKind.MANUAL:
        mesh = mesh or Mesh.from_shape({})
        return ImportedSharding(TensorSharding.replicated_on(mesh, rank, mesh_name),
                                manual_axes=mesh.axis_names, fully_manual=True)
    if hlo.kind is ShardingKind.UNREDUCED and mesh is not None:
        sharding = TensorSharding(mesh, (DimSharding(),) * rank,
                                  unreduced=tuple(map(AxisRef, mesh.axis_names)),
                                  mesh_name=mesh_name)
        return ImportedSharding(sharding)
    raise ShardingError(f"{hlo} has no axis-based form" + (
        "" if hlo.kind is ShardingKind.UNKNOWN else " without a mesh"))


def reordered_mesh(hlo: HloSharding, mesh: Mesh) -> Mesh | None:
    """``mesh``'s axes over the devices of a tiled ``hlo`` in its tile order (major to minor,
    the replicated subgroup last), where that gives ``hlo`` an axis-based form: any device
    order then has one, over a mesh of its own (Shardy's ``device_ids``). None when ``hlo``
    does not span ``mesh``'s devices or its tile dims do not factor ``mesh``'s axes in order.

    >>> mesh = Mesh(("x", "y"), (2, 2))
    >>> reordered_mesh(HloSharding.parse("{devices=[2,2]3,1,2,0}"), mesh)
    Mesh('x': 2, 'y': 2; device_ids=[3, 1, 2, 0])
    >>> hlo_to_axes(HloSharding.parse("{devices=[2,2]3,1,2,0}"), 2, mesh, any_order=True
    ...             ).sharding.dims[0].axes
    (AxisRef('x'),)
    """
    devices = tuple(int(d) for d in hlo.device_array().ravel())
    if sorted(devices) != sorted(mesh.all_device_ids) or mesh.is_maximal:
        return None
    reordered = Mesh(mesh.axis_names, mesh.axis_sizes, device_ids=devices,
                     axis_types=mesh.axis_types)
    try:
        _tiled_to_axes(hlo, reordered, None)
    except ShardingError:
        return None
    return reordered


def hlo_tuple_to_axes(hlo: HloSharding, ranks: Sequence[int | None], mesh: Mesh | None = None
                      ) -> tuple[ImportedSharding, ...]:
    """Each element of a tuple sharding (a non-tuple one counts as one element)."""
    elements = hlo.elements if hlo.is_tuple else (hlo,)
    if len(ranks) != len(elements):
        raise ShardingError(f"{hlo} has {len(elements)} elements but {len(ranks)} ranks given")
    return tuple(hlo_to_axes(element, rank, mesh)
                 for element, rank in zip(elements, ranks, strict=True))


def _tiled_to_axes(hlo: HloSharding, mesh: Mesh | None, mesh_name: str | None
                   ) -> ImportedSharding:
    array = hlo.device_array()
    form = hlo.tiles
    explicit = not form.is_iota
    if mesh is None:
        if form.reshape_dims is not None and form.transpose_perm is not None:  # iota
            return _from_iota(hlo, form.reshape_dims, form.transpose_perm, None, mesh_name,
                              explicit)
        found = find_iota(array.ravel(), array.shape)
        if found is not None:
            return _from_iota(hlo, found.reshape_dims, found.transpose_perm, None, mesh_name,
                              explicit)
        axes = {f"_axis_{i}": d for i, d in enumerate(d for d in array.shape if d > 1)}
        devices = array.ravel().tolist()
        if sorted(devices) != list(range(len(devices))):
            raise ShardingError(f"{hlo} uses devices {sorted(devices)}, not 0..{len(devices)-1};"
                                f" give a mesh over them")
        mesh = Mesh.from_shape(axes, device_ids=devices)
    positions = {device: flat for flat, device in enumerate(mesh.all_device_ids)}
    if sorted(positions) != sorted(array.ravel().tolist()):
        raise ShardingError(f"{hlo} spans devices {sorted(array.ravel().tolist())} but mesh "
                            f"{mesh!r} has devices {sorted(positions)}")
    in_mesh = np.vectorize(positions.__getitem__, otypes=[np.int64])(array)
    found = find_iota(in_mesh.ravel(), in_mesh.shape)
    if found is None:
        raise ShardingError(f"{hlo} has no axis-based form over mesh {mesh!r}: its device "
                            f"order is not a transpose of the mesh's")
    return _from_iota(hlo, found.reshape_dims, found.transpose_perm, mesh, mesh_name, explicit)


def _from_iota(hlo: HloSharding, reshape_dims: Sequence[int], perm: Sequence[int],
               mesh: Mesh | None, mesh_name: str | None, explicit: bool) -> ImportedSharding:
    tile_dims = hlo.tiles.dims
    pieces = [[int(d)] for d in reshape_dims if d > 1]
    perm = [p for p in perm if reshape_dims[p] > 1]
    # Renumber perm after dropping size-1 reshape dims (canonical forms have none anyway).
    kept = sorted(perm)
    perm = [kept.index(p) for p in perm]
    changed = True
    while changed:
        changed = _refine(pieces, perm, tile_dims, hlo, "tile dims")
        if mesh is not None:
            changed |= _refine(pieces, range(len(pieces)), mesh.axis_sizes, hlo, "mesh axes")
    if mesh is None:
        names = iter(range(sum(len(p) for p in pieces)))
        refs = [[AxisRef(f"_axis_{next(names)}") for _ in group] for group in pieces]
        flat = [size for group in pieces for size in group]
        mesh = Mesh.from_shape({f"_axis_{i}": size for i, size in enumerate(flat)})
    else:
        refs = _pieces_to_axes(pieces, mesh)
    per_tile_dim: list[list[AxisRef]] = [[] for _ in tile_dims]
    ordered = [(ref, pieces[i][j]) for i in perm for j, ref in enumerate(refs[i])]
    position = 0
    for dim_index, dim_size in enumerate(tile_dims):
        remaining = dim_size
        while remaining > 1:
            ref, size = ordered[position]
            per_tile_dim[dim_index].append(ref)
            remaining //= size
            position += 1
    data_rank = len(hlo.tile_shape)
    dims = tuple(DimSharding(merge_sub_axes(mesh, per_tile_dim[i])) for i in range(data_rank))
    manual: list[AxisRef] = []
    unreduced: list[AxisRef] = []
    for offset, kind in enumerate(hlo.all_subgroup_types):
        group = per_tile_dim[data_rank + offset]
        if kind is SubgroupType.MANUAL:
            manual.extend(group)
        elif kind is SubgroupType.UNREDUCED:
            unreduced.extend(group)
        elif kind is SubgroupType.MAXIMAL:
            raise ShardingError(f"{hlo}: maximal subgroups have no axis-based form")

    def in_mesh_order(refs):
        return sorted(refs, key=lambda r: (mesh.axis_index(r.name), r.pre_size))
    manual = list(merge_sub_axes(mesh, in_mesh_order(manual)))
    if any(ref.is_sub_axis for ref in manual):
        raise ShardingError(f"{hlo}: manual devices form sub-axes {manual} of mesh {mesh!r}; "
                            f"manual axes must be whole axes")
    merged = merge_sub_axes(mesh, in_mesh_order(unreduced))
    sharding = TensorSharding(mesh, dims, unreduced=merged, mesh_name=mesh_name)
    return ImportedSharding(sharding, tuple(ref.name for ref in manual), explicit)


def _refine(pieces: list[list[int]], order: Sequence[int], targets: Sequence[int],
            hlo: HloSharding, what: str) -> bool:
    """Split pieces (visited in ``order``) so each target size is a run of whole pieces."""
    goals = [int(t) for t in targets if t > 1]
    goal_index, remaining, changed = 0, (goals[0] if goals else 1), False
    for group_index in order:
        group = pieces[group_index]
        j = 0
        while j < len(group):
            size = group[j]
            if remaining % size == 0:
                remaining //= size
                j += 1
            elif size % remaining == 0:
                group[j:j + 1] = [remaining, size // remaining]
                changed = True
                continue
            else:
                raise ShardingError(f"{hlo} has no axis-based form: its device order cannot be "
                                    f"factored to match its {what} {list(targets)}")
            if remaining == 1 and goal_index + 1 < len(goals):
                goal_index += 1
                remaining = goals[goal_index]
    return changed


def _pieces_to_axes(pieces: list[list[int]], mesh: Mesh) -> list[list[AxisRef]]:
    """Name each piece (in mesh order) as the mesh axis or sub-axis it covers."""
    axes = iter((name, size) for name, size in mesh.shape.items() if size > 1)
    refs: list[list[AxisRef]] = []
    name, full, pre = "", 1, 1
    for group in pieces:
        refs.append([])
        for size in group:
            if pre >= full:
                name, full = next(axes)
                pre = 1
            refs[-1].append(AxisRef(name) if size == full else AxisRef(name, (pre, size)))
            pre *= size
    return refs


def finest_mesh(hlo_shardings) -> Mesh | None:
    """One mesh for a program's GSPMD shardings: the one the sharding needing the most axes
    implies (the others fit it as a rule; XLA's importer uses their common factorization).
    Shardings with no axis-based form are skipped; None when no tiled sharding is given.

    >>> finest_mesh([HloSharding.parse("{devices=[2,4]<=[8]}"), HloSharding.replicate()])
    Mesh('_axis_0': 2, '_axis_1': 4)
    """
    best = None
    for hlo in hlo_shardings:
        for element in (hlo.elements if hlo.is_tuple else (hlo,)):
            if not element.is_tiled:
                continue
            try:
                mesh = hlo_to_axes(element, None).sharding.mesh
            except ShardingError:
                continue
            if best is None or len(mesh.axis_names) > len(best.axis_names):
                best = mesh
    return best

