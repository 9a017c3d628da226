"""Shardy #sdy.sharding text: parse and print exactly as Shardy does, with clear errors."""

import pytest
from hypothesis import given, settings
from test_tensor_sharding import shardings

from xla_spmd.errors import ParseError
from xla_spmd.mesh import AxisRef, make_mesh
from xla_spmd.sharding import (
    DimSharding,
    TensorSharding,
    parse_sharding,
    parse_sharding_per_value,
    print_sharding,
    print_sharding_per_value,
)

MESHES = {"mesh": make_mesh({"a": 2, "b": 4, "c": 2, "d": 2}), "other": make_mesh({"x": 8})}


@pytest.mark.parametrize("text", [
    '#sdy.sharding<@mesh, [{"a", ?}, {"b":(1)2}p1], replicated={"c"}>',
    '#sdy.sharding<@mesh, [{}, {?}]>',
    '#sdy.sharding<@mesh, [{"a"}p0, {"b", "c"}]>',
    '#sdy.sharding<@mesh, [{?}p2], replicated={"a", "c"}, unreduced={"d"}>',
    '#sdy.sharding<@mesh, []>',
    '#sdy.sharding<@other, [{"x":(2)4}, {"x":(1)2}]>',
    '#sdy.sharding<mesh<["x"=2]>, [{"x"}]>',
    '#sdy.sharding<mesh<["x"=2], device_ids=[1, 0]>, [{"x"}]>',
])
def test_round_trip(text):
    sharding = parse_sharding(text, MESHES)
    assert print_sharding(sharding) == text
    assert str(sharding) == text


def test_parsed_structure():
    sharding = parse_sharding('#sdy.sharding<@mesh, [{"a", ?}, {"b":(1)2}p1], '
                              'replicated={"c"}>', MESHES)
    assert sharding.dims == (DimSharding([AxisRef("a")], is_closed=False),
                             DimSharding([AxisRef("b", (1, 2))], priority=1))
    assert sharding.replicated == (AxisRef("c"),) and sharding.mesh is MESHES["mesh"]
    inline = parse_sharding('#sdy.sharding<mesh<["x"=2]>, [{"x"}]>')
    assert inline.mesh_name is None and inline.mesh == make_mesh({"x": 2})


def test_replicated_printed_in_mesh_order():
    text = '#sdy.sharding<@mesh, [{}], replicated={"c", "a"}>'
    assert print_sharding(parse_sharding(text, MESHES)) == (
        '#sdy.sharding<@mesh, [{}], replicated={"a", "c"}>')


def test_sharding_per_value():
    text = '#sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>, <@other, [{?}]>]>'
    values = parse_sharding_per_value(text, MESHES)
    assert len(values) == 2 and values[1].mesh_name == "other"
    assert print_sharding_per_value(values) == text
    assert print_sharding_per_value([]) == "#sdy.sharding_per_value<[]>"


@pytest.mark.parametrize("text, message", [
    ('#sdy.sharding<@nope, [{}]>', "unknown mesh @nope (known meshes: @mesh, @other)"),
    ('#sdy.sharding<@mesh, [{"z"}]>', 'uses axis "z", which is not in mesh'),
    ('#sdy.sharding<@mesh, [{"a"}, {"a"}]>', 'axis "a" is used twice'),
    ('#sdy.sharding<@mesh, [{"b":(1)3}]>', "does not divide the size 4"),
    ('#sdy.sharding<@mesh, [{}p1]>', "empty closed dim sharding cannot have priority"),
    ('#sdy.sharding<@mesh, [{"a", ?, "b"}]>', "expected '}'"),
    ('#sdy.sharding<@mesh, [{a}]>', "expected a quoted name"),
    ('#sdy.sharding<@mesh, [{}], foo={"a"}>', "expected 'replicated=' or 'unreduced='"),
    ('#sdy.sharding<@mesh, [{}]', "expected '>'"),
])
def test_parse_errors(text, message):
    with pytest.raises(ParseError) as error:
        parse_sharding(text, MESHES)
    assert message in str(error.value)


@settings(max_examples=80, deadline=None)
@given(shardings())
def test_property_text_round_trip(sharding):
    text = print_sharding(sharding)
    assert parse_sharding(text, {"mesh": sharding.mesh}) == sharding
    inline = TensorSharding(sharding.mesh, sharding.dims, sharding.replicated,
                            sharding.unreduced, mesh_name=None)
    assert parse_sharding(print_sharding(inline)) == inline
