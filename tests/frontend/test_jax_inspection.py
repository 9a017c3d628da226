"""Inspection as JAX offers it (issue 16): Lowered.as_text() in StableHLO by default,
compiler_ir, Compiled.cost_analysis/memory_analysis/input_shardings/output_shardings,
jit(f).trace, and Array.at / addressable_data."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd import NamedSharding, P

A = np.arange(128, dtype=np.float32).reshape(8, 16) / 100
B = np.arange(64, dtype=np.float32).reshape(16, 4) / 100


@pytest.fixture
def mesh():
    return xs.make_mesh({"d": 4}, axis_types=xs.AxisType.Auto)  # propagation


def _step(mesh):
    return xs.jit(lambda a, b: xnp.tanh(a @ b),
                  in_shardings=(NamedSharding(mesh, P("d")), NamedSharding(mesh, P())))


def test_as_text_defaults_to_stablehlo(mesh):
    lowered = _step(mesh).lower(A, B)
    text = lowered.as_text()
    assert text.startswith("module @jit_") and "stablehlo.dot_general" in text
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{"d"}, {}]>' in text
    assert lowered.as_text(dialect="hlo").startswith("HloModule jit_")
    assert str(lowered.compiler_ir()) == text
    assert lowered.compiler_ir(dialect="hlo").entry.root.opcode == "tanh"
    with pytest.raises(xs.errors.XlaSpmdError, match="unknown dialect"):
        lowered.as_text(dialect="llvm")


def test_cost_and_memory_analysis_per_device(mesh):
    """Each of 4 devices holds 2 rows of a: its dot is 2x16 @ 16x4 (2*2*4*16 flops), tanh
    8 more; it reads 2x16 + 16x4 f32 and writes 2x4 (dot), then reads and writes 2x4."""
    compiled = _step(mesh).lower(A, B).compile()
    cost = compiled.cost_analysis()
    assert cost["flops"] == 2 * 2 * 4 * 16 + 8
    assert cost["bytes accessed"] == 4 * (2 * 16 + 16 * 4 + 2 * 4) + 4 * (2 * 4 + 2 * 4)
    memory = compiled.memory_analysis()
    assert memory.argument_size_in_bytes == 4 * (2 * 16 + 16 * 4)
    assert memory.output_size_in_bytes == 4 * 2 * 4
    assert memory.peak_memory_in_bytes >= memory.argument_size_in_bytes + \
        memory.output_size_in_bytes
    assert memory.temp_size_in_bytes == memory.peak_memory_in_bytes - \
        memory.argument_size_in_bytes - memory.output_size_in_bytes
    unsharded = xs.jit(lambda a, b: a @ b).lower(A, B).compile().cost_analysis()
    assert unsharded["flops"] == 2 * 8 * 4 * 16


def test_compiled_shardings_are_the_propagated_ones(mesh):
    compiled = _step(mesh).lower(A, B).compile()
    (a, b), kwargs = compiled.input_shardings
    assert kwargs == {} and a.spec == P("d", None) and b.spec == P(None, None)
    assert compiled.output_shardings.spec == P("d", None)  # propagated from a's rows
    assert _step(mesh).lower(A, B).out_shardings is None    # the user gave none


def test_trace_then_lower(mesh):
    traced = _step(mesh).trace(A, B)
    assert traced.out_info == xs.ShapeDtypeStruct((8, 4), np.float32)
    np.testing.assert_allclose(np.asarray(traced.lower().compile()(A, B)), np.tanh(A @ B),
                               rtol=1e-5)


def test_array_at_updates_and_addressable_data(mesh):
    x = xs.device_put(A, NamedSharding(mesh, P("d")))
    y = x.at[2, 3].set(-1.0)
    expected = A.copy()
    expected[2, 3] = -1.0
    assert type(y).__name__ == "Array" and y.sharding == x.sharding
    np.testing.assert_array_equal(np.asarray(y), expected)
    expected = A.copy()
    np.add.at(expected, np.array([0, 0, 7]), 1.0)
    np.testing.assert_allclose(np.asarray(x.at[np.array([0, 0, 7])].add(1.0)), expected)
    expected = A.copy()
    expected[1:3] = np.maximum(A[1:3], 0.5)
    np.testing.assert_array_equal(np.asarray(x.at[1:3].max(0.5)), expected)
    np.testing.assert_array_equal(np.asarray(x.at[5].get()), A[5])
    np.testing.assert_array_equal(np.asarray(x), A)  # out of place
    np.testing.assert_array_equal(x.addressable_data(1), A[2:4])
    assert len(x.addressable_shards) == 4
