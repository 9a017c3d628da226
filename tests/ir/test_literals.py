"""HLO literal text: XLA's float spelling, arrays, specials, and reading it back."""

import math

import ml_dtypes
import numpy as np
import pytest

from xla_spmd.errors import ParseError
from xla_spmd.ir import BF16, C64, C128, F16, F32, F64, PRED, S8, S32, U64, ArrayShape
from xla_spmd.ir.attributes import Literal
from xla_spmd.ir.literals import format_float, format_literal, parse_literal
from xla_spmd.ir.shapes import TupleShape

FLOATS = [
    (F32, 0.1, "0.1"), (F32, 1.0, "1"), (F32, 1e10, "1e+10"), (F32, 1e-7, "1e-07"),
    (F32, -0.0, "-0"), (F32, 0.0, "0"), (F32, math.inf, "inf"), (F32, -math.inf, "-inf"),
    (F32, math.nan, "nan"), (F32, 1 / 3, "0.333333343"), (F32, 2.5, "2.5"),
    (F32, 16777216.0, "16777216"), (F32, 1e-45, "1.4013e-45"), (F32, 3.4028234663852886e38,
                                                              "3.40282347e+38"),
    (F64, 0.1, "0.1"), (F64, 1 / 3, "0.33333333333333331"), (F64, 1e100, "1e+100"),
    (F64, 5e-324, "4.94065645841247e-324"), (F64, -math.inf, "-inf"),
    (F16, 0.1, "0.1"), (F16, 65504.0, "6.55e+04"), (F16, 1 / 3, "0.33325"),
    (F16, 6e-8, "5.96e-08"),
    (BF16, 0.1, "0.1"), (BF16, 1.0, "1"), (BF16, 1 / 3, "0.334"), (BF16, 3.0, "3"),
    (BF16, 1e10, "1e+10"),
]


@pytest.mark.parametrize("dtype,value,text", FLOATS)
def test_float_spelling(dtype, value, text):
    assert format_float(value, dtype) == text
    back = parse_literal(text, ArrayShape(dtype, ())).value
    original = np.asarray(value, dtype=dtype.numpy)
    assert back.tobytes() == original.tobytes() or (np.isnan(original) and np.isnan(back))


def _bits(dtype, bits):
    return np.array(bits, dtype={16: np.uint16, 32: np.uint32, 64: np.uint64}[dtype.bits]) \
        .view(dtype.numpy)


@pytest.mark.parametrize("dtype,bits,text", [
    (F32, 0x7FC00000, "nan"), (F32, 0xFFC00000, "-nan"), (F32, 0x7F800001, "nan(0x1)"),
    (F32, 0xFFC00123, "-nan(0x400123)"), (F64, 0x7FF8000000000000, "nan"),
    (F16, 0x7E00, "nan"), (F16, 0x7C01, "nan(0x1)"), (BF16, 0xFFC0, "-nan"),
])
def test_nan_payloads(dtype, bits, text):
    value = _bits(dtype, bits)
    assert format_float(value, dtype) == text
    back = parse_literal(text, ArrayShape(dtype, ())).value
    assert back.tobytes() == value.tobytes()


@pytest.mark.parametrize("dtype,values,text", [
    (S32, [1, -2, 3], "{1, -2, 3}"),
    (U64, [18446744073709551615, 0], "{18446744073709551615, 0}"),
    (S8, [-128, 127], "{-128, 127}"),
    (PRED, [True, False], "{1, 0}"),
    (F32, [], "{}"),
    (C64, [1 + 2j, -0.5j], "{(1, 2), (-0, -0.5)}"),
])
def test_rank1_arrays(dtype, values, text):
    array = np.array(values, dtype=dtype.numpy).reshape(len(values))
    assert format_literal(Literal(array)) == text
    assert parse_literal(text, ArrayShape(dtype, (len(values),))) == Literal(array)


@pytest.mark.parametrize("dtype,value,text", [
    (PRED, True, "true"), (PRED, False, "false"), (S32, -7, "-7"),
    (C128, 1.5 - 2j, "(1.5, -2)"), (F32, 2.0, "2"),
])
def test_scalars(dtype, value, text):
    array = np.array(value, dtype=dtype.numpy)
    assert format_literal(Literal(array)) == text
    assert parse_literal(text, ArrayShape(dtype, ())) == Literal(array)


@pytest.mark.parametrize("dims,text", [
    ((2, 2), "{ { 0, 1 }, { 2, 3 } }"),
    ((2, 1), "{ {0}, {1} }"),
    ((0, 3), "{  }"),
    ((2, 0), "{ {}, {} }"),
    ((2, 1, 2), "{ { { 0, 1 } }, { { 2, 3 } } }"),
    ((1, 2, 1, 2), "{ { /*i0=0*/ { /*i1=0*/ { 0, 1 } }, { /*i1=1*/ { 2, 3 } } } }"),
])
def test_nested_arrays(dims, text):
    array = np.arange(int(np.prod(dims)), dtype=np.int32).reshape(dims)
    assert format_literal(Literal(array)) == text
    assert parse_literal(text, ArrayShape(S32, dims)) == Literal(array)


def test_parser_is_lenient_about_spacing_and_pred_spelling():
    shape = ArrayShape(PRED, (2, 2))
    literal = parse_literal("{{true,0},{1, false}}", shape)
    assert literal.value.tolist() == [[True, False], [True, False]]


def test_tuple_literal():
    shape = TupleShape((ArrayShape(F32, (2, 1)), ArrayShape(S32, (2,))))
    literal = parse_literal("( { {1}, {2} }, {2, 42} )", shape)
    assert format_literal(literal, shape) == "( { {1}, {2} }, {2, 42} )"
    assert literal.value[1].value.tolist() == [2, 42]


def test_bf16_values_round_to_the_type():
    literal = parse_literal("{1.00390625, 3}", ArrayShape(BF16, (2,)))
    assert literal.value.dtype == ml_dtypes.bfloat16
    assert format_literal(literal) == "{1, 3}"


@pytest.mark.parametrize("text,shape,message,column", [
    ("{...}", ArrayShape(F32, (100,)), "constant elided by the printer", 1),
    ("{1, 2}", ArrayShape(F32, (3,)), "expected 3 elements in this dimension, found 2", 6),
    ("{1, x}", ArrayShape(F32, (2,)), "expected a f32 number, found 'x'", 5),
    ("{1.5}", ArrayShape(S32, (1,)), "expected a s32 integer, found '1.5'", 2),
    ("1 2", ArrayShape(S32, ()), "unexpected '2' after the literal", 3),
    ("(1, 2", ArrayShape(C64, ()), "expected ')' to close a complex number", 6),
    ("{1}", ArrayShape(S32, ()), "expected a s32 integer, found '{'", 1),
])
def test_errors(text, shape, message, column):
    with pytest.raises(ParseError) as info:
        parse_literal(text, shape)
    assert message in info.value.message
    assert info.value.column == column
