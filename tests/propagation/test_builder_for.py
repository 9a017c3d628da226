"""A rule builder needs array operands: a tuple operand is an error naming the op."""

import pytest

from xla_spmd.errors import VerifyError
from xla_spmd.ir import F32, ArrayShape, Builder
from xla_spmd.propagation.registry import builder_for, builder_or_none


def _get_tuple_element():
    b = Builder("m")
    x = b.parameter(ArrayShape(F32, (4, 2)), "x")
    y = b.parameter(ArrayShape(F32, (3,)), "y")
    return b.get_tuple_element(b.tuple(x, y), index=1), b.add(x, x)


def test_builder_for_names_the_op_with_a_tuple_operand():
    gte, _ = _get_tuple_element()
    assert builder_or_none(gte) is None
    with pytest.raises(VerifyError, match=r"'get-tuple-element' .*array operands.*\(f32"):
        builder_for(gte)


def test_builder_for_reads_array_operands():
    _, add = _get_tuple_element()
    b = builder_for(add)
    assert [tuple(d) for d in b.operand_dims] == [(4, 2), (4, 2)]
    assert [tuple(d) for d in b.result_dims] == [(4, 2)]
