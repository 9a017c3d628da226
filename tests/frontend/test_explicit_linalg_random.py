"""Sharding types (Explicit mesh axes, issue 16) of fft, cholesky, triangular_solve and the
random bits: JAX's rules and errors, worked by hand per case from jax/_src/lax/fft.py
(``fft_abstract_eval`` keeps the operand's sharding), linalg.py (``linalg_sharding_rule``,
``_tri_solve_sharding``), lax.py (``_rng_bit_generator_sharding_rule``) and random.py
(``out_sharding=`` through ``auto_axes``); values against numpy."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.numpy as xnp
import xla_spmd.random as xr
from xla_spmd import NamedSharding, P
from xla_spmd.frontend.sharding_types import ShardingTypeError

X = np.arange(32.0, dtype=np.float32).reshape(8, 4)
RNG = np.random.default_rng(7)
M = RNG.standard_normal((4, 4, 4)).astype(np.float32)
SPD = (M @ np.swapaxes(M, 1, 2) + 4 * np.eye(4, dtype=np.float32)).astype(np.float32)


@pytest.fixture
def mesh():
    return xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Explicit,) * 2)


def _put(mesh, value, *spec):
    return xs.device_put(value, NamedSharding(mesh, P(*spec)))


def _traced_specs(fn, *args):
    seen = {}

    def wrapped(*a):
        out = fn(*a)
        seen["out"] = [xs.typeof(o).sharding.spec for o in out]
        return out

    results = xs.jit(wrapped)(*args)
    return seen["out"], results


@pytest.mark.parametrize("spec", [("a", None), ("a", "b"), (None, "b")])
def test_fft_keeps_the_operand_spec(mesh, spec):
    """JAX's fft abstract eval only updates shape and dtype: every dim keeps its sharding,
    the transformed one and rfft's resized last dim included."""
    x = _put(mesh, X, *spec)
    specs, (f, r, i) = _traced_specs(lambda v: (lax.fft(v, "fft", (4,)),
                                                lax.fft(v, lax.FftType.RFFT, (4,)),
                                                lax.fft(lax.fft(v, "fft", (8, 4)), "ifft",
                                                        (8, 4))), x)
    assert specs == [P(*spec)] * 3
    assert f.sharding.spec == r.sharding.spec == P(*spec)
    np.testing.assert_allclose(np.asarray(f), np.fft.fft(X), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(r), np.fft.rfft(X), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(i), X, rtol=1e-5, atol=1e-4)


def test_fft_checks_its_arguments_as_jax():
    with pytest.raises(ValueError, match="Unknown FFT type 'dct'"):
        lax.fft(X, "dct", (4,))
    with pytest.raises(ValueError, match="minor dimensions must be equal to fft_lengths"):
        lax.fft(X, "fft", (8,))
    with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
        lax.fft(X.astype(np.complex64), "rfft", (4,))


