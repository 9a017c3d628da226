"""Sorts whose comparator is a lexicographic LT/GT over keys take the key-sort path
(backends/comparators.py); each is checked against calling the comparator itself."""

import numpy as np
import pytest
from sort_programs import TOPK

from xla_spmd.backends.comparators import recognize_comparator
from xla_spmd.backends.reference import evaluate
from xla_spmd.backends.reference.evaluator import Context
from xla_spmd.backends.reference.reduction import _sort_general
from xla_spmd.ir import parse_hlo

LEXICOGRAPHIC = """HloModule lex
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  lt = pred[] compare(a, b), direction=%s, type=TOTALORDER
  eq = pred[] compare(a, b), direction=EQ, type=TOTALORDER
  tie = pred[] compare(j, i), direction=GT
  both = pred[] and(eq, tie)
  ROOT r = pred[] or(lt, both)
}
ENTRY e {
  x = f32[3,SIZE] parameter(0)
  y = s32[3,SIZE] parameter(1)
  ROOT sort = (f32[3,SIZE], s32[3,SIZE]) sort(x, y), dimensions={1}, to_apply=cmp
}"""


def _values(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, n).astype(np.float32)  # many ties
    x[rng.integers(0, n, n // 8)] = np.nan
    x[rng.integers(0, n, n // 8)] = -0.0
    x[rng.integers(0, n, n // 8)] = np.inf
    return x


def _by_comparator(module, operands, axis):
    sort = module.entry.root
    order = _sort_general(Context(), sort.attrs.to_apply, operands, axis)
    return [np.take_along_axis(o, order, axis=axis) for o in operands]


def test_topk_comparator_is_recognised():
    module = parse_hlo(TOPK.replace("SIZE", "8"))
    (key,) = recognize_comparator(module.entry.root.attrs.to_apply)
    assert key.operand == 0 and key.descending


@pytest.mark.parametrize("seed", range(3))
def test_topk_sort_equals_calling_the_comparator(seed):
    x = _values(64, seed)
    module = parse_hlo(TOPK.replace("SIZE", "64"))
    values, indices = evaluate(module, [x])
    want = _by_comparator(module, [x, np.arange(64, dtype=np.int32)], 0)
    np.testing.assert_array_equal(values, want[0])
    np.testing.assert_array_equal(indices, want[1])


def test_topk_sort_of_thousands_matches_numpy():
    n = 4096
    x = np.random.default_rng(7).permutation(n).astype(np.float32) - n / 2  # distinct
    x[::97] = np.nan
    values, indices = evaluate(parse_hlo(TOPK.replace("SIZE", str(n))), [x])
    finite = np.argsort(-x[~np.isnan(x)], kind="stable")
    nan_first = np.flatnonzero(np.isnan(x))
    expected = np.concatenate([nan_first, np.flatnonzero(~np.isnan(x))[finite]])
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_array_equal(values, x[expected])


@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_lexicographic_with_a_payload_tie_break(direction):
    module = parse_hlo(LEXICOGRAPHIC.replace("SIZE", "40") % direction)
    keys = recognize_comparator(module.entry.root.attrs.to_apply)
    assert [(k.operand, k.descending) for k in keys] == [(0, direction == "GT"), (1, False)]
    x = _values(120, 3).reshape(3, 40)
    y = np.random.default_rng(1).integers(0, 5, (3, 40)).astype(np.int32)
    got = evaluate(module, [x, y])
    want = _by_comparator(module, [x, y], 1)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_other_comparators_are_not_recognised():
    module = parse_hlo("""HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  na = f32[] abs(a)
  ROOT lt = pred[] compare(na, b), direction=LT
}
ENTRY e {
  x = f32[5] parameter(0)
  ROOT s = f32[5] sort(x), dimensions={0}, to_apply=cmp
}""")
    assert recognize_comparator(module.entry.root.attrs.to_apply) is None


# XLA's top-k comparator with a tie written as "neither greater": EQ(GT(a, b), GT(b, a)) over
# the integer keys of the float-ordering dance (spmd_partitioner_test.cc's
# PartitionSortInTopKWhenComparisonWithSelect).
NEITHER_GREATER = """HloModule neither
cmp {
  a = bf16[] parameter(0)
  fa = f32[] convert(a)
  ia = s32[] bitcast-convert(fa)
  zero = s32[] constant(0)
  na = pred[] compare(ia, zero), direction=LT
  big = u32[] constant(2147483647)
  ua = u32[] bitcast-convert(fa)
  da = u32[] subtract(big, ua)
  sa = s32[] bitcast-convert(da)
  ka = s32[] select(na, sa, ia)
  b = bf16[] parameter(1)
  fb = f32[] convert(b)
  ib = s32[] bitcast-convert(fb)
  nb = pred[] compare(ib, zero), direction=LT
  ub = u32[] bitcast-convert(fb)
  db = u32[] subtract(big, ub)
  sb = s32[] bitcast-convert(db)
  kb = s32[] select(nb, sb, ib)
  gt = pred[] compare(ka, kb), direction=GT
  lt = pred[] compare(kb, ka), direction=GT
  tie = pred[] compare(gt, lt), direction=EQ
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  first = pred[] compare(i, j), direction=LT
  ROOT r = pred[] select(tie, first, gt)
}
ENTRY e {
  x = bf16[2,SIZE] parameter(0)
  y = s32[2,SIZE] iota(), iota_dimension=1
  ROOT sort = (bf16[2,SIZE], s32[2,SIZE]) sort(x, y), dimensions={1}, is_stable=true,
    to_apply=cmp
}"""


def test_a_tie_written_as_neither_greater_is_recognised_and_sorts_as_the_comparator():
    module = parse_hlo(NEITHER_GREATER.replace("SIZE", "96"))
    keys = recognize_comparator(module.entry.root.attrs.to_apply)
    assert [(k.operand, k.descending) for k in keys] == [(0, True), (1, False)]
    import ml_dtypes
    x = _values(192, 5).reshape(2, 96).astype(ml_dtypes.bfloat16)
    got = evaluate(module, [x])
    y = np.broadcast_to(np.arange(96, dtype=np.int32), (2, 96))
    want = _by_comparator(module, [x, y], 1)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a).view(np.uint16) if a.dtype.itemsize == 2
                                      else a, np.asarray(b).view(np.uint16)
                                      if b.dtype.itemsize == 2 else b)


def test_neither_greater_over_float_keys_is_not_a_tie():
    """With float keys and the default comparison, NaN is neither greater nor equal: the
    form is not equality, and the comparator is called instead."""
    text = NEITHER_GREATER.replace("gt = pred[] compare(ka, kb)", "gt = pred[] compare(a, b)") \
        .replace("lt = pred[] compare(kb, ka)", "lt = pred[] compare(b, a)")
    module = parse_hlo(text.replace("SIZE", "8"))
    assert recognize_comparator(module.entry.root.attrs.to_apply) is None
