"""Manual regions (shard_map, ``sdy.manual_computation``), read from the IR.

A manual region is written as Shardy exports it to HLO: a ``xla.sdy.GlobalToLocalShape``
custom-call on the operands (frontend attributes ``xla.sdy.in_shardings`` and
``xla.sdy.manual_axes``), a ``call`` of the body over local shapes, and a
``xla.sdy.LocalToGlobalShape`` on the results (``xla.sdy.out_shardings``, ``manual_axes``).
Everything a pass needs to know about a region is in those attributes, so a program written
by XLA and one traced here follow the same path: `manual_region` reads it, given the
module's named meshes (``xla.sdy.meshes``).

>>> from xla_spmd.mesh import make_mesh
>>> from types import SimpleNamespace as Inst
>>> entry = Inst(opcode="custom-call", operands=(),
...              attrs=Inst(custom_call_target="xla.sdy.GlobalToLocalShape"),
...              frontend_attributes=(
...                  ("xla.sdy.in_shardings", '#sdy.sharding_per_value<[<@mesh, [{"x"}]>]>'),
...                  ("xla.sdy.manual_axes", '#sdy<manual_axes{"x"}>')))
>>> region = manual_region(entry, {"mesh": make_mesh({"x": 2})})
>>> region.axes, str(region.in_shardings[0])
(('x',), '#sdy.sharding<@mesh, [{"x"}]>')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from xla_spmd.errors import ShardingError
from xla_spmd.ir.custom_calls import (
    GLOBAL_TO_LOCAL,
    IN_SHARDINGS,
    LOCAL_TO_GLOBAL,
    MANUAL_AXES,
    OUT_SHARDINGS,
    VALUE_MANUAL_AXES,
)
from xla_spmd.mesh import Mesh

from .sdy_text import parse_sharding_per_value
from .tensor_sharding import TensorSharding


@dataclass(frozen=True, slots=True)
class ManualRegion:
    """A manual region: its mesh, its manual axes, and the (global) shardings of its operands
    and results, each as far as the instruction it was read from tells (``()`` if not; None
    for a body-call operand that does not come through the region's entry)."""

    mesh: Mesh
    axes: tuple[str, ...]
    in_shardings: tuple[TensorSharding | None, ...]
    out_shardings: tuple[TensorSharding, ...]

    def replicated_axes(self, sharding: TensorSharding) -> tuple[str, ...]:
        """The manual axes a value of ``sharding`` is replicated over (used by no dim)."""
        used = {a.name for d in range(sharding.rank) for a in sharding.dim_axes(d)}
        return tuple(a for a in self.axes if a not in used)


def _attribute(inst, key: str) -> str | None:
    for name, value in inst.frontend_attributes:
        if name == key:
            return value
    return None


def _target(inst) -> str | None:
    return getattr(inst.attrs, "custom_call_target", None) if inst.opcode == "custom-call" \
        else None


def is_manual_boundary(inst) -> bool:
    """Whether ``inst`` is a Shardy manual-region boundary custom-call."""
    return _target(inst) in (GLOBAL_TO_LOCAL, LOCAL_TO_GLOBAL)


def manual_axes(boundary) -> tuple[str, ...]:
    """The manual axes a boundary custom-call names (``#sdy<manual_axes{"x", "y"}>``)."""
    return _axis_names(_attribute(boundary, MANUAL_AXES))


def _axis_names(text: str | None) -> tuple[str, ...]:
    """The quoted axis names of a ``#sdy<manual_axes{...}>`` text (escaped quotes too)."""
    return tuple(re.findall(r'"([^"]+)"', (text or "").replace('\\"', '"')))


def manual_axes_text(axes) -> str:
    """The ``#sdy<manual_axes{...}>`` text of manual axis names (read by `manual_axes`).

    >>> manual_axes_text(["x", "y"])
    '#sdy<manual_axes{"x", "y"}>'
    """
    return "#sdy<manual_axes{" + ", ".join(f'"{a}"' for a in axes) + "}>"


def value_manual_axes(inst) -> tuple[str, ...]:
    """The manual axes of a value whose GSPMD sharding was partially manual (recorded by the
    importer as ``VALUE_MANUAL_AXES``); () for any other value."""
    return _axis_names(_attribute(inst, VALUE_MANUAL_AXES))


def boundary_shardings(boundary, meshes: Mapping[str, Mesh]) -> tuple[TensorSharding, ...]:
    """The global shardings a boundary custom-call carries: a GlobalToLocalShape's operand
    shardings, a LocalToGlobalShape's result shardings."""
    key = IN_SHARDINGS if _target(boundary) == GLOBAL_TO_LOCAL else OUT_SHARDINGS
    text = _attribute(boundary, key)
    if text is None:
        raise ShardingError(f"{boundary.name}: manual computation boundary without {key}")
    return parse_sharding_per_value(text.replace('\\"', '"'), meshes)


def _entry_of(operand) -> tuple[object, int] | None:
    """The GlobalToLocalShape an operand comes from, and which of its results it is."""
    index = 0
    if operand.opcode == "get-tuple-element":
        index, operand = operand.attrs.index, operand.operands[0]
    return (operand, index) if _target(operand) == GLOBAL_TO_LOCAL else None


def manual_region(inst, meshes: Mapping[str, Mesh]) -> ManualRegion | None:
    """The manual region ``inst`` belongs to, read from the boundary attributes: ``inst`` is
    a boundary custom-call (its side's shardings), or a ``call`` whose operands come out of
    GlobalToLocalShape boundaries (the region's body call: the shardings of its operands).
    None when ``inst`` is neither. ``meshes`` resolves the mesh names (``@mesh``) of the
    sharding text: the module's ``xla.sdy.meshes``."""
    target = _target(inst)
    if target in (GLOBAL_TO_LOCAL, LOCAL_TO_GLOBAL):
        shardings = boundary_shardings(inst, meshes)
        if not shardings:
            return None
        sides = (shardings, ()) if target == GLOBAL_TO_LOCAL else ((), shardings)
        return ManualRegion(shardings[0].mesh, manual_axes(inst), *sides)
    if inst.opcode != "call" or not inst.operands:
        return None
    entries = [_entry_of(operand) for operand in inst.operands]
    if all(entry is None for entry in entries):
        return None
    axes: list[str] = []
    in_shardings: list[TensorSharding | None] = []
    for entry in entries:
        if entry is None:  # e.g. a zero cotangent made inside the region's caller
            in_shardings.append(None)
            continue
        boundary, index = entry
        in_shardings.append(boundary_shardings(boundary, meshes)[index])
        axes += [a for a in manual_axes(boundary) if a not in axes]
    mesh = next(s.mesh for s in in_shardings if s is not None)
    return ManualRegion(mesh, tuple(axes), tuple(in_shardings), ())
