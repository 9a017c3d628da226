"""TensorSharding invariants, shard shapes/offsets against brute force, PartitionSpec sugar."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xla_spmd.errors import ShardingError
from xla_spmd.mesh import AxisRef, make_mesh
from xla_spmd.sharding import (
    UNCONSTRAINED,
    DimSharding,
    NamedSharding,
    P,
    TensorSharding,
    axes_to_hlo,
)


@st.composite
def shardings(draw, max_rank=3, allow_unreduced=True):
    """Random meshes (iota or permuted) and shardings with sub-axes."""
    sizes = draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=1, max_size=3))
    names = [f"m{i}" for i in range(len(sizes))]
    ids = draw(st.permutations(range(int(np.prod(sizes))))) if draw(st.booleans()) else None
    mesh = make_mesh(dict(zip(names, sizes, strict=True)), device_ids=ids)
    rank = draw(st.integers(1, max_rank))
    dims = [[] for _ in range(rank)]
    replicated, unreduced = [], []
    for name, size in zip(names, sizes, strict=True):
        digits = [size] if size in (1, 2, 3) else draw(st.sampled_from(
            [[size], [2, size // 2], [size // 2, 2]]))
        pre = 1
        for digit in digits:
            ref = AxisRef(name) if digit == size else AxisRef(name, (pre, digit))
            pre *= digit
            where = draw(st.integers(-3 if allow_unreduced else -2, rank - 1))
            if where >= 0:
                dims[where].append(ref)
            elif where == -2:
                replicated.append(ref)
            elif where == -3:
                unreduced.append(ref)
    for dim in dims:
        order = draw(st.permutations(range(len(dim))))
        dim[:] = [dim[i] for i in order]
    return TensorSharding(mesh, dims, replicated, unreduced)


def test_shard_shape_and_offsets_example():
    mesh = make_mesh({"x": 2, "y": 4})
    sharding = TensorSharding(mesh, [["y"], ["x"]])
    assert sharding.shard_shape((6, 3)) == (2, 2)
    assert sharding.shard_offsets((6, 3), 5) == ((2, 2), (2, 1))
    assert sharding.shard_slices((6, 3), 7) == (slice(6, 6), slice(2, 3))  # all padding rows
    assert sharding.devices_holding((6, 3), (0, 2)) == (4,)
    assert TensorSharding(mesh, [["x"], []]).devices_holding((2, 2), (1, 1)) == (4, 5, 6, 7)


@settings(max_examples=80, deadline=None)
@given(shardings(), st.data())
def test_shards_match_brute_force(sharding, data):
    shape = tuple(data.draw(st.lists(st.integers(0, 9), min_size=sharding.rank,
                                     max_size=sharding.rank)))
    shard = sharding.shard_shape(shape)
    holders = {}
    for device in sharding.mesh.all_device_ids:
        slices = sharding.shard_slices(shape, device)
        for dim, (sl, size, extent) in enumerate(zip(slices, shape, shard, strict=True)):
            assert sl.start == min(sharding.shard_index(device)[dim] * extent, size)
            assert 0 <= sl.stop - sl.start <= extent
        for index in itertools.product(*(range(s.start, s.stop) for s in slices)):
            holders.setdefault(index, []).append(device)
    groups = sharding.mesh.size // int(np.prod(sharding.tile_shape))
    assert set(holders) == set(itertools.product(*(range(d) for d in shape)))
    for index, devices in holders.items():
        assert len(devices) == groups
        assert sharding.devices_holding(shape, index) == tuple(sorted(devices))


@settings(max_examples=80, deadline=None)
@given(shardings())
def test_shard_index_matches_gspmd_tile_array(sharding):
    """Two independent derivations: mixed-radix coordinates vs the exported tile array."""
    hlo = axes_to_hlo(sharding)
    if not hlo.is_tiled:
        assert all(n == 1 for n in sharding.tile_shape)
        return
    array = hlo.device_array()
    for tile in itertools.product(*(range(n) for n in array.shape)):
        device = int(array[tile])
        assert sharding.shard_index(device) == tile[:sharding.rank]


def test_equal_named_and_tensor_shardings_hash_alike():
    """Python's rule (a == b implies hash(a) == hash(b)), across the two sharding types."""
    mesh = make_mesh({"data": 2, "model": 4})
    specs = [P(), P("data"), P("data", None), P(("data",)), P(None, "model"),
             P(("data", "model")), P("model", "data"), P(UNCONSTRAINED, "model")]
    named = [NamedSharding(mesh, spec) for spec in specs]
    tensors = [n.to_tensor_sharding(2) for n in named] + [
        n.to_tensor_sharding(3, mesh_name=None) for n in named] + [
        TensorSharding(mesh, [DimSharding(["data"], is_closed=False), DimSharding()])]
    everything = named + tensors
    pairs = 0
    for a, b in itertools.product(everything, repeat=2):
        if a == b:
            pairs += a is not b
            assert hash(a) == hash(b), (a, b)
    assert pairs > len(everything)  # cross-type equalities were exercised
    assert len({*named, *tensors}) < len(everything)


