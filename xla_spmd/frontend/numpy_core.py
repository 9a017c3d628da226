"""The core of `xla_spmd.numpy`, below its other modules: conversion (`asarray`, `astype`),
type promotion, broadcasting, elementwise arithmetic and comparisons, `where`, `clip`,
products (`matmul`, `dot`, ...) and array creation. Reductions, shape functions, indexing,
padding, further math and `linalg` build on it in their own modules; `xla_spmd.numpy`
assembles the namespace and `array_methods` installs the array operators.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax
from xla_spmd.frontend.dtypes import (
    ScalarType,
    canonical_array,
    default_float,
    default_int,
    result_type_of,
    to_inexact,
)
from xla_spmd.frontend.lax import as_dtype, dtype_of, shape_of
from xla_spmd.frontend.sharding_types import takes_out_sharding
from xla_spmd.frontend.tracing import (
    Array,
    ArrayLike,
    DTypeLike,
    Value,
    bind,
    is_distributed,
    is_weak,
)
from xla_spmd.ir import PRED, S32, DType

# Scalar types: dtypes that are also callable (``xnp.float32(x)``), as JAX's.
float16, float32, float64, bfloat16 = (ScalarType(t) for t in (
    "float16", "float32", "float64", "bfloat16"))
int8, int16, int32, int64 = (ScalarType(t) for t in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (ScalarType(t) for t in ("uint8", "uint16", "uint32", "uint64"))
bool_, complex64, complex128 = (ScalarType(t) for t in ("bool", "complex64", "complex128"))
pi, e, inf, nan = np.pi, np.e, np.inf, np.nan
ndarray = Value

# ---------------------------------------------------------------------------------------------
# Conversion and promotion

def _dtype_weak(x) -> tuple[DType, bool]:
    return dtype_of(x), is_weak(x)


def result_type_weak(*xs: ArrayLike) -> tuple[DType, bool]:
    """The element type of an elementwise op on `xs`, and whether it is weak (JAX's lattice:
    weak Python scalars adopt strong types)."""
    return result_type_of(_dtype_weak(x) for x in xs)


def result_type(*xs: ArrayLike) -> DType:
    """The element type of an elementwise op on `xs` (weak scalars adopt strong types)."""
    return result_type_weak(*xs)[0]


def asarray(x: ArrayLike, dtype: DTypeLike = None) -> Value:
    """A concrete or traced array from `x` (lists, numpy arrays, scalars, values); arrays
    distributed on the devices stay there."""
    if isinstance(x, Value) or is_distributed(x):
        return x if dtype is None else astype(x, dtype)
    if isinstance(x, (list, tuple)) and builtins.any(isinstance(v, Value) for v in x):
        return _stack(x).astype(dtype) if dtype else _stack(x)
    if is_weak(x):
        value = Array(canonical_array(x), weak_type=True)
        return value if dtype is None else astype(value, dtype)
    array = canonical_array(x)
    if dtype is not None:
        array = array.astype(as_dtype(dtype).numpy)
    return Array(array)


array = asarray


def _stack(values) -> Value:
    """A list of arrays of one shape as one array (numpy.stack along axis 0)."""
    arrays = _promote_dtype(*values)
    if len({a.shape for a in arrays}) > 1:
        raise XlaSpmdError(f"asarray: the arrays of a list must have one shape, got "
                           f"{[a.shape for a in arrays]}")
    return lax.concatenate([lax.reshape(a, (1, *a.shape)) for a in arrays], 0)


def astype(x: ArrayLike, dtype: DTypeLike) -> Value:
    x = asarray(x)
    target = as_dtype(dtype)
    if target is PRED and not x.aval.dtype.is_pred:
        return not_equal(x, lax.zeros_like(x))
    return lax.convert(x, target)


def _to(x, dtype: DType) -> Value:
    if isinstance(x, Value) or is_distributed(x):
        out = lax.convert(x, dtype)
        if out is not x:
            out.weak_type = x.weak_type
        return out
    if is_weak(x):
        return Array(np.asarray(x, dtype.numpy), weak_type=True)
    return lax.convert(asarray(x), dtype)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise XlaSpmdError(f"shapes {', '.join(map(str, shapes))} do not broadcast") from None


def broadcast_to(x: ArrayLike, shape: Sequence[int]) -> Value:
    x = asarray(x)
    shape = tuple(shape)
    dims = x.shape
    if dims == shape:
        return x
    offset = len(shape) - len(dims)
    if offset < 0 or builtins.any(n not in (1, shape[offset + i]) for i, n in enumerate(dims)):
        raise XlaSpmdError(f"cannot broadcast shape {dims} to {shape}")
    keep = [i for i, n in enumerate(dims) if n == shape[offset + i]]
    if len(keep) != len(dims):
        x = lax.reshape(x, [dims[i] for i in keep])
    return lax.broadcast_in_dim(x, shape, [offset + i for i in keep])


def _promote(*xs, dtype: DType | None = None) -> list[Value]:
    """Convert `xs` to a common element type and broadcast them to a common shape."""
    dtype = dtype or result_type(*xs)
    shape = broadcast_shapes(*(shape_of(x) for x in xs))
    return [broadcast_to(_to(x, dtype), shape) for x in xs]


def _elementwise(opcode: str, *xs, dtype: DType | None = None) -> Value:
    promoted, weak = result_type_weak(*xs)
    args = _promote(*xs, dtype=dtype or promoted)
    return bind(opcode, *args, weak_type=weak)


def _float_args(*xs):
    """The floating type of a float-valued op on `xs` (ints to f32, or f64 from 64 bits)."""
    return to_inexact(result_type(*xs))


def _binary(opcode: str):
    def fn(x, y):
        return _elementwise(opcode, x, y)
    fn.__name__ = opcode
    return fn


add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
maximum = _binary("maximum")
minimum = _binary("minimum")
bitwise_and = logical_and = _binary("and")
bitwise_or = logical_or = _binary("or")
bitwise_xor = logical_xor = _binary("xor")


def left_shift(x: ArrayLike, y: ArrayLike) -> Value:
    """``x << y`` for integers (shifts of the width or more give 0, as XLA's)."""
    return _elementwise("shift-left", x, y)


def right_shift(x: ArrayLike, y: ArrayLike) -> Value:
    """``x >> y``: arithmetic for signed integers, logical for unsigned ones."""
    dtype = result_type(x, y)
    return _elementwise("shift-right-logical" if dtype.kind.name == "UNSIGNED"
                        else "shift-right-arithmetic", x, y)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def true_divide(x: ArrayLike, y: ArrayLike) -> Value:
    return _elementwise("divide", x, y, dtype=_float_args(x, y))


divide = true_divide


def floor_divide(x: ArrayLike, y: ArrayLike) -> Value:
    dtype = result_type(x, y)
    if dtype.is_float:
        return floor(true_divide(x, y))
    x, y = _promote(x, y)
    quotient = bind("divide", x, y)
    rem = bind("remainder", x, y)
    zero = lax.zeros_like(x)
    adjust = logical_and(not_equal(rem, zero), not_equal(less(rem, zero), less(y, zero)))
    return where(adjust, quotient - 1, quotient)


def remainder(x: ArrayLike, y: ArrayLike) -> Value:
    x, y = _promote(x, y)
    rem = bind("remainder", x, y)
    zero = lax.zeros_like(x)
    adjust = logical_and(not_equal(rem, zero), not_equal(less(rem, zero), less(y, zero)))
    return where(adjust, rem + y, rem)


mod = remainder


def power(x: ArrayLike, y: ArrayLike) -> Value:
    if isinstance(y, int) and not isinstance(y, bool) and 0 <= y <= 4:
        x = asarray(x)
        result = ones_like(x) if y == 0 else x
        for _ in range(y - 1):
            result = multiply(result, x)
        return result
    return _elementwise("power", x, y)


def arctan2(y: ArrayLike, x: ArrayLike) -> Value:
    return _elementwise("atan2", y, x, dtype=_float_args(y, x))


def _compare(direction: str):
    def fn(x, y):
        x, y = _promote(x, y)
        return lax.compare(x, y, direction)
    return fn


equal, not_equal = _compare("EQ"), _compare("NE")
less, less_equal = _compare("LT"), _compare("LE")
greater, greater_equal = _compare("GT"), _compare("GE")


def _unary(opcode: str, floating: bool = True):
    def fn(x):
        x = asarray(x)
        weak = x.weak_type
        if floating and not (x.aval.dtype.is_float or x.aval.dtype.is_complex):
            x = lax.convert(x, to_inexact(x.aval.dtype))
        return bind(opcode, x, weak_type=weak)
    fn.__name__ = opcode.replace("-", "_")
    return fn


exp = _unary("exponential")
expm1 = _unary("exponential-minus-one")
log = _unary("log")
log1p = _unary("log-plus-one")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
cbrt = _unary("cbrt")
tanh = _unary("tanh")
sin = _unary("sine")
cos = _unary("cosine")
tan = _unary("tan")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round-nearest-even")  # noqa: A001
erf = _unary("erf")
negative = _unary("negate", floating=False)
sign = _unary("sign", floating=False)
abs = absolute = _unary("abs", floating=False)  # noqa: A001
invert = bitwise_not = logical_not = _unary("not", floating=False)
isfinite = _unary("is-finite")


def sigmoid(x: ArrayLike) -> Value:
    return _unary("logistic")(x)


def square(x: ArrayLike) -> Value:
    return multiply(x, x)


def reciprocal(x: ArrayLike) -> Value:
    return true_divide(1.0, x)


def log2(x: ArrayLike) -> Value:
    return log(x) / float(np.log(2.0))  # a Python float is weak: f32 stays f32


def exp2(x: ArrayLike) -> Value:
    return exp(multiply(x, float(np.log(2.0))))


def where(condition: ArrayLike, x: ArrayLike = None, y: ArrayLike = None) -> Value:
    """`condition ? x : y` elementwise, broadcasting all three (``xla_spmd.numpy.where`` also
    takes the one-argument form, `nonzero`)."""
    if x is None or y is None:
        raise XlaSpmdError("where: give both x and y, or neither (for nonzero)")
    condition = astype(condition, PRED)
    x, y = _promote(x, y)
    shape = broadcast_shapes(condition.shape, x.shape)
    return lax.select(broadcast_to(condition, shape), broadcast_to(x, shape),
                      broadcast_to(y, shape))


def clip(x: ArrayLike, a_min: ArrayLike = None, a_max: ArrayLike = None) -> Value:
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


# ---------------------------------------------------------------------------------------------
# Contractions


@takes_out_sharding
def matmul(a: ArrayLike, b: ArrayLike, preferred_element_type: DTypeLike = None) -> Value:
    """numpy matmul: 1-D operands are promoted to matrices; batch dims broadcast. With
    `preferred_element_type` the product accumulates and returns in that type (as JAX's)."""
    a, b = _promote_dtype(a, b)
    dot_general = functools.partial(lax.dot_general,
                                    preferred_element_type=preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        raise XlaSpmdError("matmul operands must be at least 1-D (use * for scalars)")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = lax.reshape(a, (1,) + a.shape)
    if squeeze_b:
        b = lax.reshape(b, b.shape + (1,))
    if b.ndim == 2:  # (..., n, k) @ (k, m): one dot with no batch dims
        out = dot_general(a, b, (((a.ndim - 1,), (0,)), ((), ())))
    else:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = broadcast_to(a, batch + a.shape[-2:])
        b = broadcast_to(b, batch + b.shape[-2:])
        nb = len(batch)
        out = dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))))
    if squeeze_a:
        out = lax.reshape(out, out.shape[:-2] + out.shape[-1:])
    if squeeze_b:
        out = lax.reshape(out, out.shape[:-1])
    return out


