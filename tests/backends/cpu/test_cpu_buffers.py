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


def test_a_kept_result_and_a_view_of_it_are_never_overwritten():
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
