"""JAX 0.10's explicit sharding (issue 16): AxisType, make_mesh(axis_types=...), xs.reshard,
xs.typeof, xs.use_mesh, sharding in types computed op by op for Explicit axes (with JAX's
errors for ambiguous cases), out_sharding=, auto_axes/explicit_axes.

Oracles: the result specs JAX's sharding rules give (worked by hand per case, from
jax/_src/lax/lax.py and slicing.py) and numpy for the values."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P
from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.frontend.sharding_types import ShardingTypeError

X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


@pytest.fixture
def mesh():
    return xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Explicit,) * 2)


def test_axis_types_are_checked():
    with pytest.raises(ShardingError, match="one AxisType per axis"):
        xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Explicit,))
    assert xs.make_mesh((8,), ("x",), axis_types=xs.AxisType.Auto).shape == {"x": 8}


def test_typeof_and_reshard_eagerly(mesh):
    x = xs.device_put(X, NamedSharding(mesh, P("a", "b")))
    t = xs.typeof(x)
    assert (t.shape, t.dtype, t.sharding.spec) == ((8, 4), np.float32, P("a", "b"))
    y = xs.reshard(x, NamedSharding(mesh, P("b")))
    assert y.sharding.spec == P("b", None)
    assert [s.data.shape for s in y.addressable_shards] == [(2, 4)] * 8
    np.testing.assert_array_equal(np.asarray(y), X)
    # a bare PartitionSpec takes the mesh of `use_mesh`, or of the value itself
    with xs.use_mesh(mesh):
        assert xs.reshard(X, P(None, "b")).sharding.spec == P(None, "b")
    assert xs.reshard(x, P("a")).sharding.spec == P("a", None)
    with pytest.raises(XlaSpmdError, match="needs a mesh"):
        xs.reshard(X, P("a"))
    assert xs.typeof(np.float32(1.0)).sharding is None


def test_reshard_and_typeof_inside_jit(mesh):
    seen = {}

    @xs.jit
    def f(x):
        seen["in"] = xs.typeof(x).sharding
        with xs.use_mesh(mesh):
            z = xs.reshard(x * 2.0, P(None, "b"))
        seen["out"] = xs.typeof(z).sharding
        return z + 1.0

    x = xs.device_put(X, NamedSharding(mesh, P("a", "b")))
    result = f(x)
    assert seen["in"].spec == P("a", "b") and seen["out"].spec == P(None, "b")
    assert result.sharding.spec == P(None, "b")  # propagated from the reshard
    np.testing.assert_array_equal(np.asarray(result), X * 2.0 + 1.0)


W = np.arange(12.0, dtype=np.float32).reshape(4, 3)


def _spec(v):
    return xs.typeof(v).sharding.spec


def _types(fn, *args):
    """The spec of each value `fn` reports while traced under jit, and the jit's results."""
    seen = {}
    out = xs.jit(lambda *a: fn(seen, *a))(*args)
    return seen, out


# (name, function of x: f32[8,4] P('a', None) and w: f32[4,3] P(None, 'b'), expected spec)
OP_CASES = [
    ("elementwise_with_constant", lambda x, w: xnp.tanh(x) * 2.0 + 1.0, P("a", None)),
    ("elementwise_meets_unsharded", lambda x, w: x + xnp.ones((8, 4)), P("a", None)),
    ("dot_free_dims", lambda x, w: x @ w, P("a", "b")),
    ("transpose", lambda x, w: (x @ w).T, P("b", "a")),
    ("reduce_sharded_dim", lambda x, w: (x @ w).sum(0), P("b")),
    ("reduce_other_dim", lambda x, w: (x @ w).sum(1), P("a")),
    ("reshape_split_major", lambda x, w: x.reshape(2, 4, 4), P("a", None, None)),
    ("reshape_merge_major", lambda x, w: x.reshape(32), P("a")),
    ("reshape_add_unit_dim", lambda x, w: x.reshape(8, 1, 4), P("a", None, None)),
    ("broadcast_new_dim", lambda x, w: xnp.broadcast_to(x, (3, 8, 4)), P(None, "a", None)),
    ("slice_divisible", lambda x, w: x[2:6], P("a", None)),
    ("slice_unsharded_dim", lambda x, w: x[:, 1:3], P("a", None)),
    ("slice_to_ones", lambda x, w: x[3:4, 0:1], P(None, None)),
    ("concatenate_alike", lambda x, w: xnp.concatenate([x, x * 2], axis=1), P("a", None)),
    ("argmax_variadic_reduce", lambda x, w: xnp.argmax(x, axis=1), P("a")),
    ("sort_unsharded_dim", lambda x, w: xnp.sort(-x, axis=1), P("a", None)),
    ("cumsum_unsharded_dim", lambda x, w: xnp.cumsum(x, axis=1), P("a", None)),
    ("gather_rows_of_unsharded_dim", lambda x, w: w[np.array([[3, 1], [0, 2]])],
     P(None, None, "b")),
    ("gather_column_by_index", lambda x, w: x[:, np.int32(2)], P("a")),
    ("reverse_keeps_spec", lambda x, w: xnp.flip(x @ w, axis=0), P("a", "b")),
    ("top_k_unsharded_last_dim", lambda x, w: lax.top_k(x, 2)[0], P("a", None)),
]