def _promote_dtype(*xs):
    dtype = result_type(*xs)
    return [_to(x, dtype) for x in xs]


@takes_out_sharding
def dot(a: ArrayLike, b: ArrayLike, preferred_element_type: DTypeLike = None) -> Value:
    a, b = _promote_dtype(a, b)
    if a.ndim == 0 or b.ndim == 0:
        out = multiply(a, b)
        return out if preferred_element_type is None else astype(out, preferred_element_type)
    if b.ndim <= 2:
        return matmul(a, b, preferred_element_type=preferred_element_type)
    out = tensordot(a, b, ((a.ndim - 1,), (b.ndim - 2,)))
    return out if preferred_element_type is None else astype(out, preferred_element_type)


def _numpy_dtype(dtype) -> np.dtype:
    """The numpy dtype of a type (numpy, scalar type, DType) or of a value."""
    if isinstance(dtype, DType):
        return dtype.array_dtype
    own = getattr(dtype, "dtype", None)
    return own if isinstance(own, np.dtype) else np.dtype(dtype)


def finfo(dtype: DTypeLike) -> np.finfo:
    """Machine limits of a float type (or of a value's type), bfloat16 and f8 included."""
    return ml_dtypes.finfo(_numpy_dtype(dtype))


def iinfo(dtype: DTypeLike) -> ml_dtypes.iinfo:
    """Machine limits of an integer type (or of a value's type)."""
    return ml_dtypes.iinfo(_numpy_dtype(dtype))


