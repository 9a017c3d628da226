"""Reference rules of the elementwise ops: unary and binary math, compare, select, clamp,
convert, bitcast-convert and reduce-precision.

Every rule computes in the compute dtype (f32 for f16/bf16/f8; integers in their own type,
which numpy wraps) with floating-point warnings silenced, then stores once in the result type.
XLA's edge-case rules (op_semantics §4–§8) are spelled out where numpy differs: integer
division by zero, shifts by at least the bit width, NaN-propagating max/min that order -0 below
+0, saturating float→int conversion, TOTALORDER comparison.

Results are row-major (C-contiguous), XLA's default layout, whatever the operands' layouts
(`_row_major`): numpy's ufuncs would keep a transposed operand's layout, and a float sum or a
dot reading the result would then add in another order than the CPU backend, whose fusions
write row-major.

>>> import numpy as np
>>> from xla_spmd.ir import Builder, ArrayShape, Module, S32
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(S32, (3,)), "x")
>>> y = b.parameter(ArrayShape(S32, (3,)), "y")
>>> m = Module.from_entry("m", b.build(b.divide(x, y)))
>>> from xla_spmd.backends.reference.evaluator import evaluate
>>> evaluate(m, [np.array([7, -7, 5], np.int32), np.array([2, 2, 0], np.int32)])
array([ 3, -3, -1], dtype=int32)
"""

from __future__ import annotations

import math

import numpy as np

from xla_spmd.backends.reference.evaluator import EVALUATE
from xla_spmd.backends.reference.numeric import (
    all_ones,
    convert,
    signed_view,
    to_storage,
    unsigned_view,
    upcast,
)
from xla_spmd.errors import EvaluationError
from xla_spmd.ir.attributes import ComparisonDirection, ComparisonType
from xla_spmd.ir.opdefs import default_comparison_type


def _kind(array: np.ndarray) -> str:
    """'b' pred, 'i' signed, 'u' unsigned, 'f' float (incl. bf16/f8), 'c' complex."""
    kind = array.dtype.kind
    return "f" if kind == "V" else kind


# ---------------------------------------------------------------------------------------------
# Unary ops


def _sign(x: np.ndarray) -> np.ndarray:
    kind = _kind(x)
    if kind == "c":
        magnitude = np.abs(x)
        result = np.where(magnitude == 0, x, x / np.where(magnitude == 0, 1, magnitude))
        nan = np.isnan(np.real(x)) | np.isnan(np.imag(x))
        return np.where(nan, np.array(complex(np.nan, np.nan), x.dtype), result)
    if kind == "f":
        # np.sign loses the sign of zero; zero and NaN map to themselves.
        return np.where((x == 0) | np.isnan(x), x, np.sign(x))
    return np.sign(x)


def _round_afz(x: np.ndarray) -> np.ndarray:
    # Not floor(x + 0.5): that fails for 0.49999999999999994 (op_semantics §6).
    truncated = np.trunc(x)
    return np.where(np.abs(x - truncated) >= 0.5, truncated + np.sign(x), truncated)


