"""Issue 16, "Pytrees and shardings": pytree-prefix shardings at any level, result shardings
as JAX's NamedShardings, `xs.tree`, and meshes over fewer devices than the job (checked
against numpy)."""

import dataclasses

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd.errors import ShardingError
from xla_spmd.sharding import NamedSharding, P

PARAMS = {"enc": {"w": np.arange(32.0, dtype=np.float32).reshape(8, 4),
                  "b": np.arange(4.0, dtype=np.float32)},
          "dec": np.arange(8.0, dtype=np.float32)}


def _step(params):
    new = xs.tree.map(lambda a: a * 2, params)
    return new, (params["dec"] ** 2).sum()


def _expected():
    return xs.tree.map(lambda a: a * 2, PARAMS), float((PARAMS["dec"] ** 2).sum())


def _check(result):
    (new, loss), (want_new, want_loss) = result, _expected()
    assert loss == want_loss
    for got, want in zip(xs.tree.leaves(new), xs.tree.leaves(want_new)):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_out_shardings_prefix_stands_for_a_whole_subtree():
    mesh = xs.make_mesh({"d": 8})
    rep = NamedSharding(mesh, P())
    new, loss = result = xs.jit(_step, out_shardings=(rep, rep))(PARAMS)
    _check(result)
    assert all(leaf.sharding.is_fully_replicated for leaf in xs.tree.leaves(new))
    assert loss.sharding == NamedSharding(mesh, P())


def test_in_shardings_prefix_at_an_inner_level():
    mesh = xs.make_mesh({"d": 8})
    rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("d"))
    f = xs.jit(_step, in_shardings=({"enc": rows, "dec": rep},))
    (args,), _ = f.lower(PARAMS).in_shardings
    assert args["enc"]["w"] == rows and args["enc"]["b"] == rows and args["dec"] == rep
    _check(f(PARAMS))


def test_a_prefix_that_does_not_match_names_the_place():
    mesh = xs.make_mesh({"d": 8})
    rep = NamedSharding(mesh, P())
    with pytest.raises(ShardingError, match=r"in_shardings\[0\]\['enc'\]: the list"):
        xs.jit(_step, in_shardings=({"enc": [rep], "dec": rep},))(PARAMS)
    with pytest.raises(ShardingError, match=r"keys \['x'\]"):
        xs.jit(_step, in_shardings=({"x": rep},))(PARAMS)


def test_device_put_takes_a_prefix_too():
    mesh = xs.make_mesh({"d": 8})
    placed = xs.device_put(PARAMS, {"enc": NamedSharding(mesh, P("d")),
                                    "dec": NamedSharding(mesh, P())})
    assert placed["enc"]["w"].sharding == NamedSharding(mesh, P("d", None))
    assert placed["dec"].sharding.is_fully_replicated


def test_result_shardings_are_named_shardings_without_open_dims():
    mesh = xs.make_mesh({"d": 4, "e": 2})
    f = xs.jit(lambda x: x + 1, in_shardings=NamedSharding(mesh, P("d")))
    y = f(np.ones((8, 8), np.float32))
    assert isinstance(y.sharding, NamedSharding)
    assert y.sharding.spec == P("d", None)
    assert y.sharding.to_partition_spec() == P("d", None)
    assert y.sharding.mesh == mesh
    # the axis-based form is closed as well
    assert all(dim.is_closed for dim in y.tensor_sharding.dims)


def test_results_of_unsharded_jits_have_a_sharding():
    y = xs.jit(lambda x: x + 1)(np.ones((2, 3), np.float32))
    assert y.sharding.spec == P() and y.sharding.is_fully_replicated
    assert y.sharding.shard_shape(y.shape) == (2, 3)


def test_tree_namespace():
    tree = {"b": (1, 2), "a": [3, None]}
    leaves, treedef = xs.tree.flatten(tree)
    assert leaves == [3, 1, 2] and xs.tree.leaves(tree) == leaves
    assert xs.tree.structure(tree) == treedef
    assert xs.tree.unflatten(treedef, [30, 10, 20]) == {"a": [30, None], "b": (10, 20)}
    assert xs.tree.map(lambda x, y: x + y, (1, [2]), (10, [20])) == (11, [22])


