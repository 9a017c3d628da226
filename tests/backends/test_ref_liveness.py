"""Reference evaluator: each value dropped after its last use (``last_uses``), with the same
results as when every value was kept."""

import tracemalloc

import numpy as np

from xla_spmd.backends.reference import evaluate
from xla_spmd.backends.reference.evaluator import last_uses
from xla_spmd.ir import parse_hlo

CHAIN = """HloModule m
ENTRY e {
  x = f32[1024,1024] parameter(0)
  a = f32[1024,1024] negate(x)
  b = f32[1024,1024] abs(a)
  c = f32[1024,1024] negate(b)
  d = f32[1024,1024] abs(c)
  e = f32[1024,1024] negate(d)
  f = f32[1024,1024] abs(e)
  g = f32[1024,1024] negate(f)
  ROOT h = f32[1024,1024] add(g, x)
}"""


def test_a_chain_holds_a_few_values_not_all_of_them():
    x = np.arange(1 << 20, dtype=np.float32).reshape(1024, 1024) - 5e5
    module = parse_hlo(CHAIN)
    evaluate(module, [x])  # rules imported and warmed before measuring
    tracemalloc.start()
    try:
        result = evaluate(module, [x])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(result, -np.abs(x) + x)
    # x is the caller's; at most the operand, the result and the root live at once (4 MiB
    # each): all eight values kept would be 32 MiB
    assert peak < 3.5 * x.nbytes, peak


def test_last_uses_drop_each_value_once_never_the_root():
    module = parse_hlo("""HloModule m
    ENTRY e {
      p = f32[2] parameter(0)
      q = f32[2] parameter(1)
      t = (f32[2], f32[2]) tuple(p, p)
      g = f32[2] get-tuple-element(t), index=1
      unused = f32[2] negate(g)
      ROOT r = f32[2] add(g, p)
    }""")
    computation = module.entry
    names = {id(i): i.name for i in computation.instructions}
    dead = [sorted(names[k] for k in d) for d in last_uses(computation)]
    order = [i.name for i in computation.instructions]
    by_name = dict(zip(order, dead))
    assert by_name["q"] == ["q"]  # an unused parameter: dropped where it stands
    assert by_name["g"] == ["t"]
    assert by_name["unused"] == ["unused"]
    assert by_name["r"] == ["g", "p"]
    assert sum(len(d) for d in dead) == len(order) - 1  # everything once, but the root
    assert last_uses(computation) is last_uses(computation)  # memoised


def test_values_used_inside_loops_and_after_them_stay_until_their_last_use():
    module = parse_hlo("""HloModule m
    cond {
      s = (s32[], f32[3]) parameter(0)
      i = s32[] get-tuple-element(s), index=0
      n = s32[] constant(3)
      ROOT lt = pred[] compare(i, n), direction=LT
    }
    body {
      s = (s32[], f32[3]) parameter(0)
      i = s32[] get-tuple-element(s), index=0
      x = f32[3] get-tuple-element(s), index=1
      one = s32[] constant(1)
      j = s32[] add(i, one)
      y = f32[3] add(x, x)
      ROOT t = (s32[], f32[3]) tuple(j, y)
    }
    ENTRY e {
      x = f32[3] parameter(0)
      zero = s32[] constant(0)
      init = (s32[], f32[3]) tuple(zero, x)
      w = (s32[], f32[3]) while(init), condition=cond, body=body
      y = f32[3] get-tuple-element(w), index=1
      ROOT r = f32[3] subtract(y, x)
    }""")
    x = np.array([1, -2, 3], np.float32)
    np.testing.assert_array_equal(evaluate(module, [x]), 7 * x)
