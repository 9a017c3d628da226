"""Time the reference evaluator's sort with XLA's top-k comparator (values descending through
the NaN-ordering bitcasts, an iota payload), the form XLA's partitioner tests and JAX's top-k
write.

    python scripts/bench_sort.py [--sizes 4096,65536]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import parse_hlo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "backends"))
from sort_programs import topk_program  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,65536")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        module = parse_hlo(topk_program(size))
        x = np.random.default_rng(0).standard_normal(size).astype(np.float32)
        start = time.perf_counter()
        evaluate(module, [x])
        print(f"sort f32[{size}] + iota, top-k comparator: "
              f"{(time.perf_counter() - start) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
