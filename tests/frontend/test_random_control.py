"""xla_spmd.random (determinism, ranges, moments) and forward control flow."""

import numpy as np

import xla_spmd as xs
import xla_spmd.lax as lax
import xla_spmd.numpy as xnp
import xla_spmd.random as xr


def test_keys_are_deterministic_and_split_differs():
    k = xr.key(42)
    a = np.asarray(xr.normal(k, (64,)))
    b = np.asarray(xs.jit(lambda k: xr.normal(k, (64,)))(k))
    np.testing.assert_array_equal(a, b)
    k1, k2 = xr.split(k)
    assert not np.array_equal(np.asarray(xr.uniform(k1, (8,))), np.asarray(xr.uniform(k2, (8,))))
    lowered = xs.jit(lambda k: xr.uniform(k, (4,))).lower(k).as_text(dialect="hlo")
    # threefry2x32 in plain u32 ops (as JAX lowers it): adds, rotations, xors
    assert "shift-right-logical" in lowered and "xor(" in lowered


def test_distributions(x64):
    k1, k2, k3 = xr.split(xr.key(0), 3)
    u = np.asarray(xr.uniform(k1, (2000,), minval=-1.0, maxval=3.0))
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 0.1
    n = np.asarray(xr.normal(k2, (4000,)))
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    i = np.asarray(xr.randint(k3, (1000,), 2, 7))
    assert i.dtype == np.int64 and set(np.unique(i)) == {2, 3, 4, 5, 6}  # x64: int64
    assert np.asarray(xr.uniform(k1, (3,), xnp.float64)).dtype == np.float64
    assert sorted(np.asarray(xr.permutation(k1, 6)).tolist()) == list(range(6))
    assert np.asarray(xr.fold_in(k1, 3)).shape == (2,)


def test_while_loop_and_fori_loop_with_captures():
    scale = np.float32(3.0)

    def f(x, limit):
        y = lax.while_loop(lambda c: c[1] < limit, lambda c: (c[0] * scale, c[1] + 1), (x, 0))
        z = lax.fori_loop(0, 3, lambda i, v: v + xnp.astype(i, xnp.float32) * x, x)
        return y[0], z

    y, z = xs.jit(f)(np.float32(2.0), 3)
    assert float(y) == 54.0 and float(z) == 2.0 + 3 * 2.0
    text = xs.jit(f).lower(np.float32(2.0), 3).as_text(dialect="hlo")
    assert "while(" in text and "known_trip_count" in text


def test_scan_matches_python_loop():
    xs_ = np.random.randn(5, 3).astype(np.float32)
    carry, ys = xs.jit(lambda c, x: lax.scan(lambda c, x: (c + x, c * x), c, x))(
        np.zeros(3, np.float32), xs_)
    c, expected = np.zeros(3, np.float32), []
    for row in xs_:
        expected.append(c * row)
        c = c + row
    np.testing.assert_allclose(np.asarray(carry), c, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ys), np.stack(expected), rtol=1e-6)


def test_cond_and_switch():
    f = xs.jit(lambda p, x: lax.cond(p, lambda x: x + 1.0, lambda x: x - 1.0, x))
    assert float(f(True, np.float32(1.0))) == 2.0 and float(f(False, np.float32(1.0))) == 0.0
    g = xs.jit(lambda i, x: lax.switch(i, [lambda x: x, lambda x: x * 2.0, lambda x: -x], x))
    assert [float(g(i, np.float32(3.0))) for i in (0, 1, 2, 7)] == [3.0, 6.0, -3.0, -3.0]
