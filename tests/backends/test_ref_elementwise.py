"""Reference evaluator, elementwise ops: one table against numpy over shapes x dtypes, then
XLA's edge cases (op_semantics §4–§8) by hand."""

import math

import ml_dtypes
import numpy as np
import pytest
from ref_helpers import run_op

from xla_spmd.ir import ComparisonDirection, ComparisonType

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.float32, np.float64, BF16, np.float16]
SIGNED = [np.int8, np.int32, np.int64]
UNSIGNED = [np.uint8, np.uint32]
INTS = SIGNED + UNSIGNED
SHAPES = [(), (0,), (5,), (2, 3, 4)]
RNG = np.random.default_rng(0)


def sample(dtype, shape, positive=False):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low = 1 if positive else max(info.min, -100)
        return RNG.integers(low, min(info.max, 100), shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)).astype(dtype)
    values = RNG.uniform(0.1, 3.0, shape) if positive else RNG.normal(size=shape) * 2
    return values.astype(dtype)


def reference(function, *arrays):
    """numpy's answer computed in f32 (or wider) and rounded once to the input dtype."""
    dtype = arrays[0].dtype
    wide = [a.astype(np.float32) if a.dtype in (BF16, np.float16) else a for a in arrays]
    with np.errstate(all="ignore"):
        result = np.asarray(function(*wide))
    if dtype.kind == "c":
        return result.astype(np.complex64 if result.dtype.kind == "c" else np.float32)
    return result.astype(dtype) if result.dtype.kind == "f" and dtype.kind in "fV" else result


# (opcode, numpy function, dtypes, positive inputs only, exact)
UNARY_TABLE = [
    ("abs", np.abs, FLOATS + SIGNED + [np.complex64], False, True),
    ("negate", np.negative, FLOATS + INTS + [np.complex64], False, True),
    ("exponential", np.exp, FLOATS + [np.complex64], False, False),
    ("exponential-minus-one", np.expm1, FLOATS, False, False),
    ("log", np.log, FLOATS + [np.complex64], True, False),
    ("log-plus-one", np.log1p, FLOATS, True, False),
    ("sqrt", np.sqrt, FLOATS + [np.complex64], True, False),
    ("rsqrt", lambda x: 1 / np.sqrt(x), FLOATS, True, False),
    ("cbrt", np.cbrt, FLOATS, False, False),
    ("tanh", np.tanh, FLOATS + [np.complex64], False, False),
    ("logistic", lambda x: 1 / (1 + np.exp(-x)), FLOATS, False, False),
    ("sine", np.sin, FLOATS, False, False),
    ("cosine", np.cos, FLOATS, False, False),
    ("tan", np.tan, FLOATS, False, False),
    ("floor", np.floor, FLOATS, False, True),
    ("ceil", np.ceil, FLOATS, False, True),
    ("round-nearest-even", np.rint, FLOATS, False, True),
    ("sign", np.sign, FLOATS + SIGNED, False, True),
    ("not", np.invert, INTS + [np.bool_], False, True),
    ("is-finite", np.isfinite, FLOATS, False, True),
    ("real", np.real, FLOATS + [np.complex64], False, True),
    ("imag", np.imag, [np.complex64], False, True),
    ("erf", np.vectorize(math.erf, otypes=[np.float64]), [np.float32, np.float64, BF16], False,
     False),
    ("copy", np.copy, FLOATS + INTS + [np.bool_, np.complex64], False, True),
]

BINARY_TABLE = [
    ("add", np.add, FLOATS + INTS + [np.bool_, np.complex64], False, True),
    ("subtract", np.subtract, FLOATS + INTS + [np.complex64], False, True),
    ("multiply", np.multiply, FLOATS + INTS + [np.bool_, np.complex64], False, True),
    ("divide", np.divide, FLOATS + [np.complex64], True, False),
    ("remainder", np.fmod, FLOATS + INTS, True, True),
    ("power", np.power, FLOATS, True, False),
    ("maximum", np.maximum, FLOATS + INTS + [np.bool_], False, True),
    ("minimum", np.minimum, FLOATS + INTS + [np.bool_], False, True),
    ("and", np.bitwise_and, INTS + [np.bool_], False, True),
    ("or", np.bitwise_or, INTS + [np.bool_], False, True),
    ("xor", np.bitwise_xor, INTS + [np.bool_], False, True),
    ("atan2", np.arctan2, FLOATS, False, False),
]