@pytest.mark.parametrize("name,fn,want", OP_CASES, ids=[c[0] for c in OP_CASES])
def test_types_op_by_op(mesh, name, fn, want):
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    w = xs.device_put(W, NamedSharding(mesh, P(None, "b")))

    def traced(seen, x, w):
        out = fn(x, w)
        seen["type"] = _spec(out)
        return out

    seen, out = _types(traced, x, w)
    assert seen["type"] == want
    assert out.sharding.spec == want  # the type is the result's sharding
    assert out.sharding.mesh.explicit_axes == ("a", "b")
    np.testing.assert_allclose(np.asarray(out), np.asarray(fn(X, W)), rtol=1e-6)


# (name, function, operand specs, the error JAX gives)
ERROR_CASES = [
    ("contracting_sharded_both", lambda x, w: x @ w, (P(None, "b"), P("b", None)),
     "Contracting dimensions are sharded"),
    ("incompatible_elementwise", lambda x, y: x + y, (P("a", None), P("b", None)),
     "incompatible shardings for broadcasting"),
    ("reshape_minor_sharded_merge", lambda x, y: x.reshape(32), (P(None, "b"), P()),
     "This reshape is not supported"),
    ("slice_not_divisible", lambda x, y: x[1:4], (P("a", None), P()),
     "not divisible by mesh axes"),
    ("concatenate_different", lambda x, y: xnp.concatenate([x, y]), (P("a"), P(None, "b")),
     "should have the same sharding"),
    ("cumsum_sharded_dim", lambda x, y: xnp.cumsum(x, axis=0), (P("a"), P()),
     "unsharded over the axis being reduced"),
    ("sort_sharded_dim", lambda x, y: xnp.sort(x, axis=0), (P("a"), P()),
     "unsharded over the sorting dimension"),
    ("top_k_sharded_last_dim", lambda x, y: lax.top_k(x, 2)[0], (P(None, "b"), P()),
     "unsharded over the axis along which to compute the top_k"),
    ("gather_with_sharded_indices", lambda x, y: x[y.astype(np.int32)], (P(None, "b"), P("a")),
     r"Use `.at\[...\].get\(out_sharding=\)`"),
]


