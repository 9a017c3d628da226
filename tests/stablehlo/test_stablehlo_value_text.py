"""The value printer against hand-written text in stablehlo-translate's two result formats, and
floats against text MLIR's printer is known to write (as StableHLO's own tests show it)."""

import ml_dtypes
import numpy as np
import pytest

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import TOKEN_SHAPE, ArrayShape, DType, TupleShape
from xla_spmd.stablehlo.float_text import format_float
from xla_spmd.stablehlo.types import parse_dense
from xla_spmd.stablehlo.value_text import print_value, print_value_dense


def shape(dtype: str, *dims: int) -> ArrayShape:
    return ArrayShape(DType.named(dtype), dims)


FLOATS = [
    # Six digits round trip: %e style, the seventh digit always 0.
    ("f32", 1.0, "1.000000e+00"),
    ("f32", -3.14, "-3.140000e+00"),
    ("f32", 0.1, "1.000000e-01"),
    ("f64", 0.1, "1.000000e-01"),
    ("f64", 1e100, "1.000000e+100"),
    ("f64", 5e-324, "4.940660e-324"),
    ("f16", 65504.0, "6.550400e+04"),
    ("bf16", float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), "3.389530e+38"),
    ("f32", 0.0, "0.000000e+00"),
    ("f64", -0.0, "-0.000000e+00"),
    # Six digits lose the value: APFloat's shortest-safe form, plain or with 'E'.
    ("f32", 1.234567, "1.23456705"),
    ("f32", float(np.finfo(np.float32).max), "3.40282347E+38"),
    ("f32", float(np.finfo(np.float32).tiny), "1.17549435E-38"),
    ("f32", 2.0 ** 31, "2.14748365E+9"),
    ("f32", -0.00367342844, "-0.00367342844"),
    ("f32", -2.13374049e-4, "-2.13374049E-4"),
    ("f64", float(np.finfo(np.float64).max), "1.7976931348623157E+308"),
    ("f64", 1 / 3, "0.33333333333333331"),
    ("f64", -176.61502916214059, "-176.61502916214059"),
    ("f64", 1.28584807152564e-18, "1.28584807152564E-18"),
    # Neither holds a '.': the bits in hex, as for infinities and NaNs.
    ("f32", 2.0 ** 24, "0x4B800000"),
    ("f32", float("inf"), "0x7F800000"),
    ("f32", float("-inf"), "0xFF800000"),
    ("f32", float("nan"), "0x7FC00000"),
    ("f16", float("inf"), "0x7C00"),
    ("f8e4m3fn", float("nan"), "0x7F"),
    # Narrow types round trip in their own format.
    ("f8e4m3fn", -448.0, "-4.480000e+02"),
    ("f6e2m3fn", 0.125, "1.250000e-01"),
    ("f4e2m1fn", 1.5, "1.500000e+00"),
    ("f8e3m4", 0.0625, "6.250000e-02"),
]


@pytest.mark.parametrize("dtype,value,text", FLOATS, ids=[f"{d}:{t}" for d, _, t in FLOATS])
def test_floats_print_as_mlir_prints_them(dtype, value, text):
    kind = DType.named(dtype)
    assert format_float(np.array(value).astype(kind.numpy)[()], kind) == text


def test_printed_floats_read_back_to_the_same_bits():
    rng = np.random.default_rng(0)
    for dtype in ("f16", "bf16", "f32", "f64", "f8e5m2"):
        kind = DType.named(dtype)
        largest = float(ml_dtypes.finfo(kind.numpy).max)
        values = np.clip(rng.standard_normal(200) * 10.0 ** rng.integers(-8, 8, 200),
                         -largest, largest).astype(kind.numpy)
        for value in values:
            text = format_float(value, kind)
            back = parse_dense(text, shape(dtype))
            assert back.tobytes() == np.asarray(value).tobytes(), (dtype, text)


