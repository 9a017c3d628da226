"""`xla_spmd.lax.linalg`: XLA's Cholesky factorisation and triangular solve, as
``jax.lax.linalg`` (batched over the leading dims).

Under Explicit mesh axes the matrix dims must be unsharded (JAX's rules and errors, see
`xla_spmd.frontend.sharding_types`); batch dims keep their sharding.

>>> import numpy as np
>>> a = np.array([[4.0, 2.0], [2.0, 5.0]], np.float32)
>>> l = cholesky(a)
>>> np.round(np.asarray(l), 4).tolist()
[[2.0, 0.0], [1.0, 2.0]]
>>> np.round(np.asarray(triangular_solve(l, np.array([[2.0], [1.0]], np.float32),
...                                      left_side=True, lower=True)), 4).tolist()
[[1.0], [0.0]]
"""

from __future__ import annotations

from xla_spmd.frontend import lax
from xla_spmd.frontend.tracing import ArrayLike, Value, aval_of, bind


def _inexact(x: ArrayLike, what: str):
    dtype = aval_of(x).dtype
    if not (dtype.is_float or dtype.is_complex):
        raise TypeError(f"{what}: operands must be floating-point or complex, got {dtype}")
    dims = aval_of(x).dims
    if len(dims) < 2 or dims[-1] != dims[-2] and what == "cholesky":
        raise ValueError(f"The input to {what} must be a square matrix. Got shape {dims}.")
    return x


def _conj(x: ArrayLike) -> Value:
    if not aval_of(x).dtype.is_complex:
        return x  # type: ignore[return-value]
    return bind("complex", bind("real", x), bind("negate", bind("imag", x)))


def conj_transpose(x: ArrayLike) -> Value:
    """The conjugate transpose of each matrix in `x` (its last two dims swapped)."""
    rank = len(aval_of(x).dims)
    return _conj(lax.transpose(x, (*range(rank - 2), rank - 1, rank - 2)))


def cholesky(x: ArrayLike, *, symmetrize_input: bool = True) -> Value:
    """The lower Cholesky factor ``L`` of each Hermitian positive-definite matrix in `x`
    (``x = L Lᴴ``; NaNs where `x` is not positive definite), as
    ``jax.lax.linalg.cholesky``: with `symmetrize_input` ``(x + xᴴ) / 2`` is factored."""
    x = _inexact(x, "cholesky")
    if symmetrize_input:
        half = lax.full(aval_of(x).dims, 0.5, aval_of(x).dtype)
        x = lax.mul(lax.add(x, conj_transpose(x)), half)
    return bind("cholesky", x, lower=True)


def triangular_solve(a: ArrayLike, b: ArrayLike, *, left_side: bool = False,
                     lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False) -> Value:
    """`x` with ``op(a) @ x = b`` (`left_side`) or ``x @ op(a) = b``, `a` triangular (its
    `lower` or upper triangle read, its diagonal taken as ones with `unit_diagonal`) and
    ``op`` transposing and/or conjugating it, as ``jax.lax.linalg.triangular_solve``."""
    _inexact(a, "triangular_solve")
    _inexact(b, "triangular_solve")
    if conjugate_a and not transpose_a and aval_of(a).dtype.is_complex:
        a = _conj(a)
        conjugate_a = False
    mode = ("ADJOINT" if conjugate_a and aval_of(a).dtype.is_complex else "TRANSPOSE") \
        if transpose_a else "NO_TRANSPOSE"
    return bind("triangular-solve", a, b, left_side=left_side, lower=lower,
                unit_diagonal=unit_diagonal, transpose_a=mode)


__all__ = ["cholesky", "triangular_solve"]
