"""GSPMD HloSharding <-> axis-based TensorSharding: reference cases and round-trip properties."""

import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_tensor_sharding import shardings

from xla_spmd.errors import ShardingError
from xla_spmd.ir.hlo_sharding import HloSharding
from xla_spmd.mesh import AxisRef, make_mesh
from xla_spmd.sharding import TensorSharding, axes_to_hlo, hlo_to_axes, hlo_tuple_to_axes


def test_reference_export_examples():
    mesh = make_mesh({"axis_0": 2, "axis_1": 4, "axis_2": 4})
    sharding = TensorSharding(mesh, [["axis_2"], ["axis_0", "axis_1"]])
    assert str(axes_to_hlo(sharding)) == "{devices=[4,8]<=[8,4]T(1,0)}"
    mesh32 = make_mesh({"axis_0": 2, "axis_1": 16})
    assert str(axes_to_hlo(TensorSharding(mesh32, [[], ["axis_0"]]))) == (
        "{devices=[1,2,16]<=[32] last_tile_dim_replicate}")


@pytest.mark.parametrize("sharding, manual, expected", [
    (lambda m: TensorSharding(m, [[], []]), (), "{replicated}"),
    (lambda m: TensorSharding(m, [["y"], []]), ("x",), "{devices=[4,1,2]<=[2,4]T(1,0) "
                                                       "last_tile_dims={manual}}"),
    (lambda m: TensorSharding(m, [[], []]), ("x", "y"), "{manual}"),
    (lambda m: TensorSharding(m, [[], []]), ("x",), "{devices=[1,1,2,4]<=[8] "
                                                    "last_tile_dims={manual, replicated}}"),
    (lambda m: TensorSharding(m, [["x"], []], unreduced=["y"]),
     (), "{devices=[2,1,4]<=[8] last_tile_dims={unreduced}}"),
    (lambda m: TensorSharding(m, [[AxisRef("y", (2, 2))], ["x"]]),
     (), "{devices=[2,2,2]<=[4,2]T(1,0) last_tile_dim_replicate}"),
])
def test_export_cases(sharding, manual, expected):
    mesh = make_mesh({"x": 2, "y": 4})
    assert str(axes_to_hlo(sharding(mesh), manual_axes=manual)) == expected


def test_export_maximal_and_device_ids():
    maximal = make_mesh({}, device_ids=[3])
    assert str(axes_to_hlo(TensorSharding(maximal, [[]]))) == "{maximal device=3}"
    mesh = make_mesh({"x": 4}, device_ids=[3, 2, 1, 0])
    assert str(axes_to_hlo(TensorSharding(mesh, [["x"]]))) == "{devices=[4]3,2,1,0}"
    transposed = make_mesh({"x": 2, "y": 2}, device_ids=[0, 2, 1, 3])
    assert str(axes_to_hlo(TensorSharding(transposed, [["x"], ["y"]]),
                           explicit_devices=False)) == "{devices=[2,2]<=[2,2]T(1,0)}"
    with pytest.raises(ShardingError, match="has no iota form"):
        axes_to_hlo(TensorSharding(make_mesh({"x": 4}, device_ids=[0, 3, 1, 2]), [["x"]]),
                    explicit_devices=False)


# Every sharding XLA prints converts to an axis-based one and prints back identically.
XLA_PRINTED = [
    ("{replicated}", 2), ("{maximal device=3}", 1), ("{manual}", 2),
    ("{devices=[2,1,4]0,1,2,3,4,5,6,7}", None), ("{devices=[2,1,4]<=[8]}", None),
    ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", None),
    ("{devices=[4,2]<=[2,4]T(1,0)}", None), ("{devices=[2,2]0,2,1,3}", None),
    ("{devices=[4]0,3,1,2}", None),
    ("{devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}", None),
    ("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}", None),
    ("{devices=[4,4,1]<=[4,2,2]T(1,0,2)}", None), ("{devices=[6,35]<=[7,10,3]T(2,1,0)}", None),
    ("{devices=[4,8]<=[8,4]T(1,0)}", None), ("{devices=[1,2,16]<=[32] last_tile_dim_replicate}",
                                              None),
    ("{devices=[2,2,2]<=[8] last_tile_dims={unreduced}}", None),
]


@pytest.mark.parametrize("text, rank", XLA_PRINTED)
def test_xla_printed_round_trip(text, rank):
    imported = hlo_to_axes(HloSharding.parse(text), rank)
    assert str(imported.to_hlo_sharding()) == text


