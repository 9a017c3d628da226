"""Golden tests of dead code elimination and common subexpression elimination, and of the
pass manager."""

import pytest
from pass_helpers import check_golden

from xla_spmd.errors import VerifyError
from xla_spmd.ir import parse_hlo, print_module
from xla_spmd.passes import (
    Pass,
    PassError,
    cse_pass,
    dce,
    dce_pass,
    fixed_point,
    run_passes,
    simplify_pass,
)

ADD = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""

DCE_CASES = {
    "dead_chain": ("""HloModule m
ENTRY %e (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %a = f32[4] add(%x, %y)
  %b = f32[4] exponential(%a)
  ROOT %n = f32[4] negate(%x)
}""", """HloModule m
ENTRY %e (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %n = f32[4] negate(%x)
}"""),
    "side_effect_kept": ("""HloModule m
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %c = f32[4] custom-call(%x), custom_call_target="LayoutConstraint",
      custom_call_has_side_effect=true
  ROOT %n = f32[4] negate(%x)
}""", None),
    "dead_computation": (f"""HloModule m
{ADD}
ENTRY %e (x: f32[4]) -> f32[4] {{
  %x = f32[4] parameter(0)
  %z = f32[] constant(0)
  %r = f32[] reduce(%x, %z), dimensions={{0}}, to_apply=%add
  ROOT %n = f32[4] negate(%x)
}}""", """HloModule m
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}"""),
    "all_live": ("""HloModule m
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}""", None),
}

CSE_CASES = {
    "duplicates": ("""HloModule m
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %a = f32[4] exponential(%x)
  %b = f32[4] exponential(%x)
  %c = f32[4] add(%a, %x)
  %d = f32[4] add(%x, %b)
  ROOT %r = f32[4] multiply(%c, %d)
}""", """HloModule m
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %a = f32[4] exponential(%x)
  %c = f32[4] add(%a, %x)
  ROOT %r = f32[4] multiply(%c, %c)
}"""),
    "constants": ("""HloModule m
ENTRY %e (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %a = f32[2] constant({1, 2})
  %b = f32[2] constant({1, 2})
  %c = f32[2] constant({1, 3})
  %s = f32[2] add(%x, %a)
  %t = f32[2] add(%s, %b)
  ROOT %r = f32[2] add(%t, %c)
}""", """HloModule m
ENTRY %e (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %a = f32[2] constant({1, 2})
  %s = f32[2] add(%x, %a)
  %t = f32[2] add(%s, %a)
  %c = f32[2] constant({1, 3})
  ROOT %r = f32[2] add(%t, %c)
}"""),
    "non_commutative_kept": ("""HloModule m
ENTRY %e (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %a = f32[4] subtract(%x, %y)
  %b = f32[4] subtract(%y, %x)
  ROOT %r = f32[4] add(%a, %b)
}""", None),
    "parameters_and_side_effects_kept": ("""HloModule m
ENTRY %e (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %a = f32[4] custom-call(%x), custom_call_target="LayoutConstraint",
      custom_call_has_side_effect=true
  %b = f32[4] custom-call(%x), custom_call_target="LayoutConstraint",
      custom_call_has_side_effect=true
  %s = f32[4] add(%x, %y)
  ROOT %r = f32[4] add(%s, %s)
}""", None),
    "collectives_ignore_channel_number": (f"""HloModule m, num_partitions=2
{ADD}
ENTRY %e (x: f32[4]) -> f32[4] {{
  %x = f32[4] parameter(0)
  %a = f32[4] all-reduce(%x), channel_id=1, replica_groups={{{{0,1}}}},
      use_global_device_ids=true, to_apply=%add
  %b = f32[4] all-reduce(%x), channel_id=2, replica_groups={{{{0,1}}}},
      use_global_device_ids=true, to_apply=%add
  ROOT %r = f32[4] add(%a, %b)
}}""", f"""HloModule m, num_partitions=2
{ADD}
ENTRY %e (x: f32[4]) -> f32[4] {{
  %x = f32[4] parameter(0)
  %a = f32[4] all-reduce(%x), channel_id=1, replica_groups={{{{0,1}}}},
      use_global_device_ids=true, to_apply=%add
  ROOT %r = f32[4] add(%a, %a)
}}"""),
    "inside_called_computation": ("""HloModule m
%body (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %a = f32[4] negate(%p)
  %b = f32[4] negate(%p)
  ROOT %s = f32[4] add(%a, %b)
}
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] call(%x), to_apply=%body
}""", """HloModule m
%body (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %a = f32[4] negate(%p)
  ROOT %s = f32[4] add(%a, %a)
}
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] call(%x), to_apply=%body
}"""),
}


@pytest.mark.parametrize("name", sorted(DCE_CASES))
def test_dce_golden(name):
    before, after = DCE_CASES[name]
    check_golden([dce_pass], before, after)


@pytest.mark.parametrize("name", sorted(CSE_CASES))
def test_cse_golden(name):
    before, after = CSE_CASES[name]
    num_devices = 2 if "num_partitions" in before else None
    check_golden([cse_pass, dce_pass], before, after, num_devices)


def test_run_passes_names_the_failing_pass():
    module = parse_hlo(DCE_CASES["all_live"][0])

    def broken(m):
        raise VerifyError("boom")

    with pytest.raises(PassError, match="pass broken failed"):
        run_passes(module, [Pass("broken", broken)])


def test_run_passes_verifies_each_pass():
    module = parse_hlo(DCE_CASES["all_live"][0])
    root = module.entry.root

    def bad(m):  # a computation whose root uses an instruction it does not hold
        entry = type(m.entry)(m.entry.name, (root,), root)
        return m.with_entry(entry)

    with pytest.raises(PassError, match="pass bad produced an invalid module"):
        run_passes(module, [Pass("bad", bad)], verify_each=True)


def test_fixed_point_stops_when_nothing_changes():
    calls = []

    def counting(m):
        calls.append(1)
        return m

    module = parse_hlo(DCE_CASES["all_live"][0])
    assert fixed_point("f", [Pass("count", counting)], 5)(module) is module
    assert len(calls) == 1


def test_fixed_point_runs_to_convergence():
    module = parse_hlo(CSE_CASES["duplicates"][0])
    out = fixed_point("f", [simplify_pass, cse_pass, dce_pass], 5, verify_each=True)(module)
    assert print_module(out) == print_module(parse_hlo(CSE_CASES["duplicates"][1]))


def test_dce_is_identity_on_clean_module():
    module = parse_hlo(DCE_CASES["all_live"][0])
    assert dce(module) is module


SHARDED = """HloModule m, num_partitions=2
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  %a = f32[4] negate(%x), sharding={devices=[2]<=[2]}
  %b = f32[4] negate(%x), sharding={replicated}
  %c = f32[4] copy(%b), sharding={devices=[2]<=[2]}
  ROOT %r = f32[4] add(%a, %c), sharding={devices=[2]<=[2]}
}"""


def test_shardings_respected_before_partitioning_and_ignored_after():
    from pass_helpers import assert_same_results

    from xla_spmd.passes import optimize_spmd
    module = parse_hlo(SHARDED)
    kept = run_passes(module, [simplify_pass, cse_pass, dce_pass], verify_each=True)
    assert [i.opcode for i in kept.entry.instructions].count("negate") == 2
    assert "copy" in [i.opcode for i in kept.entry.instructions]
    optimized = optimize_spmd(module, verify_each=True)
    assert [i.opcode for i in optimized.entry.instructions] == ["parameter", "negate", "add"]
    assert_same_results(module, optimized, num_devices=2)
