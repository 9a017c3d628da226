"""ShardedArray reads like a JAX array: formatting, printing, operators, indexing and
ndarray methods work on the gathered value and give numpy values."""

import numpy as np
import pytest

import xla_spmd as xs

VALUES = np.arange(8.0, dtype=np.float32).reshape(2, 4)


@pytest.fixture
def mesh():
    return xs.make_mesh({"data": 2, "model": 4})


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
    assert (loss < 20) is np.True_ and not (loss < 2)
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


def test_scalar_conversions(loss):
    assert float(loss) == 17.5 and int(loss) == 17 and loss.item() == 17.5
    assert round(loss) == 18 and bool(loss)


def test_replicated_array_is_read_without_gathering(mesh):
    """A replicated array (a loss) is whole on every process: reading it communicates
    nothing, so one rank alone may print it."""
    from xla_spmd.runtime.sharded_array import _held_whole

    replicated = xs.device_put(VALUES, xs.NamedSharding(mesh, xs.P()))
    assert _held_whole(replicated)
