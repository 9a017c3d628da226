"""Numeric helpers shared by the reference rules: compute types, storage casts, HLO convert.

XLA's evaluator computes elementwise ops on f16/bf16/f8 in f32 and rounds once to the storage
type, and lets integers wrap (two's complement). numpy reproduces that when a rule computes in
`compute_dtype(...)` and stores with `to_storage(...)`; integer arithmetic of one dtype already
wraps in numpy (rules run it under ``np.errstate(all="ignore")``).

>>> import numpy as np
>>> from xla_spmd.ir import S8, U8
>>> convert(np.array([300.5, -1e9, np.nan], np.float32), S8)
array([ 127, -128,    0], dtype=int8)
>>> convert(np.array([-1], np.int32), U8)
array([255], dtype=uint8)
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from xla_spmd.ir import DType, Kind

_SUB_BYTE_INTS = {np.dtype(ml_dtypes.int4): (4, True), np.dtype(ml_dtypes.uint4): (4, False)}
for _name, _bits, _signed in (("int2", 2, True), ("uint2", 2, False)):
    if hasattr(ml_dtypes, _name):
        _SUB_BYTE_INTS[np.dtype(getattr(ml_dtypes, _name))] = (_bits, _signed)

_UNSIGNED_OF_WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SIGNED_OF_WIDTH = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _np(dtype) -> np.dtype:
    return dtype.array_dtype if isinstance(dtype, DType) else np.dtype(dtype)


def is_float(np_dtype) -> bool:
    """True for IEEE-like floats, numpy's and ml_dtypes' (bf16, f8, ...)."""
    return DType.from_numpy(np_dtype).kind is Kind.FLOAT


def is_integer(np_dtype) -> bool:
    """True for signed and unsigned integers, sub-byte ones included."""
    return DType.from_numpy(np_dtype).kind in (Kind.SIGNED, Kind.UNSIGNED)


def compute_dtype(np_dtype) -> np.dtype:
    """The dtype an elementwise op computes in: f32 for floats narrower than 32 bits, int64 for
    sub-byte integers, the dtype itself otherwise."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype in _SUB_BYTE_INTS:
        return np.dtype(np.int64)
    if is_float(np_dtype) and np_dtype.itemsize < 4:
        return np.dtype(np.float32)
    return np_dtype


def upcast(array) -> np.ndarray:
    """`array` in its compute dtype (no copy when it already is)."""
    array = np.asarray(array)
    return array.astype(compute_dtype(array.dtype), copy=False)


def to_storage(array, dtype) -> np.ndarray:
    """Round or wrap a computed array to the storage type `dtype` (a DType or numpy dtype);
    always returns an ndarray (never a numpy scalar)."""
    target = _np(dtype)
    array = np.asarray(array)
    if array.dtype == target:
        return array
    if target in _SUB_BYTE_INTS and array.dtype.kind in "iub":
        bits, signed = _SUB_BYTE_INTS[target]
        wrapped = array.astype(np.int64) & ((1 << bits) - 1)
        if signed:
            wrapped = np.where(wrapped >= 1 << (bits - 1), wrapped - (1 << bits), wrapped)
        return wrapped.astype(target)
    with np.errstate(all="ignore"):
        return array.astype(target)


def unsigned_view(array) -> np.ndarray:
    """The bit pattern of an integer (or bool) array as the unsigned type of its width."""
    array = np.asarray(array)
    return array.view(_UNSIGNED_OF_WIDTH[array.dtype.itemsize])


def signed_view(array) -> np.ndarray:
    """The bit pattern of an integer (or bool) array as the signed type of its width."""
    array = np.asarray(array)
    return array.view(_SIGNED_OF_WIDTH[array.dtype.itemsize])


def all_ones(np_dtype) -> np.ndarray:
    """The value whose bits are all set: -1 for signed types, the maximum for unsigned."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind == "u":
        return np.array(np.iinfo(np_dtype).max, np_dtype)
    return np.array(-1, np_dtype)


def _float_to_int(array: np.ndarray, target: np.dtype) -> np.ndarray:
    """Truncate toward zero, saturating at the target's range; NaN gives 0 (op_semantics §8)."""
    if target in _SUB_BYTE_INTS:
        bits, signed = _SUB_BYTE_INTS[target]
    else:
        bits, signed = target.itemsize * 8, target.kind == "i"
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    x = np.trunc(array.astype(np.float64))
    too_high = x >= float(high + 1)   # a power of two, exact in f64
    too_low = x <= float(low)
    bad = too_high | too_low | np.isnan(x)
    storage = np.int64 if signed else np.uint64
    with np.errstate(all="ignore"):
        safe = np.where(bad, 0, x).astype(storage)
    result = np.where(too_high, np.array(high, storage), np.where(too_low, np.array(low, storage),
                                                                  safe))
    return to_storage(result, target)


def convert(array, dtype) -> np.ndarray:
    """HLO `convert` of `array` to `dtype` (a DType or numpy dtype), per op_semantics §8:
    float→int truncates and saturates (NaN→0), int→int wraps by the source signedness,
    complex→real keeps the real part, anything→pred is ``x != 0``."""
    target = _np(dtype)
    array = np.asarray(array)
    source = array.dtype
    if source == target:
        return array.copy()
    if target == np.bool_:
        if source.kind == "c":
            array = np.real(array)
        return np.asarray(upcast(array) != 0)
    if source.kind == "c" and target.kind != "c":
        return convert(np.real(array), target)
    if source == np.bool_:
        return to_storage(array.astype(np.int8), target)
    if is_float(source) and is_integer(target):
        return _float_to_int(array, target)
    if is_integer(source) and is_integer(target):
        if source in _SUB_BYTE_INTS:
            array = array.astype(np.int64)
        return to_storage(array, target)
    if is_float(target) and target.itemsize < 4 and is_integer(source):
        # XLA converts integers to narrow floats through f32 (as Eigen/ml_dtypes do).
        array = array.astype(np.float32)
    if source in _SUB_BYTE_INTS:
        array = array.astype(np.int64)
    if target.kind == "c" and is_float(source) and source.itemsize < 4:
        array = array.astype(np.float32)
    return to_storage(array, target)


def as_int64_indices(array, xp=np) -> np.ndarray:
    """Index values as int64, saturating huge unsigned values (so clamping still works);
    ``xp`` is the array module (numpy, or CuPy on the GPU backend)."""
    array = xp.asarray(array)
    if array.dtype.kind == "u" and array.dtype.itemsize == 8:
        array = xp.minimum(array, np.uint64(np.iinfo(np.int64).max))
    if array.dtype in _SUB_BYTE_INTS:
        return array.astype(np.int64)
    return array.astype(np.int64)


def flush_denormals(array) -> np.ndarray:
    """Replace subnormal floats by zero of the same sign (what XLA's CPU backend does, as it
    runs with FTZ/DAZ set; the reference rules do *not* call this: the project rule is IEEE
    with subnormals, and only ``ew_nonfinite`` in tests/data/jax shows the difference).

    >>> flush_denormals(np.array([1e-45, -1e-45, 1.0], np.float32))
    array([ 0., -0.,  1.], dtype=float32)
    """
    array = np.asarray(array)
    if not (is_float(array.dtype) or array.dtype.kind == "c"):
        return array
    if array.dtype.kind == "c":
        return flush_denormals(np.real(array)) + 1j * flush_denormals(np.imag(array))
    smallest_normal = ml_dtypes.finfo(array.dtype).smallest_normal
    return np.where(np.abs(array) < smallest_normal, np.copysign(0, array), array).astype(
        array.dtype)
