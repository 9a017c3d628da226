"""Hypothesis: random small programs keep their results through simplify, cse and dce (and
the whole `optimize_spmd` sequence), and the passes stay linear on large programs."""

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pass_helpers import assert_same_results

from xla_spmd.ir import F32, S32, ArrayShape, Builder, Module, parse_hlo, print_module
from xla_spmd.passes import (
    cse_pass,
    dce_pass,
    optimize_spmd,
    run_passes,
    simplify_pass,
)

SHAPE = (2, 3)
BINARY = ("add", "subtract", "multiply", "maximum", "minimum")


def _draw_program(data, dtype) -> Module:
    """A program mixing ops the simplifier rewrites with ordinary ones, and duplicates."""
    b = Builder("main")
    shape = ArrayShape(dtype, SHAPE)
    values = [b.parameter(shape, "x"), b.parameter(shape, "y")]
    draw = data.draw
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["binary", "constant", "negate", "copy", "reshape2",
                                     "transpose2", "select", "convert", "tuple", "pad",
                                     "slice", "concat1"]))
        x = draw(st.sampled_from(values))
        if kind == "binary":
            new = b.op(draw(st.sampled_from(BINARY)), x, draw(st.sampled_from(values)))
        elif kind == "constant":
            scalar = b.constant(draw(st.sampled_from([0, 1, 2])), dtype)
            c = b.broadcast(scalar, dimensions=(), shape=shape)
            new = b.op(draw(st.sampled_from(BINARY)), *draw(st.permutations([x, c])))
        elif kind == "negate":
            new = b.negate(b.negate(x)) if draw(st.booleans()) else b.negate(x)
        elif kind == "copy":
            new = b.copy(x)
        elif kind == "reshape2":
            flat = b.reshape(x, shape=ArrayShape(dtype, (6,)))
            new = b.reshape(flat, shape=shape)
        elif kind == "transpose2":
            t = b.transpose(x, dimensions=(1, 0))
            new = b.transpose(t, dimensions=(1, 0))
        elif kind == "select":
            p = b.constant(draw(st.booleans()))
            new = b.select(p, x, draw(st.sampled_from(values)))
        elif kind == "convert":
            new = b.convert(x, shape=shape)
        elif kind == "tuple":
            t = b.tuple(x, draw(st.sampled_from(values)))
            new = b.get_tuple_element(t, index=draw(st.integers(0, 1)))
        elif kind == "pad":
            zero = b.constant(0, dtype)
            from xla_spmd.ir import PadDim
            new = b.pad(x, zero, padding=(PadDim(0, 0), PadDim(0, 0)))
        elif kind == "slice":
            from xla_spmd.ir import SliceDim
            new = b.slice(x, slice=(SliceDim(0, 2), SliceDim(0, 3)))
        else:
            new = b.concatenate(x, dimensions=(0,))
        values.append(new)
    root = b.tuple(*draw(st.lists(st.sampled_from(values), min_size=1, max_size=3)))
    return Module.from_entry("random", b.build(root))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from([F32, S32]))
def test_passes_preserve_results(data, dtype):
    module = _draw_program(data, dtype)
    for passes in ([simplify_pass], [cse_pass], [dce_pass],
                   [simplify_pass, cse_pass, dce_pass]):
        result = run_passes(module, passes, verify_each=True)
        assert parse_hlo(print_module(result)) == result
        assert_same_results(module, result)
    optimized = optimize_spmd(module, verify_each=True)
    assert_same_results(module, optimized)
    # A second run finds nothing left to do.
    assert optimize_spmd(optimized) is optimized or print_module(
        optimize_spmd(optimized)) == print_module(optimized)


def test_passes_are_linear_on_large_programs():
    b = Builder("main")
    shape = ArrayShape(F32, (4,))
    x = b.parameter(shape, "x")
    value = x
    for i in range(25_000):  # 100k instructions: chains of negate/copy pairs and adds
        n = b.negate(b.negate(value))
        c = b.copy(n)
        value = b.add(c, x) if i % 2 else b.maximum(c, x)
    module = Module.from_entry("big", b.build(value))
    assert len(module.entry.instructions) > 100_000
    start = time.perf_counter()
    out = optimize_spmd(module)
    elapsed = time.perf_counter() - start
    assert len(out.entry.instructions) == 25_001
    assert elapsed < 30, f"optimize_spmd took {elapsed:.1f}s on 100k instructions"
    assert out.entry.root.opcode == "add"
