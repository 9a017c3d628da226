# ruff: noqa: E501  (HLO text lines are as long as XLA writes them)
"""Modules from XLA's spmd_partitioner_test.cc, one per class of its tests the replay
(tests/partition/xla_spmd_tests.py) once refused: infeed and outfeed, values placed on devices
a default mesh does not hold, rng, and custom-call targets XLA's tests invent. Each runs on N
devices on the reference evaluator and is compared with the unpartitioned module on one."""

from collections import deque

import numpy as np
import pytest
from spmd_oracle import NotComparable, check  # tests/partition on sys.path
from xla_spmd_tests import XlaCase, opaque_custom_calls, random_infeeds, random_inputs, run_module

from xla_spmd.backends.reference import EVALUATE, Feeds, evaluate
from xla_spmd.errors import EvaluationError, ParseError, ShardingError
from xla_spmd.ir import parse_hlo, print_module

UNEVEN_TUPLE_INFEED = """HloModule module

ENTRY entry {
  token0 = token[] after-all(), sharding={maximal device=0}
  infeed = ((f32[9,2]{1,0}, f32[2]{0}), token[]) infeed(token0),
    sharding={{devices=[2,1]0,1}, {replicated}, {maximal device=0}}
  ROOT infeed.data = (f32[9,2]{1,0}, f32[2]{0}) get-tuple-element(infeed),
    index=0, sharding={{devices=[2,1]0,1}, {replicated}}
}"""

REDUCE_WINDOW_OF_INFEED = """HloModule module

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT add = f32[] add(a, b)
}

ENTRY entry {
  token0 = token[] after-all(), sharding={maximal device=0}
  infeed = (f32[4,4,2,2]{3,2,1,0}, token[]) infeed(token0),
    sharding={{devices=[2,2,1,1]<=[4]}, {maximal device=0}}
  infeed.data = f32[4,4,2,2]{3,2,1,0} get-tuple-element(infeed), index=0,
    sharding={devices=[2,2,1,1]<=[4]}
  constant = f32[] constant(0), sharding={replicated}
  ROOT reduce-window = f32[2,2,2,2]{3,2,1,0} reduce-window(infeed.data, constant),
    window={size=5x5x1x1 stride=3x3x1x1 pad=2_2x2_2x0_0x0_0}, to_apply=sum,
    sharding={devices=[2,2,1,1]<=[4]}
}"""

UNEVEN_TUPLE_OUTFEED = """HloModule module

ENTRY entry {
  token.0 = token[] after-all()
  data = (f32[1023,2]{1,0}, f32[3]{0}) parameter(0), sharding={{devices=[2,1]0,1},
    {devices=[2]0,1}}
  outfeed = token[] outfeed(data, token.0),
    outfeed_shape=(f32[1023,2]{0,1}, f32[3]{0}), sharding={{devices=[2,1]0,1},
    {devices=[2]0,1}}
}"""

CHAINED_MANUAL_OUTFEEDS = """HloModule Test

ENTRY %entry (p0: f32[8], p1: f32[1]) -> (f32[1], token[]) {
  %p1 = f32[1]{0} parameter(1), sharding={replicated}
  %p0 = f32[8]{0} parameter(0), sharding={manual}
  %tuple.1 = (f32[8]{0}) tuple(f32[8]{0} %p0), sharding={{manual}}
  %constant.8 = u32[2]{0} constant({3, 12})
  %tuple.10 = (u32[2]{0}) tuple(u32[2]{0} %constant.8), sharding={{manual}}
  %aa.1 = token[] after-all()
  %outfeed.1 = token[] outfeed((u32[2]{0}) %tuple.10, token[] %aa.1), outfeed_shape=(u32[2]{0}), sharding={{manual}, {manual}}
  %outfeed.2 = token[] outfeed((f32[8]{0}) %tuple.1, token[] %outfeed.1), outfeed_shape=(f32[8]{0}), sharding={{manual}, {manual}}
  ROOT %tuple.15 = (f32[1]{0}, token[]) tuple(f32[1]{0} %p1, token[] %outfeed.2), sharding={{replicated}, {manual}}
}"""

