"""Elementwise math of `xla_spmd.numpy` composed from HLO ops (inverse trigonometric and
hyperbolic functions, log10, isnan, isinf) and the tolerance comparisons isclose/allclose.

The compositions are the numerically careful ones XLA's chlo decompositions use (log1p and
expm1 near zero), so float32 stays accurate and every VJP comes from the parts.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> round(float(xnp.arcsin(np.float32(0.5))), 4)
0.5236
"""

from __future__ import annotations

import math

import numpy as np

from xla_spmd.frontend import lax, numpy_reductions
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.dtypes import to_inexact
from xla_spmd.frontend.tracing import ArrayLike, Value
from xla_spmd.ir import U16, U32, U64


def _floating(x):
    x = xnp.asarray(x)
    if not (x.aval.dtype.is_float or x.aval.dtype.is_complex):
        x = xnp.astype(x, to_inexact(x.aval.dtype))
    return x


def arctan(x: ArrayLike) -> Value:
    x = _floating(x)
    return xnp.arctan2(x, xnp.ones_like(x))


def arcsin(x: ArrayLike) -> Value:
    """2 atan2(x, 1 + sqrt(1 - x^2)), as XLA."""
    x = _floating(x)
    return 2.0 * xnp.arctan2(x, 1.0 + xnp.sqrt((1.0 - x) * (1.0 + x)))


def arccos(x: ArrayLike) -> Value:
    x = _floating(x)
    return xnp.arctan2(xnp.sqrt((1.0 - x) * (1.0 + x)), x)


def sinh(x: ArrayLike) -> Value:
    x = _floating(x)
    return 0.5 * (xnp.expm1(x) - xnp.expm1(-x))


def cosh(x: ArrayLike) -> Value:
    x = _floating(x)
    return 0.5 * (xnp.exp(x) + xnp.exp(-x))


def arctanh(x: ArrayLike) -> Value:
    x = _floating(x)
    return 0.5 * (xnp.log1p(x) - xnp.log1p(-x))


def arcsinh(x: ArrayLike) -> Value:
    """Odd extension of log1p(a + a^2 / (1 + sqrt(1 + a^2))) for a = |x| >= 0 (accurate near
    zero; `where` rather than sign() so the derivative at 0 is 1)."""
    x = _floating(x)

    def positive(a):
        return xnp.log1p(a + a * a / (1.0 + xnp.sqrt(1.0 + a * a)))
    return xnp.where(x < 0, -positive(-x), positive(x))


def arccosh(x: ArrayLike) -> Value:
    x = _floating(x)
    return xnp.log(x + xnp.sqrt((x - 1.0) * (x + 1.0)))


def log10(x: ArrayLike) -> Value:
    return xnp.log(x) / float(math.log(10.0))


def isnan(x: ArrayLike) -> Value:
    x = xnp.asarray(x)
    if not (x.aval.dtype.is_float or x.aval.dtype.is_complex):
        return lax.full(x.shape, False, xnp.bool_)
    return xnp.not_equal(x, x)


def isinf(x: ArrayLike) -> Value:
    x = xnp.asarray(x)
    if not (x.aval.dtype.is_float or x.aval.dtype.is_complex):
        return lax.full(x.shape, False, xnp.bool_)
    return xnp.equal(xnp.abs(x), np.inf)


def isclose(a: ArrayLike, b: ArrayLike, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Value:
    """|a - b| <= atol + rtol |b| elementwise, infinities equal only to themselves (numpy)."""
    a, b = xnp._promote(a, b)
    if not (a.aval.dtype.is_float or a.aval.dtype.is_complex):
        a, b = xnp.astype(a, xnp.float32), xnp.astype(b, xnp.float32)
    finite = xnp.logical_and(xnp.isfinite(a), xnp.isfinite(b))
    close = xnp.less_equal(xnp.abs(a - b), atol + rtol * xnp.abs(b))
    out = xnp.logical_or(xnp.logical_and(finite, close), xnp.equal(a, b))
    if equal_nan:
        out = xnp.logical_or(out, xnp.logical_and(isnan(a), isnan(b)))
    return out


def allclose(a: ArrayLike, b: ArrayLike, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Value:
    """Whether every element of `a` is close to `b` (a boolean array of shape ())."""
    return numpy_reductions.all(isclose(a, b, rtol, atol, equal_nan))


def erfinv(x: ArrayLike) -> Value:
    """The inverse error function, as XLA computes it (`lax.erf_inv`), in `x`'s type (an
    integer `x` as the default float)."""
    return lax.erf_inv(_floating(x))


def nextafter(x: ArrayLike, y: ArrayLike) -> Value:
    """The next representable float after `x` toward `y`, elementwise (as ``np.nextafter``):
    one step of the bit pattern, the smallest subnormal from zero, NaN if either is NaN."""
    x, y = xnp._promote(_floating(x), y)
    dtype, shape = x.aval.dtype, x.shape
    uint = {16: U16, 32: U32, 64: U64}[dtype.bits]
    bits = lax.bitcast_convert(x, uint)
    one = lax.full(shape, 1, uint)
    toward_magnitude = xnp.equal(xnp.greater(y, x), xnp.greater(x, lax.full(shape, 0, dtype)))
    stepped = lax.select(toward_magnitude, lax.add(bits, one), lax.sub(bits, one))
    sign = lax.full(shape, 1 << (dtype.bits - 1), uint)
    from_zero = xnp.bitwise_or(xnp.bitwise_and(lax.bitcast_convert(y, uint), sign), one)
    is_zero = xnp.equal(x, lax.full(shape, 0, dtype))
    out = lax.bitcast_convert(lax.select(is_zero, from_zero, stepped), dtype)
    out = lax.select(xnp.equal(x, y), y, out)
    either_nan = xnp.logical_or(isnan(x), isnan(y))
    return lax.select(either_nan, xnp.add(x, y), out)


def nan_to_num(x: ArrayLike, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Value:
    """`x` with NaN, +inf and -inf replaced (by 0 and the type's largest and lowest finite
    values unless given); integers unchanged."""
    x = xnp.asarray(x)
    dtype = x.aval.dtype
    if not dtype.is_float:
        return x
    info = xnp.finfo(dtype.numpy)
    big = float(info.max) if posinf is None else posinf
    small = float(info.min) if neginf is None else neginf
    x = xnp.where(isnan(x), nan, x)
    x = xnp.where(xnp.logical_and(isinf(x), x > 0), big, x)
    return xnp.where(xnp.logical_and(isinf(x), x < 0), small, x)
