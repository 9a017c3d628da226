"""Axis references: a whole mesh axis ``"x"`` or a sub-axis ``"x":(m)k`` in Shardy's notation.

A sub-axis ``"x":(m)k`` of an axis of size ``n`` splits the axis coordinate into the mixed-radix
digits ``[m, k, n/(m*k)]`` (major to minor) and names the middle digit: pre-size ``m`` is the
product of the digits to its left, ``k`` its size, ``n/(m*k)`` its post-size. So a device with
coordinate ``c`` along ``x`` has coordinate ``(c // (n // (m*k))) % k`` along the sub-axis.

>>> AxisRef("x", (2, 4))
AxisRef('x':(2)4)
>>> str(AxisRef("x", (2, 4))), AxisRef("x", (2, 4)).coordinate(5, axis_size=8)
('"x":(2)4', 1)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xla_spmd.errors import ShardingError


@dataclass(frozen=True, slots=True)
class AxisRef:
    """A mesh axis by name, or a sub-axis ``(pre_size, size)`` of it.

    >>> AxisRef("x").overlaps(AxisRef("x", (1, 2)))
    True
    >>> AxisRef("x", (1, 2)).overlaps(AxisRef("x", (2, 2)))
    False
    """

    name: str
    sub_axis: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ShardingError(f"axis name must be a non-empty string, got {self.name!r}")
        if self.sub_axis is not None:
            if (len(self.sub_axis) != 2
                    or not all(isinstance(v, int) for v in self.sub_axis)):
                raise ShardingError(
                    f"sub-axis of {self.name!r} must be (pre_size, size), got {self.sub_axis!r}")
            pre_size, size = self.sub_axis
            if pre_size < 1 or size < 2:
                raise ShardingError(
                    f"sub-axis \"{self.name}\":({pre_size}){size} needs pre-size >= 1 and "
                    f"size >= 2")
            object.__setattr__(self, "sub_axis", (int(pre_size), int(size)))

    @property
    def is_sub_axis(self) -> bool:
        return self.sub_axis is not None

    @property
    def pre_size(self) -> int:
        return 1 if self.sub_axis is None else self.sub_axis[0]

    def size(self, axis_size: int) -> int:
        """The number of coordinates along this ref, given the full axis size."""
        return axis_size if self.sub_axis is None else self.sub_axis[1]

    def next_pre_size(self, axis_size: int) -> int:
        """Pre-size of the digit right after this one (``m*k``, or ``n`` for a full axis)."""
        return axis_size if self.sub_axis is None else self.sub_axis[0] * self.sub_axis[1]

    def validate(self, axis_size: int) -> None:
        """Raise ShardingError unless this sub-axis fits an axis of ``axis_size``."""
        if self.sub_axis is None:
            return
        pre_size, size = self.sub_axis
        if axis_size % (pre_size * size) != 0:
            raise ShardingError(
                f"sub-axis {self}: pre-size*size = {pre_size * size} does not divide the size "
                f"{axis_size} of axis {self.name!r}")
        if size == axis_size:
            raise ShardingError(f"sub-axis {self} spans the whole axis; write \"{self.name}\"")

    def coordinate(self, axis_coordinate: int, *, axis_size: int) -> int:
        """This ref's coordinate for a device at ``axis_coordinate`` along the full axis."""
        if self.sub_axis is None:
            return axis_coordinate
        pre_size, size = self.sub_axis
        return (axis_coordinate // (axis_size // (pre_size * size))) % size

    def overlaps(self, other: AxisRef) -> bool:
        """Whether two refs share (or cannot be told apart from sharing) a digit of an axis.

        Sub-axes that do not intersect but come from incompatible factorizations (``(1)2`` and
        ``(3)2`` of an axis of 6) also count as overlapping: their coordinates are not
        independent.
        """
        if self.name != other.name:
            return False
        if self.sub_axis is None or other.sub_axis is None:
            return True
        (m1, k1), (m2, k2) = self.sub_axis, other.sub_axis
        if m1 < m2 * k2 and m2 < m1 * k1:
            return True
        low_size = k1 if m1 < m2 else k2
        high_pre, low_pre = (m2, m1) if m1 < m2 else (m1, m2)
        return high_pre % (low_pre * low_size) != 0

    def __str__(self) -> str:
        if self.sub_axis is None:
            return f'"{self.name}"'
        return f'"{self.name}":({self.sub_axis[0]}){self.sub_axis[1]}'

    def __repr__(self) -> str:
        if self.sub_axis is None:
            return f"AxisRef({self.name!r})"
        return f"AxisRef({self.name!r}:({self.sub_axis[0]}){self.sub_axis[1]})"


def overlaps_any(axis: AxisRef, others: Iterable[AxisRef]) -> bool:
    """Whether `axis` shares devices with one of `others` (a sub-axis overlaps its axis).

    >>> overlaps_any(AxisRef("x", (2, 2)), [AxisRef("y"), AxisRef("x")])
    True
    """
    return any(axis.overlaps(other) for other in others)


def as_axis_ref(axis: AxisRef | str) -> AxisRef:
    """Accept a plain axis name wherever an AxisRef is expected.

    >>> as_axis_ref("x")
    AxisRef('x')
    """
    if isinstance(axis, AxisRef):
        return axis
    if isinstance(axis, str):
        return AxisRef(axis)
    raise ShardingError(f"expected an axis name or AxisRef, got {axis!r}")
