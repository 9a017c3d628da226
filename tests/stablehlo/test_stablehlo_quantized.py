# ruff: noqa: E501  (MLIR lines as StableHLO writes them)
"""Quantized types: what is not supported says so, with the position."""

from xla_spmd.stablehlo.interpreter import run_text


def _error(text: str) -> str:
    (result,) = run_text(text, "q.mlir").results
    assert result.status == "ERROR"
    return result.messages[0]


def test_a_malformed_quantized_type_names_its_position():
    message = _error("""func.func @t() {
  %x = stablehlo.constant dense<1.0> : tensor<f32>
  %q = "stablehlo.uniform_quantize"(%x) : (tensor<f32>) -> tensor<!quant.uniform<i8:f32, abc>>
  func.return
}""")
    assert "q.mlir:3:" in message and "expected scale[:zero_point]" in message


def test_quantized_arguments_are_refused():
    message = _error("""func.func @t() {
  %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %q = "stablehlo.uniform_quantize"(%x) : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  %r = "stablehlo.reduce"(%q, %q) ({
    ^bb0(%a: tensor<!quant.uniform<i8:f32, 0.5>>, %b: tensor<!quant.uniform<i8:f32, 0.5>>):
      stablehlo.return %a : tensor<!quant.uniform<i8:f32, 0.5>>
  }) {dimensions = array<i64: 0>} : (tensor<2x!quant.uniform<i8:f32, 0.5>>, tensor<2x!quant.uniform<i8:f32, 0.5>>) -> tensor<!quant.uniform<i8:f32, 0.5>>
  func.return
}""")
    assert "quantized arguments (!quant.uniform) of functions and regions are not supported" \
        in message
