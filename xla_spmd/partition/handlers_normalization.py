"""batch-norm-inference, -training and -grad: partitioned as their primitive expansion.

XLA expands batch norm into primitive ops (BatchNormExpander) and partitions nothing of it
itself; here the handler expands the op (`xla_spmd.ir.batch_norm`, the StableHLO spec's
decomposition, the same one the reference evaluator runs), gives every value of the expansion
a sharding, and partitions that computation in place with the ordinary handlers:

* operand-shaped values take the sharding of the op's operand-shaped result (its unreduced
  axes dropped);
* per-feature values (scale, mean, the statistics) take the axes of the feature dim;
* scalar constants are replicated.

So a sharded feature dim stays local (each device normalizes its own features), and a sharded
batch or spatial dim computes each statistic as a local sum (padding masked) followed by one
all-reduce over the axes of those dims, as the reduce handler does.

Worked example: ``batch-norm-training`` of ``f32[8,4]`` with ``feature_index=1``, sharded
``[{"x"}, {}]`` over ``x=2``: each device sums its 4 rows, all-reduces the sum over x, divides
by 8 (the global count), subtracts and squares locally, all-reduces again for the variance, and
normalizes its own rows; the mean and variance come out replicated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xla_spmd.ir import TupleShape, rewrite
from xla_spmd.ir.batch_norm import BATCH_NORM_OPS, expand_batch_norm
from xla_spmd.partition.registry import HANDLERS
from xla_spmd.partition.values import leaves, unflatten

if TYPE_CHECKING:
    from xla_spmd.ir import Instruction
    from xla_spmd.partition.partitioner import Lowering
    from xla_spmd.partition.values import PartValue


@HANDLERS.register(*BATCH_NORM_OPS)
def batch_norm(low: Lowering, inst: Instruction, operands: list) -> PartValue:
    targets = low.targets(inst)
    rank = inst.operands[0].shape.rank
    full = targets[0].replace(unreduced=())
    feature_axes = full.dims[inst.attrs.feature_index].axes
    by_rank = {rank: full, 1: low.sharding([feature_axes]), 0: low.replicated(0)}

    def sharding_of(shape):
        if isinstance(shape, TupleShape):
            return tuple(by_rank[e.rank] for e in shape.elements)
        return by_rank[shape.rank]

    expanded = expand_batch_norm(inst.opcode, [o.shape for o in inst.operands],
                                 inst.attrs.epsilon, inst.attrs.feature_index,
                                 low.state.fresh_name(f"{inst.name}.expanded"),
                                 low.state.reducer(inst.operands[0].shape.dtype, "add"))
    expanded = rewrite(expanded, lambda old, ops: old.replace(
        operands=ops, sharding=sharding_of(old.shape)))
    env = dict(zip(expanded.parameters, operands, strict=True))
    result = low.lower_body(expanded, env)
    flat = [low.reshard(v, t) for v, t in zip(leaves(result), targets, strict=True)]
    return unflatten(inst.shape, flat) if isinstance(inst.shape, TupleShape) else flat[0]
