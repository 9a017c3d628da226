"""`xla_spmd.numpy.linalg`: norms (as ``jax.numpy.linalg.norm``) and `cholesky`.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> float(xnp.linalg.norm(np.array([3.0, 4.0], np.float32)))
5.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax_linalg, numpy_reductions, numpy_shape
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.tracing import ArrayLike, Value


def norm(x: ArrayLike, ord: int | float | str | None = None,
         axis: int | Sequence[int] | None = None, keepdims: bool = False
         ) -> Value:  # noqa: A002 (numpy's name)
    """Vector norms (ord None/2, 1, inf, -inf, 0 or any p) over one axis, matrix norms
    (ord None/'fro', 1, -1, inf, -inf) over two; axis None: the whole array's 2-norm when
    ord is None, else a vector (1-D) or matrix (2-D) norm."""
    x = xnp.asarray(x)
    if not (x.aval.dtype.is_float or x.aval.dtype.is_complex):
        x = xnp.astype(x, xnp.float32)
    if axis is None:
        if ord is None:
            return _keep_all(xnp.sqrt(numpy_reductions.sum(_abs2(x))), x.ndim, keepdims)
        if x.ndim not in (1, 2):
            raise XlaSpmdError(f"norm: ord={ord!r} with axis=None needs a 1-D or 2-D array, "
                               f"got rank {x.ndim}; pass axis")
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis or ())  # set above when None
    axes = tuple(a % x.ndim for a in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise XlaSpmdError(f"norm: axis must name one or two dims, got {axis!r}")


def _abs2(x):
    if x.aval.dtype.is_complex:
        magnitude = xnp.abs(x)
        return magnitude * magnitude
    return x * x


def _keep_all(result, ndim: int, keepdims: bool):
    return numpy_shape.reshape(result, (1,) * ndim) if keepdims else result


def _vector_norm(x, ord, axis: int, keepdims: bool):  # noqa: A002
    if ord is None or ord == 2:
        return xnp.sqrt(numpy_reductions.sum(_abs2(x), axis=axis, keepdims=keepdims))
    magnitude = xnp.abs(x)
    if ord == np.inf:
        return numpy_reductions.max(magnitude, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return numpy_reductions.min(magnitude, axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = xnp.astype(xnp.not_equal(x, 0), magnitude.dtype)
        return numpy_reductions.sum(nonzero, axis=axis, keepdims=keepdims)
    if ord == 1:
        return numpy_reductions.sum(magnitude, axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise XlaSpmdError(f"norm: ord={ord!r} is a matrix norm; pass two axes")
    p = float(ord)
    total = numpy_reductions.sum(xnp.power(magnitude, p), axis=axis, keepdims=keepdims)
    return xnp.power(total, 1.0 / p)


def _matrix_norm(x, ord, axes, keepdims: bool):  # noqa: A002
    row, col = axes
    if ord is None or ord == "fro":
        return xnp.sqrt(numpy_reductions.sum(_abs2(x), axis=axes, keepdims=keepdims))
    magnitude = xnp.abs(x)
    if ord in (1, -1, np.inf, -np.inf):
        # 1: max column sum (sum over rows); inf: max row sum (sum over columns)
        summed_axis, kept_axis = (row, col) if ord in (1, -1) else (col, row)
        sums = numpy_reductions.sum(magnitude, axis=summed_axis, keepdims=True)
        pick = numpy_reductions.max if ord in (1, np.inf) else numpy_reductions.min
        out = pick(sums, axis=kept_axis, keepdims=True)
        return out if keepdims else numpy_shape.squeeze(out, axis=axes)
    raise XlaSpmdError(f"norm: matrix ord={ord!r} is not supported (needs an SVD); use "
                       "None/'fro', 1, -1, inf or -inf")


def cholesky(a: ArrayLike, *, upper: bool = False, symmetrize_input: bool = True) -> Value:
    """The Cholesky factor of each Hermitian positive-definite matrix in `a`, lower (``a =
    L Lᴴ``) or `upper` (``a = Uᴴ U``), as ``jax.numpy.linalg.cholesky`` (NaNs where `a` is
    not positive definite).

    >>> np.asarray(cholesky(np.array([[4.0, 2.0], [2.0, 5.0]], np.float32))).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    a = xnp.asarray(a)
    if not (a.aval.dtype.is_float or a.aval.dtype.is_complex):
        a = xnp.astype(a, xnp.float32)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return lax_linalg.conj_transpose(factor) if upper else factor