GET_TUPLE_ELEMENT_SWAP_DEVICE = """HloModule module

ENTRY entry {
  %param.0 = (f32[2,3]{1,0}, u32[]) parameter(0),
    sharding={{maximal device=1}, {maximal device=1}}
  %gte.0 = f32[2,3]{1,0} get-tuple-element(%param.0), index=0,
    sharding={maximal device=0}
  %gte.1 = u32[] get-tuple-element(%param.0), index=1,
    sharding={maximal device=0}
  ROOT %tuple = (f32[2,3]{1,0}, u32[]) tuple(%gte.0, %gte.1),
    sharding={{maximal device=0},{maximal device=0}}
}"""

DEVICE_MAXIMAL_TUPLE_SORT = """HloModule module

ge {
  p.0 = f32[] parameter(0)
  p.1 = f32[] parameter(1)
  p.2 = s32[] parameter(2)
  p.3 = s32[] parameter(3)
  ROOT compare = pred[] compare(p.0, p.1), direction=GT
}

ENTRY %main {
  %p.0 = f32[3]{0} parameter(0), sharding={maximal device=0}
  %iota = s32[3]{0} iota(), iota_dimension=0, sharding={maximal device=0}
  ROOT %sort = (f32[3]{0}, s32[3]{0}) sort(p.0, iota), dimensions={0},
    to_apply=ge, sharding={{maximal device=0}, {maximal device=0}}
}"""

PARTITIONED_RNG = """HloModule module

ENTRY entry {
  lhs = s32[] parameter(0)
  lhs.copy = s32[] copy(lhs), sharding={replicated}
  rhs = s32[] parameter(1)
  rhs.copy = s32[] copy(rhs), sharding={maximal device=1}
  ROOT rng = s32[4]{0} rng(lhs.copy, rhs.copy), distribution=rng_uniform, sharding={devices=[2]0,1}
}"""

BATCHABLE_CUSTOM_CALL = """HloModule module

ENTRY entry {
  p = f32[6,4,4]{2,1,0} parameter(0), sharding={devices=[2,1,2]<=[4]}
  ROOT custom-call = f32[6,4,4]{2,1,0} custom-call(p), custom_call_target="BatchableCustomCall", operand_layout_constraints={f32[6,4,4]{2,1,0}}, sharding={devices=[2,1,2]<=[4]}
}"""


def _check(text, devices, seed=7, **options):
    module = parse_hlo(text)
    ordered = options.get("random", False)  # rng bounds: low below high
    return check(module, random_inputs(module, seed, ordered), num_devices=devices, rtol=1e-5,
                 atol=1e-5, infeeds=random_infeeds(module, seed), **options)


# -- infeed / outfeed --------------------------------------------------------------------------

@pytest.mark.parametrize("text,devices", [(UNEVEN_TUPLE_INFEED, 2), (REDUCE_WINDOW_OF_INFEED, 4)])
def test_each_device_infeeds_its_shard(text, devices):
    spmd = _check(text, devices)
    infeed = next(i for i in spmd.entry.instructions if i.opcode == "infeed")
    data = infeed.shape.elements[0]
    local = data.elements[0] if devices == 2 else data  # 9 rows over 2: 5 (ceiling)
    assert local.dims == ((5, 2) if devices == 2 else (2, 2, 2, 2))


@pytest.mark.parametrize("text,devices", [(UNEVEN_TUPLE_OUTFEED, 2),
                                          (CHAINED_MANUAL_OUTFEEDS, 8)])
def test_devices_outfeed_what_the_module_outfeeds(text, devices):
    spmd = _check(text, devices)
    assert sum(i.opcode == "outfeed" for i in spmd.entry.instructions) == \
        sum(i.opcode == "outfeed" for i in parse_hlo(text).entry.instructions)


def test_a_wrong_outfeed_on_one_device_is_a_mismatch(monkeypatch):
    real = EVALUATE["outfeed"]

    def off_on_device_1(inst, operands, ctx):
        if ctx.num_partitions > 1 and ctx.partition_id == 1:
            operands = [tuple(v + 1 for v in operands[0]), operands[1]]
        return real(inst, operands, ctx)

    monkeypatch.setitem(EVALUATE, "outfeed", off_on_device_1)
    with pytest.raises(AssertionError, match="outfeed outfeed leaf 0"):
        _check(UNEVEN_TUPLE_OUTFEED, 2)


