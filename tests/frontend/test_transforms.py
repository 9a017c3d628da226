"""Transforms as JAX defines them (issue 16): vmap, jvp/linearize, jacfwd/jacrev/hessian,
remat, custom_vjp/custom_jvp, eval_shape, device_get.

Oracles: numpy (per-example loops, analytic derivatives), central finite differences in
float64, and for every transform the same program under ``xs.jit`` with inputs sharded on a
mesh (partitioned == unpartitioned)."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P, config

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6)).astype(np.float32)
W = RNG.standard_normal((6, 3)).astype(np.float32)
IDX = np.array([5, 0, 3, 2], np.int32)


def _loop(f, *args, in_axes=0):
    """The per-example oracle: f on each slice, stacked (numpy)."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [np.asarray(f(*[a if ax is None else np.take(a, b, axis=ax)
                           for a, ax in zip(args, axes)])) for b in range(size)]
    return np.stack(outs)


def _scan_cumsum(v):
    return lax.scan(lambda c, x: (c + x, c * x), 0.0, v)


# (name, function, arguments, in_axes): each is checked against the per-example loop.
VMAP_CASES = [
    ("elementwise", lambda v: xnp.tanh(v) * 2.0 + 1.0, (X,), 0),
    ("matvec_unbatched_weights", lambda v, w: v @ w, (X, W), (0, None)),
    ("weights_batched_only", lambda v, w: v @ w, (X[0], np.stack([W, -W])), (None, 0)),
    ("both_batched_dot", lambda v, w: xnp.dot(v, w), (X, X), (0, 0)),
    ("axis1", lambda v: xnp.sum(v * v), (X,), 1),
    ("reductions", lambda v: xnp.stack([xnp.max(v), xnp.argmax(v).astype(xnp.float32)]),
     (X,), 0),
    ("traced_index", lambda v, i: v[i], (X, IDX), (0, 0)),
    ("index_unbatched_array", lambda v, i: v[i, 1:4],
     (np.stack([X, -X]), np.array([1, 0], np.int32)), (None, 0)),
    ("dynamic_update", lambda v, i: xnp.asarray(v).at[i].set(7.0), (X, IDX), (0, 0)),
    ("scatter_add", lambda v, i: xnp.asarray(v).at[xnp.array([1, 1, 4])].add(i.astype(xnp.float32)),
     (X, IDX), (0, 0)),
    ("dynamic_slice", lambda v, i: lax.dynamic_slice(v, (i,), (3,)), (X, IDX), (0, 0)),
    ("gather_take", lambda v, ids: xnp.take(v, ids), (X, np.array([[0, 5], [1, 1], [2, 3],
                                                                  [4, 4]], np.int32)), (0, 0)),
    ("concat_pad", lambda v, c: xnp.concatenate([v, lax.pad(v[:2], c, [(1, 1, 0)])]),
     (X, X[:, 0]), (0, 0)),
    ("sort_cumsum", lambda v: xnp.cumsum(xnp.sort(v)), (X,), 0),
    ("softmax", lambda v: xs.nn.softmax(v), (X,), 0),
    ("while_data_dependent", lambda v: lax.while_loop(lambda c: c[0] < c[1],
                                                      lambda c: (c[0] + 1.0, c[1]),
                                                      (xnp.float32(0.0), xnp.sum(v * v)))[0],
     (X,), 0),
    ("fori", lambda v: lax.fori_loop(0, 3, lambda i, c: c * v + i, v), (X,), 0),
    ("cond_batched_pred", lambda v: lax.cond(v[0] > 0, lambda a: a * 2.0, lambda a: -a, v),
     (X,), 0),
    ("cond_unbatched_pred", lambda v, p: lax.cond(p, lambda a: a * 2.0, lambda a: -a, v),
     (X, np.bool_(True)), (0, None)),
    ("scan", lambda v: _scan_cumsum(v)[1], (X,), 0),
    ("max_pool", lambda v: lax.reduce_window(v, -np.inf, lax.max, (2,), (1,), "VALID"),
     (X,), 0),
    ("reshape_transpose", lambda v: xnp.reshape(v, (2, 3)).T, (X,), 0),
    ("broadcast_rng_free", lambda v: xnp.outer(v, v), (X,), 0),
    ("conv", lambda v, k: lax.conv_general_dilated(xnp.reshape(v, (1, 1, 2, 3)), k, (1, 1),
                                                   "SAME"),
     (X, RNG.standard_normal((2, 1, 2, 2)).astype(np.float32)), (0, None)),
]


