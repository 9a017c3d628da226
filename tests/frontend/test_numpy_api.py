"""Every function of xla_spmd.numpy / nn / lax against numpy on random inputs, under jit and
(for a few) eagerly."""

import math

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.nn as nn
import xla_spmd.numpy as xnp

RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def pos(*shape):
    return (RNG.random(shape) + 0.5).astype(np.float32)


def ints(*shape, high=5):
    return RNG.integers(0, high, shape).astype(np.int32)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _erf(x):
    return np.vectorize(math.erf)(x).astype(x.dtype)


# (name, xla_spmd function, numpy reference, argument factory)
CASES = [
    ("add_broadcast", lambda a, b: a + b, lambda a, b: a + b, lambda: (f32(3, 4), f32(4))),
    ("sub_scalar", lambda a: a - 2.0, lambda a: a - 2.0, lambda: (f32(3),)),
    ("rsub", lambda a: 2.0 - a, lambda a: 2.0 - a, lambda: (f32(3),)),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, lambda: (f32(2, 1, 3), f32(4, 1))),
    ("div", lambda a, b: a / b, lambda a, b: a / b, lambda: (f32(3, 2), pos(3, 2))),
    ("int_div", lambda a, b: a / b, lambda a, b: (a / b).astype(np.float32),
     lambda: (ints(4) + 1, ints(4) + 1)),
    ("floordiv", lambda a, b: a // b, lambda a, b: a // b,
     lambda: (ints(6, high=9) - 4, ints(6, high=3) + 1)),
    ("mod", lambda a, b: a % b, lambda a, b: a % b,
     lambda: (ints(6, high=9) - 4, ints(6, high=3) + 1)),
    ("fmod", lambda a: a % 1.5, lambda a: np.mod(a, np.float32(1.5)), lambda: (f32(5),)),
    ("pow", lambda a: a ** 3, lambda a: a ** 3, lambda: (f32(4),)),
    ("pow_float", lambda a, b: a ** b, lambda a, b: a ** b, lambda: (pos(4), f32(4))),
    ("neg_abs", lambda a: abs(-a), lambda a: np.abs(-a), lambda: (f32(3),)),
    ("compare", lambda a, b: (a < b) & (a >= 0.0), lambda a, b: (a < b) & (a >= 0),
     lambda: (f32(5), f32(5))),
    ("eq_ne", lambda a, b: (a == b) | (a != 0), lambda a, b: (a == b) | (a != 0),
     lambda: (ints(5), ints(5))),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, lambda: (f32(3, 4), f32(4, 2))),
    ("matmul_batch", xnp.matmul, np.matmul, lambda: (f32(2, 3, 4), f32(2, 4, 5))),
    ("matmul_bcast", xnp.matmul, np.matmul, lambda: (f32(2, 1, 3, 4), f32(5, 4, 2))),
    ("matmul_vec", xnp.matmul, np.matmul, lambda: (f32(4), f32(3, 4, 2))),
    ("matmul_3d_2d", xnp.matmul, np.matmul, lambda: (f32(2, 3, 4), f32(4, 5))),
    ("dot", xnp.dot, np.dot, lambda: (f32(3, 4), f32(4))),
    ("dot_nd", xnp.dot, np.dot, lambda: (f32(2, 3), f32(4, 3, 2))),
    ("tensordot", lambda a, b: xnp.tensordot(a, b, ((0, 2), (2, 0))),
     lambda a, b: np.tensordot(a, b, ((0, 2), (2, 0))), lambda: (f32(2, 3, 4), f32(4, 5, 2))),
    ("einsum_attention", lambda q, k: xnp.einsum("bqhd,bkhd->bhqk", q, k),
     lambda q, k: np.einsum("bqhd,bkhd->bhqk", q, k), lambda: (f32(2, 3, 2, 4), f32(2, 5, 2, 4))),
    ("einsum_implicit", lambda a, b: xnp.einsum("ij,jk", a, b),
     lambda a, b: np.einsum("ij,jk", a, b), lambda: (f32(2, 3), f32(3, 4))),
    ("einsum_three", lambda a, b, c: xnp.einsum("ij,jk,kl->il", a, b, c),
     lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c),
     lambda: (f32(2, 3), f32(3, 4), f32(4, 2))),
    ("einsum_sum_ellipsis", lambda a: xnp.einsum("...ij->...j", a),
     lambda a: np.einsum("...ij->...j", a), lambda: (f32(2, 3, 4),)),
    ("einsum_outer_trace_free", lambda a, b: xnp.einsum("i,j->ij", a, b),
     lambda a, b: np.einsum("i,j->ij", a, b), lambda: (f32(3), f32(2))),
    ("sum", lambda a: xnp.sum(a, axis=1), lambda a: a.sum(1), lambda: (f32(3, 4, 2),)),
    ("sum_keep", lambda a: xnp.sum(a, axis=(0, 2), keepdims=True),
     lambda a: a.sum((0, 2), keepdims=True), lambda: (f32(3, 4, 2),)),
    ("mean", lambda a: a.mean(-1), lambda a: a.mean(-1), lambda: (f32(3, 4),)),
    ("max_min", lambda a: xnp.max(a, 0) - xnp.min(a, axis=1, keepdims=True),
     lambda a: a.max(0) - a.min(1, keepdims=True), lambda: (f32(4, 4),)),
    ("prod", lambda a: xnp.prod(a, axis=0), lambda a: a.prod(0), lambda: (f32(3, 2),)),
    ("argmax", lambda a: xnp.argmax(a, axis=1), lambda a: a.argmax(1).astype(np.int32),
     lambda: (f32(3, 5),)),
    ("argmin_flat", xnp.argmin, lambda a: np.int32(a.argmin()), lambda: (f32(3, 5),)),
    ("all_any", lambda a: xnp.stack([xnp.all(a > -1.0), xnp.any(a > 1.0)]),
     lambda a: np.stack([np.all(a > -1), np.any(a > 1)]), lambda: (f32(6),)),
    ("var_std", lambda a: xnp.var(a, 0) + xnp.std(a, 0), lambda a: a.var(0) + a.std(0),
     lambda: (f32(5, 2),)),
    ("exp_log", lambda a: xnp.exp(a) + xnp.log(xnp.abs(a) + 1.0) + xnp.log1p(a * a)
     + xnp.expm1(a), lambda a: np.exp(a) + np.log(np.abs(a) + 1) + np.log1p(a * a)
     + np.expm1(a), lambda: (f32(4),)),
    ("sqrt_rsqrt", lambda a: xnp.sqrt(a) + xnp.rsqrt(a), lambda a: np.sqrt(a) + 1 / np.sqrt(a),
     lambda: (pos(4),)),
    ("trig", lambda a: xnp.sin(a) + xnp.cos(a) + xnp.tan(a) + xnp.tanh(a) + xnp.arctan2(a, 2.0),
     lambda a: np.sin(a) + np.cos(a) + np.tan(a) + np.tanh(a) + np.arctan2(a, 2),
     lambda: (f32(4),)),
    ("rounding", lambda a: xnp.floor(a) + xnp.ceil(a) + xnp.round(a) + xnp.sign(a),
     lambda a: np.floor(a) + np.ceil(a) + np.round(a) + np.sign(a), lambda: (f32(6) * 3,)),
    ("erf", xnp.erf, _erf, lambda: (f32(5),)),
    ("where", lambda c, a, b: xnp.where(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b),
     lambda: (f32(3, 1), f32(3, 4), f32(4))),
    ("where_scalar", lambda a: xnp.where(a > 0, a, 0.0), lambda a: np.where(a > 0, a, 0),
     lambda: (f32(5),)),
    ("maximum_minimum", lambda a, b: xnp.maximum(a, b) + xnp.minimum(a, 0.5),
     lambda a, b: np.maximum(a, b) + np.minimum(a, 0.5), lambda: (f32(4), f32(4))),
    ("clip", lambda a: xnp.clip(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5),
     lambda: (f32(6),)),
    ("reshape", lambda a: xnp.reshape(a, (4, -1)), lambda a: a.reshape(4, -1),
     lambda: (f32(2, 3, 2),)),
    ("method_reshape", lambda a: a.reshape(3, 4).T, lambda a: a.reshape(3, 4).T,
     lambda: (f32(12),)),
    ("transpose", lambda a: xnp.transpose(a, (2, 0, 1)), lambda a: a.transpose(2, 0, 1),
     lambda: (f32(2, 3, 4),)),
    ("swapaxes", lambda a: xnp.swapaxes(a, 0, 2), lambda a: np.swapaxes(a, 0, 2),
     lambda: (f32(2, 3, 4),)),
    ("moveaxis", lambda a: xnp.moveaxis(a, 0, -1), lambda a: np.moveaxis(a, 0, -1),
     lambda: (f32(2, 3, 4),)),
    ("expand_squeeze", lambda a: xnp.squeeze(xnp.expand_dims(a, (0, 2)), 0),
     lambda a: np.squeeze(np.expand_dims(a, (0, 2)), 0), lambda: (f32(3, 4),)),
    ("broadcast_to", lambda a: xnp.broadcast_to(a, (2, 3, 4)),
     lambda a: np.broadcast_to(a, (2, 3, 4)), lambda: (f32(3, 1),)),
    ("concatenate", lambda a, b: xnp.concatenate([a, b, a], axis=1),
     lambda a, b: np.concatenate([a, b, a], axis=1), lambda: (f32(2, 3), f32(2, 1))),
    ("stack", lambda a, b: xnp.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], -1),
     lambda: (f32(2, 3), f32(2, 3))),
    ("split", lambda a: xnp.split(a, [1, 3], axis=1), lambda a: np.split(a, [1, 3], axis=1),
     lambda: (f32(2, 5),)),
    ("split_sections", lambda a: xnp.split(a, 2), lambda a: np.split(a, 2),
     lambda: (f32(4, 3),)),
    ("basic_index", lambda a: a[1, ::2, None, -1], lambda a: a[1, ::2, None, -1],
     lambda: (f32(3, 5, 4),)),
    ("reverse_slice", lambda a: a[::-1, 1:3], lambda a: a[::-1, 1:3], lambda: (f32(4, 5),)),
    ("ellipsis", lambda a: a[..., 1], lambda a: a[..., 1], lambda: (f32(2, 3, 4),)),
    ("int_array_index", lambda a, i: a[i], lambda a, i: a[i], lambda: (f32(5, 3), ints(2, 3))),
    ("mixed_index", lambda a, i: a[:, i, 1], lambda a, i: a[:, i, 1],
     lambda: (f32(2, 5, 3), ints(4))),
    ("nonadjacent_index", lambda a, i, j: a[i, :, j], lambda a, i, j: a[i, :, j],
     lambda: (f32(4, 2, 3), ints(5, high=4), ints(5, high=3))),
    ("negative_index", lambda a: a[np.array([-1, 0])], lambda a: a[np.array([-1, 0])],
     lambda: (f32(3, 2),)),
    ("traced_index", lambda a, i: a[i], lambda a, i: a[i], lambda: (f32(4, 2), np.int32(2))),
    ("at_set", lambda a: a.at[1, 2].set(5.0), lambda a: _np_set(a, (1, 2), 5.0),
     lambda: (f32(3, 4),)),
    ("at_add_slice", lambda a, b: a.at[:, 1:3].add(b),
     lambda a, b: _np_add(a, (slice(None), slice(1, 3)), b), lambda: (f32(3, 4), f32(3, 2))),
    ("at_add_indices", lambda a, i, b: a.at[i].add(b), lambda a, i, b: _np_add_at(a, i, b),
     lambda: (f32(5, 2), ints(6), f32(6, 2))),
    ("at_set_indices", lambda a, i: a.at[i, 1].set(0.0), lambda a, i: _np_set(a, (i, 1), 0.0),
     lambda: (f32(5, 3), np.array([0, 3], np.int32))),
    ("at_max", lambda a, i, b: a.at[i].max(b), lambda a, i, b: _np_max_at(a, i, b),
     lambda: (f32(5), ints(4), f32(4))),
    ("take", lambda a, i: xnp.take(a, i, axis=1), lambda a, i: np.take(a, i, axis=1),
     lambda: (f32(2, 5), ints(3))),
    ("take_along_axis", lambda a, i: xnp.take_along_axis(a, i, axis=1),
     lambda a, i: np.take_along_axis(a, i, axis=1), lambda: (f32(3, 5), ints(3, 2))),
    ("creation", lambda: xnp.zeros((2, 3)) + xnp.ones((2, 3), xnp.float32) * 2.0
     + xnp.full((2, 3), 0.5), lambda: np.full((2, 3), 2.5, np.float32), lambda: ()),
    ("arange", lambda: xnp.arange(2, 11, 3), lambda: np.arange(2, 11, 3).astype(np.int32),
     lambda: ()),
    ("arange_float", lambda: xnp.arange(0.0, 1.0, 0.25),
     lambda: np.arange(0.0, 1.0, 0.25, dtype=np.float32), lambda: ()),
    ("eye", lambda: xnp.eye(3, 4, k=1), lambda: np.eye(3, 4, k=1, dtype=np.float32),
     lambda: ()),
    ("like", lambda a: xnp.zeros_like(a) + xnp.ones_like(a) + xnp.full_like(a, 2.0),
     lambda a: np.full_like(a, 3.0), lambda: (f32(2, 2),)),
    ("astype", lambda a: (a * 3.0).astype(xnp.int32), lambda a: (a * 3).astype(np.int32),
     lambda: (f32(5),)),
    ("astype_bool", lambda a: a.astype(bool), lambda a: a.astype(bool), lambda: (ints(6),)),
    ("cumsum", lambda a: xnp.cumsum(a, axis=1), lambda a: np.cumsum(a, axis=1),
     lambda: (f32(2, 5),)),
    ("sort", lambda a: xnp.sort(a, axis=0), lambda a: np.sort(a, axis=0), lambda: (f32(5, 3),)),
    ("argsort", lambda a: xnp.argsort(a), lambda a: np.argsort(a, kind="stable").astype(np.int32),
     lambda: (f32(3, 6),)),
    ("pad", lambda a: xnp.pad(a, ((1, 2), (0, 1)), constant_values=-1.0),
     lambda a: np.pad(a, ((1, 2), (0, 1)), constant_values=-1.0), lambda: (f32(2, 3),)),
    ("triu_tril", lambda a: xnp.triu(a, 1) - xnp.tril(a, -1),
     lambda a: np.triu(a, 1) - np.tril(a, -1), lambda: (f32(2, 4, 4),)),
    ("flip_repeat_tile", lambda a: xnp.flip(a, 0) + xnp.repeat(a[:, :1], 3, axis=1)
     + xnp.tile(a[:1], (2, 1)), lambda a: np.flip(a, 0) + np.repeat(a[:, :1], 3, axis=1)
     + np.tile(a[:1], (2, 1)), lambda: (f32(2, 3),)),
    # nn
    ("relu_gelu_silu", lambda a: nn.relu(a) + nn.gelu(a) + nn.silu(a) + nn.gelu(a, False),
     lambda a: (np.maximum(a, 0) + 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi)
                                                          * (a + 0.044715 * a ** 3)))
                + a / (1 + np.exp(-a)) + 0.5 * a * (1 + _erf(a / np.sqrt(2)))),
     lambda: (f32(6),)),
    ("softmax", lambda a: nn.softmax(a, axis=0), lambda a: _softmax(a, 0), lambda: (f32(4, 3),)),
    ("log_softmax", nn.log_softmax, lambda a: np.log(_softmax(a)), lambda: (f32(3, 5),)),
    ("logsumexp", lambda a: nn.logsumexp(a, axis=1),
     lambda a: np.log(np.exp(a).sum(1)), lambda: (f32(3, 5),)),
    ("layer_norm", lambda a, g, b: nn.layer_norm(a, g, b),
     lambda a, g, b: (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
     * g + b, lambda: (f32(3, 8), f32(8), f32(8))),
    ("rms_norm", lambda a, g: nn.rms_norm(a, g),
     lambda a, g: a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6) * g,
     lambda: (f32(3, 8), f32(8))),
    ("one_hot", lambda i: nn.one_hot(i, 5), lambda i: np.eye(5, dtype=np.float32)[i],
     lambda: (ints(2, 3),)),
    ("cross_entropy", lambda z, i: nn.softmax_cross_entropy_with_integer_labels(z, i),
     lambda z, i: -np.log(_softmax(z))[np.arange(4), i], lambda: (f32(4, 5), ints(4))),
    # lax
    ("dot_general", lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
     lambda a, b: np.einsum("bij,bjk->bik", a, b), lambda: (f32(2, 3, 4), f32(2, 4, 5))),
    ("conv", lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
     lambda x, w: _np_conv_same(x, w), lambda: (f32(1, 2, 5, 5), f32(3, 2, 3, 3))),
    ("max_pool", lambda x: lax.max_pool(x, (1, 2, 2), (1, 2, 2)),
     lambda x: x.reshape(2, 2, 2, 3, 2).max((2, 4)), lambda: (f32(2, 4, 6),)),
    ("avg_pool", lambda x: lax.avg_pool(x, (1, 2, 2), (1, 2, 2)),
     lambda x: x.reshape(2, 2, 2, 3, 2).mean((2, 4)), lambda: (f32(2, 4, 6),)),
    ("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 2)),
     lambda x, i: x[i:i + 2, 1:3], lambda: (f32(4, 4), np.int32(1))),
    ("dynamic_update_slice", lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)),
     lambda x, u, i: _np_set(x, (slice(i, i + 2), slice(0, 2)), u),
     lambda: (f32(4, 3), f32(2, 2), np.int32(2))),
    ("select", lambda c, a, b: lax.select(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b),
     lambda: (f32(3), f32(3), f32(3))),
    ("top_k", lambda x: lax.top_k(x, 2), lambda x: (np.sort(x, -1)[:, ::-1][:, :2],
                                                    np.argsort(-x, -1)[:, :2].astype(np.int32)),
     lambda: (f32(3, 5),)),
]


