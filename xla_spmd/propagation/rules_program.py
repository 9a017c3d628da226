"""Sharding rules of leaves, tuples, control flow, random numbers, collectives, custom calls.

Leaves, tuples and control flow have no factor rule: the driver treats tuples and
get-tuple-element as aliases of their elements, and while/conditional/call as data-flow edges
between operands, region arguments, region results and op results. Collectives are pointwise
except the gathered, scattered or exchanged dim, which needs replication. Custom calls follow a
table of known targets; unknown targets get no rule (conservative: nothing flows through).
"""

from __future__ import annotations

import dataclasses

from xla_spmd.ir import OPS, Family
from xla_spmd.ir.custom_calls import (
    ALLOWED_DIRECTION,
    MANUAL_BOUNDARIES,
    PROPAGATION_BARRIER,
    Role,
    targets_with,
)
from xla_spmd.propagation.factors import FactorType, RuleBuilder
from xla_spmd.propagation.registry import RULES, builder_for, no_rule
from xla_spmd.propagation.rules_shape import pointwise_rule

NEED = FactorType.NEED_REPLICATION

RULES.register(*(name for name, op in OPS.items() if op.family is Family.LEAF))(no_rule)
RULES.register("tuple", "get-tuple-element", "opt-barrier")(no_rule)
RULES.register("while", "conditional", "call", "fusion")(no_rule)
RULES.register(*(name for name, op in OPS.items() if op.family is Family.ASYNC))(no_rule)
RULES.register("rng")(no_rule)


@RULES.register("rng-bit-generator")
def rng_bit_generator_rule(inst):
    b = builder_for(inst)
    state = b.operand_dims[0]
    for d, size in enumerate(state):
        b.add(size, [d], [d, None], NEED, blocked=True)
    for d, size in enumerate(b.result_dims[1]):
        b.add(size, [None], [None, d])
    return b.build()


@RULES.register("all-reduce", "collective-permute", "collective-broadcast")
def collective_pointwise_rule(inst):
    b = builder_for(inst)
    if b is None:
        return None
    n = len(b.operand_dims)
    if any(b.operand_dims[k] != b.result_dims[k] for k in range(n)):
        return None
    for k in range(n):
        for d, size in enumerate(b.operand_dims[k]):
            b.add(size, [d if t == k else None for t in range(n)],
                  [d if t == k else None for t in range(n)])
    return b.build()


@RULES.register("all-gather", "reduce-scatter", "all-to-all")
def collective_resizing_rule(inst):
    """Pointwise, except the gathered/scattered/split dim: one need-replication factor each
    on the operand and the result (their sizes differ)."""
    b = builder_for(inst)
    if b is None:
        return None
    n = len(b.operand_dims)
    special = set(inst.attrs.dimensions or ())
    for k in range(n):
        for d, size in enumerate(b.operand_dims[k]):
            own = [d if t == k else None for t in range(n)]
            if d in special or size != b.result_dims[k][d]:
                b.add(size, own, [None] * n, NEED)
                b.add(b.result_dims[k][d], [None] * n, own, NEED)
            else:
                b.add(size, own, own)
    return b.build()


# sdy.propagation_barrier's allowed_direction: (operand -> result, result -> operand)
BARRIER_DIRECTIONS = {"BOTH": (True, True), "FORWARD": (True, False),
                      "BACKWARD": (False, True), "NONE": (False, False)}

# Custom-call targets whose result is the operand, elementwise (Shardy's list plus the
# markers JAX's HLO carries). "Sharding" is a sharding constraint: the driver also pins it.
POINTWISE_TARGETS = targets_with(Role.MARKER, Role.GROUP, Role.POINTWISE, Role.FULL_TO_SHARD,
                                 Role.SHARD_TO_FULL)
# Targets that cross a manual-computation boundary: no factors (manual axes stop there).
MANUAL_TARGETS = MANUAL_BOUNDARIES


@RULES.register("custom-call")
def custom_call_rule(inst):
    target = inst.attrs.custom_call_target
    if target in MANUAL_TARGETS:
        return None
    if target in POINTWISE_TARGETS or target.startswith("_SPMDInternalOp_"):
        b = builder_for(inst)
        if b is None or len(b.result_dims) != 1 or any(
                d != b.result_dims[0] for d in b.operand_dims if len(d) > 0):
            return None
        rule = pointwise_rule(inst)
        allowed = inst.frontend_attribute(ALLOWED_DIRECTION)
        if target == PROPAGATION_BARRIER and allowed is not None:
            rule = dataclasses.replace(rule, direction=BARRIER_DIRECTIONS[allowed])
        return rule
    if target == "mhlo.topk" or target == "TopK":
        b = builder_for(inst)
        if b is None or len(b.operand_dims) != 1:
            return None
        x = b.operand_dims[0]
        out = RuleBuilder([x], b.result_dims)
        for d, size in enumerate(x[:-1]):
            out.add(size, [d], [d] * len(b.result_dims))
        out.add(x[-1], [len(x) - 1], [None] * len(b.result_dims), NEED)
        out.add(b.result_dims[0][-1], [None], [len(x) - 1] * len(b.result_dims))
        return out.build()
    return None   # unknown target: no rule, nothing propagates through (as Shardy)
