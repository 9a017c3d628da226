"""Render elementwise HLO ops as CUDA C expressions: the scalar half of the GPU renderer.

Invariants (the same semantics as the reference evaluator and the CPU renderer):

* Values are computed in the compute type: ``float`` for f16/bf16/f32, ``double`` for f64,
  ``bool`` for pred, the integer's own C type otherwise. Every f16/bf16 result is rounded to
  its storage type at once (``round_to``), as XLA's evaluator and the reference do.
* f16 and bf16 are stored as ``unsigned short`` bits and converted by hand (PTX ``cvt`` for
  f16, round-to-nearest-even on the bits for bf16): no ``cuda_fp16.h``, so the source needs no
  header and compiles with NVRTC alone.
* No fused multiply-add (the compiler gets ``--fmad=false``), IEEE division and square root:
  the basic float ops are correctly rounded, bit-identical to numpy's. Transcendentals use
  CUDA's math library (within a few ulp of numpy's).
* Integer arithmetic wraps: add, subtract, multiply and negate run in the unsigned type of at
  least 32 bits (C's signed overflow is undefined). XLA's edge cases: division by zero gives
  -1 (all ones), ``INT_MIN / -1`` is ``INT_MIN``, remainder by zero gives the dividend, shifts
  by at least the width give 0 (or the sign for arithmetic shifts); float->int converts
  truncate and saturate, NaN -> 0; max/min of floats propagate NaN and order -0 below +0.

Example: ``add`` of two s8 values ``a`` and ``b`` renders as
``((signed char)((unsigned int)(a) + (unsigned int)(b)))``.

This module only writes text; ``compiler.py`` turns it into PTX and kernels.
"""

from __future__ import annotations

import struct

import numpy as np

from xla_spmd.backends.cpu.renderer import (  # the CPU renderer decides what is fusible
    SUPPORTED,
    TRANSCENDENTAL,
    accumulator_dtype,
    supports_instruction,
)
from xla_spmd.ir import DType, Instruction
from xla_spmd.ir.attributes import ComparisonDirection, ComparisonType
from xla_spmd.ir.dtypes import (
    BF16,
    F16,
    F32,
    F64,
    PRED,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
)
from xla_spmd.ir.opdefs import default_comparison_type

__all__ = ["SUPPORTED", "TRANSCENDENTAL", "accumulator_dtype", "supports_instruction",
           "PRELUDE", "storage_type", "compute_type", "constant_text", "elementwise",
           "load_expression", "store_expression", "round_to"]

RENDERER_VERSION = "1"

_STORAGE = {PRED: "unsigned char", S8: "signed char", U8: "unsigned char", S16: "short",
            U16: "unsigned short", S32: "int", U32: "unsigned int", S64: "long long",
            U64: "unsigned long long", F16: "unsigned short", BF16: "unsigned short",
            F32: "float", F64: "double"}
_UNSIGNED = {8: "unsigned char", 16: "unsigned short", 32: "unsigned int",
             64: "unsigned long long"}
_FLOATS = (F16, BF16, F32, F64)

PRELUDE = r"""// xla-spmd GPU kernels: f16/bf16 stored as bits, computed in f32.
__device__ __forceinline__ float xs_f16_to_f32(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short xs_f32_to_f16(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
__device__ __forceinline__ float xs_bf16_to_f32(unsigned short h) {
  return __int_as_float(((unsigned int)h) << 16);
}
__device__ __forceinline__ unsigned short xs_f32_to_bf16(float f) {
  // Round to nearest even on the bits; NaN stays NaN (quiet), as ml_dtypes does.
  unsigned int bits = (unsigned int)__float_as_int(f);
  if (f != f) return (unsigned short)((bits | 0x400000u) >> 16);
  return (unsigned short)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float xs_round_f16(float f) { return xs_f16_to_f32(xs_f32_to_f16(f)); }
__device__ __forceinline__ float xs_round_bf16(float f) {
  return xs_bf16_to_f32(xs_f32_to_bf16(f));
}
template <typename T> __device__ __forceinline__ T xs_fmax(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
template <typename T> __device__ __forceinline__ T xs_fmin(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
template <typename T> __device__ __forceinline__ T xs_fsign(T x) {
  return (x == 0 || x != x) ? x : copysign((T)1, x);
}
template <typename I, typename F> __device__ __forceinline__ I xs_f2i(F x, I low, I high,
                                                                       F low_f, F high_f) {
  // Truncate toward zero, saturate; NaN -> 0. ``high_f`` is high + 1, a power of two.
  if (x != x) return 0;
  if (x <= low_f) return low;
  if (x >= high_f) return high;
  return (I)x;
}
"""


def storage_type(dtype: DType) -> str:
    """The C type an element of ``dtype`` is stored as."""
    return _STORAGE[dtype]


