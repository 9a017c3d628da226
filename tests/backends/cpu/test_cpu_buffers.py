"""Buffer assignment on the CPU backend (``backends/cpu/program.py``): recycled outputs,
in-place elementwise fusions and donated arguments, each compared bit for bit with the
reference evaluator, and the buffers a caller keeps never written again."""

import sys
from pathlib import Path

import numpy as np
import pytest

from xla_spmd.backends.cpu import CpuBackend, program
from xla_spmd.backends.reference import evaluate
from xla_spmd.buffers import Recycler
from xla_spmd.ir import ArrayShape, Builder, Module
from xla_spmd.ir.dtypes import F32
from xla_spmd.ir.hlo_parser import parse_hlo

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from cpu_bits import exact_bits  # noqa: E402
from test_jax_cases import load_case  # noqa: E402


@pytest.fixture
def recycle_everything(monkeypatch):
    """Every loop-fusion output comes from a fresh recycler, however small (executables
    compiled while it is on bind their outputs to it)."""
    recycler = Recycler(min_bytes=1, max_count=64)
    monkeypatch.setattr(program, "OUTPUTS", recycler)
    return recycler


def _reference(module: Module, args: list) -> list[bytes]:
    result = evaluate(module, args)
    leaves = result if isinstance(result, tuple) else (result,)
    return [exact_bits(leaf) for leaf in leaves]


def test_conv_gradient_with_every_output_recycled_equals_the_reference(recycle_everything):
    # The program that broke the removed pool: a reference convolution's result (permuted
    # strides) came back as a fused kernel's row-major output (see xla_spmd/buffers.py).
    _, module, args, _ = load_case("sharded_conv_grad", ".hlo")
    want = _reference(module, args)
    executable = CpuBackend().compile(module, (0,))
    kept = [executable.run(0, args, None) for _ in range(3)]
    assert len(recycle_everything) > 0  # its fusions took recycled outputs
    for outputs in kept:  # every run right, and no later run wrote into an earlier result
        assert [exact_bits(o) for o in outputs] == want


def _chain(elements: int) -> Module:
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (elements,)), "x")
    y = b.parameter(ArrayShape(F32, (elements,)), "y")
    value = x
    for k, opcode in enumerate(["multiply", "add", "maximum", "subtract", "multiply", "add"]):
        value = b.op(opcode, value, y if k % 2 else x)
    return Module.from_entry("chain", b.build(value))


def test_a_kept_result_and_a_view_of_it_are_never_overwritten(monkeypatch):
    # A recycler of its own: buffers that earlier tests left idle would be handed out first.
    monkeypatch.setattr(program, "OUTPUTS", Recycler(max_count=32))
    elements = 1 << 19  # 2 MB: above the recycler's threshold
    module = _chain(elements)
    executable = CpuBackend().compile(module, (0,))
    rng = np.random.default_rng(0)
    inputs = [[rng.standard_normal(elements).astype(np.float32) for _ in range(2)]
              for _ in range(4)]
    (first,) = executable.run(0, inputs[0], None)
    view = first[::3]
    expected_view = exact_bits(view)
    address = first.ctypes.data
    del first  # the view still holds the buffer
    (second,) = executable.run(0, inputs[1], None)
    assert not np.shares_memory(second, view)
    assert exact_bits(view) == expected_view
    assert [exact_bits(second)] == _reference(module, inputs[1])
    del view, second  # nothing refers to either buffer now: they are handed out again
    (third,) = executable.run(0, inputs[2], None)
    (fourth,) = executable.run(0, inputs[3], None)
    assert address in (third.ctypes.data, fourth.ctypes.data)
    assert [exact_bits(third)] == _reference(module, inputs[2])
    assert [exact_bits(fourth)] == _reference(module, inputs[3])


def test_recycled_buffers_are_c_contiguous_whatever_was_released():
    recycler = Recycler(min_bytes=1)
    a = recycler.take((4, 6), np.dtype(np.float32))
    transposed = a.T.copy()  # an array of another layout, dropped: never adopted
    del a, transposed
    b = recycler.take((6, 4), np.dtype(np.float32))
    assert b.flags.c_contiguous and b.shape == (6, 4) and b.dtype == np.float32


# ---------------------------------------------------------------------------------------------
# In place: a fusion writes over an operand that dies there


