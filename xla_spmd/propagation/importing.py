"""Turn a parsed module's shardings into `TensorSharding`s on its instructions.

HLO printed by current JAX carries Shardy's shardings as frontend attributes: the meshes on
the module (``xla.sdy.meshes={mesh = #sdy.mesh<["model"=8]>}``), one sharding per
instruction (``xla.sdy.sharding="#sdy.sharding<@mesh, [{}, {\\"model\\"}]>"``, or a
``#sdy.sharding_per_value`` on ops), result shardings on ``xla.sdy.FuncResultSharding`` custom
calls, and shard_map boundaries as ``xla.sdy.GlobalToLocalShape``/``LocalToGlobalShape`` custom
calls with ``xla.sdy.in_shardings``/``out_shardings``/``manual_axes``. Those are preferred;
without them GSPMD ``HloSharding``s are converted (gspmd.py), all over one mesh: the finest
one any of them needs. A GSPMD sharding whose device order is not a transpose of that mesh's
(``{devices=[2]1,0}``, ``{devices=[2,2]3,1,2,0}``) is over the mesh's axes in its own device
order: a mesh with ``device_ids`` (``mesh_1``, ``mesh_2``, ... by first use), as Shardy
writes it; the partitioner moves shards between device orders with a collective-permute.

After import, an array instruction's sharding is a `TensorSharding`, a tuple-shaped one's a
tuple of them (one per leaf, None where unknown).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xla_spmd.errors import ShardingError
from xla_spmd.ir import Module, map_computations, rebind_called
from xla_spmd.ir.custom_calls import (
    GLOBAL_TO_LOCAL,
    IN_SHARDINGS,
    OUT_SHARDINGS,
    SDY_SHARDING,
    VALUE_MANUAL_AXES,
)
from xla_spmd.ir.hlo_sharding import HloSharding, ShardingKind
from xla_spmd.mesh import Mesh
from xla_spmd.propagation.rebuild import rewrite_in_place
from xla_spmd.sharding import (
    TensorSharding,
    declared_meshes,
    finest_mesh,
    hlo_to_axes,
    parse_sharding,
    parse_sharding_per_value,
)
from xla_spmd.sharding.manual import (
    boundary_shardings,
    is_manual_boundary,
    manual_axes,
    manual_axes_text,
)


@dataclass
class Imported:
    """The module with TensorShardings, and the meshes."""

    module: Module
    meshes: dict[str, Mesh] = field(default_factory=dict)


def _unescape(text: str) -> str:
    return text.replace('\\"', '"')


def has_foreign_shardings(module: Module) -> bool:
    """Whether some instruction still holds an HloSharding, an sdy frontend attribute, or
    manual-region boundary shardings not read yet."""
    for c in module.computations:
        for inst in c.instructions:
            if isinstance(inst.sharding, HloSharding):
                return True
            if inst.sharding is None and is_manual_boundary(inst):
                return True
            if inst.frontend_attribute(SDY_SHARDING) is not None:
                if not isinstance(inst.sharding, (TensorSharding, tuple)):
                    return True
    return False


def import_shardings(module: Module, mesh: Mesh | None = None) -> Imported:
    """Convert every sharding of `module` to axis-based form (see the module docstring)."""
    meshes = declared_meshes(module)
    if mesh is not None and not meshes:
        meshes = {"mesh": mesh}
    gspmd_mesh = mesh or (next(iter(meshes.values())) if meshes else _finest_mesh(module))
    if gspmd_mesh is None and module.num_partitions > 1:
        # Only values placed on single devices: they run on the module's devices.
        gspmd_mesh = Mesh.from_shape({"_axis_0": module.num_partitions})

    reordered: dict[Mesh, str] = {}  # meshes in other device orders -> their names

    def convert(inst, operands):
        sharding = _sdy_sharding(inst, meshes)
        manual: list[str] = []  # the manual axes of a partially manual GSPMD sharding
        if sharding is None and isinstance(inst.sharding, HloSharding):
            sharding = (_outfeed_from_hlo(inst, operands[0], gspmd_mesh, reordered)
                        if inst.opcode == "outfeed"
                        else _from_hlo(inst, gspmd_mesh, reordered, manual))
        if sharding is None and isinstance(inst.sharding, (TensorSharding, tuple)):
            sharding = inst.sharding
        # The axis-based sharding now lives on the instruction; the printers write the
        # xla.sdy attribute back from it.
        frontend = tuple((k, v) for k, v in inst.frontend_attributes if k != SDY_SHARDING)
        if sharding is None:
            frontend = inst.frontend_attributes
        if manual:
            frontend = (*frontend, (VALUE_MANUAL_AXES, manual_axes_text(manual)))
        if (sharding is inst.sharding and operands == inst.operands
                and frontend == inst.frontend_attributes):
            return None
        return inst.replace(operands=operands, sharding=sharding, frontend_attributes=frontend)

    def rebuild(computation, replaced):
        def fn(inst, operands):
            inst = rebind_called(inst, replaced)
            return convert(inst, operands) or (
                inst if operands == inst.operands else inst.replace(operands=operands))
        return rewrite_in_place(computation, fn)

    new = map_computations(module, rebuild)
    return Imported(new, meshes)


def _sdy_sharding(inst, meshes):
    leaves = inst.shape.leaves()
    if is_manual_boundary(inst):
        if not meshes or not any(k in (IN_SHARDINGS, OUT_SHARDINGS)
                                 for k, _ in inst.frontend_attributes):
            return None
        shardings = boundary_shardings(inst, meshes)
        if inst.attrs.custom_call_target == GLOBAL_TO_LOCAL:  # results are local: drop the
            axes = manual_axes(inst)                             # manual axes
            shardings = tuple(_drop_axes(s, axes) for s in shardings)
        return _pack(shardings, leaves, inst)
    text = inst.frontend_attribute(SDY_SHARDING)
    if text is None or not meshes:
        return None
    text = _unescape(text)
    if "sharding_per_value" in text:
        shardings = parse_sharding_per_value(text, meshes)
    else:
        shardings = (parse_sharding(text, meshes),)
    return _pack(shardings, leaves, inst)


def _pack(shardings, leaves, inst):
    if len(shardings) != len(leaves):
        raise ShardingError(f"{inst.name}: {len(shardings)} shardings for {len(leaves)} "
                            f"results of shape {inst.shape}")
    for s, leaf in zip(shardings, leaves):
        s.check_rank(leaf.dims, inst.name)
    return shardings[0] if not inst.shape.is_tuple else tuple(shardings)


def _drop_axes(sharding: TensorSharding, names) -> TensorSharding:
    dims = [d.__class__(tuple(a for a in d.axes if a.name not in names), d.is_closed,
                        d.priority if any(a.name not in names for a in d.axes) or not d.is_closed
                        else None) for d in sharding.dims]
    return sharding.replace(dims=dims,
                            replicated=[a for a in sharding.replicated if a.name not in names])


def _from_hlo(inst, mesh, reordered, manual=None):
    leaves = inst.shape.leaves()
    hlo = inst.sharding
    try:
        if inst.shape.is_tuple:
            elements = hlo.elements if hlo.is_tuple else (hlo,) * len(leaves)
            if len(elements) != len(leaves):
                raise ShardingError(f"{hlo} has {len(elements)} elements but the value has "
                                    f"{len(leaves)}")
            return tuple(_leaf_from_hlo(e, leaf.rank, mesh, reordered, manual)
                         for e, leaf in zip(elements, leaves))
        return _leaf_from_hlo(hlo, leaves[0].rank, mesh, reordered, manual)
    except ShardingError as error:
        raise ShardingError(f"{inst.name}: {error}") from None


def _outfeed_from_hlo(inst, data, mesh, reordered):
    """An outfeed's HloSharding is its data's (and its token's, as one more element): the
    data is written as its operand holds it, so the two must agree; the token result is
    replicated."""
    hlo = inst.sharding
    leaves = data.shape.leaves()
    elements = hlo.elements if hlo.is_tuple else (hlo,) * len(leaves)
    if len(elements) == len(leaves) + 1:
        elements = elements[:-1]
    if len(elements) != len(leaves):
        raise ShardingError(f"{inst.name}: {hlo} has {len(elements)} elements but the "
                            f"outfeed's data {data.shape} has {len(leaves)}")
    wanted = [_leaf_from_hlo(e, leaf.rank, mesh, reordered)
              for e, leaf in zip(elements, leaves)]
    held = data.sharding_leaves()
    held = held if len(held) == len(leaves) else (None,) * len(leaves)
    for leaf, want, have in zip(leaves, wanted, held):
        if _replicated_if_none(want, leaf.rank, mesh) != _replicated_if_none(
                have, leaf.rank, mesh):
            raise ShardingError(f"{inst.name}: outfeed sharding {hlo} differs from its "
                                f"operand's ({data.name}); give the operand that sharding")
    return TensorSharding.replicated_on(mesh or Mesh.from_shape({}), 0)


def _replicated_if_none(sharding, rank, mesh):
    if sharding is None or not isinstance(sharding, TensorSharding):
        return None if mesh is None else TensorSharding.replicated_on(mesh, rank)
    return sharding


def _leaf_from_hlo(hlo, rank, mesh, reordered, manual=None):
    """A value on one device (``{maximal device=k}``) is whole there; the others compute it
    too (a replicated, closed sharding) rather than receive it: the same values, no traffic.
    A sharding over `mesh` in another device order is named after its mesh in `reordered`.

    A partially manual sharding (``last_tile_dims={manual}``) is one manual group's value,
    sharded over the free axes: those shard it, its manual axes are explicitly replicated (no
    pass may shard it over them) and appended to `manual` (the instruction records them)."""
    if hlo.kind is ShardingKind.MAXIMAL and mesh is not None and not mesh.is_maximal:
        return TensorSharding.replicated_on(mesh, rank)
    imported = hlo_to_axes(hlo, rank, mesh, any_order=True)
    if imported.fully_manual:
        return None
    sharding = imported.sharding
    if imported.manual_axes:
        names = set(imported.manual_axes) | {a.name for a in sharding.replicated}
        sharding = sharding.replace(replicated=[n for n in sharding.mesh.axis_names
                                                if n in names])
        if manual is not None:
            manual.extend(a for a in imported.manual_axes if a not in manual)
    if mesh is not None and sharding.mesh != mesh:
        name = reordered.setdefault(sharding.mesh, f"mesh_{len(reordered) + 1}")
        sharding = sharding.replace(mesh_name=name)
    return sharding


def _finest_mesh(module) -> Mesh | None:
    """The mesh for the module's GSPMD shardings (see `sharding.gspmd.finest_mesh`)."""
    return finest_mesh(inst.sharding for c in module.computations for inst in c.instructions
                       if isinstance(inst.sharding, HloSharding))
