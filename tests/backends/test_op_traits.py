"""The algebraic traits on op definitions hold for the reference evaluator's semantics.

Passes trust them (CSE swaps operands of commutative ops; the partitioner lets partial sums
through linear ops), so each claim is checked on values, not restated as a list.
"""

import numpy as np
import pytest
from ref_helpers import run_op

from xla_spmd.ir import F32, OPS, ArrayShape

RNG = np.random.default_rng(0)


def _inputs(opcode: str):
    if opcode in ("and", "or", "xor"):
        return [RNG.integers(-50, 50, size=(3, 4)).astype(np.int32) for _ in range(2)]
    # Small integers in float64: every sum and product below is exact.
    return [RNG.integers(-8, 8, size=(3, 4)).astype(np.float64) for _ in range(2)]


@pytest.mark.parametrize("opcode", sorted(n for n, op in OPS.items() if op.commutative))
def test_commutative_ops_commute(opcode):
    a, b = _inputs(opcode)
    np.testing.assert_array_equal(run_op(opcode, a, b)[0], run_op(opcode, b, a)[0])


@pytest.mark.parametrize("opcode", sorted(n for n, op in OPS.items() if op.linear))
def test_linear_ops_map_sums_to_sums(opcode):
    a, b = _inputs(opcode)
    if opcode in ("real", "imag"):
        a, b = a + 1j * b, b - 2j * a
    if opcode == "convert":
        def f(x):
            return run_op(opcode, x, shape=ArrayShape(F32, x.shape))[0]
    elif OPS[opcode].max_operands == 1:
        def f(x):
            return run_op(opcode, x)[0]
    else:  # binary: linear in the pair (lhs, rhs)
        c, d = _inputs(opcode)
        np.testing.assert_array_equal(run_op(opcode, a + c, b + d)[0],
                                      run_op(opcode, a, b)[0] + run_op(opcode, c, d)[0])
        return
    np.testing.assert_array_equal(f(a + b), f(a) + f(b))


def test_side_effect_and_distinct_ops():
    assert {n for n, op in OPS.items() if op.side_effect} == {"rng", "infeed", "outfeed"}
    assert {"parameter", "rng", "after-all", "infeed", "outfeed"} <= {
        n for n, op in OPS.items() if op.distinct}
