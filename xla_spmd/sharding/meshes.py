"""The meshes of a module: the ones its header declares and the ones its shardings use.

A module names its meshes in the ``xla.sdy.meshes`` frontend attribute of its header (what
the StableHLO importer writes and XLA's HLO dumps of Shardy programs carry); its axis-based
shardings each hold their mesh too. `meshes_of` reads both, `declare_meshes` writes the
header, and `program_mesh` picks the mesh a program is partitioned over.

Modules are read through ``header``, ``header_value`` and ``computations`` only, so this
layer stays below the IR module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from xla_spmd.ir.custom_calls import SDY_MESHES
from xla_spmd.mesh import Mesh, axes_within, parse_sdy_meshes, print_mesh

from .tensor_sharding import TensorSharding

# The verbatim attribute dictionaries written after mesh declarations in StableHLO text
# (``{stablehlo.mesh = ...}``), kept in the header beside the meshes, by mesh name.
MESH_ATTRS_KEY = "xla.sdy.mesh_attributes"


def declared_meshes(module: Any) -> dict[str, Mesh]:
    """The meshes the module's header declares (``xla.sdy.meshes``), by name."""
    return parse_sdy_meshes(module.header_value("frontend_attributes") or "")


def _sharding_meshes(module: Any) -> Iterator[tuple[str | None, Mesh]]:
    """(mesh name, mesh) of every axis-based sharding, in program order."""
    for computation in module.computations:
        for inst in computation.instructions:
            for sharding in inst.sharding_leaves():
                if isinstance(sharding, TensorSharding):
                    yield sharding.mesh_name, sharding.mesh


def meshes_of(module: Any) -> dict[str, Mesh]:
    """Every named mesh of `module`: those its header declares, then those its shardings use
    that the header does not (a sharding's own mesh wins over nothing; the header wins a name
    both give)."""
    meshes = declared_meshes(module)
    for name, mesh in _sharding_meshes(module):
        if name is not None:
            meshes.setdefault(name, mesh)
    return meshes


def sharding_mesh(module: Any) -> tuple[str | None, Mesh] | None:
    """(name, mesh) of the first axis-based sharding whose mesh has axes; None if none."""
    for name, mesh in _sharding_meshes(module):
        if mesh.axis_names:
            return name, mesh
    return None


def program_mesh(module: Any) -> Mesh | None:
    """The mesh a program's shardings are over: the first one found, or the one whose axes
    hold every other mesh's (Shardy lets a module's meshes use a subset of the axes); a
    value placed on one device ({maximal device=k}) does not name it. Without axis-based
    shardings, the first mesh its header declares (a program whose only shardings are those
    of manual regions); None when it has none."""
    meshes: list[Mesh] = []
    for _, mesh in _sharding_meshes(module):
        if mesh not in meshes:
            meshes.append(mesh)
    meshes = [m for m in meshes if not m.is_maximal] or meshes
    if not meshes:
        return next(iter(declared_meshes(module).values()), None)
    widest = max(meshes, key=lambda m: m.size)
    if all(axes_within(m, widest) for m in meshes):
        return widest
    return meshes[0]


def meshes_header(meshes: Mapping[str, Mesh],
                  mesh_attrs: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The ``frontend_attributes`` header pair that declares `meshes` (and keeps the
    attributes written after them, when there are any)."""
    body = ", ".join(f"{name} = #sdy.mesh{print_mesh(mesh)}" for name, mesh in meshes.items())
    text = f"{SDY_MESHES}={{{body}}}"
    kept = {name: value for name, value in (mesh_attrs or {}).items() if name in meshes}
    if kept:
        text += f",{MESH_ATTRS_KEY}={{" + ", ".join(
            f"{name} = {value}" for name, value in kept.items()) + "}"
    return ("frontend_attributes", f"{{{text}}}")


def declare_meshes(module: Any, meshes: Mapping[str, Mesh]) -> Any:
    """`module` with its header declaring `meshes` besides the ones it declares already (a
    name it declares keeps its mesh). Returns `module` itself when nothing is new."""
    declared = declared_meshes(module)
    if all(name in declared for name in meshes):
        return module
    header = tuple((k, v) for k, v in module.header if k != "frontend_attributes")
    return dataclasses.replace(module, header=header + (meshes_header({**meshes, **declared}),))
