"""Manual and partially manual GSPMD programs (XLA's SubgroupManual*, MixWithManualPartitioning,
ManualPartitionId tests): the importer keeps a partially manual sharding's manual axes, the
partitioner refuses a collective that crosses the free axes, and the replay's manual oracle
(tests/partition/manual_oracle.py) checks each device against hand-computed values."""

import numpy as np
import pytest
import spmd_oracle
from manual_oracle import expected_per_device, group_arguments, has_manual_parts
from shards import signature
from xla_spmd_tests import XlaCase, run_module

from xla_spmd.backends.reference import evaluate_spmd
from xla_spmd.errors import PartitionError
from xla_spmd.ir import parse_hlo
from xla_spmd.pipeline import lower
from xla_spmd.propagation.importing import import_shardings
from xla_spmd.sharding import program_mesh
from xla_spmd.sharding.manual import value_manual_axes

# Devices [2,1,2]0,2,1,3: device (a, m) = a + 2m, dim 0 tiled by a, manual over m; so the
# manual groups are {0, 1} (m=0) and {2, 3} (m=1), and devices 0 and 2 hold row 0.
ALL_REDUCE = """HloModule module, num_partitions=4

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT add = f32[] add(a, b)
}

ENTRY entry {
  param = f32[2,2] parameter(0),
    sharding={devices=[2,1,2]0,2,1,3 last_tile_dims={manual}}
  ROOT all-reduce = f32[2,2]{1,0} all-reduce(param), to_apply=sum,
    replica_groups=GROUPS, use_global_device_ids=true, channel_id=1,
    sharding={devices=[2,1,2]0,2,1,3 last_tile_dims={manual}}
}
"""

MIX = """HloModule module, num_partitions=2

ENTRY entry {
  param = (f32[8,2], f32[4,2]) parameter(0), sharding={{devices=[2,1]0,1},{manual}}
  param0 = f32[8,2] get-tuple-element(param), index=0, sharding={devices=[2,1]0,1}
  param1 = f32[4,2] get-tuple-element(param), index=1, sharding={manual}
  to_shard = f32[4,2] custom-call(param0), custom_call_target="SPMDFullToShardShape",
    sharding={manual}
  add = f32[4,2] add(to_shard, param1), sharding={manual}
  to_full = f32[8,2] custom-call(add), custom_call_target="SPMDShardToFullShape",
    sharding={devices=[2,1]0,1}
  mul = f32[8,2] multiply(to_full, param0), sharding={devices=[2,1]0,1}
  to_shard2 = f32[4,2] custom-call(mul), custom_call_target="SPMDFullToShardShape",
    sharding={manual}
  ROOT tuple = (f32[4,2]) tuple(to_shard2), sharding={{manual}}
}
"""


def _imported(text):
    return import_shardings(parse_hlo(text)).module


def test_a_partially_manual_sharding_keeps_its_manual_axes():
    module = _imported(ALL_REDUCE.replace("GROUPS", "{{2,0},{1,3}}"))
    param = module.entry.parameters[0]
    # the free axis (_axis_1, the minor one of device = a + 2m) tiles dim 0; the manual one
    # is explicitly replicated and recorded
    assert str(param.sharding) == \
        '#sdy.sharding<@mesh, [{"_axis_1"}, {}], replicated={"_axis_0"}>'
    assert value_manual_axes(param) == ("_axis_0",)
    assert value_manual_axes(module.entry.root) == ("_axis_0",)


def _partition(text):
    module = _imported(text)
    return module, lower(module, mesh=program_mesh(module), propagate_shardings=False)


def test_a_manual_all_reduce_across_manual_groups_runs_on_the_free_shards():
    """Groups {2,0} and {1,3} join the two manual groups' devices holding the same rows: each
    device gets the sum of both groups' rows (both groups hold the same value here)."""
    module, program = _partition(ALL_REDUCE.replace("GROUPS", "{{2,0},{1,3}}"))
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    row = {0: 0, 1: 1, 2: 0, 3: 1}  # device -> the free coordinate a
    results = evaluate_spmd(program.spmd_module, [[x[row[d]:row[d] + 1]] for d in range(4)], 4)
    for device, result in enumerate(results):
        np.testing.assert_array_equal(result, 2 * x[row[device]:row[device] + 1])