@pytest.mark.parametrize("name,fn,specs,message", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_ambiguous_ops_fail_while_tracing(mesh, name, fn, specs, message):
    a = xs.device_put(X, NamedSharding(mesh, specs[0]))
    b = xs.device_put(W if name == "contracting_sharded_both" else X,
                      NamedSharding(mesh, specs[1]))
    with pytest.raises(ShardingTypeError, match=message):
        xs.jit(fn)(a, b)


def test_out_sharding_settles_what_the_types_leave_open(mesh):
    x = xs.device_put(X, NamedSharding(mesh, P(None, "b")))
    w = xs.device_put(W, NamedSharding(mesh, P("b", None)))
    seen = {}

    @xs.jit
    def f(x, w):
        y = xnp.matmul(x, w, out_sharding=P("a"))
        z = xnp.einsum("ij,jk->ik", x, w, out_sharding=NamedSharding(mesh, P(None, None)))
        r = lax.reshape(x, (32,), out_sharding=P("b"))
        seen.update(y=_spec(y), z=_spec(z), r=_spec(r))
        return y, z, r

    y, z, r = f(x, w)
    assert seen == {"y": P("a", None), "z": P(None, None), "r": P("b")}
    np.testing.assert_allclose(np.asarray(y), X @ W, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(z), X @ W, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(r), X.ravel())


def test_at_get_out_sharding_settles_a_gather(mesh):
    """An embedding lookup with sharded token ids: JAX's types refuse ``emb[tokens]``;
    ``emb.at[tokens].get(out_sharding=...)`` says the result's sharding (traced and eager)."""
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    tokens = np.array([[1, 2, 3, 9], [0, 0, 5, 7]], np.int32)
    emb = xs.device_put(table, NamedSharding(mesh, P(None, "b")))
    tok = xs.device_put(tokens, NamedSharding(mesh, P("a")))
    seen = {}

    @xs.jit
    def lookup(e, t):
        out = e.at[t].get(out_sharding=P("a", None, "b"))
        seen["type"] = _spec(out)
        return out

    out = lookup(emb, tok)
    assert seen["type"] == P("a", None, "b") and out.sharding.spec == P("a", None, "b")
    np.testing.assert_array_equal(np.asarray(out), table[tokens])
    eager = emb.at[tok].get(out_sharding=P("a", None, "b"))
    assert eager.sharding.spec == P("a", None, "b")
    np.testing.assert_array_equal(np.asarray(eager), table[tokens])
    updated = emb.at[2].set(1.0, out_sharding=P(None, "b"))
    np.testing.assert_array_equal(np.asarray(updated)[2], np.ones(4))


def test_scatter_types(mesh):
    """x.at[...].set/add: writing into an unsharded dim keeps the operand's spec; writing into
    the sharded dim fails as in JAX unless out_sharding says the result's sharding."""
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    seen = {}

    @xs.jit
    def columns(x, i):
        out = x.at[:, np.array([1, 3])].set(0.0).at[:, i].add(5.0)
        seen["columns"] = _spec(out)
        return out

    want = X.copy()
    want[:, [1, 3]] = 0.0
    want[:, 2] += 5.0
    np.testing.assert_array_equal(np.asarray(columns(x, np.int32(2))), want)
    assert seen["columns"] == P("a", None)
    with pytest.raises(ShardingTypeError, match="for the scatter update"):
        xs.jit(lambda v: v.at[np.array([1, 3])].add(1.0))(x)

    @xs.jit
    def rows(x):
        out = x.at[np.array([1, 3])].add(1.0, out_sharding=P("a"))
        seen["rows"] = _spec(out)
        return out

    want = X.copy()
    want[[1, 3]] += 1.0
    np.testing.assert_array_equal(np.asarray(rows(x)), want)
    assert seen["rows"] == P("a", None)


def test_grad_has_the_primal_types(mesh):
    """Cotangents are placed by propagation; each parameter's gradient gets its primal's type
    (the backward pass of x @ w contracts the sharded batch dim, which the types alone would
    refuse)."""
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    w = xs.device_put(W, NamedSharding(mesh, P(None, "b")))
    g = xs.jit(xs.grad(lambda w, x: xnp.sum(xnp.tanh(x @ w))))(w, x)
    assert g.sharding.spec == P(None, "b")
    np.testing.assert_allclose(np.asarray(g), X.T @ (1 - np.tanh(X @ W) ** 2), rtol=1e-4)


def test_types_inside_grad_follow_the_differentiated_arguments(mesh):
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    w = xs.device_put(W, NamedSharding(mesh, P(None, "b")))
    seen = {}

    def loss(w, x):
        h = x @ w
        seen.update(w=_spec(w), h=_spec(h))
        return xnp.sum(h)

    xs.jit(xs.grad(loss))(w, x)
    assert seen == {"w": P(None, "b"), "h": P("a", "b")}


def test_scan_results_have_the_carry_types(mesh):
    """A loop's results have its carry's types (JAX: carry in and out types are equal), so
    the ops on them are typed: h stays P('a', None) through the scan (tanh(h @ w) with w
    unsharded keeps it), and h @ w_out is P('a', 'b'). A plain input of the jit counts as
    replicated, as in JAX."""
    rng = np.random.default_rng(1)
    ws, wo = rng.standard_normal((3, 4, 4)).astype(np.float32), W @ W.T
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    w_out = xs.device_put(wo, NamedSharding(mesh, P(None, "b")))
    seen = {}

    @xs.jit
    def f(x, ws, w_out):
        h, _ = lax.scan(lambda h, w: (xnp.tanh(h @ w), None), x, ws)
        y = h @ w_out
        seen.update(h=_spec(h), y=_spec(y), plain=_spec(x + ws[0, 0]))
        return y

    out = f(x, ws, w_out)
    assert seen == {"h": P("a", None), "y": P("a", "b"), "plain": P("a", None)}
    assert out.sharding.spec == P("a", "b")
    h = X
    for w in ws:
        h = np.tanh(h @ w)
    np.testing.assert_allclose(np.asarray(out), h @ wo, rtol=1e-4, atol=1e-4)


def test_vmap_and_eager_ops_under_explicit_axes(mesh):
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    assert (x * 2).sharding.spec == P("a", None)  # eager math follows the types too
    out = xs.jit(xs.vmap(lambda row: row * row.sum()))(x)
    np.testing.assert_allclose(np.asarray(out), X * X.sum(1, keepdims=True))


def test_auto_meshes_have_no_types():
    mesh = xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Auto,) * 2)
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    seen = {}
    xs.jit(lambda v: (seen.setdefault("t", xs.typeof(v * 2).sharding), v)[1])(x)
    assert seen["t"] is None
    # ... so nothing is ambiguous: propagation decides
    y = xs.device_put(X, NamedSharding(mesh, P("b", None)))
    np.testing.assert_array_equal(np.asarray(xs.jit(lambda a, b: a + b)(x, y)), X * 2)


