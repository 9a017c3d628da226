"""The multi-process input path in one process (issue 16): make_array_from_callback,
make_array_from_single_device_arrays, make_array_from_process_local_data give the arrays
device_put gives (the MPI case is in test_runtime_mpi.py)."""

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd import NamedSharding, P
from xla_spmd.errors import ShardingError

X = np.arange(70.0, dtype=np.float32).reshape(10, 7)  # uneven over 4 and over 2


@pytest.fixture
def sharding():
    return NamedSharding(xs.make_mesh({"a": 2, "b": 4}), P("b", "a"))


def _same(a, b):
    assert a.sharding == b.sharding and a.dtype == b.dtype and a.shape == b.shape
    for s, t in zip(a.addressable_shards, b.addressable_shards):
        assert s.index == t.index
        np.testing.assert_array_equal(s.data, t.data)


def test_callback_and_local_data_equal_device_put(sharding):
    placed = xs.device_put(X, sharding)
    calls = []
    from_callback = xs.make_array_from_callback(X.shape, sharding,
                                                lambda index: calls.append(index) or X[index])
    assert len(calls) == 8
    _same(from_callback, placed)
    _same(xs.make_array_from_process_local_data(sharding, X), placed)
    _same(xs.make_array_from_process_local_data(sharding, X, X.shape), placed)
    shards = [s.data for s in placed.addressable_shards]
    _same(xs.make_array_from_single_device_arrays(X.shape, sharding, shards), placed)
    np.testing.assert_array_equal(np.asarray(from_callback * 2.0), X * 2.0)


def test_wrong_shapes_are_named(sharding):
    with pytest.raises(ShardingError, match=r"got shape \(10, 7\) .* shard has shape \(3, 4\)"):
        xs.make_array_from_callback(X.shape, sharding, lambda index: X)
    with pytest.raises(ShardingError, match="3 arrays for the 8 devices"):
        xs.make_array_from_single_device_arrays(X.shape, sharding, [X, X, X])
    with pytest.raises(ShardingError, match="local data has shape"):
        xs.make_array_from_process_local_data(sharding, X, (12, 7))
