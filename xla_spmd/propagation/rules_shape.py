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
from xla_spmd.propagation.registry import RULES, builder_for

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
    perm = inst.attrs.dimensions
    factors = {}
    for d in range(len(perm)):
        factors[perm[d]] = (d, b.operand_dims[0][perm[d]])
    for i in range(len(perm)):
        d, size = factors[i]
        b.add(size, [i], [d])
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
    return _mismatch_pointwise(inst, changed).build()


@RULES.register("pad")
def pad_rule(inst):
    changed = {d for d, p in enumerate(inst.attrs.padding)
               if (p.low, p.high, p.interior) != (0, 0, 0)}
    return _mismatch_pointwise(inst, changed).build()


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
    for d, size in enumerate(x):
        if update[d] == size:
            b.add(size, [d, d, *nulls], [d])
        else:   # the operand/result dim and the (smaller) update dim are factors apart
            b.add(size, [d, None, *nulls], [d])
            b.add(update[d], [None, d, *nulls], [None])
    return b.build()


@RULES.register("concatenate")
def concatenate_rule(inst):
    b = builder_for(inst)
    (dim,) = inst.attrs.dimensions
    # Concatenating slices (of one tensor) only moves data: a permutation, not a gather.
    kind = PERM if all(o.op.name == "slice" for o in inst.operands) else NEED
    b.pointwise(inst.shape.dims, {dim: kind})
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


def reshape_factors(b: RuleBuilder, x: tuple[int, ...], out: tuple[int, ...]) -> RuleBuilder:
    """Factor a reshape ``x -> out``: common GCD factors from the major end while the
    remaining sizes share one, then from the minor end; the middle gets factors of its own.

    Worked example ``8x4 -> 2x16``: major end gcd(8,2)=2 (i), gcd(4,16)=4 (j), gcd(4,4)=4 (k):
    ``([ij, k])->([i, jk])``. For ``6x4 -> 4x6`` the major end shares 2, the minor end 2, and
    3 (in), 2 (out), 2 (in), 3 (out) stay alone.
    """
    if 0 in x or 0 in out:
        for d, size in enumerate(x):
            b.add(size, [d], [None])
        for d, size in enumerate(out):
            b.add(size, [None], [d])
        return b
    # Size-1 dims carry no data; each gets its own size-1 factor.
    in_dims = [d for d, s in enumerate(x) if s != 1]
    out_dims = [d for d, s in enumerate(out) if s != 1]
    in_left = {d: x[d] for d in in_dims}
    out_left = {d: out[d] for d in out_dims}
    major: list[tuple[int, int, int]] = []   # (size, in dim, out dim)
    i = o = 0
    while i < len(in_dims) and o < len(out_dims):
        g = math.gcd(in_left[in_dims[i]], out_left[out_dims[o]])
        if g == 1:
            break
        major.append((g, in_dims[i], out_dims[o]))
        in_left[in_dims[i]] //= g
        out_left[out_dims[o]] //= g
        if in_left[in_dims[i]] == 1:
            i += 1
        if out_left[out_dims[o]] == 1:
            o += 1
    minor: list[tuple[int, int, int]] = []
    ri, ro = len(in_dims) - 1, len(out_dims) - 1
    if i < len(in_dims) and o < len(out_dims):
        while ri >= i and ro >= o:
            di, do = in_dims[ri], out_dims[ro]
            if (ri, ro) == (i, o) or in_left[di] == 1 or out_left[do] == 1:
                break
            g = math.gcd(in_left[di], out_left[do])
            if g == 1:
                break
            minor.append((g, di, do))
            in_left[di] //= g
            out_left[do] //= g
            if in_left[di] == 1:
                ri -= 1
            if out_left[do] == 1:
                ro -= 1
    # Dims in the middle keep what is left as factors of their own.
    for size, di, do in major:
        b.add(size, [di], [do])
    for d, size in enumerate(x):
        if size == 1:
            b.add(1, [d], [None])
        elif in_left.get(d, 1) > 1:
            b.add(in_left[d], [d], [None])
    for d, size in enumerate(out):
        if size == 1:
            b.add(1, [None], [d])
        elif out_left.get(d, 1) > 1:
            b.add(out_left[d], [None], [d])
    for size, di, do in reversed(minor):
        b.add(size, [di], [do])
    return b