def test_mixed_mesh_types_only_explicit_axes():
    mesh = xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Explicit, xs.AxisType.Auto))
    assert mesh.explicit_axes == ("a",) and mesh.auto_axes == ("b",)
    x = xs.device_put(X, NamedSharding(mesh, P("a", "b")))
    seen = {}
    xs.jit(lambda v: (seen.setdefault("t", _spec(v + 1.0)), v)[1])(x)
    assert seen["t"] == P("a", None)


def test_auto_axes_and_explicit_axes(mesh):
    x = xs.device_put(X, NamedSharding(mesh, P(None, "b")))
    seen = {}

    @xs.jit
    def f(a):
        # a @ a.T contracts the sharded dim: refused by the types, fine under auto_axes
        y = xs.sharding.auto_axes(lambda u: u @ u.T, out_sharding=P("a"))(a)
        seen["auto"] = _spec(y)
        return y

    out = f(x)
    assert seen["auto"] == P("a", None) and out.sharding.spec == P("a", None)
    np.testing.assert_allclose(np.asarray(out), X @ X.T)

    auto = xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Auto,) * 2)
    xa = xs.device_put(X, NamedSharding(auto, P("a")))

    @xs.jit
    def g(a):
        def inner(u):
            seen["explicit"] = _spec(u * 2)
            return (u * 2).sum(1)
        return xs.sharding.explicit_axes(inner, in_sharding=NamedSharding(auto, P("a", "b")))(a)

    np.testing.assert_allclose(np.asarray(g(xa)), (X * 2).sum(1))
    assert seen["explicit"] == P("a", "b")
    with pytest.raises(TypeError, match="out_sharding"):
        xs.sharding.auto_axes(lambda u: u)(x)


def test_jax_sharding_namespace_names():
    assert xs.sharding.reshard is xs.reshard
    assert xs.sharding.use_mesh is xs.use_mesh
    assert xs.sharding.AxisType is xs.AxisType
    with pytest.raises(AttributeError):
        xs.sharding.no_such_name  # noqa: B018


def test_make_mesh_defaults_to_explicit_as_jax_0_10():
    """JAX 0.10's make_mesh types every axis Explicit unless `axis_types` says otherwise
    (jax/_src/sharding_impls.py: ``axis_types = (AxisType.Explicit,) * ndim``); a Mesh
    built directly is Auto, as JAX's; the option ``default_axis_types="auto"`` gives the
    old default."""
    mesh = xs.make_mesh((2, 4), ("a", "b"))
    assert mesh.explicit_axes == ("a", "b") and mesh.auto_axes == ()
    assert xs.make_mesh({"a": 2, "b": 4}).explicit_axes == ("a", "b")
    assert xs.make_mesh((8,), ("x",), axis_types=xs.AxisType.Auto).explicit_axes == ()
    assert xs.Mesh(("a",), (8,)).explicit_axes == ()
    x = xs.device_put(X, NamedSharding(mesh, P(None, "b")))
    with pytest.raises(ShardingTypeError, match="Contracting dimensions are sharded"):
        xs.jit(lambda v: v @ v.T)(x)
    with xs.config.override(default_axis_types="auto"):
        assert xs.make_mesh((2, 4), ("a", "b")).explicit_axes == ()
        auto = xs.make_mesh((2, 4), ("a", "b"))
        y = xs.device_put(X, NamedSharding(auto, P(None, "b")))
        np.testing.assert_allclose(np.asarray(xs.jit(lambda v: v @ v.T)(y)), X @ X.T)
    with pytest.raises(XlaSpmdError, match="default_axis_types"):
        xs.config.update("default_axis_types", "manual")


