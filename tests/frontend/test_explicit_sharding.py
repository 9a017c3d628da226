"""JAX 0.10's explicit-sharding names (issue 16): AxisType, make_mesh(axis_types=...),
xs.reshard, xs.typeof, xs.use_mesh. Explicit axes are propagated as Auto here (README)."""

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd import NamedSharding, P
from xla_spmd.errors import ShardingError, XlaSpmdError

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