def test_registered_classes_and_dataclasses_go_through_jit():
    @xs.tree.register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: object
        b: object

    @dataclasses.dataclass
    class Scaled:
        value: object
        scale: float

    xs.tree.register_dataclass(Scaled, data_fields=["value"], meta_fields=["scale"])

    class Pair:
        def __init__(self, first, second):
            self.first, self.second = first, second

    xs.tree.register_pytree_node(Pair, lambda p: ((p.first, p.second), None),
                                 lambda _, children: Pair(*children))
    layer = Layer(np.ones((2, 2), np.float32), np.arange(2.0, dtype=np.float32))
    out = xs.jit(lambda l, p: Layer(l.w @ l.w + p.first, l.b * p.second))(
        layer, Pair(np.float32(1), np.float32(3)))
    assert isinstance(out, Layer)
    np.testing.assert_array_equal(np.asarray(out.w), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(np.asarray(out.b), [0.0, 3.0])
    scaled = xs.tree.map(lambda v: v + 1, Scaled(np.float32(1), 2.5))
    assert scaled.scale == 2.5 and float(scaled.value) == 2.0
    assert xs.tree.leaves(Scaled(5, 2.5)) == [5]


def test_a_mesh_over_fewer_devices_runs_on_the_first_ones():
    mesh = xs.make_mesh({"x": 4}, axis_types=xs.AxisType.Auto)  # a job of 8 devices
    a = xs.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P("x")))
    assert [shard.device.id for shard in a.addressable_shards] == [0, 1, 2, 3]
    assert float(xs.jit(lambda v: (v * 2).sum())(a)) == 56.0
    f = xs.jit(lambda v: v @ v.T, in_shardings=NamedSharding(mesh, P("x")))
    x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    np.testing.assert_array_equal(np.asarray(f(x)), x @ x.T)
    with pytest.raises(ShardingError, match="the job has 8"):
        xs.device_put(np.ones(16), NamedSharding(xs.make_mesh({"x": 16}), P("x")))


def test_jax_mesh_constructors():
    assert xs.make_mesh((2, 4), ("a", "b")) == xs.make_mesh({"a": 2, "b": 4})
    devices = np.array(xs.devices()[:4]).reshape(2, 2)
    mesh = xs.Mesh(devices, ("a", "b"))
    assert mesh == xs.make_mesh({"a": 2, "b": 2})
    assert xs.Mesh(np.array(xs.devices()[:2]), "data").shape == {"data": 2}
    reversed_mesh = xs.make_mesh((4,), ("x",), devices=xs.devices()[3::-1])
    assert reversed_mesh.devices.tolist() == [3, 2, 1, 0]
    g = xs.jit(lambda v: v * 10, in_shardings=NamedSharding(mesh, P("a", "b")))
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(np.asarray(g(x)), x * 10)
    with pytest.raises(ShardingError, match="permutation of 0..3"):
        xs.Mesh(np.array(xs.devices()[4:]).reshape(2, 2), ("a", "b"))
    with pytest.raises(ShardingError, match="2 axis sizes"):
        xs.make_mesh((2, 4), ("a",))


def test_named_and_axis_based_shardings_compare_by_placement():
    from xla_spmd.mesh import AxisRef
    from xla_spmd.sharding import DimSharding, TensorSharding

    mesh = xs.make_mesh({"d": 4, "e": 2})
    named = NamedSharding(mesh, P("d"))
    assert named == NamedSharding(mesh, P("d", None)) == NamedSharding(mesh, P(("d",)))
    assert hash(named) == hash(NamedSharding(mesh, P("d", None)))
    assert named != NamedSharding(mesh, P(None, "d"))
    open_dims = TensorSharding(mesh, (DimSharding(("d",), is_closed=False), DimSharding()))
    assert named == open_dims
    sub_axis = TensorSharding(mesh, (DimSharding((AxisRef("d", (1, 2)),)), DimSharding()))
    assert named != sub_axis
