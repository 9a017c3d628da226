"""Unobserved while-loop carries are passed through, so the work computing them is dead."""

import pytest
from pass_helpers import assert_same_results

from xla_spmd.ir import parse_hlo, verify
from xla_spmd.passes import dce, pass_through_dead_carries

LOOP = """HloModule m, num_partitions=2
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%cond (c: (s32[], f32[4], f32[])) -> pred[] {
  %c = (s32[], f32[4], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (p: (s32[], f32[4], f32[])) -> (s32[], f32[4], f32[]) {
  %p = (s32[], f32[4], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %h = f32[4] get-tuple-element(%p), index=1
  %t = f32[4] tanh(%h)
  %zero = f32[] constant(0)
  %local = f32[] reduce(%t, %zero), dimensions={0}, to_apply=%add
  %sum = f32[] all-reduce(%local), channel_id=1, replica_groups={{0,1}},
    use_global_device_ids=true, to_apply=%add
  %loss = f32[] get-tuple-element(%p), index=2
  %acc = f32[] add(%loss, %sum)
  ROOT %r = (s32[], f32[4], f32[]) tuple(%next, %t, %acc)
}
ENTRY %e (x: f32[4]) -> OUT {
  %x = f32[4] parameter(0)
  %z = s32[] constant(0)
  %f = f32[] constant(0)
  %init = (s32[], f32[4], f32[]) tuple(%z, %x, %f)
  %w = (s32[], f32[4], f32[]) while(%init), condition=%cond, body=%body
  ROOT %out = READ
}
"""


def _module(out_type, read):
    return parse_hlo(LOOP.replace("OUT", out_type).replace("READ", read))


def _opcodes(module):
    return [i.opcode for c in module.computations for i in c.instructions]


def test_unread_loss_carry_loses_its_all_reduce():
    before = _module("f32[4]", "f32[4] get-tuple-element(%w), index=1")
    after = dce(pass_through_dead_carries(before))
    verify(after)
    assert "all-reduce" in _opcodes(before) and "all-reduce" not in _opcodes(after)
    assert_same_results(before, after, num_devices=2)


@pytest.mark.parametrize("out_type, read", [
    ("f32[]", "f32[] get-tuple-element(%w), index=2"),     # the loss is read
    ("((s32[], f32[4], f32[]))", "((s32[], f32[4], f32[])) tuple(%w)")])  # the tuple
def test_observed_carries_are_kept(out_type, read):
    before = _module(out_type, read)
    assert pass_through_dead_carries(before) is before


ARRAY_CARRY = """HloModule m
%cond (c: s32[]) -> pred[] {
  %c = s32[] parameter(0)
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%c, %n), direction=LT
}
%body (p: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %next = s32[] add(%p, %one)
}
ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %w = s32[] while(%x), condition=%cond, body=%body
  ROOT %y = s32[] add(%x, %x)
}
"""


def test_a_loop_whose_carry_is_an_array_is_left_alone():
    # Its unused result has no get-tuple-element readers; it used to be read as a tuple
    # (AttributeError: 'ArrayShape' object has no attribute 'elements').
    module = parse_hlo(ARRAY_CARRY)
    assert pass_through_dead_carries(module) == module