def test_auto_axes_and_explicit_axes_honour_axes(mesh):
    """``axes=`` switches only the named axes, as JAX's ``_get_new_mesh`` does: x @ w with
    x P('a', 'b') and w P('b', None) contracts a dim sharded over 'b' on both sides (JAX's
    types refuse it); with 'b' Auto inside, the types see P('a', None) @ P(None, None), a
    P('a', None) result; with 'a' Auto instead, 'b' is still typed and it still fails."""
    x = xs.device_put(X, NamedSharding(mesh, P("a", "b")))
    w = xs.device_put(W, NamedSharding(mesh, P("b", None)))
    seen = {}

    def inner(u, v):
        seen["u"], seen["dot"] = _spec(u), _spec(u @ v)
        return u @ v

    out = xs.jit(lambda u, v: xs.sharding.auto_axes(inner, axes="b",
                                                    out_sharding=P(None, "b"))(u, v))(x, w)
    assert seen == {"u": P("a", None), "dot": P("a", None)}
    assert out.sharding.spec == P(None, "b")
    np.testing.assert_allclose(np.asarray(out), X @ W, rtol=1e-6)
    with pytest.raises(ShardingTypeError, match="Contracting dimensions are sharded"):
        xs.jit(lambda u, v: xs.sharding.auto_axes(inner, axes=("a",),
                                                  out_sharding=P())(u, v))(x, w)
    with pytest.raises(ValueError, match=r"axes \['c'\] are not axes of the mesh"):
        xs.jit(lambda u, v: xs.sharding.auto_axes(inner, axes="c", out_sharding=P())(u, v))(
            x, w)

    # explicit_axes(axes='a') on an Auto mesh: only 'a' is typed inside
    auto = xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Auto,) * 2)
    xa = xs.device_put(X, NamedSharding(auto, P("a")))

    @xs.jit
    def g(v):
        def body(u):
            seen["explicit_a"] = _spec(u * 2)
            return (u * 2).sum(1)
        return xs.sharding.explicit_axes(body, axes="a",
                                         in_sharding=NamedSharding(auto, P("a", "b")))(v)

    np.testing.assert_allclose(np.asarray(g(xa)), (X * 2).sum(1))
    assert seen["explicit_a"] == P("a", None)


def test_auto_axes_of_the_auto_axes_just_runs():
    """On a mesh with 'a' Explicit and 'b' Auto, ``auto_axes(axes='b')`` changes nothing:
    JAX runs `f` as it is (its out_sharding is not applied)."""
    mixed = xs.make_mesh((2, 4), ("a", "b"),
                         axis_types=(xs.AxisType.Explicit, xs.AxisType.Auto))
    x = xs.device_put(X, NamedSharding(mixed, P("a")))
    seen = {}

    def inner(u):
        seen["u"] = _spec(u + 1.0)
        return u + 1.0

    out = xs.jit(lambda v: xs.sharding.auto_axes(inner, axes="b",
                                                 out_sharding=P(None, "a"))(v))(x)
    assert seen["u"] == P("a", None) and out.sharding.spec == P("a", None)
    np.testing.assert_array_equal(np.asarray(out), X + 1.0)


def test_loops_type_their_carries(mesh):
    """Loop bodies see their carries (and the values they close over) with their types, and
    the results have the carries' types: hand-worked, x P('a', None) stays P('a', None)
    through elementwise ops with a replicated scalar; scan's stacked outputs get the per-step
    type with an unsharded leading dim."""
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    steps = xs.device_put(np.stack([X, X + 1, X + 2]), NamedSharding(mesh, P(None, None, "b")))
    seen = {}

    @xs.jit
    def f(x, steps):
        def fori_body(i, c):
            seen["fori_c"], seen["fori_closed"] = _spec(c), _spec(c * 0.5 + x)
            return c * 0.5 + x

        def while_body(state):
            c, k = state
            seen["while_c"] = _spec(c)
            return c + 1.0, k + 1

        def scan_body(carry, s):
            seen["scan_s"] = _spec(s)
            return carry + s.sum(1), s * carry[:, None]

        a = lax.fori_loop(0, 3, fori_body, x)
        b, _ = lax.while_loop(lambda st: st[1] < 2, while_body, (x, 0))
        c, ys = lax.scan(scan_body, x.sum(1), steps)
        seen.update(a=_spec(a), b=_spec(b), c=_spec(c), ys=_spec(ys))
        return a, b, c, ys

    a, b, c, ys = f(x, steps)
    assert seen == {"fori_c": P("a", None), "fori_closed": P("a", None),
                    "while_c": P("a", None), "scan_s": P(None, "b"), "a": P("a", None),
                    "b": P("a", None), "c": P("a"), "ys": P(None, "a", "b")}
    assert (a.sharding.spec, b.sharding.spec, c.sharding.spec, ys.sharding.spec) == \
        (P("a", None), P("a", None), P("a"), P(None, "a", "b"))
    want_a = X
    for _ in range(3):
        want_a = want_a * 0.5 + X
    np.testing.assert_allclose(np.asarray(a), want_a, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(b), X + 2.0)
    carry, want_ys = X.sum(1), []
    for s in (X, X + 1, X + 2):
        want_ys.append(s * carry[:, None])
        carry = carry + s.sum(1)
    np.testing.assert_allclose(np.asarray(c), carry, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ys), np.stack(want_ys), rtol=1e-6)


def test_cond_types_its_branches(mesh):
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    seen = {}

    def double(v):
        seen["branch"] = _spec(v)
        return v * 2.0

    @xs.jit
    def f(p, v):
        out = lax.cond(p, double, lambda u: u + 1.0, v)
        seen["out"] = _spec(out)
        return out

    np.testing.assert_array_equal(np.asarray(f(True, x)), X * 2.0)
    np.testing.assert_array_equal(np.asarray(f(False, x)), X + 1.0)
    assert seen == {"branch": P("a", None), "out": P("a", None)}
    assert f(True, x).sharding.spec == P("a", None)