def test_infeed_and_outfeed_text_round_trips():
    for text in (UNEVEN_TUPLE_INFEED, UNEVEN_TUPLE_OUTFEED, CHAINED_MANUAL_OUTFEEDS):
        module = parse_hlo(text)
        assert parse_hlo(print_module(module)) == module


def test_feeds_on_one_device():
    module = parse_hlo(UNEVEN_TUPLE_INFEED)
    value = (np.arange(18, dtype=np.float32).reshape(9, 2), np.ones(2, np.float32))
    got = evaluate(module, [], Feeds(deque([value])))
    np.testing.assert_array_equal(got[0], value[0])
    with pytest.raises(EvaluationError, match="infeed queue of device 0 is empty"):
        evaluate(module, [])
    with pytest.raises(EvaluationError, match=r"must have shape \[9, 2\]"):
        evaluate(module, [], Feeds(deque([(np.zeros((8, 2), np.float32), value[1])])))


def test_an_outfeed_sharded_unlike_its_data_is_refused():
    text = UNEVEN_TUPLE_OUTFEED.replace("sharding={{devices=[2,1]0,1},\n    {devices=[2]0,1}}\n}",
                                        "sharding={{replicated}, {replicated}}\n}")
    assert text != UNEVEN_TUPLE_OUTFEED
    with pytest.raises(ShardingError, match="differs from its operand's"):
        _check(text, 2)


def test_an_outfeed_sharding_must_fit_its_data():
    text = UNEVEN_TUPLE_OUTFEED.replace("{devices=[2]0,1}}\n}", "{devices=[2]0,1}, {replicated}, {replicated}}\n}")
    with pytest.raises(ParseError, match="outfeed"):
        parse_hlo(text)


# -- values placed on devices ------------------------------------------------------------------

@pytest.mark.parametrize("text", [GET_TUPLE_ELEMENT_SWAP_DEVICE, DEVICE_MAXIMAL_TUPLE_SORT])
def test_maximal_only_modules_run_over_the_tests_devices(text):
    spmd = _check(text, 2)
    assert spmd.num_partitions == 2


# -- rng ---------------------------------------------------------------------------------------

def test_rng_results_are_compared_by_range():
    _check(PARTITIONED_RNG, 2, random=True)
    result = run_module(XlaCase("PartitionedRng", PARTITIONED_RNG, 2))
    assert result.status == "RANGE"


def test_rng_values_outside_their_bounds_are_a_mismatch(monkeypatch):
    real = EVALUATE["rng"]

    def too_high(inst, operands, ctx):
        value = real(inst, operands, ctx)
        return value + 100 if ctx.num_partitions > 1 else value

    monkeypatch.setitem(EVALUATE, "rng", too_high)
    with pytest.raises(AssertionError, match="outside"):
        _check(PARTITIONED_RNG, 2, random=True)


def test_a_value_computed_from_rng_values_is_not_comparable():
    text = PARTITIONED_RNG.replace(
        "ROOT rng = s32[4]{0} rng", "rng = s32[4]{0} rng").replace(
        "sharding={devices=[2]0,1}\n}", "sharding={devices=[2]0,1}\n"
        "  ROOT neg = s32[4]{0} negate(rng), sharding={devices=[2]0,1}\n}")
    with pytest.raises(NotComparable):
        _check(text, 2, random=True)
    assert run_module(XlaCase("X", text, 2)).status == "UNSUPPORTED"


# -- custom calls XLA's tests invent -----------------------------------------------------------

def test_an_invented_custom_call_runs_as_an_opaque_function():
    with opaque_custom_calls():
        _check(BATCHABLE_CUSTOM_CALL, 4)
        module = parse_hlo(BATCHABLE_CUSTOM_CALL)
        x = np.ones((6, 4, 4), np.float32)
        first, again = evaluate(module, [x]), evaluate(module, [x])
        other = evaluate(module, [x + 1])
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    with pytest.raises(EvaluationError, match="no reference rule"):
        evaluate(module, [x])  # outside the replay, an unknown target is refused