def _np_set(a, index, value):
    a = a.copy()
    a[index] = value
    return a


def _np_add(a, index, value):
    a = a.copy()
    a[index] += value
    return a


def _np_add_at(a, i, b):
    a = a.copy()
    np.add.at(a, i, b)
    return a


def _np_max_at(a, i, b):
    a = a.copy()
    np.maximum.at(a, i, b)
    return a


def _np_conv_same(x, w):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    padded = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    out = np.zeros((n, o, h, wd), np.float32)
    for i in range(h):
        for j in range(wd):
            out[:, :, i, j] = np.einsum("ncij,ocij->no", padded[:, :, i:i + kh, j:j + kw], w)
    return out


def _check(actual, expected):
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _check(a, e)
        return
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype == np.float64 and actual.dtype == np.float32:
        expected = expected.astype(np.float32)  # numpy promoted through a float64 constant
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=2e-5)
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("name,fn,reference,make_args", CASES, ids=[c[0] for c in CASES])
def test_against_numpy_under_jit(name, fn, reference, make_args):
    args = make_args()
    _check(xs.jit(fn)(*args), reference(*args))


@pytest.mark.parametrize("name", ["add_broadcast", "matmul", "int_array_index", "at_add_indices",
                                  "softmax", "argsort"])
def test_eager_matches_jit(name):
    _, fn, reference, make_args = next(c for c in CASES if c[0] == name)
    args = make_args()
    _check(fn(*[xnp.asarray(a) for a in args]), reference(*args))


