"""ShardedArray reads like a JAX array: operators, indexing and the math methods run on the
devices and give ShardedArrays with JAX's dtypes; formatting, printing and conversions read
the gathered value."""

import numpy as np
import pytest

import xla_spmd as xs

VALUES = np.arange(8.0, dtype=np.float32).reshape(2, 4)


@pytest.fixture
def mesh():
    return xs.make_mesh({"data": 2, "model": 4}, axis_types=xs.AxisType.Auto)


@pytest.fixture
def w(mesh):
    return xs.device_put(VALUES, xs.NamedSharding(mesh, xs.P("data", "model")))


@pytest.fixture
def loss(w):
    return xs.jit(lambda w: (w * w).mean())(w)


def test_format_and_print_show_values(w, loss):
    assert isinstance(loss, xs.ShardedArray)
    assert f"loss {loss:.3f}" == "loss 17.500"
    assert str(loss) == "17.5" and f"{loss}" == "17.5"
    assert str(w) == str(VALUES)
    assert "17.5" in repr(loss) and "float32" in repr(loss)
    assert "[[0., 1., 2., 3.]," in repr(w) and "sharding=" in repr(w)
    with pytest.raises(TypeError):
        format(w, ".3f")  # as numpy: a format spec needs a 0-d array


def test_operators_comparisons_and_reflected(w, loss):
    assert isinstance(loss < 20, xs.ShardedArray) and (loss < 20) and not (loss < 2)
    np.testing.assert_allclose(w - 0.1 * w, VALUES * 0.9)
    np.testing.assert_array_equal(2 ** w, 2 ** VALUES)
    np.testing.assert_array_equal(w @ w.T, VALUES @ VALUES.T)
    np.testing.assert_array_equal(np.float32(3) * w, 3 * VALUES)
    np.testing.assert_array_equal(w == VALUES, True)
    np.testing.assert_array_equal(-w, -VALUES)
    np.testing.assert_array_equal(abs(-w), VALUES)
    np.testing.assert_array_equal(np.exp(w), np.exp(VALUES))
    with pytest.raises(TypeError):
        hash(w)


def test_indexing_methods_and_sizes(w, loss):
    np.testing.assert_array_equal(w[0], VALUES[0])
    assert w[1, 2] == 6.0
    np.testing.assert_array_equal(w.T, VALUES.T)
    assert w.sum() == 28.0 and w.mean() == 3.5 and w.max() == 7.0 and w.min() == 0.0
    np.testing.assert_array_equal(w.sum(axis=0), VALUES.sum(0))
    assert w.reshape(4, 2).shape == (4, 2) and w.reshape(-1).shape == (8,)
    assert w.astype(np.int32).dtype == np.int32
    np.testing.assert_array_equal(w.transpose(), VALUES.T)
    np.testing.assert_array_equal(w.ravel(), VALUES.ravel())
    assert w.tolist() == VALUES.tolist() and loss.tolist() == 17.5
    copy = w.copy()
    copy[0, 0] = 100  # a numpy copy, the ShardedArray is untouched
    assert w[0, 0] == 0.0
    assert len(w) == 2 and [row.tolist() for row in w] == VALUES.tolist()
    assert w.block_until_ready() is w and loss.block_until_ready() is loss
    with pytest.raises(TypeError, match="0-d"):
        len(loss)
    with pytest.raises(TypeError, match="immutable"):
        w[0, 0] = 1.0


def _axes(sharding):
    return list(sharding.spec)


def test_eager_math_stays_sharded_with_jax_dtypes(w, loss):
    """``y + 1.0`` on a f32 ShardedArray is a f32 ShardedArray sharded like y (issue 16)."""
    for result, expected in ((w + 1.0, VALUES + 1), (w * 2, VALUES * 2), (2.5 - w, 2.5 - VALUES),
                             (w / 4, VALUES / 4), (-w, -VALUES), (w ** 2, VALUES ** 2)):
        assert isinstance(result, xs.ShardedArray) and result.dtype == np.float32
        assert _axes(result.sharding) == _axes(w.sharding)
        np.testing.assert_array_equal(np.asarray(result), expected.astype(np.float32))
    half = w * (1.0 / np.sqrt(4))  # a float64 numpy scalar is narrowed to f32, as in JAX
    assert half.dtype == np.float32
    ints = w.astype(np.int32)
    assert isinstance(ints, xs.ShardedArray) and ints.dtype == np.int32
    assert (ints * 2).dtype == np.int32 and (ints * 0.5).dtype == np.float32
    assert (ints + np.int64(1)).dtype == np.int32  # int64 narrowed without x64
    total = w.sum(axis=1)
    assert isinstance(total, xs.ShardedArray) and total.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(total), VALUES.sum(1))
    row = w[1]
    assert isinstance(row, xs.ShardedArray)
    np.testing.assert_array_equal(np.asarray(row), VALUES[1])
    assert (loss - 0.5).dtype == np.float32 and float(loss - 0.5) == 17.0
    assert all(isinstance(a, xs.Array) for a in (w + 1, w[0], w[:, 1:3], w.T, w.reshape(8),
                                                  w.mean(), w.astype(np.int8), w > 2))
    np.testing.assert_array_equal(np.asarray(w[:, 1:3]), VALUES[:, 1:3])
    np.testing.assert_array_equal(np.asarray(w[np.array([1, 0]), 2]), VALUES[[1, 0], 2])
    np.testing.assert_array_equal(np.asarray(w.transpose(1, 0)), VALUES.T)
    np.testing.assert_array_equal(np.asarray(w.max(axis=1, keepdims=True)),
                                  VALUES.max(1, keepdims=True))


def test_runtime_arrays_compute_with_numpy_keeping_float32(mesh):
    """The runtime's own ShardedArray (below the API) reads its values and computes with
    numpy; Python scalars stay weakly typed there too."""
    from xla_spmd.runtime import device_put

    w = device_put(VALUES, xs.NamedSharding(mesh, xs.P("data", "model")))
    assert not isinstance(w, xs.Array)
    assert isinstance(w + 1.0, np.ndarray) and (w + 1.0).dtype == np.float32


def test_device_put_narrows_64_bit_inputs(mesh):
    sharding = xs.NamedSharding(mesh, xs.P("data"))
    assert xs.device_put(np.ones((2, 4)), sharding).dtype == np.float32
    assert xs.device_put(np.ones((2, 4), np.int64), sharding).dtype == np.int32
    with xs.config.override(enable_x64=True):
        assert xs.device_put(np.ones((2, 4)), sharding).dtype == np.float64


def test_scalar_conversions(loss):
    assert float(loss) == 17.5 and int(loss) == 17 and loss.item() == 17.5
    assert round(loss) == 18 and bool(loss)


def test_replicated_array_is_read_without_gathering(mesh):
    """A replicated array (a loss) is whole on every process: reading it communicates
    nothing, so one rank alone may print it."""
    from xla_spmd.runtime.sharded_array import _held_whole

    replicated = xs.device_put(VALUES, xs.NamedSharding(mesh, xs.P()))
    assert _held_whole(replicated)
