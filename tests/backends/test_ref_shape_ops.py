"""Reference evaluator: leaves, conversions and data-movement ops (op_semantics §8–§9)."""

import ml_dtypes
import numpy as np
import pytest
from ref_helpers import run_op

import xla_spmd.backends.reference  # noqa: F401
from xla_spmd.backends.reference.evaluator import TOKEN_VALUE, Context, evaluate_computation
from xla_spmd.ir import (
    BF16,
    C64,
    F16,
    F32,
    F64,
    PRED,
    S8,
    S32,
    U8,
    U32,
    ArrayShape,
    Builder,
    DType,
    Literal,
    Module,
    PadDim,
    SliceDim,
    TupleShape,
)
from xla_spmd.ir.dtypes import S64, U64

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def evaluate_built(builder, root, args=(), ctx=None):
    computation = builder.build(root)
    return evaluate_computation(Module.from_entry("m", computation).entry, list(args),
                                ctx or Context())


# ---------------------------------------------------------------------------------------------
# Leaves


def test_constant_and_tuple_constant():
    b = Builder("main")
    c = b.constant(np.array([[1, 2], [3, 4]], np.int32))
    np.testing.assert_array_equal(evaluate_built(b, c), [[1, 2], [3, 4]])
    b = Builder("main")
    literal = Literal((Literal(np.array(1.5, np.float32)), Literal(np.array([2, 3], np.int32))))
    t = b.op("constant", shape=TupleShape((ArrayShape(F32, ()), ArrayShape(S32, (2,)))),
             literal=literal)
    value = evaluate_built(b, t)
    assert isinstance(value, tuple) and value[0] == 1.5 and list(value[1]) == [2, 3]


@pytest.mark.parametrize("dtype", [S32, F32, BF16, U8, C64])
def test_iota(dtype):
    b = Builder("main")
    r = b.op("iota", shape=ArrayShape(dtype, (3, 4)), iota_dimension=1)
    result = evaluate_built(b, r)
    assert result.dtype == dtype.numpy
    np.testing.assert_array_equal(result, np.broadcast_to(np.arange(4), (3, 4)))
    b = Builder("main")
    r = b.op("iota", shape=ArrayShape(dtype, (3, 0)), iota_dimension=0)
    assert evaluate_built(b, r).shape == (3, 0)


def test_ids_and_token():
    b = Builder("main")
    pid = b.op("partition-id")
    assert evaluate_built(b, pid, ctx=Context(partition_id=3, num_partitions=4)) == 3
    b = Builder("main")
    rid = b.op("replica-id")
    value = evaluate_built(b, rid, ctx=Context(replica_id=1, num_replicas=2))
    assert value == 1 and value.dtype == np.uint32 and value.shape == ()
    b = Builder("main")
    assert evaluate_built(b, b.op("after-all")) is TOKEN_VALUE


# ---------------------------------------------------------------------------------------------
# Conversions


def test_convert_float_to_int_saturates():
    x = np.array([1.9, -1.9, 300, -300, np.nan, np.inf, -np.inf, 127.5], np.float32)
    np.testing.assert_array_equal(run_op("convert", x, shape=ArrayShape(S8, (8,))),
                                  [1, -1, 127, -128, 0, 127, -128, 127])
    np.testing.assert_array_equal(run_op("convert", x, shape=ArrayShape(U8, (8,))),
                                  [1, 0, 255, 0, 0, 255, 0, 127])
    big = np.array([3e9, -3e9, 1e19, -1e19, 2**31 - 128], np.float32)
    np.testing.assert_array_equal(run_op("convert", big, shape=ArrayShape(S32, (5,))),
                                  [2**31 - 1, -2**31, 2**31 - 1, -2**31, 2**31 - 128])
    np.testing.assert_array_equal(
        run_op("convert", np.array([1e19, -1e19, 9.3e18], np.float64), shape=ArrayShape(S64, (3,))),
        [2**63 - 1, -2**63, 2**63 - 1])
    np.testing.assert_array_equal(
        run_op("convert", np.array([2e19, 1e19, -1], np.float64), shape=ArrayShape(U64, (3,))),
        np.array([2**64 - 1, 10**19, 0], np.uint64))