_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    # Computed in f64 with libm's erf, then rounded once (exact to the last bit of f32).
    return np.asarray(_ERF(x.astype(np.float64)), np.float64)


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _popcnt(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(unsigned_view(x))


def _count_leading_zeros(x: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    value = unsigned_view(x).astype(np.uint64)
    length = np.zeros(x.shape, np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        high = value >> np.uint64(step)
        nonzero = high != 0
        length += np.where(nonzero, step, 0)
        value = np.where(nonzero, high, value)
    length += value != 0
    return bits - length


def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _abs(x: np.ndarray) -> np.ndarray:
    return x if _kind(x) in "ub" else np.abs(x)


def _imag(x: np.ndarray) -> np.ndarray:
    return np.imag(x) if _kind(x) == "c" else np.zeros_like(x)


UNARY_FUNCTIONS = {
    "abs": _abs,
    "negate": np.negative,
    "exponential": np.exp,
    "exponential-minus-one": np.expm1,
    "log": np.log,
    "log-plus-one": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": lambda x: np.power(x, 1 / 3) if x.dtype.kind == "c"  # the principal root
    else np.cbrt(x.astype(np.float64)) if x.dtype == np.float32 else np.cbrt(x),
    "tanh": np.tanh,
    "logistic": _logistic,
    "sine": np.sin,
    "cosine": np.cos,
    "tan": np.tan,
    "floor": np.floor,
    "ceil": np.ceil,
    "round-nearest-even": np.rint,
    "round-nearest-afz": _round_afz,
    "sign": _sign,
    "not": _not,
    "is-finite": np.isfinite,
    "popcnt": _popcnt,
    "count-leading-zeros": _count_leading_zeros,
    "real": np.real,
    "imag": _imag,
    "erf": _erf,
    "copy": np.copy,
}


def _row_major(result) -> np.ndarray:
    """``result`` as a C-contiguous array (itself where it is one; 0-d stays 0-d)."""
    return np.asarray(result, order="C")


@EVALUATE.register(*UNARY_FUNCTIONS)
def unary_rule(inst, operands, ctx):
    (x,) = operands
    if isinstance(x, tuple):  # copy of a tuple: values are immutable, so share them
        return x
    function = UNARY_FUNCTIONS[inst.op.name]
    with np.errstate(all="ignore"):
        result = function(upcast(x))
    return _row_major(to_storage(result, inst.shape.dtype.numpy))


# ---------------------------------------------------------------------------------------------
# Binary arithmetic


def _add(a, b):
    return np.logical_or(a, b) if a.dtype == np.bool_ else np.add(a, b)


def _multiply(a, b):
    return np.logical_and(a, b) if a.dtype == np.bool_ else np.multiply(a, b)


def _divide(a, b):
    if _kind(a) not in "iu":
        return np.divide(a, b)
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    if _kind(a) == "i":  # INT_MIN / -1 = INT_MIN: divide by 1 instead
        safe = np.where((a == np.iinfo(a.dtype).min) & (b == -1), 1, safe).astype(b.dtype)
    quotient = (a - np.fmod(a, safe)) // safe  # exact: truncated division
    return np.where(zero, all_ones(a.dtype), quotient)


def _remainder(a, b):
    if _kind(a) == "c":
        raise EvaluationError("remainder is not defined on complex numbers")
    if _kind(a) not in "iu":
        return np.fmod(a, b)
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    if _kind(a) == "i":  # INT_MIN % -1 = 0; fmod(x, 1) is 0 too
        safe = np.where(b == -1, 1, safe).astype(b.dtype)
    return np.where(zero, a, np.fmod(a, safe))


def _power(a, b):
    kind = _kind(a)
    if kind == "b":
        return np.logical_or(a, np.logical_not(b))
    if kind not in "iu":
        return np.power(a, b)
    # Exponentiation by squaring, wrapping; negative exponents give 1 for base 1, else 0.
    exponent = np.where(b < 0, 0, b).astype(unsigned_view(b).dtype)
    result = np.ones(np.broadcast_shapes(a.shape, b.shape), a.dtype)
    base = np.broadcast_to(a, result.shape).copy()
    while np.any(exponent):
        result = np.where(exponent & 1, result * base, result)
        base = base * base
        exponent = exponent >> 1
    if kind == "i":
        result = np.where(b < 0, (a == 1).astype(a.dtype), result)
    return result


def _max_or_min(a, b, is_max: bool):
    kind = _kind(a)
    if kind == "b":
        return np.logical_or(a, b) if is_max else np.logical_and(a, b)
    if kind == "c":  # lexicographic on (real, imag), the spec's rule
        a_first = (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag))
        return np.where(a_first if is_max else ~a_first, a, b)
    result = np.maximum(a, b) if is_max else np.minimum(a, b)
    if kind == "f":
        # IEEE-2019 ordering -0 < +0, independent of operand order.
        zeros = (a == 0) & (b == 0)
        pick_a = ~np.signbit(a) if is_max else np.signbit(a)
        result = np.where(zeros, np.where(pick_a, a, b), result)
    return result


def _shift(a, b, name: str):
    bits = a.dtype.itemsize * 8
    amount = unsigned_view(b)
    too_far = amount >= bits
    amount = np.where(too_far, 0, amount).astype(unsigned_view(a).dtype)
    if name == "shift-left":
        result = np.left_shift(unsigned_view(a), amount)
        return np.where(too_far, 0, result).view(a.dtype)
    if name == "shift-right-logical":
        result = np.right_shift(unsigned_view(a), amount)
        return np.where(too_far, 0, result).view(a.dtype)
    signed = signed_view(a)
    result = np.right_shift(signed, amount.astype(signed.dtype))
    result = np.where(too_far, np.where(signed < 0, -1, 0).astype(signed.dtype), result)
    return result.view(a.dtype)


def _atan2(y, x):
    if _kind(y) != "c":
        return np.arctan2(y, x)
    # XLA's complex atan2: -i * log((x + iy) / sqrt(x^2 + y^2)).
    z = x + 1j * y
    return -1j * np.log(z / np.sqrt(x * x + y * y))


def _complex(re, im):
    result = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
    result.real, result.imag = re, im
    return result


BINARY_FUNCTIONS = {
    "add": _add,
    "subtract": np.subtract,
    "multiply": _multiply,
    "divide": _divide,
    "remainder": _remainder,
    "power": _power,
    "maximum": lambda a, b: _max_or_min(a, b, True),
    "minimum": lambda a, b: _max_or_min(a, b, False),
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "shift-left": lambda a, b: _shift(a, b, "shift-left"),
    "shift-right-logical": lambda a, b: _shift(a, b, "shift-right-logical"),
    "shift-right-arithmetic": lambda a, b: _shift(a, b, "shift-right-arithmetic"),
    "atan2": _atan2,
    "complex": _complex,
}


@EVALUATE.register(*BINARY_FUNCTIONS)
def binary_rule(inst, operands, ctx):
    a, b = (upcast(x) for x in operands)
    function = BINARY_FUNCTIONS[inst.op.name]
    with np.errstate(all="ignore"):
        result = function(a, b)
    return _row_major(to_storage(result, inst.shape.dtype.numpy))


def apply_binary(opname: str, a, b) -> np.ndarray:
    """Apply binary op `opname` with XLA semantics to two arrays of one dtype (used by
    reducers that recognise a plain add/max/... computation)."""
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(all="ignore"):
        result = BINARY_FUNCTIONS[opname](upcast(a), upcast(b))
    return to_storage(result, a.dtype)


# ---------------------------------------------------------------------------------------------
# Compare, select, clamp

_COMPARE = {
    ComparisonDirection.EQ: np.equal, ComparisonDirection.NE: np.not_equal,
    ComparisonDirection.GE: np.greater_equal, ComparisonDirection.GT: np.greater,
    ComparisonDirection.LE: np.less_equal, ComparisonDirection.LT: np.less,
}
_FNUZ = ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz")


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers ordered like floats under TOTALORDER: -NaN < -inf < -0 < +0 < NaN."""
    bits = signed_view(x)
    magnitude_mask = np.iinfo(bits.dtype).max
    key = np.where(bits < 0, bits ^ magnitude_mask, bits)
    if x.dtype.name in _FNUZ:  # no -0 in these types: negatives move up by one
        key = np.where(bits < 0, key + 1, key)
    return key


def compare(a, b, direction: ComparisonDirection, kind: ComparisonType) -> np.ndarray:
    """`compare` of two arrays of one dtype (op_semantics §7)."""
    a, b = np.asarray(a), np.asarray(b)
    if kind is ComparisonType.TOTALORDER:
        a, b = total_order_key(a), total_order_key(b)
    elif kind is ComparisonType.SIGNED and _kind(a) == "u":
        a, b = signed_view(a), signed_view(b)
    elif kind is ComparisonType.UNSIGNED and _kind(a) == "i":
        a, b = unsigned_view(a), unsigned_view(b)
    else:
        a, b = upcast(a), upcast(b)
    if _kind(a) == "c" and direction not in (ComparisonDirection.EQ, ComparisonDirection.NE):
        ar, ai, br, bi = np.real(a), np.imag(a), np.real(b), np.imag(b)
        less = (ar < br) | ((ar == br) & (ai < bi))
        greater = (ar > br) | ((ar == br) & (ai > bi))
        return {ComparisonDirection.LT: less, ComparisonDirection.GT: greater,
                ComparisonDirection.LE: ~greater, ComparisonDirection.GE: ~less}[direction]
    with np.errstate(all="ignore"):
        return np.asarray(_COMPARE[direction](a, b))


@EVALUATE.register("compare")
def compare_rule(inst, operands, ctx):
    a, b = operands
    kind = inst.attrs.type or default_comparison_type(inst.operands[0].shape.dtype)
    return _row_major(compare(a, b, inst.attrs.direction, kind))


@EVALUATE.register("select")
def select_rule(inst, operands, ctx):
    predicate, on_true, on_false = operands
    return _row_major(to_storage(np.where(predicate, on_true, on_false),
                                 inst.shape.dtype.numpy))


@EVALUATE.register("clamp")
def clamp_rule(inst, operands, ctx):
    low, x, high = (upcast(v) for v in operands)
    with np.errstate(all="ignore"):
        result = _max_or_min(_max_or_min(x, low, True), high, False)
    return _row_major(to_storage(np.broadcast_to(result, x.shape), inst.shape.dtype.numpy))


# ---------------------------------------------------------------------------------------------
# Conversions


@EVALUATE.register("convert")
def convert_rule(inst, operands, ctx):
    return _row_major(convert(operands[0], inst.shape.dtype))


@EVALUATE.register("bitcast-convert")
def bitcast_convert_rule(inst, operands, ctx):
    x = np.asarray(operands[0], order="C")
    target = inst.shape.dtype.numpy
    source_bits, target_bits = inst.operands[0].shape.dtype.bits, inst.shape.dtype.bits
    if source_bits == target_bits:
        return x.view(target).reshape(inst.shape.dims)
    # Narrower: a new minor dim of little-endian chunks; wider: the minor dim is consumed.
    # numpy's view on a little-endian host does exactly this.
    if np.little_endian and target_bits < source_bits:
        return x.reshape(x.shape + (1,)).view(target).reshape(inst.shape.dims)
    if np.little_endian:
        return x.view(target).reshape(inst.shape.dims)
    raise EvaluationError("size-changing bitcast-convert needs a little-endian host")


_FLOAT_LAYOUT = {  # storage bits -> (unsigned int type, exponent bits, mantissa bits)
    "float16": (np.uint16, 5, 10), "bfloat16": (np.uint16, 8, 7),
    "float32": (np.uint32, 8, 23), "float64": (np.uint64, 11, 52),
}


def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """Round `x` to a float with the given exponent and mantissa widths, keeping its type."""
    if x.dtype.name not in _FLOAT_LAYOUT:
        x32 = reduce_precision(x.astype(np.float32), exponent_bits, mantissa_bits)
        return x32.astype(x.dtype)
    uint, source_exponent, source_mantissa = _FLOAT_LAYOUT[x.dtype.name]
    width = np.dtype(uint).itemsize * 8
    bits = x.view(uint).copy()
    one = uint(1)
    if mantissa_bits < source_mantissa:
        drop = source_mantissa - mantissa_bits
        last_kept = (bits >> uint(drop)) & one
        bias = uint((1 << (drop - 1)) - 1) + last_kept
        bits = (bits + bias) & ~uint((1 << drop) - 1)
    if exponent_bits < source_exponent:
        sign = bits & uint(1 << (width - 1))
        magnitude = bits ^ sign
        source_bias = (1 << (source_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        biased_exponent = magnitude >> uint(source_mantissa)
        overflow = biased_exponent > uint(source_bias + reduced_bias)
        underflow = biased_exponent <= uint(source_bias - reduced_bias)
        infinity = uint(((1 << source_exponent) - 1) << source_mantissa)
        magnitude = np.where(overflow, infinity, np.where(underflow, uint(0), magnitude))
        bits = sign | magnitude.astype(uint)
    result = bits.view(x.dtype)
    nan = np.isnan(x)
    if mantissa_bits == 0:
        return np.where(nan, np.array(np.inf, x.dtype), result)
    return np.where(nan, x, result)


@EVALUATE.register("reduce-precision")
def reduce_precision_rule(inst, operands, ctx):
    (x,) = operands
    with np.errstate(all="ignore"):
        result = reduce_precision(np.asarray(x), inst.attrs.exponent_bits,
                                  inst.attrs.mantissa_bits)
    return _row_major(to_storage(result, inst.shape.dtype.numpy))
