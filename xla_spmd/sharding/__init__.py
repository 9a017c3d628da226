"""Axis-based shardings (the canonical form), JAX-style sugar, Shardy text and GSPMD conversion.

>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import NamedSharding, P
>>> sharding = NamedSharding(make_mesh({"data": 2, "model": 4}), P(None, "model"))
>>> print(sharding.to_tensor_sharding(2))
#sdy.sharding<@mesh, [{}, {"model"}]>
"""

from xla_spmd.mesh import AxisRef, Mesh, make_mesh

from .partition_spec import UNCONSTRAINED, NamedSharding, P, PartitionSpec
from .sdy_text import (
    parse_sharding,
    parse_sharding_per_value,
    print_sharding,
    print_sharding_per_value,
)
from .tensor_sharding import DimSharding, TensorSharding

__all__ = [
    "UNCONSTRAINED", "AxisRef", "DimSharding", "Mesh", "NamedSharding", "P", "PartitionSpec",
    "TensorSharding", "make_mesh", "parse_sharding", "parse_sharding_per_value",
    "print_sharding", "print_sharding_per_value",
]
