"""Elementwise ops and the generic handler.

Elementwise: every operand is resharded to the result's sharding (scalars replicated) and
the op runs on the local shards. The generic handler (GSPMD's ``DefaultAction``) replicates
every operand, runs the op on global shapes and reshards its result: always correct, and used
for the ops whose data movement has no cheaper rule (rng, custom-call, fft, linalg, ...).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from xla_spmd.ir import Family, TupleShape
from xla_spmd.partition.registry import FAMILY_DEFAULTS, HANDLERS
from xla_spmd.partition.reshard import plan_reshard
from xla_spmd.partition.values import PTuple, PValue, leaves, shape_leaves, unflatten
from xla_spmd.sharding import TensorSharding

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PartValue

# Ops that keep partial sums partial: f(a + b) = f(a) + f(b).


def elementwise(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    target = low.target(inst)
    compute = target
    if target.unreduced and not inst.op.linear:
        compute = target.replace(unreduced=())
    if any(isinstance(operand, PTuple) for operand in operands):
        return generic(low, inst, operands)
    arrays = [o for o in operands if o.global_shape.rank or not inst.shape.rank]
    compute = _cheapest(low, inst, arrays, compute)
    args = []
    for operand in operands:
        if operand.global_shape.rank == 0 and inst.shape.rank > 0:
            args.append(low.replicate(operand))
        else:
            args.append(low.reshard(operand, compute))
    result = low.emit(inst, args, compute)
    if compute is not target and not target.unreduced:
        return result  # consumers reshard it where they need to (at no greater cost)
    return low.reshard(result, target)


def _cheapest(low, inst, operands, compute):
    """`compute`, or an operand's sharding (as many tiles) that moves fewer bytes: those of
    resharding the operands, then (ties) those of resharding the result to what its users
    want. In a chain of mixed shardings the operand that differs is resharded, once."""
    def key(sharding):
        moved = sum(plan_reshard(o.sharding, sharding, o.global_shape.dims,
                                 o.global_shape.dtype.itemsize).bytes for o in operands)
        ahead = 0.0
        for user in low.uses.get(inst, ()):
            if isinstance(user.sharding, TensorSharding) and \
                    getattr(user.shape, "dims", None) == inst.shape.dims:
                ahead += plan_reshard(sharding, low.normalize(user.sharding, inst.shape.rank),
                                      inst.shape.dims, inst.shape.dtype.itemsize).bytes
        return moved, ahead
    best, best_key = compute, None
    tiles = math.prod(compute.tile_shape)
    for operand in operands:
        candidate = operand.sharding
        if candidate.unreduced or math.prod(candidate.tile_shape) != tiles:
            continue
        best_key = best_key or key(compute)
        candidate_key = key(candidate)
        if candidate_key < best_key:
            best, best_key = candidate, candidate_key
    return best


def generic(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    """Replicate the operands, run the op on global shapes, reshard the result."""
    args = []
    for operand in operands:
        if isinstance(operand, PTuple):
            flat = [low.replicate(v) for v in leaves(operand)]
            args.append(low.pack(unflatten(_shape_of(operand), flat)))
        else:
            args.append(low.replicate(operand).inst)
    targets = low.targets(inst)
    replicated = [low.replicated(getattr(s, "rank", 0)) for s in shape_leaves(inst.shape)]
    local = low.em.clone(inst, args, inst.shape,
                         None if isinstance(inst.shape, TupleShape) else replicated[0])
    value = low.explode(local, replicated, inst.shape)
    flat = [low.reshard(v, t) for v, t in zip(leaves(value), targets)]
    if isinstance(inst.shape, TupleShape):
        return unflatten(inst.shape, flat)
    return flat[0]


def _shape_of(value):
    if isinstance(value, PValue):
        return value.global_shape
    return TupleShape(tuple(_shape_of(item) for item in value.items))


for _family in (Family.UNARY, Family.BINARY):
    FAMILY_DEFAULTS[_family] = elementwise
for _family in (Family.LEAF, Family.SHAPE, Family.REDUCTION, Family.CONTRACTION,
                Family.INDEXING, Family.SORT, Family.CONTROL, Family.RANDOM, Family.COLLECTIVE,
                Family.ASYNC, Family.CUSTOM, Family.LINALG, Family.TUPLE):
    FAMILY_DEFAULTS[_family] = generic

HANDLERS.register("select", "clamp", "convert", "reduce-precision")(elementwise)


@HANDLERS.register("bitcast-convert")
def bitcast_convert(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    (operand,) = operands
    if operand.global_shape.rank == inst.shape.rank:
        return elementwise(low, inst, operands)
    return generic(low, inst, operands)