def test_cholesky_batch_dims_keep_their_sharding(mesh):
    a = _put(mesh, SPD, "a")
    specs, (lo,) = _traced_specs(lambda v: (lax.linalg.cholesky(v),), a)
    assert specs == [P("a", None, None)] and lo.sharding.spec == P("a", None, None)
    np.testing.assert_allclose(np.asarray(lo), np.linalg.cholesky(SPD), rtol=1e-5, atol=1e-5)
    up = xs.jit(lambda v: xnp.linalg.cholesky(v, upper=True))(a)
    np.testing.assert_allclose(np.asarray(up), np.swapaxes(np.linalg.cholesky(SPD), 1, 2),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("spec", [("a", "b", None), ("a", None, "b"), (None, "b")])
def test_cholesky_refuses_sharded_matrix_dims(mesh, spec):
    a = _put(mesh, SPD, *spec)
    with pytest.raises(ShardingTypeError, match=r"Input 0 to cholesky must be unsharded on "
                       r"non-batch dimensions, but got P\("):
        xs.jit(lambda v: lax.linalg.cholesky(v, symmetrize_input=False))(a)


B = RNG.standard_normal((4, 4, 8)).astype(np.float32)


def _solve(a, b, left_side, lower, transpose_a):
    a = np.tril(a) if lower else np.triu(a)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if left_side:
        return np.linalg.solve(a, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


@pytest.mark.parametrize("left_side,transpose_a,a_spec,b_spec,want", [
    # op(a) x = b: a's dim (left ^ transpose_a) is contracted, b's rows are; the result is
    # (a's other dim, b's columns)
    (True, False, ("a", "b", None), ("a", None, None), P("a", "b", None)),
    (True, False, ("a", None, None), ("a", None, "b"), P("a", None, "b")),
    (True, True, (None, None, "b"), (None, None, "a"), P(None, "b", "a")),
    # x op(a) = b: b's columns are contracted; the result is (b's rows, a's other dim)
    (False, False, (None, None, "b"), (None, "a", None), P(None, "a", "b")),
    (False, True, ("a", "b", None), ("a", None, None), P("a", None, "b")),
])
def test_triangular_solve_types(mesh, left_side, transpose_a, a_spec, b_spec, want):
    lower = not transpose_a
    b_value = B if left_side else np.swapaxes(B, 1, 2).copy()
    a, b = _put(mesh, SPD, *a_spec), _put(mesh, b_value, *b_spec)
    specs, (x,) = _traced_specs(lambda u, v: (lax.linalg.triangular_solve(
        u, v, left_side=left_side, lower=lower, transpose_a=transpose_a),), a, b)
    assert specs == [want] and x.sharding.spec == want
    np.testing.assert_allclose(np.asarray(x), _solve(SPD, b_value, left_side, lower,
                                                    transpose_a), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("a_spec,b_spec,message", [
    (("a", None, None), (None, None, None),
     r"All inputs to triangular_solve must have the same batch sharding, but got P\('a'\) "
     r"and P\(None\)"),
    ((None, None, "b"), (None, None, None),
     r"triangular solve input `a` must be unsharded on the contracting axis, but got "
     r"P\(None, None, 'b'\) with left_side=True and transpose_a=False"),
    ((None, None, None), (None, "b", None),
     r"triangular solve input `b` must be unsharded on the contracting axis, but got "
     r"P\(None, 'b', None\) with left_side=True and transpose_a=False"),
])
def test_triangular_solve_errors_as_jax(mesh, a_spec, b_spec, message):
    a, b = _put(mesh, SPD, *a_spec), _put(mesh, B, *b_spec)
    with pytest.raises(ShardingTypeError, match=message):
        xs.jit(lambda u, v: lax.linalg.triangular_solve(u, v, left_side=True, lower=True))(
            a, b)


def test_rng_bit_generator_types(mesh):
    """The new key has the key's type, the bits are replicated, or `out_sharding`'s type;
    the bits are the same numbers whatever their sharding."""
    key = _put(mesh, np.array([1, 2], np.uint32))
    seen = {}

    def draw(k):
        k2, bits = lax.rng_bit_generator(k, (8, 4))
        _, sharded = lax.rng_bit_generator(k, (8, 4), out_sharding=P("a", "b"))
        seen.update(key=xs.typeof(k2).sharding.spec, bits=xs.typeof(bits).sharding.spec,
                    sharded=xs.typeof(sharded).sharding.spec)
        return bits, sharded

    bits, sharded = xs.jit(draw)(key)
    assert seen == {"key": P(None), "bits": P(None, None), "sharded": P("a", "b")}
    assert sharded.sharding.spec == P("a", "b")
    eager = np.asarray(lax.rng_bit_generator(np.array([1, 2], np.uint32), (8, 4))[1])
    np.testing.assert_array_equal(np.asarray(bits), eager)
    np.testing.assert_array_equal(np.asarray(sharded), eager)
    with pytest.raises(TypeError, match="rng_bit_generator: unsupported dtype int32"):
        lax.rng_bit_generator(np.array([1, 2], np.uint32), (2,), np.int32)


@pytest.mark.parametrize("sampler", [
    lambda k, **kw: xr.bits(k, (8, 4), **kw),
    lambda k, **kw: xr.uniform(k, (8, 4), **kw),
    lambda k, **kw: xr.normal(k, (8, 4), **kw),
    lambda k, **kw: xr.truncated_normal(k, -1.0, 1.0, (8, 4), **kw),
    lambda k, **kw: xr.bernoulli(k, 0.3, (8, 4), **kw),
    lambda k, **kw: xr.randint(k, (8, 4), 0, 10, **kw),
    lambda k, **kw: xr.permutation(k, X, **kw),
])
def test_random_samplers_take_out_sharding(mesh, sampler):
    """A sample from one key is replicated (JAX's random_bits rule: the key's spec, then
    unsharded dims), or typed ``out_sharding=``; the numbers do not change."""
    key = _put(mesh, np.asarray(xr.PRNGKey(3)))
    seen = {}

    def draw(k):
        plain, placed = sampler(k), sampler(k, out_sharding=P("a", "b"))
        seen.update(plain=xs.typeof(plain).sharding.spec, placed=xs.typeof(placed).sharding.spec)
        return plain, placed

    plain, placed = xs.jit(draw)(key)
    assert seen == {"plain": P(None, None), "placed": P("a", "b")}
    assert placed.sharding.spec == P("a", "b")
    eager = np.asarray(sampler(xr.PRNGKey(3)))
    np.testing.assert_array_equal(np.asarray(plain), eager)
    np.testing.assert_array_equal(np.asarray(placed), eager)


def test_auto_axes_reshards_its_arguments(mesh):
    """JAX's auto_axes reshards each argument to its spec without the axes made Auto
    (``modify_spec_for_auto_manual``): inside, `u` is a new value constrained to P('a')
    with its dims open to 'b' (a mesh with an Auto axis leaves every dim open to it);
    eagerly the array moves to P('a', None). The result is resharded to out_sharding."""
    x = _put(mesh, X, "a", "b")
    seen = {}

    def inner(u):
        seen["same"] = u is x
        seen["spec"] = xs.typeof(u).sharding.spec
        inst = getattr(u, "inst", None)
        if inst is not None:
            sharding = inst.sharding
            seen["constraint"] = (inst.opcode, [tuple(a.name for a in sharding.dim_axes(d))
                                                for d in range(2)],
                                  [dim.is_closed for dim in sharding.dims])
        else:
            seen["shards"] = [s.data.shape for s in u.addressable_shards]
        return u * 2.0

    out = xs.jit(xs.sharding.auto_axes(inner, axes="b", out_sharding=P(None, "b")))(x)
    assert seen["spec"] == P("a", None)
    assert seen["constraint"] == ("custom-call", [("a",), ()], [False, False])
    assert out.sharding.spec == P(None, "b")
    np.testing.assert_array_equal(np.asarray(out), X * 2.0)

    eager = xs.sharding.auto_axes(inner, axes="b", out_sharding=P(None, "b"))(x)
    assert not seen["same"] and seen["spec"] == P("a", None)
    assert seen["shards"] == [(4, 4)] * 8
    assert eager.sharding.spec == P(None, "b")
    np.testing.assert_array_equal(np.asarray(eager), X * 2.0)


def test_explicit_axes_results_leave_the_axes_auto_again():
    """JAX's explicit_axes reshards its results to their specs over the axes Explicit
    outside: on an Auto mesh the result's dims are open again (propagation places it)."""
    auto = xs.make_mesh((2, 4), ("a", "b"), axis_types=(xs.AxisType.Auto,) * 2)
    xa = xs.device_put(X, NamedSharding(auto, P("a")))
    seen = {}

    @xs.jit
    def g(v):
        out = xs.sharding.explicit_axes(lambda u: u * 2.0,
                                        in_sharding=NamedSharding(auto, P("a", "b")))(v)
        seen["dims"] = [(tuple(a.name for a in out.inst.sharding.dim_axes(d)),
                         out.inst.sharding.dims[d].is_closed) for d in range(2)]
        return out

    np.testing.assert_array_equal(np.asarray(g(xa)), X * 2.0)
    assert seen["dims"] == [((), False), ((), False)]
