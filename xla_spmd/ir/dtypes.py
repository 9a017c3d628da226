"""HLO element types and their numpy counterparts.

Each `DType` is a singleton, looked up by its HLO spelling:

>>> DType.named("bf16").numpy
dtype(bfloat16)
>>> F32.bits, F32.is_float, S32.is_signed
(32, True, True)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum

import ml_dtypes
import numpy as np

import xla_spmd.config as config  # a leaf every layer may read
from xla_spmd.errors import XlaSpmdError


class Kind(Enum):
    """The arithmetic family of an element type."""

    PRED = "pred"
    SIGNED = "signed"
    UNSIGNED = "unsigned"
    FLOAT = "float"
    COMPLEX = "complex"
    TOKEN = "token"


@dataclass(frozen=True, slots=True, eq=False)
class DType:
    """An HLO element type: its HLO name, its kind, its width and its numpy dtype."""

    name: str
    kind: Kind
    bits: int
    numpy: np.dtype | None
    mlir: str

    _by_name = {}  # filled below; class attribute, not a field (no annotation)
    _by_numpy = {}

    @staticmethod
    def named(name: str) -> DType:
        try:
            return DType._by_name[name]
        except KeyError:
            raise XlaSpmdError(f"unknown element type {name!r}; expected one of "
                               f"{', '.join(DType._by_name)}") from None

    @staticmethod
    def from_numpy(dtype) -> DType:
        dtype = np.dtype(dtype)
        try:
            return DType._by_numpy[dtype]
        except KeyError:
            raise XlaSpmdError(f"numpy dtype {dtype} has no HLO element type") from None

    @property
    def array_dtype(self) -> np.dtype:
        """The numpy dtype of an array of this type (`numpy`, which is None only for token:
        asking for token's is an error naming it)."""
        if self.numpy is None:
            raise XlaSpmdError(f"element type {self.name} has no numpy dtype")
        return self.numpy

    @property
    def is_float(self) -> bool:
        return self.kind is Kind.FLOAT

    @property
    def is_complex(self) -> bool:
        return self.kind is Kind.COMPLEX

    @property
    def is_integer(self) -> bool:
        return self.kind in (Kind.SIGNED, Kind.UNSIGNED)

    @property
    def is_signed(self) -> bool:
        return self.kind in (Kind.SIGNED, Kind.FLOAT, Kind.COMPLEX)

    @property
    def is_pred(self) -> bool:
        return self.kind is Kind.PRED

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def real_type(self) -> DType:
        """The element type of `real`/`imag`/`abs` of this type (itself unless complex)."""
        return {"c64": F32, "c128": F64}.get(self.name, self)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __reduce__(self):  # keep singletons singletons when copied
        return (DType.named, (self.name,))


def _define(name: str, kind: Kind, bits: int, numpy_dtype, mlir: str) -> DType:
    dtype = DType(name, kind, bits, None if numpy_dtype is None else np.dtype(numpy_dtype), mlir)
    DType._by_name[name] = dtype
    if dtype.numpy is not None:
        DType._by_numpy.setdefault(dtype.numpy, dtype)
    return dtype


PRED = _define("pred", Kind.PRED, 8, np.bool_, "i1")
S2 = _define("s2", Kind.SIGNED, 2, ml_dtypes.int2, "i2")
S4 = _define("s4", Kind.SIGNED, 4, ml_dtypes.int4, "i4")
S8 = _define("s8", Kind.SIGNED, 8, np.int8, "i8")
S16 = _define("s16", Kind.SIGNED, 16, np.int16, "i16")
S32 = _define("s32", Kind.SIGNED, 32, np.int32, "i32")
S64 = _define("s64", Kind.SIGNED, 64, np.int64, "i64")
U2 = _define("u2", Kind.UNSIGNED, 2, ml_dtypes.uint2, "ui2")
U4 = _define("u4", Kind.UNSIGNED, 4, ml_dtypes.uint4, "ui4")
U8 = _define("u8", Kind.UNSIGNED, 8, np.uint8, "ui8")
U16 = _define("u16", Kind.UNSIGNED, 16, np.uint16, "ui16")
U32 = _define("u32", Kind.UNSIGNED, 32, np.uint32, "ui32")
U64 = _define("u64", Kind.UNSIGNED, 64, np.uint64, "ui64")
F16 = _define("f16", Kind.FLOAT, 16, np.float16, "f16")
BF16 = _define("bf16", Kind.FLOAT, 16, ml_dtypes.bfloat16, "bf16")
F32 = _define("f32", Kind.FLOAT, 32, np.float32, "f32")
F64 = _define("f64", Kind.FLOAT, 64, np.float64, "f64")
C64 = _define("c64", Kind.COMPLEX, 64, np.complex64, "complex<f32>")
C128 = _define("c128", Kind.COMPLEX, 128, np.complex128, "complex<f64>")
F8E4M3FN = _define("f8e4m3fn", Kind.FLOAT, 8, ml_dtypes.float8_e4m3fn, "f8E4M3FN")
F8E5M2 = _define("f8e5m2", Kind.FLOAT, 8, ml_dtypes.float8_e5m2, "f8E5M2")
F8E4M3FNUZ = _define("f8e4m3fnuz", Kind.FLOAT, 8, ml_dtypes.float8_e4m3fnuz, "f8E4M3FNUZ")
F8E5M2FNUZ = _define("f8e5m2fnuz", Kind.FLOAT, 8, ml_dtypes.float8_e5m2fnuz, "f8E5M2FNUZ")
F8E4M3B11FNUZ = _define("f8e4m3b11fnuz", Kind.FLOAT, 8, ml_dtypes.float8_e4m3b11fnuz,
                        "f8E4M3B11FNUZ")
F8E3M4 = _define("f8e3m4", Kind.FLOAT, 8, ml_dtypes.float8_e3m4, "f8E3M4")
F8E4M3 = _define("f8e4m3", Kind.FLOAT, 8, ml_dtypes.float8_e4m3, "f8E4M3")
F8E8M0FNU = _define("f8e8m0fnu", Kind.FLOAT, 8, ml_dtypes.float8_e8m0fnu, "f8E8M0FNU")
F6E2M3FN = _define("f6e2m3fn", Kind.FLOAT, 6, ml_dtypes.float6_e2m3fn, "f6E2M3FN")
F6E3M2FN = _define("f6e3m2fn", Kind.FLOAT, 6, ml_dtypes.float6_e3m2fn, "f6E3M2FN")
F4E2M1FN = _define("f4e2m1fn", Kind.FLOAT, 4, ml_dtypes.float4_e2m1fn, "f4E2M1FN")
TOKEN = _define("token", Kind.TOKEN, 0, None, "!stablehlo.token")

ALL_DTYPES: tuple[DType, ...] = tuple(DType._by_name.values())


# ---------------------------------------------------------------------------------------------
# Canonical types of values from outside, as JAX's: 64-bit types only with x64
# (``xs.config.enable_x64``). The frontend's promotion rules (xla_spmd.frontend.dtypes) and
# the runtime's device_put both use these.

_NARROW = {F64: F32, S64: S32, U64: U32, C128: C64}


def x64_enabled() -> bool:
    """Whether 64-bit types are on (``xs.config.enable_x64``)."""
    return bool(config.enable_x64)


def canonicalize(dtype: DType) -> DType:
    """`dtype` as values from outside get it: narrowed to 32 bits unless x64 is on."""
    return dtype if x64_enabled() else _NARROW.get(dtype, dtype)


def default_int() -> DType:
    return S64 if x64_enabled() else S32


def default_float() -> DType:
    return F64 if x64_enabled() else F32


def default_complex() -> DType:
    return C128 if x64_enabled() else C64


def python_scalar_dtype(value) -> DType:
    """The type of a Python scalar (bool is pred, strongly typed; the others weak)."""
    if isinstance(value, bool):
        return PRED
    if isinstance(value, int):
        return default_int()
    if isinstance(value, float):
        return default_float()
    if isinstance(value, complex):
        return default_complex()
    raise TypeError(f"not a Python scalar: {value!r}")


def canonical_array(value) -> np.ndarray:
    """A value from outside (numpy array or scalar, Python scalar, list) as a numpy array of
    its canonical type. Integers too large for the default int raise OverflowError, as in
    JAX."""
    if type(value) in (bool, int, float, complex):
        dtype = python_scalar_dtype(value).numpy
        if isinstance(value, int) and not isinstance(value, bool):
            info = np.iinfo(dtype)
            if not info.min <= value <= info.max:
                raise OverflowError(f"Python int {value} is too large for {dtype} (the "
                                    "default int); give a dtype, or enable x64")
        return np.asarray(value, dtype)
    array = np.asarray(value)
    if array.dtype.kind in "OSU":
        raise TypeError(f"{array.dtype} values are not arrays of numbers: {value!r:.80}")
    dtype = DType.from_numpy(array.dtype)
    target = canonicalize(dtype)
    return array if target is dtype else array.astype(target.numpy)


@functools.cache
def reduction_dtype(dtype: np.dtype) -> np.dtype:
    """The numpy dtype a cross-device reduction (all-reduce, reduce-scatter) folds values of
    ``dtype`` in: float32 for ml_dtypes' narrow floats (bfloat16, the float8s), rounded once at
    the end, as XLA:CPU promotes a bf16 all-reduce to f32 (AllReducePromotion); ``dtype``
    itself for every other type. The communicators, the stacked CPU launch and the reference
    evaluator all fold by it, so their results agree bit for bit.

    >>> reduction_dtype(np.dtype(ml_dtypes.bfloat16)), reduction_dtype(np.dtype(np.float16))
    (dtype('float32'), dtype('float16'))
    """
    if dtype.kind == "V" and dtype.type.__module__.startswith("ml_dtypes"):
        try:
            ml_dtypes.finfo(dtype)
        except (TypeError, ValueError):
            return dtype
        return np.dtype(np.float32)
    return dtype