CASES = [
    ("scalar ui8", np.uint8(1), shape("u8"), "tensor<ui8> {1}", "dense<1> : tensor<ui8>"),
    ("rank 1 i8", np.array([1, 2, -3, -4], np.int8), shape("s8", 4),
     "tensor<4xi8> {\n  [1, 2, -3, -4]\n}", "dense<[1, 2, -3, -4]> : tensor<4xi8>"),
    ("one element", np.array([1], np.int8), shape("s8", 1),
     "tensor<1xi8> {\n  [1]\n}", "dense<1> : tensor<1xi8>"),
    ("rank 2 i8", np.array([[1, 2], [3, 4]], np.int8), shape("s8", 2, 2),
     "tensor<2x2xi8> {\n  [\n    [1, 2],\n    [3, 4]\n  ]\n}",
     "dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>"),
    ("rank 3 i64", np.arange(8).reshape(2, 2, 2), shape("s64", 2, 2, 2),
     "tensor<2x2x2xi64> {\n  [\n    [\n      [0, 1],\n      [2, 3]\n    ],\n"
     "    [\n      [4, 5],\n      [6, 7]\n    ]\n  ]\n}",
     "dense<[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> : tensor<2x2x2xi64>"),
    ("unsigned wide", np.array([2**64 - 1, 0], np.uint64), shape("u64", 2),
     "tensor<2xui64> {\n  [18446744073709551615, 0]\n}",
     "dense<[18446744073709551615, 0]> : tensor<2xui64>"),
    ("bool", np.array([True, False]), shape("pred", 2),
     "tensor<2xi1> {\n  [true, false]\n}", "dense<[true, false]> : tensor<2xi1>"),
    ("bool scalar splat", np.array(True), shape("pred"),
     "tensor<i1> {true}", "dense<true> : tensor<i1>"),
    ("i2", np.array([1, -2], ml_dtypes.int2), shape("s2", 2),
     "tensor<2xi2> {\n  [1, -2]\n}", "dense<[1, -2]> : tensor<2xi2>"),
    ("ui4", np.array([15, 0, 3], ml_dtypes.uint4), shape("u4", 3),
     "tensor<3xui4> {\n  [15, 0, 3]\n}", "dense<[15, 0, 3]> : tensor<3xui4>"),
    ("f16", np.array([1.0, 2.0, -3.0, -4.0], np.float16), shape("f16", 4),
     "tensor<4xf16> {\n  [1.000000e+00, 2.000000e+00, -3.000000e+00, -4.000000e+00]\n}",
     "dense<[1.000000e+00, 2.000000e+00, -3.000000e+00, -4.000000e+00]> : tensor<4xf16>"),
    ("bf16 splat", np.full((2, 1), -0.5, ml_dtypes.bfloat16), shape("bf16", 2, 1),
     "tensor<2x1xbf16> {\n  [\n    [-5.000000e-01],\n    [-5.000000e-01]\n  ]\n}",
     "dense<-5.000000e-01> : tensor<2x1xbf16>"),
    ("f32 inf and fallback", np.array([np.inf, 1.234567], np.float32), shape("f32", 2),
     "tensor<2xf32> {\n  [0x7F800000, 1.23456705]\n}",
     "dense<[0x7F800000, 1.23456705]> : tensor<2xf32>"),
    ("f64", np.array([0.25]), shape("f64", 1),
     "tensor<1xf64> {\n  [2.500000e-01]\n}", "dense<2.500000e-01> : tensor<1xf64>"),
    ("f8E4M3FN", np.array([1.0, -2.0], ml_dtypes.float8_e4m3fn), shape("f8e4m3fn", 2),
     "tensor<2xf8E4M3FN> {\n  [1.000000e+00, -2.000000e+00]\n}",
     "dense<[1.000000e+00, -2.000000e+00]> : tensor<2xf8E4M3FN>"),
    ("f6E3M2FN", np.array([0.25, 28.0], ml_dtypes.float6_e3m2fn), shape("f6e3m2fn", 2),
     "tensor<2xf6E3M2FN> {\n  [2.500000e-01, 2.800000e+01]\n}",
     "dense<[2.500000e-01, 2.800000e+01]> : tensor<2xf6E3M2FN>"),
    ("complex64 splat", np.full(2, 3.14 + 1j, np.complex64), shape("c64", 2),
     "tensor<2xcomplex<f32>> {\n  [[3.140000e+00, 1.000000e+00], [3.140000e+00, 1.000000e+00]]\n}",
     "dense<(3.140000e+00,1.000000e+00)> : tensor<2xcomplex<f32>>"),
    ("complex128", np.array([1.5 - 2j, 0.1j]), shape("c128", 2),
     "tensor<2xcomplex<f64>> {\n  [[1.500000e+00, -2.000000e+00], [0.000000e+00, 1.000000e-01]]\n}",
     "dense<[(1.500000e+00,-2.000000e+00), (0.000000e+00,1.000000e-01)]> : "
     "tensor<2xcomplex<f64>>"),
    ("empty rank 1", np.zeros(0, np.uint8), shape("u8", 0),
     "tensor<0xui8> {\n  []\n}", "dense<> : tensor<0xui8>"),
    ("empty rows", np.zeros((0, 2), np.int8), shape("s8", 0, 2),
     "tensor<0x2xi8> {\n  []\n}", "dense<> : tensor<0x2xi8>"),
    ("empty columns", np.zeros((2, 0), np.int8), shape("s8", 2, 0),
     "tensor<2x0xi8> {\n  [\n    [],\n    []\n  ]\n}", "dense<> : tensor<2x0xi8>"),
]


@pytest.mark.parametrize("value,type_,text,dense", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_values_print_in_both_formats(value, type_, text, dense):
    assert print_value(value, type_) == text
    assert print_value_dense(value, type_) == dense


def test_tokens_and_tuples():
    tuple_type = TupleShape((shape("s32"), TOKEN_SHAPE))
    assert print_value((np.int32(5), None), tuple_type) == \
        "tuple<tensor<i32>, !stablehlo.token> (\ntensor<i32> {5},\n!stablehlo.token\n)"
    with pytest.raises(XlaSpmdError, match="only arrays print as dense"):
        print_value_dense((np.int32(5), None), tuple_type)


def test_large_arrays_print_dense_as_hex():
    values = np.arange(101, dtype=np.int8)
    assert print_value_dense(values, shape("s8", 101)) == \
        f'dense<"0x{values.tobytes().hex().upper()}"> : tensor<101xi8>'