def test_weak_types_keep_array_dtype():
    x = xnp.asarray(np.ones(3, np.float16))
    assert (x * 2.0).dtype == np.float16
    assert (xnp.asarray(np.ones(2, np.int32)) * 2.5).dtype == np.float32
    # float64 is narrowed to f32 unless x64 is on, as in JAX
    assert (xnp.asarray(np.ones(2, np.float64)) + np.ones(2, np.float32)).dtype == np.float32
    with xs.config.override(enable_x64=True):
        assert (xnp.asarray(np.ones(2, np.float64)) + np.ones(2, np.float32)).dtype == np.float64
    assert xnp.asarray(3).dtype == np.int32 and xnp.asarray(1.5).dtype == np.float32


def test_errors_are_clear():
    with pytest.raises(Exception, match="broadcast"):
        xnp.add(np.ones((2, 3), np.float32), np.ones((4,), np.float32))
    with pytest.raises(Exception, match="cannot reshape"):
        xnp.reshape(np.ones(6, np.float32), (4, -1))
    with pytest.raises(Exception, match="truth value"):
        xs.jit(lambda x: 1.0 if x > 0 else 0.0)(np.float32(1.0))


def unit(*shape):
    return (RNG.random(shape) * 1.8 - 0.9).astype(np.float32)