def _inplace_module(n: int, partitions: int = 1) -> Module:
    """``a`` feeds a max-reduce and ``b`` (which writes over it); ``b`` feeds another and
    ``d`` (which writes over it); ``v``, a view of ``e``, is read after ``f``, so ``f``
    must not write over ``e``; the parameters are never written over (none donated)."""
    return parse_hlo(f"""HloModule m, num_partitions={partitions}
%max (p: f32[], q: f32[]) -> f32[] {{
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %r = f32[] maximum(%p, %q)
}}
ENTRY %e (x: f32[{n}], y: f32[{n}]) -> (f32[{n}], f32[], f32[], f32[{n}], f32[2,{n // 2}]) {{
  %x = f32[{n}] parameter(0)
  %y = f32[{n}] parameter(1)
  %low = f32[] constant(-inf)
  %a = f32[{n}] multiply(%x, %y)
  %m = f32[] reduce(%a, %low), dimensions={{0}}, to_apply=%max
  %b = f32[{n}] add(%a, %x)
  %m2 = f32[] reduce(%b, %low), dimensions={{0}}, to_apply=%max
  %c = f32[{n}] multiply(%b, %b)
  %d = f32[{n}] subtract(%c, %y)
  %e = f32[{n}] negate(%y)
  %v = f32[2,{n // 2}] reshape(%e)
  %f = f32[{n}] add(%e, %x)
  %w = f32[2,{n // 2}] negate(%v)
  ROOT %t = (f32[{n}], f32[], f32[], f32[{n}], f32[2,{n // 2}]) tuple(%d, %m, %m2, %f, %w)
}}""")


def _written_over(executable) -> dict[str, str | None]:
    entry = executable.programs[id(executable.module.entry)]
    return {s.inst.name: (None if s.fused.inplace is None else s.reads and
                          entry.computation.instructions[s.reads[s.fused.inplace]].name)
            for s in entry.steps if s.kind == "fusion" and s.fused.kind == "loop"}


@pytest.mark.parametrize("n", [64, 1 << 19])
def test_fusions_write_over_dying_operands_and_equal_the_reference(n):
    module = _inplace_module(n)
    executable = CpuBackend().compile(module, (0,))
    assert _written_over(executable) == {"a": None, "b": "a", "d": "b", "e": None,
                                         "f": None, "w": None}
    text = executable.as_text()
    assert "[in place of a]" in text and "[in place of b]" in text
    ir = executable.llvm_ir
    assert "(ptr %out, ptr %in0, ptr noalias %in1" in ir  # b: noalias off for a, out only
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
    saved = [exact_bits(a) for a in args]
    for _ in range(2):
        assert [exact_bits(o) for o in executable.run(0, args, None)] == _reference(
            module, args)
    assert [exact_bits(a) for a in args] == saved  # arguments are never written


@pytest.mark.parametrize("stack", [True, False])
def test_in_place_fusions_run_lockstep_and_stacked_as_alone(stack):
    module = _inplace_module(64, partitions=2)
    executable = CpuBackend().compile(module, (0, 1))
    rng = np.random.default_rng(2)
    args = {d: [rng.standard_normal(64).astype(np.float32) for _ in range(2)] for d in (0, 1)}
    got = executable.run_together(args, {0: None, 1: None}, stack=stack)
    for d in (0, 1):
        assert [exact_bits(o) for o in got[d]] == _reference(module, args[d])


def test_peak_bytes_count_the_buffers_written_over():
    n = 1 << 10
    module = parse_hlo(f"""HloModule m
%max (p: f32[], q: f32[]) -> f32[] {{
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %r = f32[] maximum(%p, %q)
}}
ENTRY %e (x: f32[{n}], y: f32[{n}]) -> (f32[{n}], f32[], f32[]) {{
  %x = f32[{n}] parameter(0)
  %y = f32[{n}] parameter(1)
  %low = f32[] constant(-inf)
  %a = f32[{n}] multiply(%x, %y)
  %m = f32[] reduce(%a, %low), dimensions={{0}}, to_apply=%max
  %b = f32[{n}] add(%a, %x)
  %m2 = f32[] reduce(%b, %low), dimensions={{0}}, to_apply=%max
  %c = f32[{n}] multiply(%b, %b)
  %d = f32[{n}] subtract(%c, %y)
  ROOT %t = (f32[{n}], f32[], f32[]) tuple(%d, %m, %m2)
}}""")
    entry = module.entry
    without = program.plan(entry, set(), windows=True, inplace=False)
    with_reuse = program.plan(entry, set(), windows=True, inplace=True)
    assert [s.fused.inplace is not None for s in with_reuse.steps
            if s.kind == "fusion" and s.fused.kind == "loop"] == [False, True, True]
    array, scalar = 4 * n, 4
    # Without reuse the peak is at b: x, y, a and b, with low and m.
    assert without.peak_bytes == 4 * array + 2 * scalar
    # With it, a, b and d share one buffer (and x dies at b): the peak is at m (x, y, a,
    # low, m and m's accumulator).
    assert with_reuse.peak_bytes == 3 * array + 3 * scalar


