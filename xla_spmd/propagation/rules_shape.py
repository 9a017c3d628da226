"""Sharding rules of elementwise and shape ops (Shardy's op_sharding_rule_registry.cc).

Elementwise ops share one factor per dim across all full-rank tensors (scalar operands of
select/clamp get none). Shape ops map dims one to one where they carry the same data, and
give a dim whose elements move (padded, sliced, reversed, concatenated) a permutation factor.
Reshape decomposes dims into common factors by GCD, from the major end and from the minor
end; what is left in the middle gets factors of its own.
"""

from __future__ import annotations

import math

from xla_spmd.ir import OPS
from xla_spmd.propagation.factors import FactorType, RuleBuilder
from xla_spmd.propagation.registry import RULES, builder_for, is_conservative

PASS = FactorType.PASS_THROUGH
PERM = FactorType.PERMUTATION
NEED = FactorType.NEED_REPLICATION

ELEMENTWISE = tuple(name for name, op in OPS.items() if op.elementwise)


@RULES.register(*ELEMENTWISE)
def pointwise_rule(inst):
    b = builder_for(inst)
    if b is None:
        return None
    b.pointwise(inst.shape.dims)
    return b.build()


@RULES.register("bitcast-convert")
def bitcast_convert_rule(inst):
    b = builder_for(inst)
    (x,), (out,) = b.operand_dims, b.result_dims
    common = min(len(x), len(out))
    for d in range(common):
        b.add(x[d], [d], [d])
    for d in range(common, len(x)):       # the minor dim of the narrower type
        b.add(x[d], [d], [None], NEED)
    for d in range(common, len(out)):
        b.add(out[d], [None], [d], NEED)
    return b.build()


@RULES.register("broadcast")
def broadcast_rule(inst):
    b = builder_for(inst)
    out = inst.shape.dims
    operand_of = {d: i for i, d in enumerate(inst.attrs.dimensions)}
    x = b.operand_dims[0]
    for d, size in enumerate(out):
        i = operand_of.get(d)
        if i is not None and x[i] == size:
            b.add(size, [i], [d])
        else:
            if i is not None:   # a size-1 dim expanded in place: its own size-1 factor
                b.add(x[i], [i], [None])
            b.add(size, [None], [d])
    return b.build()


@RULES.register("transpose")
def transpose_rule(inst):
    b = builder_for(inst)
    # one factor per result dim, in result order (Shardy's numbering)
    for d, i in enumerate(inst.attrs.dimensions):
        b.add(b.operand_dims[0][i], [i], [d])
    return b.build()


@RULES.register("reverse")
def reverse_rule(inst):
    b = builder_for(inst)
    b.pointwise(inst.shape.dims, {d: PERM for d in inst.attrs.dimensions})
    return b.build()


def _mismatch_pointwise(inst, changed, kind=PERM, blocked=False):
    """Operand 0 dims <-> result dims; dims in `changed` get a `kind` factor of operand size."""
    b = builder_for(inst)
    x = b.operand_dims[0]
    nulls = [None] * (len(b.operand_dims) - 1)
    for d, size in enumerate(x):
        if d in changed:
            b.add(size, [d, *nulls], [d], kind, blocked=blocked)
        else:
            b.add(size, [d, *nulls], [d])
    return b


@RULES.register("slice")
def slice_rule(inst):
    x = inst.operands[0].shape.dims
    changed = {d for d, s in enumerate(inst.attrs.slice) if s.output_size() != x[d]}
    return _mismatch_pointwise(inst, changed, blocked=is_conservative()).build()


@RULES.register("pad")
def pad_rule(inst):
    changed = {d for d, p in enumerate(inst.attrs.padding)
               if (p.low, p.high, p.interior) != (0, 0, 0)}
    return _mismatch_pointwise(inst, changed, blocked=is_conservative()).build()


@RULES.register("dynamic-slice")
def dynamic_slice_rule(inst):
    x = inst.operands[0].shape.dims
    changed = {d for d, s in enumerate(inst.attrs.dynamic_slice_sizes) if s != x[d]}
    return _mismatch_pointwise(inst, changed, NEED, blocked=True).build()


@RULES.register("dynamic-update-slice")
def dynamic_update_slice_rule(inst):
    b = builder_for(inst)
    x, update = b.operand_dims[0], b.operand_dims[1]
    nulls = [None] * (len(b.operand_dims) - 2)
    constant_indices = all(o.opcode == "constant" for o in inst.operands[2:])
    for d, size in enumerate(x):
        if update[d] == size:
            b.add(size, [d, d, *nulls], [d])
        else:   # the operand/result dim and the (smaller) update dim are factors apart;
            # the update's needs replication, unless every start index is a constant
            b.add(size, [d, None, *nulls], [d])
            b.add(update[d], [None, d, *nulls], [None], PASS if constant_indices else NEED)
    return b.build()


