# ruff: noqa: E501  (HLO and StableHLO text lines are as long as XLA and MLIR print them)
"""Batch-norm ops in the IR: shape inference and its errors, the epsilon attribute in both
text formats, and the spec decomposition's structure."""

import pytest

from xla_spmd.errors import ParseError, VerifyError
from xla_spmd.ir import F32, F64, S32, ArrayShape, Builder, parse_hlo, print_module
from xla_spmd.ir.batch_norm import expand_batch_norm
from xla_spmd.stablehlo import export_stablehlo, import_stablehlo


def _build(opcode, operand, vectors, epsilon=0.001, feature_index=1, grad=None):
    b = Builder("main")
    x = b.parameter(operand, "x")
    params = [b.parameter(v, f"v{k}") for k, v in enumerate(vectors)]
    extra = [b.parameter(grad, "g")] if grad is not None else []
    return b.op(opcode, x, *params, *extra, epsilon=epsilon, feature_index=feature_index)


def test_result_shapes():
    x, v = ArrayShape(F32, (2, 3, 4)), ArrayShape(F32, (3,))
    assert _build("batch-norm-inference", x, [v] * 4).shape == x
    assert str(_build("batch-norm-training", x, [v] * 2).shape) == "(f32[2,3,4], f32[3], f32[3])"
    assert str(_build("batch-norm-grad", x, [v] * 3, grad=x).shape) == \
        "(f32[2,3,4], f32[3], f32[3])"


@pytest.mark.parametrize("case, message", [
    (dict(feature_index=3), r"feature_index=3 must be in \[0, 3\) for the operand f32\[2,3,4\]"),
    (dict(feature_index=-1), r"feature_index=-1 must be in \[0, 3\)"),
    (dict(vector=ArrayShape(F32, (4,))), r"scale must be f32\[3\] \(one f32 per feature: dim 1 "
                                         r"of the operand f32\[2,3,4\] has 3\), got f32\[4\]"),
    (dict(vector=ArrayShape(F64, (3,))), r"scale must be f32\[3\].*got f64\[3\]"),
    (dict(operand=ArrayShape(S32, (2, 3, 4))), r"operand must be of a floating-point type"),
])
def test_shape_errors_name_the_operand(case, message):
    operand = case.get("operand", ArrayShape(F32, (2, 3, 4)))
    vector = case.get("vector", ArrayShape(F32, (3,)))
    with pytest.raises(VerifyError, match=message):
        _build("batch-norm-training", operand, [vector] * 2,
               feature_index=case.get("feature_index", 1))


def test_grad_output_must_have_the_operand_shape():
    with pytest.raises(VerifyError, match=r"grad_output must have the operand's shape"):
        _build("batch-norm-grad", ArrayShape(F32, (2, 3)), [ArrayShape(F32, (3,))] * 3,
               grad=ArrayShape(F32, (3, 2)))


def test_wrong_vector_names_it():
    x, v = ArrayShape(F32, (2, 3)), ArrayShape(F32, (3,))
    with pytest.raises(VerifyError, match=r"variance must be f32\[3\]"):
        _build("batch-norm-inference", x, [v, v, v, ArrayShape(F32, (2,))])


def test_epsilon_is_an_f32():
    inst = _build("batch-norm-inference", ArrayShape(F32, (2, 3)), [ArrayShape(F32, (3,))] * 4,
                  epsilon=0.1)
    assert inst.attrs.epsilon == 0.10000000149011612


HLO = """HloModule m

ENTRY main {
  x = f32[4,2]{1,0} parameter(0)
  s = f32[2]{0} parameter(1)
  ROOT bn = (f32[4,2]{1,0}, f32[2]{0}, f32[2]{0}) batch-norm-training(x, s, s), epsilon=1.001e-05, feature_index=1
}
"""


def test_hlo_text_round_trip():
    module = parse_hlo(HLO)
    assert module.entry.root.attrs.epsilon == pytest.approx(1.001e-05, rel=1e-7)
    assert print_module(module) == HLO
    assert parse_hlo(print_module(module)) == module


@pytest.mark.parametrize("bad, message", [
    ("epsilon=abc", r"6:89: expected a number for 'epsilon', found 'abc'"),
    ("epsilon=0.1, feature_index=2", r"feature_index=2 must be in \[0, 2\)"),
    ("feature_index=1", r"needs attribute\(s\) epsilon"),
])
def test_hlo_text_errors(bad, message):
    text = HLO.replace("epsilon=1.001e-05, feature_index=1", bad)
    with pytest.raises((ParseError, VerifyError), match=message):
        parse_hlo(text)


MLIR = """func.func @main(%x: tensor<4x2xf32>, %s: tensor<2xf32>) -> tensor<4x2xf32> {
  %0:3 = "stablehlo.batch_norm_training"(%x, %s, %s) {epsilon = 1.000000e-03 : f32, feature_index = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  %1 = "stablehlo.batch_norm_inference"(%x, %s, %s, %0#1, %0#2) {epsilon = 1.000000e-03 : f32, feature_index = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %2:3 = "stablehlo.batch_norm_grad"(%x, %s, %0#1, %0#2, %1) {epsilon = 1.000000e-03 : f32, feature_index = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  return %2#0 : tensor<4x2xf32>
}
"""


def test_stablehlo_round_trip():
    module = import_stablehlo(MLIR)
    opcodes = [i.opcode for i in module.entry.instructions if i.opcode.startswith("batch")]
    assert opcodes == ["batch-norm-training", "batch-norm-inference", "batch-norm-grad"]
    text = export_stablehlo(module)
    assert ('"stablehlo.batch_norm_grad"(%arg0, %arg1, %0#1, %0#2, %1) <{epsilon = '
            '1.000000e-03 : f32, feature_index = 1 : i64}>') in text
    assert import_stablehlo(text) == module


def test_stablehlo_errors_name_the_op():
    with pytest.raises(Exception, match=r"needs the attribute 'epsilon'"):
        import_stablehlo(MLIR.replace("epsilon = 1.000000e-03 : f32, ", "", 1))
    with pytest.raises(Exception, match=r"feature_index=2 must be in \[0, 2\)"):
        import_stablehlo(MLIR.replace("feature_index = 1", "feature_index = 2", 1))


def test_expansion_is_the_spec_decomposition():
    x, v = ArrayShape(F32, (8, 3)), ArrayShape(F32, (3,))
    training = expand_batch_norm("batch-norm-training", [x, v, v], 0.5, 1)
    # two statistics: mean and variance, each one reduce over the non-feature dims
    reduces = [i for i in training.instructions if i.opcode == "reduce"]
    assert [r.attrs.dimensions for r in reduces] == [(0,), (0,)]
    grad = expand_batch_norm("batch-norm-grad", [x, v, v, v, x], 0.5, 1)
    assert sum(i.opcode == "reduce" for i in grad.instructions) == 4  # i2, i3, scale, offset
    for c in (training, grad):  # every value is operand-shaped, per feature or a scalar
        for inst in c.instructions:
            shapes = inst.shape.elements if inst.opcode == "tuple" else (inst.shape,)
            assert all(s.dims in (x.dims, v.dims, ()) for s in shapes)
    with pytest.raises(VerifyError, match="'dot' is not a batch-norm op"):
        expand_batch_norm("dot", [x], 0.5, 1)
