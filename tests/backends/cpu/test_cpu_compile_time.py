"""What keeps the CPU backend's compile time down must not change a result: fusions whose
functions are the same are compiled once (aliases), loop fusions whose members are
elementwise ops, scalar broadcasts and reshapes run as one flat loop, and large loop
fusions are not unrolled. Each case runs through the compiled backend, in lockstep and
stacked, and is compared bit for bit with the reference evaluator."""

import numpy as np
import pytest

import xla_spmd.backends.reference  # noqa: F401 (register the reference rules)
from xla_spmd.backends.cpu import CpuBackend
from xla_spmd.backends.cpu.emitter import UNROLL_MAX_BYTES, render_module
from xla_spmd.backends.cpu.fusion import fuse
from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import ArrayShape, Builder, Module
from xla_spmd.ir.dtypes import F32, S32

BACKEND = CpuBackend()


def check(module: Module, args: list[np.ndarray]) -> None:
    result = evaluate(module, args)
    want = [np.asarray(v) for v in (result if isinstance(result, tuple) else (result,))]
    executable = BACKEND.compile(module, (0, 1))
    assert executable.report()["fallbacks"] == {}
    alone = executable.run(0, args, None)
    for mode in (False, True):
        together = executable.run_together({0: args, 1: args}, {0: None, 1: None},
                                           stack=mode)
        for got in (alone, together[0], together[1]):
            assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


def twin_updates(shape: tuple) -> Module:
    """``(a - 0.5 * b, c - 0.5 * d)``: two fusions identical but for their names."""
    b = Builder("main")
    params = [b.parameter(ArrayShape(F32, shape), name) for name in "abcd"]
    half = b.broadcast(b.constant(np.array(0.5, np.float32)), dimensions=(),
                       shape=ArrayShape(F32, shape))
    first = b.op("subtract", params[0], b.op("multiply", half, params[1]))
    second = b.op("subtract", params[2], b.op("multiply", half, params[3]))
    return Module.from_entry("m", b.build(b.tuple(first, second)))


def test_identical_fusions_are_compiled_once_and_both_compute():
    module = twin_updates((5, 7))
    fusions, _ = fuse(module.entry)
    text = render_module(fusions, data_offset=16)
    assert text.count("define void") == 2  # one body and its entry
    assert text.count(" = alias ") == 2
    rng = np.random.default_rng(0)
    check(module, [rng.standard_normal((5, 7)).astype(np.float32) for _ in range(4)])


def reshaped_chain(shape: tuple, reshaped: tuple) -> Module:
    """``reshape(x * 3 + 1) - y``: a reshape between elementwise ops and a scalar
    broadcast, every input read at the output's linear index."""
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, shape), "x")
    y = b.parameter(ArrayShape(F32, reshaped), "y")

    def scalar(value):
        return b.broadcast(b.constant(np.array(value, np.float32)), dimensions=(),
                           shape=ArrayShape(F32, shape))
    value = b.op("add", b.op("multiply", x, scalar(3.0)), scalar(1.0))
    value = b.reshape(value, shape=ArrayShape(F32, reshaped))
    return Module.from_entry("m", b.build(b.op("subtract", value, y)))


@pytest.mark.parametrize("shape, reshaped", [((4, 6), (24,)), ((2, 3, 4), (6, 4)),
                                             ((3, 1, 5), (5, 3)), ((64, 300), (300, 64))])
def test_flat_loop_over_reshapes_and_scalar_broadcasts(shape, reshaped):
    module = reshaped_chain(shape, reshaped)
    fusions, _ = fuse(module.entry)
    assert len(fusions) == 1
    text = render_module(fusions)
    assert "%i1" not in text  # one loop over the elements
    rng = np.random.default_rng(1)
    check(module, [rng.standard_normal(shape).astype(np.float32),
                   rng.standard_normal(reshaped).astype(np.float32)])


def test_large_loop_fusions_are_not_unrolled_small_ones_are():
    big = (UNROLL_MAX_BYTES // 8 + 1,)  # two f32 arrays: just over the bound
    for shape, unrolled in (((1000,), True), (big, False)):
        module = reshaped_chain(shape, shape)
        fusions, _ = fuse(module.entry)
        assert ("llvm.loop.unroll.disable" in render_module(fusions)) is not unrolled
        rng = np.random.default_rng(2)
        check(module, [rng.standard_normal(shape).astype(np.float32) for _ in range(2)])


def test_broadcast_of_a_vector_is_not_flat():
    """A broadcast of a non-scalar reads its operand at another index: a loop nest."""
    b = Builder("main")
    v = b.parameter(ArrayShape(S32, (3,)), "v")
    m = b.parameter(ArrayShape(S32, (4, 3)), "m")
    row = b.broadcast(v, dimensions=(1,), shape=ArrayShape(S32, (4, 3)))
    module = Module.from_entry("m", b.build(b.op("add", row, m)))
    fusions, _ = fuse(module.entry)
    assert "%i1" in render_module(fusions)
    check(module, [np.arange(3, dtype=np.int32), np.arange(12, dtype=np.int32).reshape(4, 3)])


def test_a_short_loop_around_a_long_one_is_not_unrolled():
    """Fully unrolled, a short fixed loop would copy the long loop inside it once per
    iteration (the renderer's ``loop_function``): it carries ``unroll.disable``, whatever
    the function's own unrolling; a short loop around short ones stays LLVM's to unroll."""
    from xla_spmd.backends.cpu.renderer import NO_UNROLL, loop_function

    def hinted(dims, unroll):
        text = loop_function("f", "ptr %out", dims, [], unroll=unroll)
        return [f"label %L{k}, !llvm.loop {NO_UNROLL}" in text for k in range(len(dims))]
    assert hinted((8, 2048), True) == [True, False]
    assert hinted((8, 2048), False) == [True, True]
    assert hinted((8, 4, 2048), True) == [True, True, False]
    assert hinted((8, 4), False) == [False, False]
    assert hinted((2048, 8), False) == [True, False]


def test_heads_around_rows_compute_as_the_reference():
    """A row bias broadcast over 8 x 4096 (a nest: 8 around 4096) and a max over the rows
    of 8 x 300 (a reduction, unrolled but for its outer loop) equal the reference."""
    from xla_spmd.ir import parse_hlo
    module = parse_hlo("""HloModule m
%max (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %m = f32[] maximum(%p, %q)
}
ENTRY %e {
  %x = f32[8,4096] parameter(0)
  %v = f32[4096] parameter(1)
  %y = f32[8,300] parameter(2)
  %row = f32[8,4096] broadcast(%v), dimensions={1}
  %sum = f32[8,4096] add(%x, %row)
  %low = f32[] constant(-inf)
  %biggest = f32[8] reduce(%y, %low), dimensions={1}, to_apply=%max
  ROOT %t = (f32[8,4096], f32[8]) tuple(%sum, %biggest)
}""")
    fusions, _ = fuse(module.entry)
    assert "llvm.loop.unroll.disable" in render_module(fusions)
    rng = np.random.default_rng(3)
    check(module, [rng.standard_normal((8, 4096)).astype(np.float32),
                   rng.standard_normal(4096).astype(np.float32),
                   rng.standard_normal((8, 300)).astype(np.float32)])