def compute_type(dtype: DType) -> str:
    """The C type a value of ``dtype`` is computed in."""
    if dtype is PRED:
        return "bool"
    if dtype in (F16, BF16, F32):
        return "float"
    return _STORAGE[dtype]


def _math(dtype: DType, name: str) -> str:
    """A CUDA math function for the compute type (``expf`` for float, ``exp`` for double)."""
    return name if compute_type(dtype) == "double" else name + "f"


def _float_literal(value: float, ctype: str) -> str:
    if ctype == "float":
        bits = struct.unpack("<I", struct.pack("<f", np.float32(value)))[0]
        return f"__int_as_float(0x{bits:08x})"
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    return f"__longlong_as_double(0x{bits:016x}LL)"


def constant_text(value, dtype: DType) -> str:
    """A C constant of ``dtype``'s compute type (bit-exact for floats, NaN and inf too)."""
    if dtype is PRED:
        return "true" if bool(value) else "false"
    if dtype in _FLOATS:
        return _float_literal(float(np.asarray(value).astype(np.float64)), compute_type(dtype))
    bits = dtype.bits
    number = int(value) & ((1 << bits) - 1)
    if dtype.is_signed and number >= 1 << (bits - 1):
        number -= 1 << bits
    if bits == 64:
        # -2**63 has no literal: write it as the bits of an unsigned literal.
        return f"(({compute_type(dtype)})0x{number & ((1 << 64) - 1):016x}ULL)"
    return f"(({compute_type(dtype)}){number})"


# ---------------------------------------------------------------------------------------------
# Storage <-> compute


def load_expression(dtype: DType, element: str) -> str:
    """The compute value of a stored element (``element`` is an lvalue such as ``in0[i]``)."""
    if dtype is PRED:
        return f"({element} != 0)"
    if dtype is F16:
        return f"xs_f16_to_f32({element})"
    if dtype is BF16:
        return f"xs_bf16_to_f32({element})"
    return element


def store_expression(dtype: DType, value: str) -> str:
    """The stored form of a compute value."""
    if dtype is PRED:
        return f"(unsigned char)({value})"
    if dtype is F16:
        return f"xs_f32_to_f16({value})"
    if dtype is BF16:
        return f"xs_f32_to_bf16({value})"
    return value


def round_to(dtype: DType, value: str) -> str:
    """Round an f32 compute value to f16/bf16 (the identity for other types)."""
    if dtype is F16:
        return f"xs_round_f16({value})"
    if dtype is BF16:
        return f"xs_round_bf16({value})"
    return value


def _storage_bits(dtype: DType, value: str) -> str:
    """The storage bit pattern of a compute value, as the unsigned type of its width."""
    if dtype is F16:
        return f"xs_f32_to_f16({value})"
    if dtype is BF16:
        return f"xs_f32_to_bf16({value})"
    if dtype is F32:
        return f"(unsigned int)__float_as_int({value})"
    if dtype is F64:
        return f"(unsigned long long)__double_as_longlong({value})"
    return f"({_UNSIGNED[dtype.bits]})({value})"


def _from_bits(dtype: DType, bits: str) -> str:
    if dtype is F16:
        return f"xs_f16_to_f32((unsigned short)({bits}))"
    if dtype is BF16:
        return f"xs_bf16_to_f32((unsigned short)({bits}))"
    if dtype is F32:
        return f"__int_as_float((int)({bits}))"
    if dtype is F64:
        return f"__longlong_as_double((long long)({bits}))"
    return f"({compute_type(dtype)})({bits})"


# ---------------------------------------------------------------------------------------------
# Elementwise ops on compute values


def _wide_unsigned(dtype: DType) -> str:
    return _UNSIGNED[max(32, dtype.bits)]


def _wrap(dtype: DType, op: str, a: str, b: str) -> str:
    """``a op b`` wrapping modulo 2**bits (no signed overflow)."""
    wide = _wide_unsigned(dtype)
    return f"(({compute_type(dtype)})(({wide})({a}) {op} ({wide})({b})))"


