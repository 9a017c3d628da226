"""JAX's dtype rules: 64-bit types off by default, weakly typed Python scalars, and the type
promotion lattice.

* **Canonical types.** Unless ``xs.config.update("enable_x64", True)`` (or
  ``XLA_SPMD_ENABLE_X64=1``), every value that enters from outside (numpy arrays and scalars,
  jit arguments, requested dtypes) is narrowed to 32 bits: f64 -> f32, s64 -> s32,
  u64 -> u32, c128 -> c64. Internal code may still build 64-bit values from `DType`s.
* **Weak types.** Python ``int``, ``float`` and ``complex`` (not ``bool``, not numpy scalars)
  are weakly typed: they take the type of the strongly typed values they meet
  (``f16_array * 2.0`` is f16) and otherwise become the default type of their kind
  (s32/f32/c64, or s64/f64/c128 with x64).
* **Promotion** is the least upper bound in a lattice, as JAX's (numpy's ``promote_types``
  differs: there s32 + f16 is f64, here it is f16). Its nodes are the element types and the
  three weak kinds; an edge goes from a type to those just above it::

      pred -> i* -> {u8, s8}        u8 -> {u16, s16}   u16 -> {u32, s32}   u32 -> {u64, s64}
      u64 -> f*    s8 -> s16 -> s32 -> s64 -> f*        f* -> {bf16, f16, c*, small floats}
      {bf16, f16} -> f32 -> {f64, c64}   f64 -> c128   c* -> c64 -> c128

  Without x64, u32 -> {u32, s32} replaces u32 -> {u64, s64} (no 64-bit result from 32-bit
  inputs). The result is weak exactly when the bound is a weak kind. The lattice is checked
  against JAX's own results in tests/frontend/test_dtype_rules.py.

>>> from xla_spmd.ir import F16, S32
>>> result_type_of([(S32, False), (F16, False)])
(f16, False)
>>> result_type_of([(S32, False), (F32, True)])   # s32 array * 2.0: weak f32
(f32, True)
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Iterable

import ml_dtypes
import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir.dtypes import (  # the canonical types live with the element types
    ALL_DTYPES,
    BF16,
    C64,
    C128,
    F16,
    F32,
    F64,
    PRED,
    S4,
    S8,
    S16,
    S32,
    S64,
    U4,
    U8,
    U16,
    U32,
    U64,
    DType,
    Kind,
    canonical_array,
    canonicalize,
    default_complex,
    default_float,
    default_int,
    python_scalar_dtype,
    x64_enabled,
)

# The weak kinds of the lattice (what a Python int, float or complex is before it meets a
# strongly typed value).
WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "int", "float", "complex"
_WEAK_OF_KIND = {Kind.SIGNED: WEAK_INT, Kind.UNSIGNED: WEAK_INT, Kind.FLOAT: WEAK_FLOAT,
                 Kind.COMPLEX: WEAK_COMPLEX}
def default_of(kind: str) -> DType:
    """The type a weak kind becomes on its own (s32/f32/c64; s64/f64/c128 with x64)."""
    return {WEAK_INT: default_int, WEAK_FLOAT: default_float,
            WEAK_COMPLEX: default_complex}[kind]()


class ScalarType:
    """A scalar type of the numpy-like API (``xnp.float32``), as JAX's: a dtype wherever one
    is taken (``np.dtype(xnp.float32)``, ``x.astype(xnp.int8)``; equal to its numpy dtype),
    and callable, giving an array of that type (``xnp.float32(2)``, ``xnp.int32(x)``).

    >>> import numpy as np
    >>> f32 = ScalarType("float32")
    >>> f32 == np.float32, np.dtype(f32), np.asarray(f32(2)).dtype
    (True, dtype('float32'), dtype('float32'))
    """

    __slots__ = ("dtype",)

    def __init__(self, name: str):
        self.dtype = np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)

    # Calling one (``xnp.float32(x)``) converts: array_methods installs __call__.

    def __eq__(self, other) -> bool:
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __repr__(self) -> str:
        return f"xla_spmd.numpy.{self.dtype.name}"

    @property
    def type(self) -> builtins.type:
        return self.dtype.type


# ---------------------------------------------------------------------------------------------
# The promotion lattice


def _edges(x64: bool) -> dict:
    small_floats = [d for d in ALL_DTYPES if d.is_float and d.bits == 8]
    edges = {
        PRED: [WEAK_INT],
        WEAK_INT: [U8, S8, U4, S4],
        U4: [], S4: [],
        U8: [S16, U16], U16: [S32, U32], U32: [S64, U64] if x64 else [S32, U64],
        U64: [WEAK_FLOAT],
        S8: [S16], S16: [S32], S32: [S64], S64: [WEAK_FLOAT],
        WEAK_FLOAT: [*small_floats, BF16, F16, WEAK_COMPLEX],
        **{d: [] for d in small_floats},
        BF16: [F32], F16: [F32], F32: [F64, C64], F64: [C128],
        WEAK_COMPLEX: [C64], C64: [C128], C128: [],
    }
    return edges


@functools.cache
def _upper_bounds(x64: bool) -> dict:
    """Each node's set of upper bounds (itself included): the transitive closure."""
    edges = _edges(x64)
    bounds = {}

    def visit(node):
        if node not in bounds:
            found = {node}
            for above in edges[node]:
                found |= visit(above)
            bounds[node] = frozenset(found)
        return bounds[node]

    for node in edges:
        visit(node)
    return bounds