def test_convert_int_int_wraps_by_source_signedness():
    np.testing.assert_array_equal(
        run_op("convert", np.array([-1, 300, 255], np.int32), shape=ArrayShape(U8, (3,))),
        [255, 44, 255])
    np.testing.assert_array_equal(
        run_op("convert", np.array([300, 128], np.int32), shape=ArrayShape(S8, (2,))), [44, -128])
    np.testing.assert_array_equal(
        run_op("convert", np.array([255], np.uint8), shape=ArrayShape(S32, (1,))), [255])
    np.testing.assert_array_equal(
        run_op("convert", np.array([-1], np.int8), shape=ArrayShape(U32, (1,))), [2**32 - 1])


def test_convert_int_to_float_rounds_to_nearest_even():
    result = run_op("convert", np.array([2**24 + 1, 2**24 + 3], np.int32),
                    shape=ArrayShape(F32, (2,)))
    np.testing.assert_array_equal(result, [2**24, 2**24 + 4])
    np.testing.assert_array_equal(
        run_op("convert", np.array([65519, 65520, 70000], np.int32), shape=ArrayShape(F16, (3,))),
        [65504, np.inf, np.inf])


def test_convert_pred_and_complex():
    x = np.array([0, 0.5, np.nan, -0.0], np.float32)
    np.testing.assert_array_equal(run_op("convert", x, shape=ArrayShape(PRED, (4,))),
                                  [False, True, True, False])
    np.testing.assert_array_equal(
        run_op("convert", np.array([True, False]), shape=ArrayShape(F32, (2,))), [1, 0])
    z = np.array([1.5 + 2j, 0 + 3j], np.complex64)
    np.testing.assert_array_equal(run_op("convert", z, shape=ArrayShape(PRED, (2,))),
                                  [True, False])
    np.testing.assert_array_equal(run_op("convert", np.array([2.5], np.float32),
                                         shape=ArrayShape(C64, (1,))), [2.5 + 0j])
    np.testing.assert_array_equal(run_op("convert", np.array([1.0, np.nan], np.float32),
                                         shape=ArrayShape(BF16, (2,))).astype(np.float32),
                                  [1.0, np.nan])


def test_bitcast_convert_equal_and_changing_widths():
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(run_op("bitcast-convert", x, shape=ArrayShape(S32, (2,))),
                                  x.view(np.int32))
    value = np.array(0x0123456789ABCDEF, np.uint64)
    halves = run_op("bitcast-convert", value.view(np.float64), shape=ArrayShape(F16, (4,)))
    assert [hex(v) for v in halves.view(np.uint16)] == ["0xcdef", "0x89ab", "0x4567", "0x123"]
    back = run_op("bitcast-convert", halves, shape=ArrayShape(U64, ()))
    assert back == value
    bytes_ = run_op("bitcast-convert", np.array([[1, 258]], np.int32),
                    shape=ArrayShape(U8, (1, 2, 4)))
    np.testing.assert_array_equal(bytes_, [[[1, 0, 0, 0], [2, 1, 0, 0]]])


def test_reduce_precision():
    x = np.array([65519, 65520, 1e-310, 1.0 + 2**-11, 1.0 + 3 * 2**-11, np.nan, -np.inf],
                 np.float64)
    result = run_op("reduce-precision", x, exponent_bits=5, mantissa_bits=10)
    np.testing.assert_array_equal(result, [65504, np.inf, 0, 1.0, 1.0 + 2**-9, np.nan, -np.inf])
    f32 = np.array([1.0 + 2**-9, 3.14159], np.float32)
    as_bf16 = run_op("reduce-precision", f32, exponent_bits=8, mantissa_bits=7)
    np.testing.assert_array_equal(as_bf16, f32.astype(ml_dtypes.bfloat16).astype(np.float32))
    nan_to_inf = run_op("reduce-precision", np.array([np.nan], np.float32), exponent_bits=8,
                        mantissa_bits=0)
    assert np.isinf(nan_to_inf[0])


# ---------------------------------------------------------------------------------------------
# Data movement


def test_broadcast():
    x = np.array([1, 2, 3], np.int32)
    result = run_op("broadcast", x, shape=ArrayShape(S32, (2, 3, 4)), dimensions=(1,))
    np.testing.assert_array_equal(result, np.broadcast_to(x[None, :, None], (2, 3, 4)))
    scalar = run_op("broadcast", np.array(7, np.int32), shape=ArrayShape(S32, (2, 2)),
                    dimensions=())
    np.testing.assert_array_equal(scalar, np.full((2, 2), 7))
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    swapped = run_op("broadcast", m, shape=ArrayShape(F32, (3, 5, 2)), dimensions=(2, 0))
    np.testing.assert_array_equal(swapped, np.broadcast_to(m.T[:, None, :], (3, 5, 2)))


