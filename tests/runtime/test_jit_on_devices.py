"""Sharded programs run on the devices whatever gives them their shardings: shard_map,
with_sharding_constraint, or the sharding of a committed argument; `Lowered.compile()`."""

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd.sharding import program_mesh as module_mesh

X = np.arange(32.0, dtype=np.float32).reshape(4, 8)


@pytest.fixture
def mesh():
    return xs.make_mesh({"data": 2, "model": 4})


def sharding(mesh, *spec):
    return xs.NamedSharding(mesh, xs.P(*spec))


def summed_over_data(mesh):
    return xs.shard_map(lambda block: xs.lax.psum(block, "data"), mesh=mesh,
                        in_specs=(xs.P("data", "model"),), out_specs=xs.P(None, "model"))


def test_shard_map_runs_on_the_devices_eagerly_and_under_jit(mesh):
    f = summed_over_data(mesh)
    expected = X[:2] + X[2:]
    for result in (f(X), xs.jit(f)(X), xs.jit(f)(xs.device_put(X, sharding(mesh, "data",
                                                                              "model")))):
        assert isinstance(result, xs.ShardedArray)
        assert result.sharding.mesh == mesh
        np.testing.assert_array_equal(np.asarray(result), expected)


def test_module_mesh_finds_a_shard_map_mesh(mesh):
    lowered = xs.jit(summed_over_data(mesh)).lower(X)
    assert all(p.sharding is None for p in lowered.module.entry.parameters)
    assert module_mesh(lowered.module) == mesh


def test_sharding_constraint_alone_runs_on_the_devices(mesh):
    f = xs.jit(lambda x: xs.with_sharding_constraint(x * 2, sharding(mesh, "model")) + 1)
    assert module_mesh(f.lower(np.ones(8, np.float32)).module) == mesh
    result = f(np.arange(8.0, dtype=np.float32))
    assert isinstance(result, xs.ShardedArray) and result.sharding.mesh == mesh
    np.testing.assert_array_equal(np.asarray(result), np.arange(8.0) * 2 + 1)


def test_committed_argument_sharding_becomes_the_parameter_sharding(mesh):
    a = xs.device_put(X, sharding(mesh, "data", None))
    f = xs.jit(lambda a: a * 2)
    (parameter,), _ = f.lower(a).in_shardings
    assert parameter == a.sharding
    result = f(a)
    assert isinstance(result, xs.ShardedArray) and result.sharding.mesh == mesh
    np.testing.assert_array_equal(np.asarray(result), X * 2)
    # explicit in_shardings still win; a plain array argument stays unsharded
    explicit = xs.jit(lambda a: a * 2, in_shardings=sharding(mesh, None, "model"))
    (parameter,), _ = explicit.lower(a).in_shardings
    assert parameter == sharding(mesh, None, "model")
    assert f.lower(X).in_shardings == ((None,), {})


def test_compile_of_a_sharded_function_prints_the_per_device_program(mesh):
    f = xs.jit(lambda a, scale: a * scale, in_shardings=(sharding(mesh, "data", "model"), None))
    compiled = f.lower(X, 3.0).compile()
    text = compiled.as_text()
    assert "num_partitions=8" in text and "f32[2,2]" in text
    np.testing.assert_array_equal(np.asarray(compiled(X, 2.0)), X * 2)
    with pytest.raises(TypeError, match="compiled for"):
        compiled(np.ones((2, 2), np.float32), 2.0)


def test_compile_of_shard_map(mesh):
    compiled = xs.jit(summed_over_data(mesh)).lower(X).compile()
    assert "num_partitions=8" in compiled.as_text()
    np.testing.assert_array_equal(np.asarray(compiled(X)), X[:2] + X[2:])
