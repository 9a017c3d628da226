"""Projecting dim shardings onto factors and back (Shardy's sharding_projection).

A dim ``[f1, f2]`` (major to minor) sharded on axes ``a1, a2, ...`` gives its major factor
``f1`` axes while their product divides what is left of ``f1``'s size, splitting an axis into
sub-axes where only part of it fits (dim 8 = ``[i=2, j=4]`` on ``"x"=4`` gives ``i:
"x":(1)2``, ``j: "x":(2)2``); the minor-most factor takes every axis left. Axes that fit no
non-minor factor are *overflow* axes: they stay on the dim and block that factor.

Projecting back concatenates the factors' axes per dim, stopping where a factor is only
partly sharded (the minor factors could then only be sharded through a strided view), and
merges adjacent sub-axes (``"x":(1)2, "x":(2)2`` is ``"x"``).

Invariant: projecting a dim sharding and projecting it back gives it unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xla_spmd.mesh import AxisRef, Mesh, merge_sub_axes


class AxisSizes:
    """Sizes of axes and sub-axes of one mesh, cached."""

    __slots__ = ("mesh", "_cache")

    def __init__(self, mesh: Mesh):
        self.mesh = mesh
        self._cache: dict[AxisRef, int] = {}

    def __call__(self, axis: AxisRef) -> int:
        size = self._cache.get(axis)
        if size is None:
            size = self._cache[axis] = self.mesh.axis_size(axis)
        return size

    def full(self, name: str) -> int:
        return self.mesh.shape[name]

    def sub(self, name: str, pre: int, size: int) -> AxisRef:
        """The (sub-)axis of ``name`` with pre-size ``pre`` and ``size`` (whole if it is)."""
        return AxisRef(name) if pre == 1 and size == self.full(name) else AxisRef(name, (pre, size))

    def split(self, axis: AxisRef, size: int) -> tuple[AxisRef, AxisRef]:
        """``axis`` as its major part of ``size`` and the rest (``"x"`` of 4, 2 ->
        ``"x":(1)2, "x":(2)2``)."""
        total = self(axis)
        return (self.sub(axis.name, axis.pre_size, size),
                self.sub(axis.name, axis.pre_size * size, total // size))

    def is_prefix(self, small: AxisRef, big: AxisRef) -> bool:
        """``small`` is a strict major part of ``big`` (``"x":(1)2`` of ``"x"``)."""
        return (small.name == big.name and small.pre_size == big.pre_size
                and self(small) < self(big) and self(big) % self(small) == 0)

    def product(self, axes) -> int:
        return math.prod(self(a) for a in axes)

    def merge(self, axes: list[AxisRef]) -> tuple[AxisRef, ...]:
        """Merge adjacent consecutive sub-axes of one axis."""
        return merge_sub_axes(self.mesh, axes)


@dataclass(slots=True)
class FactorSharding:
    """One tensor's sharding of one factor."""

    axes: tuple[AxisRef, ...] = ()
    is_closed: bool = False
    overflow: tuple[AxisRef, ...] = ()
    is_minor_most: bool = True


def project_dim(axes, factors, sizes, closed: bool, axis_sizes: AxisSizes,
                out: dict[int, FactorSharding]) -> None:
    """Project one dim's axes onto its factors (major to minor), filling `out`."""
    remaining = list(axes)
    last = len(factors) - 1
    overflowed = False
    for position, factor in enumerate(factors):
        if overflowed:   # past a factor with overflow axes: empty and closed
            out[factor] = FactorSharding((), True, (), position == last)
            continue
        taken: list[AxisRef] = []
        overflow: tuple[AxisRef, ...] = ()
        if position == last:
            taken, remaining = remaining, []
        else:
            capacity = sizes[factor]
            while remaining:   # size-1 axes always fit (Shardy's projection)
                axis = remaining[0]
                n = axis_sizes(axis)
                g = math.gcd(capacity, n)
                if n != 1 and g == 1:
                    break
                if n == 1 or g == n:
                    taken.append(remaining.pop(0))
                    capacity //= n
                    continue
                head, rest = axis_sizes.split(axis, g)
                taken.append(head)
                remaining[0] = rest
                capacity //= g
            if remaining and capacity > 1:
                overflow, remaining = tuple(remaining), []
                overflowed = True
        out[factor] = FactorSharding(tuple(taken), closed, overflow, position == last)


def unproject_dim(factors, shardings: dict[int, FactorSharding], sizes,
                  axis_sizes: AxisSizes) -> tuple[AxisRef, ...]:
    """The dim's axes from its factors' shardings, major to minor."""
    axes: list[AxisRef] = []
    for factor in factors:
        fs = shardings[factor]
        axes.extend(fs.axes)
        axes.extend(fs.overflow)
        if fs.overflow or axis_sizes.product(fs.axes) != sizes[factor]:
            break   # a partly sharded factor: minor factors would need a strided view
    return axis_sizes.merge(axes)
