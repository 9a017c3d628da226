"""HloSharding text: every form XLA prints parses and prints back identically."""

import pytest

from xla_spmd.errors import ParseError
from xla_spmd.ir.hlo_sharding import HloSharding, ShardingKind, SubgroupType, TileAssignment

XLA_PRINTED = [
    "{replicated}", "{manual}", "{unknown}", "{unreduced}", "{maximal device=3}",
    "{devices=[2,2]0,2,1,3}", "{devices=[2,1,4]0,1,2,3,4,5,6,7}", "{devices=[2,1,4]<=[8]}",
    "{devices=[4,2]<=[2,4]T(1,0)}", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
    "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
    "{devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}",
    "{devices=[2,2,2]<=[8] last_tile_dims={manual}}",
    "{devices=[4,4,1]<=[4,2,2]T(1,0,2)}", "{devices=[6,35]<=[7,10,3]T(2,1,0)}",
    "{devices=[4,8]<=[8,4]T(1,0)}", "{devices=[1,2,16]<=[32] last_tile_dim_replicate}",
    "{{replicated}, {devices=[2]0,1}}", "{{maximal device=1}, {replicated}}", "{}",
    "{unknown shard_like 0}", "{devices=[2,1]<=[2] shard_as 1}",
    '{devices=[1,2,2]0,1,2,3 metadata={op_name="a"}}',
    '{replicated metadata={op_name="x/y" source_file="f.py" source_line=3}}',
    '{maximal device=0 metadata={{op_name="a}"}, {op_name="b"}}}',
    "{{replicated}, {manual}, {unknown}, {replicated}, {replicated}, "
    "/*index=5*/{maximal device=2}}",
]


@pytest.mark.parametrize("text", XLA_PRINTED)
def test_round_trip(text):
    sharding = HloSharding.parse(text)
    assert str(sharding) == text
    assert HloSharding.parse(str(sharding)) == sharding


def test_structure():
    sharding = HloSharding.parse("{devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}")
    assert sharding.kind is ShardingKind.TILED and sharding.tile_shape == (1, 1)
    assert sharding.subgroup_types == (SubgroupType.MANUAL, SubgroupType.REPLICATED)
    assert HloSharding.parse("{devices=[4,4,1]<=[4,2,2]T(1,0,2)}").device_array().ravel(
    ).tolist() == [0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15]
    tuple_sharding = HloSharding.parse("{{replicated}, {devices=[2]0,1}}")
    assert tuple_sharding.is_tuple and len(tuple_sharding.elements) == 2


@pytest.mark.parametrize("text, printed", [
    ("{devices=[2,2]<=[2,2]T(0,1)}", "{devices=[2,2]<=[4]}"),  # identity transpose collapses
    ("{devices=[4,8]<=[2,4,4]T(2,0,1)}", "{devices=[4,8]<=[8,4]T(1,0)}"),  # merged dims
    ("{devices=[2,2]<=[4] last_tile_dims={replicated}}",
     "{devices=[2,2]<=[4] last_tile_dim_replicate}"),
    ("{devices=[1,4]<=[4] last_tile_dim_replicate}", "{replicated}"),
    ("{devices=[1,4]<=[4] last_tile_dims={manual}}", "{manual}"),
    ("{devices=[2,2,1]<=[4] last_tile_dims={manual}}", "{devices=[2,2]<=[4]}"),
    ("{ devices = [2]0 , 1 }", "{devices=[2]0,1}"),
])
def test_canonicalization(text, printed):
    assert str(HloSharding.parse(text)) == printed


@pytest.mark.parametrize("text, message", [
    ("{devices=[2,2]0,1,2}", "needs 4 devices but lists 3"),
    ("{devices=[2,2]0,1,1,3}", "distinct"),
    ("{devices=[2]<=[3]}", "do not hold the 2 devices"),
    ("{devices=[2,2]<=[2,2]T(0,0)}", "not a permutation"),
    ("{bogus}", "unknown sharding attribute 'bogus'"),
    ("{maximal}", "maximal sharding needs device=N"),
    ("{replicated", "expected a sharding keyword"),
    ("{replicated} x", "unexpected text"),
    ("{devices=[2]<=[2] last_tile_dims={sideways}}", "unknown subgroup type 'sideways'"),
    ("{devices=[2]<=[2] last_tile_dims={manual, replicated}}", "subgroup dims"),
    ("{replicated manual}", "after the sharding kind"),
])
def test_parse_errors(text, message):
    with pytest.raises(ParseError) as error:
        HloSharding.parse(text)
    assert message in str(error.value)
    assert error.value.column is not None


def test_factories():
    assert str(HloSharding.maximal(2)) == "{maximal device=2}"
    tiles = TileAssignment((2, 4), reshape_dims=(8,))
    assert str(HloSharding.tile(tiles, [SubgroupType.REPLICATED])) == (
        "{devices=[2,4]<=[8] last_tile_dim_replicate}")
    assert str(HloSharding.tuple_([HloSharding.replicate()])) == "{{replicated}}"
