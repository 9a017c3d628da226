"""Device meshes: named axes, sizes, device ids, sub-axes and the device groups they span.

>>> from xla_spmd.mesh import make_mesh
>>> make_mesh({"data": 2, "model": 4}).device_groups(["data"]).explicit_text()
'{{0,4},{1,5},{2,6},{3,7}}'
"""

from xla_spmd.iota import IotaForm, canonicalize_iota, find_iota

from .axis import AxisRef, as_axis_ref, overlaps_any
from .mesh import (
    AxisType,
    DeviceGroups,
    Mesh,
    axes_within,
    axis_digits,
    check_disjoint,
    make_mesh,
    merge_sub_axes,
)
from .text import (
                   Cursor,
                   parse_mesh,
                   parse_mesh_at,
                   parse_mesh_decl,
                   parse_sdy_meshes,
                   print_mesh,
                   print_mesh_decl,
)

__all__ = [
    "AxisType",
    "AxisRef", "Cursor", "DeviceGroups", "IotaForm", "Mesh", "as_axis_ref", "axes_within",
    "axis_digits", "canonicalize_iota", "check_disjoint", "merge_sub_axes", "overlaps_any",
    "find_iota", "make_mesh", "parse_mesh", "parse_mesh_at", "parse_mesh_decl", "parse_sdy_meshes",
    "print_mesh", "print_mesh_decl",
]
