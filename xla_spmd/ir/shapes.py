"""Array, tuple and token shapes.

A layout (`minor_to_major`) is read and kept so that printed modules match what XLA printed,
but nothing requires it: every array is logically row-major.

>>> s = ArrayShape(F32, (8, 16))
>>> str(s), s.rank, s.num_elements
('f32[8,16]', 2, 128)
>>> str(TupleShape((s, ArrayShape(S32, ()))))
'(f32[8,16], s32[])'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NoReturn

from xla_spmd.errors import VerifyError
from xla_spmd.ir.dtypes import F32, PRED, S32, TOKEN, DType  # noqa: F401 (re-exported)


@dataclass(frozen=True, slots=True)
class ArrayShape:
    """A dense array of `dtype` with static dimensions; `layout` is minor-to-major or None."""

    dtype: DType
    dims: tuple[int, ...]
    layout: tuple[int, ...] | None = None

    def __post_init__(self):
        if not isinstance(self.dims, tuple):
            # Any sequence of ints is accepted at run time and stored as a tuple.
            dims = tuple(int(d) for d in self.dims)  # pyright: ignore[reportGeneralTypeIssues]
            object.__setattr__(self, "dims", dims)
        if any(d < 0 for d in self.dims):
            raise VerifyError(f"negative dimension in shape {self}")
        if self.layout is not None and sorted(self.layout) != list(range(len(self.dims))):
            layout = ",".join(map(str, self.layout))
            raise VerifyError(f"layout {{{layout}}} is not a permutation of the "
                              f"{len(self.dims)} dims of {self.dtype}{list(self.dims)}")

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def num_elements(self) -> int:
        return math.prod(self.dims)

    @property
    def byte_size(self) -> int:
        return self.num_elements * self.dtype.itemsize

    @property
    def is_tuple(self) -> bool:
        return False

    @property
    def is_token(self) -> bool:
        return self.dtype is TOKEN

    def with_dtype(self, dtype: DType) -> ArrayShape:
        return ArrayShape(dtype, self.dims)

    def with_dims(self, dims) -> ArrayShape:
        return ArrayShape(self.dtype, tuple(dims))

    def without_layout(self) -> ArrayShape:
        return ArrayShape(self.dtype, self.dims) if self.layout is not None else self

    def same_type(self, other: Shape) -> bool:
        """Equal up to layout."""
        return (isinstance(other, ArrayShape) and other.dtype is self.dtype
                and other.dims == self.dims)

    def leaves(self) -> tuple[ArrayShape, ...]:
        return (self,)

    @property
    def elements(self) -> NoReturn:
        """A tuple's field: on an array it raises AttributeError, as a missing attribute would
        (``hasattr(shape, "elements")`` is still False), naming the shape."""
        raise AttributeError(f"the array shape {self} has no 'elements' (a tuple's field)")

    def __str__(self) -> str:
        if self.dtype is TOKEN:
            return "token[]"
        return f"{self.dtype.name}[{','.join(map(str, self.dims))}]"

    def to_text(self, with_layout: bool = True) -> str:
        """HLO spelling, with the layout when one is known (or the default for rank ≥ 1)."""
        text = str(self)
        if with_layout and self.dtype is not TOKEN and self.rank > 0:
            layout = self.layout or tuple(range(self.rank - 1, -1, -1))
            text += "{" + ",".join(map(str, layout)) + "}"
        elif with_layout and self.rank == 0 and self.layout is not None:
            text += "{}"
        return text


@dataclass(frozen=True, slots=True)
class TupleShape:
    """A tuple of shapes (HLO only; multi-result ops and loop state)."""

    elements: tuple[Shape, ...]

    def __post_init__(self):
        if not isinstance(self.elements, tuple):
            object.__setattr__(self, "elements", tuple(self.elements))

    @property
    def is_tuple(self) -> bool:
        return True

    @property
    def is_token(self) -> bool:
        return False

    @property
    def byte_size(self) -> int:
        return sum(e.byte_size for e in self.elements)

    def same_type(self, other: Shape) -> bool:
        return (isinstance(other, TupleShape) and len(other.elements) == len(self.elements)
                and all(a.same_type(b) for a, b in zip(self.elements, other.elements)))

    def without_layout(self) -> TupleShape:
        return TupleShape(tuple(e.without_layout() for e in self.elements))

    def leaves(self) -> tuple[ArrayShape, ...]:
        return tuple(leaf for e in self.elements for leaf in e.leaves())

    # The array-only fields, so that code holding a `Shape` it knows is an array (an operand
    # the verifier checked) reads them without a cast: on a tuple each raises AttributeError,
    # as a missing attribute would (``getattr(shape, "rank", 0)`` still gives 0), naming the
    # shape. Typed NoReturn: a value read from a shape narrowed to TupleShape is unreachable.
    @property
    def dims(self) -> NoReturn:
        raise self._not_an_array("dims")

    @property
    def dtype(self) -> NoReturn:
        raise self._not_an_array("dtype")

    @property
    def rank(self) -> NoReturn:
        raise self._not_an_array("rank")

    @property
    def num_elements(self) -> NoReturn:
        raise self._not_an_array("num_elements")

    @property
    def layout(self) -> NoReturn:
        raise self._not_an_array("layout")

    def _not_an_array(self, field: str) -> AttributeError:
        return AttributeError(f"the tuple shape {self} has no '{field}' (an array's field); "
                              f"read it on one of its elements")

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"

    def to_text(self, with_layout: bool = True) -> str:
        return "(" + ", ".join(e.to_text(with_layout) for e in self.elements) + ")"


Shape = ArrayShape | TupleShape

TOKEN_SHAPE = ArrayShape(TOKEN, ())


def scalar(dtype: DType) -> ArrayShape:
    return ArrayShape(dtype, ())


def array(dtype: DType, *dims: int) -> ArrayShape:
    return ArrayShape(dtype, tuple(dims))
