"""Every VJP rule against finite differences (float64), along random directions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.nn as nn
import xla_spmd.numpy as xnp
from xla_spmd.frontend.autodiff import VJP
from xla_spmd.mesh import make_mesh
from xla_spmd.sharding import NamedSharding, P

RNG = np.random.default_rng(1)
pytestmark = pytest.mark.usefixtures("x64")  # finite differences in float64


def r(*shape):
    return RNG.standard_normal(shape)


def rpos(*shape):
    return RNG.random(shape) + 0.5


def check_grads(fn, args, argnums=None, eps=1e-6, rtol=1e-5, atol=1e-7):
    """<grad f(x), v> equals the central difference of f along a random direction v."""
    argnums = tuple(range(len(args))) if argnums is None else argnums
    scalar = lambda *a: xnp.sum(xnp.sin(fn(*a)))  # noqa: E731 (a non-trivial cotangent)
    grads = xs.jit(xs.grad(scalar, argnums=argnums))(*args)
    directions = [r(*np.shape(args[i])) for i in argnums]
    analytic = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, directions))
    f = xs.jit(scalar)

    def shifted(sign):
        moved = list(args)
        for i, d in zip(argnums, directions):
            moved[i] = args[i] + sign * eps * d
        return float(f(*moved))
    numeric = (shifted(1) - shifted(-1)) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol)


CASES = [
    ("arith", lambda a, b: a * b + a / (b * b + 1.0) - b, (r(3, 4), r(3, 4))),
    ("broadcast_ops", lambda a, b: a * b - b, (r(3, 4), r(4))),
    ("unary", lambda a: xnp.exp(a) + xnp.log(a) + xnp.sqrt(a) + xnp.rsqrt(a) + xnp.tanh(a)
     + xnp.log1p(a) + xnp.expm1(a) + xnp.sigmoid(a) + xnp.cbrt(a), (rpos(5),)),
    ("trig_erf_abs", lambda a: xnp.sin(a) * xnp.cos(a) + xnp.tan(a * 0.3) + xnp.erf(a)
     + xnp.abs(a), (r(5),)),
    ("power", lambda a, b: a ** b + a ** 3, (rpos(4), r(4))),
    ("atan2_rem", lambda a, b: xnp.arctan2(a, b) + a % 0.7, (r(4), rpos(4))),
    ("max_min_clip", lambda a, b: xnp.maximum(a, b) * xnp.minimum(a, 0.3) + xnp.clip(a, -.5, .5),
     (r(6), r(6))),
    ("where_select", lambda a, b: xnp.where(a > b, a * a, b), (r(5), r(5))),
    ("matmul", lambda a, b: a @ b, (r(3, 4), r(4, 2))),
    ("matmul_batch", lambda a, b: xnp.matmul(a, b), (r(2, 3, 4), r(2, 4, 5))),
    ("einsum", lambda a, b: xnp.einsum("bqd,bkd->bqk", a, b), (r(2, 3, 4), r(2, 5, 4))),
    ("dot_general_odd", lambda a, b: lax.dot_general(a, b, (((0, 2), (3, 1)), ((1,), (0,)))),
     (r(2, 3, 4, 5), r(3, 4, 6, 2))),
    ("reductions", lambda a: xnp.sum(a, 0) + xnp.mean(a, 1)[0] + xnp.max(a, 1)[1]
     + xnp.min(a) + xnp.prod(a, 1)[0], (r(3, 4),)),
    ("reshape_transpose", lambda a: xnp.transpose(xnp.reshape(a, (4, 3, 2)), (2, 0, 1))[0],
     (r(2, 12),)),
    ("slice_pad_concat", lambda a: xnp.concatenate([a[1:, ::2], xnp.pad(a[:1, 1:], 1)[:, :3]], 0),
     (r(4, 5),)),
    ("negative_pad", lambda a: lax.pad(a, np.float64(0.5), [(-1, 2, 1), (1, -1, 0)]),
     (r(3, 4),)),
    ("reverse_expand_squeeze", lambda a: xnp.squeeze(xnp.flip(xnp.expand_dims(a, 0), 1)),
     (r(3, 2),)),
    ("gather", lambda a: a[np.array([[0, 2], [2, 2]])], (r(3, 4),)),
    ("take_along_axis", lambda a: xnp.take_along_axis(a, np.array([[1, 0], [2, 2]]), 1),
     (r(2, 3),)),
    ("scatter_add", lambda a, b: a.at[np.array([1, 1, 3])].add(b), (r(4, 2), r(3, 2))),
    ("scatter_set", lambda a, b: a.at[np.array([0, 2]), 1].set(b), (r(4, 3), r(2))),
    ("at_basic", lambda a, b: a.at[1:3, 0].add(b) * a, (r(4, 2), r(2))),
    ("dynamic_slice", lambda a, u: lax.dynamic_update_slice(a, u * 2.0, (1, 0))
     + lax.dynamic_slice(a, (0, 1), (4, 2)).sum(), (r(4, 3), r(2, 3))),
    ("cumsum", lambda a: xnp.cumsum(a, axis=1), (r(2, 5),)),
    ("sort", lambda a: xnp.sort(a, axis=1) * np.arange(4.0), (r(3, 4),)),
    ("top_k", lambda a: lax.top_k(a, 2)[0] * np.array([1.0, 3.0]), (r(3, 5),)),
    ("conv_same", lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
     (r(2, 2, 5, 5), r(3, 2, 3, 3))),
    ("conv_strided_dilated", lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), [(1, 0), (2, 1)], lhs_dilation=(1, 2), rhs_dilation=(2, 1),
        dimension_numbers=("NHWC", "HWIO", "NHWC")), (r(1, 7, 4, 2), r(2, 3, 2, 3))),
    ("max_pool", lambda x: lax.max_pool(x, (1, 2, 2), (1, 2, 1), [(0, 0), (0, 1), (1, 0)]),
     (r(2, 4, 5),)),
    ("avg_pool", lambda x: lax.avg_pool(x, (2, 3), (1, 2), [(1, 0), (0, 2)]), (r(4, 5),)),
    ("softmax_logsumexp", lambda a: nn.softmax(a) + nn.log_softmax(a)
     * nn.logsumexp(a, axis=-1)[:, None],
     (r(3, 4),)),
    ("norms", lambda a, g, b: nn.layer_norm(a, g, b) + nn.rms_norm(a, g), (r(3, 6), r(6), r(6))),
    ("activations", lambda a: nn.gelu(a) + nn.gelu(a, False) + nn.silu(a) + nn.relu(a),
     (r(6),)),
    ("cross_entropy", lambda z: nn.softmax_cross_entropy_with_integer_labels(
        z, np.array([0, 3, 1])), (r(3, 4),)),
    ("fori_loop", lambda a, b: lax.fori_loop(0, 3, lambda i, c: xnp.tanh(c * b + a), a),
     (r(3), r(3))),
    ("scan", lambda a, xs_: lax.scan(lambda c, x: (c * x + a, xnp.sin(c)), a, xs_)[1],
     (r(2), r(4, 2))),
    ("scan_reverse", lambda a, xs_: lax.scan(lambda c, x: (c * xnp.cos(x), c), a, xs_,
                                             reverse=True)[0], (r(2), r(3, 2))),
    ("cond", lambda a, b: lax.cond(xnp.sum(a) > 100.0, lambda a, b: a * b,
                                   lambda a, b: xnp.sin(a) + b, a, b), (r(3), r(3))),
    ("switch", lambda a: lax.switch(1, [lambda x: x, lambda x: x * x * a, lambda x: -x], a),
     (r(3),)),
    ("wsc", lambda a: xs.with_sharding_constraint(
        a * 2.0, NamedSharding(make_mesh({"x": 1}), P("x"))), (r(4),)),
    ("conv_feature_groups", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", feature_group_count=2), (r(2, 4, 5, 5), r(6, 2, 3, 3))),
    ("conv_feature_groups_nhwc", lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), [(1, 0), (0, 1)], rhs_dilation=(1, 2), feature_group_count=3,
        dimension_numbers=("NHWC", "HWIO", "NHWC")), (r(1, 6, 5, 3), r(2, 2, 1, 6))),
    ("conv_batch_groups", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "VALID", batch_group_count=2), (r(4, 3, 5, 5), r(4, 3, 2, 2))),
    ("conv_batch_groups_nhwc", lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), [(1, 1), (0, 0)], lhs_dilation=(1, 2), batch_group_count=3,
        dimension_numbers=("NHWC", "HWIO", "NHWC")), (r(6, 5, 4, 2), r(2, 2, 2, 3))),
    ("argmax_value", lambda x: _max_with_index(x, 1, "max")[0], (r(3, 5),)),
    ("argmin_value_two_dims", lambda x: _max_with_index(x, (1, 2), "min")[0] * 2.0,
     (r(2, 3, 4),)),
    ("variadic_reduce_componentwise", lambda x, y: _sum_and_max(x, y), (r(4, 3), r(4, 3))),
    ("scatter_max", lambda a, b: a.at[np.array([1, 1, 3])].max(b), (r(4, 2), r(3, 2))),
    ("scatter_min", lambda a, b: a.at[np.array([2, 0, 2])].min(b), (r(4, 2), r(3, 2))),
    ("scatter_mul", lambda a, b: a.at[np.array([1, 1, 3])].multiply(b), (r(4, 2), r(3, 2))),
    ("sum_pool_base_dilation", lambda x: lax.reduce_window(
        x, 0.0, lax.add, (2, 3), (1, 2), [(1, 0), (0, 2)], base_dilation=(2, 1)), (r(4, 5),)),
    ("sum_pool_all_dilations", lambda x: lax.reduce_window(
        x, 0.0, lax.add, (2, 2), (2, 1), [(1, 0), (0, 2)], base_dilation=(2, 3),
        window_dilation=(1, 2)), (r(4, 5),)),
    ("max_pool_base_dilation", lambda x: lax.reduce_window(
        x, -np.inf, lax.max, (2, 3), (1, 2), [(1, 0), (0, 2)], base_dilation=(2, 1)), (r(4, 5),)),
    ("max_pool_window_dilation", lambda x: lax.reduce_window(
        x, -np.inf, lax.max, (2, 2), (1, 2), [(1, 0), (0, 2)], window_dilation=(2, 2)), (r(5, 6),)),
    ("min_pool_all_dilations", lambda x: lax.reduce_window(
        x, np.inf, lax.min, (2, 2), (2, 1), [(0, 1), (1, 1)], base_dilation=(1, 2),
        window_dilation=(2, 1)), (r(5, 6),)),
    ("variadic_all_reduce", lambda a, b: xs.shard_map(
        _tuple_collectives, make_mesh({"x": 1}), (P("x"), P("x")), P("x"))(a, b),
     (r(4), r(4))),
    ("nested_tuple_loop_state", lambda a, b: _nested_loop(a, b), (r(3), r(3))),
    ("inverse_trig", lambda a: xnp.arctan(a) + xnp.arcsin(a * 0.3) + xnp.arccos(a * 0.3)
     + xnp.arctanh(a * 0.3), (r(3, 4),)),
    ("hyperbolic", lambda a: xnp.sinh(a) + xnp.cosh(a) + xnp.arcsinh(a * 3.0), (r(3, 4),)),
    ("arcsinh_at_zero", xnp.arcsinh, (np.array([0.0, -1e-3, 2.0]),)),
    ("arccosh_log10_log2_exp2", lambda a: xnp.arccosh(a + 1.0) + xnp.log10(a) + xnp.log2(a)
     + xnp.exp2(a), (rpos(3, 4),)),
    ("cumprod", lambda a: xnp.cumprod(a, axis=1), (r(3, 5),)),
    ("cumprod_with_zero", xnp.cumprod, (np.array([[1.5, 0.0], [-2.0, 0.5]]),)),
    ("roll", lambda a: xnp.roll(a, (1, -2), (0, 1)) * np.arange(12.0).reshape(3, 4), (r(3, 4),)),
    ("norm", lambda a: xnp.linalg.norm(a) + xnp.linalg.norm(a, 3, axis=1)
     + xnp.linalg.norm(a, "fro", axis=(0, 1)), (r(3, 4),)),
    ("logsumexp_all", nn.logsumexp, (r(3, 4),)),
    ("reduce_window_callable", lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1),
                                                           "SAME")
     + lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "SAME"), (r(4, 5),)),
    ("max_pool_valid_string", lambda x: lax.max_pool(x, (1, 2, 2), (1, 2, 2), "VALID"),
     (r(2, 4, 6),)),
]


def _max_with_index(x, dims, kind):
    """An argmax-style variadic reduce returning (extreme value, its index)."""
    from xla_spmd.frontend import lax as flax
    from xla_spmd.frontend.numpy_reductions import _arg_reducer
    from xla_spmd.frontend.tracing import bind
    from xla_spmd.ir import F64, S32
    dims = (dims,) if isinstance(dims, int) else dims
    init = -np.inf if kind == "max" else np.inf
    out = bind("reduce", x, flax.iota(S32, x.shape, dims[-1]), flax.constant(init, F64),
               flax.constant(0, S32), dimensions=dims, to_apply=_arg_reducer(kind, F64))
    return flax.get_tuple_element(out, 0), flax.get_tuple_element(out, 1)


def _sum_and_max(x, y):
    """A variadic reduce whose outputs are independent reductions (sum of x, max of y)."""
    from xla_spmd.frontend import lax as flax
    from xla_spmd.frontend.tracing import bind
    from xla_spmd.ir import F64, ArrayShape, Builder
    b = Builder("sum_and_max")
    scalar = ArrayShape(F64, ())
    a0, a1, b0, b1 = (b.parameter(scalar, n) for n in ("a0", "a1", "b0", "b1"))
    reducer = b.build(b.tuple(b.op("add", a0, b0), b.op("maximum", a1, b1)), "sum_and_max")
    out = bind("reduce", x, y, flax.constant(0.0, F64), flax.constant(-np.inf, F64),
               dimensions=(0,), to_apply=reducer)
    return flax.get_tuple_element(out, 0) * flax.get_tuple_element(out, 1)


def _tuple_collectives(a, b):
    s, t = lax.psum((a * b, xnp.sin(a)), "x")  # one variadic all-reduce each
    m, n = lax.pmax((a, b * 2.0), "x")
    return s * t + m * n


def _nested_loop(a, b):
    """A known-trip-count while whose state is the nested tuple (x, (y, i))."""
    from xla_spmd.frontend import lax as flax
    from xla_spmd.frontend.control import trip_count_extras
    from xla_spmd.frontend.tracing import bind, finish, fresh_name, trace_computation
    from xla_spmd.ir import S32, ArrayShape, TupleShape
    state = TupleShape((a.aval, TupleShape((b.aval, ArrayShape(S32, ())))))

    def body(s):
        x, inner = flax.get_tuple_element(s, 0), flax.get_tuple_element(s, 1)
        y, i = flax.get_tuple_element(inner, 0), flax.get_tuple_element(inner, 1)
        return [flax.make_tuple(xnp.sin(x) * y, flax.make_tuple(y + x, i + 1))]

    def cond(s):
        return [flax.get_tuple_element(flax.get_tuple_element(s, 1), 1) < 3]
    body_c, cond_c = (finish(*trace_computation(fn, [state], fresh_name(name)),
                             tuple_root=False) for fn, name in ((body, "body"), (cond, "cond")))
    init = flax.make_tuple(a, flax.make_tuple(b, np.int32(0)))
    out = bind("while", init, body=body_c, condition=cond_c, extras=trip_count_extras(3))
    inner = flax.get_tuple_element(out, 1)
    return flax.get_tuple_element(out, 0) + flax.get_tuple_element(inner, 0)


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_vjp_matches_finite_differences(name, fn, args):
    check_grads(fn, args)


@settings(max_examples=6, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       axis=st.integers(0, 2), keep=st.booleans())
def test_reductions_and_broadcasting_any_shape(shape, axis, keep):
    axis = axis % len(shape)
    x = r(*shape)
    y = r(*shape[axis:])
    check_grads(lambda x, y: xnp.sum(x * y + xnp.exp(x), axis=axis, keepdims=keep)
                + xnp.max(x, axis=axis, keepdims=keep), (x, y))


@settings(max_examples=4, deadline=None)
@given(m=st.integers(1, 4), k=st.integers(1, 4), n=st.integers(1, 3))
def test_matmul_any_shape(m, k, n):
    check_grads(lambda a, b: xnp.tanh(a @ b), (r(m, k), r(k, n)))


def test_pytrees_argnums_has_aux():
    from collections import namedtuple
    Pair = namedtuple("Pair", "w b")
    params = {"layer": Pair(r(3, 2), r(2)), "scale": [r(1), None]}

    def loss(p, x):
        out = x @ p["layer"].w + p["layer"].b
        return xnp.sum(out * out) * p["scale"][0][0], {"out": out}

    x = r(4, 3)
    (value, aux), grads = xs.value_and_grad(loss, has_aux=True)(params, x)
    assert isinstance(grads["layer"], Pair) and grads["scale"][1] is None
    out = x @ params["layer"].w + params["layer"].b
    np.testing.assert_allclose(np.asarray(aux["out"]), out)
    np.testing.assert_allclose(np.asarray(grads["layer"].b),
                               2 * params["scale"][0][0] * out.sum(0), rtol=1e-10)
    gx = xs.grad(lambda p, x: loss(p, x)[0], argnums=(1,))(params, x)
    assert np.asarray(gx[0]).shape == (4, 3)


def test_user_registered_pytree_node():
    class Linear:
        def __init__(self, w):
            self.w = w
    xs.register_pytree_node(Linear, lambda m: ((m.w,), None), lambda _, c: Linear(*c))
    g = xs.grad(lambda m: xnp.sum(m.w ** 2))(Linear(np.array([1.0, 2.0])))
    assert isinstance(g, Linear)
    np.testing.assert_allclose(np.asarray(g.w), [2.0, 4.0])


def test_vjp_function():
    out, pullback = xs.vjp(lambda a, b: (a * b, a + b), np.array([1.0, 2.0]), np.array([3.0]))
    ga, gb = pullback((np.ones(2), np.ones(2)))
    np.testing.assert_allclose(np.asarray(ga), [4.0, 4.0])
    np.testing.assert_allclose(np.asarray(gb), [5.0])


def test_convert_passes_cotangents_through():
    g = xs.grad(lambda a: xnp.sum(xnp.astype(a, xnp.float32) * 3.0))(np.array([1.0, 2.0]))
    assert np.asarray(g).dtype == np.float64
    np.testing.assert_allclose(np.asarray(g), [3.0, 3.0])


def test_while_loop_without_trip_count_is_not_differentiable():
    def f(x):
        return lax.while_loop(lambda c: xnp.sum(c) < 10.0, lambda c: c * 2.0, x)
    with pytest.raises(Exception, match="trip count"):
        xs.grad(lambda x: xnp.sum(f(x)))(np.array([1.0, 2.0]))


def test_every_differentiable_opcode_has_a_rule():
    needed = ["add", "subtract", "multiply", "divide", "negate", "exponential", "log", "tanh",
              "dot", "convolution", "gather", "scatter", "reduce", "reduce-window", "broadcast",
              "reshape", "transpose", "slice", "pad", "concatenate", "dynamic-slice",
              "dynamic-update-slice", "select", "sort", "while", "conditional", "call",
              "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
              "custom-call", "get-tuple-element", "tuple", "convert", "maximum", "topk"]
    missing = [op for op in needed if op not in VJP]
    assert not missing


def test_scatter_max_splits_ties_as_jax():
    """Two updates win location 0 (half each); the operand and an update tie at 1."""
    ga, gu = xs.grad(lambda a, u: xnp.sum(a.at[np.array([0, 0, 1])].max(u)
                                          * np.array([2.0, 4.0])), argnums=(0, 1))(
        np.array([1.0, 5.0]), np.array([3.0, 3.0, 5.0]))
    np.testing.assert_array_equal(np.asarray(ga), [0.0, 2.0])
    np.testing.assert_array_equal(np.asarray(gu), [1.0, 1.0, 2.0])


def test_argmax_value_gradient_goes_to_the_first_maximum():
    g = xs.grad(lambda x: xnp.sum(_max_with_index(x, 1, "max")[0]))(
        np.array([[1.0, 3.0, 3.0, 2.0]]))
    np.testing.assert_array_equal(np.asarray(g), [[0.0, 1.0, 0.0, 0.0]])


@pytest.mark.parametrize("kind", ["max", "min"])
def test_window_dilated_pool_picks_the_winner_select_and_scatter_picks(monkeypatch, kind):
    """On ties, the unrolled rule (used for window dilation) agrees with select-and-scatter."""
    from xla_spmd.frontend import lax as flax
    from xla_spmd.frontend import vjp_rules_structured as rules
    x = np.round(r(5, 6))

    def f(x):
        init, op = (-np.inf, lax.max) if kind == "max" else (np.inf, lax.min)
        pooled = lax.reduce_window(x, init, op, (2, 3), (1, 2), [(1, 0), (0, 1)])
        return xnp.sum(pooled * np.arange(15.0).reshape(5, 3))
    expected = np.asarray(xs.grad(f)(x))

    def unrolled(ct, x, inst, kind, base_dilation):
        init = flax.constant(flax.reduction_identity(kind, x.aval.dtype), x.aval.dtype)
        return rules._chooser_window_unrolled(ct, x, rules.rebind(inst, [x, init]), inst, kind)
    monkeypatch.setattr(rules, "_chooser_window", unrolled)
    np.testing.assert_array_equal(np.asarray(xs.grad(f)(x)), expected)


def test_psum_of_a_pytree_is_one_variadic_all_reduce():
    text = xs.jit(lambda a, b: xs.shard_map(_tuple_collectives, make_mesh({"x": 1}),
                                            (P("x"), P("x")), P("x"))(a, b)).lower(
        np.ones(4), np.ones(4)).as_text(dialect="hlo")
    assert text.count(" all-reduce(") == 2


def test_stop_gradient_is_a_marked_copy_with_zero_derivative():
    f = lambda x: xnp.sum(x * lax.stop_gradient(x))  # noqa: E731
    np.testing.assert_allclose(np.asarray(xs.grad(f)(np.array([1.0, 3.0]))), [1.0, 3.0])
    text = xs.jit(xs.grad(f)).lower(np.ones(2)).as_text(dialect="hlo")
    assert 'frontend_attributes={xla_spmd.stop_gradient="true"}' in text
    # Through a loop body (the mark survives re-tracing): d/dc of c * sg(c), twice.
    loop = lambda x: lax.fori_loop(0, 2, lambda i, c: c * lax.stop_gradient(c), x)  # noqa: E731
    assert float(xs.jit(xs.grad(loop))(2.0)) == 8.0
    # Eager use and integer values pass through unchanged.
    assert lax.stop_gradient(3) == 3
    tree = lax.stop_gradient({"a": np.float32(1.0), "b": [np.int32(2)]})
    assert float(tree["a"]) == 1.0 and int(tree["b"][0]) == 2


def test_softmax_gradient_ignores_the_shift():
    """nn.softmax/log_softmax/logsumexp shift by a stop_gradient max, as JAX does."""
    z = np.array([[1.0, 1.0, 0.5]])  # a tied max
    g = np.asarray(xs.grad(lambda z: nn.logsumexp(z, axis=-1)[0])(z))
    e = np.exp(z - z.max())
    np.testing.assert_allclose(g, e / e.sum(), rtol=1e-12)
