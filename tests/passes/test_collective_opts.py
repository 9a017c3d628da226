"""Golden tests of the collective optimizations on 4-partition programs, each checked on 4
devices with the SPMD reference evaluator."""

import numpy as np
import pytest
from pass_helpers import check_golden

from xla_spmd.ir import Instruction, parse_hlo
from xla_spmd.passes import (
    combine_collectives_pass,
    create_reduce_scatter_pass,
    dce_pass,
    optimize_spmd,
    remove_noop_collectives_pass,
    remove_own_shard_gather_pass,
)
from xla_spmd.passes.collective_groups import Devices, PartitionValues, flattened_groups

ADD = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""
MAX = """%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(%a, %b)
}
"""
ADD2 = ADD.replace("%add (", "%sum (")
FLAT = "channel_id=1, use_global_device_ids=true"


def m(body, params="x: f32[8,4]", result="f32[2,4]", comps=ADD, header="num_partitions=4"):
    return f"HloModule m, {header}\n\n{comps}\nENTRY %e ({params}) -> {result} {{\n{body}\n}}\n"


PX = "  %x = f32[8,4] parameter(0)"
AR = f"  %ar = f32[8,4] all-reduce(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}}, to_apply=%add"
TABLE = """  %pid = u32[] partition-id()
  %t = s32[4] constant({0, 2, 4, 6})
  %ds0 = s32[1] dynamic-slice(%t, %pid), dynamic_slice_sizes={1}
  %off = s32[] reshape(%ds0)
  %z = s32[] constant(0)"""

RS_CASES = {
    "table_form": m(f"""{PX}
{AR}
{TABLE}
  ROOT %ds = f32[2,4] dynamic-slice(%ar, %off, %z), dynamic_slice_sizes={{2,4}}"""),
    "multiply_form": m(f"""{PX}
{AR}
  %pid = u32[] partition-id()
  %p = s32[] convert(%pid)
  %c = s32[] constant(2)
  %off = s32[] multiply(%p, %c)
  %z = s32[] constant(0)
  ROOT %ds = f32[2,4] dynamic-slice(%ar, %off, %z), dynamic_slice_sizes={{2,4}}"""),
    "subgroups_remainder_dim1": m(f"""{PX}
  %ar = f32[8,4] all-reduce(%x), {FLAT}, replica_groups={{{{0,1}},{{2,3}}}}, to_apply=%add
  %pid = u32[] partition-id()
  %two = u32[] constant(2)
  %r = u32[] remainder(%pid, %two)
  %off = u32[] multiply(%r, %two)
  %junk = u32[] multiply(%pid, %pid)
  ROOT %ds = f32[8,2] dynamic-slice(%ar, %junk, %off), dynamic_slice_sizes={{8,2}}""",
        result="f32[8,2]"),
    "iota_groups_divide": m(f"""{PX}
  %ar = f32[8,4] all-reduce(%x), {FLAT}, replica_groups=[2,2]<=[2,2]T(1,0), to_apply=%add
  %pid = u32[] partition-id()
  %two = u32[] constant(2)
  %four = u32[] constant(4)
  %q = u32[] divide(%pid, %two)
  %off = u32[] multiply(%q, %four)
  %z = u32[] constant(0)
  ROOT %ds = f32[4,4] dynamic-slice(%ar, %off, %z), dynamic_slice_sizes={{4,4}}""",
        result="f32[4,4]"),
    "cross_replica_and_partition": m(f"""{PX}
  %ar = f32[8,4] all-reduce(%x), channel_id=3, replica_groups={{{{0}}}}, to_apply=%add
{TABLE}
  ROOT %ds = f32[2,4] dynamic-slice(%ar, %off, %z), dynamic_slice_sizes={{2,4}}"""),
    "wrong_table_kept": m(f"""{PX}
{AR}
{TABLE.replace("{0, 2, 4, 6}", "{2, 0, 4, 6}")}
  ROOT %ds = f32[2,4] dynamic-slice(%ar, %off, %z), dynamic_slice_sizes={{2,4}}"""),
    "other_user_kept": m(f"""{PX}
{AR}
{TABLE}
  %ds = f32[2,4] dynamic-slice(%ar, %off, %z), dynamic_slice_sizes={{2,4}}
  %s = f32[2,4] slice(%ar), slice={{[0:2], [0:4]}}
  ROOT %r = f32[2,4] add(%ds, %s)"""),
    "offset_from_parameter_kept": m(f"""{PX}
  %o = s32[] parameter(1)
{AR}
  %z = s32[] constant(0)
  ROOT %ds = f32[2,4] dynamic-slice(%ar, %o, %z), dynamic_slice_sizes={{2,4}}""",
        params="x: f32[8,4], o: s32[]"),
    "two_dims_sliced_kept": m(f"""{PX}
{AR}
{TABLE}
  ROOT %ds = f32[2,2] dynamic-slice(%ar, %off, %z), dynamic_slice_sizes={{2,2}}""",
        result="f32[2,2]"),
}

