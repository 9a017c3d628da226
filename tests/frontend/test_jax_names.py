"""JAX names and signatures that issue 16 found missing: callable scalar types, shifts on
tracers, numpy functions (finfo, iinfo, array_split, count_nonzero, nan_to_num, nextafter,
preferred_element_type), lax functions (rsqrt, dot, cumulative ops, with_sharding_constraint)
and nn functions (against JAX-made values, tests/data/jax_nn_values.json)."""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.nn as nn
import xla_spmd.numpy as xnp

VALUES = json.loads((Path(__file__).resolve().parent.parent / "data" / "jax_nn_values.json")
                    .read_text())


def test_scalar_types_are_callable_dtypes():
    assert xnp.int32(0).dtype == np.int32 and int(xnp.int32(0)) == 0
    assert xnp.float32(2).dtype == np.float32
    assert int(xs.jit(lambda x: xnp.int32(x) + 1)(2.7)) == 3
    assert xnp.float32 == np.float32 and np.dtype(xnp.bfloat16) == ml_dtypes.bfloat16
    assert xnp.zeros(2, xnp.int8).dtype == np.int8 and np.ones(2, xnp.uint16).dtype == np.uint16
    assert xnp.asarray([1.5]).astype(xnp.int32).dtype == np.int32


def test_shifts_and_integer_operators_on_tracers():
    x = np.array([-8, 1, 3], np.int32)
    shifted = xs.jit(lambda x: (x << 2, x >> 1, 1 << x, ~x, x ^ 3, x // 2, x % 3))(x)
    expected = (x << 2, x >> 1, 1 << x, ~x, x ^ 3, x // 2, x % 3)
    for got, want in zip(shifted, expected):
        np.testing.assert_array_equal(np.asarray(got), want)
    unsigned = np.array([0xFFFFFFF0], np.uint32)
    np.testing.assert_array_equal(np.asarray(xs.jit(lambda x: x >> 4)(unsigned)),
                                  unsigned >> 4)  # logical for unsigned


def test_numpy_functions():
    assert xnp.finfo(xnp.bfloat16).eps == 2 ** -7 and xnp.iinfo(xnp.int8).max == 127
    assert xnp.finfo(xnp.ones(2)).bits == 32
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    np.testing.assert_array_equal(np.asarray(xnp.nan_to_num(x)), np.nan_to_num(x))
    np.testing.assert_array_equal(np.asarray(xnp.nan_to_num(x, nan=-1.0, posinf=9.0)),
                                  np.nan_to_num(x, nan=-1.0, posinf=9.0))
    assert int(xnp.count_nonzero(x)) == 4
    np.testing.assert_array_equal(np.asarray(xnp.count_nonzero(np.eye(3), axis=0)), [1, 1, 1])
    pieces = xnp.array_split(np.arange(10), 3)
    assert [np.asarray(p).tolist() for p in pieces] == \
        [p.tolist() for p in np.array_split(np.arange(10), 3)]
    np.testing.assert_array_equal(np.asarray(xnp.nextafter(np.float32([0, 1, -1]), 2)),
                                  np.nextafter(np.float32([0, 1, -1]), np.float32(2)))
    a = np.ones((2, 3), np.float16)
    assert xnp.matmul(a, a.T, preferred_element_type=np.float32).dtype == np.float32
    assert xnp.dot(a, a.T, preferred_element_type=xnp.float32).dtype == np.float32


def test_lax_functions():
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0], np.float32)
    np.testing.assert_allclose(np.asarray(lax.rsqrt(x)), 1 / np.sqrt(x), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(lax.cumsum(x)), np.cumsum(x))
    np.testing.assert_array_equal(np.asarray(lax.cumsum(x, reverse=True)),
                                  np.cumsum(x[::-1])[::-1])
    np.testing.assert_array_equal(np.asarray(lax.cumprod(x)), np.cumprod(x))
    np.testing.assert_array_equal(np.asarray(lax.cummax(x)), np.maximum.accumulate(x))
    np.testing.assert_array_equal(np.asarray(lax.cummin(x, reverse=True)),
                                  np.minimum.accumulate(x[::-1])[::-1])
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(lax.dot(m, np.ones(3, np.float32))), m.sum(1))
    np.testing.assert_array_equal(np.asarray(lax.integer_pow(x, 3)), x ** 3)
    np.testing.assert_array_equal(np.asarray(lax.shift_left(np.int32(1), np.int32(4))), 16)
    mesh = xs.make_mesh({"x": 8})
    f = xs.jit(lambda v: lax.with_sharding_constraint(v * 2, xs.NamedSharding(mesh, xs.P("x"))))
    np.testing.assert_array_equal(np.asarray(f(np.arange(8.0))), np.arange(8.0) * 2)


