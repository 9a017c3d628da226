"""Time the reference evaluator's sort with XLA's top-k comparator (values descending through
the NaN-ordering bitcasts, an iota payload), the form XLA's partitioner tests and JAX's top-k
write.

    python scripts/bench_sort.py [--sizes 4096,65536]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import parse_hlo

KEY = """
  {side}_bits = s32[] bitcast-convert({param})
  {side}_zero = s32[] constant(0)
  {side}_negative = pred[] compare({side}_bits, {side}_zero), direction=LT
  {side}_max = u32[] constant(2147483647)
  {side}_ubits = u32[] bitcast-convert({param})
  {side}_flipped = u32[] subtract({side}_max, {side}_ubits)
  {side}_sflipped = s32[] bitcast-convert({side}_flipped)
  {side}_key = s32[] select({side}_negative, {side}_sflipped, {side}_bits)"""

PROGRAM = """HloModule topk
greater {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)""" + KEY.format(side="l", param="a") + KEY.format(side="r", param="b") \
    + """
  ROOT gt = pred[] compare(l_key, r_key), direction=GT
}
ENTRY e {
  x = f32[SIZE] parameter(0)
  iota = s32[SIZE] iota(), iota_dimension=0
  ROOT sort = (f32[SIZE], s32[SIZE]) sort(x, iota), dimensions={0}, is_stable=true,
    to_apply=greater
}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,65536")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        module = parse_hlo(PROGRAM.replace("SIZE", str(size)))
        x = np.random.default_rng(0).standard_normal(size).astype(np.float32)
        start = time.perf_counter()
        evaluate(module, [x])
        print(f"sort f32[{size}] + iota, top-k comparator: "
              f"{(time.perf_counter() - start) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