AG = f"  %ag = f32[8,4] all-gather(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}"
GATHER_CASES = {
    "own_shard": m(f"""  %x = f32[2,4] parameter(0)
{AG}
{TABLE}
  %ds = f32[2,4] dynamic-slice(%ag, %off, %z), dynamic_slice_sizes={{2,4}}
  ROOT %r = f32[2,4] negate(%ds)""", params="x: f32[2,4]", comps=""),
    "other_shard_kept": m(f"""  %x = f32[2,4] parameter(0)
{AG}
{TABLE.replace("{0, 2, 4, 6}", "{2, 4, 6, 0}")}
  ROOT %ds = f32[2,4] dynamic-slice(%ag, %off, %z), dynamic_slice_sizes={{2,4}}""",
        params="x: f32[2,4]", comps=""),
}

NOOP_CASES = {
    "all_reduce_singletons": m(f"""{PX}
  ROOT %ar = f32[8,4] all-reduce(%x), {FLAT}, replica_groups={{{{0}},{{1}},{{2}},{{3}}}},
      to_apply=%add""",
        result="f32[8,4]"),
    "all_gather_singletons_no_channel": m(f"""{PX}
  ROOT %ag = f32[8,4] all-gather(%x), replica_groups={{{{0}}}}, dimensions={{0}}""",
        result="f32[8,4]", comps=""),
    "variadic_all_reduce": m(f"""{PX}
  %y = f32[8,4] negate(%x)
  %ar = (f32[8,4], f32[8,4]) all-reduce(%x, %y), {FLAT},
      replica_groups={{{{0}},{{1}},{{2}},{{3}}}}, to_apply=%add
  %a = f32[8,4] get-tuple-element(%ar), index=0
  %b = f32[8,4] get-tuple-element(%ar), index=1
  ROOT %r = f32[8,4] add(%a, %b)""", result="f32[8,4]"),
    "identity_permute": m(f"""{PX}
  ROOT %cp = f32[8,4] collective-permute(%x), channel_id=1,
      source_target_pairs={{{{0,0}},{{1,1}},{{2,2}},{{3,3}}}}""",
        result="f32[8,4]", comps=""),
    "partial_identity_permute_kept": m(f"""{PX}
  ROOT %cp = f32[8,4] collective-permute(%x), channel_id=1,
      source_target_pairs={{{{0,0}},{{1,1}}}}""",
        result="f32[8,4]", comps=""),
    "cross_replica_and_partition_kept": m(f"""{PX}
  ROOT %ar = f32[8,4] all-reduce(%x), channel_id=1, replica_groups={{{{0}}}}, to_apply=%add""",
        result="f32[8,4]"),
    "real_all_reduce_kept": m(f"""{PX}
  ROOT %ar = f32[8,4] all-reduce(%x), {FLAT}, replica_groups={{{{0,1}},{{2,3}}}}, to_apply=%add""",
        result="f32[8,4]"),
}

COMBINE_CASES = {
    "two_independent": m(f"""{PX}
  %y = f32[8,4] negate(%x)
  %a = f32[8,4] all-reduce(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  %b = f32[8,4] all-reduce(%y), channel_id=2, use_global_device_ids=true,
      replica_groups={{{{0,1,2,3}}}}, to_apply=%sum
  ROOT %r = f32[8,4] add(%a, %b)""", result="f32[8,4]", comps=ADD + ADD2),
    "dependent_kept": m(f"""{PX}
  %a = f32[8,4] all-reduce(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  %y = f32[8,4] negate(%a)
  %b = f32[8,4] all-reduce(%y), channel_id=2, use_global_device_ids=true,
      replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  ROOT %r = f32[8,4] add(%a, %b)""", result="f32[8,4]"),
    "different_reducers_kept": m(f"""{PX}
  %a = f32[8,4] all-reduce(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  %b = f32[8,4] all-reduce(%x), channel_id=2, use_global_device_ids=true,
      replica_groups={{{{0,1,2,3}}}}, to_apply=%max
  ROOT %r = f32[8,4] add(%a, %b)""", result="f32[8,4]", comps=ADD + MAX),
    "different_groups_kept": m(f"""{PX}
  %a = f32[8,4] all-reduce(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  %b = f32[8,4] all-reduce(%x), channel_id=2, use_global_device_ids=true,
      replica_groups={{{{0,1}},{{2,3}}}}, to_apply=%add
  ROOT %r = f32[8,4] add(%a, %b)""", result="f32[8,4]"),
    "all_gathers_and_a_later_chain": m(f"""  %x = f32[2,4] parameter(0)
  %y = f32[2,4] exponential(%x)
  %a = f32[8,4] all-gather(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}
  %b = f32[8,4] all-gather(%y), channel_id=2, use_global_device_ids=true,
      replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}
  %s = f32[8,4] add(%a, %b)
  %c = f32[8,4] all-reduce(%s), channel_id=3, use_global_device_ids=true,
      replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  %d = f32[8,4] all-reduce(%a), channel_id=4, use_global_device_ids=true,
      replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  ROOT %r = f32[8,4] multiply(%c, %d)""", params="x: f32[2,4]", result="f32[8,4]"),
}