def unary(name: str, dtype: DType, x: str) -> str:
    """The C expression of unary op ``name`` on a compute value ``x`` of ``dtype``."""
    t = compute_type(dtype)
    floating = dtype in _FLOATS
    if name == "copy":
        return x
    if name == "abs":
        if floating:
            return f"fabs{'' if t == 'double' else 'f'}({x})"
        if not dtype.is_signed:
            return x
        return f"(({x}) < 0 ? {_wrap(dtype, '-', '0', x)} : ({x}))"
    if name == "negate":
        return f"(-({x}))" if floating else _wrap(dtype, "-", "0", x)
    if name == "not":
        return f"(!({x}))" if dtype is PRED else f"(({t})~({x}))"
    if name == "sign":
        if floating:
            return f"xs_fsign<{t}>({x})"
        if not dtype.is_signed:
            return f"(({t})(({x}) != 0))"
        return f"(({t})((({x}) > 0) - (({x}) < 0)))"
    if name == "popcnt":
        if dtype.bits == 64:
            return f"(({t})__popcll((unsigned long long)({x})))"
        return f"(({t})__popc((unsigned int)({_UNSIGNED[dtype.bits]})({x})))"
    if name == "count-leading-zeros":
        if dtype.bits == 64:
            return f"(({t})__clzll((long long)({x})))"
        return (f"(({t})(__clz((int)(unsigned int)({_UNSIGNED[dtype.bits]})({x}))"
                f" - {32 - dtype.bits}))")
    simple = {"floor": "floor", "ceil": "ceil", "round-nearest-even": "rint",
              "round-nearest-afz": "round", "sqrt": "sqrt", "exponential": "exp",
              "exponential-minus-one": "expm1", "log": "log", "log-plus-one": "log1p",
              "sine": "sin", "cosine": "cos", "tan": "tan", "tanh": "tanh"}
    if name in simple:
        return f"{_math(dtype, simple[name])}({x})"
    one = _float_literal(1.0, t)
    if name == "rsqrt":
        return f"({one} / {_math(dtype, 'sqrt')}({x}))"
    if name == "logistic":
        return f"({one} / ({one} + {_math(dtype, 'exp')}(-({x}))))"
    if name in ("cbrt", "erf"):  # computed in f64, rounded once
        return f"(({t}){name}((double)({x})))"
    raise AssertionError(f"GPU renderer: no unary rule for {name}")


def is_finite(dtype: DType, x: str) -> str:
    """Whether a float compute value is finite (false for NaN and infinities)."""
    t = compute_type(dtype)
    return f"(fabs{'' if t == 'double' else 'f'}({x}) < {_float_literal(float('inf'), t)})"


def binary(name: str, dtype: DType, a: str, b: str) -> str:
    """The C expression of binary op ``name`` on compute values of ``dtype``."""
    t = compute_type(dtype)
    if dtype in _FLOATS:
        simple = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
        if name in simple:
            return f"(({a}) {simple[name]} ({b}))"
        if name in ("maximum", "minimum"):
            return f"xs_f{name[:3]}<{t}>({a}, {b})"
        function = {"remainder": "fmod", "power": "pow", "atan2": "atan2"}[name]
        return f"{_math(dtype, function)}({a}, {b})"
    if dtype is PRED:
        op = {"add": "||", "maximum": "||", "or": "||", "multiply": "&&", "minimum": "&&",
              "and": "&&", "xor": "!="}[name]
        return f"(({a}) {op} ({b}))"
    if name in ("add", "subtract", "multiply"):
        return _wrap(dtype, {"add": "+", "subtract": "-", "multiply": "*"}[name], a, b)
    if name in ("and", "or", "xor"):
        return f"(({t})(({a}) {({'and': '&', 'or': '|', 'xor': '^'})[name]} ({b})))"
    if name in ("maximum", "minimum"):
        return f"(({a}) {'>' if name == 'maximum' else '<'} ({b}) ? ({a}) : ({b}))"
    if name in ("divide", "remainder"):
        return _divide(name, dtype, a, b)
    return _shift(name, dtype, a, b)


def _divide(name: str, dtype: DType, a: str, b: str) -> str:
    t = compute_type(dtype)
    if dtype.is_signed:
        smallest = constant_text(-(1 << (dtype.bits - 1)), dtype)
        overflow = f"(({a}) == {smallest} && ({b}) == ({t})-1)"
        if name == "divide":
            return (f"(({b}) == 0 ? ({t})-1 : {overflow} ? {smallest} : "
                    f"({t})(({a}) / ({b})))")
        return f"(({b}) == 0 ? ({a}) : {overflow} ? ({t})0 : ({t})(({a}) % ({b})))"
    if name == "divide":
        return f"(({b}) == 0 ? ({t})~({t})0 : ({t})(({a}) / ({b})))"
    return f"(({b}) == 0 ? ({a}) : ({t})(({a}) % ({b})))"


def _shift(name: str, dtype: DType, a: str, b: str) -> str:
    t, bits = compute_type(dtype), dtype.bits
    unsigned = _UNSIGNED[bits]
    too_far = f"(({unsigned})({b}) >= {bits}u)"
    if name == "shift-left":
        shifted = f"(({t})(({_wide_unsigned(dtype)})({a}) << ({unsigned})({b})))"
        return f"({too_far} ? ({t})0 : {shifted})"
    if name == "shift-right-logical":
        shifted = f"(({t})(({unsigned})({a}) >> ({unsigned})({b})))"
        return f"({too_far} ? ({t})0 : {shifted})"
    signed = {8: "signed char", 16: "short", 32: "int", 64: "long long"}[bits]
    shifted = f"(({t})(({signed})({a}) >> ({unsigned})({b})))"
    return f"({too_far} ? (({signed})({a}) < 0 ? ({t})-1 : ({t})0) : {shifted})"