@functools.lru_cache(maxsize=1024)
def _least_upper_bound(x64: bool, nodes: frozenset):
    bounds = _upper_bounds(x64)
    common = frozenset.intersection(*(bounds[n] for n in nodes))
    # The least common bound is the one every other common bound lies above.
    least = [c for c in common if bounds[c] == common]
    if len(least) != 1:
        names = ", ".join(sorted(str(n) for n in nodes))
        raise XlaSpmdError(f"no common type for {names}")
    return least[0]


def result_type_of(types: Iterable[tuple[DType, bool]]) -> tuple[DType, bool]:
    """The promoted type of values given as ``(dtype, weak)`` pairs, and whether it is weak.

    All weak: the bound of their types, weak (a weak f32 and a weak s32 give a weak f32).
    Otherwise weak values count as their kind and the result is weak only when the bound is
    a weak kind (an s32 array times 2.0 is a weak f32), which then becomes its default type.
    """
    types = list(types)
    x64 = x64_enabled()
    if all(weak for _, weak in types):
        bound = _least_upper_bound(x64, frozenset(d for d, _ in types))
        return (canonicalize(bound), bound is not PRED)
    nodes = frozenset(_WEAK_OF_KIND.get(d.kind, d) if weak else d for d, weak in types)
    only = next(iter(nodes))
    if len(nodes) == 1 and isinstance(only, DType):
        return only, False
    bound = _least_upper_bound(x64, nodes)
    if isinstance(bound, str):
        return default_of(bound), True
    return canonicalize(bound), False


def jax_result_type(types: Iterable[tuple[DType, bool]]) -> DType:
    """As JAX's ``result_type``: the promoted type of ``(dtype, weak)`` pairs, where a weak
    result becomes its kind's default type (a weak s32 and a weak f16 give f32)."""
    dtype, weak = result_type_of(types)
    return default_of(_WEAK_OF_KIND[dtype.kind]) if weak else dtype


def to_inexact(dtype: DType) -> DType:
    """The floating type an integer or boolean computation in floats uses, as JAX's: f32
    for up to 32 bits, f64 for 64 (narrowed without x64); floats stay themselves."""
    if dtype.is_float or dtype.is_complex:
        return dtype
    return canonicalize(F64) if dtype.bits == 64 else F32


__all__ = ["ScalarType", "canonical_array", "canonicalize", "default_complex", "default_float",
           "default_int", "jax_result_type", "python_scalar_dtype", "result_type_of",
           "to_inexact", "x64_enabled"]