@pytest.mark.parametrize("build, message", [
    (lambda m: TensorSharding(m, [["z"]]), 'dim 0 of the sharding uses axis "z", which is not'),
    (lambda m: TensorSharding(m, [["x"], ["x"]]), 'axis "x" is used twice: in dim 0 and in dim 1'),
    (lambda m: TensorSharding(m, [["y"]], replicated=["y"]), "in dim 0 and in replicated"),
    (lambda m: TensorSharding(m, [[AxisRef("y", (1, 2))], ["y"]]), "overlapping with"),
    (lambda m: TensorSharding(m, [[]], unreduced=["x"], replicated=["x"]), "in replicated and "
                                                                          "in unreduced"),
    (lambda m: TensorSharding(m, [[AxisRef("y", (2, 4))]]), "does not divide the size 4"),
    (lambda m: DimSharding((), priority=1), "empty closed dim sharding cannot have priority"),
    (lambda m: TensorSharding(m, [["x"]]).shard_shape((4, 4)), "has 1 dims but tensor has shape"),
    (lambda m: TensorSharding(m, [["x"]]).devices_holding((4,), (4,)), "outside shape"),
    (lambda m: TensorSharding("mesh", [["x"]]), "needs a Mesh"),
])
def test_sharding_errors(build, message):
    with pytest.raises(ShardingError) as error:
        build(make_mesh({"x": 2, "y": 4}))
    assert message in str(error.value)


def test_replicated_sorted_and_repr():
    mesh = make_mesh({"a": 2, "b": 2, "c": 2})
    sharding = TensorSharding(mesh, [DimSharding(["a"], is_closed=False)], replicated=["c", "b"])
    assert sharding.replicated == (AxisRef("b"), AxisRef("c"))
    assert repr(sharding) == 'TensorSharding(@mesh, [{"a", ?}], replicated={"b", "c"})'
    assert sharding == TensorSharding(mesh, [DimSharding(["a"], False)], replicated=["b", "c"])


def test_partition_spec_conversions():
    mesh = make_mesh({"data": 2, "model": 4})
    spec = P(("data", "model"), None)
    assert repr(spec) == "P(('data', 'model'), None)"
    sharding = NamedSharding(mesh, spec).to_tensor_sharding(3)
    assert str(sharding) == '#sdy.sharding<@mesh, [{"data", "model"}, {}, {}]>'
    assert sharding.to_partition_spec() == P(("data", "model"), None, None)
    open_dim = NamedSharding(mesh, P(P.UNCONSTRAINED, "model")).to_tensor_sharding(2)
    assert str(open_dim) == '#sdy.sharding<@mesh, [{?}, {"model"}]>'
    assert open_dim.to_partition_spec() == P(UNCONSTRAINED, "model")
    assert NamedSharding(mesh, P("data")).shard_shape((8, 8)) == (4, 8)
    assert NamedSharding.from_tensor_sharding(sharding).spec == P(("data", "model"), None, None)
    assert repr(NamedSharding(mesh, P("data"))) == (
        "NamedSharding(Mesh('data': 2, 'model': 4), P('data'))")


@pytest.mark.parametrize("build, message", [
    (lambda m: NamedSharding(m, P("z")), "names axis 'z', which is not in mesh"),
    (lambda m: NamedSharding(m, P("data", None)).to_tensor_sharding(1), "has 2 entries but"),
    (lambda m: P(3), "PartitionSpec entry 0 must be None"),
    (lambda m: NamedSharding(m, P("data", "data")).to_tensor_sharding(2), "used twice"),
    (lambda m: TensorSharding(m, [[AxisRef("model", (1, 2))]]).to_partition_spec(), "sub-axis"),
    (lambda m: TensorSharding(m, [DimSharding(["data"], False)]).to_partition_spec(), "open"),
])
def test_partition_spec_errors(build, message):
    with pytest.raises(ShardingError) as error:
        build(make_mesh({"data": 2, "model": 4}))
    assert message in str(error.value)
