"""Indexing as JAX does it (issue 16): traced indices into arrays sharded on one or both dims,
and out-of-range static indices, which clamp on reads and drop on updates."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P

X = np.arange(96, dtype=np.float32).reshape(8, 12)
SPECS = [P("v", "d"), P("d", "v"), P("v"), P(None, "d"), P("d"), P(None, "v"), P()]


@pytest.fixture
def mesh():
    return xs.make_mesh({"v": 2, "d": 4}, axis_types=xs.AxisType.Auto)  # propagation


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_traced_index_of_a_sharded_array(mesh, spec):
    """x[i], x[i, 2:5], x[:, j], x[ids] and x[i, j] with a traced i, j, ids, against numpy."""
    replicated = NamedSharding(mesh, P())
    sharded = NamedSharding(mesh, spec)
    cases = [
        (lambda x, i: x[i], np.int32(3), X[3]),
        (lambda x, i: x[i, 2:5], np.int32(3), X[3, 2:5]),
        (lambda x, j: x[:, j], np.int32(7), X[:, 7]),
        (lambda x, ids: x[ids], np.array([5, 0, 7], np.int32), X[[5, 0, 7]]),
        (lambda x, ids: x[:, ids], np.array([11, 2], np.int32), X[:, [11, 2]]),
        (lambda x, i: x[i, i + 4], np.int32(6), X[6, 10]),
    ]
    for k, (function, index, expected) in enumerate(cases):
        f = xs.jit(function, in_shardings=(sharded, replicated))
        got = f(X, index)
        np.testing.assert_array_equal(np.asarray(got), expected, err_msg=f"case {k}")


def test_traced_index_reads_clamp_out_of_range(mesh):
    f = xs.jit(lambda x, i: x[i], in_shardings=(NamedSharding(mesh, P("v", "d")),
                                                NamedSharding(mesh, P())))
    np.testing.assert_array_equal(np.asarray(f(X, np.int32(10))), X[7])
    np.testing.assert_array_equal(np.asarray(f(X, np.int32(-10))), X[0])


def test_out_of_range_static_indices_clamp_as_in_jax():
    """What JAX 0.10 gives: x[10] of 8 rows is x[7], x[-10] is x[0], eagerly and in jit."""
    x = xnp.asarray(X)
    for function, expected in [(lambda x: x[10], X[7]), (lambda x: x[-10], X[0]),
                               (lambda x: x[10, 2:5], X[7, 2:5]), (lambda x: x[3, 20], X[3, 11]),
                               (lambda x: x[-9, -13], X[0, 0]),
                               (lambda x: x[:, 14], X[:, 11]),
                               (lambda x: x[np.array([10, -10, 3])], X[[7, 0, 3]])]:
        np.testing.assert_array_equal(np.asarray(function(x)), expected)
        np.testing.assert_array_equal(np.asarray(xs.jit(function)(X)), expected)


def test_out_of_range_static_updates_are_dropped_as_in_jax():
    x = xnp.asarray(X)
    np.testing.assert_array_equal(np.asarray(x.at[10].set(0.0)), X)
    np.testing.assert_array_equal(np.asarray(xs.jit(lambda x: x.at[-9, 1].add(5.0))(X)), X)
    expected = X.copy()
    expected[7, 1] += 5.0
    np.testing.assert_array_equal(np.asarray(x.at[-1, 1].add(5.0)), expected)


def test_index_into_an_empty_dim_is_an_error():
    with pytest.raises(IndexError, match="size 0"):
        xnp.zeros((0, 3))[0]


def test_boolean_masks_on_concrete_arrays_and_an_error_under_jit(mesh):
    w = xs.device_put(X, NamedSharding(mesh, P("v", "d")))
    np.testing.assert_array_equal(np.asarray(w[w > 90]), X[X > 90])
    np.testing.assert_array_equal(np.asarray(xnp.asarray(X)[X[:, 0] > 40]), X[X[:, 0] > 40])
    with pytest.raises(xs.errors.XlaSpmdError, match="boolean mask"):
        xs.jit(lambda x: x[x > 2])(X)