def test_carry_and_branch_types_must_match(mesh):
    """JAX's errors: a body that changes its carry's sharding (here by a reshard, or by
    adding a P('a', None) value into a replicated accumulator) and branches of different
    types fail while tracing."""
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    with xs.use_mesh(mesh):
        moved = (r"scan body function carry input and carry output must have equal types, "
                 r"but they differ:\n\nThe input carry at path \[0\] has type "
                 r"float32\[8@a,4\] but the corresponding output carry component has type "
                 r"float32\[8@b,4\]")
        with pytest.raises(ShardingTypeError, match=moved):
            xs.jit(lambda v: lax.fori_loop(0, 3, lambda i, c: xs.reshard(c, P("b")), v))(x)
        with pytest.raises(ShardingTypeError, match=r"has type float32\[8,4\] but .* has "
                           r"type float32\[8@a,4\]"):
            xs.jit(lambda v: lax.fori_loop(0, 3, lambda i, acc: acc + v,
                                           xnp.zeros((8, 4), np.float32)))(x)
        with pytest.raises(ShardingTypeError, match="while_loop body function carry input"):
            xs.jit(lambda v: lax.while_loop(lambda c: c.sum() < 0.0,
                                            lambda c: xs.reshard(c, P(None, "b")), v))(x)
        with pytest.raises(ShardingTypeError,
                           match=r"cond branches must have equal output types but they "
                                 r"differ.\n\nThe output of branch 0 at path \[0\] has type "
                                 r"float32\[8@a,4\]"):
            xs.jit(lambda p, v: lax.cond(p, lambda u: xs.reshard(u, P(None, "b")),
                                         lambda u: u, v))(True, x)
        # the fix JAX asks for: start the accumulator with the sharding of what it sums
        out = xs.jit(lambda v: lax.fori_loop(0, 3, lambda i, acc: acc + v,
                                             xs.reshard(xnp.zeros((8, 4)), P("a"))))(x)
    assert out.sharding.spec == P("a", None)
    np.testing.assert_array_equal(np.asarray(out), 3 * X)


def _conv_nhwc(x, k, stride=1):
    """numpy's SAME convolution (NHWC input, HWIO kernel, odd kernel sizes)."""
    kh, kw = k.shape[:2]
    padded = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    out = np.zeros((x.shape[0], x.shape[1], x.shape[2], k.shape[3]), np.float64)
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nhwc,co->nhwo", padded[:, i:i + x.shape[1], j:j + x.shape[2]],
                             k[i, j])
    return out[:, ::stride, ::stride]


