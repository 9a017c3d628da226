"""`reducer_kind` names what a reducer computation computes."""

import pytest

from xla_spmd.ir import F32, PRED, S32, ArrayShape, Builder, componentwise_kinds, reducer_kind


def _binary(opcode, dtype=F32, swap=False, same=False):
    b = Builder("r")
    x = b.parameter(ArrayShape(dtype, ()), "x")
    y = b.parameter(ArrayShape(dtype, ()), "y")
    lhs, rhs = (y, x) if swap else (x, y)
    return b.build(b.op(opcode, lhs, lhs if same else rhs))


@pytest.mark.parametrize("opcode, kind", [("add", "add"), ("multiply", "mul"),
                                          ("maximum", "max"), ("minimum", "min"),
                                          ("subtract", "other"), ("xor", "other")])
def test_binary_reducers(opcode, kind):
    assert reducer_kind(_binary(opcode)) == kind
    assert reducer_kind(_binary(opcode, swap=True)) == kind


def test_logical_reducers_and_lookalikes():
    assert reducer_kind(_binary("and", PRED)) == "and"
    assert reducer_kind(_binary("or", PRED)) == "or"
    assert reducer_kind(_binary("add", same=True)) == "other"  # x + x is not a sum


def test_set_keep_and_argmax_like():
    b = Builder("r")
    x = b.parameter(ArrayShape(F32, ()), "x")
    y = b.parameter(ArrayShape(F32, ()), "y")
    assert reducer_kind(b.build(y)) == "set"
    assert reducer_kind(b.build(x)) == "keep"
    b = Builder("argmax")
    v0, i0 = b.parameter(ArrayShape(F32, ()), "v0"), b.parameter(ArrayShape(S32, ()), "i0")
    v1, i1 = b.parameter(ArrayShape(F32, ()), "v1"), b.parameter(ArrayShape(S32, ()), "i1")
    pick = b.compare(v0, v1, direction="GE")
    argmax = b.build(b.tuple(b.op("select", pick, v0, v1), b.op("select", pick, i0, i1)))
    assert reducer_kind(argmax) == "argmax-like"
    assert componentwise_kinds(argmax) is None
    b = Builder("pair")
    a0, b0 = b.parameter(ArrayShape(F32, ()), "a0"), b.parameter(ArrayShape(F32, ()), "b0")
    a1, b1 = b.parameter(ArrayShape(F32, ()), "a1"), b.parameter(ArrayShape(F32, ()), "b1")
    pair = b.build(b.tuple(b.op("add", a0, a1), b.op("maximum", b1, b0)))
    assert componentwise_kinds(pair) == ["add", "max"]
    assert reducer_kind(pair) == "other"