def test_reshape_transpose_reverse_slice():
    np.testing.assert_array_equal(run_op("reshape", X, shape=ArrayShape(F32, (4, 6))),
                                  X.reshape(4, 6))
    np.testing.assert_array_equal(run_op("transpose", X, dimensions=(2, 0, 1)),
                                  X.transpose(2, 0, 1))
    np.testing.assert_array_equal(run_op("reverse", X, dimensions=(0, 2)), X[::-1, :, ::-1])
    np.testing.assert_array_equal(run_op("reverse", X, dimensions=()), X)
    sliced = run_op("slice", X, slice=(SliceDim(0, 2), SliceDim(1, 3), SliceDim(0, 4, 3)))
    np.testing.assert_array_equal(sliced, X[:, 1:3, 0:4:3])
    empty = run_op("slice", X, slice=(SliceDim(1, 1), SliceDim(0, 3), SliceDim(0, 4)))
    assert empty.shape == (0, 3, 4)


def test_bitcast_is_layout_aware():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    # Same layouts: a plain row-major reshape.
    np.testing.assert_array_equal(run_op("bitcast", x, shape=ArrayShape(F32, (3, 2))),
                                  x.reshape(3, 2))
    # Result f32[3,2]{0,1} (column-major) over a row-major f32[2,3]: the same bytes are the
    # transpose.
    result = run_op("bitcast", x, shape=ArrayShape(F32, (3, 2), layout=(0, 1)))
    np.testing.assert_array_equal(result, x.T)
    b = Builder("main")
    p = b.parameter(ArrayShape(F32, (2, 3), layout=(0, 1)), "p")
    r = b.op("bitcast", p, shape=ArrayShape(F32, (6,)))
    flat = evaluate_built(b, r, [x])
    np.testing.assert_array_equal(flat, x.T.reshape(-1))


def test_concatenate():
    a, b = X[:, :1], X[:, 1:]
    np.testing.assert_array_equal(run_op("concatenate", a, b, dimensions=(1,)), X)
    empty = np.zeros((2, 0, 4), np.float32)
    np.testing.assert_array_equal(run_op("concatenate", empty, X, empty, dimensions=(1,)), X)


def test_pad_interior_and_negative():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    result = run_op("pad", x, np.array(0, np.int32), padding=(PadDim(0, 2, 1), PadDim(1, 1, 2)))
    assert result.shape == (5, 9)
    np.testing.assert_array_equal(result[0], [0, 1, 0, 0, 2, 0, 0, 3, 0])
    np.testing.assert_array_equal(result[2], [0, 4, 0, 0, 5, 0, 0, 6, 0])
    assert not result[[1, 3, 4]].any()
    v = np.arange(1, 6, dtype=np.float32)
    cut = run_op("pad", v, np.array(-1, np.float32), padding=(PadDim(-2, 1, 1),))
    np.testing.assert_array_equal(cut, [2, -1, 3, -1, 4, -1, 5, -1])
    both = run_op("pad", v, np.array(0, np.float32), padding=(PadDim(-1, -2, 0),))
    np.testing.assert_array_equal(both, [2, 3])
    nothing = run_op("pad", np.zeros((0,), np.float32), np.array(9, np.float32),
                     padding=(PadDim(1, 2, 3),))
    np.testing.assert_array_equal(nothing, [9, 9, 9])


def test_get_dimension_size():
    result = run_op("get-dimension-size", X, dimensions=(2,))
    assert result == 4 and result.dtype == np.int32


@pytest.mark.parametrize("dtype", [F64, S8, PRED])
def test_shape_ops_keep_dtype(dtype):
    x = np.ones((2, 2), dtype.numpy)
    assert run_op("transpose", x, dimensions=(1, 0)).dtype == dtype.numpy
    assert run_op("reshape", x, shape=ArrayShape(dtype, (4,))).dtype == dtype.numpy
    assert DType.from_numpy(run_op("copy", x).dtype) is dtype


def test_bitcast_reinterprets_element_type():
    from xla_spmd.backends.reference import evaluate
    from xla_spmd.ir import F32, S32, ArrayShape, Builder, Module
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (2,)), "x")
    module = Module.from_entry("m", b.build(b.bitcast(x, shape=ArrayShape(S32, (2,)))))
    result = evaluate(module, [np.array([1.0, -2.0], np.float32)])
    np.testing.assert_array_equal(result, np.array([1.0, -2.0], np.float32).view(np.int32))