@pytest.mark.parametrize("name, function, args, in_axes", VMAP_CASES,
                         ids=[c[0] for c in VMAP_CASES])
def test_vmap_equals_the_per_example_loop(name, function, args, in_axes):
    got = np.asarray(xs.vmap(function, in_axes=in_axes)(*args))
    expected = _loop(function, *args, in_axes=in_axes)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_vmap_against_numpy_and_axes():
    np.testing.assert_allclose(np.asarray(xs.vmap(lambda v, w: v @ w, (0, None))(X, W)),
                               X @ W, rtol=1e-5)
    # out_axes moves the mapped axis; in_axes as a dict prefix; an unmapped output
    got = xs.vmap(lambda d: {"s": d["a"] * 2.0, "c": xnp.float32(1.0)},
                  in_axes=({"a": 1},), out_axes={"s": 1, "c": None})({"a": X})
    np.testing.assert_allclose(np.asarray(got["s"]), X * 2.0)
    assert np.asarray(got["c"]).shape == ()
    nested = xs.vmap(xs.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))
    np.testing.assert_allclose(np.asarray(nested(X[0], X[:, 0])), X[:, 0][:, None] * X[0])


def test_vmap_errors_name_the_sizes():
    with pytest.raises(xs.errors.XlaSpmdError, match="inconsistent sizes"):
        xs.vmap(lambda a, b: a + b)(X, X[:3])
    with pytest.raises(xs.errors.XlaSpmdError, match="in_axes"):
        xs.vmap(lambda a: a, in_axes=2)(X)


def _f(v):
    return xnp.sin(v) * v[0] + xnp.tanh(v @ W)[1]


def _f_np(v):
    return np.sin(v) * v[0] + np.tanh(v @ W.astype(np.float64))[1]


def _fd_jacobian(f, v, eps=1e-6):
    v = v.astype(np.float64)
    columns = []
    for j in range(v.size):
        e = np.zeros_like(v)
        e[j] = eps
        columns.append((f(v + e) - f(v - e)) / (2 * eps))
    return np.stack(columns, axis=-1)


def test_jvp_linearize_and_jacobians_against_finite_differences():
    v = X[1]
    expected = _fd_jacobian(_f_np, v)
    t = RNG.standard_normal(6).astype(np.float32)
    y, tangent = xs.jvp(_f, (v,), (t,))
    np.testing.assert_allclose(np.asarray(y), _f_np(v), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(tangent), expected @ t, rtol=1e-4, atol=1e-4)
    y2, f_jvp = xs.linearize(_f, v)
    np.testing.assert_allclose(np.asarray(f_jvp(t)), expected @ t, rtol=1e-4, atol=1e-4)
    for jac in (xs.jacfwd, xs.jacrev):
        np.testing.assert_allclose(np.asarray(jac(_f)(v)), expected, rtol=1e-4, atol=1e-4)


def test_hessian_and_pytree_jacobians():
    def g(params, v):
        return xnp.sum(xnp.tanh(v @ params["w"]) * params["b"])
    params = {"w": W, "b": np.float32(1.5)}
    v = X[2]
    hess = np.asarray(xs.hessian(g, argnums=1)(params, v))
    expected = _fd_jacobian(lambda u: _fd_jacobian(
        lambda z: np.array([np.sum(np.tanh(z @ W) * 1.5)]), u, 1e-4)[0], v, 1e-4)
    np.testing.assert_allclose(hess, expected, rtol=1e-2, atol=1e-2)
    jac = xs.jacrev(g)(params, v)
    assert set(jac) == {"w", "b"} and jac["w"].shape == W.shape
    np.testing.assert_allclose(np.asarray(jac["b"]), np.sum(np.tanh(v @ W)), rtol=1e-5)
    jf = xs.jacfwd(g, argnums=(0, 1))(params, v)
    np.testing.assert_allclose(np.asarray(jf[0]["w"]), np.asarray(jac["w"]), rtol=1e-4,
                               atol=1e-5)


def test_remat_keeps_values_and_gradients():
    def loss(w):
        return xnp.sum(xnp.tanh(X @ w) ** 2)
    expected = np.asarray(xs.grad(loss)(W))
    for policy in (None, xs.checkpoint_policies.nothing_saveable,
                   xs.checkpoint_policies.dots_saveable,
                   xs.checkpoint_policies.everything_saveable):
        remat = xs.remat(loss, policy=policy)
        np.testing.assert_allclose(np.asarray(xs.grad(remat)(W)), expected, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(xs.jit(xs.grad(remat))(W)), expected, rtol=1e-5)
    text = xs.jit(xs.grad(xs.remat(loss))).lower(W).as_text(dialect="hlo")
    assert "xla_spmd.remat" in text  # the backward pass calls the recomputed forward