ACTIVATIONS = ["softplus", "leaky_relu", "elu", "relu6", "silu", "swish", "log_sigmoid",
               "celu", "selu", "hard_tanh", "soft_sign", "standardize", "log_softmax"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_nn_activation_matches_jax(name):
    x = np.asarray(VALUES["x"], np.float32)
    got = np.asarray(getattr(nn, name)(x))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, VALUES[name], rtol=2e-6, atol=1e-7)


def test_dot_product_attention_and_one_hot_match_jax():
    q, k, v = (np.asarray(VALUES[n], np.float32) for n in "qkv")
    np.testing.assert_allclose(np.asarray(nn.dot_product_attention(q, k, v)),
                               VALUES["dot_product_attention"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.dot_product_attention(q, k, v, is_causal=True)),
                               VALUES["dot_product_attention_causal"], rtol=2e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(nn.one_hot(np.array([0, 2]), 3, axis=0)),
                                  VALUES["one_hot_axis0"])


PAD_MODES = ["constant", "edge", "wrap", "reflect", "symmetric", "maximum", "minimum", "mean",
             "median", "linear_ramp"]


@pytest.mark.parametrize("mode", PAD_MODES)
def test_pad_every_mode_matches_numpy(mode):
    floats = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5
    ints = np.arange(12, dtype=np.int32).reshape(3, 4) * 3 % 7
    for width in [1, (2, 3), ((1, 5), (0, 2)), ((7, 0), (9, 4))]:
        for array in (floats, ints):
            got = np.asarray(xs.jit(lambda a, w=width: xnp.pad(a, w, mode=mode))(array))
            want = np.pad(array, width, mode=mode)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{mode} {width}")
    np.testing.assert_array_equal(
        np.asarray(xnp.pad(floats, ((1, 2), (3, 0)), constant_values=((1, 2), (3, 4)))),
        np.pad(floats, ((1, 2), (3, 0)), constant_values=((1, 2), (3, 4))))
    np.testing.assert_allclose(
        np.asarray(xnp.pad(floats, 2, mode="linear_ramp", end_values=(5, -1))),
        np.pad(floats, 2, mode="linear_ramp", end_values=(5, -1)), rtol=1e-6)


def _padded(values, size, fill):
    values = list(values)[:size]
    return values + [fill] * (size - len(values))


def test_static_size_nonzero_argwhere_unique_searchsorted():
    a = np.array([[0, 3, 0], [4, 0, 5]], np.int32)
    rows, cols = np.nonzero(a)
    for size, fill in ((4, -1), (2, 0), (3, 0)):
        got = xs.jit(lambda a, n=size, f=fill: xnp.nonzero(a, size=n, fill_value=f))(a)
        assert [np.asarray(g).tolist() for g in got] == [_padded(rows, size, fill),
                                                       _padded(cols, size, fill)]
    assert [np.asarray(g).tolist() for g in xnp.nonzero(a)] == [rows.tolist(), cols.tolist()]
    assert np.asarray(xs.jit(lambda a: xnp.argwhere(a, size=4))(a)).tolist() == \
        [[0, 1], [1, 0], [1, 2], [0, 0]]
    assert np.asarray(xs.jit(lambda a: xnp.where(a > 3, size=2))(a)[1]).tolist() == [0, 2]
    x = np.array([3, 1, 3, 2, 1, 7], np.int32)
    assert np.asarray(xs.jit(lambda x: xnp.unique(x, size=6))(x)).tolist() == \
        [1, 2, 3, 7, 1, 1]  # padded with the smallest value, as JAX
    assert np.asarray(xs.jit(lambda x: xnp.unique(x, size=3, fill_value=0))(x)).tolist() == \
        [1, 2, 3]
    assert np.asarray(xnp.unique(x)).tolist() == [1, 2, 3, 7]
    with pytest.raises(xs.errors.XlaSpmdError, match="size="):
        xs.jit(lambda x: xnp.unique(x))(x)
    sorted_a = np.array([1.0, 2.0, 2.0, 5.0], np.float32)
    values = np.array([0.0, 2.0, 3.0, 9.0], np.float32)
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.asarray(xnp.searchsorted(sorted_a, values, side)),
                                      np.searchsorted(sorted_a, values, side))
