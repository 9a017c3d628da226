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
from xla_spmd.propagation.registry import (
    RULES,
    USER_DEPENDENT_RULES,
    builder_for,
    builder_or_none,
    no_rule,
)
from xla_spmd.propagation.rules_shape import pointwise_rule

NEED = FactorType.NEED_REPLICATION
PASS = FactorType.PASS_THROUGH

RULES.register(*(name for name, op in OPS.items() if op.family is Family.LEAF))(no_rule)
RULES.register("tuple", "get-tuple-element", "opt-barrier")(no_rule)
RULES.register("while", "conditional", "call", "fusion")(no_rule)
RULES.register(*(name for name, op in OPS.items() if op.family is Family.ASYNC))(no_rule)
RULES.register("rng", "infeed", "outfeed")(no_rule)


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
    b = builder_or_none(inst)
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
    on the operand and the result (their sizes differ). The operands of a variadic one share
    their factors, as Shardy's registry: pass-through dims first, then the resized ones (an
    all-to-all's split dim, then its concat dim where they differ: the one op of
    `xla_spmd.ir.lowered`)."""
    b = builder_or_none(inst)
    if b is None:
        return None
    n = len(b.operand_dims)
    if any(b.operand_dims[k] != b.operand_dims[0] or b.result_dims[k] != b.result_dims[0]
           for k in range(n)):
        return None
    x, out = b.operand_dims[0], b.result_dims[0]
    special = set(inst.attrs.dimensions or ()) | {d for d in range(len(x)) if x[d] != out[d]}
    every = lambda d: [d] * n  # noqa: E731
    for d, size in enumerate(x):
        if d not in special:
            b.add(size, every(d), every(d))
    named = tuple(inst.attrs.dimensions or ())
    for d in named + tuple(sorted(special - set(named))):   # split dim, then concat dim
        b.add(x[d], every(d), [None] * n, NEED)
        b.add(out[d], [None] * n, every(d), NEED)
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
        b = builder_or_none(inst)
        if b is None or len(b.result_dims) != 1 or any(
                d != b.result_dims[0] for d in b.operand_dims if len(d) > 0):
            return None
        rule = pointwise_rule(inst)
        allowed = inst.frontend_attribute(ALLOWED_DIRECTION)
        if target == PROPAGATION_BARRIER and allowed is not None:
            rule = dataclasses.replace(rule, direction=BARRIER_DIRECTIONS[allowed])
        return rule
    rule = CUSTOM_CALL_RULES.get(target)
    if rule is not None:
        b = builder_or_none(inst)
        return None if b is None else rule(b)
    return None   # unknown target: no rule, nothing propagates through (as Shardy)


def _pointwise_all(b: RuleBuilder):
    """Every operand and result of one shape, dim by dim (X64Combine's two halves too)."""
    shapes = set(b.operand_dims) | set(b.result_dims)
    if len(shapes) != 1:
        return None
    b.pointwise(b.result_dims[0])
    return b.build()


def _x64_combine_for_rng(inst, users):
    """``X64Combine`` feeding a ``rng_bit_generator`` (its initial state, a 1-d ui64 that must
    be replicated, and no reshard can move a ui64): its one dim is a need-replication factor
    nothing propagates through. Other users: None, the usual pointwise rule.

    Example: ``(2xui32, 2xui32) -> 2xui64`` used by a rng_bit_generator has the rule
    ``([i], [i])->([i]) {i=2} need_replication={i} blocked_propagation={i}``.
    """
    if not any(u.op.name == "rng-bit-generator" for u in users):
        return None
    b = builder_or_none(inst)
    if b is None or len(b.result_dims) != 1 or len(b.result_dims[0]) != 1 or any(
            len(d) != 1 for d in b.operand_dims):
        return None
    b.add(b.result_dims[0][0], [0] * len(b.operand_dims), [0], NEED, blocked=True)
    return b.build()


USER_DEPENDENT_RULES["X64Combine"] = _x64_combine_for_rng


def _top_k(b: RuleBuilder):
    """TopK along the last dim: that dim is one factor of the operand's size on every tensor,
    which must be replicated and never propagated (the results are k long)."""
    if len(b.operand_dims) != 1 or not b.operand_dims[0]:
        return None
    x = b.operand_dims[0]
    last = len(x) - 1
    for d, size in enumerate(x):
        b.add(size, [d], [d] * len(b.result_dims), NEED if d == last else PASS,
              blocked=d == last)
    return b.build()


def _approx_top_k(b: RuleBuilder):
    """``ApproxTopK``/``PartialReduce`` (`jax.lax.approx_max_k`): operands ``operand, iota,
    init value, init index`` (scalars), results ``values, indices``. A dim the op keeps is one
    factor of the operand, iota and both results; the reduced dim is two: the operand's size
    on the operand and iota, and the result's size (k) on the results, which must be
    replicated and is never propagated.

    Example: ``(16x4, 16x4, f32[], i32[]) -> (16x2, 16x2)`` has the rule
    ``([i, j], [i, j], [], [])->([i, k], [i, k]) {i=16, j=4, k=2} need_replication={k}``.
    """
    if len(b.operand_dims) != 4 or len(b.result_dims) != 2:
        return None
    x, values = b.operand_dims[0], b.result_dims[0]
    if len(x) != len(values):
        return None
    for d, (n, k) in enumerate(zip(x, values)):
        if n == k:
            b.add(n, [d, d, None, None], [d, d])
        else:
            b.add(n, [d, d, None, None], [None, None])
            b.add(k, [None] * 4, [d, d], NEED, blocked=True)
    return b.build()


def _eigh(b: RuleBuilder):
    """``(..., n, n) -> (..., n, n) vectors, (..., n) values``."""
    x = b.operand_dims[0]
    for d, size in enumerate(x):
        b.add(size, [d], [d, d if d < len(x) - 2 else (d - 1 if d == len(x) - 1 else None)])
    return b.build()


def _qr(b: RuleBuilder):
    """``(..., m, n) -> (..., m, n), taus (..., k)``: the matrix dims are replicated."""
    x, taus = b.operand_dims[0], b.result_dims[1]
    batch = len(x) - 2
    for d, size in enumerate(x):
        b.add(size, [d], [d, d if d < batch else None], PASS if d < batch else NEED)
    b.add(taus[-1], [None], [None, len(taus) - 1], NEED)
    return b.build()


def _householder_product(b: RuleBuilder):
    """``(..., m, n), taus (..., k) -> (..., m, n)``: the matrix dims are replicated."""
    x, taus = b.operand_dims
    batch = len(x) - 2
    for d, size in enumerate(x):
        b.add(size, [d, d if d < batch else None], [d], PASS if d < batch else NEED)
    b.add(taus[-1], [None, len(taus) - 1], [None], NEED)
    return b.build()


# Custom-call targets with a factor rule of their own (Shardy's registry of custom calls).
CUSTOM_CALL_RULES = {
    "CompactWyHelper": _pointwise_all,
    "X64Combine": _pointwise_all,
    "xla.megascale.provide_metadata": _pointwise_all,
    "mhlo.topk": _top_k,
    "TopK": _top_k,
    "ApproxTopK": _approx_top_k,
    "PartialReduce": _approx_top_k,
    "Eigh": _eigh,
    "Qr": _qr,
    "QrDecompositionBlock": _qr,
    "ProductOfElementaryHouseholderReflectors": _householder_product,
}