def _check(actual, expected, exact):
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if exact or actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:
        tolerance = 1e-2 if actual.dtype in (BF16, np.float16) else 2e-6
        np.testing.assert_allclose(actual.astype(np.complex128), expected.astype(np.complex128),
                                   rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("opcode, function, dtypes, positive, exact", UNARY_TABLE,
                         ids=[row[0] for row in UNARY_TABLE])
def test_unary_against_numpy(opcode, function, dtypes, positive, exact, shape):
    for dtype in dtypes:
        x = sample(dtype, shape, positive)
        expected = reference(function, x)
        _check(run_op(opcode, x), expected, exact)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("opcode, function, dtypes, positive, exact", BINARY_TABLE,
                         ids=[row[0] for row in BINARY_TABLE])
def test_binary_against_numpy(opcode, function, dtypes, positive, exact, shape):
    for dtype in dtypes:
        x, y = sample(dtype, shape, positive), sample(dtype, shape, positive)
        with np.errstate(all="ignore"):
            _check(run_op(opcode, x, y), reference(function, x, y), exact)


@pytest.mark.parametrize("direction", list(ComparisonDirection), ids=lambda d: d.value)
def test_compare_against_numpy(direction):
    function = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
                "GT": np.greater, "LE": np.less_equal, "LT": np.less}[direction.value]
    for dtype in FLOATS + INTS + [np.bool_]:
        x, y = sample(dtype, (3, 4)), sample(dtype, (3, 4))
        y[0] = x[0]
        result = run_op("compare", x, y, direction=direction)
        np.testing.assert_array_equal(result, function(x, y))


# ---------------------------------------------------------------------------------------------
# Edge cases

INT8_MIN = np.int8(-128)


def test_integer_division_edge_cases():
    x = np.array([7, -7, 7, -7, 5, -128, -128, 0], np.int8)
    y = np.array([2, 2, -2, -2, 0, -1, 0, 0], np.int8)
    np.testing.assert_array_equal(run_op("divide", x, y), [3, -3, -3, 3, -1, -128, -1, -1])
    np.testing.assert_array_equal(run_op("remainder", x, y), [1, -1, 1, -1, 5, 0, -128, 0])
    u = np.array([7, 200], np.uint8)
    np.testing.assert_array_equal(run_op("divide", u, np.array([0, 3], np.uint8)), [255, 66])
    np.testing.assert_array_equal(run_op("remainder", u, np.array([0, 3], np.uint8)), [7, 2])
    big = np.array([np.iinfo(np.int64).min], np.int64)
    np.testing.assert_array_equal(run_op("divide", big, np.array([-1], np.int64)), big)


def test_float_remainder_is_fmod():
    x = np.array([17, -17, 5.5, 1, np.inf, 3], np.float32)
    y = np.array([-3, 3, 2, 0, 2, np.inf], np.float32)
    np.testing.assert_array_equal(run_op("remainder", x, y), [2, -2, 1.5, np.nan, np.nan, 3])


def test_integer_overflow_wraps():
    x = np.array([127, -128, 100], np.int8)
    np.testing.assert_array_equal(run_op("add", x, np.array([1, -1, 100], np.int8)),
                                  [-128, 127, -56])
    np.testing.assert_array_equal(run_op("multiply", x, x), [1, 0, 16])
    np.testing.assert_array_equal(run_op("negate", np.array([INT8_MIN])), [-128])
    np.testing.assert_array_equal(run_op("abs", np.array([INT8_MIN])), [-128])
    np.testing.assert_array_equal(run_op("negate", np.array([1, 0], np.uint8)), [255, 0])
    np.testing.assert_array_equal(run_op("subtract", np.array([0], np.uint32),
                                         np.array([1], np.uint32)), [2**32 - 1])


