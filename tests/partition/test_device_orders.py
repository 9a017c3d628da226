"""GSPMD shardings in any device order (``{devices=[2,2]3,1,2,0}``, ``{devices=[2]1,0}``):
imported over a mesh with ``device_ids`` in that order, partitioned, and run on N devices
(reference evaluator and CPU backend) with results equal to the 1-device module's."""

import numpy as np
import pytest
from spmd_oracle import check  # tests/partition on sys.path

from xla_spmd.ir import parse_hlo
from xla_spmd.ir.hlo_sharding import HloSharding
from xla_spmd.mesh import make_mesh
from xla_spmd.propagation.importing import import_shardings
from xla_spmd.sharding import hlo_to_axes

BACKENDS = ("reference", "cpu")


def _args(module, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]


def _module(body: str):
    return parse_hlo(f"HloModule m\n\nENTRY e {{\n{body}\n}}\n")


def _gspmd_tile_of(hlo: HloSharding, shape, device):
    """GSPMD's own reading, independent of meshes: the tile at index t of the tile
    assignment belongs to device ``array[t]``; its slice of a global array (even shapes)."""
    array = hlo.device_array()
    index = tuple(int(i) for i in np.argwhere(array == device)[0])
    tiles = array.shape[:len(shape)]
    return tuple(slice(i * (n // t), (i + 1) * (n // t))
                 for i, n, t in zip(index, shape, tiles))


@pytest.mark.parametrize("text", ["{devices=[2,2]3,1,2,0}", "{devices=[2,2]1,0,3,2}",
                                  "{devices=[4,1]2,0,3,1}",
                                  "{devices=[2,1,2]3,0,1,2 last_tile_dim_replicate}"])
def test_each_device_holds_the_tile_gspmd_gives_it(text):
    hlo = HloSharding.parse(text)
    mesh = make_mesh({"_axis_0": 2, "_axis_1": 2})
    sharding = hlo_to_axes(hlo, 2, mesh, any_order=True).sharding
    assert sharding.mesh.device_ids is not None  # another order than the mesh's
    for device in range(4):
        assert sharding.shard_slices((8, 4), device) == _gspmd_tile_of(hlo, (8, 4), device)


def test_without_any_order_the_order_is_refused():
    with pytest.raises(Exception, match="not a transpose"):
        hlo_to_axes(HloSharding.parse("{devices=[2]1,0}"), 1, make_mesh({"_axis_0": 2}))


def test_import_names_each_device_order_as_its_own_mesh():
    module = _module("""  a = f32[8,4] parameter(0), sharding={devices=[2,2]0,1,2,3}
  b = f32[8,4] copy(a), sharding={devices=[2,2]3,1,2,0}
  c = f32[8,4] copy(b), sharding={devices=[2,2]1,0,3,2}
  ROOT d = f32[8,4] copy(c), sharding={devices=[2,2]3,1,2,0}""")
    shardings = [i.sharding for i in import_shardings(module).module.entry.instructions]
    assert [s.mesh_name for s in shardings] == ["mesh", "mesh_1", "mesh_2", "mesh_1"]
    assert [s.mesh.device_ids for s in shardings] == [None, (3, 1, 2, 0), (1, 0, 3, 2),
                                                      (3, 1, 2, 0)]
    assert len({tuple(s.mesh.shape.items()) for s in shardings}) == 1  # same axes


@pytest.mark.parametrize("backend", BACKENDS)
def test_elementwise_over_two_device_orders(backend):
    module = _module("""  a = f32[8,4] parameter(0), sharding={devices=[2,2]3,1,2,0}
  b = f32[8,4] parameter(1), sharding={devices=[2,2]0,1,2,3}
  ROOT c = f32[8,4] add(a, b), sharding={devices=[2,2]1,0,3,2}""")
    spmd = check(module, _args(module), num_devices=4, backend=backend, bits=True)
    assert any(i.opcode == "collective-permute" for i in spmd.entry.instructions)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reshard_between_two_device_orders(backend):
    module = _module("""  a = f32[8,6] parameter(0), sharding={devices=[4,1]2,0,3,1}
  b = f32[8,6] copy(a), sharding={devices=[1,4]3,2,1,0}
  ROOT c = f32[8,6] copy(b), sharding={devices=[2,1,2]3,0,1,2 last_tile_dim_replicate}""")
    check(module, _args(module), num_devices=4, backend=backend, bits=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dot_with_operands_in_other_device_orders(backend):
    module = _module("""  lhs = f32[4,8,16] parameter(0), sharding={devices=[1,1,2,2]1,3,0,2 last_tile_dim_replicate}
  rhs = f32[16,12] parameter(1), sharding={devices=[2,2]3,1,2,0}
  ROOT dot = f32[4,8,12] dot(lhs, rhs), lhs_contracting_dims={2}, rhs_contracting_dims={0},
    sharding={devices=[1,1,2,2]2,3,0,1 last_tile_dim_replicate}""")  # noqa: E501
    check(module, _args(module), num_devices=4, backend=backend, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", [8, 7])  # even and uneven shards
def test_reverse_into_the_reversed_device_order(backend, size):
    module = _module(f"""  a = f32[{size},3] parameter(0), sharding={{devices=[2,1]0,1}}
  ROOT r = f32[{size},3] reverse(a), dimensions={{0}}, sharding={{devices=[2,1]1,0}}""")
    check(module, _args(module), num_devices=2, backend=backend, bits=True)
