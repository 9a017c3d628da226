"""select-and-scatter on the CPU backend: bit for bit the reference evaluator's values (ties
to the first window position under GE, padding never picked, each target's sources folded in
row-major order) over random windows, selects, scatters and dtypes; run alone, in lockstep
and stacked; and no fallback left for it."""

import ml_dtypes
import numpy as np
from cpu_bits import exact_bits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xla_spmd.backends.cpu import BACKEND
from xla_spmd.backends.reference import evaluate
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo

DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
          "f16": np.float16, "s32": np.int32}
SELECTS = {
    "ge": "ROOT %c = pred[] compare(%a, %b), direction=GE",
    "gt": "ROOT %c = pred[] compare(%a, %b), direction=GT",
    "le_swapped": "ROOT %c = pred[] compare(%b, %a), direction=LE",
    "lt": "ROOT %c = pred[] compare(%a, %b), direction=LT",
    # not a lone compare of the parameters: called on whole arrays
    "ge_of_negated": "%na = {t}[] negate(%a)\n  %nb = {t}[] negate(%b)\n"
                     "  ROOT %c = pred[] compare(%nb, %na), direction=GE",
}


@st.composite
def windows(draw):
    rank = draw(st.integers(1, 3))
    dims, specs, out = [], [], []
    for _ in range(rank):
        n = draw(st.integers(1, 7))
        size, stride = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        low, high = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        padded = n + low + high
        if padded < size:
            size = 1
        dims.append(n)
        specs.append((size, stride, low, high))
        out.append((padded - size) // stride + 1)
    return dims, specs, out


def _module(dtype: str, select: str, scatter: str, dims, specs, out, devices=1) -> str:
    window = " ".join([
        "size=" + "x".join(str(s[0]) for s in specs),
        "stride=" + "x".join(str(s[1]) for s in specs),
        "pad=" + "x".join(f"{s[2]}_{s[3]}" for s in specs)])
    shape = f"{dtype}[{','.join(map(str, dims))}]"
    source = f"{dtype}[{','.join(map(str, out))}]"
    return f"""HloModule m, num_partitions={devices}
%select (a: {dtype}[], b: {dtype}[]) -> pred[] {{
  %a = {dtype}[] parameter(0)
  %b = {dtype}[] parameter(1)
  {SELECTS[select].format(t=dtype)}
}}
%scatter (a: {dtype}[], b: {dtype}[]) -> {dtype}[] {{
  %a = {dtype}[] parameter(0)
  %b = {dtype}[] parameter(1)
  ROOT %c = {dtype}[] {scatter}(%a, %b)
}}
ENTRY %e (x: {shape}, s: {source}, i: {dtype}[]) -> {shape} {{
  %x = {shape} parameter(0)
  %s = {source} parameter(1)
  %i = {dtype}[] parameter(2)
  ROOT %r = {shape} select-and-scatter(%x, %s, %i), window={{{window}}}, select=%select,
    scatter=%scatter
}}"""


def _arguments(rng, dtype: str, dims, out, nans: bool):
    numpy_dtype = DTYPES[dtype]
    x = rng.integers(-3, 4, dims).astype(numpy_dtype)  # few values: many ties
    if nans and dtype != "s32":
        x[rng.random(dims) < 0.2] = np.nan
    s = (rng.standard_normal(out) * 4).astype(numpy_dtype)
    return [x, s, np.array(1, numpy_dtype)]


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(window=windows(), dtype=st.sampled_from(sorted(DTYPES)),
       select=st.sampled_from(sorted(SELECTS)),
       scatter=st.sampled_from(["add", "add", "maximum", "multiply"]),
       nans=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_select_and_scatter_equals_the_reference_bit_for_bit(window, dtype, select, scatter,
                                                             nans, seed):
    dims, specs, out = window
    module = parse_hlo(_module(dtype, select, scatter, dims, specs, out))
    executable = BACKEND.compile(module, (0,))
    assert executable.report()["fallbacks"] == {}
    args = _arguments(np.random.default_rng(seed), dtype, dims, out, nans)
    (got,) = executable.run(0, args, None)
    assert exact_bits(got) == exact_bits(np.asarray(evaluate(module, args)))


def test_max_pool_gradient_takes_the_first_of_tied_maxima():
    module = parse_hlo(_module("f32", "ge", "add", [2, 4], [(2, 2, 0, 0)] * 2, [1, 2]))
    x = np.array([[1, 5, 2, 8], [5, 4, 8, 8]], np.float32)
    s = np.array([[10, 20]], np.float32)
    (got,) = BACKEND.compile(module, (0,)).run(0, [x, s, np.float32(0)], None)
    np.testing.assert_array_equal(got, [[0, 10, 0, 20], [0, 0, 0, 0]])


def test_select_and_scatter_runs_stacked_and_in_lockstep_as_alone():
    dims, specs, out = [6, 6], [(3, 2, 1, 1)] * 2, [3, 3]
    module = parse_hlo(_module("f32", "ge", "add", dims, specs, out, devices=4))
    rng = np.random.default_rng(5)
    per_device = [_arguments(rng, "f32", dims, out, False) for _ in range(4)]
    executable = BACKEND.compile(module, tuple(range(4)))
    world = LocalWorld(4)
    communicators = {d: world.communicator(d) for d in range(4)}
    runs = [executable.run_together(dict(enumerate(per_device)), communicators, stack=stack)
            for stack in (True, False)]
    for device in range(4):
        want = exact_bits(np.asarray(evaluate(module, per_device[device])))
        assert [exact_bits(v) for v in executable.run(device, per_device[device], None)] == [want]
        for run in runs:
            assert [exact_bits(v) for v in run[device]] == [want]