def test_integer_power():
    base = np.array([2, -1, 1, 0, -2, 3, 5], np.int32)
    exponent = np.array([10, -1, -7, 0, 3, 21, -2], np.int32)
    expected = [1024, 0, 1, 1, -8, 3**21 % 2**32, 0]
    np.testing.assert_array_equal(run_op("power", base, exponent), expected)
    np.testing.assert_array_equal(run_op("power", np.array([3], np.uint8),
                                         np.array([5], np.uint8)), [243])
    np.testing.assert_array_equal(
        run_op("power", np.array([True, True, False, False]),
               np.array([True, False, True, False])), [True, True, False, True])


def test_float_power_special_cases():
    x = np.array([np.nan, 1, -8, -0.0, 2], np.float32)
    y = np.array([0, np.nan, 1 / 3, -3, -1], np.float32)
    np.testing.assert_array_equal(run_op("power", x, y), [1, 1, np.nan, -np.inf, 0.5])


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32, np.int64])
def test_shifts_by_width_or_more(dtype):
    bits = np.dtype(dtype).itemsize * 8
    value = np.array([-1, 5, -8, 1], dtype=np.int64).astype(dtype)
    amount = np.array([bits, bits + 3, 1, bits - 1], dtype=np.int64).astype(dtype)
    left = run_op("shift-left", value, amount)
    logical = run_op("shift-right-logical", value, amount)
    arithmetic = run_op("shift-right-arithmetic", value, amount)
    signed = value.view(np.dtype(f"i{np.dtype(dtype).itemsize}"))
    assert left[0] == 0 and left[1] == 0 and logical[0] == 0 and logical[1] == 0
    assert arithmetic.view(signed.dtype)[0] == -1 and arithmetic.view(signed.dtype)[1] == 0
    assert left[3] == np.array(1 << (bits - 1), np.uint64).astype(dtype)
    assert logical[2] == np.array(-8, np.int64).astype(dtype).view(
        f"u{np.dtype(dtype).itemsize}") >> 1
    assert arithmetic.view(signed.dtype)[2] == signed[2] >> 1


def test_negative_shift_amount_counts_as_too_large():
    x = np.array([-16, 16], np.int32)
    amount = np.array([-1, -1], np.int32)
    np.testing.assert_array_equal(run_op("shift-left", x, amount), [0, 0])
    np.testing.assert_array_equal(run_op("shift-right-arithmetic", x, amount), [-1, 0])
    np.testing.assert_array_equal(run_op("shift-right-logical", np.array([-1], np.int64),
                                         np.array([1], np.int64)), [2**63 - 1])


def test_max_min_nan_and_signed_zero():
    x = np.array([np.nan, 1, -0.0, 0.0, -0.0], np.float32)
    y = np.array([1, np.nan, 0.0, -0.0, -0.0], np.float32)
    maximum, minimum = run_op("maximum", x, y), run_op("minimum", x, y)
    np.testing.assert_array_equal(np.isnan(maximum), [True, True, False, False, False])
    np.testing.assert_array_equal(np.signbit(maximum[2:]), [False, False, True])
    np.testing.assert_array_equal(np.signbit(minimum[2:]), [True, True, True])
    assert np.isnan(run_op("minimum", x, y)[:2]).all()


