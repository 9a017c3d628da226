"""Reductions of `xla_spmd.numpy`: sum, prod, max, min, all, any, mean, var, std, argmax,
argmin, cumsum, cumprod.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> np.asarray(xnp.argmax(np.array([[1, 3, 2], [4, 0, 4]]), axis=1)).tolist()
[1, 0]
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.dtypes import default_int
from xla_spmd.frontend.tracing import ArrayLike, DTypeLike, Value, bind, fresh_name
from xla_spmd.ir import F32, PRED, S32, Builder, ComparisonDirection, DType
from xla_spmd.ir.shapes import ArrayShape


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < builtins.max(ndim, 1):
            raise XlaSpmdError(f"axis {a} is out of bounds for an array of rank {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(sorted(set(out)))


def _keep(result, x_shape, axes, keepdims: bool):
    if not keepdims:
        return result
    return lax.reshape(result, [1 if i in axes else n for i, n in enumerate(x_shape)])


def _reduction(kind: str, promote_bool: bool):
    def fn(x, axis=None, keepdims: bool = False, dtype=None):
        x = xnp.asarray(x)
        if dtype is not None:
            x = xnp.astype(x, dtype)
        elif promote_bool and x.aval.dtype.is_pred:
            x = lax.convert(x, S32)
        axes = _axes(axis, x.ndim)
        return _keep(lax.reduce(x, kind, axes), x.shape, axes, keepdims)
    fn.__name__ = kind
    return fn


sum = _reduction("add", True)  # noqa: A001
prod = _reduction("mul", True)
max = amax = _reduction("max", False)  # noqa: A001
min = amin = _reduction("min", False)  # noqa: A001


def count_nonzero(x: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False
                  ) -> Value:
    """The number of non-zero entries (of the default int type)."""
    x = xnp.asarray(x)
    nonzero = xnp.not_equal(x, lax.zeros_like(x))
    return sum(lax.convert(nonzero, default_int()), axis, keepdims)


def all(x: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Value:  # noqa: A001
    return _reduction("and", False)(xnp.astype(x, PRED), axis, keepdims)


def any(x: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Value:  # noqa: A001
    return _reduction("or", False)(xnp.astype(x, PRED), axis, keepdims)


def mean(x: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False,
         dtype: DTypeLike = None) -> Value:
    x = xnp.asarray(x)
    if not (x.aval.dtype.is_float or x.aval.dtype.is_complex):
        x = lax.convert(x, F32)
    axes = _axes(axis, x.ndim)
    count = int(np.prod([x.shape[a] for a in axes]))
    return xnp.true_divide(sum(x, axis, keepdims), float(count))


def var(x: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Value:
    centered = x - mean(x, axis, keepdims=True)
    return mean(centered * centered, axis, keepdims=keepdims)


def std(x: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Value:
    return xnp.sqrt(var(x, axis, keepdims))


_ARG_REDUCERS: dict = {}


def _arg_reducer(kind: str, dtype: DType):
    """(value, index) pairs reducer keeping the max (min) value, the first index on ties."""
    key = (kind, dtype.name)
    if key not in _ARG_REDUCERS:
        b = Builder("argreduce")
        scalar = ArrayShape(dtype, ())
        index = ArrayShape(S32, ())
        av, ai = b.parameter(scalar, "lhs_value"), b.parameter(index, "lhs_index")
        bv, bi = b.parameter(scalar, "rhs_value"), b.parameter(index, "rhs_index")
        direction = ComparisonDirection.GT if kind == "max" else ComparisonDirection.LT
        better = b.compare(av, bv, direction=direction)
        equal = b.compare(av, bv, direction=ComparisonDirection.EQ)
        lower = b.compare(ai, bi, direction=ComparisonDirection.LT)
        take_a = b.op("or", better, b.op("and", equal, lower))
        root = b.tuple(b.select(take_a, av, bv), b.select(take_a, ai, bi))
        _ARG_REDUCERS[key] = b.build(root, fresh_name(f"region_arg{kind}_{dtype.name}"))
    return _ARG_REDUCERS[key]


def _argreduce(kind: str, x, axis, keepdims: bool):
    x = xnp.asarray(x)
    shape = x.shape
    flat = axis is None
    if flat:
        x, axis = lax.reshape(x, (x.size,)), 0
    axis = _axes(axis, x.ndim)[0]
    dtype = x.aval.dtype
    indices = lax.iota(S32, x.shape, axis)
    init = lax.constant(lax.reduction_identity(kind, dtype), dtype)
    out = bind("reduce", x, indices, init, lax.constant(0, S32), dimensions=(axis,),
               to_apply=_arg_reducer(kind, dtype))
    index = lax.get_tuple_element(out, 1)
    if flat:  # keepdims keeps every dim of the original array, as numpy
        return lax.reshape(index, (1,) * len(shape)) if keepdims else index
    return _keep(index, x.shape, (axis,), keepdims)


def argmax(x: ArrayLike, axis: int | None = None, keepdims: bool = False) -> Value:
    return _argreduce("max", x, axis, keepdims)


def argmin(x: ArrayLike, axis: int | None = None, keepdims: bool = False) -> Value:
    return _argreduce("min", x, axis, keepdims)


def _scan_operand(x, axis, dtype):
    """The operand of a prefix scan (cast, booleans counted as s32, flattened when `axis`
    is None) and the scanned axis."""
    x = xnp.asarray(x)
    if dtype is not None:
        x = xnp.astype(x, dtype)
    elif x.aval.dtype.is_pred:
        x = lax.convert(x, S32)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    axis = _axes(axis, x.ndim)[0]
    return x, axis


def cumsum(x: ArrayLike, axis: int | None = None, dtype: DTypeLike = None) -> Value:
    """Inclusive prefix sums along `axis` (a reduce-window with a full-length window)."""
    x, axis = _scan_operand(x, axis, dtype)
    n = x.shape[axis]
    window = [1] * x.ndim
    window[axis] = n
    padding = [(0, 0)] * x.ndim
    padding[axis] = (n - 1, 0)
    return lax.window_reduce(x, "add", window, None, padding)


def cumprod(x: ArrayLike, axis: int | None = None, dtype: DTypeLike = None) -> Value:
    """Inclusive prefix products along `axis` (`lax.prefix_product`)."""
    x, axis = _scan_operand(x, axis, dtype)
    return lax.prefix_product(x, axis)