def expected(body, **kwargs):
    return m(body, **kwargs)


RS_EXPECTED = {
    "table_form": expected(f"""{PX}
  ROOT %ds = f32[2,4] reduce-scatter(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}},
      dimensions={{0}}, to_apply=%add"""),
    "multiply_form": expected(f"""{PX}
  ROOT %ds = f32[2,4] reduce-scatter(%x), {FLAT}, replica_groups={{{{0,1,2,3}}}},
      dimensions={{0}}, to_apply=%add"""),
    "subgroups_remainder_dim1": expected(f"""{PX}
  ROOT %ds = f32[8,2] reduce-scatter(%x), {FLAT}, replica_groups={{{{0,1}},{{2,3}}}},
      dimensions={{1}}, to_apply=%add""",
        result="f32[8,2]"),
    "iota_groups_divide": expected(f"""{PX}
  ROOT %ds = f32[4,4] reduce-scatter(%x), {FLAT}, replica_groups=[2,2]<=[2,2]T(1,0),
      dimensions={{0}}, to_apply=%add""",
        result="f32[4,4]"),
    "cross_replica_and_partition": expected(f"""{PX}
  ROOT %ds = f32[2,4] reduce-scatter(%x), channel_id=3, use_global_device_ids=true,
      replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}, to_apply=%add"""),
}

GATHER_EXPECTED = {
    "own_shard": expected("""  %x = f32[2,4] parameter(0)
  ROOT %r = f32[2,4] negate(%x)""", params="x: f32[2,4]", comps=""),
}

NOOP_EXPECTED = {
    "all_reduce_singletons": expected("  ROOT %x = f32[8,4] parameter(0)",
                                      result="f32[8,4]", comps=""),
    "all_gather_singletons_no_channel": expected("  ROOT %x = f32[8,4] parameter(0)",
                                                 result="f32[8,4]", comps=""),
    "variadic_all_reduce": expected(f"""{PX}
  %y = f32[8,4] negate(%x)
  %ar = (f32[8,4], f32[8,4]) tuple(%x, %y)
  %a = f32[8,4] get-tuple-element(%ar), index=0
  %b = f32[8,4] get-tuple-element(%ar), index=1
  ROOT %r = f32[8,4] add(%a, %b)""", result="f32[8,4]", comps=""),
    "identity_permute": expected("  ROOT %x = f32[8,4] parameter(0)",
                                 result="f32[8,4]", comps=""),
}

COMBINE_EXPECTED = {
    "two_independent": expected(f"""{PX}
  %y = f32[8,4] negate(%x)
  %all-reduce.combined = (f32[8,4], f32[8,4]) all-reduce(%x, %y), {FLAT},
      replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  %a = f32[8,4] get-tuple-element(%all-reduce.combined), index=0
  %b = f32[8,4] get-tuple-element(%all-reduce.combined), index=1
  ROOT %r = f32[8,4] add(%a, %b)""", result="f32[8,4]", comps=ADD + ADD2),
    "all_gathers_and_a_later_chain": expected(f"""  %x = f32[2,4] parameter(0)
  %y = f32[2,4] exponential(%x)
  %all-gather.combined = (f32[8,4], f32[8,4]) all-gather(%x, %y), {FLAT},
      replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}
  %a = f32[8,4] get-tuple-element(%all-gather.combined), index=0
  %b = f32[8,4] get-tuple-element(%all-gather.combined), index=1
  %s = f32[8,4] add(%a, %b)
  %all-reduce.combined = (f32[8,4], f32[8,4]) all-reduce(%s, %a), channel_id=3,
      use_global_device_ids=true, replica_groups={{{{0,1,2,3}}}}, to_apply=%add
  %c = f32[8,4] get-tuple-element(%all-reduce.combined), index=0
  %d = f32[8,4] get-tuple-element(%all-reduce.combined), index=1
  ROOT %r = f32[8,4] multiply(%c, %d)""", params="x: f32[2,4]", result="f32[8,4]"),
}