def test_convolution_types(mesh):
    """JAX's conv rule: a replicated kernel and an unsharded input feature dim give the
    input's spec by dim position: batch P('a') -> P('a', None, None, None), H P('b') with
    stride 1 -> H P('b'). A sharded kernel needs out_sharding; a strided output whose size
    no longer divides by its shards fails."""
    rng = np.random.default_rng(3)
    img = rng.standard_normal((4, 8, 6, 2)).astype(np.float32)
    ker = rng.standard_normal((3, 3, 2, 5)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    seen = {}

    def conv(v, k, stride=1, **kw):
        return lax.conv_general_dilated(v, k, (stride, stride), "SAME", dimension_numbers=dn,
                                        **kw)

    for spec, want in ((P("a"), P("a", None, None, None)),
                       (P(None, "b"), P(None, "b", None, None))):
        x = xs.device_put(img, NamedSharding(mesh, spec))

        @xs.jit
        def f(v, k):
            out = conv(v, k)
            seen["type"] = _spec(out)
            return out

        out = f(x, ker)
        assert seen["type"] == want and out.sharding.spec == want
        np.testing.assert_allclose(np.asarray(out), _conv_nhwc(img, ker), rtol=1e-4,
                                   atol=1e-4)

    x = xs.device_put(img, NamedSharding(mesh, P("a")))
    k = xs.device_put(ker, NamedSharding(mesh, P(None, None, None, "b")))
    with pytest.raises(ShardingTypeError, match="Please specify the output sharding via "
                       "`out_sharding` parameter of `conv_general_dilated`"):
        xs.jit(conv)(x, k)
    out = xs.jit(lambda v, w: conv(v, w, out_sharding=P("a", None, None, "b")))(x, k)
    assert out.sharding.spec == P("a", None, None, "b")
    np.testing.assert_allclose(np.asarray(out), _conv_nhwc(img, ker), rtol=1e-4, atol=1e-4)
    xh = xs.device_put(img[:, :6], NamedSharding(mesh, P(None, "a")))
    with pytest.raises(ShardingTypeError, match=r"conv_general_dilated on sharded dims where "
                       r"out dim \(3\) is not divisible by mesh axes \(2\)"):
        xs.jit(lambda v, w: conv(v, w, stride=2))(xh, ker)


def _row_scatter(operand, indices, updates):
    """out[b, indices[b, 0]] = updates[b]: a scatter with batching dims (what a vmapped
    ``x.at[i].set(u)`` is), bound directly."""
    from xla_spmd.frontend.tracing import bind, reducer
    from xla_spmd.ir import F32
    return bind("scatter", operand, indices, updates, update_window_dims=(),
                inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
                input_batching_dims=(0,), scatter_indices_batching_dims=(0,),
                index_vector_dim=1, to_apply=reducer("set", F32))


def test_scatter_with_batching_dims_types(mesh):
    """JAX's rule: batching dims resolve to the one sharding that operand, indices and
    updates give them (hand-worked: operand P('a', None) with unsharded indices and updates
    -> P('a', None); replicated operand with indices P('a') -> P('a', None)); two different
    shardings of a batching dim fail."""
    rows = np.array([[1], [0], [3], [2], [0], [1], [3], [2]], np.int32)
    ups = np.arange(8, dtype=np.float32) + 100
    want = X.copy()
    want[np.arange(8), rows[:, 0]] = ups
    seen = {}

    def run(op_spec, idx_spec, upd_spec):
        args = (xs.device_put(X, NamedSharding(mesh, op_spec)),
                xs.device_put(rows, NamedSharding(mesh, idx_spec)),
                xs.device_put(ups, NamedSharding(mesh, upd_spec)))

        @xs.jit
        def f(o, i, u):
            out = _row_scatter(o, i, u)
            seen["type"] = _spec(out)
            return out
        return f(*args)

    for specs in ((P("a"), P(), P()), (P(), P("a"), P()), (P(), P(), P("a")),
                  (P("a"), P("a"), P("a"))):
        out = run(*specs)
        assert seen["type"] == P("a", None) and out.sharding.spec == P("a", None), specs
        np.testing.assert_array_equal(np.asarray(out), want)
    with pytest.raises(ShardingTypeError, match="for the scatter update"):
        run(P("a"), P("b"), P())
    with pytest.raises(ShardingTypeError, match="for the scatter update"):
        run(P(None, "b"), P(), P())  # the dim written into is sharded


def test_shard_map_results_are_typed_by_out_specs(mesh):
    """A shard_map's results (its boundary custom calls) have the out_specs as types."""
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    seen = {}

    @xs.jit
    def f(v):
        y = xs.shard_map(lambda u: u * 2.0, mesh=mesh, in_specs=P("a", "b"),
                         out_specs=P("a", "b"))(v)
        seen["y"], seen["sum"] = _spec(y), _spec(y.sum(1))
        return y.sum(1)

    out = f(x)
    assert seen == {"y": P("a", "b"), "sum": P("a")} and out.sharding.spec == P("a")
    np.testing.assert_array_equal(np.asarray(out), (X * 2.0).sum(1))


def test_vmap_types_per_example_and_results(mesh):
    """JAX's vmap typing: the function sees each example's type (the spec without the mapped
    dim, whose mesh axes leave the mesh inside), and each result gets its per-example type
    with those axes at its out_axis. Hand-worked: rows of P('a', 'b') are P('b'), and
    row * row.sum() stays P('b'), so the result is P('a', 'b')."""
    seen = {}

    def body(row):
        seen["row"], seen["sum"] = _spec(row), _spec(row.sum())
        return row * row.sum()

    for spec, row, result in ((P("a", None), P(None), P("a", None)),
                              (P("a", "b"), P("b"), P("a", "b")),
                              (P(None, "b"), P("b"), P(None, "b"))):
        x = xs.device_put(X, NamedSharding(mesh, spec))
        out = xs.jit(xs.vmap(body))(x)
        assert seen == {"row": row, "sum": P()} and out.sharding.spec == result, spec
        np.testing.assert_allclose(np.asarray(out), X * X.sum(1, keepdims=True))

    # in_axes=1 over P(None, 'b'): the mapped axis is 'b'; out_axes=1 puts it back on dim 1
    x = xs.device_put(X, NamedSharding(mesh, P("a", "b")))
    out = xs.jit(xs.vmap(lambda c: (seen.setdefault("col", _spec(c)), c * 2.0)[1],
                         in_axes=1, out_axes=1))(x)
    assert seen["col"] == P("a") and out.sharding.spec == P("a", "b")
    np.testing.assert_array_equal(np.asarray(out), X * 2.0)


def test_vmap_errors_as_jax(mesh):
    x = xs.device_put(X, NamedSharding(mesh, P("a")))
    y = xs.device_put(X, NamedSharding(mesh, P("b")))
    with pytest.raises(ValueError, match="Mapped away dimension of inputs passed to vmap "
                       "should be sharded the same. Got inconsistent axis specs: a vs b"):
        xs.jit(xs.vmap(lambda u, v: u + v))(x, y)
    w = xs.device_put(W, NamedSharding(mesh, P(None, "a")))
    with pytest.raises(ValueError, match="Unmapped values passed to vmap cannot be sharded "
                       "along the mesh axis you are vmapping over"):
        xs.jit(xs.vmap(lambda u, v: u @ v, in_axes=(0, None)))(x, w)


def test_backward_cotangents_have_the_primal_types(mesh):
    """In the backward pass each cotangent has its primal's type, as in JAX: a custom_vjp's
    bwd gets its output's cotangent typed like the output (P('a', None), hand-worked: the
    forward x * 3 keeps x's spec), and the gradients have the primals' types."""
    x = xs.device_put(X, NamedSharding(mesh, P("a", None)))
    w = xs.device_put(W, NamedSharding(mesh, P(None, "b")))
    seen = {}

    @xs.custom_vjp
    def triple(v):
        return v * 3.0

    def fwd(v):
        return triple(v), None

    def bwd(_, ct):
        seen["ct"] = xs.typeof(ct).sharding
        return (ct * 3.0,)

    triple.defvjp(fwd, bwd)

    def loss(x, w):
        return xnp.sum(xnp.tanh(triple(x) @ w))

    gx, gw = xs.jit(xs.grad(loss, argnums=(0, 1)))(x, w)
    assert seen["ct"].spec == P("a", None)
    assert gx.sharding.spec == P("a", None) and gw.sharding.spec == P(None, "b")
    d = 1 - np.tanh(3 * X @ W) ** 2
    np.testing.assert_allclose(np.asarray(gx), 3 * d @ W.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), 3 * X.T @ d, rtol=1e-4, atol=1e-4)


