"""The GPU backend's kernel goals (issue 18) as a table of ratios, on one GPU:

    python scripts/bench_gpu.py [--quick]

* a fused chain of 8 elementwise ops over 64 MB of f32 against the GPU's copy bandwidth
  (goal: at least 70%);
* dot 4096³ f32 against ``cupy.matmul`` on the same operands (goal: at least 85%).

Arguments and results stay on the GPU (``GpuExecutable.run_on_device``); each time is the best
of several runs between two stream synchronisations. Needs CuPy and a GPU; without them it
says so and exits 1. (It has not run yet: no machine of ours has a GPU.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_backend import elementwise_chain  # noqa: E402

from xla_spmd.backends.gpu import GpuBackend  # noqa: E402
from xla_spmd.errors import XlaSpmdError  # noqa: E402
from xla_spmd.ir import ArrayShape, Builder, Module  # noqa: E402
from xla_spmd.ir.dtypes import F32  # noqa: E402


def best_of(cupy, function, repeats: int = 10) -> float:
    function()  # warm up: compile, load, allocate
    times = []
    for _ in range(repeats):
        cupy.cuda.get_current_stream().synchronize()
        start = time.perf_counter()
        function()
        cupy.cuda.get_current_stream().synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    try:
        from xla_spmd.backends.gpu.runtime import cupy_module

        cupy = cupy_module()
    except XlaSpmdError as error:
        print(f"bench_gpu: {error}", file=sys.stderr)
        return 1
    backend = GpuBackend()
    rows = []

    elements = (1 << 20) if args.quick else (16 << 20)
    x, y = (cupy.random.standard_normal(elements, dtype=cupy.float32) for _ in range(2))
    chain = backend.compile(elementwise_chain(elements), (0,))
    fused = best_of(cupy, lambda: chain.run_on_device(0, [x, y], None))
    out = cupy.empty_like(x)
    copy = best_of(cupy, lambda: cupy.copyto(out, x))
    chain_rate, copy_rate = 3 * x.nbytes / fused, 2 * x.nbytes / copy
    rows.append((f"fused chain of 8 elementwise ops, {x.nbytes >> 20} MB",
                 f"{chain_rate / 1e9:.0f} GB/s vs copy {copy_rate / 1e9:.0f} GB/s",
                 f"{chain_rate / copy_rate:.0%} (goal ≥ 70%)"))

    n = 1024 if args.quick else 4096
    a, b = (cupy.random.standard_normal((n, n), dtype=cupy.float32) for _ in range(2))
    builder = Builder("main")
    pa, pb = (builder.parameter(ArrayShape(F32, (n, n)), name) for name in ("a", "b"))
    root = builder.dot(pa, pb, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    dot = backend.compile(Module.from_entry("dot", builder.build(root)), (0,))
    ours = best_of(cupy, lambda: dot.run_on_device(0, [a, b], None))
    theirs = best_of(cupy, lambda: cupy.matmul(a, b))
    flops = 2 * n ** 3
    rows.append((f"dot {n}³ f32", f"{flops / ours / 1e12:.1f} vs cupy.matmul "
                 f"{flops / theirs / 1e12:.1f} TFLOP/s", f"{theirs / ours:.0%} (goal ≥ 85%)"))

    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"GPU: {name}")
    width = max(len(r[0]) for r in rows)
    for what, figures, ratio in rows:
        print(f"{what:<{width}}  {figures:<40}  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