def test_tuple_round_trip():
    hlo = HloSharding.parse("{{replicated}, {devices=[2]0,1}}")
    elements = hlo_tuple_to_axes(hlo, [2, None])
    back = HloSharding.tuple_([element.to_hlo_sharding() for element in elements])
    assert str(back) == "{{replicated}, {devices=[2]0,1}}"


def test_reference_import_factorization():
    imported = hlo_to_axes(HloSharding.parse("{devices=[6,35]<=[7,10,3]T(2,1,0)}"))
    mesh = imported.sharding.mesh
    sizes = [mesh.axis_size(ref) for dim in imported.sharding.dims for ref in dim.axes]
    assert sizes == [3, 2, 5, 7]
    assert mesh.shape == {"_axis_0": 7, "_axis_1": 2, "_axis_2": 5, "_axis_3": 3}


def test_import_over_given_mesh_uses_sub_axes():
    mesh = make_mesh({"x": 8})
    imported = hlo_to_axes(HloSharding.parse("{devices=[4,2]<=[2,4]T(1,0)}"), mesh=mesh)
    assert str(imported.sharding) == '#sdy.sharding<@mesh, [{"x":(2)4}, {"x":(1)2}]>'
    mesh = make_mesh({"a": 2, "b": 4})
    imported = hlo_to_axes(HloSharding.parse("{devices=[8]<=[8]}"), mesh=mesh)
    assert str(imported.sharding) == '#sdy.sharding<@mesh, [{"a", "b"}]>'


@pytest.mark.parametrize("text, mesh, message", [
    ("{devices=[2,3]<=[6]}", make_mesh({"x": 3, "y": 2}), "no axis-based form"),
    ("{devices=[4]0,3,1,2}", make_mesh({"x": 4}), "not a transpose of the mesh's"),
    ("{devices=[2]0,1}", make_mesh({"x": 4}), "spans devices [0, 1] but mesh"),
    ("{devices=[2]4,5}", None, "give a mesh over them"),
    ("{unknown}", None, "has no axis-based form"),
    ("{maximal device=1}", make_mesh({"x": 2}), "not the maximal mesh"),
    ("{devices=[2,2]<=[4]}", None, "tiles 2 dims but the tensor has rank 3"),
    ("{replicated}", None, "needs the tensor rank"),
])
def test_import_errors(text, mesh, message):
    rank = 3 if "rank 3" in message else 2 if text[1] in "um" else None
    with pytest.raises(ShardingError) as error:
        hlo_to_axes(HloSharding.parse(text), rank, mesh)
    assert message in str(error.value)


@settings(max_examples=150, deadline=None)
@given(shardings())
def test_property_round_trip(sharding):
    """axes -> HloSharding text -> axes (same mesh) -> HloSharding text is stable and the
    imported sharding places every device on the same shard."""
    hlo = axes_to_hlo(sharding)
    parsed = HloSharding.parse(str(hlo))
    assert parsed == hlo
    imported = hlo_to_axes(parsed, sharding.rank, sharding.mesh)
    assert str(imported.to_hlo_sharding()) == str(hlo)
    result = imported.sharding
    for device in sharding.mesh.all_device_ids:
        assert result.shard_index(device) == sharding.shard_index(device)
    assert {d for ref in result.unreduced for d in [ref.name]} <= set(sharding.mesh.axis_names)
    # Without a mesh the importer invents one; the device placement must still agree.
    if sharding.mesh.is_iota and hlo.is_tiled:
        fresh = hlo_to_axes(parsed).sharding
        assert str(axes_to_hlo(fresh)) == str(hlo)
        for device in sharding.mesh.all_device_ids:
            assert fresh.shard_index(device) == sharding.shard_index(device)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_property_any_iota_imports(reshape, data):
    """Every iota tile assignment with a common factorization converts and prints back."""
    assume(_prod(reshape) > 1)
    perm = data.draw(st.permutations(range(len(reshape))))
    transposed = [reshape[p] for p in perm]
    cut = data.draw(st.integers(0, len(transposed)))
    dims = [max(1, _prod(transposed[:cut])), _prod(transposed[cut:])]
    text = (f"{{devices=[{dims[0]},{dims[1]}]<={list(reshape)}T{tuple(perm)}}}"
            .replace(" ", "").replace(",)", ")"))
    hlo = HloSharding.parse(text)
    imported = hlo_to_axes(hlo)
    assert str(imported.to_hlo_sharding()) == str(hlo)
    array = hlo.device_array()
    for tile in itertools.product(*(range(n) for n in array.shape)):
        assert imported.sharding.shard_index(int(array[tile])) == tile


def _prod(values):
    result = 1
    for value in values:
        result *= value
    return result
