"""The mesh of a `use_mesh` block and sharding constraints (`with_sharding_constraint`): what
`jit`, the sharding types of Explicit axes (`out_sharding=`) and ``xs.reshard`` share.

A user gives shardings as `NamedSharding`s, `TensorSharding`s or None, one for a whole
pytree or a pytree prefix of it (`shardings_per_leaf`); a constraint is recorded as XLA
does, a ``custom-call`` with target "Sharding" carrying the sharding.

>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import NamedSharding, P
>>> mesh = make_mesh({"x": 2})
>>> with use_mesh(mesh):
...     current_mesh() is mesh
True
>>> print(to_tensor_sharding(NamedSharding(mesh, P("x")), 2, "x"))
#sdy.sharding<@mesh, [{"x"}, {}]>
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.frontend.pytree import broadcast_prefix, tree_flatten, tree_unflatten
from xla_spmd.frontend.tracing import aval_of, bind, current_trace
from xla_spmd.ir.custom_calls import SHARDING
from xla_spmd.mesh import Mesh
from xla_spmd.sharding import NamedSharding, PartitionSpec, TensorSharding

SHARDING_TYPES = (NamedSharding, TensorSharding, PartitionSpec)


def is_sharding_leaf(s) -> bool:
    return s is None or isinstance(s, SHARDING_TYPES)


def to_tensor_sharding(sharding: NamedSharding | TensorSharding | None, rank: int, what: str
                       ) -> TensorSharding | None:
    """A user sharding (NamedSharding, TensorSharding or None) for a rank-`rank` value."""
    if sharding is None:
        return None
    if isinstance(sharding, NamedSharding):
        return sharding.to_tensor_sharding(rank)
    if isinstance(sharding, TensorSharding):
        if sharding.rank != rank:
            raise ShardingError(f"{what}: sharding {sharding} has rank {sharding.rank}, the "
                                f"value has rank {rank}")
        return sharding
    if isinstance(sharding, PartitionSpec):
        raise ShardingError(f"{what}: a bare PartitionSpec {sharding!r} has no mesh; use "
                            "NamedSharding(mesh, spec)")
    raise ShardingError(f"{what}: expected a NamedSharding or TensorSharding, got "
                        f"{type(sharding).__name__}")


def shardings_per_leaf(shardings, trees: Sequence, what: str) -> list:
    """Match `shardings` (one sharding for all, or a pytree prefix of `trees`: a sharding
    stands for the whole subtree at its place, at any level) to the leaves of `trees`."""
    if not is_sharding_leaf(shardings):
        shardings = list(shardings)
        if len(shardings) != len(trees):
            raise ShardingError(f"{what}: {len(shardings)} shardings given for {len(trees)} "
                                "values")
    try:
        return broadcast_prefix(shardings, list(trees), is_sharding_leaf, what)
    except XlaSpmdError as error:
        raise ShardingError(str(error)) from None


def with_sharding_constraint(x: Any, sharding: Any) -> Any:
    """Constrain the sharding of `x` (a pytree) at this point of the program, recorded as
    XLA does: a ``custom-call`` with target "Sharding" carrying the sharding."""
    leaves, tree = tree_flatten(x)
    shardings = shardings_per_leaf([sharding], [x], "with_sharding_constraint")
    if current_trace() is None:
        return x
    outs = []
    for leaf, s in zip(leaves, shardings):
        aval = aval_of(leaf)
        tensor_sharding = to_tensor_sharding(s, aval.rank, "with_sharding_constraint")
        outs.append(bind("custom-call", leaf, shape=aval, custom_call_target=SHARDING,
                         sharding=tensor_sharding))
    return tree_unflatten(tree, outs)


# ---------------------------------------------------------------------------------------------
# The current mesh

_MESHES: list = []  # the meshes of enclosing `use_mesh` blocks, innermost last


@contextlib.contextmanager
def use_mesh(mesh: Mesh) -> Iterator[Mesh]:
    """Within the block, a bare `PartitionSpec` given to ``xs.reshard`` means a sharding over
    `mesh` (JAX's ``jax.sharding.use_mesh`` / ``jax.set_mesh`` as a context manager)."""
    _MESHES.append(mesh)
    try:
        yield mesh
    finally:
        _MESHES.pop()


set_mesh = use_mesh


def current_mesh() -> Mesh | None:
    """The mesh of the innermost `use_mesh` block (None outside any)."""
    return _MESHES[-1] if _MESHES else None