@RULES.register("concatenate")
def concatenate_rule(inst):
    b = builder_for(inst)
    (dim,) = inst.attrs.dimensions
    # Concatenating slices, or a tensor with slices of itself, only moves data: a
    # permutation, not a gather (Shardy's registry).
    def before_slice(o):
        return o.operands[0] if o.op.name == "slice" else o
    slices = [o.op.name == "slice" for o in inst.operands]
    same = len({before_slice(o) for o in inst.operands}) == 1
    kind = PERM if all(slices) or (same and any(slices)) else NEED
    for d, size in enumerate(inst.shape.dims):
        if d == dim and is_conservative():
            continue    # no factor for the concatenated dim
        b.add(size, [d] * len(inst.operands), [d], kind if d == dim else PASS)
    return b.build()


@RULES.register("get-dimension-size")
def get_dimension_size_rule(inst):
    b = builder_for(inst)
    for d, size in enumerate(b.operand_dims[0]):
        b.add(size, [d], [])
    return b.build()


@RULES.register("reshape", "bitcast")
def reshape_rule(inst):
    b = builder_for(inst)
    if 0 in b.operand_dims[0] or 0 in inst.shape.dims:
        return None     # an empty array: nothing to shard (Shardy gives no rule)
    return reshape_factors(b, b.operand_dims[0], inst.shape.dims).build()


def _diverged(factor: int, smaller: int, larger: int, g: int) -> int:
    """`reshape_factors`' next factor on the side with fewer factors (`smaller` of them so
    far against the other side's `larger`; `g` the gcd of the two sides' next sizes)."""
    if larger % smaller == 0 and factor % (larger // smaller) == 0:
        return larger // smaller    # converges the two sides
    return factor // g if factor > g else factor


def reshape_factors(b: RuleBuilder, x: tuple[int, ...], out: tuple[int, ...]) -> RuleBuilder:
    """Factor a reshape ``x -> out`` as Shardy does: walking both shapes from the major end,
    a size-1 dim gets a size-1 factor of its own; while the factors so far agree, the GCD
    of the next in and out sizes is a common factor (or, GCD 1, each gets its own); once
    they diverge, the side behind gets the factor that lets them converge again.

    Worked example ``8x4 -> 2x16``: gcd(8,2)=2 (i), gcd(4,16)=4 (j), gcd(4,4)=4 (k):
    ``([ij, k])->([i, jk])``. For ``3x2 -> 2x3`` no size is shared: ``([i, l])->([j, k])``.
    """
    if 0 in x or 0 in out:
        for d, size in enumerate(x):
            b.add(size, [d], [None])
        for d, size in enumerate(out):
            b.add(size, [None], [d])
        return b
    in_dim = out_dim = 0
    dims_in = dims_out = factors_in = factors_out = 1
    while in_dim < len(x) or out_dim < len(out):
        if in_dim < len(x) and x[in_dim] == 1:
            b.add(1, [in_dim], [None])
            in_dim += 1
            continue
        if out_dim < len(out) and out[out_dim] == 1:
            b.add(1, [None], [out_dim])
            out_dim += 1
            continue
        if in_dim < len(x) and dims_in == factors_in:
            dims_in *= x[in_dim]
        if out_dim < len(out) and dims_out == factors_out:
            dims_out *= out[out_dim]
        next_in, next_out = dims_in // factors_in, dims_out // factors_out
        g = math.gcd(next_in, next_out)

        if factors_in == factors_out:
            if g > 1:
                b.add(g, [in_dim], [out_dim])
                factors_in *= g
                factors_out *= g
            else:
                b.add(next_in, [in_dim], [None])
                factors_in *= next_in
                b.add(next_out, [None], [out_dim])
                factors_out *= next_out
        elif factors_in < factors_out:
            factor = _diverged(next_in, factors_in, factors_out, g)
            b.add(factor, [in_dim], [None])
            factors_in *= factor
        else:
            factor = _diverged(next_out, factors_out, factors_in, g)
            b.add(factor, [None], [out_dim])
            factors_out *= factor
        if in_dim < len(x) and dims_in == factors_in:
            in_dim += 1
        if out_dim < len(out) and dims_out == factors_out:
            out_dim += 1
    return b
