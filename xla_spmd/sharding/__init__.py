"""Axis-based shardings (the canonical form), JAX-style sugar, Shardy text and GSPMD conversion.

>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import NamedSharding, P
>>> sharding = NamedSharding(make_mesh({"data": 2, "model": 4}), P(None, "model"))
>>> print(sharding.to_tensor_sharding(2))
#sdy.sharding<@mesh, [{}, {"model"}]>
"""

import sys

from xla_spmd.mesh import AxisRef, AxisType, Mesh, make_mesh

from .gspmd import ImportedSharding, finest_mesh, hlo_to_axes, hlo_tuple_to_axes
from .meshes import (
    declare_meshes,
    declared_meshes,
    meshes_of,
    program_mesh,
    sharding_mesh,
)
from .named_sharding import NamedSharding, user_sharding
from .partition_spec import UNCONSTRAINED, P, PartitionSpec
from .sdy_text import (
    parse_sharding,
    parse_sharding_per_value,
    print_sharding,
    print_sharding_per_value,
)
from .tensor_sharding import (
    DimSharding,
    TensorSharding,
    axes_to_hlo,
    axis_shardings,
    is_unconstrained,
)
from .visualize import render_sharding, tile_devices, visualize_sharding

__all__ = [
    "UNCONSTRAINED", "AxisRef", "AxisType", "DimSharding", "ImportedSharding", "Mesh",
    "NamedSharding", "P", "PartitionSpec", "TensorSharding", "axes_to_hlo", "declare_meshes",
    "declared_meshes",
    "axis_shardings", "finest_mesh", "hlo_to_axes", "meshes_of", "program_mesh", "sharding_mesh",
    "hlo_tuple_to_axes", "is_unconstrained", "make_mesh", "parse_sharding",
    "parse_sharding_per_value",
    "print_sharding", "print_sharding_per_value", "tile_devices", "user_sharding",
    "visualize_sharding",
    "render_sharding",
]


# JAX's ``jax.sharding`` also names the user-level functions of sharding in types. They are
# functions of the user API (``xs.reshard`` ...), above this layer: these names look them up
# on the top-level package (always imported before this subpackage), not import it.
_USER_API = ("reshard", "auto_axes", "explicit_axes", "use_mesh", "set_mesh")


def __getattr__(name: str):
    if name in _USER_API:
        return getattr(sys.modules["xla_spmd"], name)
    raise AttributeError(f"module 'xla_spmd.sharding' has no attribute {name!r}")