def test_sign_round_and_rsqrt_edges():
    x = np.array([-0.0, 0.0, np.nan, -3, 2, -np.inf], np.float32)
    sign = run_op("sign", x)
    np.testing.assert_array_equal(sign, [-0.0, 0.0, np.nan, -1, 1, -1])
    assert np.signbit(sign[0]) and not np.signbit(sign[1])
    r = np.array([-2.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.3, np.inf], np.float32)
    afz = run_op("round-nearest-afz", r)
    np.testing.assert_array_equal(afz, [-3, -1, 1, 2, 3, 0, -0.0, np.inf])
    assert np.signbit(afz[6])
    np.testing.assert_array_equal(run_op("round-nearest-even", r)[:5], [-2, -0.0, 0, 2, 2])
    np.testing.assert_array_equal(
        run_op("rsqrt", np.array([0.0, -0.0, np.inf, -1, 4], np.float32)),
        [np.inf, -np.inf, 0, np.nan, 0.5])
    np.testing.assert_array_equal(run_op("ceil", np.array([-0.3], np.float32)), [-0.0])
    assert np.signbit(run_op("ceil", np.array([-0.3], np.float32))[0])
    np.testing.assert_array_equal(run_op("cbrt", np.array([-8, 27], np.float32)), [-2, 3])


def test_log_and_expm1_edges():
    np.testing.assert_array_equal(
        run_op("log", np.array([0.0, -0.0, -1, 1], np.float32)), [-np.inf, -np.inf, np.nan, 0])
    np.testing.assert_array_equal(
        run_op("log-plus-one", np.array([-1, -2, 0], np.float32)), [-np.inf, np.nan, 0])
    tiny = np.array([1e-10], np.float64)
    np.testing.assert_allclose(run_op("exponential-minus-one", tiny), tiny, rtol=1e-9)
    np.testing.assert_allclose(run_op("log-plus-one", tiny), tiny, rtol=1e-9)
    logistic = run_op("logistic", np.array([-1000, 0, 1000], np.float32))
    np.testing.assert_array_equal(logistic, [0, 0.5, 1])


def test_erf_is_accurate():
    x = np.linspace(-6, 6, 1001)
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_array_equal(run_op("erf", x), expected)
    x32 = x.astype(np.float32)
    np.testing.assert_array_equal(run_op("erf", x32),
                                  np.array([math.erf(v) for v in x32], np.float32))


def test_complex_abs_sign_and_parts():
    z = np.array([3 + 4j, 0, complex(np.nan, 1)], np.complex64)
    abs_z = run_op("abs", z)
    assert abs_z.dtype == np.float32
    np.testing.assert_array_equal(abs_z[:2], [5, 0])
    sign = run_op("sign", z)
    np.testing.assert_allclose(sign[:2], [0.6 + 0.8j, 0])
    assert np.isnan(sign[2].real) and np.isnan(sign[2].imag)
    np.testing.assert_array_equal(run_op("real", np.array([1.5], np.float32)), [1.5])
    np.testing.assert_array_equal(run_op("imag", np.array([1.5], np.float32)), [0])
    np.testing.assert_array_equal(run_op("complex", np.array([1, np.inf], np.float32),
                                         np.array([2, 0], np.float32)), [1 + 2j, np.inf])


def test_atan2_conventions():
    y = np.array([0.0, -0.0, 0.0, -0.0, 1, np.inf, -np.inf], np.float32)
    x = np.array([0.0, 0.0, -0.0, -0.0, 0.0, np.inf, np.inf], np.float32)
    result = run_op("atan2", y, x)
    pi = np.float32(np.pi)
    np.testing.assert_array_equal(result, [0, -0.0, pi, -pi, pi / 2, pi / 4, -pi / 4])
    assert np.signbit(result[1])


def test_bit_counting():
    x = np.array([0, 1, -1, -128, 64], np.int8)
    np.testing.assert_array_equal(run_op("popcnt", x), [0, 1, 8, 1, 1])
    np.testing.assert_array_equal(run_op("count-leading-zeros", x), [8, 7, 0, 0, 1])
    big = np.array([0, 1, 2**63, 2**40], np.uint64)
    np.testing.assert_array_equal(run_op("count-leading-zeros", big), [64, 63, 0, 23])
    np.testing.assert_array_equal(run_op("popcnt", big), [0, 1, 1, 1])
    np.testing.assert_array_equal(run_op("not", np.array([1, 0], np.int32)), [-2, -1])
    np.testing.assert_array_equal(run_op("not", np.array([True, False])), [False, True])


