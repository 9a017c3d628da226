"""Reference evaluator: while, conditional, call, fusion, tuples, async wrappers, custom calls,
linalg."""

import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate
from xla_spmd.backends.reference.evaluator import Context, evaluate_computation
from xla_spmd.errors import EvaluationError
from xla_spmd.ir import (
    F32,
    F64,
    PRED,
    S32,
    U32,
    ArrayShape,
    Builder,
    ComparisonDirection,
    FftType,
    Module,
    TupleShape,
)

SCALAR_S32 = ArrayShape(S32, ())
VEC = ArrayShape(F32, (3,))
STATE = TupleShape((SCALAR_S32, VEC))


def counting_loop(limit: int) -> Module:
    """state (i, x): while i < limit: (i + 1, x * 2)."""
    c = Builder("cond")
    s = c.parameter(STATE, "s")
    cond = c.build(c.compare(c.get_tuple_element(s, index=0), c.constant(np.int32(limit)),
                             direction=ComparisonDirection.LT))
    b = Builder("body")
    s = b.parameter(STATE, "s")
    i, x = b.get_tuple_element(s, index=0), b.get_tuple_element(s, index=1)
    body = b.build(b.tuple(b.add(i, b.constant(np.int32(1))),
                           b.multiply(x, b.broadcast(b.constant(np.float32(2)), dimensions=(),
                                                     shape=VEC))))
    e = Builder("entry")
    x = e.parameter(VEC, "x")
    loop = e.op("while", e.tuple(e.constant(np.int32(0)), x), condition=cond, body=body)
    return Module.from_entry("loop", e.build(e.get_tuple_element(loop, index=1)))


def test_while_runs_until_condition_fails():
    x = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(evaluate(counting_loop(5), [x]), x * 32)
    np.testing.assert_array_equal(evaluate(counting_loop(0), [x]), x)


def test_while_iteration_cap():
    module = counting_loop(100)
    ctx = Context(max_loop_iterations=10)
    with pytest.raises(EvaluationError, match="max_loop_iterations"):
        evaluate_computation(module.entry, [np.ones(3, np.float32)], ctx)


def branch(name: str, scale: float) -> object:
    b = Builder(name)
    x = b.parameter(VEC, "x")
    return b.build(b.multiply(x, b.broadcast(b.constant(np.float32(scale)), dimensions=(),
                                             shape=VEC)))


def test_conditional_pred_and_index_with_out_of_range():
    e = Builder("entry")
    p = e.parameter(ArrayShape(PRED, ()), "p")
    x = e.parameter(VEC, "x")
    m = Module.from_entry("if", e.build(e.conditional(
        p, x, x, true_computation=branch("t", 2), false_computation=branch("f", 3))))
    x_value = np.ones(3, np.float32)
    np.testing.assert_array_equal(evaluate(m, [np.bool_(True), x_value]), [2, 2, 2])
    np.testing.assert_array_equal(evaluate(m, [np.bool_(False), x_value]), [3, 3, 3])
    e = Builder("entry")
    i = e.parameter(SCALAR_S32, "i")
    x = e.parameter(VEC, "x")
    branches = tuple(branch(f"b{k}", k + 1) for k in range(3))
    m = Module.from_entry("case", e.build(e.conditional(i, x, x, x,
                                                        branch_computations=branches)))
    for index, scale in [(0, 1), (1, 2), (2, 3), (7, 3), (-1, 3)]:
        np.testing.assert_array_equal(evaluate(m, [np.int32(index), x_value]), [scale] * 3)


def test_call_fusion_tuple_and_barrier():
    callee = branch("callee", 4)
    e = Builder("entry")
    x = e.parameter(VEC, "x")
    called = e.call(x, to_apply=callee)
    fused = e.fusion(called, kind="kLoop", calls=callee)
    barrier = e.opt_barrier(e.tuple(fused, x))
    m = Module.from_entry("calls", e.build(e.get_tuple_element(barrier, index=0)))
    np.testing.assert_array_equal(evaluate(m, [np.ones(3, np.float32)]), [16] * 3)


def test_async_start_done_and_copy():
    callee = branch("wrapped", 5)
    e = Builder("entry")
    x = e.parameter(VEC, "x")
    start = e.async_start(x, calls=callee, shape=TupleShape((TupleShape((VEC,)), VEC,
                                                              SCALAR_S32)))
    done = e.async_done(start, shape=VEC)
    copy = e.copy_done(e.copy_start(done, shape=TupleShape((VEC, VEC, ArrayShape(
        U32, ())))), shape=VEC)
    m = Module.from_entry("async", e.build(copy))
    np.testing.assert_array_equal(evaluate(m, [np.ones(3, np.float32)]), [5] * 3)


def custom(target: str, shape=VEC, operands=1):
    e = Builder("entry")
    params = [e.parameter(VEC, f"x{i}") for i in range(operands)]
    return Module.from_entry("cc", e.build(e.custom_call(*params, custom_call_target=target,
                                                         shape=shape)))


@pytest.mark.parametrize("target", ["Sharding", "xla.sdy.FuncResultSharding",
                                    "xla.sdy.PropagationBarrier", "annotate_device_placement",
                                    "LayoutConstraint", "MoveToHost", "MoveToDevice",
                                    "SPMDFullToShardShape", "SPMDShardToFullShape",
                                    "xla.sdy.GlobalToLocalShape",
                                    "xla.sdy.LocalToGlobalShape"])
def test_identity_custom_calls(target):
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(evaluate(custom(target), [x]), x)


def test_sharding_group_and_errors():
    x = np.arange(3, dtype=np.float32)
    assert evaluate(custom("xla.sdy.ShardingGroup", TupleShape(())), [x]) == ()
    with pytest.raises(EvaluationError, match="partitioner"):
        evaluate(custom("SPMDFullToShardShape", ArrayShape(F32, (1,))), [x])
    with pytest.raises(EvaluationError, match="my_kernel"):
        evaluate(custom("my_kernel"), [x])


def test_linalg():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 4, 4)).astype(np.float64)
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    shape = ArrayShape(F64, (2, 4, 4))
    for lower in (True, False):
        e = Builder("entry")
        x = e.parameter(shape, "x")
        m = Module.from_entry("chol", e.build(e.cholesky(x, lower=lower)))
        factor = evaluate(m, [spd])
        rebuilt = factor @ np.swapaxes(factor, -1, -2) if lower else (
            np.swapaxes(factor, -1, -2) @ factor)
        np.testing.assert_allclose(rebuilt, spd, rtol=1e-10)
    tri = np.tril(a) + 3 * np.eye(4)
    rhs = rng.normal(size=(2, 4, 3))
    e = Builder("entry")
    x = e.parameter(shape, "a")
    y = e.parameter(ArrayShape(shape.dtype, (2, 4, 3)), "b")
    m = Module.from_entry("ts", e.build(e.triangular_solve(x, y, left_side=True, lower=True,
                                                           transpose_a="NO_TRANSPOSE")))
    np.testing.assert_allclose(tri @ evaluate(m, [tri, rhs]), rhs, rtol=1e-8, atol=1e-10)
    signal = rng.normal(size=(3, 8)).astype(np.float32)
    e = Builder("entry")
    x = e.parameter(ArrayShape(F32, (3, 8)), "x")
    m = Module.from_entry("fft", e.build(e.fft(x, fft_type=FftType.RFFT, fft_length=(8,))))
    np.testing.assert_allclose(evaluate(m, [signal]), np.fft.rfft(signal), rtol=1e-4,
                               atol=1e-5)