def test_scan_over_a_sharded_leading_dim(mesh):
    """Each step of scan's input has its type without the leading dim (JAX's), even when
    that dim is sharded: steps P('a', None, 'b') give x P(None, 'b')."""
    steps = np.arange(64.0, dtype=np.float32).reshape(4, 4, 4)
    s = xs.device_put(steps, NamedSharding(mesh, P("a", None, "b")))
    seen = {}

    def body(c, x):
        seen["x"] = _spec(x)
        return c + x, x.sum(0)

    c0 = xs.device_put(np.zeros((4, 4), np.float32), NamedSharding(mesh, P(None, "b")))
    c, ys = xs.jit(lambda c, s: lax.scan(body, c, s))(c0, s)
    assert seen["x"] == P(None, "b") and c.sharding.spec == P(None, "b")
    assert ys.sharding.spec == P(None, "b")
    np.testing.assert_array_equal(np.asarray(c), steps.sum(0))
    np.testing.assert_array_equal(np.asarray(ys), steps.sum(1))


def test_grad_through_typed_loops_and_vmap_equals_auto_mode():
    """grad through scan, cond and fori_loop, and vmap(grad), give under Explicit axes the
    values and gradient shardings of the same program under Auto axes (values to rounding:
    the two placements may sum in different orders)."""
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((8, 4)).astype(np.float32)
    wv = (rng.standard_normal((3, 4, 4)) * 0.5).astype(np.float32)

    def loss(ws, x):
        def body(h, w):
            h = lax.cond(h.sum() > 0, lambda u: xnp.tanh(u @ w), lambda u: xnp.sin(u @ w), h)
            return h, h.sum()
        h, ys = lax.scan(body, x, ws)
        h2 = lax.fori_loop(0, 2, lambda i, c: c * 0.5 + h, h)
        return xnp.sum(h2 ** 2) + ys.sum()

    def per_row(w, r):
        return xnp.sum(xnp.tanh(r @ w[0]))

    results = {}
    for kind in (xs.AxisType.Auto, xs.AxisType.Explicit):
        m = xs.make_mesh((2, 4), ("a", "b"), axis_types=(kind, kind))
        x = xs.device_put(xv, NamedSharding(m, P("a", None)))
        ws = xs.device_put(wv, NamedSharding(m, P()))
        value, g = xs.jit(xs.value_and_grad(loss))(ws, x)
        gv = xs.jit(xs.vmap(xs.grad(per_row), in_axes=(None, 0)))(ws, x)
        results[kind] = (np.asarray(value), np.asarray(g), np.asarray(gv),
                         g.sharding.spec, gv.sharding.spec)
    auto, explicit = results[xs.AxisType.Auto], results[xs.AxisType.Explicit]
    for a, e in zip(auto[:3], explicit[:3]):
        np.testing.assert_allclose(e, a, rtol=1e-5, atol=1e-6)
    assert explicit[3:] == auto[3:] == (P(None, None, None), P("a", None, None, None))
