"""The IR core: builder, shape inference errors, verifier, rewriting and use maps (the
registries' completeness is tests/test_registries.py)."""

import numpy as np
import pytest

from xla_spmd.backends.reference import EVALUATE, evaluate
from xla_spmd.errors import MissingRuleError, VerifyError
from xla_spmd.ir import (
    F32,
    PRED,
    S32,
    ArrayShape,
    Builder,
    Computation,
    Instruction,
    Module,
    TupleShape,
    make_instruction,
    op_named,
    rewrite,
    verify,
)
from xla_spmd.ir.hlo_parser import parse_hlo


def scalar_add():
    b = Builder("add")
    x, y = b.parameter(ArrayShape(F32, ()), "x"), b.parameter(ArrayShape(F32, ()), "y")
    return b.build(b.add(x, y))


def test_missing_rule_names_the_op_and_the_concern():
    with pytest.raises(MissingRuleError, match="no reference evaluation rule for 'frob'"):
        EVALUATE.lookup("frob")
    with pytest.raises(MissingRuleError, match="unknown opcode 'frob'"):
        op_named("frob")


def test_registry_refuses_duplicates():
    with pytest.raises(ValueError, match="duplicate"):
        EVALUATE.register("add")(lambda *a: None)


def test_shape_inference_of_dot_and_reduce():
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (4, 2, 3)), "x")
    y = b.parameter(ArrayShape(F32, (4, 3, 5)), "y")
    d = b.dot(x, y, lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,),
              rhs_contracting_dims=(1,))
    assert d.shape == ArrayShape(F32, (4, 2, 5))
    r = b.reduce(d, b.constant(np.float32(0)), dimensions=(0, 2), to_apply=scalar_add())
    assert r.shape == ArrayShape(F32, (2,))


@pytest.mark.parametrize("build, message", [
    (lambda b, x: b.add(x, b.parameter(ArrayShape(F32, (3,)), "y")), "operand shapes differ"),
    (lambda b, x: b.transpose(x, dimensions=(0, 0)), "not a permutation"),
    (lambda b, x: b.slice(x, slice=()), "needs 2 ranges"),
    (lambda b, x: b.select(x, x, x), "predicate must be pred"),
    (lambda b, x: b.reshape(x, shape=ArrayShape(F32, (5,))), "cannot reshape"),
    (lambda b, x: b.transpose(x), "needs attribute"),
    (lambda b, x: b.transpose(x, dims=(1, 0)), "has no attribute 'dims'"),
    (lambda b, x: b.negate(x, x), "takes 1 operands, got 2"),
])
def test_bad_instructions_fail_naming_the_op(build, message):
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (2, 3)), "x")
    with pytest.raises(VerifyError, match=message):
        build(b, x)


def test_verifier_checks_declared_shapes_and_order():
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (2,)), "x")
    n = b.negate(x)
    good = b.build(n)
    verify(Module.from_entry("m", good))
    wrong_shape = Instruction("n", op_named("negate"), (x,), ArrayShape(S32, (2,)),
                              op_named("negate").make_attrs())
    with pytest.raises(VerifyError, match="differs from the inferred f32"):
        verify(Module.from_entry("m", Computation("main", (x, wrong_shape), wrong_shape)))
    with pytest.raises(VerifyError, match="not defined before its use"):
        verify(Module.from_entry("m", Computation("main", (n, x), n)))


def test_verifier_checks_parameter_numbers_and_called_signatures():
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (2,)), "x", number=1)
    with pytest.raises(VerifyError, match=r"numbered \[1\]"):
        verify(Module.from_entry("m", b.build(x)))
    b = Builder("main")
    x = b.parameter(ArrayShape(S32, (2,)), "x")
    expected = r"reducer add takes \(f32\[\], f32\[\]\), expected \(s32"
    with pytest.raises(VerifyError, match=expected):
        b.reduce(x, b.constant(np.int32(0)), dimensions=(0,), to_apply=scalar_add())


def test_while_needs_a_pred_condition():
    b = Builder("body")
    s = b.parameter(ArrayShape(F32, ()), "s")
    body = b.build(b.negate(s))
    with pytest.raises(VerifyError, match="must return pred"):
        outer = Builder("main")
        outer.op("while", outer.parameter(ArrayShape(F32, ()), "s"), condition=body, body=body)


def test_rewrite_replaces_and_drops_dead_code():
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (3,)), "x")
    dead = b.exponential(x)
    n = b.negate(x)
    root = b.multiply(n, n)
    computation = b.build(root)
    assert dead not in computation.instructions

    def negate_to_abs(inst, operands):
        if inst.opcode == "negate":
            return make_instruction(inst.name, op_named("abs"), operands)
        return None

    rewritten = rewrite(computation, negate_to_abs)
    assert [i.opcode for i in rewritten.instructions] == ["parameter", "abs", "multiply"]
    assert computation.instruction("negate.2").opcode == "negate"  # the old one is untouched
    result = evaluate(Module.from_entry("m", rewritten), [np.array([-1, 2, -3], np.float32)])
    np.testing.assert_array_equal(result, [1, 4, 9])


def test_use_map():
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (3,)), "x")
    n = b.negate(x)
    root = b.add(n, x)
    users = b.build(root).users()
    assert users[x] == [n, root] and users[n] == [root] and users[root] == []


def test_structural_equality_and_module_closure():
    text = """HloModule m
    %add (a: f32[], b: f32[]) -> f32[] {
      %a = f32[] parameter(0)
      %b = f32[] parameter(1)
      ROOT %s = f32[] add(%a, %b)
    }
    ENTRY %main (x: f32[4]) -> f32[] {
      %x = f32[4] parameter(0)
      %z = f32[] constant(0)
      ROOT %r = f32[] reduce(%x, %z), dimensions={0}, to_apply=%add
    }"""
    first, second = parse_hlo(text), parse_hlo(text)
    assert first == second and first is not second
    assert [c.name for c in first.computations] == ["add", "main"]
    assert parse_hlo(text.replace("constant(0)", "constant(1)")) != first


def test_tuple_shapes():
    t = TupleShape((ArrayShape(F32, (2,)), ArrayShape(PRED, ())))
    assert str(t) == "(f32[2], pred[])" and t.byte_size == 9
    assert t.leaves() == (ArrayShape(F32, (2,)), ArrayShape(PRED, ()))


def test_rewrite_keeps_side_effects_and_returns_unchanged_computations():
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (2,)), "x")
    b.op("custom-call", x, custom_call_target="log", custom_call_has_side_effect=True,
         shape=ArrayShape(F32, (2,)))
    root = b.negate(x)
    computation = Computation("main", tuple(b.instructions), root)
    assert rewrite(computation, lambda inst, ops: None) is computation
    rewritten = rewrite(computation, lambda inst, ops: (
        make_instruction(inst.name, op_named("abs"), ops) if inst.opcode == "negate" else None))
    assert [i.opcode for i in rewritten.instructions] == ["parameter", "custom-call", "abs"]