@pytest.mark.parametrize("name", sorted(RS_CASES))
def test_reduce_scatter_creation(name):
    check_golden([create_reduce_scatter_pass, dce_pass], RS_CASES[name], RS_EXPECTED.get(name),
                 num_devices=4)


@pytest.mark.parametrize("name", sorted(GATHER_CASES))
def test_own_shard_gather_removal(name):
    check_golden([remove_own_shard_gather_pass, dce_pass], GATHER_CASES[name],
                 GATHER_EXPECTED.get(name), num_devices=4)


@pytest.mark.parametrize("name", sorted(NOOP_CASES))
def test_noop_collective_removal(name):
    check_golden([remove_noop_collectives_pass, dce_pass], NOOP_CASES[name],
                 NOOP_EXPECTED.get(name), num_devices=4)


@pytest.mark.parametrize("name", sorted(COMBINE_CASES))
def test_combining(name):
    check_golden([combine_collectives_pass], COMBINE_CASES[name], COMBINE_EXPECTED.get(name),
                 num_devices=4)


def test_optimize_spmd_end_to_end():
    text = m(f"""{PX}
  %y = f32[8,4] negate(%x)
  %c = f32[8,4] copy(%y)
{AR}
  %ar2 = f32[8,4] all-reduce(%c), channel_id=2, use_global_device_ids=true,
      replica_groups={{{{0,1,2,3}}}}, to_apply=%add
{TABLE}
  %ds = f32[2,4] dynamic-slice(%ar, %off, %z), dynamic_slice_sizes={{2,4}}
  %pid2 = u32[] partition-id()
  %t2 = s32[4] constant({{0, 2, 4, 6}})
  %ds1 = s32[1] dynamic-slice(%t2, %pid2), dynamic_slice_sizes={{1}}
  %off2 = s32[] reshape(%ds1)
  %ds2 = f32[2,4] dynamic-slice(%ar2, %off2, %z), dynamic_slice_sizes={{2,4}}
  %cp = f32[2,4] collective-permute(%ds2), channel_id=5,
      source_target_pairs={{{{0,0}},{{1,1}},{{2,2}},{{3,3}}}}
  ROOT %r = f32[2,4] add(%ds, %cp)""")
    after = m(f"""{PX}
  %y = f32[8,4] negate(%x)
  %reduce-scatter.combined = (f32[2,4], f32[2,4]) reduce-scatter(%x, %y), {FLAT},
      replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}, to_apply=%add
  %ds = f32[2,4] get-tuple-element(%reduce-scatter.combined), index=0
  %ds2 = f32[2,4] get-tuple-element(%reduce-scatter.combined), index=1
  ROOT %r = f32[2,4] add(%ds, %ds2)""")
    from xla_spmd.passes import Pass
    check_golden([Pass("optimize-spmd", lambda mod: optimize_spmd(mod, verify_each=True))],
                 text, after, num_devices=4)


def _entry(text):
    return parse_hlo(text).entry


def test_partition_values_of_table_and_arithmetic():
    entry = _entry(m(f"""{PX}
{TABLE}
  %p = s32[] convert(%pid)
  %three = s32[] constant(3)
  %q = s32[] remainder(%p, %three)
  %b = s32[2] broadcast(%q), dimensions={{}}
  %s = s32[1] slice(%b), slice={{[1:2]}}
  ROOT %r = s32[] reshape(%s)""", result="s32[]", comps=""))
    values = PartitionValues(4)
    np.testing.assert_array_equal(values(entry.instruction("off")), [0, 2, 4, 6])
    np.testing.assert_array_equal(values(entry.root), [0, 1, 2, 0])
    assert values(entry.instruction("x")) is None


def test_flattened_groups_need_counts_the_header_states():
    module = parse_hlo(NOOP_CASES["cross_replica_and_partition_kept"])
    root: Instruction = module.entry.root
    assert flattened_groups(root, Devices.of(module)) == [[0, 1, 2, 3]]
    assert flattened_groups(root, Devices(None, None)) is None