def test_is_finite():
    x = np.array([1, np.inf, -np.inf, np.nan], ml_dtypes.bfloat16)
    np.testing.assert_array_equal(run_op("is-finite", x), [True, False, False, False])


def test_half_precision_rounds_once():
    # bf16: 1 + 2^-8 is not representable; computed in f32 then rounded once (to even).
    one = np.array([1.0, 1.0], BF16)
    small = np.array([2**-8, 3 * 2**-9], BF16)
    np.testing.assert_array_equal(run_op("add", one, small).astype(np.float32),
                                  [1.0, 1.0 + 2**-7])


# ---------------------------------------------------------------------------------------------
# Compare, select, clamp


def test_compare_float_nan_and_zero():
    x = np.array([np.nan, -0.0, 1], np.float32)
    y = np.array([np.nan, 0.0, np.nan], np.float32)
    assert list(run_op("compare", x, y, direction=ComparisonDirection.EQ)) == [False, True, False]
    assert list(run_op("compare", x, y, direction=ComparisonDirection.NE)) == [True, False, True]


def test_compare_total_order():
    values = np.array([-np.nan, -np.inf, -1, -0.0, 0.0, 1, np.inf, np.nan], np.float32)
    values[0] = -np.abs(values[0])
    x, y = np.repeat(values, len(values)), np.tile(values, len(values))
    rank = np.repeat(np.arange(len(values)), len(values)), np.tile(np.arange(len(values)),
                                                                   len(values))
    for direction, function in [(ComparisonDirection.LT, np.less),
                                (ComparisonDirection.EQ, np.equal),
                                (ComparisonDirection.GE, np.greater_equal)]:
        for dtype in (np.float32, np.float64, BF16, np.float16):
            result = run_op("compare", x.astype(dtype), y.astype(dtype), direction=direction,
                            type=ComparisonType.TOTALORDER)
            np.testing.assert_array_equal(result, function(*rank))


def test_compare_unsigned_type_and_pred():
    x = np.array([-1, 1], np.int32)
    y = np.array([1, 1], np.int32)
    result = run_op("compare", x, y, direction=ComparisonDirection.GT,
                    type=ComparisonType.UNSIGNED)
    assert list(result) == [True, False]
    u = np.array([255], np.uint8)
    assert not run_op("compare", u, np.array([1], np.uint8), direction=ComparisonDirection.LT)[0]
    assert run_op("compare", np.array([False]), np.array([True]),
                  direction=ComparisonDirection.LT)[0]


def test_complex_equality():
    z = np.array([1 + 2j, 1 + 2j], np.complex64)
    w = np.array([1 + 2j, 1 - 2j], np.complex64)
    assert list(run_op("compare", z, w, direction=ComparisonDirection.EQ)) == [True, False]


def test_select_scalar_and_array_predicate():
    a, b = np.arange(6, dtype=np.int32).reshape(2, 3), -np.ones((2, 3), np.int32)
    np.testing.assert_array_equal(run_op("select", np.array(True), a, b), a)
    predicate = np.array([[True, False, True], [False, True, False]])
    np.testing.assert_array_equal(run_op("select", predicate, a, b), np.where(predicate, a, b))


def test_clamp():
    x = np.array([-5, 0, 5, np.nan], np.float32)
    result = run_op("clamp", np.array(-1, np.float32), x, np.array(1, np.float32))
    np.testing.assert_array_equal(result, [-1, 0, 1, np.nan])
    # min > max gives max; NaN bounds propagate.
    np.testing.assert_array_equal(
        run_op("clamp", np.array(3, np.int32), np.array([0, 9], np.int32), np.array(1, np.int32)),
        [1, 1])
    assert np.isnan(run_op("clamp", np.array(np.nan, np.float32), x[:1],
                           np.array(1, np.float32))).all()
    low, high = np.array([0, 5], np.uint8), np.array([10, 6], np.uint8)
    np.testing.assert_array_equal(run_op("clamp", low, np.array([255, 0], np.uint8), high),
                                  [10, 5])
