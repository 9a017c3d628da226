"""XLA's top-k sort program, shared by the sort tests and scripts/bench_sort.py."""

# XLA's top-k comparator: floats ordered through their bits, NaN above +inf (as written by
# its SPMD partitioner tests), values compared GT.
FLOAT_KEY = """
  {side}_bits = s32[] bitcast-convert({param})
  {side}_zero = s32[] constant(0)
  {side}_negative = pred[] compare({side}_bits, {side}_zero), direction=LT
  {side}_max = u32[] constant(2147483647)
  {side}_ubits = u32[] bitcast-convert({param})
  {side}_flipped = u32[] subtract({side}_max, {side}_ubits)
  {side}_sflipped = s32[] bitcast-convert({side}_flipped)
  {side}_key = s32[] select({side}_negative, {side}_sflipped, {side}_bits)"""

TOPK = """HloModule topk
compare-greater-than {
  p.0.lhs = f32[] parameter(0)
  p.0.rhs = f32[] parameter(1)
  p.1.lhs = s32[] parameter(2)
  p.1.rhs = s32[] parameter(3)""" + FLOAT_KEY.format(side="l", param="p.0.lhs") \
    + FLOAT_KEY.format(side="r", param="p.0.rhs") + """
  ROOT gt = pred[] compare(l_key, r_key), direction=GT
}
ENTRY e {
  x = f32[SIZE] parameter(0)
  iota = s32[SIZE] iota(), iota_dimension=0
  ROOT sort = (f32[SIZE], s32[SIZE]) sort(x, iota), dimensions={0}, is_stable=true,
    to_apply=compare-greater-than
}"""


def topk_program(size: int) -> str:
    """HLO text: sort f32[size] descending through XLA's top-k comparator, iota payload."""
    return TOPK.replace("SIZE", str(size))