def test_custom_vjp_and_custom_jvp_rules_are_used():
    @xs.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (xnp.clip(g, -0.5, 0.5),))
    g = xs.grad(lambda x: xnp.sum(clip_gradient(x) * 3.0))(X[0])
    np.testing.assert_array_equal(np.asarray(g), np.full(6, 0.5, np.float32))

    @xs.custom_jvp
    def log1pexp(x):
        return xnp.log(1.0 + xnp.exp(x))

    @log1pexp.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + xnp.exp(x)))

    big = np.float32(100.0)  # the naive derivative is nan here; the rule's is 1
    assert float(xs.grad(log1pexp)(big)) == 1.0
    _, t = xs.jvp(log1pexp, (np.float32(0.0),), (np.float32(2.0),))
    assert float(t) == pytest.approx(1.0)
    np.testing.assert_allclose(np.asarray(xs.jit(xs.grad(lambda x: xnp.sum(log1pexp(x))))(X[0])),
                               1.0 / (1.0 + np.exp(-X[0])), rtol=1e-5)


def test_eval_shape_device_get_block_until_ready():
    out = xs.eval_shape(lambda p, v: {"y": v @ p, "n": xnp.sum(v)},
                        xs.ShapeDtypeStruct((6, 3), np.float32), X)
    assert out["y"] == xs.ShapeDtypeStruct((4, 3), np.float32)
    assert out["n"].shape == () and out["n"].dtype == np.float32
    mesh = xs.make_mesh({"d": 4})
    a = xs.device_put(X, NamedSharding(mesh, P("d")))
    got = xs.device_get({"a": xs.block_until_ready(a), "k": 3})
    assert isinstance(got["a"], np.ndarray) and got["k"] == 3
    np.testing.assert_array_equal(got["a"], X)


def test_transforms_under_jit_partitioned_equal_unpartitioned():
    """The central property: each transform under jit with sharded inputs on a mesh gives
    the unpartitioned values."""
    mesh = xs.make_mesh({"a": 2, "b": 2}, axis_types=xs.AxisType.Auto)  # propagation
    rows, cols = NamedSharding(mesh, P("a", "b")), NamedSharding(mesh, P("b"))
    x8 = RNG.standard_normal((8, 6)).astype(np.float32)

    def batch_loss(w, x):
        return xnp.mean(xs.vmap(lambda r: xnp.sum(xnp.tanh(r @ w)))(x))

    programs = [
        (lambda w, x: xs.vmap(lambda r: xnp.tanh(r @ w))(x), (W, x8)),
        (lambda w, x: xs.jvp(lambda u: xnp.tanh(x @ u), (w,), (xnp.ones_like(w),))[1],
         (W, x8)),
        (lambda w, x: xs.jacrev(lambda u: xnp.sum(xnp.tanh(x @ u), axis=0))(w), (W, x8)),
        (lambda w, x: xs.jacfwd(lambda u: xnp.sum(xnp.tanh(x @ u), axis=0))(w), (W, x8)),
        (lambda w, x: xs.hessian(lambda u: xnp.sum(xnp.tanh(x @ u)))(w[:, 0]), (W, x8)),
        (lambda w, x: xs.grad(xs.remat(batch_loss))(w, x), (W, x8)),
        (lambda w, x: xs.vmap(lambda r, i: r[i] * w[0, 0])(x, xnp.arange(8) % 6), (W, x8)),
    ]
    for k, (program, args) in enumerate(programs):
        expected = np.asarray(program(*args))
        sharded = xs.jit(program, in_shardings=(cols, rows))
        np.testing.assert_allclose(np.asarray(sharded(*args)), expected, rtol=1e-4,
                                   atol=1e-5, err_msg=f"program {k}")


def test_jvp_in_float64_matches_finite_differences_tightly():
    with config.override(enable_x64=True):
        v = X[1].astype(np.float64)
        t = np.linspace(-1.0, 1.0, 6)
        _, tangent = xs.jvp(lambda u: xnp.sin(u) * u[0] + xnp.tanh(u @ W.astype(np.float64))[1],
                            (v,), (t,))
        np.testing.assert_allclose(np.asarray(tangent), _fd_jacobian(_f_np, v) @ t,
                                   rtol=1e-7, atol=1e-8)
