"""xla-spmd: an SPMD partitioner and multi-device executor for XLA HLO programs.

Names are loaded lazily (PEP 562), so importing one layer never imports the others and the
layers can import `xla_spmd.errors` without cycles.

>>> import xla_spmd as xs
>>> xs.parse_hlo  # doctest: +ELLIPSIS
<function parse_hlo at ...>
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "propagate": "xla_spmd.propagation",
    "explain": "xla_spmd.propagation",
    "parse_hlo": "xla_spmd.ir.hlo_parser",
    "print_module": "xla_spmd.ir.hlo_printer",
    "verify": "xla_spmd.ir.verifier",
    "Module": "xla_spmd.ir.module",
    "Mesh": "xla_spmd.mesh",
    "make_mesh": "xla_spmd.mesh",
    "AxisRef": "xla_spmd.mesh",
    "TensorSharding": "xla_spmd.sharding",
    "DimSharding": "xla_spmd.sharding",
    "NamedSharding": "xla_spmd.sharding",
    "PartitionSpec": "xla_spmd.sharding",
    "P": "xla_spmd.sharding",
    "visualize_sharding": "xla_spmd.sharding",
    "render_sharding": "xla_spmd.sharding",
    "HloSharding": "xla_spmd.ir.hlo_sharding",
    "devices": "xla_spmd.runtime",
    "local_devices": "xla_spmd.runtime",
    "device_count": "xla_spmd.runtime",
    "process_index": "xla_spmd.runtime",
    "process_count": "xla_spmd.runtime",
    "set_num_devices": "xla_spmd.runtime",
    "device_put": "xla_spmd.api",
    "Array": "xla_spmd.api",
    "ShardedArray": "xla_spmd.runtime",
    "specialize": "xla_spmd.partition",
    "evaluate": "xla_spmd.backends.reference",
    "evaluate_spmd": "xla_spmd.backends.reference",
    "inspect": "xla_spmd.inspection",
    "auto_shard": "xla_spmd.autoshard",
    "jit": "xla_spmd.api",
    "Lowered": "xla_spmd.frontend.jit",
    "with_sharding_constraint": "xla_spmd.frontend.constraints",
    "grad": "xla_spmd.frontend.autodiff",
    "value_and_grad": "xla_spmd.frontend.autodiff",
    "vjp": "xla_spmd.frontend.autodiff",
    "shard_map": "xla_spmd.api",
    "tree_util": "xla_spmd.frontend.pytree",
    "tree_map": "xla_spmd.frontend.pytree",
    "tree_flatten": "xla_spmd.frontend.pytree",
    "tree_unflatten": "xla_spmd.frontend.pytree",
    "tree_leaves": "xla_spmd.frontend.pytree",
    "tree_structure": "xla_spmd.frontend.pytree",
    "register_pytree_node": "xla_spmd.frontend.pytree",
    "register_dataclass": "xla_spmd.frontend.pytree",
    "vmap": "xla_spmd.frontend.transforms",
    "jvp": "xla_spmd.frontend.transforms",
    "linearize": "xla_spmd.frontend.transforms",
    "jacfwd": "xla_spmd.frontend.transforms",
    "jacrev": "xla_spmd.frontend.transforms",
    "hessian": "xla_spmd.frontend.transforms",
    "remat": "xla_spmd.frontend.transforms",
    "checkpoint_policies": "xla_spmd.frontend.transforms",
    "custom_vjp": "xla_spmd.frontend.transforms",
    "custom_jvp": "xla_spmd.frontend.transforms",
    "eval_shape": "xla_spmd.frontend.transforms",
    "ShapeDtypeStruct": "xla_spmd.frontend.tracing",
    "device_get": "xla_spmd.api",
    "reshard": "xla_spmd.api",
    "auto_axes": "xla_spmd.api",
    "explicit_axes": "xla_spmd.api",
    "typeof": "xla_spmd.frontend.jit",
    "use_mesh": "xla_spmd.frontend.constraints",
    "set_mesh": "xla_spmd.frontend.constraints",
    "AxisType": "xla_spmd.sharding",
    "make_array_from_callback": "xla_spmd.api",
    "make_array_from_single_device_arrays": "xla_spmd.api",
    "make_array_from_process_local_data": "xla_spmd.api",
    "block_until_ready": "xla_spmd.api",
}


if TYPE_CHECKING:  # the lazy names above, for type checkers and IDEs
    from xla_spmd.api import (
        Array,
        block_until_ready,
        device_get,
        device_put,
        jit,
        make_array_from_callback,
        make_array_from_process_local_data,
        make_array_from_single_device_arrays,
        reshard,
        shard_map,
    )
    from xla_spmd.autoshard import auto_shard
    from xla_spmd.backends.reference import evaluate, evaluate_spmd
    from xla_spmd.frontend.autodiff import grad, value_and_grad, vjp
    from xla_spmd.frontend.constraints import set_mesh, use_mesh, with_sharding_constraint
    from xla_spmd.frontend.jit import Lowered, typeof
    from xla_spmd.frontend.pytree import (
        register_dataclass,
        register_pytree_node,
        tree_flatten,
        tree_leaves,
        tree_map,
        tree_structure,
        tree_unflatten,
        tree_util,
    )
    from xla_spmd.frontend.tracing import ShapeDtypeStruct
    from xla_spmd.frontend.transforms import (
        checkpoint_policies,
        custom_jvp,
        custom_vjp,
        eval_shape,
        hessian,
        jacfwd,
        jacrev,
        jvp,
        linearize,
        remat,
        vmap,
    )
    from xla_spmd.inspection import inspect
    from xla_spmd.ir.hlo_parser import parse_hlo
    from xla_spmd.ir.hlo_printer import print_module
    from xla_spmd.ir.hlo_sharding import HloSharding
    from xla_spmd.ir.module import Module
    from xla_spmd.ir.verifier import verify
    from xla_spmd.mesh import AxisRef, Mesh, make_mesh
    from xla_spmd.partition import specialize
    from xla_spmd.propagation import explain, propagate
    from xla_spmd.runtime import (
        ShardedArray,
        device_count,
        devices,
        local_devices,
        process_count,
        process_index,
        set_num_devices,
    )
    from xla_spmd.sharding import (
        AxisType,
        DimSharding,
        NamedSharding,
        P,
        PartitionSpec,
        TensorSharding,
        render_sharding,
        visualize_sharding,
    )

# Submodules reachable as attributes (xs.distributed.initialize(), xs.numpy, ...).
# `xs.partition` is the partitioner's package (`xs.partition.partition(module, mesh)`): once
# imported, Python makes a subpackage an attribute of its parent, so it cannot be a function.
_SUBMODULES = {"checkpoint", "config", "debug", "distributed", "errors", "lax", "nn", "numpy",
               "partition", "pipeline", "random", "sharding", "tree"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"xla_spmd.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xla_spmd' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS) + list(_SUBMODULES))
