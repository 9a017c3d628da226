"""Sort on the CPU backend: a recognised comparator (LT/GT keys, lexicographic, TOTALORDER,
payloads such as an iota: the top-k pattern) runs numpy's stable order with no fallback, bit
for bit the reference's result; keys holding NaN under a FLOAT compare run the reference rule
for that call, counted; an unrecognised comparator stays a counted fallback."""

import numpy as np
import pytest
from cpu_bits import exact_bits

from xla_spmd.backends.cpu import BACKEND
from xla_spmd.backends.reference import evaluate, leaves
from xla_spmd.ir.hlo_parser import parse_hlo

LT_KEY = """%cmp (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %lt = pred[] compare(%a, %b), direction=%DIR%%TYPE%
}"""
LEXICOGRAPHIC = """%cmp (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  %first = pred[] compare(%c, %d), direction=GT
  %tie = pred[] compare(%c, %d), direction=EQ
  %second = pred[] compare(%a, %b), direction=LT
  %then = pred[] and(%tie, %second)
  ROOT %or = pred[] or(%first, %then)
}"""
ODD = """%cmp (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  %s = f32[] add(%a, %b)
  %z = f32[] constant(0)
  ROOT %lt = pred[] compare(%s, %z), direction=LT
}"""


def _module(comparator: str, axis: int) -> str:
    return f"""HloModule m
{comparator}
ENTRY %e (x: f32[5,9], y: s32[5,9]) -> (f32[5,9], s32[5,9]) {{
  %x = f32[5,9] parameter(0)
  %y = s32[5,9] parameter(1)
  %i = s32[5,9] iota(), iota_dimension={axis}
  %k = s32[5,9] add(%y, %i)
  ROOT %s = (f32[5,9], s32[5,9]) sort(%x, %k), dimensions={{{axis}}}, is_stable=true,
    to_apply=%cmp
}}"""


CASES = {"lt": LT_KEY.replace("%DIR%", "LT").replace("%TYPE%", ""),
         "gt-totalorder": LT_KEY.replace("%DIR%", "GT").replace("%TYPE%", ", type=TOTALORDER"),
         "lexicographic": LEXICOGRAPHIC}


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("nan", [False, True])
def test_recognised_comparators_sort_as_the_reference(name, axis, nan):
    module = parse_hlo(_module(CASES[name], axis))
    executable = BACKEND.compile(module, (0,))
    assert executable.report()["fallbacks"] == {}
    rng = np.random.default_rng(axis)
    x = rng.integers(-3, 4, (5, 9)).astype(np.float32)  # ties, and -0.0 beside 0.0
    x[0, :3] = -0.0
    if nan:
        x[1, 2] = x[3, 0] = np.nan
    y = rng.integers(0, 3, (5, 9)).astype(np.int32)
    got = executable.run(0, [x, y], None)
    want = leaves(evaluate(module, [x, y]))
    assert [exact_bits(g) for g in got] == [exact_bits(np.asarray(w)) for w in want]
    fell_back = nan and name != "gt-totalorder"  # NaN under a FLOAT compare: no weak order
    assert executable.report()["fallback_runs"] == ({"sort": 1} if fell_back else {})


def test_an_unrecognised_comparator_is_a_counted_fallback():
    module = parse_hlo(_module(ODD, 1))
    executable = BACKEND.compile(module, (0,))
    assert executable.report()["fallbacks"] == {"sort": 1}
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 9)).astype(np.float32)
    y = rng.integers(0, 3, (5, 9)).astype(np.int32)
    got = executable.run(0, [x, y], None)
    want = leaves(evaluate(module, [x, y]))
    assert [exact_bits(g) for g in got] == [exact_bits(np.asarray(w)) for w in want]