# Functions added with the QA round: (name, xla_spmd function, numpy reference, arguments).
MATH_CASES = [
    ("arctan", xnp.arctan, np.arctan, lambda: (f32(7),)),
    ("arcsin", xnp.arcsin, np.arcsin, lambda: (unit(7),)),
    ("arccos", xnp.arccos, np.arccos, lambda: (unit(7),)),
    ("sinh", xnp.sinh, np.sinh, lambda: (f32(7) * 3,)),
    ("cosh", xnp.cosh, np.cosh, lambda: (f32(7) * 3,)),
    ("arctanh", xnp.arctanh, np.arctanh, lambda: (unit(7),)),
    ("arcsinh", xnp.arcsinh, np.arcsinh, lambda: (f32(7) * 5,)),
    ("arccosh", xnp.arccosh, np.arccosh, lambda: (pos(7) + 1.0,)),
    ("log10", xnp.log10, np.log10, lambda: (pos(7),)),
    ("log2_f32", xnp.log2, np.log2, lambda: (pos(7),)),
    ("exp2_f32", xnp.exp2, np.exp2, lambda: (f32(7),)),
    ("isnan", xnp.isnan, np.isnan, lambda: (np.float32([1, np.nan, np.inf, -np.inf, 0]),)),
    ("isinf", xnp.isinf, np.isinf, lambda: (np.float32([1, np.nan, np.inf, -np.inf, 0]),)),
    ("isnan_int", xnp.isnan, np.isnan, lambda: (ints(4),)),
    ("sign", xnp.sign, np.sign, lambda: (np.float32([-2, 0, 3.5]),)),
    ("floor_divide_f32", xnp.floor_divide, np.floor_divide, lambda: (f32(6) * 5, pos(6))),
    ("mod_f32", xnp.mod, np.mod, lambda: (f32(6) * 5, pos(6))),
    ("cumprod_axis", lambda a: xnp.cumprod(a, axis=1), lambda a: np.cumprod(a, axis=1),
     lambda: (f32(3, 7),)),
    ("cumprod_flat", xnp.cumprod, np.cumprod, lambda: (f32(2, 3),)),
    ("cumprod_int", lambda a: xnp.cumprod(a, axis=0),
     lambda a: np.cumprod(a, axis=0).astype(np.int32), lambda: (ints(5, 2),)),
    ("roll_flat", lambda a: xnp.roll(a, 5), lambda a: np.roll(a, 5), lambda: (f32(3, 4),)),
    ("roll_axes", lambda a: xnp.roll(a, (1, -3), (0, 1)), lambda a: np.roll(a, (1, -3), (0, 1)),
     lambda: (f32(3, 4),)),
    ("isclose", lambda a, b: xnp.isclose(a, b), np.isclose,
     lambda: (np.float32([1, np.inf, np.nan, 1, -np.inf]),
              np.float32([1 + 1e-7, np.inf, np.nan, 2, np.inf]))),
    ("isclose_equal_nan", lambda a, b: xnp.isclose(a, b, equal_nan=True),
     lambda a, b: np.isclose(a, b, equal_nan=True),
     lambda: (np.float32([np.nan, 1]), np.float32([np.nan, np.nan]))),
    ("allclose_true", xnp.allclose, lambda a, b: np.bool_(np.allclose(a, b)),
     lambda: (np.float32([1, 2]), np.float32([1, 2 + 1e-6]))),
    ("allclose_false", xnp.allclose, lambda a, b: np.bool_(np.allclose(a, b)),
     lambda: (np.float32([1, 2]), np.float32([1, 2.1]))),
    ("norm_flat", xnp.linalg.norm, np.linalg.norm, lambda: (f32(2, 3, 4),)),
    ("norm_vector_ords", lambda a: [xnp.linalg.norm(a, o) for o in (1, 2, 3, np.inf, -np.inf, 0)],
     lambda a: [np.linalg.norm(a, o) for o in (1, 2, 3, np.inf, -np.inf, 0)],
     lambda: (f32(6),)),
    ("norm_matrix_ords", lambda a: [xnp.linalg.norm(a, o) for o in ("fro", 1, -1, np.inf,
                                                                     -np.inf)],
     lambda a: [np.linalg.norm(a, o) for o in ("fro", 1, -1, np.inf, -np.inf)],
     lambda: (f32(3, 4),)),
    ("norm_axis_keepdims", lambda a: xnp.linalg.norm(a, axis=1, keepdims=True),
     lambda a: np.linalg.norm(a, axis=1, keepdims=True), lambda: (f32(3, 4),)),
    ("norm_two_axes", lambda a: xnp.linalg.norm(a, 1, axis=(0, 2)),
     lambda a: np.linalg.norm(a, 1, axis=(0, 2)), lambda: (f32(3, 2, 4),)),
    ("argmax_keepdims_flat", lambda a: xnp.argmax(a, keepdims=True),
     lambda a: np.argmax(a, keepdims=True).astype(np.int32), lambda: (f32(3, 4),)),
    ("argmin_keepdims_flat", lambda a: xnp.argmin(a, keepdims=True),
     lambda a: np.argmin(a, keepdims=True).astype(np.int32), lambda: (f32(2, 3, 4),)),
    ("concatenate_flat", lambda a, b: xnp.concatenate([a, b], axis=None),
     lambda a, b: np.concatenate([a, b], axis=None), lambda: (f32(2, 3), f32(4))),
    ("logsumexp_all", nn.logsumexp, lambda a: np.log(np.exp(a).sum()), lambda: (f32(3, 5),)),
    ("logsumexp_keepdims", lambda a: nn.logsumexp(a, keepdims=True),
     lambda a: np.log(np.exp(a).sum(keepdims=True)), lambda: (f32(3, 5),)),
    ("max_pool_valid", lambda x: lax.max_pool(x, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
     lambda x: x.reshape(1, 2, 2, 2, 3, 2).max((3, 5)), lambda: (f32(1, 2, 4, 6),)),
    ("avg_pool_same", lambda x: lax.avg_pool(x, (1, 3), (1, 2), "SAME"),
     lambda x: np.stack([np.pad(x, ((0, 0), (0, 1)))[:, j:j + 3].sum(1) / 3
                         for j in range(0, 6, 2)], 1), lambda: (f32(2, 6),)),
    ("reduce_window_max_same", lambda x: lax.reduce_window(x, -np.inf, lax.max, (3, 3), (2, 2),
                                                           "SAME"),
     lambda x: _np_window(x, np.max, -np.inf, (3, 3), (2, 2), ((0, 1), (0, 1))),
     lambda: (f32(4, 4),)),
    ("reduce_window_add_lambda", lambda x: lax.reduce_window(x, 0.0, lambda a, b: a + b, (2,),
                                                             (1,), "VALID"),
     lambda x: x[:-1] + x[1:], lambda: (f32(6),)),
    ("reduce_window_min_int", lambda x: lax.reduce_window(x, np.iinfo(np.int32).max, lax.min,
                                                          (2, 3), (2, 1), [(0, 0), (1, 1)]),
     lambda x: _np_window(x, np.min, np.iinfo(np.int32).max, (2, 3), (2, 1), ((0, 0), (1, 1))),
     lambda: (ints(4, 5, high=50),)),
    ("reduce_window_mul", lambda x: lax.reduce_window(x, 1.0, lax.mul, (2,), (2,), "VALID"),
     lambda x: x[0::2] * x[1::2], lambda: (f32(6),)),
]


def _np_window(x, reduce, init, window, strides, padding):
    padded = np.pad(x, padding, constant_values=init)
    out_shape = [(n - w) // s + 1 for n, w, s in zip(padded.shape, window, strides)]
    out = np.empty(out_shape, x.dtype)
    for index in np.ndindex(*out_shape):
        block = padded[tuple(slice(i * s, i * s + w) for i, s, w in zip(index, strides, window))]
        out[index] = reduce(block)
    return out


@pytest.mark.parametrize("name,fn,reference,make_args", MATH_CASES,
                         ids=[c[0] for c in MATH_CASES])
def test_added_functions_against_numpy(name, fn, reference, make_args):
    """Under jit and eagerly, with numpy's dtype (float32 stays float32)."""
    args = make_args()
    expected = reference(*args)
    for actual in (xs.jit(fn)(*args), fn(*args)):
        _check(actual, expected)


def test_eager_results_are_ndarrays():
    a = np.array([[1.0, 0.0], [2.0, 3.0]], np.float32)
    for value, expected in ((xnp.any(a), True), (xnp.all(a), False), (xnp.sum(a), 6.0),
                            (xnp.argmax(a), 3)):
        array = np.asarray(value)
        assert isinstance(array, np.ndarray) and array.shape == () and array == expected


def test_reduce_window_rejects_a_non_function_computation():
    with pytest.raises(Exception, match="binary function"):
        lax.reduce_window(np.ones(4, np.float32), 0.0, "add", (2,), (1,), "VALID")
