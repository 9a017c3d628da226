"""Reduce-window as a generated window kernel: bit for bit the reference evaluator's values
(its taps folded in row-major window order from the init; padding and base dilation skipped),
over random windows, dtypes and reducers; and no fallback left for it."""

import ml_dtypes
import numpy as np
from cpu_bits import exact_bits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xla_spmd.backends.cpu import BACKEND
from xla_spmd.backends.reference import evaluate
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo

DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "s32": np.int32,
          "f16": np.float16}
INITS = {"add": "0", "multiply": "1", "maximum": "-inf", "minimum": "inf"}


@st.composite
def windows(draw):
    rank = draw(st.integers(1, 3))
    dims, specs, out = [], [], []
    for _ in range(rank):
        n = draw(st.integers(1, 7))
        size, stride = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        low, high = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        lhs, rhs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        padded = (n - 1) * lhs + 1 + low + high
        span = (size - 1) * rhs + 1
        if padded < span:
            size, rhs, span = 1, 1, 1
        dims.append(n)
        specs.append((size, stride, low, high, lhs, rhs))
        out.append((padded - span) // stride + 1)
    return dims, specs, out


def _module(dtype: str, op: str, dims, specs, out, init: str) -> str:
    text = " ".join([
        "size=" + "x".join(str(s[0]) for s in specs),
        "stride=" + "x".join(str(s[1]) for s in specs),
        "pad=" + "x".join(f"{s[2]}_{s[3]}" for s in specs),
        "lhs_dilate=" + "x".join(str(s[4]) for s in specs),
        "rhs_dilate=" + "x".join(str(s[5]) for s in specs)])
    shape = f"{dtype}[{','.join(map(str, dims))}]"
    result = f"{dtype}[{','.join(map(str, out))}]"
    return f"""HloModule m
%r (a: {dtype}[], b: {dtype}[]) -> {dtype}[] {{
  %a = {dtype}[] parameter(0)
  %b = {dtype}[] parameter(1)
  ROOT %c = {dtype}[] {op}(%a, %b)
}}
ENTRY %e (x: {shape}) -> {result} {{
  %x = {shape} parameter(0)
  %y = {shape} multiply(%x, %x)
  %z = {dtype}[] constant({init})
  ROOT %w = {result} reduce-window(%y, %z), window={{{text}}}, to_apply=%r
}}"""


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(window=windows(), dtype=st.sampled_from(sorted(DTYPES)),
       op=st.sampled_from(sorted(INITS)))
def test_window_kernels_equal_the_reference(window, dtype, op):
    dims, specs, out = window
    init = INITS[op]
    if dtype == "s32":
        init = {"-inf": "-2147483648", "inf": "2147483647"}.get(init, init)
    module = parse_hlo(_module(dtype, op, dims, specs, out, init))
    executable = BACKEND.compile(module, (0,))
    assert executable.report()["fallbacks"] == {}
    assert [s.fusion.kind for s in executable.programs[id(module.entry)].steps
            if s.kind == "fusion" and s.inst.op.name == "reduce-window"] == ["window"]
    rng = np.random.default_rng(len(dims) + sum(dims))
    x = (rng.standard_normal(dims) * 3).astype(DTYPES[dtype])
    got = executable.run(0, [x], None)
    want = evaluate(module, [x])
    assert [exact_bits(g) for g in got] == [exact_bits(np.asarray(want))]


def test_window_kernels_run_stacked():
    """A max-pool on 4 devices, stacked: each device's own window values."""
    module = parse_hlo(_module("f32", "maximum", [6, 6], [(2, 2, 0, 0, 1, 1)] * 2, [3, 3],
                               "-inf").replace("HloModule m", "HloModule m, num_partitions=4"))
    executable = BACKEND.compile(module, tuple(range(4)))
    rng = np.random.default_rng(7)
    arguments = {d: [rng.standard_normal((6, 6)).astype(np.float32)] for d in range(4)}
    world = LocalWorld(4)
    results = executable.run_together(arguments, {d: world.communicator(d) for d in range(4)},
                                      stack=True)
    for device in range(4):
        want = evaluate(module, arguments[device])
        assert [exact_bits(r) for r in results[device]] == [exact_bits(np.asarray(want))]