def tensordot(a: ArrayLike, b: ArrayLike, axes: int | Sequence = 2) -> Value:
    a, b = _promote_dtype(a, b)
    if isinstance(axes, int):
        axes = (tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes)))
    la, lb = axes
    la = (la,) if isinstance(la, int) else tuple(la)
    lb = (lb,) if isinstance(lb, int) else tuple(lb)
    return lax.dot_general(a, b, ((tuple(i % a.ndim for i in la),
                                   tuple(i % b.ndim for i in lb)), ((), ())))


# ---------------------------------------------------------------------------------------------
# Creation


def _default_dtype(dtype, *values) -> DType:
    if dtype is not None:
        return as_dtype(dtype)
    if builtins.any(isinstance(v, (float, np.floating)) for v in values):
        return default_float()
    return default_int()


def zeros(shape: Sequence[int], dtype: DTypeLike = None) -> Value:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return lax.full(shape, 0, as_dtype(dtype or default_float()))


def ones(shape: Sequence[int], dtype: DTypeLike = None) -> Value:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return lax.full(shape, 1, as_dtype(dtype or default_float()))


def full(shape: Sequence[int], fill_value: ArrayLike, dtype: DTypeLike = None) -> Value:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if isinstance(fill_value, Value):
        return broadcast_to(fill_value if dtype is None else astype(fill_value, dtype), shape)
    return lax.full(shape, fill_value, dtype_of(fill_value) if dtype is None
                    else as_dtype(dtype))


