"""Conflict policies: how one op's factor shardings are merged (basic and aggressive).

A policy is a function ``policy(views, factors, sizes, axis_sizes) -> updates``. `views`
are the op's tensors (operands then results) projected onto factors; an update is
``(tensor, factor, new_axes, source_tensor)``. Both policies only ever *extend* a tensor's
factor sharding (its current axes stay a prefix), never touch a closed or overflowing factor
sharding, an explicitly replicated, unreduced or manual axis, or an axis another factor of
the same tensor already uses; a non-minor-most factor only takes axes whose product divides
its size (or the divisible major part of an axis, as a sub-axis).

basic (Shardy's BasicFactorPropagation): per factor, the longest major axes every tensor is
compatible with (each tensor's axes a prefix), truncated wherever any tensor could not take
the next axis; all tensors get the same axes.

aggressive (Shardy's AggressiveFactorPropagation): per factor, the axes of its *source*, the
largest tensor sharded along it; each tensor takes what it can by itself. Factors whose source
is larger go first and win axes both want. Why larger first: a tensor that keeps its sharding
moves no bytes, so on a conflict we keep the larger tensor in place and let the smaller
one be resharded -- the choice that moves fewer bytes.

Worked example, dot ``A[{"a"}, {}] x B[{}, {"a"}] -> C``: basic gives C nothing ("a" is
used by factor i in A and factor j in B); aggressive gives C ``[{"a"}, {}]`` if A is larger.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xla_spmd.ir.custom_calls import PROPAGATION_BARRIER, SHARDING
from xla_spmd.mesh import overlaps_any
from xla_spmd.propagation.projection import AxisSizes, FactorSharding
from xla_spmd.propagation.registry import is_conservative


@dataclass(slots=True)
class TensorView:
    """One tensor of an op, projected: factor -> sharding, plus what limits it."""

    factors: dict[int, FactorSharding]
    excluded: tuple = ()          # replicated, unreduced and manual axes
    can_update: bool = True       # the propagation direction allows changing it
    is_source: bool = True        # False for split constants: they follow, never lead
    size: int = 0                 # bytes
    is_result: bool = False       # a result of the op (aggressive updates those first)
    updated: set = field(default_factory=set)


Update = tuple[int, int, tuple, int]   # (tensor, factor, new axes, source tensor)


def _used_elsewhere(view: TensorView, factor: int) -> list:
    used = []
    for f, fs in view.factors.items():
        if f != factor:
            used.extend(fs.axes)
            used.extend(fs.overflow)
    return used


def truncate_for(view: TensorView, factor: int, candidate: tuple, factor_size: int,
                 axis_sizes: AxisSizes) -> tuple:
    """The longest prefix of `candidate` this tensor can hold for `factor`."""
    fs = view.factors[factor]
    have = len(fs.axes)
    grows = have and candidate[have - 1:have] != fs.axes[-1:] and len(candidate) >= have
    if len(candidate) <= have and not grows:
        return candidate
    if fs.is_closed or fs.overflow:
        return fs.axes if grows else candidate[:have]
    used = _used_elsewhere(view, factor)
    start = have - 1 if grows else have
    result = list(candidate[:start])
    product = axis_sizes.product(result)
    whole_only = is_conservative()   # conservative propagation: no new sub-axes
    for axis in candidate[start:]:
        if whole_only and axis.is_sub_axis:
            break
        blocked = tuple(view.excluded) + tuple(used)
        if overlaps_any(axis, blocked):
            part = prefix_without_overlap(axis, blocked, axis_sizes)
            if part is not None and not whole_only:
                size = axis_sizes(part)
                if fs.is_minor_most or factor_size % (product * size) == 0:
                    result.append(part)
            break
        size = axis_sizes(axis)
        if not fs.is_minor_most and factor_size % (product * size):
            left = factor_size // product if factor_size % product == 0 else 1
            g = math.gcd(left, size)
            if g > 1 and not whole_only:
                result.append(axis_sizes.split(axis, g)[0])
            break
        result.append(axis)
        product *= size
    return tuple(result)


def prefix_without_overlap(axis, others, axis_sizes: AxisSizes):
    """The largest major part of `axis` that overlaps none of `others` (None: none).

    >>> from xla_spmd.mesh import AxisRef, make_mesh
    >>> sizes = AxisSizes(make_mesh({"a": 16}))
    >>> str(prefix_without_overlap(AxisRef("a"), [AxisRef("a", (4, 2))], sizes))
    '"a":(1)4'
    """
    total = axis_sizes(axis)
    for size in sorted((d for d in range(2, total + 1) if total % d == 0), reverse=True):
        part = axis if size == total else axis_sizes.sub(axis.name, axis.pre_size, size)
        if not overlaps_any(part, others):
            return part
    return None


def _compatible(old: list, new: list, can_expand: bool, axis_sizes: AxisSizes):
    """Shardy's getCompatibleMajorAxesInternal: the axes both lists agree on (a sub-axis
    may grow into the axis it is a major part of), and whether the result may still grow."""
    out = []
    old, new = list(old), list(new)
    while old and new:
        o, n = old.pop(0), new.pop(0)
        if o.name != n.name:
            return out, False
        if o == n:
            out.append(n)
        elif axis_sizes.is_prefix(n, o):
            if new:
                out.append(n)
                return out, False
            out.append(o)
        elif axis_sizes.is_prefix(o, n):
            if not can_expand or old:
                out.append(o)
                return out, False
            out.append(n)
        else:
            return out, False
    out.extend(old)
    if can_expand:
        out.extend(new)
    return out, can_expand


def compatible_major_axes(axis_lists, axis_sizes: AxisSizes) -> tuple:
    """The longest axes every list is compatible with: each a prefix of it, or a prefix
    up to a sub-axis that can grow into the axis there (Shardy's getCompatibleMajorAxes).

    >>> from xla_spmd.mesh import AxisRef, make_mesh
    >>> sizes = AxisSizes(make_mesh({"a": 16, "b": 2}))
    >>> a2, a4 = AxisRef("a", (1, 2)), AxisRef("a", (1, 4))
    >>> [str(x) for x in compatible_major_axes([(AxisRef("a"),), (a2,), ()], sizes)]
    ['"a"']
    >>> [str(x) for x in compatible_major_axes([(a2, AxisRef("b")), (a4,)], sizes)]
    ['"a":(1)2']
    """
    result: list = []
    can_expand = True
    for axes in axis_lists:
        result, can_expand = _compatible(result, axes, can_expand, axis_sizes)
    return tuple(result)


def _is_prefix(have: tuple, candidate: tuple, axis_sizes: AxisSizes | None = None) -> bool:
    """`candidate` extends `have`: more axes after it, or (given `axis_sizes`) the same
    axes with `have`'s last a major part of `candidate`'s there (a sub-axis grows)."""
    if len(have) < len(candidate) and candidate[:len(have)] == have:
        return True
    return axis_sizes is not None and 0 < len(have) <= len(candidate) and \
        candidate[:len(have) - 1] == have[:-1] and \
        axis_sizes.is_prefix(have[-1], candidate[len(have) - 1])


def basic(views: list[TensorView], factors, sizes, axis_sizes: AxisSizes) -> list[Update]:
    """Shardy's basic strategy: only conflict-free axes compatible with every tensor."""
    updates: list[Update] = []
    for f in factors:
        members = [t for t, v in enumerate(views) if f in v.factors]
        if len(members) < 2:
            continue
        sources = [t for t in members if views[t].is_source and views[t].factors[f].axes]
        if not sources:
            continue
        candidate = compatible_major_axes(
            [views[t].factors[f].axes for t in members if views[t].is_source], axis_sizes)
        for t in members:
            if views[t].is_source and candidate:
                candidate = truncate_for(views[t], f, candidate, sizes[f], axis_sizes)
        # Across factors: no axis another factor of *any* tensor of the op already uses.
        for view in views:
            used = _used_elsewhere(view, f)
            for i, axis in enumerate(candidate):
                if overlaps_any(axis, used):
                    part = prefix_without_overlap(axis, used, axis_sizes)
                    candidate = candidate[:i] + ((part,) if part is not None and
                                                 not is_conservative() else ())
                    break
        if not candidate:
            continue
        source = next((t for t in sources if views[t].factors[f].axes[:len(candidate)]
                       == candidate[:len(views[t].factors[f].axes)]), sources[0])
        for t in members:
            view = views[t]
            if not view.can_update or not _is_prefix(view.factors[f].axes, candidate,
                                                      axis_sizes):
                continue
            new = candidate if view.is_source else truncate_for(view, f, candidate, sizes[f],
                                                                axis_sizes)
            if _is_prefix(view.factors[f].axes, new, axis_sizes) and not any(
                    overlaps_any(a, _used_elsewhere(view, f)) for a in new):
                view.factors[f].axes = new
                updates.append((t, f, new, source))
    return updates


def is_elementwise(inst) -> bool:
    """Whether the aggressive strategy schedules `inst`'s factors as an elementwise op's
    (Shardy's isElementwise): an elementwise op, a bitcast-convert keeping the shape, a
    sharding constraint, propagation barrier or reshard. A data-flow edge (`inst` None) or
    any other op is not, even where every tensor has every factor (transpose, a while's
    state).

    >>> from xla_spmd.ir import Builder, ArrayShape, F32
    >>> b = Builder("f")
    >>> x = b.parameter(ArrayShape(F32, (4, 4)))
    >>> t = b.transpose(x, dimensions=(1, 0))
    >>> is_elementwise(b.add(x, x)), is_elementwise(t), is_elementwise(None)
    (True, False, False)
    """
    if inst is None:
        return False
    if inst.op.elementwise:
        return True
    if inst.opcode == "bitcast-convert":
        return inst.shape == inst.operands[0].shape
    if inst.opcode == "copy":
        return inst.sharding is not None     # sdy.reshard
    target = getattr(inst.attrs, "custom_call_target", None)
    return target in (SHARDING, PROPAGATION_BARRIER)


def aggressive(views: list[TensorView], factors, sizes, axis_sizes: AxisSizes,
               defer_conflicts: bool = False, elementwise: bool | None = None
               ) -> list[Update]:
    """Shardy's aggressive strategy.

    Per factor, the longest axes compatible with every tensor that has it (conflicts between
    tensors cut the list there, as in `basic`); its source is the largest tensor holding that
    prefix. Factors then go in order -- larger source first; on elementwise ops (every tensor
    has every factor) the most sharded factor first; then lower source and factor numbers --
    and each tensor, results before operands, takes what it can of each factor's axes without
    reusing an axis an earlier factor gave it. On elementwise ops an operand takes no more
    sideways than a result already has. `elementwise` says whether the op is one
    (`is_elementwise`); by default, whether every tensor has every factor.

    With `defer_conflicts`, a tensor that two factors both want an axis for gets neither
    yet (the driver retries at the last op-priority level). Our choice, not Shardy's: by then
    the tensor has usually been sharded by its other neighbours, which is the sharding that
    moves fewer bytes overall -- GSPMD's dot "lookahead" does the same. Example: FSDP
    ``dx = dy[{"data"}, {}] . W[{"data"}, {}]^T`` keeps dx batch-sharded like the rest of the
    backward pass instead of following the (larger) weight.
    """
    if elementwise is None:   # not told: every tensor having every factor
        elementwise = all(set(v.factors) == set(views[0].factors) for v in views)
    candidates: dict[int, tuple] = {}
    order = []
    for f in factors:
        members = [t for t, v in enumerate(views) if f in v.factors and v.is_source]
        axes = compatible_major_axes([views[t].factors[f].axes for t in members], axis_sizes)
        if not axes:
            continue
        source, best = None, -1
        for t in members:
            have = views[t].factors[f].axes
            if have[:len(axes)] == axes[:len(have)] and len(have) >= len(axes):
                size = math.prod(sizes[g] for g in views[t].factors)
                if size > best:
                    source, best = t, size
        if source is None:
            continue
        candidates[f] = axes
        sharded = axis_sizes.product(list(axes)) if elementwise else 0
        order.append((-best, -sharded, source, f))
    order.sort()
    contested = _contested(views, order, candidates) if defer_conflicts else set()
    updates: list[Update] = []
    positions = list(range(len(views)))
    results_first = [t for t in positions if views[t].is_result] + \
        [t for t in positions if not views[t].is_result]
    for t in results_first:
        view = views[t]
        if not view.can_update:
            continue
        for _, _, source, f in order:
            fs = view.factors.get(f)
            if fs is None or (t, f) in contested:
                continue
            candidate = candidates[f]
            if elementwise and not view.is_result:
                for other in views:
                    ofs = other.factors.get(f) if other.is_result else None
                    if ofs is not None and _is_prefix(ofs.axes, candidate, axis_sizes):
                        candidate = ofs.axes
            if not _is_prefix(fs.axes, candidate, axis_sizes):
                continue
            new = truncate_for(view, f, candidate, sizes[f], axis_sizes)
            if _is_prefix(fs.axes, new, axis_sizes):
                fs.axes = new
                updates.append((t, f, new, source))
    return updates


def _contested(views, order, candidates) -> set[tuple[int, int]]:
    """(tensor, factor) pairs where two factors would give one tensor overlapping axes."""
    contested = set()
    for t, view in enumerate(views):
        if not view.can_update:
            continue
        wanted = []
        for _, _, source, f in order:
            fs = view.factors.get(f)
            candidate = candidates[f]
            if fs is not None and t != source and _is_prefix(fs.axes, candidate):
                wanted.append((f, candidate[len(fs.axes):]))
        for i, (f, axes) in enumerate(wanted):
            for g, other in wanted[i + 1:]:
                if any(overlaps_any(a, other) for a in axes):
                    contested.update({(t, f), (t, g)})
    return contested


POLICIES = {"basic": basic, "aggressive": aggressive}