_C_DIRECTION = {ComparisonDirection.EQ: "==", ComparisonDirection.NE: "!=",
                ComparisonDirection.LT: "<", ComparisonDirection.LE: "<=",
                ComparisonDirection.GT: ">", ComparisonDirection.GE: ">="}


def compare(inst: Instruction, a: str, b: str) -> str:
    """``compare`` of two compute values: IEEE for FLOAT (``!=`` is true on NaN), the float
    bits as sign-magnitude integers for TOTALORDER, C's own order for integers and pred."""
    source = inst.operands[0].shape.dtype
    kind = inst.attrs.type or default_comparison_type(source)
    op = _C_DIRECTION[inst.attrs.direction]
    if kind is ComparisonType.TOTALORDER:
        if compute_type(source) == "double":
            a, b = (f"xs_total_order64({v})" for v in (a, b))
        else:
            a, b = (f"xs_total_order32({v})" for v in (a, b))
    elif kind is ComparisonType.SIGNED and not source.is_signed and source is not PRED:
        signed = {8: "signed char", 16: "short", 32: "int", 64: "long long"}[source.bits]
        a, b = f"(({signed})({a}))", f"(({signed})({b}))"
    elif kind is ComparisonType.UNSIGNED and source.is_signed:
        a, b = (f"(({_UNSIGNED[source.bits]})({v}))" for v in (a, b))
    return f"(({a}) {op} ({b}))"


TOTAL_ORDER = r"""
__device__ __forceinline__ int xs_total_order32(float x) {
  int bits = __float_as_int(x);
  return bits < 0 ? bits ^ 0x7fffffff : bits;
}
__device__ __forceinline__ long long xs_total_order64(double x) {
  long long bits = __double_as_longlong(x);
  return bits < 0 ? bits ^ 0x7fffffffffffffffLL : bits;
}
"""

_INT_RANGES = {dtype: (-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1)
               if dtype.is_signed else (0, (1 << dtype.bits) - 1)
               for dtype in (S8, S16, S32, S64, U8, U16, U32, U64)}


def convert(source: DType, target: DType, x: str) -> str:
    """HLO ``convert`` of a compute value (the f16/bf16 rounding is the caller's)."""
    t = compute_type(target)
    if target is PRED:
        return f"(({x}) != 0)"
    if source is PRED:
        return f"(({t})(({x}) ? 1 : 0))"
    if source in _FLOATS and target in _FLOATS:
        return x if compute_type(source) == t else f"(({t})({x}))"
    if source in _FLOATS:
        s = compute_type(source)
        low, high = _INT_RANGES[target]
        return (f"xs_f2i<{t}, {s}>({x}, {constant_text(low, target)}, "
                f"{constant_text(high, target)}, {_float_literal(float(low), s)}, "
                f"{_float_literal(float(high + 1), s)})")
    # Integers become f16/bf16 through f32 (as XLA does): the compute type already is f32.
    return f"(({t})({x}))"


def bitcast_convert(source: DType, target: DType, x: str) -> str:
    """Reinterpret the storage bits of a compute value as ``target`` (same width)."""
    return _from_bits(target, _storage_bits(source, x))


def elementwise(inst: Instruction, values: list[str]) -> str:
    """The C expression of elementwise ``inst`` on its operands' compute values (not yet
    rounded to an f16/bf16 result type)."""
    name, dtype = inst.op.name, inst.shape.dtype
    if name == "compare":
        return compare(inst, *values)
    if name == "select":
        return f"(({values[0]}) ? ({values[1]}) : ({values[2]}))"
    if name == "clamp":
        low, x, high = values
        return binary("minimum", dtype, binary("maximum", dtype, x, low), high)
    source = inst.operands[0].shape.dtype
    if name == "convert":
        return convert(source, dtype, values[0])
    if name == "bitcast-convert":
        return bitcast_convert(source, dtype, values[0])
    if name == "is-finite":
        return is_finite(source, values[0])
    if len(values) == 1:
        return unary(name, dtype, values[0])
    return binary(name, dtype, *values)


def accumulator_type(dtype: DType) -> DType:
    """The dtype a reduce kernel accumulates ``dtype`` in (f32 for f16/bf16)."""
    return F32 if accumulator_dtype(dtype) == np.dtype(np.float32) else dtype