# ---------------------------------------------------------------------------------------------
# Donated arguments: the result computed in the argument's buffer, with no copy


def _donating_module(n: int) -> Module:
    return parse_hlo(f"""HloModule m, input_output_alias={{ {{}}: (0, {{}}, may-alias) }}
ENTRY %e (x: f32[{n}], y: f32[{n}]) -> f32[{n}] {{
  %x = f32[{n}] parameter(0)
  %y = f32[{n}] parameter(1)
  %p = f32[{n}] multiply(%x, %y)
  ROOT %z = f32[{n}] add(%p, %x)
}}""")


def test_a_donated_argument_holds_the_result_with_no_copy():
    n = 1 << 12
    module = _donating_module(n)
    executable = CpuBackend().compile(module, (0,))
    assert executable.written == {0}
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    want = _reference(module, [x.copy(), y.copy()])
    (got,) = executable.run(0, [x, y], None, donated={0})
    assert np.shares_memory(got, x) and got.ctypes.data == x.ctypes.data
    assert [exact_bits(got)] == want


@pytest.mark.parametrize("case", ["not donated", "passed twice", "strided", "read-only"])
def test_an_argument_not_handed_over_is_never_written(case):
    n = 1 << 12
    module = _donating_module(n)
    executable = CpuBackend().compile(module, (0,))
    rng = np.random.default_rng(4)
    x = rng.standard_normal(2 * n).astype(np.float32)[::2] if case == "strided" else (
        rng.standard_normal(n).astype(np.float32))
    y = x if case == "passed twice" else rng.standard_normal(n).astype(np.float32)
    if case == "read-only":
        x.flags.writeable = False
    saved = exact_bits(x)
    want = _reference(module, [x.copy(), y.copy()])
    (got,) = executable.run(0, [x, y], None, donated=() if case == "not donated" else {0})
    assert exact_bits(x) == saved and not np.shares_memory(got, x)
    assert [exact_bits(got)] == want


def test_a_donated_earlier_result_is_written_over_only_when_nothing_else_views_it():
    n = 1 << 19  # 2 MB: results are recycled buffers
    module = _donating_module(n)
    executable = CpuBackend().compile(module, (0,))
    make = CpuBackend().compile(_chain(n), (0,))
    rng = np.random.default_rng(5)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    (alone,) = make.run(0, [x, y], None)
    assert alone.base is not None  # a view of a recycled buffer
    want = _reference(module, [alone.copy(), y])
    (got,) = executable.run(0, [alone, y], None, donated={0})
    assert np.shares_memory(got, alone) and [exact_bits(got)] == want
    (viewed,) = make.run(0, [y, x], None)
    view = viewed[5:]
    saved = exact_bits(view)
    want = _reference(module, [viewed.copy(), y])
    (got,) = executable.run(0, [viewed, y], None, donated={0})
    assert not np.shares_memory(got, viewed) and [exact_bits(got)] == want
    assert exact_bits(view) == saved


@pytest.mark.parametrize("partitions, stack", [(1, False), (2, False), (2, True)])
def test_a_dot_output_that_dies_is_written_over(partitions, stack):
    module = parse_hlo(f"""HloModule m, num_partitions={partitions}
ENTRY %e (x: f32[64,32], w: f32[32,48], b: f32[64,48]) -> f32[64,48] {{
  %x = f32[64,32] parameter(0)
  %w = f32[32,48] parameter(1)
  %b = f32[64,48] parameter(2)
  %d = f32[64,48] dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %zero = f32[] constant(0)
  %zeros = f32[64,48] broadcast(%zero), dimensions={{}}
  %s = f32[64,48] add(%d, %b)
  ROOT %r = f32[64,48] maximum(%s, %zeros)
}}""")
    devices = tuple(range(partitions))
    executable = CpuBackend().compile(module, devices)
    assert _written_over(executable) == {"r": "d"}
    rng = np.random.default_rng(6)
    shapes = ((64, 32), (32, 48), (64, 48))
    args = {d: [rng.standard_normal(s).astype(np.float32) for s in shapes] for d in devices}
    got = executable.run_together(args, {d: None for d in devices}, stack=stack)
    for d in devices:
        assert [exact_bits(o) for o in got[d]] == _reference(module, args[d])