def zeros_like(x: ArrayLike, dtype: DTypeLike = None) -> Value:
    return lax.full(shape_of(x), 0, as_dtype(dtype) if dtype else dtype_of(x))


def ones_like(x: ArrayLike, dtype: DTypeLike = None) -> Value:
    return lax.full(shape_of(x), 1, as_dtype(dtype) if dtype else dtype_of(x))


def full_like(x: ArrayLike, fill_value: ArrayLike, dtype: DTypeLike = None) -> Value:
    return lax.full(shape_of(x), fill_value, as_dtype(dtype) if dtype else dtype_of(x))


def arange(start: float, stop: float | None = None, step: float = 1, dtype: DTypeLike = None
           ) -> Value:
    if stop is None:
        start, stop = 0, start
    dtype = _default_dtype(dtype, start, stop, step)
    n = builtins.max(0, int(np.ceil((stop - start) / step)))
    out = lax.iota(dtype, (n,), 0)
    if step != 1:
        out = out * lax.full((n,), step, dtype)
    if start != 0:
        out = out + lax.full((n,), start, dtype)
    return out


def linspace(start: float, stop: float, num: int = 50, dtype: DTypeLike = None) -> Value:
    dtype = as_dtype(dtype or default_float())
    step = (stop - start) / builtins.max(num - 1, 1)
    return lax.iota(dtype, (num,), 0) * lax.full((num,), step, dtype) + \
        lax.full((num,), start, dtype)


def eye(n: int, m: int | None = None, k: int = 0, dtype: DTypeLike = None) -> Value:
    m = n if m is None else m
    rows = lax.iota(S32, (n, m), 0)
    cols = lax.iota(S32, (n, m), 1)
    mask = lax.compare(cols - rows, lax.full((n, m), k, S32), "EQ")
    return astype(mask, dtype or default_float())


def identity(n: int, dtype: DTypeLike = None) -> Value:
    return eye(n, dtype=dtype)


def tri_mask(n: int, m: int, k: int, lower: bool) -> Value:
    rows = lax.iota(S32, (n, m), 0)
    cols = lax.iota(S32, (n, m), 1)
    diff = lax.sub(cols, rows)
    return lax.compare(diff, lax.full((n, m), k, S32), "LE" if lower else "GE")


def tril(x: ArrayLike, k: int = 0) -> Value:
    x = asarray(x)
    mask = broadcast_to(tri_mask(x.shape[-2], x.shape[-1], k, True), x.shape)
    return lax.select(mask, x, lax.zeros_like(x))


def triu(x: ArrayLike, k: int = 0) -> Value:
    x = asarray(x)
    mask = broadcast_to(tri_mask(x.shape[-2], x.shape[-1], k, False), x.shape)
    return lax.select(mask, x, lax.zeros_like(x))


def tri(n: int, m: int | None = None, k: int = 0, dtype: DTypeLike = None) -> Value:
    return astype(tri_mask(n, n if m is None else m, k, True), dtype or default_float())


# The public names of the core (xla_spmd.numpy re-exports them).
__all__ = [name for name in dir() if not name.startswith("_") and name not in (
    "annotations", "builtins", "functools", "ml_dtypes", "np", "XlaSpmdError", "PRED", "S32",
    "DType", "canonical_array", "default_float", "default_int", "result_type_of", "to_inexact",
    "ScalarType")]
