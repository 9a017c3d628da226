"""Partitioned values: what the partitioner's handlers take and give.

A `PValue` is a local (per-device) instruction with the sharding and the global shape of the
value it holds; a `PTuple` keeps a tuple's elements exploded, so handlers never build tuple
instructions they would take apart again.
"""

from __future__ import annotations

from dataclasses import dataclass

from xla_spmd.errors import PartitionError
from xla_spmd.ir import ArrayShape, Computation, Instruction, Shape, TupleShape
from xla_spmd.sharding import TensorSharding


@dataclass(frozen=True, slots=True)
class PValue:
    """A partitioned array value: its local instruction, its sharding and its global shape."""

    inst: Instruction
    sharding: TensorSharding
    global_shape: ArrayShape


@dataclass(frozen=True, slots=True)
class PTuple:
    """A partitioned tuple value: its elements (PValue or PTuple), kept exploded."""

    items: tuple


# A partitioned value: one array, or a tuple of them.
PartValue = PValue | PTuple


def array_shape(shape: Shape) -> ArrayShape:
    """`shape`, which the verifier made an array (a tuple is a PartitionError naming it)."""
    if not isinstance(shape, ArrayShape):
        raise PartitionError(f"expected an array shape, got the tuple {shape}")
    return shape


def called(computation: Computation | None) -> Computation:
    """A called computation the verifier made present (None is a PartitionError)."""
    if computation is None:
        raise PartitionError("a conditional names no computation for a branch")
    return computation


def leaves(value: PValue | PTuple) -> list[PValue]:
    """The PValues of `value`, depth first."""
    if isinstance(value, PTuple):
        return [leaf for item in value.items for leaf in leaves(item)]
    return [value]


def shape_leaves(shape: Shape) -> list[Shape]:
    """The array shapes of `shape`, depth first."""
    if isinstance(shape, TupleShape):
        return [leaf for element in shape.elements for leaf in shape_leaves(element)]
    return [shape]


def unflatten(shape: Shape, flat: list[PValue]) -> PValue | PTuple:
    """Rebuild a PTuple shaped like `shape` from leaf values (consumed from the front)."""
    if isinstance(shape, TupleShape):
        return PTuple(tuple(unflatten(element, flat) for element in shape.elements))
    return flat.pop(0)
