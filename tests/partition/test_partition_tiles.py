"""Resharding between tilings by collective-permutes of the pieces a device lacks (tiles.py):
values against the reference evaluator, and bytes against the least a device must receive,
counted here element by element."""

import numpy as np
import pytest
from shards import signature
from spmd_oracle import check

from xla_spmd.ir import parse_hlo
from xla_spmd.mesh import make_mesh
from xla_spmd.partition import collective_table, plan_reshard
from xla_spmd.partition.report import totals
from xla_spmd.pipeline import lower
from xla_spmd.sharding import TensorSharding

RESHARD = """HloModule reshard
ENTRY e {
  x = f32[{dims}] parameter(0), sharding={src}
  ROOT y = f32[{dims}] copy(x), sharding={dst}
}
"""

# (global dims, source, target) as GSPMD shardings over 8 devices
CASES = [
    ((16, 32), "{devices=[2,4]<=[8]}", "{devices=[4,2]<=[8]}"),
    ((16, 32), "{devices=[2,4]<=[8]}", "{devices=[2,4]<=[4,2]T(1,0)}"),
    ((16, 32), "{devices=[4,2]<=[2,4]T(1,0)}", "{devices=[2,4]<=[8]}"),
    ((8, 16), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "{devices=[1,2,4]<=[8] "
     "last_tile_dim_replicate}"),
    ((4, 8, 6), "{devices=[2,2,2]<=[8]}", "{devices=[1,4,2]<=[8]}"),
    ((4, 8, 6), "{devices=[2,2,2]<=[8]}", "{devices=[2,2,2]<=[2,2,2]T(2,1,0)}"),
]


def _least_bytes(mesh, dims, source, target) -> int:
    """The most elements any device lacks of its target tile (held by its source tile)."""
    positions = np.arange(int(np.prod(dims))).reshape(dims)
    lacking = 0
    for device in mesh.all_device_ids:
        have = set(positions[source.shard_slices(dims, device)].ravel().tolist())
        want = set(positions[target.shard_slices(dims, device)].ravel().tolist())
        lacking = max(lacking, len(want - have))
    return 4 * lacking


@pytest.mark.parametrize("case", range(len(CASES)))
def test_reshard_between_tilings_is_exact_and_moves_only_missing_pieces(case):
    dims, src, dst = CASES[case]
    text = (RESHARD.replace("{dims}", ",".join(map(str, dims)))
            .replace("{src}", src).replace("{dst}", dst))
    module = parse_hlo(text)
    x = np.random.default_rng(case).standard_normal(dims).astype(np.float32)
    spmd = check(module, [x], propagate=True, rtol=0, atol=0, expected=[x])
    params, results = signature(lower(module, propagate_shardings=True).module)
    (source,), (target,) = params[0], results
    assert totals(collective_table(spmd))["total"] == _least_bytes(source.mesh, dims, source,
                                                                   target)


@pytest.mark.parametrize("src, dst, dims", [
    ([["x"], ["y"]], [["y"], ["x"]], (64, 32)),
    ([["y"], ["x"]], [["x"], ["y"]], (32, 64)),
    ([["x"], []], [[], ["x", "y"]], (16, 8)),
    ([["x", "y"], []], [["y"], ["x"]], (16, 16)),
    ([["y"], []], [[], ["y"]], (16, 8)),
])
def test_planner_reaches_the_least_bytes_a_device_must_receive(src, dst, dims):
    mesh = make_mesh({"x": 2, "y": 4})
    source, target = TensorSharding(mesh, src), TensorSharding(mesh, dst)
    plan = plan_reshard(source, target, dims, 4)
    assert plan.bytes == _least_bytes(mesh, dims, source, target)


CONCAT3 = """HloModule concat3
ENTRY e {
  a = f32[8,{m}] parameter(0), sharding={S}
  b = f32[4,{m}] parameter(1), sharding={S}
  c = f32[12,{m}] parameter(2), sharding={S}
  ROOT r = f32[24,{m}] concatenate(a, b, c), dimensions={0}, sharding={S}
}
"""


@pytest.mark.parametrize("sharding", ["{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
                                      "{devices=[4,2]<=[8]}", "{devices=[4,2]<=[2,4]T(1,0)}"])
def test_concatenate_of_three_from_pieces_is_exact(sharding):
    """Three operands along a dim sharded 4 ways (the other dim replicated or sharded): each
    device assembles its 6 rows from pieces of the operands' tiles."""
    m = 6
    module = parse_hlo(CONCAT3.replace("{S}", sharding).replace("{m}", str(m)))
    rng = np.random.default_rng(7)
    args = [rng.standard_normal((r, m)).astype(np.float32) for r in (8, 4, 12)]
    spmd = check(module, args, propagate=True, rtol=0, atol=0, expected=[np.concatenate(args)])
    kinds = {row["kind"] for row in collective_table(spmd)}
    assert kinds == {"collective-permute"}


def test_lowering_tiles_that_have_no_rounds_names_them():
    """lower_tile_rounds on tiles tile_rounds cannot move (15 rows do not split 4 ways): an
    error naming the tiles, not a failed unpacking of None."""
    from xla_spmd.errors import PartitionError
    from xla_spmd.mesh import AxisRef
    from xla_spmd.partition.tiles import lower_tile_rounds, tile_rounds

    mesh = make_mesh({"x": 2, "y": 4})
    y, x = AxisRef("y"), AxisRef("x")
    src, dst = ((x,), (y,)), ((y,), (x,))
    assert tile_rounds(mesh, (15, 32), src, dst) is None
    with pytest.raises(PartitionError, match=r"tile-permutes: no tile rounds .*\(15, 32\)"):
        lower_tile_rounds(None, None, mesh, (15, 32), src, dst)
