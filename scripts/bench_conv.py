"""Convolution and select-and-scatter on the CPU backend against the reference rule, and the
alternatives the CPU kernel does not use (``backends/cpu/convolution.py`` says why): a single
im2col GEMM over all taps, which sums in another order.

    python scripts/bench_conv.py [--repeats 5]

Prints best-of times in ms for a ResNet-like 3x3 conv, its two gradient convs, a 1x1 conv and
a 2x2 max-pool gradient (batch 8, 32x32, 64 channels), and whether each CPU result equals
the reference's bit for bit.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from xla_spmd.backends.cpu import BACKEND
from xla_spmd.backends.reference import evaluate
from xla_spmd.ir.hlo_parser import parse_hlo

CASES = {
    "conv 3x3, 8x32x32x64 -> 64": ("f32[8,32,32,64]", "f32[3,3,64,64]", "f32[8,32,32,64]",
                                   "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
    "conv 1x1, 8x32x32x64 -> 128": ("f32[8,32,32,64]", "f32[1,1,64,128]", "f32[8,32,32,128]",
                                    "window={size=1x1}, dim_labels=b01f_01io->b01f"),
    "input gradient 3x3 (reversed)": (
        "f32[8,32,32,64]", "f32[3,3,64,64]", "f32[8,32,32,64]",
        "window={size=3x3 pad=1_1x1_1 rhs_reversal=1x1}, dim_labels=b01f_01oi->b01f"),
    "kernel gradient 3x3": ("f32[8,32,32,64]", "f32[8,32,32,64]", "f32[3,3,64,64]",
                            "window={size=32x32 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf"),
}

POOL = """HloModule m
%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
ENTRY %e (x: f32[8,32,32,64], s: f32[8,16,16,64]) -> f32[8,32,32,64] {
  %x = f32[8,32,32,64] parameter(0)
  %s = f32[8,16,16,64] parameter(1)
  %z = f32[] constant(0)
  ROOT %r = f32[8,32,32,64] select-and-scatter(%x, %s, %z),
    window={size=1x2x2x1 stride=1x2x2x1}, select=%ge, scatter=%add
}"""


def best_of(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def single_gemm(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """A 3x3 'same' conv (NHWC, HWIO) as one im2col GEMM contracting taps x channels."""
    n, h, w, c = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cols = np.empty((n, h, w, 3, 3, c), x.dtype)
    for i in range(3):
        for j in range(3):
            cols[:, :, :, i, j] = padded[:, i:i + h, j:j + w]
    return (cols.reshape(n * h * w, 9 * c) @ k.reshape(9 * c, -1)).reshape(n, h, w, -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    def array(text):
        dims = tuple(int(d) for d in text[text.index("[") + 1:-1].split(","))
        return rng.standard_normal(dims).astype(np.float32)

    print(f"{'case':34} {'cpu ms':>9} {'reference ms':>13} {'bit-identical':>14}")
    rows = [(name, f"""HloModule m
ENTRY %e (x: {lhs}, k: {rhs}) -> {out} {{
  %x = {lhs} parameter(0)
  %k = {rhs} parameter(1)
  ROOT %y = {out} convolution(%x, %k), {attrs}
}}""", [array(lhs), array(rhs)]) for name, (lhs, rhs, out, attrs) in CASES.items()]
    x = rng.integers(-3, 4, (8, 32, 32, 64)).astype(np.float32)
    rows.append(("max-pool gradient 2x2", POOL, [x, array("f32[8,16,16,64]")]))
    for name, text, values in rows:
        module = parse_hlo(text)
        executable = BACKEND.compile(module, (0,))
        (got,) = executable.run(0, values, None)
        want = np.asarray(evaluate(module, values))
        same = got.tobytes() == np.ascontiguousarray(want).tobytes()
        ours = best_of(lambda e=executable, v=values: e.run(0, v, None), args.repeats)
        reference = best_of(lambda m=module, v=values: evaluate(m, v), args.repeats)
        print(f"{name:34} {ours:9.1f} {reference:13.1f} {str(same):>14}")
    x, k = array("f32[8,32,32,64]"), array("f32[3,3,64,64]")
    print(f"{'(single im2col GEMM, 3x3: not used)':34} "
          f"{best_of(lambda: single_gemm(x, k), args.repeats):9.1f}")


if __name__ == "__main__":
    main()