def test_manual_groups_get_their_own_values_and_the_oracle_combines_them():
    """The replay gives manual group m (devices 2m, 2m+1) the value x + m: after the
    all-reduce across groups, device d = (a, m) holds 2 x[a] + 1, by hand."""
    text = ALL_REDUCE.replace("GROUPS", "{{2,0},{1,3}}")
    module = _imported(text)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    params, shardings = signature(module, program_mesh(module))
    whole = group_arguments(parse_hlo(text), [x], params, 4)
    for device in range(4):
        np.testing.assert_array_equal(whole[device][0], x + device // 2)
    expected = expected_per_device(module, whole, shardings)
    for device in range(4):
        a = device % 2
        np.testing.assert_array_equal(expected[device][0], 2 * x[a:a + 1] + 1)
    spmd_oracle.check(parse_hlo(text), [x], num_devices=4)


def test_a_manual_all_reduce_within_a_manual_group_is_refused():
    """XLA's SubgroupIllegalManualAllReduce: {1,0} joins two devices of one manual group."""
    with pytest.raises(PartitionError, match="different manual subgroups"):
        _partition(ALL_REDUCE.replace("GROUPS", "{{1,0},{2,3}}"))


def test_the_manual_oracle_runs_manual_regions_per_device():
    """MixWithManualPartitioning by hand: device d's manual value is its rows 4d..4d+3 of
    param0 (FullToShard), plus param1, gathered back, times param0, and cut again."""
    module = _imported(MIX)
    assert has_manual_parts(parse_hlo(MIX))
    p0 = np.arange(16, dtype=np.float32).reshape(8, 2)
    p1 = np.full((4, 2), 10, np.float32)
    params, shardings = signature(module, program_mesh(module))
    whole = group_arguments(parse_hlo(MIX), [(p0, p1)], params, 2)  # device d: p1 + d
    expected = expected_per_device(module, whole, shardings)
    for device in range(2):
        rows = p0[4 * device:4 * device + 4]
        np.testing.assert_array_equal(expected[device][0], (rows + p1 + device) * rows)
    spmd_oracle.check(parse_hlo(MIX), [(p0, p1)], num_devices=2)  # partitioned: the same


def test_partition_id_in_a_manual_program_is_each_devices_own():
    hlo = ("HloModule module\nENTRY entry {\n"
           "  ROOT %lhs = s32[] partition-id(), sharding={manual}\n}")
    module = _imported(hlo)
    _, shardings = signature(module, program_mesh(module))
    assert [e[0] for e in expected_per_device(module, [[]] * 8, shardings)] == list(range(8))
    assert run_module(XlaCase("ManualPartitionId", hlo, 8)).status == "PASS"


def test_a_partition_that_mixes_manual_groups_is_a_mismatch(monkeypatch):
    """Had every device computed group 0's value (as when all groups get the same inputs),
    the replay would see it."""
    real = spmd_oracle.run_on_devices

    def group_zero_everywhere(spmd, per_device, n, backend, feeds=None):
        return real(spmd, [per_device[d % 2] for d in range(n)], n, backend, feeds)

    monkeypatch.setattr(spmd_oracle, "run_on_devices", group_zero_everywhere)
    text = ALL_REDUCE.replace("GROUPS", "{{2,0},{1,3}}").replace(
        "all-reduce(param), to_apply=sum,\n    replica_groups={{2,0},{1,3}}, "
        "use_global_device_ids=true, channel_id=1,", "copy(param),")
    assert "copy(param)" in text
    assert run_module(XlaCase("Copy", text, 4)).status == "MISMATCH"


def test_the_manual_comparison_can_fail(monkeypatch):
    """A device whose manual result is off is a MISMATCH."""
    real = spmd_oracle.run_on_devices

    def device_one_off(spmd, per_device, n, backend, feeds=None):
        results = real(spmd, per_device, n, backend, feeds)
        return [tuple(np.asarray(leaf) + (d == 1) for leaf in r) for d, r in enumerate(results)]

    monkeypatch.setattr(spmd_oracle, "run_on_devices", device_one_off)
    assert run_module(XlaCase("Mix", MIX, 2)).status == "MISMATCH"
    assert run_module(XlaCase("Reduce", ALL_REDUCE.replace("GROUPS", "{{2,0},{1,3}}"), 4)
                      ).status == "MISMATCH"


# A partially manual region between SPMDFullToShardShape and SPMDShardToFullShape: devices
# (a, b) = 2a + b; the region is manual over a (each group a holds rows 4a..4a+3 of p) and
# sharded over b (columns); its all-reduce adds the two groups' blocks.
REGION = """HloModule m, num_partitions=4

sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY e {
  p = f32[8,4] parameter(0), sharding={devices=[2,2]<=[4]}
  to_shard = f32[4,4] custom-call(p), custom_call_target="SPMDFullToShardShape",
    sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={manual}}
  neg = f32[4,4] negate(to_shard),
    sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={manual}}
  ar = f32[4,4] all-reduce(neg), to_apply=sum, replica_groups={{0,2},{1,3}},
    use_global_device_ids=true, channel_id=1,
    sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={manual}}
  to_full = f32[8,4] custom-call(ar), custom_call_target="SPMDShardToFullShape",
    sharding={devices=[2,2]<=[4]}
  ROOT add = f32[8,4] add(to_full, p), sharding={devices=[2,2]<=[4]}
}
"""


def test_a_partially_manual_region_between_full_to_shard_and_shard_to_full():
    p = np.arange(32, dtype=np.float32).reshape(8, 4)
    block_sum = -(p[:4] + p[4:])
    want = np.vstack([block_sum, block_sum]) + p  # by hand
    module = _imported(REGION)
    assert value_manual_axes(module.entry.instructions[1]) == ("_axis_0",)
    params, shardings = signature(module, program_mesh(module))
    expected = expected_per_device(module, group_arguments(parse_hlo(REGION), [p], params, 4),
                                   shardings)
    for device in range(4):
        a, b = divmod(device, 2)
        np.testing.assert_array_equal(expected[device][0], want[4 * a:4 * a + 4, 2 * b:2 * b + 2])
    spmd_oracle.check(parse_hlo(REGION), [p], num_devices=4)  # partitioned: the same
    # the region is partitioned over b: its local values are 4x2 blocks, not 4x4
    _, program = _partition(REGION)
    shapes = {i.shape.dims for i in program.spmd_module.entry.instructions
              if i.opcode == "negate"}
    assert shapes == {(4, 2)}
